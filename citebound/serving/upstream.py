"""The proxy's upstream, in one module that every API adapter imports (none imports another's internals): the
client calls (a bounded JSON answer, a stream opened with its status checked, a bounded server-sent-event reader),
the credentials it is sent, its errors, and what an answer carries that the guard passes through unchecked."""
from __future__ import annotations

import codecs
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from citebound.scoring.llm_backends import redact_url, split_userinfo


class UpstreamError(Exception):
    """The upstream failed; ``status`` is the answer to give (502, or the upstream's own, :func:`client_status`)."""

    def __init__(self, detail: str, status: int = 502, body: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status, self.body, self.headers = status, body, headers or {}


# an upstream's refusal that is the client's to act on (its request, its key, its rate, its model): given as the
# upstream gave it, so the client's SDK raises what it raises without the proxy (an invalid key is an
# AuthenticationError at once, not a 502 retried); any other failure is the proxy's 502
PASSED_THROUGH = frozenset({400, 401, 403, 404, 408, 409, 413, 422, 429})


def client_status(status: int) -> int:
    """The status the proxy answers for an upstream's non-200 answer.

    >>> [client_status(s) for s in (401, 429, 500, 503, 302)]
    [401, 429, 502, 502, 502]
    """
    return status if status in PASSED_THROUGH else 502


# the headers of a refusal that say how long to wait before trying again (the openai and anthropic SDKs read both to
# pace their retries): given to the client as the upstream sent them, when each is a short printable ASCII value
WAIT_HEADERS = ("retry-after", "retry-after-ms")


def wait_headers(headers: Any) -> dict[str, str]:
    """The :data:`WAIT_HEADERS` of an upstream's answer that the client gets: each at most 64 printable ASCII
    characters (no line break can reach the proxy's own headers), any other dropped.

    >>> wait_headers({"retry-after": "20", "retry-after-ms": "x" * 65, "x-other": "1"})
    {'retry-after': '20'}
    """
    return {k: v for k in WAIT_HEADERS
            if isinstance(v := headers.get(k), str) and 0 < len(v) <= 64 and v.isascii() and v.isprintable()}


def refused(status: int, body: bytes, headers: Any = None) -> UpstreamError:
    """The error of an upstream's non-200 answer: its status as :func:`client_status` gives it, its body's first
    2,000 bytes (as text) and its :func:`wait_headers`."""
    return UpstreamError(f"answered {status}", status=client_status(status), body=body[:2000].decode("utf-8", "replace"),
                         headers=wait_headers(headers or {}))


class StreamFailure(Exception):
    """A stream cannot go on; ``code`` names why (upstream_error, limit, bad_input)."""

    def __init__(self, message: str, code: str = "upstream_error"):
        super().__init__(message)
        self.code = code


DONE = object()  # the ``data: [DONE]`` event


def not_json(name: str) -> Any:
    """``parse_constant`` for an upstream's answer: NaN, Infinity and -Infinity are not JSON, so an answer holding
    one is the upstream's fault (a 502), never a 500 when the response is written."""
    raise ValueError(f"the upstream's answer holds {name}, which is not JSON")


def upstream_headers(cfg: Any, sent: str | None, header: str = "authorization") -> dict[str, str]:
    """The credential header the upstream gets (``header``: ``authorization`` for OpenAI's APIs, ``x-api-key`` for
    Anthropic's): the client's as sent (``upstream_auth`` client), the proxy's own key (own), or the client's when it
    sent one, else the proxy's (client-else-own)."""
    if cfg.upstream_auth == "own" or (cfg.upstream_auth == "client-else-own" and not sent):
        own = cfg.upstream_key or ""
        return {"Authorization": f"Bearer {own}"} if header == "authorization" else {header: own}
    return {header.title() if header == "authorization" else header: sent} if sent else {}


def upstream_failure(shown: str, e: Exception,
                     timeout_s: float) -> tuple[int, str, str, dict[str, Any], dict[str, str]]:
    """(status, message, code, extra, headers) for an upstream call that failed: 504 past the request timeout
    (naming the option), the upstream's own failure (its body, redacted, and its :func:`wait_headers`), or a
    transport failure (502)."""
    if isinstance(e, TimeoutError):
        return 504, (f"upstream {shown} did not answer within {timeout_s} s (--request-timeout, request_timeout in the "
                     "config file)"), "upstream_timeout", {}, {}
    if isinstance(e, UpstreamError):
        return (e.status, f"upstream {shown} {e}", "upstream_error", ({"upstream": redact_url(e.body)} if e.body else {}),
                e.headers)
    return 502, f"upstream {shown} failed: {type(e).__name__}: {e}", "upstream_error", {}, {}


def upstream_base(state: Any) -> tuple[str, str]:
    """The upstream's base URL (its credentials travel as the client's basic auth, never in the URL) and how logs
    and errors show it."""
    upstream = split_userinfo(state.cfg.upstream or "")[0].rstrip("/")
    return upstream, redact_url(upstream)


async def upstream_json(state: Any, method: str, url: str, headers: dict[str, str],
                        body: dict[str, Any] | None = None) -> Any:
    """The upstream's JSON answer to one request, read up to ``max_upstream_bytes``; not a 200, or not JSON
    (NaN included), is an :class:`UpstreamError`."""
    cap = state.cfg.limits.max_upstream_bytes
    extra = {} if body is None else {"json": body}
    async with state.http.stream(method, url, headers=headers, **extra) as r:
        chunks, n = [], 0
        async for chunk in r.aiter_bytes():
            n += len(chunk)
            if n > cap:
                raise UpstreamError(f"the upstream's answer is over {cap} bytes (max_upstream_bytes)")
            chunks.append(chunk)
    raw = b"".join(chunks)
    if r.status_code != 200:
        raise refused(r.status_code, raw, r.headers)
    try:
        data = json.loads(raw, parse_constant=not_json)
    except ValueError as e:
        raise UpstreamError(f"answered with {e}" if "not JSON" in str(e) else "answered with malformed JSON") from None
    if not isinstance(data, dict):
        raise UpstreamError("answered with JSON that is not an object")
    return data


async def open_upstream(state: Any, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    """The upstream's streaming response, its status checked (a non-200 is read, bounded, into an error)."""
    import httpx

    lim = state.cfg.limits
    timeout = httpx.Timeout(state.cfg.request_timeout_s, read=float(lim.upstream_read_timeout_s))
    req = state.http.build_request("POST", url, json=body | {"stream": True}, headers=headers, timeout=timeout)
    resp = await state.http.send(req, stream=True)
    if resp.status_code != 200:
        raw, n = [], 0
        try:
            async for chunk in resp.aiter_raw():
                n += len(chunk)
                raw.append(chunk)
                if n > 4096:
                    break
        finally:
            await resp.aclose()
        raise refused(resp.status_code, b"".join(raw), resp.headers)
    return resp


async def sse_events(resp: Any, cap: int, seconds: float | None = None) -> AsyncIterator[Any]:
    """The JSON data of each server-sent event (or :data:`DONE` for ``[DONE]``), reading at most ``cap``
    bytes for at most ``seconds`` in all (each read is bounded by the client's read timeout besides);
    StreamFailure on bad UTF-8, malformed JSON, more bytes than ``cap`` or a stream past ``seconds``. An event
    the stream ends before its blank line is not dispatched (the SSE standard's rule, as the SDKs do). The
    ``event:`` field is not needed: every API served here (chat completions, Responses, Messages) names the
    event's type in its data too."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    pending: list[str] = []  # the unfinished line's pieces: each read is scanned once, never the line again
    data: list[str] = []
    n = 0
    end = None if seconds is None else time.monotonic() + seconds
    async for chunk in resp.aiter_raw():
        n += len(chunk)
        if n > cap:
            raise StreamFailure(f"the upstream's stream is over {cap} bytes (max_upstream_bytes)", "limit")
        if end is not None and time.monotonic() > end:
            raise StreamFailure(f"the upstream's stream took longer than {seconds:g} s in all (max_stream_s)", "limit")
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError:
            raise StreamFailure("the upstream's stream is not valid UTF-8") from None
        if "\n" not in text:
            pending.append(text)
            continue
        lines = text.split("\n")  # one pass over the read, whatever its number of lines
        lines[0] = "".join(pending) + lines[0]
        pending = [lines.pop()]
        for raw in lines:
            line = raw.rstrip("\r")
            if line:
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                continue
            if data:
                yield _event("\n".join(data))
                data = []
    # an event with no blank line after it when the stream ends is dropped, as the SSE standard and the openai and
    # anthropic SDKs drop it: the stream was cut, and the adapter says so (no terminal event came)


def _event(payload: str) -> Any:
    if payload.strip() == "[DONE]":
        return DONE
    try:
        return json.loads(payload, parse_constant=not_json)
    except ValueError:
        raise StreamFailure(f"the upstream sent an event that is not JSON: {payload[:200]!r}") from None


# message fields a reader or an agent may act on that the guard does not check: passed through, counted
UNCHECKED_FIELDS = ("function_call", "reasoning_content", "reasoning", "refusal", "audio")


def unchecked_fields(message: Any) -> list[str]:
    """The fields of ``message`` (or a stream delta) that carry content the guard passes through unchecked: those
    of :data:`UNCHECKED_FIELDS` that say something, and ``tool_calls`` when it is no list (not counted as calls).

    >>> unchecked_fields({"content": "x", "refusal": "no", "reasoning_content": "", "tool_calls": "oops"})
    ['refusal', 'tool_calls']
    """
    if not isinstance(message, dict):
        return []
    calls = message.get("tool_calls")
    malformed = ["tool_calls"] if calls not in (None, "", [], {}) and not isinstance(calls, list) else []
    return [k for k in UNCHECKED_FIELDS if message.get(k) not in (None, "", [], {})] + malformed


def tool_calls(message: Any) -> int:
    """How many tool calls a message (or a stream delta) carries, a legacy ``function_call`` too: passed through
    unchanged, and unchecked.

    >>> tool_calls({"tool_calls": [{"id": "a"}, {"id": "b"}], "function_call": {"name": "f"}})
    3
    """
    if not isinstance(message, dict):
        return 0
    calls = message.get("tool_calls")
    return (len(calls) if isinstance(calls, list) else 0) + (1 if isinstance(message.get("function_call"), dict) else 0)
