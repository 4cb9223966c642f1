"""The small analyses' numbers where the pinned tables leave room: every value worked out by hand, or
recomputed in an independent loop over the same seeded resamples (intervals whose ends are not 0 and 1)."""
import numpy as np
import pandas as pd
import pytest

from citebound.study.analysis import catch_rate_frontier, transfer_table, validation_table
from citebound.study.analysis._common import sources_then_pooled


def _q(samples):
    s = np.asarray(samples, float)
    s = s[np.isfinite(s)]
    return float(np.quantile(s, 0.025)), float(np.quantile(s, 0.975))


def test_transfer_tau_needed_on_hard_is_the_hard_negatives_order_statistic():
    # easy negatives 0.1 .. 0.9 (n 9); target 0.8: k = ceil(10 * 0.8) = 8 -> tau_easy 0.8
    cal = {"v": pd.DataFrame({"score_v": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "label": [0] * 9})}
    # hard negatives 0.35 0.85 0.5 0.95 (n 4): k = ceil(5 * 0.8) = 4 -> 0.95; supported 0.2 0.9 0.96 0.99
    hard = {"v": pd.DataFrame({"score_v": [0.35, 0.85, 0.5, 0.95, 0.2, 0.9, 0.96, 0.99],
                               "label": [0, 0, 0, 0, 1, 1, 1, 1]})}
    r = transfer_table(cal, hard, [0.8]).iloc[0]
    assert r["tau_easy"] == pytest.approx(0.8)
    assert r["hard_catch_rate"] == pytest.approx(2 / 4)  # 0.35 and 0.5 are <= 0.8
    assert r["tau_needed_on_hard"] == pytest.approx(0.95)  # not the supported scores' k-th (0.99)
    # at 0.95 the supported 0.2 and 0.9 are flagged: 2 of 4 (at tau_easy 0.8 it would be 1 of 4)
    assert r["flag_rate_supported_at_tau_needed"] == pytest.approx(0.5)
    assert r["mean_score_gap"] == pytest.approx((0.35 + 0.85 + 0.5 + 0.95) / 4 - 0.5)


def test_validation_intervals_use_their_own_denominators():
    """40 pairs whose verdicts err unequally on each side, so that recall's, specificity's resampled
    denominators (gold supported, gold unsupported) differ from the verdicts' counts; 400 resamples of seed 11,
    each ratio recomputed in a plain loop."""
    y = np.array([1] * 24 + [0] * 16)
    p = np.array([1] * 15 + [0] * 9 + [1] * 6 + [0] * 10)  # recall 15/24, specificity 10/16
    df = pd.DataFrame({"label": y, "verdict_v": p.astype(bool), "score_v": np.linspace(0.05, 0.95, 40)})
    t = validation_table(df, ["v"], n_boot=400, seed=11).iloc[0]
    assert (t["recall_supported"], t["specificity"]) == pytest.approx((15 / 24, 10 / 16))
    idx = np.random.default_rng(11).integers(0, 40, size=(400, 40))
    rec = [np.mean(p[r][y[r] == 1]) if (y[r] == 1).any() else np.nan for r in idx]
    spec = [np.mean(1 - p[r][y[r] == 0]) if (y[r] == 0).any() else np.nan for r in idx]
    for col, samples in (("recall_supported", rec), ("specificity", spec)):
        lo, hi = _q(samples)
        assert 0 < lo < hi < 1, col  # interior ends: a wrong denominator moves them
        assert (t[f"{col}_ci_low"], t[f"{col}_ci_high"]) == pytest.approx((lo, hi)), col


def test_frontier_threshold_is_the_k_th_smallest_unsupported_score():
    # unsupported 0.5 0.1 0.4 0.2 0.3 (sorted 0.1 .. 0.5), supported 0.3 0.35 0.45 0.9
    df = pd.DataFrame({"label": [0, 0, 0, 0, 0, 1, 1, 1, 1],
                       "score_v": [0.5, 0.1, 0.4, 0.2, 0.3, 0.3, 0.35, 0.45, 0.9]})
    f = catch_rate_frontier(df, ["v"], catch_rates=(0.2, 0.6, 1.0)).set_index("target_catch_rate")
    # k = ceil(5 c): 1, 3, 5 -> thresholds 0.1, 0.3, 0.5
    assert f["threshold"].tolist() == pytest.approx([0.1, 0.3, 0.5])
    assert f["achieved_catch_rate"].tolist() == pytest.approx([0.2, 0.6, 1.0])
    # supported flagged (score <= t): none; 0.3 (a tie with t); 0.3 0.35 0.45
    assert f["review_cost"].tolist() == pytest.approx([0.0, 0.25, 0.75])


def test_the_pooled_table_keeps_two_sources_answers_apart():
    tables = {"a": pd.DataFrame({"item_id": [1, 2, 2], "x": [1, 2, 3]}),
              "b": pd.DataFrame({"item_id": [1, 1], "x": [4, 5]})}
    out = dict(sources_then_pooled(tables, lambda name: tables[name]))
    assert list(out) == ["a", "b", "pooled"]
    assert out["a"]["item_id"].tolist() == [1, 2, 2]  # each source as it is
    pooled = out["pooled"]
    assert pooled["item_id"].tolist() == ["a|1", "a|2", "a|2", "b|1", "b|1"]
    assert pooled["item_id"].nunique() == 3 and pooled["x"].tolist() == [1, 2, 3, 4, 5]
    assert dict(sources_then_pooled([], lambda name: None)) == {}


def test_a_supported_hard_score_at_exactly_the_tau_needed_is_flagged():
    """As above, with the supported 0.9 moved to 0.95, exactly the tau needed on the hard set: flagged (score <=
    tau), with the 0.2: 2 of 4; the hard catch rate at 0.8 is unchanged (0.35 and 0.5 of the unsupported)."""
    cal = {"v": pd.DataFrame({"score_v": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], "label": [0] * 9})}
    hard = {"v": pd.DataFrame({"score_v": [0.35, 0.85, 0.5, 0.95, 0.2, 0.95, 0.96, 0.99],
                               "label": [0, 0, 0, 0, 1, 1, 1, 1]})}
    r = transfer_table(cal, hard, [0.8]).iloc[0]
    assert r["tau_needed_on_hard"] == 0.95 and r["flag_rate_supported_at_tau_needed"] == 0.5
    assert r["hard_catch_rate"] == pytest.approx(2 / 4)
