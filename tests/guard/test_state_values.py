"""The state stores' answers, value by value: a Redis error's text cut to 200 characters (a server may say
anything), a stored state that is not JSON refused (never read as no state, which would forget an alarm), a
checked store as shared as what it checks, a --state folder or a file in a missing folder refused with what to give,
a probe's failure kept as the reason /readyz shows."""
import socket
import threading

import pytest

from citebound.calibration.state import CheckedStore, MemoryStore, SqliteStore, StateStore, StoreUnavailable, open_store


class _Babbler:
    """A TCP server that answers every command with a Redis error 5,000 characters long."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn):
        with conn:
            while conn.recv(65536):
                conn.sendall(b"-ERR " + b"x" * 5000 + b"\r\n")


def test_a_redis_errors_text_is_cut_to_200_characters():
    pytest.importorskip("redis", reason="the [redis] extra")
    srv = _Babbler()
    try:
        store = open_store(f"redis://127.0.0.1:{srv.port}/0")
        with pytest.raises(StoreUnavailable) as e:
            store.get("k")
    finally:
        srv.sock.close()
    msg = str(e.value)
    assert "ResponseError" in msg
    assert "x" * 194 in msg and "x" * 201 not in msg
    assert len(msg) < 300


@pytest.mark.parametrize("raw", ["not json", "[1, 2]", "7", '"s"', "{"])
def test_a_stored_state_that_is_no_json_object_is_refused_not_read_as_none(raw):
    m = MemoryStore()
    m._data["k"] = raw
    with pytest.raises(StoreUnavailable, match="not a state object"):
        m.get("k")
    with pytest.raises(StoreUnavailable, match="not a state object"):
        m.update("k", lambda st: {"n": 1})
    assert m._data["k"] == raw  # an update that cannot read the state writes nothing


def test_a_checked_store_is_as_shared_as_what_it_checks(tmp_path):
    sq = CheckedStore(SqliteStore(str(tmp_path / "s.sqlite")), every_s=60)
    mem = CheckedStore(MemoryStore(), every_s=60)
    try:
        assert (sq.shared, mem.shared) == (True, False)
        assert sq.url == f"sqlite:///{tmp_path / 's.sqlite'}"
    finally:
        sq.close()
        mem.close()


def test_a_state_folder_or_a_file_in_a_missing_folder_is_refused_with_what_to_give(tmp_path):
    with pytest.raises(ValueError, match=f"--state {tmp_path}: is a folder; give a file path in it"):
        open_store(str(tmp_path))
    missing = tmp_path / "no" / "s.sqlite"
    with pytest.raises(ValueError, match=f"the folder {tmp_path / 'no'} does not exist"):
        open_store(f"sqlite:///{missing}")


def test_a_failed_probe_is_the_reason_shown_until_a_probe_succeeds():
    class Flaky(StateStore):
        down = True

        def ping(self):
            if self.down:
                raise StoreUnavailable("redis://db:6379/0: ConnectionError: refused")

    inner = Flaky()
    c = CheckedStore(inner, every_s=60)
    try:
        assert (c.available, c.reason) == (False, "redis://db:6379/0: ConnectionError: refused")
        with pytest.raises(StoreUnavailable, match="ConnectionError: refused"):
            c.get("k")
        inner.down = False
        c._probe()
        assert (c.available, c.reason) == (True, "")
    finally:
        c.close()


def test_every_sqlite_connection_commits_to_disk_before_an_update_returns(tmp_path):
    """The SQLite store's durability: WAL, with every commit synced (synchronous=FULL, 2). WAL at NORMAL (1)
    would return from an update whose commit a power failure can still take back (kill -9 cannot: what
    tests/guard/test_state_concurrency.py checks). Each thread opens its own connection: each is checked."""
    store = SqliteStore(str(tmp_path / "m.sqlite"))
    store.update("k", lambda st: {"n": 1})
    seen = []

    def look():
        db = store._db()
        seen.append((db.execute("PRAGMA journal_mode").fetchone()[0], db.execute("PRAGMA synchronous").fetchone()[0]))

    look()
    t = threading.Thread(target=look)
    t.start()
    t.join()
    assert seen == [("wal", 2), ("wal", 2)]
