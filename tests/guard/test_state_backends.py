"""The state stores' backends at the edges a deployment meets (citebound/calibration/state.py): a Redis password
from the URL or from a file, never shown; a Redis reached over a unix socket; a failed update that must not keep
SQLite's write lock; and the --state spellings that name no store, refused rather than opened as a file."""
from __future__ import annotations

import time

import pytest
from test_state import start_redis

from citebound.calibration.state import SqliteStore, StoreUnavailable, open_store

SECRET = "s3cret-pw-0123"


def _until(check, seconds=10.0):
    end = time.monotonic() + seconds
    while True:
        try:
            return check()
        except StoreUnavailable:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def _bump(st):
    return {"n": (st or {}).get("n", 0) + 1}


@pytest.fixture
def redis_pw(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    from tests.service_helpers import free_port

    port = free_port()
    p = start_redis(tmp_path, "--port", str(port), "--requirepass", SECRET)
    yield port
    p.terminate()
    p.wait(10)


def test_a_redis_password_from_the_url_or_a_file_reaches_redis_and_never_shows(redis_pw):
    in_url = open_store(f"redis://:{SECRET}@127.0.0.1:{redis_pw}/0")
    assert _until(lambda: in_url.update("k", _bump)) == {"n": 1}
    from_file = open_store(f"redis://127.0.0.1:{redis_pw}/0", password=SECRET)  # what --state-password-file gives
    assert from_file.update("k", _bump) == {"n": 2} and from_file.get("k") == {"n": 2}
    assert SECRET not in in_url.url and SECRET not in from_file.url
    without = open_store(f"redis://127.0.0.1:{redis_pw}/0")  # no password: refused by Redis, said as unavailable
    with pytest.raises(StoreUnavailable):
        without.get("k")
    wrong = open_store(f"redis://:{SECRET}x@127.0.0.1:{redis_pw}/0")
    with pytest.raises(StoreUnavailable) as e:
        wrong.update("k", _bump)
    assert SECRET not in str(e.value) and f"127.0.0.1:{redis_pw}" in str(e.value)


def test_a_redis_over_a_unix_socket(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    sock = tmp_path / "redis.sock"
    p = start_redis(tmp_path, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700")
    try:
        store = open_store(f"unix://{sock}?db=2")
        assert _until(lambda: store.update("k", _bump)) == {"n": 1}
        assert store.update("k", _bump) == {"n": 2} and store.get("k") == {"n": 2}
    finally:
        p.terminate()
        p.wait(10)


def test_an_update_that_raises_releases_the_write_lock(tmp_path):
    """The update's function fails (a bug, a bad state): nothing is written, and the file's write lock is free at
    once for another process's store (busy_s 0.5) and for this store's next update."""
    path = str(tmp_path / "s.sqlite")
    a = SqliteStore(path)
    a.update("k", _bump)

    def boom(st):
        raise ValueError("no")
    with pytest.raises(ValueError):
        a.update("k", boom)
    other = SqliteStore(path, busy_s=0.5)
    assert other.update("k", _bump) == {"n": 2}
    assert a.update("k", _bump) == {"n": 3} and other.get("k") == {"n": 3}


@pytest.mark.parametrize("url", ["memory:", "memory:/", "sqlite:", "sqlite:rel.db", "sqlite://rel.db", "sqlite://",
                                 "ftp://x/y", "   "])
def test_a_state_url_that_names_no_store_is_refused_not_opened_as_a_file(tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="expected memory://, sqlite:///PATH, a file path or redis://"):
        open_store(url)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url,file", [("rel.db", "rel.db"), ("sqlite:///rel.db", "rel.db"), ("sub/x.db", "sub/x.db")])
def test_a_relative_path_opens_a_file_under_the_working_folder(tmp_path, monkeypatch, url, file):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    open_store(url).update("k", _bump)
    assert (tmp_path / file).is_file()
