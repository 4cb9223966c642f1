"""The micro-batcher: concurrent requests' (claim, passage) units share verifier calls.

One worker thread takes the first waiting job, collects more for up to ``max_wait_ms`` or until
``max_units`` units, scores them in one call and hands each job its slice, as inference servers
batch. A failure is isolated: when a merged call raises, each of its jobs is scored again alone, so
only the job whose units cause the error gets it. A job whose caller has given up (its future
cancelled) is dropped before it is scored; one that gives up while its batch is being scored stops the
call at the verifier's next check, and the batch's other jobs are scored again without it, so a request
that timed out never holds the verifier for the others.
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from citebound.scoring import deadline
from citebound.verifiers.base import PairScores


@dataclass
class _Job:
    claims: list[str]
    passages: list[str]
    future: Future = field(default_factory=Future)
    token: Any = None  # the request's WorkToken (citebound.scoring.deadline), if it runs under one


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
        self.thread = threading.Thread(target=self._run, name="citebound-batcher", daemon=True)
        self.thread.start()

    def score(self, claims: Sequence[str], passages: Sequence[str]) -> PairScores:
        """The pairs' scores, computed in the worker with other requests' pairs; a cancelled request's
        job is dropped or stopped, and this raises :class:`~citebound.scoring.deadline.Cancelled`."""
        from concurrent.futures import CancelledError

        token = deadline.current()
        job = _Job(list(claims), list(passages), token=token)
        if token is not None:
            token.check()
            token.watch(job.future)
        self.queue.put(job)
        if self.on_queue:
            self.on_queue(self.queue.qsize())
        try:
            return job.future.result()
        except CancelledError:
            raise deadline.Cancelled("the request was cancelled while its pairs waited to be scored") from None

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=10)

    def _score(self, jobs: list[_Job]) -> None:
        """Score the jobs in one call and hand each its slice; if that call raises, score each job alone,
        so only a job whose own units fail gets an exception."""
        try:
            with deadline.AnyOf([j.token for j in jobs]).active():  # stops as soon as one job's request gave up
                ps = self.scorer.score([c for j in jobs for c in j.claims], [p for j in jobs for p in j.passages])
        except BaseException as e:  # noqa: BLE001 - handed to the jobs that cause it
            if isinstance(e, deadline.Cancelled):  # the requests that gave up leave; the others are scored again
                gone = [j for j in jobs if j.token is not None and j.token.cancelled]
                live = [j for j in jobs if j not in gone]
                for j in gone or jobs:
                    _settle(j.future, exception=e)
                if gone and live:
                    self._score(live)
                return
            if len(jobs) == 1:
                for j in jobs:
                    _settle(j.future, exception=e)
                return
            for j in jobs:
                self._score([j])
            return
        at = 0
        for j in jobs:
            k = len(j.claims)
            _settle(j.future, PairScores(ps.score[at:at + k], ps.verdict[at:at + k], ps.best_window[at:at + k],
                                         ps.n_windows[at:at + k], list(ps.reason[at:at + k])))
            at += k

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
            jobs = [j for j in jobs if not j.future.cancelled()]
            if jobs:
                self._score(jobs)
            if self.after_batch:
                self.after_batch()


def _settle(future: Future, result: Any = None, exception: BaseException | None = None) -> None:
    """Set a job's outcome unless its caller cancelled it meanwhile."""
    if future.cancelled():
        return
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)
    except Exception:  # noqa: BLE001 - cancelled between the check and the set (InvalidStateError)
        pass


class BatchedScorer:
    """A scorer the guard can use (``score``, ``windowing``, ``name``, ``hash``) whose calls go through
    a :class:`UnitBatcher`."""

    def __init__(self, scorer: Any, batcher: UnitBatcher):
        self.inner, self.batcher = scorer, batcher
        self.name, self.hash, self.windowing = scorer.name, scorer.hash, scorer.windowing
        self.cfg = getattr(scorer, "cfg", {})

    def score(self, claims: Sequence[str], passages: Sequence[str]) -> PairScores:
        return self.batcher.score(claims, passages)


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
