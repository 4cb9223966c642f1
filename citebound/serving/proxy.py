"""``POST /v1/chat/completions`` with ``--upstream``: an OpenAI-compatible guarding proxy.

The request goes to the upstream server (less the ``citebound`` field), and its answer comes back
guarded against the passages in the request's ``citebound.passages``
(``extra_body={"citebound": {"passages": [...]}}`` in the ``openai`` SDK). The passages are checked
before the upstream is called; a request without them is a 400, never a silent pass. The upstream
sees the passages only if the caller put them in its messages, or if the service runs with
``--passages-prompt`` (a template whose ``{passages}`` becomes the numbered passages, sent as a first
system message). One choice is guarded per request: ``n`` other than 1 is a 400, and an upstream that answers
with more than one choice a 502, so no choice passes unchecked. Tool calls pass through unchanged and are
counted as unchecked (``citebound.unchecked_tool_calls``, ``X-Citebound-Unchecked-Tool-Calls``). Every error
is in OpenAI's shape (``{"error": {...}}``). The unguarded text comes back (``citebound.original_content``)
only when the request asks for it with ``citebound.return_original: true``. The upstream's
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

from citebound.scoring.llm_backends import redact_url
from citebound.serving.held import GuardFailure, guard_whole, prepare, report_body, report_headers
from citebound.serving.models import ChatRequest
from citebound.serving.state import ServiceState, blocked
from citebound.serving.upstream import (
    UpstreamError,
    tool_calls,
    unchecked_fields,
    upstream_base,
    upstream_failure,
    upstream_headers,
    upstream_json,
)


async def _call_upstream(state: ServiceState, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The upstream's chat completion, with exactly one choice whose content is a string."""
    data = await upstream_json(state, "POST", url, headers, body)
    try:
        choices = data["choices"]
        content = choices[0]["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise UpstreamError("answered with malformed JSON (no choices[0].message)") from None
    if not isinstance(choices, list) or len(choices) != 1:
        raise UpstreamError(f"answered with {len(choices)} choices; the guard checks exactly one, and passes none "
                            "unchecked")
    if not isinstance(content, str):
        raise UpstreamError("answered with a non-string message content")
    return data


def proxy_error(status: int, message: str, code: str, headers: dict[str, str] | None = None,
                **citebound: Any) -> JSONResponse:
    """An error in OpenAI's shape (the openai SDK raises on it), credentials in any URL redacted, with ``headers``
    (an upstream refusal's ``Retry-After``)."""
    body: dict[str, Any] = {"error": {"message": redact_url(message), "code": code, "param": None,
                                      "type": "invalid_request_error" if status < 500 else "upstream_error"}}
    if citebound:
        body["citebound"] = citebound
    return JSONResponse(body, status_code=status, headers=headers)


def _upstream_error(shown: str, e: Exception, timeout_s: float) -> JSONResponse:
    status, message, code, extra, headers = upstream_failure(shown, e, timeout_s)
    return proxy_error(status, message, code, headers, **extra)


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()
    cfg = state.cfg
    upstream, shown = upstream_base(state)

    @r.post("/v1/chat/completions", responses={400: {"description": "no passages"},
                                               403: {"description": "blocked: the review budget passed --block-above"},
                                               502: {"description": "the upstream failed"},
                                               504: {"description": "the upstream or the guard ran past the timeout"}})
    async def chat(req: ChatRequest, request: Request):
        extra = req.citebound
        n = (req.model_extra or {}).get("n")
        try:
            guard, passages = prepare(state, extra)
            if n is not None and n != 1:
                raise GuardFailure(400, f"n={n!r}: the guarding proxy checks one choice per request; ask for n=1 (or "
                                        "send n requests), so that no choice passes unchecked", "n_not_supported")
        except GuardFailure as e:
            return proxy_error(e.status, str(e), e.code)
        body = req.model_dump(exclude={"citebound"}, exclude_none=True)
        if cfg.passages_prompt:  # the passages, numbered in the request's base, as the first (system) message
            base = 1 if extra.citation_base is None else extra.citation_base
            listed = "\n\n".join(f"[{i + base}] {p}" for i, p in enumerate(passages))
            body["messages"] = [{"role": "system", "content": cfg.passages_prompt.replace("{passages}", listed)},
                                *body["messages"]]
        headers = upstream_headers(cfg, request.headers.get("authorization"))
        url = f"{upstream}/chat/completions"
        if req.stream:
            from citebound.serving.stream_proxy import StreamRun, stream_response
            from citebound.serving.upstream import open_upstream

            try:
                resp = await asyncio.wait_for(open_upstream(state, url, body, headers), cfg.request_timeout_s)
            except Exception as e:  # noqa: BLE001 - before the stream starts, an upstream failure is a status
                return _upstream_error(shown, e, cfg.request_timeout_s)
            run = StreamRun(state, guard, passages, extra.citation_base, extra.group, req.model, shown,
                            bool(extra.return_original))
            return await stream_response(state, guard, extra.group, run.events(resp), resp)
        try:
            data = await asyncio.wait_for(_call_upstream(state, url, body, headers), cfg.request_timeout_s)
        except Exception as e:  # noqa: BLE001 - any transport failure is the upstream's
            return _upstream_error(shown, e, cfg.request_timeout_s)
        message = data["choices"][0]["message"]
        content = message.get("content") or ""
        try:
            ((text, report),) = await guard_whole(state, guard, [(content, passages, extra.citation_base)], extra.group)
        except GuardFailure as e:
            return proxy_error(e.status, str(e), e.code)
        if report.blocked:
            return blocked(report, error_shape=True, show_text=bool(extra.return_original))
        if message.get("content") is not None:
            message["content"] = text
        calls = tool_calls(message)
        fields = unchecked_fields(message)
        data["citebound"] = {"report": report_body(report), "verifier": state.scorer.name,
                             "unchecked_tool_calls": calls, "unchecked_fields": fields} | (
            {"original_content": content} if extra.return_original else {})
        return JSONResponse(json.loads(json.dumps(data)), headers=report_headers(report, calls, fields))

    _models_route(r, state, upstream, shown)
    return r


def _models_route(r: APIRouter, state: ServiceState, upstream: str, shown: str) -> None:
    """``GET /v1/models``: the upstream's model list, passed through (chat front ends ask for it first), read up
    to ``max_upstream_bytes`` within the request timeout."""
    cfg = state.cfg

    @r.get("/v1/models", responses={502: {"description": "the upstream failed"},
                                    504: {"description": "the upstream ran past the timeout"}})
    async def models(request: Request):
        headers = upstream_headers(cfg, request.headers.get("authorization"))
        try:
            data = await asyncio.wait_for(upstream_json(state, "GET", f"{upstream}/models", headers),
                                          cfg.request_timeout_s)
        except Exception as e:  # noqa: BLE001 - any transport failure is the upstream's
            return _upstream_error(shown, e, cfg.request_timeout_s)
        return JSONResponse(data)


SERVED = ("POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, GET /v1/models, POST /v1/guard, "
          "POST /v1/score")


def not_served_router() -> APIRouter:
    """Any other /v1 route, on the proxy: a 404 in the shape of the API its path belongs to (Anthropic's for
    /v1/messages, OpenAI's otherwise), so an SDK raises a clear error instead of failing to parse FastAPI's."""
    r = APIRouter()

    @r.api_route("/v1/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)
    async def not_served(rest: str, request: Request):
        what = f"{request.method} /v1/{rest[:200]}"
        message = f"citebound's proxy does not serve {what}; it serves {SERVED}"
        if rest.startswith("messages"):
            return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": message}},
                                status_code=404)
        return proxy_error(404, message, "not_found")

    return r
