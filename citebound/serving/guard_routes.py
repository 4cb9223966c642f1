"""``POST /v1/guard``: one answer, or a batch of answers, each with its own result or error."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from citebound.guarding.report import pooled_review_budget
from citebound.serving.models import AnswerError, AnswerIn, GuardBatchResult, GuardRequest, GuardResult
from citebound.serving.state import GuardInputError, LimitExceeded, ServiceState, blocked, refuse, texts, timed_out

COUNTS = ("n_citations", "verified", "reattributed", "flagged", "invalid", "unverified", "uncited")


def _answers(req: GuardRequest) -> list[AnswerIn]:
    if req.answers is None:
        return [AnswerIn(id=req.id, answer=req.answer, passages=req.passages, citation_base=req.citation_base)]
    return req.answers


def _counts(out: list[GuardResult | AnswerError]) -> dict[str, float]:
    done = [o for o in out if isinstance(o, GuardResult)]
    totals = {k: float(sum(getattr(o.report, k) for o in done)) for k in COUNTS}
    totals["review_budget"] = pooled_review_budget([o.report for o in done])
    totals["blocked"] = float(sum(o.report.blocked for o in done))
    totals["answers"], totals["failed_answers"] = float(len(done)), float(len(out) - len(done))
    return totals


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()
    limits = state.cfg.limits

    @r.post("/v1/guard", response_model=GuardResult | GuardBatchResult,
            responses={403: {"description": "blocked: the review budget passed --block-above (the report is given)"},
                       413: {"description": "body past max_request_bytes"}, 422: {"description": "a limit or bad input"},
                       504: {"description": "the request timed out"}})
    async def guard_endpoint(req: GuardRequest, format: Literal["json", "html"] = "json"):
        ins = _answers(req)
        try:
            guard = state.guard_for(req.calibration)
            if len(ins) > limits.max_answers_per_request:
                raise LimitExceeded(f"{len(ins)} answers in one request", "max_answers_per_request",
                                    limits.max_answers_per_request)
            if req.answers is None:  # one answer: its error is the response's
                items = [(a.answer, texts(a.passages), a.citation_base) for a in ins]
                results = await state.run_guard(guard, items, req.group)
            else:
                results = await state.run_guard_each(guard, [(a.answer, a.passages, a.citation_base) for a in ins],
                                                     req.group)
        except GuardInputError as e:  # LimitExceeded too
            return refuse(e)
        except TimeoutError as e:
            return timed_out(state.cfg.request_timeout_s, e)
        out: list[GuardResult | AnswerError] = []
        for i, (a, res) in enumerate(zip(ins, results)):
            if isinstance(res, GuardInputError):
                out.append(AnswerError(index=i, id=a.id, error=str(res), limit=getattr(res, "limit", None)))
            else:
                out.append(GuardResult(id=a.id, guarded_answer=None if res[1].blocked else res[0], report=res[1]))
        if format == "html":
            from citebound.guarding.audit_page import AuditEntry, render_audit_page
            entries = [AuditEntry(str(a.id if a.id is not None else i + 1), a.answer, o.guarded_answer,
                                  o.report.to_dict()) for i, (a, o) in enumerate(zip(ins, out)) if isinstance(o, GuardResult)]
            failed = [(str(o.id if o.id is not None else o.index + 1), o.error) for o in out if isinstance(o, AnswerError)]
            from fastapi.responses import HTMLResponse

            from citebound.labelling.app import NO_FRAMING
            return HTMLResponse(render_audit_page(entries, verifier=state.scorer.name, rule=guard.rule,
                                                  guarantee=guard.guarantee, failed=failed), headers=NO_FRAMING)
        if req.answers is None:
            if isinstance(out[0], GuardResult) and out[0].report.blocked:
                return blocked(out[0].report)
            return out[0]
        return GuardBatchResult(results=out, counts=_counts(out))

    return r
