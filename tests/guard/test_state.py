"""One durable monitor per calibration and group: SQLite shared by processes on one node, Redis by
replicas; no lost update under concurrent writers, nothing acknowledged lost to kill -9, and the same
monitor seen by every worker of `citebound serve --workers 2`."""
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from citebound.calibration.state import SqliteStore, StoreUnavailable, open_store
from citebound.guarding.guard import Guard
from tests.service_helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "a-test-admin-token-0123456789"

WRITER = """
import sys
from citebound.calibration.state import open_store
store = open_store(sys.argv[1])
for i in range(int(sys.argv[2])):
    store.update("counter", lambda st: {"n": (st or {}).get("n", 0) + 1})
    print(i + 1, flush=True)   # acknowledged: committed before this line
"""


def _writers(url, procs, each):
    ps = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(each)], stdout=subprocess.DEVNULL, cwd=ROOT)
          for _ in range(procs)]
    for p in ps:
        assert p.wait(120) == 0
    return open_store(url).get("counter")["n"]


def test_sqlite_loses_no_update_under_concurrent_processes(tmp_path):
    assert _writers(str(tmp_path / "s.sqlite"), 4, 150) == 600


def _rollback_file_with_its_write_lock_held(path, for_s):
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t VALUES (1)")
    timer = threading.Timer(for_s, lambda: other.execute("COMMIT"))
    timer.start()
    return timer


def test_opening_a_file_another_process_is_writing_waits_for_its_lock(tmp_path):
    """While another connection holds the write lock of a file not yet in WAL (a process creating it), SQLite
    answers the switch to WAL with "locked" at once instead of waiting; the store waits as for any lock (four
    writers opening one new file failed this way once in CI)."""
    path = tmp_path / "s.sqlite"
    timer = _rollback_file_with_its_write_lock_held(path, 0.5)
    t0 = time.monotonic()
    store = SqliteStore(str(path))
    waited = time.monotonic() - t0
    timer.join()
    assert waited >= 0.45
    assert store.update("k", lambda st: {"n": 1}) == {"n": 1} and store.get("k") == {"n": 1}
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_write_lock_held_past_busy_s_is_unavailable_after_busy_s(tmp_path):
    path = tmp_path / "s.sqlite"
    timer = _rollback_file_with_its_write_lock_held(path, 3.0)
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable, match="locked"):
        SqliteStore(str(path), busy_s=0.4)
    waited = time.monotonic() - t0
    timer.join()
    assert 0.35 <= waited < 2.0


def _kill_9_midway(url):
    p = subprocess.Popen([sys.executable, "-c", WRITER, url, "100000"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    acked = 0
    while acked < 300:
        acked = int(p.stdout.readline())
    p.send_signal(signal.SIGKILL)
    rest = [int(x) for x in p.stdout.read().split()]
    p.wait(10)
    acked = max([acked, *rest])
    n = open_store(url).get("counter")["n"]
    assert acked <= n <= acked + 1  # every acknowledged update is there; at most the one in flight besides


def test_kill_9_loses_no_acknowledged_update(tmp_path):
    _kill_9_midway(f"sqlite:///{tmp_path / 's.sqlite'}")


def test_two_guards_on_one_file_share_one_monitor(tmp_path):
    state = str(tmp_path / "m.sqlite")
    a, b = Guard("lexical", state=state), Guard("lexical", state=state)
    _, r = a.guard("Mitochondria produce ATP [1].", ["Mitochondria produce ATP in cells."])
    assert r.guarantee_card["monitor"]["deployed_scores"] == 1
    b.keeper.labels(9, 10)
    assert a.keeper.state == "void" and a.keeper.card()["monitor"]["labels"]["missed"] == 9
    _, r = a.guard("Mitochondria produce ATP [1].", ["Mitochondria produce ATP in cells."])
    assert r.guarantee_card["monitor"]["deployed_scores"] == 2 and r.guarantee_card["monitor"]["state"] == "void"
    # a restart (a new guard on the same file) remembers, and a reset starts afresh with a history
    c = Guard("lexical", state=state)
    assert c.keeper.state == "void"
    c.keeper.reset("tester")
    card = a.keeper.card()["monitor"]
    assert card["state"] == "ok" and card["deployed_scores"] == 0 and card["history"][-1]["by"] == "tester"
    assert card["history"][-1]["was"] == "void" and card["history"][-1]["labels"] == [9, 10]
    assert isinstance(open_store(state), SqliteStore)


@pytest.mark.slow
def test_two_workers_share_one_sqlite_monitor_over_http(tmp_path):
    (tmp_path / "token").write_text(ADMIN + "\n")
    port = free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    srv = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", "lexical", "--port",
                            str(port), "--workers", "2", "--state", str(tmp_path / "m.sqlite"), "--admin-token-file",
                            str(tmp_path / "token")], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        body = {"answer": "Mitochondria produce ATP [1].", "passages": ["Mitochondria produce ATP in cells."]}
        with httpx.Client(timeout=30) as c:  # new connections, so both workers answer
            for _ in range(20):
                c.post(f"{url}/v1/guard", json=body, headers={"Connection": "close"})
            auth = {"Authorization": f"Bearer {ADMIN}", "Connection": "close"}
            assert c.post(f"{url}/v1/monitor/labels", json={"missed": 9, "unsupported": 10}, headers=auth).status_code == 200
            seen = [c.get(f"{url}/v1/monitor", headers={"Connection": "close"}).json()["default"]["monitor"]
                    for _ in range(20)]
        assert {m["state"] for m in seen} == {"void"}
        assert {m["deployed_scores"] for m in seen} == {20}
    finally:
        srv.terminate()
        srv.wait(30)


def start_redis(tmp_path, *args):
    """A redis-server with no persistence, in ``tmp_path``, with ``args`` (a port, a password, a socket)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed (.ci/run installs Debian's redis-server)")
    return subprocess.Popen([exe, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path),
                             *args], stdout=subprocess.DEVNULL)


def _serves(p, port: int) -> bool:
    """Whether the redis-server ``p`` is the one answering on ``port``: the port is picked before the server
    binds it, and a run beside this one may take it in between (then ``p`` exits, and another server answers)."""
    for _ in range(100):
        if p.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2) as c:
                c.settimeout(2)
                c.sendall(b"INFO server\r\n")
                got = b""
                while b"process_id:" not in got or not got.endswith(b"\r\n"):
                    more = c.recv(65536)
                    if not more:
                        break
                    got += more
            return f"process_id:{p.pid}\r\n".encode() in got
        except OSError:
            time.sleep(0.05)
    return False


def _redis(tmp_path):
    for _ in range(5):
        port = free_port()
        p = start_redis(tmp_path, "--port", str(port))
        if _serves(p, port):
            return p, f"redis://127.0.0.1:{port}/0"
        p.kill()
        p.wait(10)
    pytest.fail("redis-server did not start on a free loopback port in five tries")


@pytest.mark.slow
def test_redis_replicas_lose_no_update_and_share_one_monitor(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    p, url = _redis(tmp_path)
    try:
        assert _writers(url, 4, 100) == 400
        a, b = Guard("lexical", state=url), Guard("lexical", state=url)
        a.guard("Mitochondria produce ATP [1].", ["Mitochondria produce ATP in cells."])
        b.keeper.labels(9, 10)
        card = a.keeper.card()["monitor"]
        assert (card["state"], card["deployed_scores"], card["labels"]["missed"]) == ("void", 1, 9)
        assert json.loads(json.dumps(card))  # the card is plain JSON
        _kill_9_midway(url.replace("/0", "/1"))  # a replica killed mid-update: its acknowledged updates stay
    finally:
        p.terminate()
        p.wait(10)


def test_each_retry_of_the_wal_switch_waits_5_to_25_ms(tmp_path, monkeypatch):
    """A file that answers "locked" four times: the store retries after 5 ms plus up to 20 ms drawn (draws 0,
    0.001, 0.5 and 0.999 give 5, 5.02, 15 and 24.98 ms), never longer, then switches."""
    import citebound.calibration.state as state_mod

    store = SqliteStore(str(tmp_path / "s.sqlite"))
    slept, draws = [], iter([0.0, 0.001, 0.5, 0.999])
    # the store's own names only: a global patch would also change every other thread's time.sleep
    monkeypatch.setattr(state_mod, "time", SimpleNamespace(sleep=slept.append, monotonic=time.monotonic))
    monkeypatch.setattr(state_mod, "random", SimpleNamespace(random=lambda: next(draws)))

    class LockedFourTimes:
        tries = 0

        def execute(self, sql):
            self.tries += 1
            if self.tries <= 4:
                raise sqlite3.OperationalError("database is locked")

    db = LockedFourTimes()
    store._to_wal(db)
    assert db.tries == 5 and slept == pytest.approx([0.005, 0.00502, 0.015, 0.02498])
