"""The service's configuration and state, defined once and shared by the app and its routes."""
from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from citebound.guarding.guard import Guard, GuardInputError, GuardReport, normalise_passages
from citebound.scoring.deadline import WorkToken
from citebound.serving.metrics import Metrics, guard_span
from citebound.serving.registry import CalibrationRegistry
from citebound.text.limits import LimitExceeded, Limits

# How a route asks whether its client has gone: set per request by the app's body middleware (BodyLimit),
# a non-blocking look at the ASGI receive channel for ``http.disconnect``. Unset outside a request.
CLIENT_GONE: contextvars.ContextVar[Callable[[], Awaitable[bool]] | None] = contextvars.ContextVar("client_gone",
                                                                                                   default=None)
# how often a request's guard work looks whether its client is still there (the verifier is released within
# this and the worker's next deadline check, 0.05 s in the model loops, after a client disconnects)
CLIENT_POLL_S = 0.1


class ClientGone(TimeoutError):
    """The client disconnected while its request was being guarded; the work was cancelled."""


@dataclass
class ServeConfig:
    verifier: str = "embedding"
    runtime: Mapping[str, Any] | None = None
    reattributor: str | None = "bm25"
    calibrations: str | None = None  # a folder of calibration JSON files; the file name is the profile
    upstream: str | None = None
    # which credentials reach the upstream: the client's Authorization header (client), the proxy's own key
    # (own), or the client's when sent, else the proxy's (client-else-own)
    upstream_auth: str = "client"
    upstream_key: str | None = None  # the proxy's own key (read from --upstream-key-file), sent as a Bearer token
    max_batch_units: int = 512
    max_wait_ms: float = 5.0
    request_timeout_s: float = 60.0
    drain_timeout_s: float = 30.0
    drain_grace_s: float = 2.0  # after SIGTERM, requests dispatched this soon are still served (sent before it)
    limits: Limits = field(default_factory=Limits)
    overrides: Mapping[str, Any] | None = None
    model_path: str | None = None
    # the proxy: a template that puts the request's passages into the upstream prompt (None: the caller does)
    passages_prompt: str | None = None
    # what the guard does with a failed answer and an unchecked citation (citebound.guarding.guard.Guard)
    action: str = "annotate"
    block_above: float | None = None
    on_error: str = "closed"
    on_void: str = "annotate"
    uncited: str = "flag"
    # the token that state-changing monitor routes need (Authorization: Bearer ...); None: they refuse
    admin_token: str | None = None
    # where the drift monitors' state lives: memory:// (this process), sqlite:///PATH (every worker on this
    # node), redis://HOST:PORT/DB (every replica)
    state: str | None = None
    state_password: str | None = None  # the Redis password (read from --state-password-file)


DEFAULT_PASSAGES_PROMPT = ("Answer from these passages only, and cite each claim with the number of the passage that "
                           "supports it, as [N].\n\n{passages}")

class ServiceState:
    """What the routes share: the config, the drain's state, the batched scorer, the calibration registry,
    the metrics and (with an upstream) the HTTP client."""

    def __init__(self, cfg: ServeConfig):
        self.cfg = cfg
        self.draining = False
        self.draining_since = 0.0
        self.in_flight = 0
        self.metrics = Metrics()
        self.scorer: Any = None
        self.batcher: Any = None
        from citebound.calibration.state import CheckedStore, open_store

        store = open_store(cfg.state, password=cfg.state_password)
        # a shared store is probed in the background: while it is down every call answers at once (no request
        # waits on it), /readyz says so, and the first good probe brings it back
        self.store = CheckedStore(store) if store.shared else store
        self.registry = CalibrationRegistry(cfg.calibrations, cfg.limits, {"action": cfg.action, "block_above": cfg.block_above,
                                                                           "on_error": cfg.on_error, "on_void": cfg.on_void,
                                                                           "uncited": cfg.uncited, "state": self.store})
        self.http: Any = None
        self.tokens: set[WorkToken] = set()  # the work tokens of requests being guarded

    def guard_for(self, name: str | None) -> Guard:
        return self.registry.guard_for(name)

    async def run_guarded(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in a worker thread under the request timeout, while the client is connected. Past
        the timeout, or once the client disconnects (looked at every :data:`CLIENT_POLL_S`), the work is
        cancelled (it stops at its next check, and its pairs leave the batcher's queue) and TimeoutError
        (:class:`ClientGone` for a disconnect; the work's own deadline stop, ``deadline.Cancelled``, is one too) is
        raised: no gone or late request holds the verifier."""
        from starlette.concurrency import run_in_threadpool

        timeout = self.cfg.request_timeout_s
        gone = CLIENT_GONE.get()
        token = WorkToken(timeout)
        self.tokens.add(token)
        try:
            with token.active():  # the worker thread runs in a copy of this context, so it sees the token
                task = asyncio.ensure_future(run_in_threadpool(fn, *args))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a late outcome is not an error
            end = time.monotonic() + timeout
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                done, _ = await asyncio.wait({task}, timeout=min(left, CLIENT_POLL_S) if gone else left)
                if done:
                    return task.result()
                if gone is not None and await gone():
                    raise ClientGone
        finally:
            token.cancel()  # done or not, nothing of this request runs on
            self.tokens.discard(token)

    async def run_guard(self, guard: Guard, items: list[tuple[str, list[str], int | None]],
                        group: str | None = None, **kw: Any) -> list[tuple[str, GuardReport]]:
        """One request's guard work (:meth:`run_guarded`); TimeoutError past the request timeout. ``kw``
        goes to :meth:`Guard.guard_many` (``open_end``, ``block``: a stream's segments)."""
        with guard_span(self.scorer.name, len(items)):
            results = await self.run_guarded(lambda: guard.guard_many(items, group=group, **kw))
            self.metrics.record(self.scorer.name, results)
        return results

    async def run_guard_each(self, guard: Guard, items: list[tuple[str, Sequence[Any], int | None]],
                             group: str | None = None) -> list[Any]:
        """A batch request's answers, each with its own result or its own GuardInputError."""
        todo = [(answer, [p.model_dump() if isinstance(p, BaseModel) else p for p in passages], base)
                for answer, passages, base in items]
        with guard_span(self.scorer.name, len(items)):
            results = await self.run_guarded(lambda: guard.guard_each(todo, group=group))
            self.metrics.record(self.scorer.name, [r for r in results if not isinstance(r, GuardInputError)])
        return results

    def cancel_all(self) -> None:
        """Drain's last step: stop every request's work that is still running."""
        for token in list(self.tokens):
            token.cancel()


def refuse(e: Exception):
    """A 422 that names the limit or the bad field."""
    from fastapi.responses import JSONResponse

    if isinstance(e, LimitExceeded):
        return JSONResponse({"detail": str(e), "limit": e.limit}, status_code=422)
    return JSONResponse({"detail": str(e)}, status_code=422)


def without_claims(body: dict) -> dict:
    """A report as the proxy may show it for a withheld answer: each audit's claim (the upstream's text, which
    the caller has not seen) left out."""
    for a in body.get("audit", []):
        a["claim"] = None
    return body


def blocked(report: GuardReport, error_shape: bool = False, show_text: bool = True):
    """A 403 for an answer --action block withholds: why, and its whole report (the content is not given).
    ``error_shape``: OpenAI's error object (what the proxy answers, so the openai SDK raises on it);
    ``show_text=False``: the report's claims are left out too (the proxy's caller never saw the answer)."""
    from fastapi.responses import JSONResponse

    body = report.to_dict() if hasattr(report, "to_dict") else report.model_dump()
    if not show_text:
        body = without_claims(body)
    if error_shape:
        return JSONResponse({"error": {"message": f"citebound blocked the answer: {report.block_reason}",
                                       "type": "citebound_blocked", "code": "blocked"},
                             "citebound": {"report": body}}, status_code=403)
    return JSONResponse({"detail": f"blocked: {report.block_reason}", "blocked": True, "report": body}, status_code=403)


def timed_out(seconds: float, error: BaseException | None = None):
    """504 past the request timeout; 499 (nginx's "client closed request") when the client left first."""
    from fastapi.responses import JSONResponse

    if isinstance(error, ClientGone):
        return JSONResponse({"detail": "the client disconnected; its work was cancelled"}, status_code=499)
    return JSONResponse({"detail": f"the request took longer than {seconds} s (--request-timeout, request_timeout in "
                                   "the config file)"}, status_code=504)


def texts(passages: Sequence[Any]) -> list[str]:
    """Passage texts of a request's passages (strings or ``{"text", "title"}``); GuardInputError when empty."""
    return normalise_passages([p.model_dump() if isinstance(p, BaseModel) else p for p in passages])


__all__ = ["ServeConfig", "ServiceState", "blocked", "refuse", "timed_out", "texts", "GuardInputError", "LimitExceeded"]
