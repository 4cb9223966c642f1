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

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from citebound.serving.held import HeldAnswer, failure, failure_message, report_body
from citebound.serving.state import ServiceState
from citebound.serving.upstream import DONE, StreamFailure, sse_events, unchecked_fields


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
    """One streamed chat completion: its chunk events in, guarded chunk events out (:class:`HeldAnswer`)."""

    def __init__(self, state: ServiceState, guard: Any, passages: list[str], base: int | None, group: str | None,
                 model: str, shown: str, return_original: bool = False):
        self.state, self.guard = state, guard
        self.held = HeldAnswer(state, guard, passages, base, group)
        self.meta, self.shown = _Meta(model), shown
        self.return_original = return_original  # the unguarded text goes back only when the caller asked
        self.tool_calls = 0  # tool-call deltas passed through unchanged (unchecked)
        self.unchecked: set[str] = set()  # other delta fields passed through unchecked (reasoning, refusal, ...)

    def _extra(self, report: Any) -> dict[str, Any]:
        withheld = self.held.block_report is not None and not self.return_original  # withheld text stays withheld
        out = {"report": report_body(report, not withheld), "verifier": self.state.scorer.name,
               "unchecked_tool_calls": self.tool_calls, "unchecked_fields": sorted(self.unchecked)}
        return out | ({"original_content": self.held.text()} if self.return_original else {})

    def _passed_through(self, ev: dict[str, Any], calls: Any) -> list[bytes]:
        """Tool calls and the delta fields the guard does not check: passed through as they come, counted."""
        out = []
        if calls is not None:
            self.tool_calls += sum(1 for c in calls if isinstance(c, dict) and c.get("id"))
            out.append(self.meta.chunk({"tool_calls": calls}))
        delta = ev["choices"][0].get("delta") if ev.get("choices") else None
        if fields := unchecked_fields(delta):  # function_call, reasoning, refusal
            if "function_call" in fields and isinstance(delta["function_call"], dict) and delta["function_call"].get("name"):
                self.tool_calls += 1
            self.unchecked.update(fields)
            out.append(self.meta.chunk({k: delta[k] for k in fields}))
        return out

    async def events(self, resp: Any) -> AsyncIterator[bytes]:
        limits = self.state.cfg.limits
        finish, done, opened = None, False, False
        try:
            async for ev in sse_events(resp, limits.max_upstream_bytes, limits.max_stream_s):
                if ev is DONE:
                    done = True
                    break
                content, fin, calls = _delta(ev)  # first: it refuses an event that is not a JSON object, by name
                self.meta.take(ev)
                if not opened:  # the role chunk waits for the upstream's first event: every chunk carries its id
                    opened = True
                    yield self.meta.chunk({"role": "assistant", "content": ""})
                finish = fin or finish
                for chunk in self._passed_through(ev, calls):
                    yield chunk
                if content and (out := await self.held.feed(content)):
                    yield self.meta.chunk({"content": out})
                if self.held.block_report is not None:
                    yield self.meta.chunk({}, "content_filter", self._extra(self.held.block_report))
                    yield b"data: [DONE]\n\n"
                    return
            if not done and finish is None:
                raise StreamFailure("the upstream's stream ended without [DONE] or a finish_reason (cut short?)")
            if not opened:
                yield self.meta.chunk({"role": "assistant", "content": ""})
            if out := await self.held.finish():
                yield self.meta.chunk({"content": out})
            if self.held.block_report is not None:
                yield self.meta.chunk({}, "content_filter", self._extra(self.held.block_report))
            else:
                yield self.meta.chunk({}, finish or "stop", self._extra(self.held.report()))
            yield b"data: [DONE]\n\n"
        except Exception as e:  # noqa: BLE001 - a limit, bad input, or a transport failure mid-stream: an error event
            yield self._error(failure(e))

    def _error(self, e: StreamFailure) -> bytes:
        return _sse({"error": {"message": failure_message(e, self.shown, self.held.held_chars),
                               "type": "citebound_stream_error", "code": e.code},
                     "citebound": self._extra(self.held.report())})


async def stream_response(state: ServiceState, guard: Any, group: str | None,
                          events: AsyncIterator[bytes], resp: Any) -> Any:
    """The guarded events as a server-sent-event response; the upstream read stops when they end, fail, or the
    client goes away. Shared by every API's stream."""
    from fastapi.responses import StreamingResponse
    from starlette.concurrency import run_in_threadpool

    async def body() -> AsyncIterator[bytes]:
        try:
            async for event in events:
                yield event
        finally:  # done, failed, or the client went away: stop reading the upstream
            await resp.aclose()

    keeper = guard.calibrations.resolve(group)[0]
    monitor_state = await run_in_threadpool(lambda: keeper.state)  # a store read: never on the event loop
    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Citebound-Stream": "sentence-held",
                                      "X-Citebound-Guarantee": monitor_state})
