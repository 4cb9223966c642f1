"""Ties and edges wherever a threshold is compared; expected values worked out by hand."""
import math

import numpy as np
import pytest

from citebound.calibration.conformal import ConformalGuard, conformal_rank, conformal_threshold, split_coverage
from citebound.study.analysis import random_recall, rank_hits


@pytest.mark.parametrize("n,g,k,expected", [
    (4, 1, 2, 1 - 3 / 6),        # 1 - C(3,2)/C(4,2)
    (5, 2, 1, 2 / 5),            # one draw, 2 gold of 5
    (3, 1, 2, 1 - 1 / 3),        # n - g = k: only the one all-distractor draw misses, 1 - C(2,2)/C(3,2)
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


def test_rank_hits_is_the_same_whatever_order_the_sentences_come_in():
    """A constant ranker over three sentences of four candidates (one gold each): the seeded tie draws go to the
    sentences in id order (four each), and the rows come in id order even when the pairs come last sentence first."""
    import pandas as pd
    df = pd.DataFrame({"sentence_id": [s for s in (0, 1, 2) for _ in range(4)], "score": [0.5] * 12,
                       "label": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]})
    want = rank_hits(df, "score", [1, 2], np.random.default_rng(7))
    # by hand from the same draws: each sentence takes the next four, the smallest draw ranks first at a tie
    rng = np.random.default_rng(7)
    firsts = [int(np.argsort(rng.random(4), kind="stable")[0]) for _ in range(3)]
    assert want["hit@1"].tolist() == [f == g for f, g in zip(firsts, (0, 1, 3))]
    got = rank_hits(df.iloc[::-1].reset_index(drop=True), "score", [1, 2], np.random.default_rng(7))
    assert got["sentence_id"].tolist() == [0, 1, 2]
    # reversed, sentence 0 still takes the first four draws, on its candidates in reversed order (gold at 3)
    assert got["hit@1"].tolist() == [f == g for f, g in zip(firsts, (3, 2, 0))]


def test_unsupported_rates_of_no_source_is_an_empty_table():
    from citebound.study.analysis import unsupported_rates
    assert unsupported_rates({}, ["v"], n_boot=10, seed=0).empty


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


# ---------------------------------------------------------------- analysis functions, by hand

def _cal(scores, labels, v="v"):
    import pandas as pd
    return pd.DataFrame({f"score_{v}": scores, "label": labels, "split": "eval"})


def test_catch_rate_frontier_by_hand():
    from citebound.study.analysis import catch_rate_frontier
    # unsupported scores 0.1, 0.2, 0.2, 0.4; supported 0.2, 0.5
    df = _cal([0.1, 0.2, 0.2, 0.4, 0.2, 0.5], [0, 0, 0, 0, 1, 1])
    f = catch_rate_frontier(df, ["v"], catch_rates=[0.5, 1.0]).set_index("target_catch_rate")
    # c = 0.5: k = ceil(0.5 * 4) = 2, t = 0.2; ties count: 3 of 4 negatives caught, 1 of 2 positives flagged
    assert (f.loc[0.5, "threshold"], f.loc[0.5, "achieved_catch_rate"], f.loc[0.5, "review_cost"]) == (0.2, 0.75, 0.5)
    # c = 1.0: k = 4, t = 0.4: everything but the 0.5 positive
    assert (f.loc[1.0, "threshold"], f.loc[1.0, "achieved_catch_rate"], f.loc[1.0, "review_cost"]) == (0.4, 1.0, 0.5)


def test_unsupported_rates_by_hand():
    import pandas as pd

    from citebound.study.analysis import unsupported_rates
    a = pd.DataFrame({"item_id": ["x", "x", "y"], "verdict_v": [True, False, False]})
    b = pd.DataFrame({"item_id": ["x", "z", "z", "z"], "verdict_v": [True, True, True, False]})
    r = unsupported_rates({"A": a, "B": b}, ["v"], n_boot=50, seed=1).set_index("source")
    # A: 2 of 3 pairs unsupported over items {x, y}; B: 1 of 4 over {x, z}; pooled 3 of 7 over 4 items
    assert (r.loc["A", "unsupported_rate"], r.loc["A", "n_items"], r.loc["A", "n_pairs"]) == (2 / 3, 2, 3)
    assert (r.loc["B", "unsupported_rate"], r.loc["B", "n_items"], r.loc["B", "n_pairs"]) == (0.25, 2, 4)
    assert (r.loc["pooled", "unsupported_rate"], r.loc["pooled", "n_items"]) == (3 / 7, 4)
    # item bootstrap: resampling A's two items (x: 1 of 2 unsupported, y: 1 of 1) can only give the
    # rates 1/2 (x, x), 2/3 (x, y) and 1 (y, y), so the CI lies within [1/2, 1]
    assert r.loc["A", "ci_low"] >= 0.5 - 1e-12 and r.loc["A", "ci_high"] <= 1.0


def test_review_budget_and_transfer_by_hand():
    import pandas as pd

    from citebound.study.analysis import review_budget, transfer_table
    # 9 calibration negatives 0.1..0.9: alpha 0.1 -> k = ceil(10 * 0.9) = 9 -> tau = 0.9
    cal = {"v": _cal([i / 10 for i in range(1, 10)] + [0.95], [0] * 9 + [1])}
    deploy = {"S": pd.DataFrame({"score_v": [0.5, 0.9, 0.91, 1.0]})}
    rb = review_budget(cal, deploy, 0.9).iloc[0]
    assert (rb["tau"], rb["n_cal_unsupported"], rb["n_pairs"], rb["flag_rate"]) == (0.9, 9, 4, 0.5)  # 0.5, 0.9 flagged
    # hard negatives 0.85, 0.92, 0.99 (and a supported 0.97): tau_easy = 0.9 catches 1 of 3;
    # on the hard set alone k = ceil(4 * 0.9) = 4 > 3 -> tau_needed = inf, flagging the supported one too
    hard = {"v": _cal([0.85, 0.92, 0.99, 0.97], [0, 0, 0, 1])}
    t = transfer_table(cal, hard, [0.9]).iloc[0]
    assert (t["tau_easy"], t["hard_catch_rate"], t["n_hard_unsupported"]) == (0.9, 1 / 3, 3)
    assert t["tau_needed_on_hard"] == float("inf") and t["flag_rate_supported_at_tau_needed"] == 1.0
    assert t["mean_score_gap"] == pytest.approx((0.85 + 0.92 + 0.99) / 3 - 0.5)
