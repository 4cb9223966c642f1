"""Cooperative deadlines: guard work checks, between steps, whether its caller still wants it.

The service runs each request's guard work under a :class:`WorkToken` (a deadline, and a flag its
handler sets when the request times out or the service drains). The token travels in a context
variable, so the guard and the scorer find it without an argument: :func:`check` raises
:class:`Cancelled` between verifier calls and between the guard's steps, and the micro-batcher drops
or stops the jobs of a cancelled token. Outside a token (the CLI, the library) :func:`check` is free.

>>> tok = WorkToken(deadline_s=None)
>>> with tok.active():
...     check()  # nothing to do: still wanted
>>> tok.cancel()
>>> with tok.active():
...     try:
...         check()
...     except Cancelled as e:
...         print(e)
the request was cancelled (timed out or the service is draining)
"""
from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Cancelled(TimeoutError):
    """The work's caller gave up on it (its deadline passed, or it was cancelled)."""


class _Activatable:
    """What a token shares: it can be made the current one for a block (:func:`check` then consults it)."""

    @contextmanager
    def active(self) -> Iterator[Any]:
        reset = CURRENT.set(self)
        try:
            yield self
        finally:
            CURRENT.reset(reset)


class WorkToken(_Activatable):
    """A deadline (seconds from now, or None) and a cancel flag, with the futures the work waits on."""

    def __init__(self, deadline_s: float | None):
        self.deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self._cancelled = threading.Event()
        self._futures: list[Any] = []
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set() or (self.deadline is not None and time.monotonic() > self.deadline)

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled("the request was cancelled (timed out or the service is draining)")

    def cancel(self) -> None:
        """Stop the work: set the flag and cancel every future it waits on."""
        self._cancelled.set()
        with self._lock:
            for f in self._futures:
                f.cancel()

    def watch(self, future: Any) -> None:
        """Cancel ``future`` with the token (at once if it is already cancelled)."""
        with self._lock:
            self._futures.append(future)
        if self._cancelled.is_set():
            future.cancel()



class AllOf(_Activatable):
    """The token of a merged batch: cancelled only when every one of its jobs' tokens is."""

    combine = staticmethod(all)

    def __init__(self, tokens: list[Any]):
        self.tokens = tokens

    @property
    def cancelled(self) -> bool:
        return self.combine(t is not None and t.cancelled for t in self.tokens)

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled(f"{'every' if self.combine is all else 'a'} request of this batch was cancelled")


class AnyOf(AllOf):
    """The token of a merged batch: cancelled as soon as one of its jobs' tokens is, so a request that gave up
    stops holding the verifier at the next check; the batcher then scores the others again without it."""

    combine = staticmethod(any)


CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("citebound_work_token", default=None)


def current() -> Any:
    return CURRENT.get()


def check() -> None:
    """Raise :class:`Cancelled` if the current work's token says stop; free without a token."""
    tok = CURRENT.get()
    if tok is not None:
        tok.check()


def checked(items: Any) -> Iterator[Any]:
    """``items``, with :func:`check` before each: every verifier's batch loop runs through this, so a request
    that gave up stops holding the verifier after the batch in hand.

    >>> list(checked([1, 2]))
    [1, 2]
    """
    for item in items:
        check()
        yield item
