"""#56 item 4: concurrency and state. Every store, the memory one included, under many threads: exact counts,
never a lost update; a monitor that reached void stays void whatever it is fed, until a reset."""
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citebound.calibration.state import open_store
from citebound.guarding.card import GuaranteeKeeper


def _hammer(store, threads=8, each=200):
    def bump(s):
        n = (s or {}).get("n", 0)
        time.sleep(0)  # let another thread run between the read and the write, as a slow backend would
        return {"n": n + 1}

    def work():
        for _ in range(each):
            store.update("n", bump)
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return store.get("n")["n"]


@pytest.mark.parametrize("url", ["memory://", "sqlite:///{tmp}/s.sqlite"])
def test_no_update_is_lost_under_many_threads(tmp_path, url):
    """8 threads x 200 read-compute-write updates: exactly 1,600 (a read outside the lock loses some)."""
    store = open_store(url.format(tmp=tmp_path))
    assert _hammer(store) == 1600


def test_no_redis_update_is_lost_under_many_threads(tmp_path):
    """Redis, 8 threads x 60 updates of one key: exactly 480. The read and the write straddle a yield, so writers
    meet each other's writes (WATCH fails) and must retry, not give up."""
    pytest.importorskip("redis", reason="the [redis] extra")
    from test_state import _redis

    p, url = _redis(tmp_path)
    try:
        assert _hammer(open_store(url), each=60) == 480
    finally:
        p.terminate()
        p.wait(10)


def _keeper(seed=0):
    rng = np.random.default_rng(seed)
    cal = {"alpha": 0.1, "tau": 0.5, "delta": 0.1, "verifier": "x", "verifier_hash": "h",
           "monitor_scores": list(rng.uniform(0, 1, 300)), "monitor_scores_unsupported": list(rng.uniform(0, 0.5, 200)),
           "monitor_scores_supported": list(rng.uniform(0.5, 1, 100))}
    return GuaranteeKeeper(cal)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(scores=st.lists(st.floats(0, 1), max_size=200), labels=st.lists(st.tuples(st.integers(0, 5), st.integers(5, 20)),
                                                                         max_size=5))
def test_a_void_monitor_stays_void_until_a_reset(scores, labels):
    k = _keeper()
    assert k.labels(10, 10) == "void"  # every labelled unsupported citation passed: the miss rate is rejected
    k.observe_scores(scores)
    for missed, n in labels:
        k.labels(missed, n)
    assert k.state == "void"
    k.reset("tester")
    assert k.state == "ok"


def test_a_suspect_monitor_does_not_go_back_to_ok_and_void_beats_suspect():
    k = _keeper(1)
    k.observe_scores([0.99] * 600)  # far above every calibration score: the alarm fires
    assert k.state == "suspect"
    k.observe_scores([0.1] * 600)
    assert k.state == "suspect"
    k.labels(10, 10)
    assert k.state == "void"
    k.observe_scores([0.99] * 10)
    assert k.state == "void"


def test_an_alarm_after_void_leaves_it_void():
    k = _keeper(2)
    k.labels(10, 10)
    k.observe_scores([0.99] * 600)  # the alarm's stream, arriving after the labels voided it
    assert k.state == "void"
