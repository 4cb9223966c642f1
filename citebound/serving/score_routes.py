"""``POST /v1/score``: claim-passage pairs scored by the served verifier (through the micro-batcher)."""
from __future__ import annotations

import numpy as np
from fastapi import APIRouter

from citebound.serving.models import PairScore, ScoreRequest, ScoreResponse
from citebound.serving.state import LimitExceeded, ServiceState, refuse, timed_out


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()
    limits = state.cfg.limits

    @r.post("/v1/score", response_model=ScoreResponse,
            responses={422: {"description": "a limit or bad input"}, 504: {"description": "the request timed out"}})
    async def score_endpoint(req: ScoreRequest):
        if len(req.pairs) > limits.max_citations_per_answer:
            return refuse(LimitExceeded(f"{len(req.pairs)} pairs", "max_citations_per_answer",
                                        limits.max_citations_per_answer))
        for i, p in enumerate(req.pairs):
            if len(p.passage) > limits.max_passage_chars:
                return refuse(LimitExceeded(f"pair {i}'s passage has {len(p.passage)} characters", "max_passage_chars",
                                            limits.max_passage_chars))
        try:
            ps = await state.run_guarded(state.scorer.score, [p.claim for p in req.pairs], [p.passage for p in req.pairs])
        except TimeoutError as e:
            return timed_out(state.cfg.request_timeout_s, e)
        return ScoreResponse(verifier=state.scorer.name, scores=[
            PairScore(score=None if np.isnan(s) else float(s), verdict=bool(v), best_window=int(b))
            for s, v, b in zip(ps.score, ps.verdict, ps.best_window)])

    return r
