"""An OpenAI-compatible chat endpoint on 127.0.0.1 for an in-process generation backend.

Tools that only talk HTTP (the ``paper-qa`` package, through litellm) can then
use a ``transformers`` or offline-vLLM model loaded in this process. Requests
that arrive together are answered with one batched ``backend.chat`` call, so
vLLM still batches paper-qa's concurrent evidence summaries.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Endpoint:
    """Where an OpenAI-compatible chat model answers."""

    base_url: str
    model: str
    api_key: str
    extra_body: Mapping[str, Any] = field(default_factory=dict)


def message_text(content: Any) -> str:
    """Text of an OpenAI message ``content`` (a string or a list of parts).

    >>> message_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    'a\\nb'
    """
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


@dataclass
class ServerStats:
    requests: int = 0
    batches: int = 0
    max_batch: int = 0


class LocalChatServer:
    """``/v1/chat/completions`` and ``/v1/models`` served from ``backend.chat``.

    Parameters
    ----------
    backend : object with ``chat(list of message lists) -> list of Completion``
    model : name reported by ``/v1/models`` and in responses
    max_batch : most requests answered by one ``backend.chat`` call
    max_wait_s : how long the first request of a batch waits for company
    """

    def __init__(self, backend, model: str = "local", max_batch: int = 64, max_wait_s: float = 0.05):
        self.backend, self.model = backend, model
        self.max_batch, self.max_wait_s = max(1, int(max_batch)), float(max_wait_s)
        self.stats = ServerStats()
        self._queue: queue.Queue[tuple[Messages, Future] | None] = queue.Queue()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._threads = [threading.Thread(target=self._server.serve_forever, daemon=True),
                         threading.Thread(target=self._batch_loop, daemon=True)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> LocalChatServer:
        for t in self._threads:
            t.start()
        return self

    def close(self) -> None:
        self._queue.put(None)
        self._server.shutdown()
        self._server.server_close()

    __enter__ = start

    def __exit__(self, *exc) -> None:
        self.close()

    def complete(self, messages: Messages) -> Future:
        """Queue one chat request; the future resolves to a ``Completion``."""
        fut: Future = Future()
        self._queue.put((messages, fut))
        return fut

    def _take_batch(self) -> list[tuple[Messages, Future]] | None:
        first = self._queue.get()
        if first is None:
            return None
        batch, deadline = [first], time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch:
            try:
                nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if nxt is None:
                self._queue.put(None)
                break
            batch.append(nxt)
        return batch

    def _batch_loop(self) -> None:
        while (batch := self._take_batch()) is not None:
            self.stats.batches += 1
            self.stats.requests += len(batch)
            self.stats.max_batch = max(self.stats.max_batch, len(batch))
            try:
                outs = self.backend.chat([m for m, _ in batch])
            except Exception as e:  # noqa: BLE001 - retry one by one so only the bad request fails
                if len(batch) == 1:
                    batch[0][1].set_exception(e)
                else:
                    self._answer_one_by_one(batch)
                continue
            for (_, fut), out in zip(batch, outs):
                fut.set_result(out)

    def _answer_one_by_one(self, batch: list[tuple[Messages, Future]]) -> None:
        for m, fut in batch:
            try:
                fut.set_result(self.backend.chat([m])[0])
            except Exception as e:  # noqa: BLE001 - the caller gets an HTTP 500 with the message
                fut.set_exception(e)

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep rule logs readable
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": outer.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    msgs = [{"role": m["role"], "content": message_text(m.get("content"))} for m in body["messages"]]
                except (ValueError, KeyError, TypeError) as e:
                    self._send(400, {"error": {"message": f"bad request: {e}", "type": "invalid_request_error"}})
                    return
                try:
                    out = outer.complete(msgs).result()
                except Exception as e:  # noqa: BLE001
                    self._send(500, {"error": {"message": f"{type(e).__name__}: {e}", "type": "server_error"}})
                    return
                if body.get("stream"):
                    self._stream(out, body.get("model") or outer.model)
                else:
                    self._send(200, chat_completion(out, body.get("model") or outer.model))

            def _stream(self, out, model: str) -> None:
                """``stream: true``: the completion (generated whole) as chat.completion.chunk events, one per
                word with its whitespace, then ``[DONE]``."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                try:
                    for event in stream_chunks(out, model):
                        self.wfile.write(event)
                        self.wfile.flush()
                except OSError:  # the client went away
                    pass

            def _send(self, code: int, payload: dict[str, Any]) -> None:
                send_json(self, code, payload)

        return Handler


def send_json(handler: BaseHTTPRequestHandler, code: int, payload: dict[str, Any]) -> None:
    """Write one JSON HTTP response."""
    data = json.dumps(payload).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def stream_chunks(out, model: str):
    """The SSE events of one ``Completion`` streamed: a role chunk, one chunk per word (with the whitespace
    after it), a finish chunk, ``[DONE]``."""
    import re

    base = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = base | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n".encode()

    yield event({"role": "assistant", "content": ""})
    for piece in re.findall(r"\S+\s*|\s+", out.text):
        yield event({"content": piece})
    yield event({}, "stop")
    yield b"data: [DONE]\n\n"


def chat_completion(out, model: str) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` response body for one ``Completion``."""
    return {"id": "chatcmpl-local", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
                      "total_tokens": out.prompt_tokens + out.completion_tokens}}
