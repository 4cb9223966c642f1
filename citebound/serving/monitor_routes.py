"""The drift monitors of the served calibration profiles: ``GET /v1/monitor`` (each profile's guarantee
card), ``POST /v1/monitor/labels`` (labels of deployed citations: how many unsupported ones passed), and
``GET /metrics`` (Prometheus, the monitors' gauges set at each scrape).

Posting labels (and ``POST /v1/monitor/reset``) changes what every client gets (``--on-void flag-all``
stops every citation passing), so it needs the admin token: ``citebound serve --admin-token-file FILE``,
sent as ``Authorization: Bearer <token>``. Without the header, or with another token, the answer is 401;
a service started without a token file refuses every label post (403) and says how to enable it.
Guarding stays open."""
from __future__ import annotations

import json
import secrets
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from citebound.serving.state import GuardInputError, ServiceState, refuse


class LabelsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profile: str | None = Field(None, description="the calibration profile (null: the default guard)")
    missed: int = Field(..., ge=0, description="labelled unsupported citations the guard passed")
    unsupported: int = Field(..., ge=1, le=1_000_000, description="labelled unsupported citations in the sample")
    group: str | None = Field(None, max_length=200, description="the calibration group they belong to (null: pooled)")


class ResetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profile: str | None = Field(None, description="the calibration profile (null: the default guard)")
    group: str | None = Field(None, max_length=200, description="the calibration group (null: pooled)")
    by: str = Field("admin", max_length=200, description="who resets (kept in the card's history)")


def _cards(guard: Any) -> dict[str, Any]:
    """A profile's card (its pooled calibration's) and, when it has groups, each group's own."""
    cal = guard.calibrations
    groups = {g: k.card(g) for g, k in cal.groups.items()}
    groups |= {g: cal.pooled.card(g, cal.resolve(g)[1]) for g in cal.fallback}
    return guard.keeper.card() | ({"groups": dict(sorted(groups.items()))} if groups else {})


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()

    @r.get("/metrics")
    async def metrics():
        from fastapi.responses import PlainTextResponse
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        state.metrics.record_monitors(state.registry.guards)  # each profile's monitor, as it is at the scrape
        return PlainTextResponse(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @r.get("/v1/monitor")
    async def monitor():
        return {name or "default": _cards(g) for name, g in state.registry.guards.items()}

    def admin(request: Request) -> None:
        """The admin-token check as a dependency: FastAPI runs it before it reads the body, so a request
        without the token is a 401 (403 with none configured) whatever its body, never a 422 about it."""
        from fastapi import HTTPException

        if (denied := admin_denied(state, request)) is not None:
            raise HTTPException(denied.status_code, json.loads(denied.body)["detail"], headers=dict(
                {"WWW-Authenticate": "Bearer"} if denied.status_code == 401 else {}))

    def admin_change(request: Request, profile: str | None, group: str | None, change: Any):
        """An admin-token change to one monitor (a fallback group's goes to the pooled one it uses); its card."""
        if (denied := admin_denied(state, request)) is not None:
            return denied
        try:
            keeper, fallback = state.registry.guard_for(profile).calibrations.resolve(group)
            change(keeper)
        except (GuardInputError, ValueError) as e:
            return refuse(e)
        return keeper.card(None if fallback else group)

    @r.post("/v1/monitor/labels", responses={401: {"description": "no or wrong admin token"},
                                             403: {"description": "the service has no admin token"},
                                             422: {"description": "bad input, or a profile without a monitor"}},
             dependencies=[Depends(admin)])
    async def labels(req: LabelsIn, request: Request):
        return admin_change(request, req.profile, req.group, lambda k: k.labels(req.missed, req.unsupported))

    @r.post("/v1/monitor/reset", responses={401: {"description": "no or wrong admin token"},
                                            403: {"description": "the service has no admin token"}},
             dependencies=[Depends(admin)])
    async def reset(req: ResetIn, request: Request):
        """Start a monitor afresh (after a recalibration, say); the card's history records who and when."""
        who = f"{req.by} ({request.client.host if request.client else 'unknown'})"
        return admin_change(request, req.profile, req.group, lambda k: k.reset(who))

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
