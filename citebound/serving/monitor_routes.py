"""The drift monitors of the served calibration profiles: ``GET /v1/monitor`` (each profile's guarantee
card), ``POST /v1/monitor/labels`` (labels of deployed citations: how many unsupported ones passed), and
``GET /metrics`` (Prometheus, the monitors' gauges set at each scrape)."""
from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from citebound.serving.state import GuardInputError, ServiceState, refuse


class LabelsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    profile: str | None = Field(None, description="the calibration profile (null: the default guard)")
    missed: int = Field(..., ge=0, description="labelled unsupported citations the guard passed")
    unsupported: int = Field(..., ge=1, le=10_000_000, description="labelled unsupported citations in the sample")


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
        return {name or "default": g.keeper.card() for name, g in state.registry.guards.items()}

    @r.post("/v1/monitor/labels", responses={422: {"description": "bad input, or a profile without a monitor"}})
    async def labels(req: LabelsIn):
        try:
            guard = state.registry.guard_for(req.profile)
            guard.keeper.labels(req.missed, req.unsupported)
        except (GuardInputError, ValueError) as e:
            return refuse(e)
        return guard.keeper.card()

    return r
