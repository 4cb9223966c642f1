"""Where the drift monitors keep their state, so that every worker and replica sees one monitor per
calibration and group, and a restart or a ``kill -9`` forgets nothing acknowledged.

One small interface, three backends chosen by URL (as Django's cache framework and the ``limits``
library do): ``memory://`` (one process; the default), ``sqlite:///path`` or a plain path (one node, any
number of workers: a WAL database file, every update one ``BEGIN IMMEDIATE`` transaction), and
``redis://host:port/db`` (replicas on several nodes: every update a ``WATCH``/``MULTI`` transaction, retried
when another replica wrote the key in between). :meth:`StateStore.update` applies a function to a key's
state atomically in the backend itself, so two writers never lose each other's updates. A state is a small
JSON object of fixed size (the monitor's martingales and label counts), whatever the length of the stream.

A store that cannot be reached raises :class:`StoreUnavailable` (never a backend's own exception), and
:class:`CheckedStore` (what the service uses) answers at once while a background probe finds it down, so a
locked or hung store delays no request by more than the probe's bound and recovers by itself.

>>> s = open_store("memory://")
>>> s.update("k", lambda st: {"n": (st or {}).get("n", 0) + 2})["n"], s.get("k")
(2, {'n': 2})
"""
from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

Update = Callable[[dict[str, Any] | None], dict[str, Any]]


class StoreUnavailable(RuntimeError):
    """The state store cannot be read or written now (down, locked, hung, refused, or a row that is not a
    state object); the message says which store and why."""


def _decode(raw: Any, where: str) -> dict[str, Any] | None:
    """A stored state: a JSON object, or None for no state yet."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, dict):
        raise StoreUnavailable(f"{where}: the stored state is not a state object (a JSON object): reset it with "
                               "POST /v1/monitor/reset, or delete the key")
    return value


class StateStore:
    """``get(key)`` and an atomic ``update(key, fn)``; ``url`` says where."""

    url = "memory://"
    shared = False  # True when other processes may write the same keys

    def get(self, key: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        raise NotImplementedError

    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the store answers now."""


class MemoryStore(StateStore):
    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(key)
        return _decode(raw, self.url)

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        with self._lock:  # the read, the change and the write under one lock: no update is lost
            new = fn(_decode(self._data.get(key), self.url))
            self._data[key] = json.dumps(new)
            return new


def _immediate(db: sqlite3.Connection, body: Callable[[], Any]) -> Any:
    """``body`` in one ``BEGIN IMMEDIATE`` transaction (the write lock taken first, waiting up to the busy
    timeout): committed if it returns, rolled back if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        out = body()
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return out


class SqliteStore(StateStore):
    """A WAL SQLite file: safe for several processes on one node. A writer holds the database's write lock
    for one read-compute-write (``BEGIN IMMEDIATE``), so updates are serialised, and a committed update
    survives a ``kill -9`` of any process. A lock held longer than ``busy_s`` (another process's) is
    :class:`StoreUnavailable`, as is a file that is not such a database."""

    shared = True

    def __init__(self, path: str, busy_s: float = 5.0):
        import os

        self.path, self.url, self.busy_s = path, f"sqlite:///{path}", busy_s
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise ValueError(f"--state {path}: is a folder; give a file path in it (e.g. {path.rstrip('/')}/monitor.sqlite)")
        if not os.path.isdir(folder):
            raise ValueError(f"--state {path}: the folder {folder} does not exist; create it, or give another path")
        self._local = threading.local()

        self._call(lambda db: _immediate(db, lambda: db.execute(
            "CREATE TABLE IF NOT EXISTS monitor_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")))

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self.busy_s, isolation_level=None)
            try:
                self._to_wal(db)
                db.execute("PRAGMA synchronous=FULL")  # an acknowledged update is on disk
            except BaseException:
                db.close()
                raise
            self._local.db = db
        return db

    def _to_wal(self, db: sqlite3.Connection) -> None:
        """Switch a file to WAL (it stays so). The switch needs the file's exclusive lock, and while another
        process holds its write lock (as one opening a new file does, switching it) SQLite answers "locked" at
        once instead of waiting, since a wait could deadlock; so this waits as the busy timeout would have:
        it retries until ``busy_s`` and then lets "locked" through."""
        deadline = time.monotonic() + self.busy_s
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.005 + 0.02 * random.random())

    def _call(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        try:
            return fn(self._db())
        except sqlite3.DatabaseError as e:  # locked past busy_s, read-only, not a database, disk I/O
            self._local.db = None
            raise StoreUnavailable(f"{self.url}: {e}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._call(lambda db: db.execute("SELECT value FROM monitor_state WHERE key = ?", (key,)).fetchone())
        return None if row is None else _decode(row[0], f"{self.url} key {key!r}")

    def ping(self) -> None:
        self._call(lambda db: db.execute("SELECT 1 FROM monitor_state LIMIT 1").fetchall())

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        def tx(db: sqlite3.Connection) -> dict[str, Any]:
            row = db.execute("SELECT value FROM monitor_state WHERE key = ?", (key,)).fetchone()
            new = fn(None if row is None else _decode(row[0], f"{self.url} key {key!r}"))
            db.execute("INSERT INTO monitor_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                       "value = excluded.value", (key, json.dumps(new)))
            return new
        return self._call(lambda db: _immediate(db, lambda: tx(db)))


class RedisStore(StateStore):
    """Redis (the ``redis`` package): each update is an optimistic transaction on its key (``WATCH``, read,
    compute, ``MULTI``/``SET``/``EXEC``), retried when another replica changed the key meanwhile. Every call
    is bounded by ``timeout_s`` (connect and read); a failure is :class:`StoreUnavailable`. The password
    comes in the URL (``redis://:PASSWORD@host``) or, better, from a file (``password_file``)."""

    shared = True

    def __init__(self, url: str, timeout_s: float = 2.0, password: str | None = None):
        try:
            import redis
        except ImportError as e:
            raise ValueError(f"--state {url} needs the redis package (pip install 'citebound[redis]'): {e}") from None
        from citebound.scoring.llm_backends import redact_url

        self.url = redact_url(url)
        self._redis = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                           **({"password": password} if password else {}))
        self._errors = (redis.RedisError, OSError)
        self._watch_error = redis.WatchError

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self._watch_error:
            raise
        except self._errors as e:
            raise StoreUnavailable(f"{self.url}: {type(e).__name__}: {str(e)[:200]}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        return _decode(self._call(lambda: self._redis.get(f"citebound:{key}")), f"{self.url} key {key!r}")

    def ping(self) -> None:
        self._call(self._redis.ping)

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        name = f"citebound:{key}"

        def tx() -> dict[str, Any] | None:
            with self._redis.pipeline() as pipe:
                for _ in range(1000):
                    try:
                        pipe.watch(name)
                        new = fn(_decode(pipe.get(name), f"{self.url} key {key!r}"))
                        pipe.multi()
                        pipe.set(name, json.dumps(new))
                        pipe.execute()
                        return new
                    except self._watch_error:
                        continue
            return None
        new = self._call(tx)
        if new is None:
            raise StoreUnavailable(f"{self.url}: key {key!r} changed under 1000 tries in a row")
        return new


class CheckedStore(StateStore):
    """A store with a health probe: a daemon thread pings it every ``every_s``; while the last probe (or the
    last call) failed, every call raises :class:`StoreUnavailable` at once instead of waiting on the store,
    and the first successful probe brings it back (no restart). :attr:`available` and :attr:`reason` are
    what ``/readyz`` reports."""

    def __init__(self, inner: StateStore, every_s: float = 1.0):
        self.inner, self.every_s = inner, every_s
        self.url, self.shared = inner.url, inner.shared
        self.available, self.reason, self.checked_at = True, "", 0.0
        self._stop = threading.Event()
        self._probe()
        threading.Thread(target=self._run, daemon=True, name="citebound-store-probe").start()

    def _probe(self) -> None:
        import time

        try:
            self.inner.ping()
            self.available, self.reason = True, ""
        except StoreUnavailable as e:
            self.available, self.reason = False, str(e)
        self.checked_at = time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._probe()

    def close(self) -> None:
        self._stop.set()

    def _call(self, fn: Callable[[], Any]) -> Any:
        if not self.available:
            raise StoreUnavailable(self.reason)
        try:
            return fn()
        except StoreUnavailable as e:
            if "not a state object" not in str(e):  # a bad row is that key's problem, not the store's
                self.available, self.reason = False, str(e)
            raise

    def get(self, key: str) -> dict[str, Any] | None:
        return self._call(lambda: self.inner.get(key))

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        return self._call(lambda: self.inner.update(key, fn))

    def ping(self) -> None:
        self.inner.ping()


def open_store(url: str | None, password: str | None = None) -> StateStore:
    """The store a ``--state`` value names: None or ``memory://``, ``sqlite:///PATH`` (or a plain path), or
    ``redis://HOST:PORT/DB`` (``rediss://`` for TLS, ``unix://`` for a socket). A value that names none of
    them is a ValueError saying what is allowed.

    >>> open_store("sqlite://")
    Traceback (most recent call last):
    ...
    ValueError: --state 'sqlite://': expected memory://, sqlite:///PATH, a file path or redis://HOST:PORT/DB
    """
    if url is None or url == "memory://":
        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url, password=password)
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    if "://" in path or not path.strip() or (path == url and url.startswith(("sqlite:", "memory:"))):
        raise ValueError(f"--state {url!r}: expected memory://, sqlite:///PATH, a file path or redis://HOST:PORT/DB")
    return SqliteStore(path)
