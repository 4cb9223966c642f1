"""#53 item 3: readiness a load balancer can trust. With a real Redis that is stopped (SIGSTOP), resumed, killed
and started again under a running service: /readyz turns 503 within a stated bound and back to 200 by itself,
/livez and /healthz never wait on the store, guard requests go on (their cards say the monitor is unavailable),
a label post that cannot be stored is a 503 in JSON (never acknowledged and lost), and no response is a 500."""
import os
import signal
import subprocess
import time

import httpx
import pytest
from test_state import _redis

from citebound.serving import ServeConfig
from tests.service_helpers import running

ADMIN = "admin-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
BODY = {"answer": "Mitochondria produce ATP [1].", "passages": ["Mitochondria produce ATP in cells."]}
READY_BOUND_S = 4.0  # the probe runs every 1 s and waits at most 2 s for Redis


def _until(fn, limit_s):
    """Seconds until fn() is true (polled every 0.05 s); fails past limit_s."""
    t = time.perf_counter()
    while not fn():
        assert time.perf_counter() - t < limit_s, f"not within {limit_s} s"
        time.sleep(0.05)
    return time.perf_counter() - t


@pytest.mark.slow
def test_redis_stopped_resumed_killed_and_restarted_under_a_running_service(tmp_path):
    pytest.importorskip("redis", reason="the [redis] extra")
    p, url = _redis(tmp_path)
    statuses = []
    try:
        with running(ServeConfig(verifier="lexical", state=url, admin_token=ADMIN)) as base, \
                httpx.Client(base_url=base, timeout=30) as c:
            def call(method, path, **kw):
                r = c.request(method, path, **kw)
                statuses.append((path, r.status_code))
                return r

            assert call("GET", "/readyz").status_code == 200
            assert call("GET", "/readyz?scope=verdicts").json() == {"ready": True, "verifier": "lexical", "store": "ok",
                                                                   "scope": "verdicts"}
            assert call("POST", "/v1/guard", json=BODY).json()["report"]["guarantee_card"]["monitor"]["state"] == "ok"
            assert call("POST", "/v1/monitor/labels", json={"missed": 0, "unsupported": 3}, headers=AUTH).status_code == 200

            os.kill(p.pid, signal.SIGSTOP)  # hung: accepts nothing, answers nothing
            t_ready = _until(lambda: call("GET", "/readyz").status_code == 503, READY_BOUND_S)
            # a load balancer that keeps verdicts going while the store is down asks for the verdict routes only
            v = call("GET", "/readyz?scope=verdicts")
            assert v.status_code == 200 and v.json()["store"] == "down"
            assert call("GET", "/readyz?scope=everything").status_code == 422
            t = time.perf_counter()
            assert call("GET", "/livez").status_code == 200 and call("GET", "/healthz").status_code == 200
            assert time.perf_counter() - t < 0.5  # never waits on the store
            t = time.perf_counter()
            g = call("POST", "/v1/guard", json=BODY)
            assert g.status_code == 200 and time.perf_counter() - t < 1.0  # verdicts go on, without waiting
            card = g.json()["report"]["guarantee_card"]["monitor"]
            assert card["state"] == "unavailable" and "store cannot be read" in card["reason"]
            lab = call("POST", "/v1/monitor/labels", json={"missed": 9, "unsupported": 10}, headers=AUTH)
            assert lab.status_code == 503 and "nothing was recorded" in lab.json()["detail"]
            assert call("GET", "/v1/monitor").json()["default"]["monitor"]["state"] == "unavailable"
            assert 'state="unavailable"} 1.0' in call("GET", "/metrics").text

            os.kill(p.pid, signal.SIGCONT)
            t_back = _until(lambda: call("GET", "/readyz").status_code == 200, READY_BOUND_S)
            mon = call("GET", "/v1/monitor").json()["default"]["monitor"]
            assert mon["state"] == "ok" and mon["labels"]["unsupported"] == 3  # the refused post was not counted

            p.kill()
            p.wait(10)
            _until(lambda: call("GET", "/readyz").status_code == 503, READY_BOUND_S)
            assert call("POST", "/v1/guard", json=BODY).status_code == 200
            assert call("POST", "/v1/monitor/labels", json={"missed": 0, "unsupported": 1}, headers=AUTH).status_code == 503
            port = url.rsplit(":", 1)[1].split("/")[0]
            p = subprocess.Popen(["redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                  "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
            _until(lambda: call("GET", "/readyz").status_code == 200, READY_BOUND_S + 2)  # no restart of the service
            assert call("POST", "/v1/monitor/labels", json={"missed": 0, "unsupported": 1}, headers=AUTH).status_code == 200
    finally:
        p.kill()
        p.wait(10)
    assert t_ready <= READY_BOUND_S and t_back <= READY_BOUND_S
    assert not [s for s in statuses if s[1] >= 500 and s[1] != 503], statuses  # 503s only: never a 500


@pytest.mark.parametrize("row", [b"[1, 2]", b"not json", b'"a string"'])
def test_a_state_row_that_is_not_a_state_object_is_one_clear_error(tmp_path, row):
    import sqlite3

    from citebound.calibration.state import SqliteStore, StoreUnavailable

    s = SqliteStore(str(tmp_path / "m.sqlite"))
    s.update("k", lambda st: {"n": 1})
    db = sqlite3.connect(tmp_path / "m.sqlite")
    db.execute("UPDATE monitor_state SET value = ? WHERE key = 'k'", (row.decode(),))
    db.commit()
    with pytest.raises(StoreUnavailable, match="not a state object"):
        s.get("k")


@pytest.mark.parametrize("state,message", [
    ("redis://127.0.0.1:1/0", "does not answer"), ("sqlite://", "expected memory://"), ("ftp://x", "expected memory://"),
    ("memory://x", "expected memory://"), ("", "leave --state out"), ("/nonexistent/dir/m.sqlite", "does not exist"),
    ("{tmp}", "is a folder"), ("{tmp}/cal.json", "not a database"),
])
def test_bad_state_values_are_one_error_line(tmp_path, capsys, state, message):
    from citebound.cli.main import main

    (tmp_path / "cal.json").write_text('{"alpha": 0.1}')
    (tmp_path / "x.jsonl").write_text('{"answer": "A [1].", "passages": ["a"]}\n')
    for cmd in (["serve", "--state-wait", "0"], ["guard", "--input", str(tmp_path / "x.jsonl")]):
        assert main([*cmd, "--verifier", "lexical", "--state", state.format(tmp=tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, err


def test_workers_need_a_shared_state_and_the_port_a_valid_one(capsys):
    from citebound.cli.main import main

    assert main(["serve", "--workers", "2", "--state", "memory://"]) == 2
    assert "memory:// is one process's own" in capsys.readouterr().err
    assert main(["serve", "--port", "99999"]) == 2
    assert "--port must be from 1 to 65535" in capsys.readouterr().err


def test_sqlite_urls_relative_and_absolute(tmp_path, monkeypatch):
    """#56 boundary: sqlite:///rel.db is rel.db in the working folder, sqlite:////abs/x.db is /abs/x.db, and a
    plain path is itself (one slash more or less is another file)."""
    from citebound.calibration.state import open_store

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert open_store("sqlite:///rel.db").path == "rel.db" and (tmp_path / "rel.db").exists()
    assert open_store(f"sqlite:///{tmp_path}/sub/abs.db").path == f"{tmp_path}/sub/abs.db"
    assert (tmp_path / "sub" / "abs.db").exists()
    assert open_store("sub/plain.db").path == "sub/plain.db" and (tmp_path / "sub" / "plain.db").exists()


def test_a_state_file_that_is_no_database_is_refused_at_once_not_waited_for(tmp_path, capsys):
    """--state-wait is for a store that does not answer yet (Redis starting beside the service); a file that is not
    a SQLite database never will: refused in well under the 30 s wait, with SQLite's reason."""
    from citebound.cli.main import main

    (tmp_path / "cal.json").write_text('{"alpha": 0.1}')
    t0 = time.monotonic()
    assert main(["serve", "--state-wait", "30", "--verifier", "lexical", "--state", str(tmp_path / "cal.json")]) == 2
    assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert err.startswith("error: --state: the store does not answer") and "not a database" in err
