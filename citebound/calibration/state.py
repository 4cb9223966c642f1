"""Where the drift monitors keep their state, so that every worker and replica sees one monitor per
calibration and group, and a restart or a ``kill -9`` forgets nothing acknowledged.

One small interface, three backends chosen by URL (as Django's cache framework and the ``limits``
library do): ``memory://`` (one process; the default), ``sqlite:///path`` or a plain path (one node, any
number of workers: a WAL database file, every update one ``BEGIN IMMEDIATE`` transaction), and
``redis://host:port/db`` (replicas on several nodes: every update a ``WATCH``/``MULTI`` transaction, retried
when another replica wrote the key in between). :meth:`StateStore.update` applies a function to a key's
state atomically in the backend itself, so two writers never lose each other's updates. A state is a small
JSON object of fixed size (the monitor's martingales and label counts), whatever the length of the stream.

>>> s = open_store("memory://")
>>> s.update("k", lambda st: {"n": (st or {}).get("n", 0) + 2})["n"], s.get("k")
(2, {'n': 2})
"""
from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

Update = Callable[[dict[str, Any] | None], dict[str, Any]]


class StateStore:
    """``get(key)`` and an atomic ``update(key, fn)``; ``url`` says where."""

    url = "memory://"
    shared = False  # True when other processes may write the same keys

    def get(self, key: str) -> dict[str, Any] | None:
        raise NotImplementedError

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        raise NotImplementedError


class MemoryStore(StateStore):
    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(key)
        return None if raw is None else json.loads(raw)

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        with self._lock:
            raw = self._data.get(key)
            new = fn(None if raw is None else json.loads(raw))
            self._data[key] = json.dumps(new)
            return new


class SqliteStore(StateStore):
    """A WAL SQLite file: safe for several processes on one node. A writer holds the database's write lock
    for one read-compute-write (``BEGIN IMMEDIATE``), so updates are serialised, and a committed update
    survives a ``kill -9`` of any process."""

    shared = True

    def __init__(self, path: str):
        self.path, self.url = path, f"sqlite:///{path}"
        self._local = threading.local()
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS monitor_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # an acknowledged update is on disk
            self._local.db = db
        return db

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._db().execute("SELECT value FROM monitor_state WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT value FROM monitor_state WHERE key = ?", (key,)).fetchone()
            new = fn(None if row is None else json.loads(row[0]))
            db.execute("INSERT INTO monitor_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                       "value = excluded.value", (key, json.dumps(new)))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return new


class RedisStore(StateStore):
    """Redis (the ``redis`` package): each update is an optimistic transaction on its key (``WATCH``, read,
    compute, ``MULTI``/``SET``/``EXEC``), retried when another replica changed the key meanwhile."""

    shared = True

    def __init__(self, url: str):
        try:
            import redis
        except ImportError as e:
            raise ValueError(f"--state {url} needs the redis package (pip install 'citebound[redis]'): {e}") from None
        self.url = url
        self._redis = redis.Redis.from_url(url, socket_timeout=10)
        self._watch_error = redis.WatchError

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self._redis.get(f"citebound:{key}")
        return None if raw is None else json.loads(raw)

    def update(self, key: str, fn: Update) -> dict[str, Any]:
        name = f"citebound:{key}"
        with self._redis.pipeline() as pipe:
            for _ in range(1000):
                try:
                    pipe.watch(name)
                    raw = pipe.get(name)
                    new = fn(None if raw is None else json.loads(raw))
                    pipe.multi()
                    pipe.set(name, json.dumps(new))
                    pipe.execute()
                    return new
                except self._watch_error:
                    continue
        raise RuntimeError(f"{self.url}: key {key!r} changed under 1000 tries in a row")


def open_store(url: str | None) -> StateStore:
    """The store a ``--state`` value names: None or ``memory://``, ``sqlite:///PATH`` (or a plain path), or
    ``redis://HOST:PORT/DB``."""
    if url is None or url == "memory://":
        return MemoryStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(url)
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    if "://" in path:
        raise ValueError(f"--state {url!r}: expected memory://, sqlite:///PATH, a file path or redis://HOST:PORT/DB")
    return SqliteStore(path)
