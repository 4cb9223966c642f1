"""A local OpenAI-compatible chat-completions server with scripted answers (tests only).

Runs on 127.0.0.1 in a thread. ``answer(request_json) -> str | dict`` decides
the reply; ``fail_first`` makes the first N requests return HTTP 500; ``usage`` is the (prompt, completion)
token count each reply reports.
Requests that ask for a tool call (instructor's structured output) are
answered with a tool call whose arguments ``answer`` returns as a dict.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackServer

from citebound.scoring.chat_endpoint import send_json


class FakeOpenAI(LoopbackServer):
    def __init__(self, answer: Callable[[dict[str, Any]], Any], fail_first: int = 0, usage: tuple[int, int] = (1, 1)):
        self.answer = answer
        self.fail_first = fail_first
        self.usage = usage
        self.requests: list[dict[str, Any]] = []
        self.gets: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output clean
                pass

            def do_GET(self):  # the model list (GET /v1/models), recorded like a POST
                with outer.lock:
                    outer.gets.append({"path": self.path, "headers": dict(self.headers)})
                if self.path != "/v1/models":
                    self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0,
                                                             "owned_by": "tests"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append(body)
                    n = len(outer.requests)
                if n <= outer.fail_first:
                    self._send(500, {"error": {"message": "scripted failure", "type": "server_error"}})
                    return
                reply = outer.answer(body)
                msg: dict[str, Any] = {"role": "assistant", "content": None}
                if isinstance(reply, dict):
                    tool = (body.get("tools") or [{}])[0].get("function", {}).get("name", "tool")
                    if body.get("tools"):
                        msg["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                              "function": {"name": tool, "arguments": json.dumps(reply)}}]
                    else:
                        msg["content"] = json.dumps(reply)
                elif reply is not None:  # None: a message with no content (null), as some servers send
                    msg["content"] = str(reply)
                self._send(200, {"id": f"cmpl-{n}", "object": "chat.completion", "created": 0,
                                 "model": body.get("model", "fake"),
                                 "choices": [{"index": 0, "message": msg,
                                              "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                                 "usage": {"prompt_tokens": outer.usage[0], "completion_tokens": outer.usage[1],
                                           "total_tokens": sum(outer.usage)}})

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                send_json(self, code, payload)

        self.serve(Handler)
