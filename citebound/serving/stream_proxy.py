"""``stream: true`` through the guarding proxy: the upstream's server-sent events in, guarded
``chat.completion.chunk`` events out, one per run of complete sentences.

The upstream's stream is read with every size bounded while it is read (``max_upstream_bytes`` in all,
a line at most that long, ``max_stream_held_chars`` of text waiting for its sentence to end) and a read
timeout between bytes (``upstream_read_timeout_s``). Each complete segment
(:class:`~citebound.guarding.stream.SentenceHold`) is guarded through the service's micro-batcher like a
``/v1/guard`` request; its guarded text goes out as a chunk, and the last chunk before ``[DONE]`` carries
the upstream's ``finish_reason`` and, in ``citebound``, the whole answer's report. The streamed text joins
to the guarded content of the same answer unstreamed.

Fail closed: a segment whose guard runs past the request timeout goes out with its citations
``[N UNVERIFIED]``; an upstream that fails, sends an error event, sends malformed data or ends without
``[DONE]`` ends the stream with an error event (the ``openai`` SDK raises ``APIError`` on it) that says
what happened and carries the report so far: text held in an unfinished sentence is not sent. With
``--action block``, the stream stops at the segment that takes the review budget past ``--block-above``:
that segment and the rest are withheld (what has gone out cannot be taken back), and the last chunk's
``finish_reason`` is ``content_filter``. A client that disconnects stops the upstream read.
"""
from __future__ import annotations

import codecs
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from citebound.guarding.stream import StreamAssembler
from citebound.scoring.llm_backends import redact_url
from citebound.serving.state import GuardInputError, ServiceState
from citebound.serving.upstream import UpstreamError, not_json, unchecked_fields
from citebound.text.limits import LimitExceeded

DONE = object()


class StreamFailure(Exception):
    """The stream cannot go on; ``code`` names why (upstream_error, limit, bad_input)."""

    def __init__(self, message: str, code: str = "upstream_error"):
        super().__init__(message)
        self.code = code


async def sse_events(resp: Any, cap: int, seconds: float | None = None) -> AsyncIterator[Any]:
    """The JSON data of each server-sent event (or :data:`DONE` for ``[DONE]``), reading at most ``cap``
    bytes for at most ``seconds`` in all (each read is bounded by the client's read timeout besides);
    StreamFailure on bad UTF-8, malformed JSON, more bytes than ``cap`` or a stream past ``seconds``."""
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
    if data:
        yield _event("\n".join(data))


def _event(payload: str) -> Any:
    if payload.strip() == "[DONE]":
        return DONE
    try:
        return json.loads(payload, parse_constant=not_json)
    except ValueError:
        raise StreamFailure(f"the upstream sent an event that is not JSON: {payload[:200]!r}") from None


def _sse(obj: Any) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


class _Meta:
    def __init__(self, model: str):
        self.id, self.model, self.created = "chatcmpl-citebound", model, int(time.time())

    def take(self, ev: dict[str, Any]) -> None:
        self.id = str(ev.get("id") or self.id)
        self.model = str(ev.get("model") or self.model)
        if isinstance(ev.get("created"), int):
            self.created = ev["created"]

    def chunk(self, delta: dict[str, Any], finish: str | None = None, extra: dict[str, Any] | None = None) -> bytes:
        body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return _sse(body | ({"citebound": extra} if extra else {}))


def _delta(ev: Any) -> tuple[str, str | None, Any]:
    """(content, finish_reason, tool-call deltas or None) of one chunk event; StreamFailure for an error event,
    a malformed one, or a choice other than the first (the guard checks one choice; none passes unchecked)."""
    if not isinstance(ev, dict):
        raise StreamFailure("the upstream sent an event that is not a JSON object")
    if ev.get("error"):
        err = ev["error"]
        msg = err.get("message") if isinstance(err, dict) else str(err)
        raise StreamFailure(f"the upstream sent an error event: {str(msg)[:500]}")
    choices = ev.get("choices") or []
    if not choices:  # e.g. a usage-only chunk
        return "", None, None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise StreamFailure("the upstream sent a chunk with malformed choices")
    if len(choices) > 1 or choices[0].get("index", 0) not in (0, None):
        raise StreamFailure("the upstream streamed more than one choice; the guard checks exactly one")
    delta = choices[0].get("delta") or {}
    content = delta.get("content") if isinstance(delta, dict) else None
    if content is not None and not isinstance(content, str):
        raise StreamFailure("the upstream sent a non-string delta content")
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    return content or "", choices[0].get("finish_reason"), calls if isinstance(calls, list) and calls else None


class StreamRun:
    """One streamed request: guards segments as they complete and yields the events to send."""

    def __init__(self, state: ServiceState, guard: Any, passages: list[str], base: int | None, group: str | None,
                 model: str, shown: str, return_original: bool = False):
        self.state, self.guard, self.passages, self.base, self.group = state, guard, passages, base, group
        self.asm = StreamAssembler(state.cfg.limits, guard.on_error == "open")
        self.meta, self.shown = _Meta(model), shown
        self.original: list[str] = []
        self.return_original = return_original  # the unguarded text goes back only when the caller asked
        self.tool_calls = 0  # tool-call deltas passed through unchanged (unchecked)
        self.unchecked: set[str] = set()  # other delta fields passed through unchecked (reasoning, refusal, ...)
        self.block_report: Any = None  # the report so far, once --action block withholds the rest

    async def _guard(self, seg: str, final: bool) -> str:
        try:
            ((text, rep),) = await self.state.run_guard(self.guard, [(seg, self.passages, self.base)], self.group,
                                                        open_end=not final, block=False)
        except TimeoutError:  # fail closed: this segment's citations go out unverified
            text, rep = self.guard.unchecked(seg, self.passages, f"the guard ran past {self.state.cfg.request_timeout_s} s",
                                             base=self.base, group=self.group, open_end=not final)
            self.state.metrics.record(self.state.scorer.name, [(text, rep)])
        out = self.asm.add(seg, text, rep)
        self.block_report = self.asm.blocked(self.guard)
        return "" if self.block_report is not None else out

    def _extra(self, report: Any) -> dict[str, Any]:
        body = report.to_dict()
        if self.block_report is not None and not self.return_original:  # withheld text stays withheld
            from citebound.serving.state import without_claims

            body = without_claims(body)
        out = {"report": body, "verifier": self.state.scorer.name, "unchecked_tool_calls": self.tool_calls,
               "unchecked_fields": sorted(self.unchecked)}
        return out | ({"original_content": "".join(self.original)} if self.return_original else {})

    async def events(self, resp: Any) -> AsyncIterator[bytes]:
        limits = self.state.cfg.limits
        finish, done = None, False
        yield self.meta.chunk({"role": "assistant", "content": ""})
        try:
            async for ev in sse_events(resp, limits.max_upstream_bytes, limits.max_stream_s):
                if ev is DONE:
                    done = True
                    break
                self.meta.take(ev)
                content, fin, calls = _delta(ev)
                finish = fin or finish
                if calls is not None:  # passed through as they come: tool calls are not text the guard checks
                    self.tool_calls += sum(1 for c in calls if isinstance(c, dict) and c.get("id"))
                    yield self.meta.chunk({"tool_calls": calls})
                delta = ev["choices"][0].get("delta") if ev.get("choices") else None
                if fields := unchecked_fields(delta):  # function_call, reasoning, refusal: passed through, counted
                    if "function_call" in fields and isinstance(delta["function_call"], dict) and \
                            delta["function_call"].get("name"):
                        self.tool_calls += 1
                    self.unchecked.update(fields)
                    yield self.meta.chunk({k: delta[k] for k in fields})
                if content:
                    self.original.append(content)
                    seg = self.asm.feed(content)
                    if seg and (out := await self._guard(seg, False)):
                        yield self.meta.chunk({"content": out})
                    if self.block_report is not None:
                        yield self.meta.chunk({}, "content_filter", self._extra(self.block_report))
                        yield b"data: [DONE]\n\n"
                        return
            if not done and finish is None:
                raise StreamFailure("the upstream's stream ended without [DONE] or a finish_reason (cut short?)")
            if out := await self._guard(self.asm.finish(), True):
                yield self.meta.chunk({"content": out})
            if self.block_report is not None:
                yield self.meta.chunk({}, "content_filter", self._extra(self.block_report))
            else:
                tail, report = self.asm.end()
                if tail:
                    yield self.meta.chunk({"content": tail})
                yield self.meta.chunk({}, finish or "stop", self._extra(report))
            yield b"data: [DONE]\n\n"
        except LimitExceeded as e:
            yield self._error(StreamFailure(str(e), "limit"))
        except GuardInputError as e:
            yield self._error(StreamFailure(str(e), "bad_input"))
        except StreamFailure as e:
            yield self._error(e)
        except Exception as e:  # noqa: BLE001 - a transport failure mid-stream (read timeout, reset) is the upstream's
            yield self._error(StreamFailure(redact_url(f"the upstream's stream failed: {type(e).__name__}: {e}")))

    def _error(self, e: StreamFailure) -> bytes:
        held = len(self.asm.hold.held)
        msg = redact_url(f"upstream {self.shown}: {e}" if e.code == "upstream_error" else str(e))
        if held:
            msg += f"; {held} characters of an unfinished sentence were not sent (they cannot be checked)"
        return _sse({"error": {"message": msg, "type": "citebound_stream_error", "code": e.code},
                     "citebound": self._extra(self.asm.report())})


async def open_upstream(state: ServiceState, url: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
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
        raise UpstreamError(f"answered {resp.status_code}", body=b"".join(raw)[:2000].decode("utf-8", "replace"))
    return resp


async def stream_response(state: ServiceState, run: StreamRun, resp: Any) -> Any:
    from fastapi.responses import StreamingResponse

    async def body() -> AsyncIterator[bytes]:
        try:
            async for event in run.events(resp):
                yield event
        finally:  # done, failed, or the client went away: stop reading the upstream
            await resp.aclose()

    from starlette.concurrency import run_in_threadpool

    keeper = run.guard.calibrations.resolve(run.group)[0]
    monitor_state = await run_in_threadpool(lambda: keeper.state)  # a store read: never on the event loop
    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Citebound-Stream": "sentence-held",
                                      "X-Citebound-Guarantee": monitor_state})
