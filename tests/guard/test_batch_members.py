"""#56 item 2: a merged batch, observed. Three requests of unequal sizes share one verifier call; one gives up
while the call runs. A recording scorer shows which requests ran together, that the shared call stopped for
the one that left (within a check's step, not at the call's end), that the others were scored again without
it, and that each got its own scores, worked out by hand."""
import threading
import time

import pytest

from citebound.scoring import deadline

pytest.importorskip("fastapi")
from citebound.serving import UnitBatcher  # noqa: E402

STEP = 0.05


class Recording:
    """The lexical verifier behind a slow call (20 steps of 50 ms, checking the deadline between steps) that
    records each call's claims, and whether it finished or was stopped, and when."""
    name, hash, windowing = "rec", "r" * 16, {"window_chars": 600, "stride": 300, "claim_cap": 600}

    def __init__(self, steps: int = 20):
        from citebound.scoring.loader import load_scorer
        self.inner, self.steps, self.calls = load_scorer("lexical"), steps, []

    def score(self, claims, passages):
        call = {"claims": list(claims), "outcome": "running", "t": None}
        self.calls.append(call)
        try:
            for _ in range(self.steps):
                time.sleep(STEP)
                deadline.check()
        except deadline.Cancelled:
            call["outcome"], call["t"] = "stopped", time.perf_counter()
            raise
        call["outcome"], call["t"] = "finished", time.perf_counter()
        return self.inner.score(claims, passages)


# the lexical score is the share of the claim's content terms found in the passage: made-up words, so no
# stemming or stop word touches them. Each request's expected scores, by hand:
P = "zorp quix blen"
REQS = {
    "A": (["zorp quix.", "zorp vand."], [P, P]),                      # 2/2, 1/2
    "B": (["blen zorp quix.", "vand."], [P, P]),                      # the one that leaves
    "C": (["quix mulk trel.", "trel.", "blen."], [P, P, P]),          # 1/3, 0/1, 1/1
}
WANT = {"A": [1.0, 0.5], "C": [1 / 3, 0.0, 1.0]}


def _three_requests_one_leaving(leave: list[str]):
    """Runs A, B and C into one batch of a recording scorer; after 0.5 s the requests in ``leave`` give up.
    Returns (the scorer, each request's scores or Cancelled, when each ended, when they gave up)."""
    rec = Recording()
    b = UnitBatcher(rec, max_units=100, max_wait_ms=300)
    tokens = {k: deadline.WorkToken(None) for k in REQS}
    out, ended = {}, {}

    def call(name):
        with tokens[name].active():
            try:
                out[name] = list(b.score(*REQS[name]).score)
            except deadline.Cancelled as e:
                out[name] = e
            ended[name] = time.perf_counter()

    threads = [threading.Thread(target=call, args=(k,)) for k in REQS]
    for t in threads:
        t.start()
        time.sleep(0.01)
    time.sleep(0.5)  # the batch closed after 300 ms and its call runs (1 s)
    t_cancel = time.perf_counter()
    for k in leave:
        tokens[k].cancel()
    for t in threads:
        t.join(10)
    b.close()
    return rec, out, ended, t_cancel


def test_the_shared_call_stops_for_the_request_that_left_and_the_others_get_their_own_scores():
    rec, out, ended, t_cancel = _three_requests_one_leaving(["B"])
    first, second = rec.calls[0], rec.calls[1]
    # ran together: one call with all six pairs, in arrival order
    assert first["claims"] == REQS["A"][0] + REQS["B"][0] + REQS["C"][0]
    # the shared call stopped for B within a step or two, long before its 1 s were up
    assert first["outcome"] == "stopped" and first["t"] - t_cancel < 3 * STEP
    assert isinstance(out["B"], deadline.Cancelled) and ended["B"] - t_cancel < 0.5
    # the others were scored again, without B's pairs, to the end
    assert second["claims"] == REQS["A"][0] + REQS["C"][0] and second["outcome"] == "finished"
    assert len(rec.calls) == 2
    # each its own scores, in its own order
    assert out["A"] == pytest.approx(WANT["A"], abs=1e-9) and out["C"] == pytest.approx(WANT["C"], abs=1e-9)


def test_every_member_that_left_is_stopped_and_none_is_scored_again():
    """Two of three leave; the call stops once, and only the one that stayed is scored again."""
    rec, out, _, _ = _three_requests_one_leaving(["A", "B"])
    assert [c["outcome"] for c in rec.calls] == ["stopped", "finished"]
    assert rec.calls[1]["claims"] == REQS["C"][0]
    assert isinstance(out["A"], deadline.Cancelled) and isinstance(out["B"], deadline.Cancelled)
    assert out["C"] == pytest.approx(WANT["C"], abs=1e-9)
