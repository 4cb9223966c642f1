"""``citeguard serve``: the guard as an HTTP service, and an OpenAI-compatible guarding proxy.

FastAPI on uvicorn (the ``[serve]`` extra). The verifier loads once, in the app's lifespan, behind one
:class:`~citeguard.guarding.Guard`; concurrent requests' (claim, passage) units share forward passes
through a :class:`UnitBatcher` (a maximum batch and a maximum wait, as inference servers batch).

Endpoints: ``POST /v1/guard`` (one answer or a batch; ``?format=html`` returns the audit page),
``POST /v1/score`` (claim-passage pairs), ``GET /v1/calibrations`` (named calibration profiles from a
folder, each checked against the served verifier; reloaded on SIGHUP), ``GET /healthz``, ``GET /readyz``,
``GET /metrics`` (Prometheus), and with ``--upstream URL`` ``POST /v1/chat/completions``: the request
goes to the upstream OpenAI-compatible server, and its answer comes back guarded, with the passages
taken from the request's ``citeguard.passages`` field (``extra_body={"citeguard": {"passages": [...]}}``
in the ``openai`` SDK). A request without passages is a 400, never a silent pass; ``stream: true`` is
refused with a 400 (the guard needs the whole answer).

Input is bounded by :class:`~citeguard.limits.Limits`: a body past ``max_request_bytes`` is a 413, any
other limit a 422 naming it. On SIGTERM the service stops taking requests (503), lets in-flight ones
finish, then exits. Each request has a timeout (504).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .guarding import Guard, GuardInputError, GuardReport, normalise_passages
from .limits import LimitExceeded, Limits
from .verifiers.base import PairScores

log = logging.getLogger("citeguard.service")


# ---------------------------------------------------------------- micro-batching

@dataclass
class _Job:
    claims: list[str]
    passages: list[str]
    future: Future = field(default_factory=Future)


class UnitBatcher:
    """One worker thread that scores the units of concurrent requests together.

    A call waits for the worker; the worker takes the first job, then keeps collecting jobs for up to
    ``max_wait_ms`` or until ``max_units`` units, scores them in one ``scorer.score`` call, and hands
    each job its slice. With ``in_flight`` (the number of requests being handled) it stops waiting as
    soon as every request in flight has a job in the batch, so a lone request never waits. Scores are
    per pair, so a request's scores do not depend on its batch-mates.
    """

    def __init__(self, scorer: Any, max_units: int = 512, max_wait_ms: float = 5.0,
                 on_batch: Any = None, on_queue: Any = None, in_flight: Any = None, after_batch: Any = None):
        if max_units < 1 or max_wait_ms < 0:
            raise ValueError(f"max_units must be >= 1 and max_wait_ms >= 0, got {max_units}, {max_wait_ms}")
        self.scorer, self.max_units, self.max_wait = scorer, int(max_units), float(max_wait_ms) / 1000
        self.on_batch, self.on_queue, self.after_batch = on_batch, on_queue, after_batch
        # how many requests could still join a batch: waiting for more than are in flight only adds latency
        self.in_flight = in_flight
        self.queue: queue.Queue[_Job | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="citeguard-batcher", daemon=True)
        self.thread.start()

    def score(self, claims: Sequence[str], passages: Sequence[str]) -> PairScores:
        job = _Job(list(claims), list(passages))
        self.queue.put(job)
        if self.on_queue:
            self.on_queue(self.queue.qsize())
        return job.future.result()

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            jobs, n = [first], len(first.claims)
            deadline = time.monotonic() + self.max_wait
            while n < self.max_units:
                if self.in_flight is not None and len(jobs) >= self.in_flight():
                    break  # every request in flight has its call in this batch: no one else can come
                try:
                    job = self.queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if job is None:
                    self.queue.put(None)
                    break
                jobs.append(job)
                n += len(job.claims)
            if self.on_queue:
                self.on_queue(self.queue.qsize())
            if self.on_batch:
                self.on_batch(n, len(jobs))
            try:
                ps = self.scorer.score([c for j in jobs for c in j.claims], [p for j in jobs for p in j.passages])
            except BaseException as e:  # noqa: BLE001 - every waiting request gets the error
                for j in jobs:
                    j.future.set_exception(e)
                continue
            at = 0
            for j in jobs:
                k = len(j.claims)
                j.future.set_result(PairScores(ps.score[at:at + k], ps.verdict[at:at + k], ps.best_window[at:at + k],
                                               ps.n_windows[at:at + k], list(ps.reason[at:at + k])))
                at += k
            del ps
            if self.after_batch:
                self.after_batch()


class BatchedScorer:
    """A scorer the guard can use (``score``, ``windowing``, ``name``, ``hash``) whose calls go through
    a :class:`UnitBatcher`."""

    def __init__(self, scorer: Any, batcher: UnitBatcher):
        self.inner, self.batcher = scorer, batcher
        self.name, self.hash, self.windowing = scorer.name, scorer.hash, scorer.windowing
        self.cfg = getattr(scorer, "cfg", {})

    def score(self, claims: Sequence[str], passages: Sequence[str]) -> PairScores:
        return self.batcher.score(claims, passages)

    def __call__(self, claims: Sequence[str], passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        ps = self.score(claims, passages)
        return ps.score, ps.verdict


# ---------------------------------------------------------------- request and response models

class Passage(BaseModel):
    text: str
    title: str | None = None


class AnswerIn(BaseModel):
    id: str | int | None = None
    answer: str
    passages: list[str | Passage] = Field(description="the passages the answer's [N] markers point at")
    citation_base: Literal[0, 1] | None = Field(None, description="1: [1] is the first passage (default)")


class GuardRequest(BaseModel):
    """One answer (``answer`` + ``passages``) or a batch (``answers``)."""

    model_config = ConfigDict(extra="forbid")
    id: str | int | None = None
    answer: str | None = None
    passages: list[str | Passage] | None = None
    citation_base: Literal[0, 1] | None = None
    answers: list[AnswerIn] | None = None
    calibration: str | None = Field(None, description="a calibration profile's name (GET /v1/calibrations)")

    @model_validator(mode="after")
    def one_or_batch(self) -> GuardRequest:
        if (self.answers is None) == (self.answer is None):
            raise ValueError("give either 'answer' with 'passages', or 'answers' (a batch), not both or neither")
        if self.answer is not None and self.passages is None:
            raise ValueError("'passages' is required with 'answer': missing context is never a pass")
        return self


class GuardResult(BaseModel):
    id: str | int | None = None
    guarded_answer: str
    report: GuardReport


class GuardBatchResult(BaseModel):
    results: list[GuardResult]
    counts: dict[str, float]


class Pair(BaseModel):
    claim: str
    passage: str


class ScoreRequest(BaseModel):
    pairs: list[Pair]


class PairScore(BaseModel):
    score: float | None
    verdict: bool
    best_window: int


class ScoreResponse(BaseModel):
    verifier: str
    scores: list[PairScore]


class CiteguardExtra(BaseModel):
    passages: list[str | Passage] | None = None
    citation_base: Literal[0, 1] | None = None
    calibration: str | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat-completions request plus citeguard's ``citeguard`` field."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[dict[str, Any]]
    stream: bool | None = None
    citeguard: CiteguardExtra | None = None


# ---------------------------------------------------------------- the app

@dataclass
class ServeConfig:
    verifier: str = "embedding"
    runtime: Mapping[str, Any] | None = None
    reattributor: str | None = "bm25"
    calibrations: str | None = None  # a folder of calibration JSON files; the file name is the profile
    upstream: str | None = None
    max_batch_units: int = 512
    max_wait_ms: float = 5.0
    request_timeout_s: float = 60.0
    drain_timeout_s: float = 30.0
    limits: Limits = field(default_factory=Limits)
    overrides: Mapping[str, Any] | None = None
    model_path: str | None = None


class Metrics:
    """Prometheus metrics on a registry of the app's own."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        self.requests = Counter("citeguard_requests", "HTTP requests by endpoint and status", ["endpoint", "status"],
                                registry=self.registry)
        self.latency = Histogram("citeguard_request_seconds", "request latency", ["endpoint"], registry=self.registry,
                                 buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
        self.citations = Counter("citeguard_citations", "guarded citations by outcome", ["outcome"],
                                 registry=self.registry)
        self.batch_units = Histogram("citeguard_batch_units", "(claim, passage) units per verifier call",
                                     registry=self.registry, buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
        self.batch_requests = Histogram("citeguard_batch_requests", "requests' verifier calls merged per batch",
                                        registry=self.registry, buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32, 64))
        self.queue_depth = Gauge("citeguard_queue_depth", "verifier calls waiting for the batcher",
                                 registry=self.registry)
        self.in_flight = Gauge("citeguard_in_flight", "requests being handled", registry=self.registry)


class _State:
    def __init__(self, cfg: ServeConfig):
        self.cfg = cfg
        self.ready = False
        self.draining = False
        self.in_flight = 0
        self.metrics = Metrics()
        self.scorer: BatchedScorer | None = None
        self.batcher: UnitBatcher | None = None
        self.reattributor: Any = None
        self.profiles: dict[str, dict[str, Any]] = {}
        self.refused: dict[str, str] = {}
        self.guards: dict[str | None, Guard] = {}
        self.http: Any = None

    def load_profiles(self) -> None:
        """Read every calibration in the folder; keep those made with the served verifier."""
        from .calibration import CalibrationError, check_verifier, read_calibration

        profiles, refused = {}, {}
        folder = self.cfg.calibrations
        for path in sorted(Path(folder).glob("*.json")) if folder else []:
            try:
                cal = read_calibration(str(path))
                check_verifier(cal, self.scorer.name, self.scorer.hash, str(path))
                profiles[path.stem] = cal
            except (CalibrationError, OSError, ValueError) as e:
                refused[path.stem] = str(e)
        self.profiles, self.refused = profiles, refused
        self.guards = {None: self._guard(None)} | {name: self._guard(cal) for name, cal in profiles.items()}
        log.info("calibration profiles: %s loaded, %s refused", sorted(profiles), sorted(refused))

    def _guard(self, cal: Mapping[str, Any] | None) -> Guard:
        return Guard(self.scorer, reattributor=self.reattributor, calibration=cal, limits=self.cfg.limits)

    def guard_for(self, name: str | None) -> Guard:
        if name not in self.guards:
            known = sorted(k for k in self.guards if k is not None)
            why = f" (refused at load: {self.refused[name]})" if name in self.refused else ""
            raise GuardInputError(f"unknown calibration profile {name!r}{why}; profiles: {known}")
        return self.guards[name]


def _tracer():
    try:
        from opentelemetry import trace
    except ImportError:  # the [serve] extra brings it; without it, no spans
        return None
    return trace.get_tracer("citeguard")


def _record(state: _State, verifier: str, results: Sequence[tuple[str, GuardReport]]) -> None:
    """Citation outcomes into the metrics and the current OpenTelemetry span."""
    span = None
    try:
        from opentelemetry import trace
        span = trace.get_current_span()
    except ImportError:
        pass
    for _, r in results:
        for a in r.audit:
            state.metrics.citations.labels(a.action).inc()
            if span is not None and span.is_recording():
                span.add_event("citation", {"citeguard.verifier": verifier, "citeguard.outcome": a.action,
                                            "citeguard.score": -1.0 if a.score is None else float(a.score),
                                            "citeguard.cited": int(a.cited), "citeguard.sentence": int(a.sentence_index)})


_LIBC: Any = None
_LAST_TRIM = [0.0]


def release_memory(min_interval_s: float = 1.0) -> bool:
    """Hand freed heap memory back to the system (glibc's ``malloc_trim``), after verifier batches.

    The verifier's activation buffers change shape with every batch, and glibc, which raises its mmap
    threshold each time a large block is freed, then serves them from the heap, which fragments: a
    5-minute soak grew the server from 2.2 to 2.6 GB, and a fixed low threshold instead cost +37% of
    latency in page faults. Trimming after a batch, at most once a second (a trim walks the heap: ~10 ms
    after every batch added ~20 ms to a lone request), keeps it flat (benchmarks/guard_service.py).
    False where there is no glibc or it is not yet time."""
    global _LIBC
    import ctypes
    import ctypes.util

    now = time.monotonic()
    if now - _LAST_TRIM[0] < min_interval_s:
        return False
    _LAST_TRIM[0] = now
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(_LIBC.malloc_trim(0))
    except (OSError, AttributeError):
        return False


def create_app(cfg: ServeConfig, scorer: Any = None):
    """The FastAPI app. ``scorer`` (tests, benchmarks): an already loaded scorer instead of ``cfg.verifier``."""
    from contextlib import asynccontextmanager

    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
    from starlette.concurrency import run_in_threadpool

    state = _State(cfg)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from .reattributors import load_reattributor
        from .scoring import load_scorer

        inner = scorer if scorer is not None else await run_in_threadpool(
            load_scorer, cfg.verifier, cfg.overrides, model_path=cfg.model_path, runtime=cfg.runtime)
        state.batcher = UnitBatcher(inner, cfg.max_batch_units, cfg.max_wait_ms,
                                    on_batch=lambda n, k: (state.metrics.batch_units.observe(n),
                                                           state.metrics.batch_requests.observe(k)),
                                    on_queue=state.metrics.queue_depth.set, in_flight=lambda: state.in_flight,
                                    after_batch=release_memory)
        state.scorer = BatchedScorer(inner, state.batcher)
        state.reattributor = load_reattributor(cfg.reattributor) if cfg.reattributor else None
        state.load_profiles()
        loop = asyncio.get_running_loop()
        if threading.current_thread() is threading.main_thread():
            loop.add_signal_handler(signal.SIGHUP, state.load_profiles)
            loop.add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(drain()))
        if cfg.upstream:
            import httpx
            state.http = httpx.AsyncClient(timeout=cfg.request_timeout_s)
        state.ready = True
        yield
        state.ready = False
        if state.http is not None:
            await state.http.aclose()
        state.batcher.close()

    async def drain() -> None:
        """SIGTERM: refuse new requests (503), let in-flight ones finish, then exit as on SIGINT."""
        state.draining = True
        t0 = time.monotonic()
        while state.in_flight and time.monotonic() - t0 < cfg.drain_timeout_s:
            await asyncio.sleep(0.02)
        log.info("drained (%d still in flight); exiting", state.in_flight)
        os.kill(os.getpid(), signal.SIGINT)

    app = FastAPI(title="citeguard", version=__import__("citeguard").__version__, lifespan=lifespan,
                  description="Verify -> re-attribute -> flag the citations of cited answers.")
    app.state.citeguard = state

    @app.middleware("http")
    async def bookkeeping(request: Request, call_next):
        path = request.url.path
        endpoint = path if path in ("/v1/guard", "/v1/score", "/v1/chat/completions", "/v1/calibrations") else "other"
        if state.draining and endpoint != "other":
            state.metrics.requests.labels(endpoint, "503").inc()
            return JSONResponse({"detail": "the service is shutting down"}, status_code=503)
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > cfg.limits.max_request_bytes:
            state.metrics.requests.labels(endpoint, "413").inc()
            return JSONResponse({"detail": f"the request has {size} bytes; the limit is "
                                           f"{cfg.limits.max_request_bytes} (max_request_bytes)",
                                 "limit": "max_request_bytes"}, status_code=413)
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

    def refuse(e: Exception) -> JSONResponse:
        if isinstance(e, LimitExceeded):
            return JSONResponse({"detail": str(e), "limit": e.limit}, status_code=422)
        return JSONResponse({"detail": str(e)}, status_code=422)

    async def run_guard(guard: Guard, items: list[tuple[str, list[str], int | None]]):
        tracer = _tracer()
        if tracer is None:
            return await asyncio.wait_for(run_in_threadpool(guard.guard_many, items), cfg.request_timeout_s)
        with tracer.start_as_current_span("citeguard.guard") as span:
            span.set_attribute("citeguard.verifier", state.scorer.name)
            span.set_attribute("citeguard.answers", len(items))
            results = await asyncio.wait_for(run_in_threadpool(guard.guard_many, items), cfg.request_timeout_s)
            _record(state, state.scorer.name, results)
            return results

    def texts(passages: Sequence[Any]) -> list[str]:
        return normalise_passages([p.model_dump() if isinstance(p, BaseModel) else p for p in passages])

    @app.post("/v1/guard", response_model=GuardResult | GuardBatchResult,
              responses={413: {"description": "body past max_request_bytes"}, 422: {"description": "a limit or bad input"},
                         504: {"description": "the request timed out"}})
    async def guard_endpoint(req: GuardRequest, format: Literal["json", "html"] = "json"):
        try:
            guard = state.guard_for(req.calibration)
            one = req.answers is None
            ins = ([AnswerIn(id=req.id, answer=req.answer, passages=req.passages, citation_base=req.citation_base)]
                   if one else req.answers)
            if len(ins) > cfg.limits.max_answers_per_request:
                raise LimitExceeded(f"{len(ins)} answers in one request", "max_answers_per_request",
                                    cfg.limits.max_answers_per_request)
            items = [(a.answer, texts(a.passages), a.citation_base) for a in ins]
            results = await run_guard(guard, items)
        except (LimitExceeded, GuardInputError) as e:
            return refuse(e)
        except TimeoutError:
            return JSONResponse({"detail": f"the request took longer than {cfg.request_timeout_s} s"}, status_code=504)
        out = [GuardResult(id=a.id, guarded_answer=t, report=r) for a, (t, r) in zip(ins, results)]
        if format == "html":
            from .audit_page import AuditEntry, render_audit_page
            entries = [AuditEntry(str(a.id if a.id is not None else i + 1), a.answer, o.guarded_answer,
                                  o.report.to_dict()) for i, (a, o) in enumerate(zip(ins, out))]
            return HTMLResponse(render_audit_page(entries, verifier=state.scorer.name, rule=guard.rule,
                                                  guarantee=guard.guarantee))
        if one:
            return out[0]
        totals = {k: float(sum(getattr(o.report, k) for o in out))
                  for k in ("n_citations", "verified", "reattributed", "flagged", "invalid")}
        totals["review_budget"] = ((totals["flagged"] + totals["invalid"]) / totals["n_citations"]
                                   if totals["n_citations"] else 0.0)
        return GuardBatchResult(results=out, counts=totals)

    @app.post("/v1/score", response_model=ScoreResponse)
    async def score_endpoint(req: ScoreRequest):
        if len(req.pairs) > cfg.limits.max_citations_per_answer:
            return refuse(LimitExceeded(f"{len(req.pairs)} pairs", "max_citations_per_answer",
                                        cfg.limits.max_citations_per_answer))
        for i, p in enumerate(req.pairs):
            if len(p.passage) > cfg.limits.max_passage_chars:
                return refuse(LimitExceeded(f"pair {i}'s passage has {len(p.passage)} characters", "max_passage_chars",
                                            cfg.limits.max_passage_chars))
        ps = await asyncio.wait_for(run_in_threadpool(state.scorer.score, [p.claim for p in req.pairs],
                                                      [p.passage for p in req.pairs]), cfg.request_timeout_s)
        return ScoreResponse(verifier=state.scorer.name, scores=[
            PairScore(score=None if np.isnan(s) else float(s), verdict=bool(v), best_window=int(b))
            for s, v, b in zip(ps.score, ps.verdict, ps.best_window)])

    @app.get("/v1/calibrations")
    async def calibrations():
        from .calibration import guarantee_line
        return {"verifier": state.scorer.name, "verifier_hash": state.scorer.hash,
                "profiles": {k: {"tau": v["tau"], "alpha": v["alpha"], "n_unsupported": v.get("n_unsupported"),
                                 "guarantee": guarantee_line(v)} for k, v in state.profiles.items()},
                "refused": state.refused}

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz():
        if not state.ready or state.draining:
            return JSONResponse({"ready": False, "draining": state.draining}, status_code=503)
        return {"ready": True, "verifier": state.scorer.name}

    @app.get("/metrics")
    async def metrics():
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
        return PlainTextResponse(generate_latest(state.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    if cfg.upstream:
        upstream = cfg.upstream.rstrip("/")

        @app.post("/v1/chat/completions", responses={400: {"description": "no passages, or stream: true"},
                                                     502: {"description": "the upstream failed"}})
        async def chat(req: ChatRequest, request: Request):
            if req.stream:
                return JSONResponse({"detail": "stream: true is not supported: the guard needs the whole answer; "
                                               "send stream: false"}, status_code=400)
            extra = req.citeguard
            if extra is None or not extra.passages:
                return JSONResponse({"detail": "no passages: send them in the request's 'citeguard' field, e.g. "
                                               "extra_body={'citeguard': {'passages': [...]}}; an answer without "
                                               "its passages cannot be checked and is never passed"}, status_code=400)
            try:
                guard = state.guard_for(extra.calibration)
                passages = texts(extra.passages)
                cfg.limits.check_passages(passages)
            except (LimitExceeded, GuardInputError) as e:
                return refuse(e)
            body = req.model_dump(exclude={"citeguard"}, exclude_none=True)
            headers = {k: v for k, v in request.headers.items() if k.lower() == "authorization"}
            try:
                r = await state.http.post(f"{upstream}/chat/completions", json=body, headers=headers)
            except Exception as e:  # noqa: BLE001 - any transport failure is the upstream's
                return JSONResponse({"detail": f"upstream {upstream} failed: {e}"}, status_code=502)
            if r.status_code != 200:
                return JSONResponse({"detail": f"upstream {upstream} answered {r.status_code}", "upstream": r.text[:2000]},
                                    status_code=502)
            data = r.json()
            content = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
            try:
                ((text, report),) = await run_guard(guard, [(content, passages, extra.citation_base)])
            except (LimitExceeded, GuardInputError) as e:
                return refuse(e)
            except TimeoutError:
                return JSONResponse({"detail": f"the request took longer than {cfg.request_timeout_s} s"},
                                    status_code=504)
            data["choices"][0]["message"]["content"] = text
            data["citeguard"] = {"original_content": content, "report": report.to_dict(), "verifier": state.scorer.name}
            hdrs = {"X-Citeguard-Citations": str(report.n_citations), "X-Citeguard-Flagged": str(report.flagged),
                    "X-Citeguard-Invalid": str(report.invalid), "X-Citeguard-Reattributed": str(report.reattributed),
                    "X-Citeguard-Review-Budget": f"{report.review_budget:.4f}"}
            return JSONResponse(json.loads(json.dumps(data)), headers=hdrs)

    return app


def serve(cfg: ServeConfig, host: str = "127.0.0.1", port: int = 8000, workers: int = 1) -> None:
    """Run the service with uvicorn (``workers`` processes on one node, each loading the verifier once)."""
    import uvicorn

    if workers == 1:
        uvicorn.run(create_app(cfg), host=host, port=port, log_level="info", timeout_graceful_shutdown=30)
        return
    os.environ["CITEGUARD_SERVE_CONFIG"] = json.dumps(_config_json(cfg))
    uvicorn.run("citeguard.service:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="info", timeout_graceful_shutdown=30)


def _config_json(cfg: ServeConfig) -> dict[str, Any]:
    from dataclasses import asdict
    return asdict(cfg)


def app_from_env():
    """The app of one uvicorn worker process (``--workers`` > 1), from ``CITEGUARD_SERVE_CONFIG``."""
    d = json.loads(os.environ["CITEGUARD_SERVE_CONFIG"])
    d["limits"] = Limits(**d["limits"])
    return create_app(ServeConfig(**d))
