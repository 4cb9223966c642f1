"""``POST /v1/messages`` with ``--upstream``: Anthropic's Messages API, guarded.

The request goes to ``{upstream}/messages`` less its ``citebound`` field, with the credential chosen by
``upstream_auth`` in ``x-api-key`` (and ``anthropic-version``/``anthropic-beta`` as the client sent them).
Passages: ``citebound.passages``, then the text documents the request carries (``document`` blocks with a text
source, ``search_result`` blocks), numbered in that order. Each run of consecutive text blocks is one answer: its
``[N]`` markers are guarded as in chat completions, and the blocks' ``citations`` (each quoting its
``cited_text``) are checked as structured citations (:mod:`citebound.guarding.structured`); each citation gets a
``citebound`` field with its verdict. When the guard changes a run's text, the run comes back as one text block
holding the guarded text and all the run's citations. The report is ``citebound`` in the message, or, streamed,
an event with no ``event:`` name after ``message_delta`` (the anthropic SDK skips it). Errors are in Anthropic's
shape, mid-stream an ``error`` event the SDK raises on; ``--action block`` is a 403 ``permission_error``, or a
stream that ends with ``stop_reason: "refusal"``. In a stream, the citations are checked when their run of text
ends; what has gone out by then cannot be taken back (``remove`` cannot remove it, ``block`` stops what follows).
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from citebound.guarding import structured
from citebound.guarding.stream import merge_reports
from citebound.guarding.structured import Attached
from citebound.scoring.llm_backends import redact_url
from citebound.serving.held import (
    GuardFailure,
    HeldAnswer,
    add_structured,
    ask_upstream,
    failure,
    failure_message,
    guard_structured,
    guarded_json,
    prepare,
    report_body,
)
from citebound.serving.models import MessagesRequest
from citebound.serving.state import ServiceState
from citebound.serving.upstream import (
    StreamFailure,
    sse_events,
    upstream_base,
    upstream_headers,
)

TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
         413: "request_too_large", 422: "invalid_request_error", 429: "rate_limit_error", 504: "timeout_error"}


def anthropic_error(status: int, message: str, code: str, headers: dict[str, str] | None = None,
                    **citebound: Any) -> JSONResponse:
    """An error in Anthropic's shape (the anthropic SDK raises on it), credentials in any URL redacted, with
    ``headers`` (an upstream refusal's ``Retry-After``)."""
    body: dict[str, Any] = {"type": "error", "error": {"type": TYPES.get(status, "api_error"), "message": redact_url(message),
                                                       "code": code}}
    return JSONResponse(body | ({"citebound": citebound} if citebound else {}), status_code=status, headers=headers)


def documents(messages: list[dict[str, Any]]) -> list[str]:
    """The text of the documents a request carries: ``document`` blocks with a text (or plain content) source and
    ``search_result`` blocks, in order."""
    out = []
    for m in messages:
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if not isinstance(b, dict):
                continue
            src = b.get("source") if isinstance(b.get("source"), dict) else {}
            if b.get("type") == "document" and src.get("type") == "text" and isinstance(src.get("data"), str):
                out.append(src["data"])
            elif b.get("type") in ("document", "search_result"):
                parts = b.get("content") if b.get("type") == "search_result" else src.get("content")
                texts = [p.get("text") for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
                if texts:
                    out.append("\n".join(texts))
    return out


def checked_text(block: Any) -> bool:
    """Whether a block is text the guard checks: a text block whose text is a string (one whose text is not passes
    through, named by :func:`unchecked`)."""
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def unchecked(block: Any) -> tuple[int, set[str]]:
    """What of one content block the guard does not check: the tool calls it is (``tool_use``, ``server_tool_use``)
    and what else it is, named as fields: a block that is no object (``block``), one whose type is no string or is
    empty (``block.type``), a text block whose text is no string (``text.text``) or whose citations are no list
    (``text.citations``: checked as one citation that quotes nothing), any other block by its type (a
    ``server_tool_use`` both counted and named: the guard reads none of its results)."""
    if not isinstance(block, dict):
        return 0, {"block"}
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        return 0, {"block.type"}
    if kind == "text":
        if not isinstance(block.get("text"), str):
            return 0, {"text.text"}
        return 0, set() if isinstance(block.get("citations") or [], list) else {"text.citations"}
    return int(kind in ("tool_use", "server_tool_use")), set() if kind == "tool_use" else {kind}


def citations_of(block: dict[str, Any]) -> list[Any]:
    """A text block's citations: none for a missing or null field, the field itself as one citation (that quotes
    nothing) when it is no list."""
    c = block.get("citations") or []
    return c if isinstance(c, list) else [c]


def runs(content: list[Any]) -> list[list[int]]:
    """The indices of each run of consecutive text blocks the guard checks."""
    out: list[list[int]] = []
    for i, b in enumerate(content):
        if checked_text(b):
            if out and out[-1][-1] == i - 1:
                out[-1].append(i)
            else:
                out.append([i])
    return out


def block_cites(citations: list[Any], at: int, index: int) -> list[Attached]:
    """One text block's citations, each attached at ``at`` (its text's end in the run) with the text it quotes (none
    where ``cited_text`` is missing or no string) and where it came from (``content[index].citations[i]``)."""
    out = []
    for ci, c in enumerate(citations):
        quoted = c.get("cited_text") if isinstance(c, dict) and isinstance(c.get("cited_text"), str) else None
        kind = c.get("type", "citation") if isinstance(c, dict) else "citation"
        out.append(Attached(at, quoted, f"content[{index}].citations[{ci}] ({kind})"))
    return out


def attached(blocks: list[dict[str, Any]], indices: list[int]) -> list[Attached]:
    """The run's citations, each attached at the end of its block's text (trailing whitespace left out)."""
    out, pos = [], 0
    for bi, b in zip(indices, blocks):
        text = b["text"]
        out += block_cites(citations_of(b), pos + len(text.rstrip()), bi)
        pos += len(text)
    return out


async def guard_content(state: ServiceState, guard: Any, content: list[Any], passages: list[str], base: int | None,
                        group: str | None) -> tuple[list[Any], Any]:
    """A message's content guarded run by run, and the whole message's report."""
    out, parts, offset, last = [], [], 0, 0
    for run in runs(content):
        blocks = [content[i] for i in run]
        text = "".join(b["text"] for b in blocks)
        cites = attached(blocks, run)
        guarded, rep = await guard_structured(state, guard, text, cites, passages, base, group)
        found = rep.audit[len(rep.audit) - len(cites):] if cites else []
        gathered = []
        for b in blocks:
            for c in citations_of(b):
                gathered.append(c | {"citebound": structured.verdict(found[len(gathered)])} if isinstance(c, dict) else c)
        out += content[last:run[0]]
        if guarded == text:
            k = 0
            for b in blocks:
                n = len(citations_of(b))
                out.append(b | ({"citations": gathered[k:k + n]} if isinstance(b.get("citations"), list) else {}))
                k += n
        elif guarded:
            out.append({"type": "text", "text": guarded} | ({"citations": gathered} if gathered else {}))
        last = run[-1] + 1
        parts.append((offset, rep))
        offset += len(text)
    out += content[last:]
    report = merge_reports(parts, guard.on_error == "open")
    guard.blocks(report)
    return out, report


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()
    cfg = state.cfg
    upstream, shown = upstream_base(state)

    @r.post("/v1/messages", responses={400: {"description": "no passages"}, 403: {"description": "blocked"},
                                       502: {"description": "the upstream failed"}, 504: {"description": "timeout"}})
    async def messages(req: MessagesRequest, request: Request):
        extra = req.citebound
        base, group = (extra.citation_base, extra.group) if extra else (None, None)
        show = bool(extra and extra.return_original)
        body = req.model_dump(exclude={"citebound"}, exclude_none=True)
        headers = upstream_headers(cfg, request.headers.get("x-api-key"), "x-api-key") | {
            k: v for k in ("anthropic-version", "anthropic-beta") if (v := request.headers.get(k))}
        try:
            guard, passages = prepare(state, extra, documents(req.messages))
            got = await ask_upstream(state, shown, f"{upstream}/messages", headers, body, bool(req.stream), "content")
            if req.stream:
                from citebound.serving.stream_proxy import stream_response

                run = MessagesStream(state, guard, passages, base, group, shown, show)
                return await stream_response(state, guard, group, run.events(got), got)
            content, report = await guard_content(state, guard, got["content"], passages, base, group)
        except GuardFailure as e:
            return anthropic_error(e.status, str(e), e.code, e.headers, **e.extra)
        if report.blocked:
            return anthropic_error(403, f"citebound blocked the answer: {report.block_reason}", "blocked",
                                   report=report_body(report, show))
        original = got["content"]
        got["content"] = content
        seen = [unchecked(b) for b in original]
        calls, fields = sum(c for c, _ in seen), sorted(set().union(*(f for _, f in seen)))
        return guarded_json(state, got, report, calls, fields, {"original_content": original} if show else None)

    return r


def _event(obj: dict[str, Any], named: bool = True) -> bytes:
    head = f"event: {obj['type']}\n" if named else ""
    return f"{head}data: {json.dumps(obj)}\n\n".encode()


class MessagesStream:
    """One streamed message: Anthropic's events in, the same events out with each run of text blocks held and
    guarded (:class:`HeldAnswer`). A text block's ``content_block_stop`` waits until the next block starts (the run's
    held text may still go into it); the run's citations are checked when it ends."""

    def __init__(self, state: ServiceState, guard: Any, passages: list[str], base: int | None, group: str | None,
                 shown: str, show: bool):
        self.state, self.guard, self.passages, self.base, self.group = state, guard, passages, base, group
        self.shown, self.show = shown, show
        self.held: HeldAnswer | None = None
        self.cites: list[Attached] = []
        self.block_start, self.index, self.pending_stop = 0, 0, None
        self.parts: list[tuple[int, Any]] = []
        self.offset, self.calls, self.unchecked, self.blocked = 0, 0, set(), False

    def report(self) -> Any:
        now = self.parts + ([(self.offset, self.held.report())] if self.held is not None else [])
        return merge_reports(now, self.guard.on_error == "open")

    def _extra(self, report: Any) -> dict[str, Any]:
        return {"type": "citebound.report", "report": report_body(report, self.show or not self.blocked),
                "verifier": self.state.scorer.name, "unchecked_tool_calls": self.calls,
                "unchecked_fields": sorted(self.unchecked)}

    def _text(self, text: str) -> bytes:
        return _event({"type": "content_block_delta", "index": self.index, "delta": {"type": "text_delta", "text": text}})

    async def _end_run(self) -> AsyncIterator[bytes]:
        """The run's rest guarded and sent, its citations checked, its last block stopped."""
        held, self.held = self.held, None
        if held is None:
            return
        if out := await held.finish():
            yield self._text(out)
        rep = held.report()
        if held.block_report is None and self.cites:
            await add_structured(self.state, self.guard, rep, held.text(), self.cites, self.passages, self.base,
                                 self.group)
        self.parts.append((self.offset, rep))
        self.offset += len(held.text())
        self.cites = []
        self.blocked = held.block_report is not None or self.guard.blocks(self.report())
        if not self.blocked and (late := held.release()):  # sentences that waited for the run's citations
            yield self._text(late)
        if self.pending_stop is not None and not self.blocked:
            yield _event({"type": "content_block_stop", "index": self.pending_stop})
            self.pending_stop = None

    async def _block(self, ev: dict[str, Any]) -> AsyncIterator[bytes]:
        b, i = ev.get("content_block"), ev.get("index", 0)
        calls, fields = unchecked(b)
        if not checked_text(b):  # its deltas, if any, are text outside a text block: refused in _delta
            async for out in self._end_run():
                yield out
            if self.blocked:
                return
            self.calls += calls
            self.unchecked |= fields
            yield _event(ev)
            return
        self.unchecked |= fields  # citations that are no list
        if self.held is None:
            self.held = HeldAnswer(self.state, self.guard, self.passages, self.base, self.group,
                                   lambda: self.parts, uncited_later=True)
        if self.pending_stop is not None:
            yield _event({"type": "content_block_stop", "index": self.pending_stop})
            self.pending_stop = None
        self.index, self.block_start = i, len(self.held.text())
        if b.get("text"):  # a block that starts with text: held like a delta
            ev = ev | {"content_block": b | {"text": ""}}
        yield _event(ev)
        if b.get("text") and (out := await self.held.feed(b["text"])):
            yield self._text(out)
        self.block_citations = list(citations_of(b))

    async def _delta(self, ev: dict[str, Any]) -> AsyncIterator[bytes]:
        d = ev.get("delta") or {}
        if d.get("type") == "text_delta" and self.held is not None:
            if not isinstance(d.get("text"), str):
                raise StreamFailure("the upstream sent a text_delta whose text is not a string")
            if out := await self.held.feed(d["text"]):
                yield self._text(out)
            self.blocked = self.held.block_report is not None
            return
        if d.get("type") == "text_delta":  # text outside a text block: it would reach the client unchecked
            raise StreamFailure("the upstream sent a text_delta outside a text block")
        if d.get("type") == "citations_delta" and self.held is not None:
            self.block_citations.append(d.get("citation"))
        yield _event(ev)

    def _stopped(self, ev: dict[str, Any]) -> None:
        if self.held is not None and ev.get("index") == self.index:
            text = self.held.text()[self.block_start:]
            self.cites += block_cites(self.block_citations, self.block_start + len(text.rstrip()), self.index)
            self.block_citations, self.pending_stop = [], self.index

    async def events(self, resp: Any) -> AsyncIterator[bytes]:
        lim = self.state.cfg.limits
        self.block_citations: list[Any] = []
        stopped = False
        try:
            async for ev in sse_events(resp, lim.max_upstream_bytes, lim.max_stream_s):
                if not isinstance(ev, dict):
                    raise StreamFailure("the upstream sent an event that is not a JSON object")
                t = ev.get("type")
                if t == "error":
                    err = ev.get("error") if isinstance(ev.get("error"), dict) else {}
                    raise StreamFailure(f"the upstream sent an error event: {str(err.get('message'))[:500]}")
                if t == "message_start" and ((ev.get("message") or {}).get("content") if isinstance(ev.get("message"),
                                                                                                   dict) else True):
                    raise StreamFailure("the upstream's message_start carries content: the guard checks text as it "
                                        "streams, in content blocks")
                if t == "content_block_start":
                    gen = self._block(ev)
                elif t == "content_block_delta":
                    gen = self._delta(ev)
                elif t == "content_block_stop":
                    if self.held is not None and ev.get("index") == self.index:
                        self._stopped(ev)
                    else:
                        yield _event(ev)
                    continue
                elif t == "message_delta":
                    gen = self._end_run()
                else:
                    gen = None
                if gen is not None:
                    async for out in gen:
                        yield out
                if self.blocked:
                    yield from_blocked(self)
                    return
                if t == "message_delta":
                    yield _event(ev)
                    yield _event(self._extra(self.report()), named=False)
                elif t == "message_stop":
                    stopped = True
                    yield _event(ev)
                elif t not in ("content_block_start", "content_block_delta", "message_delta"):
                    yield _event(ev)
            if not stopped:
                raise StreamFailure("the upstream's stream ended without message_stop (cut short?)")
        except Exception as e:  # noqa: BLE001 - a limit, bad input, or a transport failure mid-stream: an error event
            f = failure(e)
            held, waiting = (self.held.held_chars, self.held.waiting_chars) if self.held is not None else (0, 0)
            yield _event({"type": "error", "error": {"type": "api_error", "code": f.code,
                                                     "message": failure_message(f, self.shown, held, waiting)},
                          "citebound": self._extra(self.report())})


def from_blocked(run: MessagesStream) -> bytes:
    """The end of a stream ``--action block`` stopped: the open block stopped, ``stop_reason: "refusal"``, the
    report so far (its claims left out unless the request asked for the original), then ``message_stop``."""
    out = [] if run.pending_stop is None and run.held is None else [
        _event({"type": "content_block_stop", "index": run.pending_stop if run.pending_stop is not None else run.index})]
    report = run.report()
    if not run.guard.blocks(report):  # blocked on the run so far, which the whole message's budget may hide
        # the stopped run's own reason: the run still held, or the last one ended
        stopped = run.held.block_report if run.held is not None else run.parts[-1][1] if run.parts else None
        report.blocked, report.block_reason = True, stopped.block_reason if stopped is not None else "blocked"
    out += [_event({"type": "message_delta", "delta": {"type": "message_delta", "stop_reason": "refusal",
                                                       "stop_sequence": None}, "usage": {"output_tokens": 0}}),
            _event(run._extra(report), named=False), _event({"type": "message_stop"})]
    return b"".join(out)
