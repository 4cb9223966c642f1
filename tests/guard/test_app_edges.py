"""The service app's own edges (citebound/serving/app.py), each worked out by hand: the JSON depth bound at
exactly its limit and a string's escaped quote, the liveness probes answering while the service drains, a refused
body counted under its route (never under whatever URL a client sent), and the secrets file that --workers
hands its workers: readable by this user only, and gone when the service ends."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from citebound.serving.app import MAX_JSON_DEPTH, json_depth, json_problem

ROOT = Path(__file__).resolve().parents[2]


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("body,depth", [
    (nested(MAX_JSON_DEPTH), 64), (nested(MAX_JSON_DEPTH + 1), 65), (b'{"a": 1}', 1), (b"1", 0),
    (b'{"a\\"[[[": 1}', 1),  # an escaped quote does not end the string: its brackets are text
    (b'["\\\\", [1]]', 2),  # an escaped backslash does: the string ends at the next quote
    (b'["[[[", "]]]]"]', 1), (b'{"x": "{\\"y\\": [["}', 1),
])
def test_json_depth_skips_every_string_and_counts_every_level(body, depth):
    assert json_depth(body) == depth


def test_a_body_exactly_at_the_depth_limit_is_read_and_one_deeper_refused():
    assert json_problem(nested(64)) is None
    assert json_problem(nested(65)) == "the JSON nests 65 levels deep; the limit is 64"
    assert json_problem(b'{"a\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[": 1}') is None


@pytest.fixture
def served():
    """The app on uvicorn in this process, with its state at hand."""
    from citebound.serving import create_app
    from citebound.serving.state import ServeConfig
    from tests.service_helpers import serving

    app = create_app(ServeConfig(verifier="lexical", reattributor=None))
    with serving(app) as url:
        yield url, app.state.citebound


def test_while_draining_the_liveness_probes_answer_and_the_routes_refuse(served):
    """Past the drain's grace: /readyz 503 (send nothing more), /v1/guard 503, but /healthz and /livez 200 (a
    liveness probe that failed now would kill the pod before its in-flight requests finish)."""
    url, state = served
    state.draining, state.draining_since = True, time.monotonic() - 60
    got = {p: httpx.get(url + p, timeout=10).status_code for p in ("/healthz", "/livez", "/readyz")}
    got["/v1/guard"] = httpx.post(url + "/v1/guard", json={"answer": "A [1].", "passages": ["a"]}, timeout=10).status_code
    assert got == {"/healthz": 200, "/livez": 200, "/readyz": 503, "/v1/guard": 503}
    state.draining = False


def test_each_request_is_timed_as_the_seconds_it_took(served):
    """Two guard requests, timed by the client: the latency histogram counts 2 under /v1/guard, and its sum (the
    service's own seconds) is positive and no more than what the client waited in all."""
    url, _ = served
    t0 = time.perf_counter()
    for _ in range(2):
        r = httpx.post(url + "/v1/guard", json={"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]},
                       timeout=30)
        assert r.status_code == 200
    waited = time.perf_counter() - t0
    got = {}
    for line in httpx.get(url + "/metrics", timeout=10).text.splitlines():
        for what in ("count", "sum"):
            if line.startswith(f'citebound_request_seconds_{what}{{endpoint="/v1/guard"}}'):
                got[what] = float(line.rsplit(" ", 1)[1])
    assert got["count"] == 2.0 and 0 < got["sum"] <= waited


def test_a_refused_body_is_counted_under_its_route_never_under_the_url_sent(served):
    url, state = served
    big = b"x" * (state.cfg.limits.max_request_bytes + 1)
    for path in ("/v1/guard", "/v1/made-up-by-a-client", "/anything/else"):
        assert httpx.post(url + path, content=big, timeout=30).status_code == 413
    metrics = httpx.get(url + "/metrics", timeout=10).text
    lines = [x for x in metrics.splitlines() if x.startswith("citebound_requests_total{")]
    assert 'citebound_requests_total{endpoint="/v1/guard",status="413"} 1.0' in lines
    assert 'citebound_requests_total{endpoint="other",status="413"} 2.0' in lines
    assert "made-up" not in metrics and "/anything" not in metrics


def test_a_probe_with_a_body_past_the_limit_is_answered_not_refused(served):
    """GET, HEAD and OPTIONS never read a body, so the body limit does not apply to them: a probe a load balancer
    sends with a stray body past the limit gets its answer (the POST beside it is refused)."""
    url, state = served
    big = b"x" * (state.cfg.limits.max_request_bytes + 1)
    assert httpx.request("GET", url + "/healthz", content=big, timeout=30).status_code == 200
    assert httpx.request("OPTIONS", url + "/healthz", content=big, timeout=30).status_code != 413
    assert httpx.post(url + "/v1/guard", content=big, timeout=30).status_code == 413


def _descendants(pid: int) -> list[int]:
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_text(errors="replace")
    except OSError:
        return {}
    return dict(x.split("=", 1) for x in raw.split("\0") if "=" in x)


def test_the_workers_secrets_file_is_this_users_alone_and_gone_when_the_service_ends(tmp_path):
    """--workers 2: the config (which holds the admin token) reaches the workers as a file named in the
    environment; it must be mode 0600 in a 0700 folder while the service runs, and removed when it stops."""
    from tests.service_helpers import free_port, wait_ready

    token = "a-test-admin-token-0123456789"
    (tmp_path / "token").write_text(token + "\n")
    port = free_port()
    srv = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", "lexical",
                            "--no-reattribute", "--port", str(port), "--workers", "2", "--state",
                            str(tmp_path / "m.sqlite"), "--admin-token-file", str(tmp_path / "token")],
                           cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_ready(f"http://127.0.0.1:{port}", attempts=1200)
        named = {e["CITEBOUND_SERVE_CONFIG_FILE"] for e in map(_environ, _descendants(srv.pid))
                 if "CITEBOUND_SERVE_CONFIG_FILE" in e}
        assert len(named) == 1  # the workers' (a process's own environment file shows what it started with)
        path = Path(named.pop())
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.stat().st_uid == os.getuid() and token in path.read_text()
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(60)
    assert not path.exists() and not path.parent.exists()


@pytest.mark.parametrize("upstream", [None, "http://127.0.0.1:9"])
def test_the_upstream_client_is_closed_at_shutdown_and_a_service_without_one_shuts_down_cleanly(upstream):
    """With an upstream, the service's HTTP client to it is open while the service runs and closed when it stops;
    without one there is no client, and stopping raises nothing."""
    from starlette.testclient import TestClient

    from citebound.serving.app import create_app
    from citebound.serving.state import ServeConfig

    app = create_app(ServeConfig(verifier="lexical", upstream=upstream))
    with TestClient(app) as c:
        assert c.get("/healthz").status_code == 200
        http = app.state.citebound.http
        assert (http is None) == (upstream is None) and (http is None or not http.is_closed)
    assert http is None or http.is_closed
