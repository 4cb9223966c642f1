"""``POST /v1/chat/completions`` with ``--upstream``: an OpenAI-compatible guarding proxy.

The request goes to the upstream server (less the ``citebound`` field), and its answer comes back
guarded against the passages in the request's ``citebound.passages``
(``extra_body={"citebound": {"passages": [...]}}`` in the ``openai`` SDK). The passages are checked
before the upstream is called; a request without them is a 400, never a silent pass. The upstream
sees the passages only if the caller put them in its messages, or if the service runs with
``--passages-prompt`` (a template whose ``{passages}`` becomes the numbered passages, sent as a first
system message). The upstream's
body is read up to ``max_upstream_bytes`` and the whole call runs under the request timeout: past
either, or on a transport error or malformed JSON, the answer is a 502 or 504 that says why. With
``--action block``, an answer past ``--block-above`` is a 403 in OpenAI's error shape, with the report.
``stream: true`` is guarded sentence by sentence (:mod:`citebound.serving.stream_proxy`).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from citebound.scoring.llm_backends import redact_url  # noqa: F401 (one redaction for every face)
from citebound.serving.models import ChatRequest
from citebound.serving.state import GuardInputError, ServiceState, blocked, refuse, texts, timed_out


class UpstreamError(Exception):
    """The upstream failed; ``status`` is the answer to give (502, or 504 past the deadline)."""

    def __init__(self, detail: str, status: int = 502, body: str | None = None):
        super().__init__(detail)
        self.status, self.body = status, body


async def _call_upstream(state: ServiceState, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The upstream's JSON answer, read up to ``max_upstream_bytes``."""
    cap = state.cfg.limits.max_upstream_bytes
    async with state.http.stream("POST", url, json=body, headers=headers) as r:
        chunks, n = [], 0
        async for chunk in r.aiter_bytes():
            n += len(chunk)
            if n > cap:
                raise UpstreamError(f"the upstream's answer is over {cap} bytes (max_upstream_bytes)")
            chunks.append(chunk)
    raw = b"".join(chunks)
    if r.status_code != 200:
        raise UpstreamError(f"answered {r.status_code}", body=raw[:2000].decode("utf-8", "replace"))
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise UpstreamError("answered with malformed JSON (no choices[0].message)") from None
    if not isinstance(content, str):
        raise UpstreamError("answered with a non-string message content")
    return data


def _upstream_error(shown: str, e: Exception, timeout_s: float) -> JSONResponse:
    if isinstance(e, TimeoutError):
        return JSONResponse({"detail": f"upstream {shown} did not answer within {timeout_s} s"}, status_code=504)
    if isinstance(e, UpstreamError):
        out = {"detail": f"upstream {shown} {e}"} | ({"upstream": redact_url(e.body)} if e.body else {})
        return JSONResponse(out, status_code=e.status)
    return JSONResponse({"detail": redact_url(f"upstream {shown} failed: {type(e).__name__}: {e}")}, status_code=502)


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()
    cfg = state.cfg
    upstream = (cfg.upstream or "").rstrip("/")
    shown = redact_url(upstream)

    @r.post("/v1/chat/completions", responses={400: {"description": "no passages"},
                                               403: {"description": "blocked: the review budget passed --block-above"},
                                               502: {"description": "the upstream failed"},
                                               504: {"description": "the upstream or the guard ran past the timeout"}})
    async def chat(req: ChatRequest, request: Request):
        extra = req.citebound
        if extra is None or not extra.passages:
            return JSONResponse({"detail": "no passages: send them in the request's 'citebound' field, e.g. "
                                           "extra_body={'citebound': {'passages': [...]}}; an answer without "
                                           "its passages cannot be checked and is never passed"}, status_code=400)
        try:
            guard = state.guard_for(extra.calibration)
            passages = texts(extra.passages)
            cfg.limits.check_passages(passages)
            guard.calibrations.resolve(extra.group)
        except GuardInputError as e:
            return refuse(e)
        except ValueError as e:  # an unknown group
            return refuse(GuardInputError(str(e)))
        body = req.model_dump(exclude={"citebound"}, exclude_none=True)
        if cfg.passages_prompt:  # the passages, numbered in the request's base, as the first (system) message
            base = 1 if extra.citation_base is None else extra.citation_base
            listed = "\n\n".join(f"[{i + base}] {p}" for i, p in enumerate(passages))
            body["messages"] = [{"role": "system", "content": cfg.passages_prompt.replace("{passages}", listed)},
                                *body["messages"]]
        headers = {k: v for k, v in request.headers.items() if k.lower() == "authorization"}
        url = f"{upstream}/chat/completions"
        if req.stream:
            from citebound.serving.stream_proxy import StreamRun, open_upstream, stream_response

            try:
                resp = await asyncio.wait_for(open_upstream(state, url, body, headers), cfg.request_timeout_s)
            except Exception as e:  # noqa: BLE001 - before the stream starts, an upstream failure is a status
                return _upstream_error(shown, e, cfg.request_timeout_s)
            run = StreamRun(state, guard, passages, extra.citation_base, extra.group, req.model, shown)
            return await stream_response(state, run, resp)
        try:
            data = await asyncio.wait_for(_call_upstream(state, url, body, headers), cfg.request_timeout_s)
        except Exception as e:  # noqa: BLE001 - any transport failure is the upstream's
            return _upstream_error(shown, e, cfg.request_timeout_s)
        content = data["choices"][0]["message"].get("content") or ""
        try:
            ((text, report),) = await state.run_guard(guard, [(content, passages, extra.citation_base)], extra.group)
        except GuardInputError as e:
            return refuse(e)
        except TimeoutError:
            return timed_out(cfg.request_timeout_s)
        if report.blocked:
            return blocked(report, error_shape=True)
        data["choices"][0]["message"]["content"] = text
        data["citebound"] = {"original_content": content, "report": report.to_dict(), "verifier": state.scorer.name}
        hdrs = {"X-Citebound-Citations": str(report.n_citations), "X-Citebound-Flagged": str(report.flagged),
                "X-Citebound-Invalid": str(report.invalid), "X-Citebound-Unverified": str(report.unverified),
                "X-Citebound-Reattributed": str(report.reattributed),
                "X-Citebound-Review-Budget": f"{report.review_budget:.4f}"}
        return JSONResponse(json.loads(json.dumps(data)), headers=hdrs)

    return r
