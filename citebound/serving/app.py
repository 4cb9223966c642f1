"""``citebound serve``: the app, its lifespan, and the bookkeeping every request goes through.

FastAPI on uvicorn (the ``[serve]`` extra). The verifier loads once, in the app's lifespan, behind the
micro-batcher (:mod:`~citebound.serving.batcher`); the routes live beside this module:
:mod:`~citebound.serving.guard_routes` (``POST /v1/guard``), :mod:`~citebound.serving.score_routes`
(``POST /v1/score``) and, with ``--upstream``, :mod:`~citebound.serving.proxy`
(``POST /v1/chat/completions``). Here: ``GET /v1/calibrations`` (the
:mod:`~citebound.serving.registry`), ``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus).

Input is bounded by :class:`~citebound.text.limits.Limits`: a body past ``max_request_bytes`` is a 413,
counted as it is read (chunked bodies too), any other limit a 422 naming it. On SIGTERM the service
turns /readyz 503, serves what it dispatches within ``drain_grace_s`` (2 s), then refuses (503), lets in-flight
ones finish, then exits. Each request has a timeout (504).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import threading
import time
from dataclasses import asdict
from typing import Any, Literal

from fastapi import Request

from citebound.serving.batcher import BatchedScorer, UnitBatcher, release_memory
from citebound.serving.state import ServeConfig, ServiceState
from citebound.text.limits import Limits

log = logging.getLogger("citebound.serving")
ENDPOINTS = ("/v1/guard", "/v1/score", "/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/calibrations")


_BAD = object()
MAX_JSON_DEPTH = 64  # nesting a request body may have (a guard request needs 4)


def json_problem(body: bytes) -> str | None:
    """Why a JSON body is refused before any route sees it, or None: a non-finite number (``NaN``,
    ``Infinity``, ``1e400``) names its field, and so does nesting past :data:`MAX_JSON_DEPTH`; a body that is
    not JSON is left to the route (which names it).

    >>> json_problem(b'{"answers": [{"answer": "a", "x": NaN}]}')
    'answers[0].x: a non-finite number (NaN, Infinity or out of range) is not valid JSON here'
    >>> json_problem(b'{"a": 1e400}')
    'a: a non-finite number (NaN, Infinity or out of range) is not valid JSON here'
    """
    import math

    def number(text: str) -> Any:
        v = float(text)
        return v if math.isfinite(v) else _BAD

    depth = json_depth(body)
    if depth > MAX_JSON_DEPTH:
        return f"the JSON nests {depth} levels deep; the limit is {MAX_JSON_DEPTH}"
    try:
        data = json.loads(body, parse_constant=lambda _: _BAD, parse_float=number)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, v = stack.pop()
        if v is _BAD:
            return f"{path or 'body'}: a non-finite number (NaN, Infinity or out of range) is not valid JSON here"
        if isinstance(v, dict):
            stack += [(f"{path}.{k}" if path else str(k), x) for k, x in reversed(list(v.items()))]
        elif isinstance(v, list):
            stack += [(f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v)))]
    return None


_STRUCTURE = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[{]|[\]}]', re.S)  # an open string runs to the end


def json_depth(body: bytes) -> int:
    """How deep a JSON text nests, strings skipped (a linear scan: json.loads recurses, so a deep body
    would exhaust its stack before it could be refused).

    >>> json_depth(b'{"a": [[1], "[[[["]}')
    3
    """
    depth = cur = 0
    for m in _STRUCTURE.finditer(body):
        ch = m.group()
        if ch in (b"[", b"{"):
            cur += 1
            depth = max(depth, cur)
        elif ch in (b"]", b"}"):
            cur -= 1
    return depth


def error_body(path: str, status: int, message: str, code: str, **extra: Any) -> dict[str, Any]:
    """An error body in the shape the route's clients expect: OpenAI's ``{"error": {...}}`` on the
    proxy (the openai SDK raises on it), ``{"detail": ...}`` elsewhere."""
    if path == "/v1/messages":  # Anthropic's shape
        return {"type": "error", "error": {"type": "invalid_request_error" if status < 500 else "api_error",
                                           "message": message, "code": code}}
    if path in ("/v1/chat/completions", "/v1/responses"):
        return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "citebound_error",
                          "code": code, "param": extra.get("param")}} | ({"citebound": extra["citebound"]}
                                                                         if "citebound" in extra else {})
    return {"detail": message} | {k: v for k, v in extra.items() if k != "param"}


class BodyLimit:
    """ASGI middleware: read a request's body up to ``limit`` bytes as it arrives (whatever its
    Content-Length says, chunked or not) and answer 413 past it; the app gets the body replayed. A JSON
    body with a non-finite number or nesting past :data:`MAX_JSON_DEPTH` is a 422 that names the field."""

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
        whole = b"".join(body)
        problem = None
        if whole.lstrip()[:1] in (b"{", b"["):  # a large body is checked off the event loop: others keep going
            if len(whole) > 65_536:
                from starlette.concurrency import run_in_threadpool

                problem = await run_in_threadpool(json_problem, whole)
            else:
                problem = json_problem(whole)
        if problem is not None:
            await self._send(scope, send, 422, problem, "invalid_json")
            return
        replay = [{"type": "http.request", "body": whole, "more_body": False}]
        disconnected = []

        async def replayed() -> dict:
            return replay.pop() if replay else await receive()

        async def client_gone() -> bool:
            """Whether the client disconnected: a look at the channel that does not wait (as Starlette's
            Request.is_disconnected); the body must have been read first."""
            if not disconnected and not replay:
                import anyio

                with anyio.CancelScope() as scope_:
                    scope_.cancel()
                    if (await receive()).get("type") == "http.disconnect":
                        disconnected.append(True)
            return bool(disconnected)

        from citebound.serving.state import CLIENT_GONE

        token = CLIENT_GONE.set(client_gone)
        try:
            await self.app(scope, replayed, send)
        finally:
            CLIENT_GONE.reset(token)

    async def _refuse(self, scope: dict, send: Any, what: str) -> None:
        await self._send(scope, send, 413, f"{what}; the limit is {self.limit} (max_request_bytes)", "max_request_bytes",
                         limit="max_request_bytes")

    async def _send(self, scope: dict, send: Any, status: int, message: str, code: str, **extra: Any) -> None:
        path = scope.get("path", "")
        if self.on_refuse:
            self.on_refuse(path, status)
        payload = json.dumps(error_body(path, status, message, code, **extra)).encode()
        await send({"type": "http.response.start", "status": status,
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

        from citebound.scoring.llm_backends import install_log_redaction, split_userinfo

        install_log_redaction()
        # the URL's credentials travel as basic auth, never in a URL that a log line or an error could show
        state.http = httpx.AsyncClient(timeout=cfg.request_timeout_s, auth=split_userinfo(cfg.upstream)[1])


def install_error_handlers(app: Any) -> None:
    """A request that fails validation is a 422 that names the field; in OpenAI's error shape on the proxy."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errs = exc.errors()
        first = errs[0] if errs else {}
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body") or "body"
        message = f"{where}: {first.get('msg', 'invalid')}"
        if request.url.path not in ("/v1/chat/completions", "/v1/responses", "/v1/messages"):
            # written as ASCII JSON: an echoed input with a lone surrogate stays an escape, never a 500 on encoding
            return Response(json.dumps({"detail": errs}, default=str), status_code=422, media_type="application/json")
        return JSONResponse(error_body(request.url.path, 422, message, "invalid_request", param=where),
                            status_code=422)


def create_app(cfg: ServeConfig, scorer: Any = None):
    """The FastAPI app. ``scorer`` (tests, benchmarks): an already loaded scorer instead of ``cfg.verifier``."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    from citebound.serving import api_messages, api_responses, guard_routes, monitor_routes, proxy, score_routes
    from citebound.serving.observability import setup_tracing

    setup_tracing()  # OTLP export of the spans, when the OpenTelemetry variables ask for it (each worker its own)
    state = ServiceState(cfg)

    async def drain() -> None:
        """SIGTERM: /readyz turns 503 at once (a load balancer stops sending); requests the loop dispatches within
        ``drain_grace_s`` are still served (they were sent, and often accepted, before the signal: under load they
        wait for the loop), later ones are refused (503); in-flight ones finish; then exit as on SIGINT."""
        state.draining = True
        state.draining_since = time.monotonic()
        t0 = time.monotonic()
        while (state.in_flight or time.monotonic() - t0 < cfg.drain_grace_s) and time.monotonic() - t0 < cfg.drain_timeout_s:
            await asyncio.sleep(0.02)
        state.cancel_all()  # what is still running past the drain timeout stops now, not after the exit
        log.info("drained (%d still in flight); exiting", state.in_flight)
        os.kill(os.getpid(), signal.SIGINT)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await _start(state, scorer, drain)
        yield
        if state.http is not None:
            await state.http.aclose()
        state.batcher.close()

    app = FastAPI(title="citebound", version=__import__("citebound").__version__, lifespan=lifespan,
                  description="Verify -> re-attribute -> flag the citations of cited answers.")
    app.state.citebound = state

    @app.middleware("http")
    async def bookkeeping(request: Request, call_next):
        endpoint = _endpoint(request.url.path)
        if state.draining and endpoint != "other" and time.monotonic() - state.draining_since > cfg.drain_grace_s:
            state.metrics.requests.labels(endpoint, "503").inc()
            return JSONResponse({"detail": "the service is shutting down"}, status_code=503)
        state.in_flight += 1
        state.metrics.in_flight.set(state.in_flight)
        t0 = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception:  # a bug: counted as the 500 it becomes, then raised for the server to log
            state.metrics.requests.labels(endpoint, "500").inc()
            raise
        finally:
            state.in_flight -= 1
            state.metrics.in_flight.set(state.in_flight)
        if endpoint != "other":
            state.metrics.latency.labels(endpoint).observe(time.perf_counter() - t0)
            state.metrics.requests.labels(endpoint, str(response.status_code)).inc()
        return response

    app.add_middleware(BodyLimit, limit=cfg.limits.max_request_bytes,
                       on_refuse=lambda path, status: state.metrics.requests.labels(_endpoint(path), str(status)).inc())

    install_error_handlers(app)
    for routes in (guard_routes, score_routes, monitor_routes):
        app.include_router(routes.router(state))
    if cfg.upstream:  # one adapter per API over one hold-verify-release core (serving/held.py)
        for api in (proxy, api_responses, api_messages):
            app.include_router(api.router(state))

    _probe_routes(app, state)
    if cfg.upstream:  # last: only what no route above serves
        app.include_router(proxy.not_served_router())
    return app


def _probe_routes(app: Any, state: ServiceState) -> None:
    """/v1/calibrations and the probes: /livez and /healthz (alive), /readyz (a request sent now would succeed)."""
    from fastapi.responses import JSONResponse

    @app.get("/v1/calibrations")
    async def calibrations():
        return state.registry.describe()

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/livez")
    async def livez():
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz(scope: Literal["all", "verdicts"] = "all"):
        """Whether a request sent now would succeed: not draining, and the monitors' store answering its background
        probe (read here, never called: /readyz never waits on it). The verifier and calibrations are loaded: the
        server answers no request before the app's lifespan has started (ASGI's lifespan protocol).
        ``?scope=verdicts``: ready for the routes whose answers never need the store (guard, score, the proxy),
        for a load balancer that keeps sending verdicts while the store is down (deploy/compose/haproxy.cfg)."""
        store_down = getattr(state.store, "available", True) is False
        if state.draining or (store_down and scope == "all"):
            return JSONResponse({"ready": False, "draining": state.draining,
                                 "store": getattr(state.store, "reason", "") if store_down else "ok"}, status_code=503)
        return {"ready": True, "verifier": state.scorer.name, "store": "down" if store_down else "ok", "scope": scope}


def serve(cfg: ServeConfig, host: str = "127.0.0.1", port: int = 8000, workers: int = 1, log_format: str = "text") -> None:
    """Run the service with uvicorn (``workers`` processes on one node, each loading the verifier once); logs as
    uvicorn writes them, or as JSON lines (``log_format="json"``: citebound.serving.observability)."""
    import uvicorn

    from citebound.serving.observability import json_log_config

    logs = {"log_config": json_log_config()} if log_format == "json" else {}

    if workers == 1:
        uvicorn.run(create_app(cfg), host=host, port=port, log_level="info", timeout_graceful_shutdown=30, **logs)
        return
    # the config holds secrets (the admin token, upstream credentials): the workers read it from a file only
    # this user can read, never from the environment (readable in /proc/PID/environ); removed when serve ends
    import tempfile

    folder = tempfile.mkdtemp(prefix="citebound-serve-")  # mode 0700
    path = os.path.join(folder, "config.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(cfg), f)
    os.environ["CITEBOUND_SERVE_CONFIG_FILE"] = path
    try:
        uvicorn.run("citebound.serving.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level="info", timeout_graceful_shutdown=30, **logs)
    finally:
        os.environ.pop("CITEBOUND_SERVE_CONFIG_FILE", None)
        os.remove(path)
        os.rmdir(folder)


def app_from_env():
    """The app of one uvicorn worker process (``--workers`` > 1), from the file ``CITEBOUND_SERVE_CONFIG_FILE``
    names (it holds secrets, so it is never the environment itself)."""
    with open(os.environ["CITEBOUND_SERVE_CONFIG_FILE"], encoding="utf-8") as f:
        d = json.load(f)
    d["limits"] = Limits(**d["limits"])
    return create_app(ServeConfig(**d))
