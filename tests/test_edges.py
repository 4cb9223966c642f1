"""Ties and edges wherever a threshold is compared; expected values worked out by hand."""
import math

import numpy as np
import pytest

from citeguard.analysis import random_recall, rank_hits
from citeguard.conformal import ConformalGuard, conformal_rank, conformal_threshold, split_coverage


@pytest.mark.parametrize("n,g,k,expected", [
    (4, 1, 2, 1 - 3 / 6),        # 1 - C(3,2)/C(4,2)
    (5, 2, 1, 2 / 5),            # one draw, 2 gold of 5
    (3, 1, 3, 1.0),              # k = n: the gold one is always in
    (2, 1, 5, 1.0),              # k > n with a gold passage
    (3, 0, 2, 0.0),              # no gold passage: never a hit
    (2, 0, 5, 0.0),              # no gold and k > n (was 1.0)
])
def test_random_recall_by_hand(n, g, k, expected):
    assert random_recall([n], [g], k) == pytest.approx(expected)


def test_rank_hits_ties_and_order():
    import pandas as pd
    df = pd.DataFrame({"sentence_id": [0, 0, 0, 1, 1], "score": [0.9, 0.5, 0.1, 0.2, 0.8],
                       "label": [0, 1, 0, 1, 0]})
    h = rank_hits(df, "score", [1, 2])
    # sentence 0: best-first order 0.9 (no), 0.5 (gold) -> hit@1 False, hit@2 True; sentence 1: 0.8 (no), 0.2 (gold)
    assert h["hit@1"].tolist() == [False, False] and h["hit@2"].tolist() == [True, True]
    assert h["n_candidates"].tolist() == [3, 2] and h["n_gold"].tolist() == [1, 1]


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.1])
def test_alpha_outside_open_unit_interval_rejected(alpha):
    with pytest.raises(ValueError, match="alpha must be in"):
        ConformalGuard(alpha=alpha)
    with pytest.raises(ValueError, match="alpha must be in"):
        conformal_rank(10, alpha)


def test_threshold_ties_and_small_n():
    # n = 9, alpha = 0.1: k = ceil(10 * 0.9) = 9 -> the largest; scores with ties
    neg = [0.1, 0.2, 0.2, 0.3, 0.4, 0.4, 0.5, 0.6, 0.6]
    g = ConformalGuard(alpha=0.1).calibrate(neg + [0.95], [0] * 9 + [1])
    assert (g.k, g.tau, g.n_unsupported) == (9, 0.6, 9)
    # flag iff score <= tau: exactly tau is flagged, just above is not; NaN is flagged
    assert g.predict([0.6, 0.6000001, float("nan"), 0.0]).tolist() == [True, False, True, True]
    # n_cal smaller than the rank k: tau = +inf, everything flagged
    with pytest.warns(UserWarning, match="too few"):
        assert conformal_threshold([0.1, 0.2, 0.3], 0.1) == math.inf
    # binary scores: k = ceil(5 * 0.8) = 4 of 4 negatives {0, 0, 0, 1} -> tau = 1, so every score is flagged
    g = ConformalGuard(alpha=0.2).calibrate([0, 0, 0, 1, 1], [0, 0, 0, 0, 1])
    assert (g.k, g.tau) == (4, 1.0) and g.predict([0.0, 1.0]).tolist() == [True, True]


def test_split_coverage_counts_ties_as_caught():
    # all negatives equal: every test negative is <= tau, so conformal coverage is exactly 1
    neg = np.full(20, 0.5)
    out = split_coverage(neg, np.array([0.5, 0.9]), 10, [0.1], 5, np.random.default_rng(0))
    assert (out["conformal"] == 1.0).all()
    assert (out["flag_supported"] == 0.5).all()  # 0.5 <= tau is flagged, 0.9 is not
