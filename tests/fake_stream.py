"""A scripted OpenAI-compatible upstream that streams (tests and benchmarks only).

``script(request_json) -> Script``: the answer's text pieces (one chunk event each), how the SSE bytes
are cut on the wire (``byte_cuts``: byte offsets, so a UTF-8 character can be split between writes), a
pause between writes, and how it ends: ``[DONE]`` (default), an error event after some pieces, or the
connection dropped (``cut``). A non-streamed request gets the pieces joined as one message. ``writes``
counts the writes that reached the socket, ``broken`` whether a write failed (the client went away).
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
class Script:
    pieces: list[str]
    byte_cuts: list[int] = field(default_factory=list)
    pause_s: float = 0.0
    ascii_json: bool = True  # \\uXXXX escapes (a surrogate pair can split across pieces); else raw UTF-8
    error_after: int | None = None  # an error event after this many pieces
    cut_after: int | None = None  # drop the connection after this many pieces (no [DONE])
    finish_reason: str = "stop"
    event_pause_s: float = 0.0  # pace the stream: write one event, then wait this long (a token rate)


def sse_bytes(s: Script, model: str) -> bytes:
    out = []
    for i, piece in enumerate(s.pieces):
        if s.error_after is not None and i == s.error_after:
            out.append({"error": {"message": "scripted mid-stream failure", "type": "server_error"}})
            break
        if s.cut_after is not None and i == s.cut_after:
            break
        out.append({"id": "cmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
    else:
        out.append({"id": "cmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model,
                    "choices": [{"index": 0, "delta": {}, "finish_reason": s.finish_reason}]})
        out.append("[DONE]")
    return b"".join(f"data: {o if isinstance(o, str) else json.dumps(o, ensure_ascii=s.ascii_json)}\n\n".encode(
        "utf-8", "surrogatepass") for o in out)


class FakeStreamingOpenAI(LoopbackServer):
    def __init__(self, script: Callable[[dict[str, Any]], Script]):
        self.script, self.requests, self.writes, self.broken = script, [], 0, False
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                s = outer.script(body)
                if not body.get("stream"):
                    data = json.dumps({"id": "cmpl-fake", "object": "chat.completion", "created": 1,
                                       "model": body.get("model", "fake"),
                                       "choices": [{"index": 0, "message": {"role": "assistant",
                                                                            "content": "".join(s.pieces)},
                                                    "finish_reason": s.finish_reason}]},
                                      ensure_ascii=True).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                raw = sse_bytes(s, body.get("model", "fake"))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if s.event_pause_s:  # one event per write, at the scripted rate
                    ends = [i + 2 for i in range(len(raw) - 1) if raw[i:i + 2] == b"\n\n"]
                    s = Script(**{**s.__dict__, "byte_cuts": ends, "pause_s": s.event_pause_s})
                cuts = [c for c in sorted(set(s.byte_cuts)) if 0 < c < len(raw)] + [len(raw)]
                prev = 0
                try:
                    for c in cuts:
                        self.wfile.write(raw[prev:c])
                        self.wfile.flush()
                        outer.writes += 1
                        prev = c
                        if s.pause_s:
                            time.sleep(s.pause_s)
                except OSError:
                    outer.broken = True

        self.serve(Handler)
