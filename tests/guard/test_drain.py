"""SIGTERM on a real ``citebound serve`` process (citebound/serving/app.py's drain), the two ends no other test
reaches: with nothing in flight the service still serves what comes within the grace (it was sent before the load
balancer saw /readyz turn 503), and past the drain timeout the work still running is cancelled, not left to run
through the exit."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from test_service import SLOW_ANSWER, SLOW_PASSAGES, server_process

from tests.service_helpers import free_port, wait_ready

ROOT = Path(__file__).resolve().parents[2]


def test_with_nothing_in_flight_a_request_within_the_grace_is_served_and_the_exit_waits_for_the_grace():
    with server_process("--no-reattribute", "--drain-grace", "2") as (proc, url):
        assert httpx.get(url + "/readyz", timeout=10).status_code == 200
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        time.sleep(0.3)
        assert httpx.get(url + "/readyz", timeout=10).status_code == 503
        r = httpx.post(url + "/v1/guard", json={"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]},
                       timeout=10)
        assert r.status_code == 200 and r.json()["report"]["n_citations"] == 1
        assert proc.wait(timeout=60) == 0
        assert time.monotonic() - t0 >= 1.9  # the grace, then the exit


SERVE = """
import sys, uvicorn
from citebound.serving import create_app
from citebound.serving.state import ServeConfig
app = create_app(ServeConfig(verifier="lexical", reattributor="verifier", drain_grace_s=0.0, drain_timeout_s=1.0,
                             request_timeout_s=600.0))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", timeout_graceful_shutdown=30)
"""


def test_past_the_drain_timeout_the_work_still_running_is_cancelled():
    """A request of ~15 s of work (every passage proposed for 1,200 failing citations) in flight at SIGTERM, with a
    drain timeout of 1 s: its work is cancelled (a 504, not the 200 it would get by running on through uvicorn's 30 s
    graceful shutdown), and the process exits well before the work would have ended."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    out = {}
    try:
        assert wait_ready(url, attempts=1200)
        slow = threading.Thread(target=lambda: out.update(r=httpx.post(
            url + "/v1/guard", json={"answer": SLOW_ANSWER, "passages": SLOW_PASSAGES}, timeout=120)))
        slow.start()
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        slow.join(120)
        answered = time.monotonic() - t0
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert out["r"].status_code == 504 and answered < 8
