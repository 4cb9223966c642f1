"""``POST /v1/responses`` with ``--upstream``: OpenAI's Responses API, guarded.

The request goes to ``{upstream}/responses`` less its ``citebound`` field. Passages: ``citebound.passages``, then
the text of the file-search results the response carries (``file_search_call`` items with ``results``), numbered
in that order. Each ``output_text`` part of each message is one answer: its ``[N]`` markers are guarded as in chat
completions, and its ``annotations`` are checked as structured citations (:mod:`citebound.guarding.structured`):
a ``file_citation`` against the text of its file's search results, a ``url_citation`` (no text) counted unchecked.
Each annotation gets a ``citebound`` field with its verdict, and its positions follow the guarded text. The
report is ``citebound`` in the response, or, streamed, a final ``citebound.report`` event (the openai SDK passes
an event type it does not know through untyped). Errors are in OpenAI's shape, mid-stream an ``error`` event with
an ``error`` object (the SDK raises ``APIError``); ``--action block`` is a 403, or a stream that ends with
``response.incomplete`` (reason ``content_filter``). In a stream, annotations are checked when their part ends.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request

from citebound.guarding import structured
from citebound.guarding.stream import merge_reports
from citebound.guarding.structured import Attached, position_map
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
from citebound.serving.models import ResponsesRequest
from citebound.serving.proxy import proxy_error
from citebound.serving.state import ServiceState
from citebound.serving.upstream import (
    StreamFailure,
    sse_events,
    upstream_base,
    upstream_headers,
)


def search_texts(output: list[Any]) -> tuple[list[str], dict[str, str]]:
    """The file-search results' texts (passages, in order) and each file's text (its results joined)."""
    out, by_file = [], {}
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "file_search_call":
            continue
        for r in item.get("results") or []:
            if isinstance(r, dict) and isinstance(r.get("text"), str) and r["text"].strip():
                out.append(r["text"])
                fid = str(r.get("file_id"))
                by_file[fid] = f"{by_file[fid]}\n{r['text']}" if fid in by_file else r["text"]
    return out, by_file


def unchecked(item: Any) -> tuple[int, set[str]]:
    """What of one output item the guard does not check: the tool calls it is (a call, but not a file search: its
    results are passages) and the kinds of what else it carries, named as fields: an item that is no object
    (``item``), a reasoning item (any item that is neither a message nor a call, by its type), a message whose
    content is no list (``message.content``), a part that is no object (``part``), an ``output_text`` whose text is
    no string (``output_text.text``), an item or part whose type is no string or is empty (``item.type``,
    ``part.type``), a refusal that says something (``refusal``), any other part (its type)."""
    if not isinstance(item, dict):
        return 0, {"item"}
    kind = item.get("type")
    if not isinstance(kind, str) or not kind:
        return 0, {"item.type"}
    if kind.endswith("call"):
        return int(kind != "file_search_call"), set()
    if kind != "message":
        return 0, {kind}
    if not isinstance(item.get("content"), list):
        return 0, {"message.content"}
    fields = set()
    for part in item["content"]:
        if not isinstance(part, dict):
            fields.add("part")
        elif part.get("type") == "output_text":
            fields |= set() if isinstance(part.get("text"), str) else {"output_text.text"}
        elif not isinstance(part.get("type"), str) or not part["type"]:
            fields.add("part.type")
        elif part["type"] != "refusal" or part.get("refusal"):
            fields.add(part["type"])
    return 0, fields


def _position(v: Any) -> bool:
    """Whether an annotation's field is a position: an integer, and not true or false (no position)."""
    return isinstance(v, int) and not isinstance(v, bool)


def attached(annotations: list[Any], files: dict[str, str], n: int) -> list[Attached]:
    """The part's citations: each annotation that cites (not a ``file_path``), where it ends in the text."""
    out = []
    for k, a in enumerate(annotations):
        if not isinstance(a, dict) or a.get("type") == "file_path":
            continue
        at = a.get("end_index", a.get("index"))
        at = min(max(at, 0), n) if _position(at) else n
        quoted = files.get(str(a.get("file_id"))) if a.get("type") in ("file_citation", "container_file_citation") else None
        out.append(Attached(at, quoted, f"annotations[{k}] ({a.get('type')})"))
    return out


def annotate(annotations: list[Any], audits: list[Any], where: Any) -> list[Any]:
    out, k = [], 0
    for a in annotations:
        if not isinstance(a, dict) or a.get("type") == "file_path":
            out.append(a)
            continue
        moved = {f: where(a[f]) for f in ("index", "start_index", "end_index") if _position(a.get(f))}  # true: left as sent
        out.append(a | moved | {"citebound": structured.verdict(audits[k])})
        k += 1
    return out


async def guard_output(state: ServiceState, guard: Any, output: list[Any], passages: list[str], files: dict[str, str],
                       base: int | None, group: str | None) -> tuple[list[Any], Any]:
    """The response's output with each message's output_text parts guarded, and the whole response's report."""
    parts, offset = [], 0
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "message" or not isinstance(item.get("content"), list):
            continue
        for k, part in enumerate(item["content"]):
            if not isinstance(part, dict) or part.get("type") != "output_text" or not isinstance(part.get("text"), str):
                continue
            text, notes = part["text"], part.get("annotations") or []
            cites = attached(notes, files, len(text))
            guarded, rep = await guard_structured(state, guard, text, cites, passages, base, group)
            found = rep.audit[len(rep.audit) - len(cites):] if cites else []
            item["content"][k] = part | {"text": guarded, "annotations": annotate(notes, found, position_map(text, guarded))}
            parts.append((offset, rep))
            offset += len(text)
    report = merge_reports(parts, guard.on_error == "open")
    guard.blocks(report)
    return output, report


def router(state: ServiceState) -> APIRouter:
    r = APIRouter()
    cfg = state.cfg
    upstream, shown = upstream_base(state)

    @r.post("/v1/responses", responses={400: {"description": "no passages"}, 403: {"description": "blocked"},
                                        502: {"description": "the upstream failed"}, 504: {"description": "timeout"}})
    async def responses(req: ResponsesRequest, request: Request):
        extra = req.citebound
        body = req.model_dump(exclude={"citebound"}, exclude_none=True)
        headers = upstream_headers(cfg, request.headers.get("authorization"))
        try:
            guard, passages = prepare(state, extra)
            base, group, show = extra.citation_base, extra.group, bool(extra.return_original)
            got = await ask_upstream(state, shown, f"{upstream}/responses", headers, body, bool(req.stream), "output")
            if req.stream:
                from citebound.serving.stream_proxy import stream_response

                run = ResponsesStream(state, guard, passages, base, group, shown, show)
                return await stream_response(state, guard, group, run.events(got), got)
            original = json.loads(json.dumps(got["output"]))
            found, files = search_texts(got["output"])
            output, report = await guard_output(state, guard, got["output"], passages + found, files, base, group)
        except GuardFailure as e:
            return proxy_error(e.status, str(e), e.code, e.headers, **e.extra)
        if report.blocked:
            return proxy_error(403, f"citebound blocked the answer: {report.block_reason}", "blocked",
                               report=report_body(report, show))
        seen = [unchecked(i) for i in output]
        calls, fields = sum(c for c, _ in seen), sorted(set().union(*(f for _, f in seen)))
        return guarded_json(state, got, report, calls, fields, {"original_output": original} if show else None)

    return r


class ResponsesStream:
    """One streamed response: its typed events in, the same sequence out, each ``output_text`` part held and guarded
    (:class:`HeldAnswer`), its annotations checked and sent with their verdicts when the part ends, and every
    ``sequence_number`` counted anew."""

    def __init__(self, state: ServiceState, guard: Any, passages: list[str], base: int | None, group: str | None,
                 shown: str, show: bool):
        self.state, self.guard, self.passages, self.base, self.group = state, guard, list(passages), base, group
        self.shown, self.show = shown, show
        self.files: dict[str, str] = {}
        self.held: dict[tuple[int, int], HeldAnswer] = {}
        self.notes: dict[tuple[int, int], list[Any]] = {}
        self.texts: dict[tuple[int, int], tuple[str, list[Any]]] = {}  # each finished part: guarded text, annotations
        self.parts: list[tuple[int, Any]] = []
        self.offset, self.seq, self.calls, self.blocked = 0, 0, 0, None
        self.unchecked: set[str] = set()

    def _out(self, ev: dict[str, Any]) -> bytes:
        ev = ev | {"sequence_number": self.seq}
        self.seq += 1
        return f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n".encode()

    def report(self) -> Any:
        now = self.parts + [(self.offset, h.report()) for h in self.held.values()]
        return merge_reports(now, self.guard.on_error == "open")

    def _extra(self, report: Any) -> dict[str, Any]:
        return {"type": "citebound.report", "report": report_body(report, self.show or self.blocked is None),
                "verifier": self.state.scorer.name, "unchecked_tool_calls": self.calls,
                "unchecked_fields": sorted(self.unchecked)}

    async def _part_done(self, ev: dict[str, Any], key: tuple[int, int]) -> AsyncIterator[bytes]:
        held = self.held.pop(key)
        rest = await held.finish()
        if held.block_report is not None:  # withheld, but counted: the report is of the whole answer so far
            self.parts.append((self.offset, held.report()))
            self.offset += len(held.text())
            self.blocked = held.block_report
            return
        if rest:
            yield self._tail(held, ev, key, rest)
        rep, text, notes = held.report(), held.text(), self.notes.pop(key, [])
        cites = attached(notes, self.files, len(text))
        if cites:
            await add_structured(self.state, self.guard, rep, text, cites, self.passages, self.base, self.group)
        guarded = "".join(held.sent + held.deferred)
        notes = annotate(notes, rep.audit[len(rep.audit) - len(cites):] if cites else [], position_map(text, guarded))
        self.parts.append((self.offset, rep))
        self.offset += len(text)
        if self.guard.blocks(whole := self.report()):
            self.blocked = whole  # the report blocks() marked, with its reason
            return
        if late := held.release():  # sentences that waited for the part's citations
            yield self._tail(held, ev, key, late)
        for k, a in enumerate(notes):
            yield self._out({"type": "response.output_text.annotation.added", "item_id": ev.get("item_id"),
                             "output_index": key[0], "content_index": key[1], "annotation_index": k, "annotation": a})
        self.texts[key] = (guarded, notes)
        yield self._out(ev | {"text": guarded})

    def _tail(self, held: HeldAnswer, ev: dict[str, Any], key: tuple[int, int], text: str) -> bytes:
        """A delta of the part at ``key`` sent at its end (``ev``: its done event), recorded as sent."""
        held.sent.append(text)
        return self._out({"type": "response.output_text.delta", "item_id": ev.get("item_id"), "output_index": key[0],
                          "content_index": key[1], "delta": text, "logprobs": []})

    def _held(self, key: tuple[int, int]) -> HeldAnswer:
        """The held answer of one output_text part, made when its first event comes (not once per delta)."""
        if key not in self.held:
            self.held[key] = HeldAnswer(self.state, self.guard, self.passages, self.base, self.group, lambda: self.parts,
                                        uncited_later=True)
        return self.held[key]

    def _fill(self, item: dict[str, Any], index: int) -> dict[str, Any]:
        """A message item with its parts' guarded texts and annotations; an output_text part that was never streamed
        and guarded (its text only in this item) goes out blank: no text reaches the client unchecked."""
        if item.get("type") != "message" or not isinstance(item.get("content"), list):
            return item
        content = []
        for k, part in enumerate(item["content"]):
            done = self.texts.get((index, k))
            if isinstance(part, dict) and part.get("type") == "output_text":
                part = part | ({"text": done[0], "annotations": done[1]} if done else {"text": "", "annotations": []})
            content.append(part)
        return item | {"content": content}

    async def _event(self, ev: dict[str, Any]) -> AsyncIterator[bytes]:
        t = ev.get("type")
        key = (ev.get("output_index", 0), ev.get("content_index", 0))
        if t == "response.output_text.delta":
            if not isinstance(ev.get("delta"), str):
                raise StreamFailure("the upstream sent an output_text delta that is not a string")
            held = self._held(key)
            if out := await held.feed(ev["delta"]):
                held.sent.append(out)
                yield self._out(ev | {"delta": out, "logprobs": []})
            self.blocked = held.block_report
        elif t == "response.output_text.annotation.added":
            self.notes.setdefault(key, []).append(ev.get("annotation"))
        elif t == "response.output_text.done":
            self._held(key)
            async for out in self._part_done(ev, key):
                yield out
        elif t == "response.content_part.done" and key in self.texts:
            guarded, notes = self.texts[key]
            yield self._out(ev | {"part": (ev.get("part") or {}) | {"text": guarded, "annotations": notes}})
        elif t == "response.output_item.done":
            item = ev.get("item") if isinstance(ev.get("item"), dict) else {}
            if item.get("type") == "file_search_call":
                found, files = search_texts([item])
                self.passages += found
                self.files |= files
            calls, fields = unchecked(ev.get("item"))
            self.calls += calls
            self.unchecked |= fields
            yield self._out(ev | {"item": self._fill(item, key[0])})
        elif t == "response.completed":
            resp = ev.get("response") if isinstance(ev.get("response"), dict) else {}
            output = [self._fill(i, n) if isinstance(i, dict) else i for n, i in enumerate(resp.get("output") or [])]
            yield self._out(ev | {"response": resp | {"output": output}})
        elif t in ("error", "response.failed"):
            err = ev.get("error") or (ev.get("response") or {}).get("error") or ev
            raise StreamFailure(f"the upstream sent {t}: {str(err.get('message') if isinstance(err, dict) else err)[:500]}")
        else:
            if isinstance(ev.get("response"), dict):  # created, in_progress: any output in them is not yet guarded
                resp = ev["response"]
                ev = ev | {"response": resp | {"output": [self._fill(i, n) if isinstance(i, dict) else i
                                                          for n, i in enumerate(resp.get("output") or [])]}}
                self.response = ev["response"] if t == "response.created" else self.response
            if isinstance(ev.get("item"), dict):  # output_item.added
                ev = ev | {"item": self._fill(ev["item"], ev.get("output_index", 0))}
            if isinstance(ev.get("part"), dict) and ev["part"].get("type") == "output_text":  # content_part.added
                ev = ev | {"part": ev["part"] | {"text": "", "annotations": []}}
            yield self._out(ev)

    async def events(self, resp: Any) -> AsyncIterator[bytes]:
        lim = self.state.cfg.limits
        self.response: dict[str, Any] = {}
        completed = False
        try:
            async for ev in sse_events(resp, lim.max_upstream_bytes, lim.max_stream_s):
                if not isinstance(ev, dict):
                    raise StreamFailure("the upstream sent an event that is not a JSON object")
                async for out in self._event(ev):
                    yield out
                if self.blocked is not None:
                    report = self.report()
                    report.blocked, report.block_reason = True, self.blocked.block_reason
                    yield self._out({"type": "response.incomplete", "response": self.response | {
                        "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}})
                    yield self._out(self._extra(report))
                    return
                completed = completed or ev.get("type") == "response.completed"
            if not completed:
                raise StreamFailure("the upstream's stream ended without response.completed (cut short?)")
            yield self._out(self._extra(self.report()))
        except Exception as e:  # noqa: BLE001 - a limit, bad input, or a transport failure mid-stream: an error event
            f = failure(e)
            held = sum(h.held_chars for h in self.held.values())
            message = failure_message(f, self.shown, held, sum(h.waiting_chars for h in self.held.values()))
            yield self._out({"type": "error", "code": f.code, "message": message, "param": None,
                             "error": {"type": "citebound_stream_error", "code": f.code, "message": message},
                             "citebound": self._extra(self.report())})
