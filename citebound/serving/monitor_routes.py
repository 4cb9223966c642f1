"""The drift monitors of the served calibration profiles: ``GET /v1/monitor`` (each profile's guarantee
card), ``POST /v1/monitor/labels`` (labels of deployed citations: how many unsupported ones passed), and
``GET /metrics`` (Prometheus, the monitors' gauges set at each scrape).

Posting labels (and ``POST /v1/monitor/reset``) changes what every client gets (``--on-void flag-all``
stops every citation passing), so it needs the admin token: ``citebound serve --admin-token-file FILE``,
sent as ``Authorization: Bearer <token>``. Without the header, or with another token, the answer is 401;
a service started without a token file refuses every label post (403) and says how to enable it.
Guarding stays open."""
from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

from citebound.serving.models import well_formed
from citebound.serving.state import GuardInputError, ServiceState, refuse


class _AdminIn(BaseModel):
    """Strict: integers are JSON integers (never true, "3" or 3.0), strings are well-formed unicode."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*")
    @classmethod
    def _well_formed(cls, v: Any) -> Any:
        return well_formed(v) if isinstance(v, str) else v


class LabelsIn(_AdminIn):
    profile: str | None = Field(None, max_length=200, description="the calibration profile (null: the default guard)")
    missed: StrictInt = Field(..., ge=0, description="labelled unsupported citations the guard passed")
    unsupported: StrictInt = Field(..., ge=1, le=1_000_000, description="labelled unsupported citations in the sample")
    group: str | None = Field(None, max_length=200, description="the calibration group they belong to (null: pooled)")


class ResetIn(_AdminIn):
    profile: str | None = Field(None, max_length=200, description="the calibration profile (null: the default guard)")
    group: str | None = Field(None, max_length=200, description="the calibration group (null: pooled)")
    by: str = Field("admin", max_length=200, description="who resets (kept in the card's history)")


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


async def _admin_body(request: Request, model: type[BaseModel]) -> BaseModel | JSONResponse:
    """The body of an admin route, read only after the token was checked: a 422 naming each field."""
    raw = await request.body()
    if len(raw) > 64 * 1024:
        return JSONResponse({"detail": f"an admin request body has at most 65536 bytes, got {len(raw)}"},
                            status_code=413)
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as e:
        return JSONResponse({"detail": [{"loc": ["body", *err["loc"]], "msg": err["msg"], "type": err["type"]}
                                        for err in e.errors(include_url=False, include_input=False)]},
                            status_code=422)


def _cards(guard: Any) -> dict[str, Any]:
    """A profile's card (its pooled calibration's) and, when it has groups, each group's own."""
    cal = guard.calibrations
    groups = {g: k.card(g) for g, k in cal.groups.items()}
    groups |= {g: cal.pooled.card(g, cal.resolve(g)[1]) for g in cal.fallback}
    return guard.keeper.card() | ({"groups": dict(sorted(groups.items()))} if groups else {})


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()

    @r.get("/metrics")
    def metrics():  # reads the monitors' store: in the thread pool, never on the event loop
        from fastapi.responses import PlainTextResponse
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        state.metrics.record_monitors(state.registry.guards)  # each profile's monitor, as it is at the scrape
        return PlainTextResponse(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @r.get("/v1/monitor")
    def monitor():  # reads the monitors' store: in the thread pool
        return {name or "default": _cards(g) for name, g in state.registry.guards.items()}

    async def admin_change(profile: str | None, group: str | None, change: Any):
        """An admin-token change to one monitor (a fallback group's goes to the pooled one it uses); its card.
        The store is written in the thread pool; a store that cannot take it is a 503, never an acknowledgement."""
        from starlette.concurrency import run_in_threadpool

        from citebound.calibration.state import StoreUnavailable

        def apply() -> Any:
            keeper, fallback = state.registry.guard_for(profile).calibrations.resolve(group)
            change(keeper)
            return keeper.card(None if fallback else group)
        try:
            return await run_in_threadpool(apply)
        except StoreUnavailable as e:
            return JSONResponse({"detail": f"the monitors' store cannot take this now, so nothing was recorded: {e}; "
                                           "post again when /readyz is 200"}, status_code=503,
                                headers={"Retry-After": "5"})
        except (GuardInputError, ValueError) as e:
            return refuse(e)

    async def admin_request(request: Request, model: type[BaseModel]) -> Any:
        """The admin route's body as ``model``, or the response to give: the token first (401/403), then the body
        (422)."""
        if (denied := admin_denied(state, request)) is not None:
            return denied
        return await _admin_body(request, model)

    # the token is checked before the body is read, so a request without it is a 401 (403 with none
    # configured) whatever its body, never a 422 about it; the body schema is in the OpenAPI document
    @r.post("/v1/monitor/labels", responses={401: {"description": "no or wrong admin token"},
                                             403: {"description": "the service has no admin token"},
                                             422: {"description": "bad input, or a profile without a monitor"}},
             openapi_extra=_body_schema(LabelsIn))
    async def labels(request: Request):
        req = await admin_request(request, LabelsIn)
        if isinstance(req, JSONResponse):
            return req
        return await admin_change(req.profile, req.group, lambda k: k.labels(req.missed, req.unsupported))

    @r.post("/v1/monitor/reset", responses={401: {"description": "no or wrong admin token"},
                                            403: {"description": "the service has no admin token"}},
             openapi_extra=_body_schema(ResetIn))
    async def reset(request: Request):
        """Start a monitor afresh (after a recalibration, say); the card's history records who and when."""
        req = await admin_request(request, ResetIn)
        if isinstance(req, JSONResponse):
            return req
        who = f"{req.by} ({request.client.host if request.client else 'unknown'})"
        return await admin_change(req.profile, req.group, lambda k: k.reset(who))

    return r


def admin_denied(state: ServiceState, request: Request) -> JSONResponse | None:
    """None when the request carries the service's admin token (``Authorization: Bearer <token>``); else the
    401 (or, with no token configured, 403) to answer."""
    token = state.cfg.admin_token
    if not token:
        return JSONResponse({"detail": "this service has no admin token, so it takes no labels: start it with "
                                       "--admin-token-file FILE"}, status_code=403)
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip().encode(), token.encode()):
        return JSONResponse({"detail": "posting labels needs the admin token: Authorization: Bearer <token> "
                                       "(the file given to --admin-token-file)"}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})
    return None
