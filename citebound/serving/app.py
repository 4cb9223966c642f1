"""``citebound serve``: the app, its lifespan, and the bookkeeping every request goes through.

FastAPI on uvicorn (the ``[serve]`` extra). The verifier loads once, in the app's lifespan, behind the
micro-batcher (:mod:`~citebound.serving.batcher`); the routes live beside this module:
:mod:`~citebound.serving.guard_routes` (``POST /v1/guard``), :mod:`~citebound.serving.score_routes`
(``POST /v1/score``) and, with ``--upstream``, :mod:`~citebound.serving.proxy`
(``POST /v1/chat/completions``). Here: ``GET /v1/calibrations`` (the
:mod:`~citebound.serving.registry`), ``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus).

Input is bounded by :class:`~citebound.text.limits.Limits`: a body past ``max_request_bytes`` is a 413,
counted as it is read (chunked bodies too), any other limit a 422 naming it. On SIGTERM the service
stops taking requests (503), lets in-flight ones finish, then exits. Each request has a timeout (504).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
import time
from dataclasses import asdict
from typing import Any

from fastapi import Request

from citebound.serving.batcher import BatchedScorer, UnitBatcher, release_memory
from citebound.serving.state import ServeConfig, ServiceState
from citebound.text.limits import Limits

log = logging.getLogger("citebound.serving")
ENDPOINTS = ("/v1/guard", "/v1/score", "/v1/chat/completions", "/v1/calibrations")


class BodyLimit:
    """ASGI middleware: read a request's body up to ``limit`` bytes as it arrives (whatever its
    Content-Length says, chunked or not) and answer 413 past it; the app gets the body replayed."""

    def __init__(self, app: Any, limit: int, on_refuse: Any = None):
        self.app, self.limit, self.on_refuse = app, limit, on_refuse

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, send, f"the request has {int(declared)} bytes")
            return
        body, n = [], 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            n += len(msg.get("body", b""))
            if n > self.limit:
                await self._refuse(scope, send, f"the request has more than {self.limit} bytes")
                return
            body.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        replay = [{"type": "http.request", "body": b"".join(body), "more_body": False}]

        async def replayed() -> dict:
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)

    async def _refuse(self, scope: dict, send: Any, what: str) -> None:
        if self.on_refuse:
            self.on_refuse(scope.get("path", ""))
        payload = json.dumps({"detail": f"{what}; the limit is {self.limit} (max_request_bytes)",
                              "limit": "max_request_bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})


def _endpoint(path: str) -> str:
    return path if path in ENDPOINTS else "other"


async def _start(state: ServiceState, scorer: Any, drain: Any) -> None:
    """The lifespan's start: the verifier (once), the batcher, the registry, the signals, the upstream client."""
    from starlette.concurrency import run_in_threadpool

    from citebound.guarding.reattributors import load_reattributor
    from citebound.scoring.loader import load_scorer

    cfg, m = state.cfg, state.metrics
    inner = scorer if scorer is not None else await run_in_threadpool(
        load_scorer, cfg.verifier, cfg.overrides, model_path=cfg.model_path, runtime=cfg.runtime)
    state.batcher = UnitBatcher(inner, cfg.max_batch_units, cfg.max_wait_ms,
                                on_batch=lambda n, k: (m.batch_units.observe(n), m.batch_requests.observe(k)),
                                on_queue=m.queue_depth.set, in_flight=lambda: state.in_flight, after_batch=release_memory)
    state.scorer = BatchedScorer(inner, state.batcher)
    state.registry.load(state.scorer, load_reattributor(cfg.reattributor) if cfg.reattributor else None)
    loop = asyncio.get_running_loop()
    if threading.current_thread() is threading.main_thread():
        loop.add_signal_handler(signal.SIGHUP, state.registry.load)
        loop.add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(drain()))
    if cfg.upstream:
        import httpx
        state.http = httpx.AsyncClient(timeout=cfg.request_timeout_s)
    state.ready = True


def create_app(cfg: ServeConfig, scorer: Any = None):
    """The FastAPI app. ``scorer`` (tests, benchmarks): an already loaded scorer instead of ``cfg.verifier``."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    from citebound.serving import guard_routes, monitor_routes, proxy, score_routes

    state = ServiceState(cfg)

    async def drain() -> None:
        """SIGTERM: refuse new requests (503), let in-flight ones finish, then exit as on SIGINT."""
        state.draining = True
        t0 = time.monotonic()
        while state.in_flight and time.monotonic() - t0 < cfg.drain_timeout_s:
            await asyncio.sleep(0.02)
        state.cancel_all()  # what is still running past the drain timeout stops now, not after the exit
        log.info("drained (%d still in flight); exiting", state.in_flight)
        os.kill(os.getpid(), signal.SIGINT)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await _start(state, scorer, drain)
        yield
        state.ready = False
        if state.http is not None:
            await state.http.aclose()
        state.batcher.close()

    app = FastAPI(title="citebound", version=__import__("citebound").__version__, lifespan=lifespan,
                  description="Verify -> re-attribute -> flag the citations of cited answers.")
    app.state.citebound = state

    @app.middleware("http")
    async def bookkeeping(request: Request, call_next):
        endpoint = _endpoint(request.url.path)
        if state.draining and endpoint != "other":
            state.metrics.requests.labels(endpoint, "503").inc()
            return JSONResponse({"detail": "the service is shutting down"}, status_code=503)
        state.in_flight += 1
        state.metrics.in_flight.set(state.in_flight)
        t0 = time.perf_counter()
        try:
            response = await call_next(request)
        finally:
            state.in_flight -= 1
            state.metrics.in_flight.set(state.in_flight)
        if endpoint != "other":
            state.metrics.latency.labels(endpoint).observe(time.perf_counter() - t0)
            state.metrics.requests.labels(endpoint, str(response.status_code)).inc()
        return response

    app.add_middleware(BodyLimit, limit=cfg.limits.max_request_bytes,
                       on_refuse=lambda path: state.metrics.requests.labels(_endpoint(path), "413").inc())
    for routes in (guard_routes, score_routes, monitor_routes):
        app.include_router(routes.router(state))
    if cfg.upstream:
        app.include_router(proxy.router(state))

    @app.get("/v1/calibrations")
    async def calibrations():
        return state.registry.describe()

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz():
        if not state.ready or state.draining:
            return JSONResponse({"ready": False, "draining": state.draining}, status_code=503)
        return {"ready": True, "verifier": state.scorer.name}

    return app


def serve(cfg: ServeConfig, host: str = "127.0.0.1", port: int = 8000, workers: int = 1) -> None:
    """Run the service with uvicorn (``workers`` processes on one node, each loading the verifier once)."""
    import uvicorn

    if workers == 1:
        uvicorn.run(create_app(cfg), host=host, port=port, log_level="info", timeout_graceful_shutdown=30)
        return
    os.environ["CITEBOUND_SERVE_CONFIG"] = json.dumps(asdict(cfg))
    uvicorn.run("citebound.serving.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="info", timeout_graceful_shutdown=30)


def app_from_env():
    """The app of one uvicorn worker process (``--workers`` > 1), from ``CITEBOUND_SERVE_CONFIG``."""
    d = json.loads(os.environ["CITEBOUND_SERVE_CONFIG"])
    d["limits"] = Limits(**d["limits"])
    return create_app(ServeConfig(**d))
