"""A scripted upstream that speaks OpenAI's Responses API and Anthropic's Messages API, streamed and not (tests and
benchmarks only).

``script(request_json) -> Turn``: the answer's text pieces (one delta event each), the citations the answer
carries as data (Anthropic ``citations`` on the one text block, Responses ``annotations`` on the one output_text
part), file-search results, how the SSE bytes are cut on the wire (``byte_cuts``) and how it ends (``error_after``:
an error event after that many pieces; ``cut_after``: the connection dropped). Requests are recorded with their
headers (``requests``: ``{"path", "headers", "body"}``).
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackServer


@dataclass
class Turn:
    pieces: list[str]
    citations: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)  # Responses file_search_call results
    byte_cuts: list[int] = field(default_factory=list)
    error_after: int | None = None
    cut_after: int | None = None
    event_pause_s: float = 0.0  # pace the stream: write one event, then wait this long (a token rate)
    raw: bytes | None = None  # streamed: these bytes instead of the events (a hostile upstream)
    whole: dict[str, Any] | None = None  # unstreamed: this JSON answer instead of one built from the pieces
    delay_s: float = 0.0  # wait this long before answering at all (a slow upstream)


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def anthropic_message(content: list[Any], model: str = "m", mid: str = "msg_1") -> dict[str, Any]:
    """A whole Messages API answer holding ``content`` (ended by end_turn)."""
    return {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def content_events(msg: dict, pieces: dict[int, list[str]] | None = None) -> list[dict]:
    """A message's stream: each text block's text in the given pieces (one delta by default), citations as
    citations_delta events after the text."""
    out = [{"type": "message_start", "message": msg | {"content": [], "stop_reason": None}}]
    for i, b in enumerate(msg["content"]):
        if not (isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)):  # as it is
            out += [{"type": "content_block_start", "index": i, "content_block": b},
                    {"type": "content_block_stop", "index": i}]
            continue
        out.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
        for piece in (pieces or {}).get(i, [b["text"]]):
            out.append({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}})
        for c in b.get("citations") or []:
            out.append({"type": "content_block_delta", "index": i, "delta": {"type": "citations_delta", "citation": c}})
        out.append({"type": "content_block_stop", "index": i})
    return out + [{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                   "usage": {"output_tokens": 1}}, {"type": "message_stop"}]


def message(t: Turn, model: str) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": "".join(t.pieces)}
    if t.citations:
        block["citations"] = t.citations
    return anthropic_message([block], model, "msg_fake")


def message_events(t: Turn, model: str) -> list[dict[str, Any]]:
    start = message(t, model) | {"content": [], "stop_reason": None}
    ev: list[dict[str, Any]] = [{"type": "message_start", "message": start},
                                {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""} | ({"citations": []} if t.citations else {})},
                                {"type": "ping"}]
    ev += [{"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": c}}
           for c in t.citations]
    for i, p in enumerate(t.pieces):
        if t.error_after == i:
            return ev + [{"type": "error", "error": {"type": "overloaded_error", "message": "scripted mid-stream failure"}}]
        if t.cut_after == i:
            return ev
        ev.append({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})
    return ev + [{"type": "content_block_stop", "index": 0},
                 {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                  "usage": {"output_tokens": 1}}, {"type": "message_stop"}]


def response(t: Turn, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if t.results:
        output.append({"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"],
                       "results": t.results})
    output.append({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": "".join(t.pieces), "annotations": t.citations}]})
    return {"id": "resp_fake", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None, "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}


def response_events(t: Turn, model: str) -> list[dict[str, Any]]:
    done = response(t, model)
    shell = done | {"status": "in_progress", "output": [], "usage": None}
    ev: list[dict[str, Any]] = [{"type": "response.created", "response": shell},
                                {"type": "response.in_progress", "response": shell}]
    n = 0
    if t.results:
        ev += [{"type": "response.output_item.added", "output_index": 0, "item": done["output"][0] | {"results": None}},
               {"type": "response.output_item.done", "output_index": 0, "item": done["output"][0]}]
        n = 1
    msg = done["output"][n]
    ref = {"item_id": "msg_1", "output_index": n, "content_index": 0}
    ev += [{"type": "response.output_item.added", "output_index": n, "item": msg | {"content": [], "status": "in_progress"}},
           {"type": "response.content_part.added", **ref, "part": {"type": "output_text", "text": "", "annotations": []}}]
    for i, p in enumerate(t.pieces):
        if t.error_after == i:
            return ev + [{"type": "error", "code": "server_error", "message": "scripted mid-stream failure", "param": None}]
        if t.cut_after == i:
            return ev
        ev.append({"type": "response.output_text.delta", **ref, "delta": p, "logprobs": []})
    ev += [{"type": "response.output_text.annotation.added", **ref, "annotation_index": k, "annotation": a}
           for k, a in enumerate(t.citations)]
    part = msg["content"][0]
    ev += [{"type": "response.output_text.done", **ref, "text": part["text"], "logprobs": []},
           {"type": "response.content_part.done", **ref, "part": part},
           {"type": "response.output_item.done", "output_index": n, "item": msg},
           {"type": "response.completed", "response": done}]
    return [e | {"sequence_number": k} for k, e in enumerate(ev)]


class FakeAPIs(LoopbackServer):
    def __init__(self, script: Callable[[dict[str, Any]], Turn], host: str = "127.0.0.1", port: int = 0):
        self.script, self.requests = script, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                t, model = outer.script(body), body.get("model", "fake")
                anthropic = self.path == "/v1/messages"
                time.sleep(t.delay_s)
                if not body.get("stream"):
                    data = json.dumps(t.whole if t.whole is not None else message(t, model) if anthropic
                                      else response(t, model)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                raw = t.raw if t.raw is not None else _sse(message_events(t, model) if anthropic else response_events(t, model))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                cuts = t.byte_cuts
                if t.event_pause_s:  # one event per write, at the scripted rate
                    cuts = [i + 2 for i in range(len(raw) - 1) if raw[i:i + 2] == b"\n\n"]
                prev = 0
                try:
                    for c in [c for c in sorted(set(cuts)) if 0 < c < len(raw)] + [len(raw)]:
                        self.wfile.write(raw[prev:c])
                        self.wfile.flush()
                        prev = c
                        time.sleep(t.event_pause_s)
                except OSError:
                    pass

        self.serve(Handler, host, port)
