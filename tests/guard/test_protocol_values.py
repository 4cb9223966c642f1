"""The full-passage protocol's numbers (#56, round 52): which window's failure leaves a pair unscored, a window
without a score beside scored ones, the claim cap, blank claims and passages together, a verifier's own windowing,
and the unit counts, each worked out by hand with a recording verifier (a window scores 0.8, 0.1 where it lacks
the claim's first word; ``FAIL`` in a window is a failure with a note, ``NAN`` a score it could not give)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from citebound.verifiers.base import ScoreCache, score_pairs, verifier_windowing


class Recorder:
    name, binary, batch_size = "recorder", False, 8

    def __init__(self):
        self.units: list[tuple[str, str]] = []

    def judge(self, claims, windows):
        self.units += list(zip(claims, windows))
        score = np.array([math.nan if "NAN" in w else 0.8 if c.split()[0] in w else 0.1 for c, w in zip(claims, windows)])
        notes = ["the server failed" if "FAIL" in w else "" for w in windows]
        return score, np.nan_to_num(score) > 0.5, notes


def passage(at: int, word: str, n: int = 1000) -> str:
    """``n`` filler characters with ``word`` written at ``at``: windows (0, 600), (300, 900), (400, 1000)."""
    text = list("." * n)
    text[at:at + len(word)] = word
    return "".join(text)


@pytest.mark.parametrize("at,reason,score", [
    (950, "unscored: the server failed", math.nan),  # only the last window holds FAIL: the pair is not judged
    (100, "unscored: the server failed", math.nan),  # only the first
    (350, "unscored: the server failed", math.nan),  # the first two
])
def test_a_failure_in_any_window_leaves_the_pair_unscored(at, reason, score):
    ps = score_pairs(Recorder(), ["aspirin works"], [passage(at, "FAIL") + " aspirin"], progress=False)
    assert ps.reason == [reason] and math.isnan(ps.score[0]) and not ps.verdict[0]


def test_a_window_without_a_score_beside_scored_ones_leaves_the_best_of_them():
    """NAN in the first window only (at 100): windows 2 and 3 score; 'aspirin' at 980 is in window 3 only."""
    text = passage(100, "NAN")[:980] + "aspirin" + "." * 13
    ps = score_pairs(Recorder(), ["aspirin works"], [text], progress=False)
    assert ps.reason == [""] and ps.score[0] == 0.8 and ps.best_window[0] == 2 and bool(ps.verdict[0])
    every = score_pairs(Recorder(), ["aspirin works"], ["NAN" * 10], progress=False)
    assert every.reason == ["unscored"] and math.isnan(every.score[0])


def test_the_claim_is_capped_before_it_is_judged():
    v = Recorder()
    score_pairs(v, ["aspirin " * 100], ["aspirin"], progress=False, claim_cap=600)
    assert [len(c) for c, _ in v.units] == [600]


@pytest.mark.parametrize("claim,text,reason,score", [
    ("", "", "missing_claim", math.nan),  # neither: no claim is the reason, and there is no score
    ("", "Aspirin works.", "missing_claim", math.nan),
    ("aspirin works", "", "empty_passage", 0.0),
    ("aspirin works", "   ", "empty_passage", 0.0),
])
def test_blank_claims_and_passages(claim, text, reason, score):
    ps = score_pairs(Recorder(), [claim], [text], progress=False)
    assert ps.reason == [reason] and (math.isnan(ps.score[0]) if math.isnan(score) else ps.score[0] == score)


def test_a_verifiers_own_windowing_wins_over_the_protocols():
    assert verifier_windowing({"windowing": {"stride": 600, "max_windows": 1}},
                              {"window_chars": 600, "stride": 300, "claim_cap": 600}) == {
        "window_chars": 600, "stride": 600, "claim_cap": 600, "max_windows": 1}


def test_units_are_counted_once_and_windows_per_pair():
    """Two pairs of one claim and one 1000-character passage whose windows are all alike: 3 windows a pair, 1
    distinct unit, judged once."""
    v = Recorder()
    ps = score_pairs(v, ["aspirin works"] * 2, ["." * 1000] * 2, progress=False)
    assert ps.n_units == 1 and ps.n_windows.tolist() == [3, 3] and len(v.units) == 1


def test_a_cached_unit_without_a_score_comes_back_as_nan(tmp_path):
    c = ScoreCache(tmp_path / "c.sqlite")
    c.put_many([("k0", math.nan, False), ("k1", 0.25, True)])
    got = c.get_many(["k0", "k1", "k2"])
    assert math.isnan(got["k0"][0]) and got["k0"][1] is False and got["k1"] == (0.25, True) and "k2" not in got
    c.close()
