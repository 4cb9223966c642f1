"""The micro-batcher's choices, observed: when a batch closes (full at exactly max_units, every request in flight in
it, max_wait counted from its first job, not from each arrival), what its hook is told, what a job whose caller gave
up reaches (nothing), each job's own slice of every field, the scorer's configuration seen through it, and how
often the heap is trimmed. The scorer is a recording one: the batcher's input and output are what is checked."""
import threading
import time

import numpy as np
import pytest

from citebound.scoring import deadline
from citebound.verifiers.base import PairScores

pytest.importorskip("fastapi")
from citebound.serving import batcher as batcher_mod  # noqa: E402
from citebound.serving.batcher import BatchedScorer, UnitBatcher  # noqa: E402


class Echo:
    """Scores each pair from its claim alone, so every field tells which claim it belongs to: score 1/len(claim),
    verdict len even, best window len mod 3, n_windows len, reason the claim. Records each call's claims; a
    call can be held at a gate (the batcher's worker is then busy and jobs queue up)."""
    name, hash, windowing = "echo", "e" * 16, {"window_chars": 600, "stride": 300, "claim_cap": 600}
    cfg = {"name": "echo", "threshold": 0.25}

    def __init__(self, gate: threading.Event | None = None):
        self.calls, self.gate = [], gate

    def score(self, claims, passages):
        self.calls.append(list(claims))
        if self.gate is not None and len(self.calls) == 1:
            self.gate.wait(10)
        deadline.check()
        n = [len(c) for c in claims]
        return PairScores(np.array([1 / k for k in n]), np.array([k % 2 == 0 for k in n]), np.array([k % 3 for k in n]),
                          np.array(n), list(claims))


def _submit(b: UnitBatcher, claims: list[str], out: dict, key: str, token=None) -> threading.Thread:
    def run():
        try:
            if token is None:
                out[key] = b.score(claims, ["p"] * len(claims))
            else:
                with token.active():
                    out[key] = b.score(claims, ["p"] * len(claims))
        except deadline.Cancelled as e:
            out[key] = e
    t = threading.Thread(target=run)
    t.start()
    return t


def test_a_batch_that_holds_exactly_max_units_units_is_scored_at_once():
    """max_units 3, max_wait 3 s, no in-flight count: a job of 3 units fills the batch, so it is scored without
    waiting (under 1.5 s, against 3 s if the batch waited for a fourth unit)."""
    b = UnitBatcher(Echo(), max_units=3, max_wait_ms=3000)
    t0 = time.perf_counter()
    got = b.score(["a", "bb", "ccc"], ["p"] * 3)
    took = time.perf_counter() - t0
    b.close()
    assert list(got.reason) == ["a", "bb", "ccc"]
    assert took < 1.5


def test_a_batch_holding_every_request_in_flight_is_scored_at_once():
    """One request in flight, max_wait 3 s, max_units 100: its job is the whole batch, scored at once."""
    b = UnitBatcher(Echo(), max_units=100, max_wait_ms=3000, in_flight=lambda: 1)
    t0 = time.perf_counter()
    b.score(["a"], ["p"])
    took = time.perf_counter() - t0
    b.close()
    assert took < 1.5


def test_the_batch_hook_is_told_units_then_requests_and_each_job_gets_its_own_slice_of_every_field():
    """The worker is held on a first job ("g", 1 unit) while X (3 claims) and Y (2 claims of other lengths) queue;
    released, it takes X and Y as one batch (max_wait 0: both are already waiting). The hook hears (1, 1) then
    (5, 2): units, then requests. Y's fields are its own claims' (lengths 4 and 5): scores 1/4, 1/5; verdicts
    even, odd; best windows 1, 2; window counts 4, 5; reasons its claims; X's likewise (lengths 1, 2, 3)."""
    gate = threading.Event()
    rec, heard = Echo(gate), []
    b = UnitBatcher(rec, max_units=100, max_wait_ms=0, on_batch=lambda n, k: heard.append((n, k)))
    out: dict = {}
    t = _submit(b, ["g"], out, "g")
    while not rec.calls:
        time.sleep(0.01)
    tx = _submit(b, ["x", "xx", "xxx"], out, "X")
    time.sleep(0.1)
    ty = _submit(b, ["yyyy", "yyyyy"], out, "Y")
    time.sleep(0.2)
    gate.set()
    for th in (t, tx, ty):
        th.join(10)
    b.close()
    assert rec.calls == [["g"], ["x", "xx", "xxx", "yyyy", "yyyyy"]]
    assert heard == [(1, 1), (5, 2)]
    y, x = out["Y"], out["X"]
    assert list(y.score) == pytest.approx([1 / 4, 1 / 5]) and list(y.verdict) == [True, False]
    assert list(y.best_window) == [1, 2] and list(y.n_windows) == [4, 5] and list(y.reason) == ["yyyy", "yyyyy"]
    assert list(x.score) == pytest.approx([1, 1 / 2, 1 / 3]) and list(x.verdict) == [False, True, False]
    assert list(x.best_window) == [1, 2, 0] and list(x.n_windows) == [1, 2, 3] and list(x.reason) == ["x", "xx", "xxx"]


def test_a_job_whose_caller_gave_up_while_it_waited_never_reaches_the_scorer():
    """The worker is held on a first job; Z queues under a token and is cancelled while it waits; W queues
    after it. Released, the scorer sees W's claims and never Z's; Z's caller gets Cancelled, W its scores."""
    gate = threading.Event()
    rec = Echo(gate)
    b = UnitBatcher(rec, max_units=100, max_wait_ms=0)
    out: dict = {}
    tok = deadline.WorkToken(None)
    t = _submit(b, ["g"], out, "g")
    while not rec.calls:
        time.sleep(0.01)
    tz = _submit(b, ["zz"], out, "Z", token=tok)
    time.sleep(0.1)
    tw = _submit(b, ["www"], out, "W")
    time.sleep(0.1)
    tok.cancel()
    tz.join(10)
    gate.set()
    for th in (t, tw):
        th.join(10)
    b.close()
    assert rec.calls == [["g"], ["www"]]
    assert isinstance(out["Z"], deadline.Cancelled)
    assert list(out["W"].reason) == ["www"]


def test_a_request_already_past_its_deadline_is_refused_before_it_is_queued():
    """A token whose deadline passed (set 1 s in the past, never cancelled by hand): the call raises Cancelled
    and neither the queue hook nor the scorer hears of it."""
    rec, depths = Echo(), []
    b = UnitBatcher(rec, max_units=100, max_wait_ms=0, on_queue=depths.append)
    tok = deadline.WorkToken(-1.0)
    with tok.active(), pytest.raises(deadline.Cancelled):
        b.score(["late"], ["p"])
    time.sleep(0.2)
    b.close()
    assert rec.calls == [] and depths == []


def test_a_batch_waits_max_wait_from_its_first_job_not_from_each_arrival():
    """max_wait 1 s; five jobs arrive 0.6 s apart. The first batch closes 1 s after the first job: it holds the
    jobs that came at 0 and 0.6 s (2 requests; 3 at most under scheduling delays), never all five, as it would
    if each arrival restarted the wait."""
    heard = []
    b = UnitBatcher(Echo(), max_units=100, max_wait_ms=1000, on_batch=lambda n, k: heard.append(k))
    out: dict = {}
    threads = []
    for i in range(5):
        threads.append(_submit(b, ["j" * (i + 1)], out, str(i)))
        time.sleep(0.6)
    for th in threads:
        th.join(10)
    b.close()
    assert sum(heard) == 5
    assert 2 <= heard[0] <= 3


def test_the_batched_scorer_shows_its_verifiers_name_hash_windowing_and_configuration():
    inner = Echo()
    b = UnitBatcher(inner, max_units=10, max_wait_ms=0)
    s = BatchedScorer(inner, b)
    b.close()
    assert (s.name, s.hash, s.windowing, s.cfg) == ("echo", "e" * 16, inner.windowing, {"name": "echo", "threshold": 0.25})


def test_the_heap_is_trimmed_at_most_once_per_interval():
    """Two calls 0 s apart with a 60 s interval: one trim. The C library is replaced by a recorder of trims."""
    class Libc:
        trims = 0

        def malloc_trim(self, pad):
            Libc.trims += 1
            return 1

    saved = batcher_mod._LIBC, batcher_mod._LAST_TRIM[0]
    batcher_mod._LIBC, batcher_mod._LAST_TRIM[0] = Libc(), -1e9
    try:
        first, second = batcher_mod.release_memory(60.0), batcher_mod.release_memory(60.0)
    finally:
        batcher_mod._LIBC, batcher_mod._LAST_TRIM[0] = saved
    assert (first, second, Libc.trims) == (True, False, 1)


def test_a_process_that_never_closes_its_batcher_still_exits():
    """The worker waits on its queue for ever: it must not keep the interpreter alive once the program is done (a
    library user, or a service that dies before its shutdown step, never calls close)."""
    import subprocess
    import sys

    code = ("from citebound.serving.batcher import UnitBatcher\n"
            "from citebound.scoring.loader import load_scorer\n"
            "b = UnitBatcher(load_scorer('lexical'), 8, 5.0)\n"
            "print(b.score(['statins lower ldl'], ['statins lower ldl cholesterol']).score.tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[1.0]"
