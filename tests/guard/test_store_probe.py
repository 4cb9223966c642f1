"""The store's health probe, in the fast tier (#56: effects that must happen): a real Redis hung with SIGSTOP
turns the checked store unavailable and every call answers at once; resumed, the next probe brings it back with
no restart; /readyz follows (503 for scope=all, 200 for scope=verdicts) and comes back by itself. A bad row is
that key's problem: the store stays available for every other key."""
import os
import signal
import sqlite3
import time

import httpx
import pytest
from test_state import _redis
from test_store_down import _until

from citebound.calibration.state import CheckedStore, RedisStore, SqliteStore, StoreUnavailable
from citebound.serving import ServeConfig
from tests.service_helpers import running


def test_a_bad_row_fails_its_key_only_and_the_store_stays_available(tmp_path):
    path = tmp_path / "s.sqlite"
    store = CheckedStore(SqliteStore(str(path)), every_s=60)
    try:
        store.update("good", lambda st: {"n": 1})
        with sqlite3.connect(path) as db:
            db.execute("INSERT INTO monitor_state (key, value) VALUES ('bad', '[1, 2]')")
        with pytest.raises(StoreUnavailable, match="not a state object"):
            store.get("bad")
        assert store.available and store.reason == ""
        assert store.get("good") == {"n": 1}
        assert store.update("good", lambda st: {"n": st["n"] + 1}) == {"n": 2}
    finally:
        store.close()


def test_a_hung_redis_is_unavailable_at_once_and_back_after_the_next_probe(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    p, url = _redis(tmp_path)
    store = CheckedStore(RedisStore(url, timeout_s=0.3), every_s=0.1)
    try:
        assert store.update("k", lambda st: {"n": 1}) == {"n": 1} and store.available
        os.kill(p.pid, signal.SIGSTOP)
        _until(lambda: not store.available, 2.0)
        assert "127.0.0.1" in store.reason
        t = time.perf_counter()
        with pytest.raises(StoreUnavailable):
            store.get("k")
        assert time.perf_counter() - t < 0.05  # answered from the probe's verdict, not by waiting on Redis
        os.kill(p.pid, signal.SIGCONT)
        _until(lambda: store.available, 2.0)
        assert store.reason == "" and store.get("k") == {"n": 1}
        assert store.update("k", lambda st: {"n": st["n"] + 1}) == {"n": 2}
    finally:
        store.close()
        os.kill(p.pid, signal.SIGCONT)
        p.terminate()
        p.wait(10)


def test_readyz_follows_the_store_down_and_back_by_itself(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    p, url = _redis(tmp_path)
    try:
        with running(ServeConfig(verifier="lexical", state=url)) as base, httpx.Client(base_url=base, timeout=30) as c:
            assert c.get("/readyz").status_code == 200 and c.get("/readyz").json()["store"] == "ok"
            os.kill(p.pid, signal.SIGSTOP)
            # the probe runs about once a second; 2 busy cores can stretch that (the promise is "by itself")
            _until(lambda: c.get("/readyz").status_code == 503, 15.0)
            down = c.get("/readyz").json()
            assert down["ready"] is False and "127.0.0.1" in down["store"]
            v = c.get("/readyz?scope=verdicts")
            assert v.status_code == 200 and v.json()["store"] == "down" and v.json()["scope"] == "verdicts"
            os.kill(p.pid, signal.SIGCONT)
            _until(lambda: c.get("/readyz").status_code == 200, 15.0)
            assert c.get("/readyz").json()["store"] == "ok"
    finally:
        os.kill(p.pid, signal.SIGCONT)
        p.terminate()
        p.wait(10)
