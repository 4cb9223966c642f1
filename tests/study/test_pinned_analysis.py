"""Hand-computed values for every analysis function (tables from small inputs worked out by hand,
or recomputed with scikit-learn / scipy in an independent loop)."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from citebound.study.analysis import (
    agreement_table,
    budget_curve,
    calibration_size_ablation,
    coverage_table,
    lexical_overlap_by_label,
    mondrian_table,
    pac_ranks_table,
    reattribution_tables,
    review_budget,
    scope_table,
    transfer_table,
    unsupported_rates,
    validation_table,
)


def _cal(scores, labels, v="v", **extra):
    return pd.DataFrame({f"score_{v}": scores, "label": labels, **extra})


def _half_tau(x):
    """The conformal tau at alpha 0.5, by its definition: the k-th smallest score, k = ceil((n + 1) * 0.5); inf past n."""
    x = np.sort(x)
    k = math.ceil((len(x) + 1) * 0.5)
    return x[k - 1] if k <= len(x) else math.inf


def _q(x):
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return np.quantile(x, 0.025), np.quantile(x, 0.975)


def test_validation_table_point_values_and_bootstrap_cis():
    # gold: 1 1 1 0 0 0 (and an unlabelled row that must be dropped)
    df = pd.DataFrame({"label": [1, 1, 1, 0, 0, 0, np.nan],
                       "verdict_v": [True, True, False, True, False, False, True],
                       "score_v": [0.9, 0.7, 0.2, 0.6, 0.1, np.nan, 0.5]})
    t = validation_table(df, ["v"], n_boot=200, seed=3).iloc[0]
    # recall on supported: 2 of 3; specificity: 2 of 3 unsupported called unsupported
    assert (t["n"], t["n_supported"], t["n_unsupported"]) == (6, 3, 3)
    assert t["recall_supported"] == pytest.approx(2 / 3) and t["specificity"] == pytest.approx(2 / 3)
    y = np.array([1, 1, 1, 0, 0, 0])
    p = np.array([1, 1, 0, 1, 0, 0])
    s = np.array([0.9, 0.7, 0.2, 0.6, 0.1, 0.0])  # NaN score counts as 0
    assert t["kappa"] == pytest.approx(cohen_kappa_score(y, p))
    assert t["roc_auc"] == pytest.approx(roc_auc_score(y, s))
    # the same 200 resamples, each statistic recomputed with scikit-learn
    idx = np.random.default_rng(3).integers(0, 6, size=(200, 6))
    rec, spec, kap, auc = [], [], [], []
    for r in idx:
        yy, pp, ss = y[r], p[r], s[r]
        rec.append(np.mean(pp[yy == 1]) if (yy == 1).any() else np.nan)
        spec.append(np.mean(1 - pp[yy == 0]) if (yy == 0).any() else np.nan)
        agree_const = len(set(yy)) == 1 and len(set(pp)) == 1 and yy[0] == pp[0]
        kap.append(np.nan if agree_const else cohen_kappa_score(yy, pp))
        auc.append(roc_auc_score(yy, ss) if len(set(yy)) == 2 else np.nan)
    for col, samples in [("recall_supported", rec), ("specificity", spec), ("kappa", kap), ("roc_auc", auc)]:
        lo, hi = _q(samples)
        assert (t[f"{col}_ci_low"], t[f"{col}_ci_high"]) == pytest.approx((lo, hi)), col


def test_validation_auc_difference_against_embedding_is_paired():
    """Each verifier's AUC minus embedding's, and its CI from the same resamples for both (sklearn per
    resample); the reference's own difference is 0, and without it in the panel there is no column."""
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    s_t = np.array([0.9, 0.8, 0.3, 0.7, 0.2, 0.6, 0.1, 0.4])  # trained: one swapped pair (0.3 < 0.4, 0.6)
    s_e = np.array([0.6, 0.5, 0.4, 0.45, 0.5, 0.55, 0.3, 0.2])
    df = pd.DataFrame({"label": y, "score_trained": s_t, "verdict_trained": s_t >= 0.5,
                       "score_embedding": s_e, "verdict_embedding": s_e >= 0.5})
    t = validation_table(df, ["embedding", "trained"], n_boot=300, seed=5).set_index("verifier")
    # by hand: trained ranks 14 of the 16 (pos, neg) pairs right -> 0.875; embedding: 10.5 of 16
    assert roc_auc_score(y, s_t) == pytest.approx(14 / 16) and roc_auc_score(y, s_e) == pytest.approx(10.5 / 16)
    assert t.loc["trained", "roc_auc_minus_embedding"] == pytest.approx(3.5 / 16)
    assert t.loc["embedding", "roc_auc_minus_embedding"] == 0.0
    idx = np.random.default_rng(5).integers(0, 8, size=(300, 8))
    d = [roc_auc_score(y[r], s_t[r]) - roc_auc_score(y[r], s_e[r]) if len(set(y[r])) == 2 else np.nan for r in idx]
    lo, hi = _q(d)
    assert (t.loc["trained", "roc_auc_minus_embedding_ci_low"],
            t.loc["trained", "roc_auc_minus_embedding_ci_high"]) == pytest.approx((lo, hi))
    assert "roc_auc_minus_embedding" not in validation_table(df, ["trained"], n_boot=10, seed=5).columns


def test_agreement_table_pairs_jury_and_shares():
    # three verifiers over 6 pairs (True = supported)
    x = [True, True, False, False, True, False]
    y = [True, False, True, False, True, False]
    z = [False, True, True, False, True, True]
    sample = pd.DataFrame({"verdict_x": x, "verdict_y": y, "verdict_z": z})
    t = agreement_table(sample, ["x", "y", "z"], n_boot=100, seed=0).set_index(["verifier_a", "verifier_b"])
    assert list(t.index) == [("x", "y"), ("x", "z"), ("y", "z"), ("x", "jury"), ("y", "jury"), ("z", "jury")]
    # x vs y: a = #both supported = 2 (pairs 0, 4); b = x only = 1 (pair 1); c = y only = 1 (pair 2); d = 2
    r = t.loc[("x", "y")]
    assert (r["n"], r["both_supported"], r["a_only"], r["b_only"], r["both_unsupported"]) == (6, 2, 1, 1, 2)
    assert r["observed_agreement"] == pytest.approx(4 / 6)
    assert r["kappa"] == pytest.approx(cohen_kappa_score(x, y))
    # of x's flags (pairs 2, 3, 5) y supports pair 2: 1 / 3; of y's flags (1, 3, 5) x supports pair 1: 1 / 3
    assert r["share_a_flags_b_supports"] == pytest.approx(1 / 3)
    assert r["share_b_flags_a_supports"] == pytest.approx(1 / 3)
    # x vs z: a = 2 (1, 4), b = x only = 1 (0), c = z only = 2 (2, 5), d = 1 (3)
    r = t.loc[("x", "z")]
    assert (r["both_supported"], r["a_only"], r["b_only"], r["both_unsupported"]) == (2, 1, 2, 1)
    assert r["share_a_flags_b_supports"] == pytest.approx(2 / 3)  # x flags 2, 3, 5; z supports 2, 5
    assert r["share_b_flags_a_supports"] == pytest.approx(1 / 2)  # z flags 0, 3; x supports 0
    assert r["positive_specific_agreement"] == pytest.approx(4 / 7)
    assert r["negative_specific_agreement"] == pytest.approx(2 / 5)
    # jury = at least 2 of 3 say supported: pairs 0 (x,y), 1 (x,z), 2 (y,z), 4 (all) -> T T T F T F
    r = t.loc[("z", "jury")]
    jury = [True, True, True, False, True, False]
    assert (r["both_supported"], r["a_only"], r["b_only"], r["both_unsupported"]) == (3, 1, 1, 1)
    assert r["kappa"] == pytest.approx(cohen_kappa_score(z, jury))
    # bootstrap CI of observed agreement recomputed from the same resamples
    idx = np.random.default_rng(0).integers(0, 6, size=(100, 6))
    xa, ya = np.array(x), np.array(y)
    lo, hi = _q([np.mean(xa[i] == ya[i]) for i in idx])
    assert (t.loc[("x", "y"), "observed_agreement_ci_low"], t.loc[("x", "y"), "observed_agreement_ci_high"]) == \
        pytest.approx((lo, hi))


def test_agreement_jury_with_two_verifiers_needs_both():
    sample = pd.DataFrame({"verdict_x": [True, True, False], "verdict_y": [True, False, False]})
    t = agreement_table(sample, ["x", "y"], n_boot=10, seed=0).set_index(["verifier_a", "verifier_b"])
    # jury of 2: a strict majority is both -> T F F, identical to y
    r = t.loc[("y", "jury")]
    assert (r["both_supported"], r["a_only"], r["b_only"], r["both_unsupported"]) == (1, 0, 0, 2)
    assert agreement_table(sample, ["x"], 10, 0).empty  # one verifier: no pair and no jury


def test_budget_curve_by_hand():
    # negatives 0.1, 0.2, 0.3, 0.4 (n = 4); deployment scores pooled across two sources
    cal = {"v": _cal([0.1, 0.2, 0.3, 0.4, 0.9], [0, 0, 0, 0, 1])}
    deploy = {"A": pd.DataFrame({"score_v": [0.15, 0.3]}), "B": pd.DataFrame({"score_v": [0.35, 0.8, np.nan]})}
    b = budget_curve(cal, deploy, targets=[0.5, 0.6, 0.8]).set_index("target_catch_rate")
    # t = 0.5: k = ceil(5 * 0.5) = 3 -> tau 0.3: flags 0.15, 0.3, NaN -> 3 of 5
    assert (b.loc[0.5, "tau"], b.loc[0.5, "pooled_flag_rate"]) == (0.3, 0.6)
    # t = 0.6: k = ceil(3.0) = 3 -> 0.3 again; t = 0.8: k = ceil(4.0) = 4 -> 0.4: adds 0.35 -> 4 of 5
    assert (b.loc[0.6, "tau"], b.loc[0.8, "tau"], b.loc[0.8, "pooled_flag_rate"]) == (0.3, 0.4, 0.8)
    b = budget_curve(cal, deploy, targets=[0.9]).iloc[0]  # k = ceil(4.5) = 5 > 4 -> inf, all flagged
    assert b["tau"] == math.inf and b["pooled_flag_rate"] == 1.0


def test_mondrian_table_one_split_by_hand():
    # group a: negatives 0.1 .. 0.5; group b: 0.6 .. 1.0; one split whose mask we draw the same way
    s = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    g = list("aaaaabbbbb")
    df = _cal(s + [0.99], [0] * 10 + [1], group=g + ["a"])
    seed = 4
    mask = np.random.default_rng(seed).random(10) < 0.5
    sa = np.array(s)
    t = mondrian_table({"v": df}, "group", target=0.5, n_splits=1, seed=seed, min_group=1).set_index("group")

    for grp, lo in (("a", 0), ("b", 5)):
        gm = np.zeros(10, bool)
        gm[lo:lo + 5] = True
        test = sa[gm & ~mask]
        if not (gm & mask).any() or not len(test):
            assert grp not in t.index
            continue
        assert t.loc[grp, "pooled_mean_coverage"] == pytest.approx(np.mean(test <= _half_tau(sa[mask])))
        assert t.loc[grp, "mondrian_mean_coverage"] == pytest.approx(np.mean(test <= _half_tau(sa[gm & mask])))
        assert t.loc[grp, "n_unsupported"] == 5
    assert set(t.index) <= {"a", "b"}


def test_mondrian_table_min_group_and_pooled_undercoverage():
    rng = np.random.default_rng(0)
    low, high = rng.uniform(0, 0.5, 200), rng.uniform(0.5, 1, 200)
    df = _cal(np.r_[low, high, 0.1], [0] * 400 + [1], group=["lo"] * 200 + ["hi"] * 200 + ["x"])
    t = mondrian_table({"v": df}, "group", target=0.9, n_splits=40, seed=1, min_group=201)
    assert t.empty  # both groups have 200 < 201 negatives
    t = mondrian_table({"v": df}, "group", target=0.9, n_splits=40, seed=1).set_index("group")
    # one pooled tau sits near the pooled 0.9 quantile (~0.9): the high group is under-covered
    # (~0.8) and the low one over-covered (1.0); per-group taus bring both to ~0.9
    assert t.loc["lo", "pooled_mean_coverage"] == 1.0
    assert t.loc["hi", "pooled_mean_coverage"] < 0.85
    assert t.loc["hi", "mondrian_mean_coverage"] >= 0.88 and t.loc["lo", "mondrian_mean_coverage"] >= 0.88
    assert t.loc["hi", "pooled_share_below_target"] > 0.9


def test_coverage_and_size_ablation_tables_sizes():
    neg = list(np.linspace(0, 1, 21))
    cal = {"v": _cal(neg + [0.5, np.nan], [0] * 21 + [1, 0])}
    summ, per = coverage_table(cal, [0.8], n_splits=30, fraction=0.5, delta=0.1, seed=0)
    r = summ.iloc[0]
    # 21 finite negatives (the NaN one is dropped): n_cal = round(10.5) = 10 (banker's rounding), 11 test
    assert (r["n_cal"], r["n_test_unsupported"], r["n_supported"]) == (10, 11, 1)
    assert len(per) == 30 and per["conformal"].mean() == pytest.approx(r["mean_coverage"])
    assert r["share_splits_below_target"] == pytest.approx(np.mean(per["conformal"] < 0.8))
    abl = calibration_size_ablation(cal, [3, 10, 21, 25], [0.8], n_splits=5, seed=0)
    # sizes >= the 21 negatives are skipped; n_cal = 3 with alpha 0.2: k = ceil(3.2) = 4 > 3 -> inf tau
    assert sorted(set(abl["n_cal"])) == [3, 10]
    r3 = abl[(abl["n_cal"] == 3) & (abl["method"] == "conformal")].iloc[0]
    assert bool(r3["infinite_tau"]) and r3["mean_coverage"] == 1.0


def test_a_split_whose_coverage_is_exactly_the_target_is_not_below_it():
    """20 negatives, half to calibration: each split's coverage is k / 10, so some land exactly on 0.8; those
    are not below the target (strictly below, as the conformal guarantee reads)."""
    cal = {"v": _cal(list(np.linspace(0, 1, 20)), [0] * 20)}
    summ, per = coverage_table(cal, [0.8], n_splits=200, fraction=0.5, delta=0.1, seed=0)
    c = per["conformal"].to_numpy()
    assert summ.iloc[0]["n_test_unsupported"] == 10 and (c == 0.8).sum() > 0
    assert summ.iloc[0]["share_splits_below_target"] == pytest.approx(np.mean(c < 0.8))
    assert np.mean(c < 0.8) < np.mean(c <= 0.8)
    # the PAC threshold's coverages, read the same way (60 negatives: 30 to calibrate, a finite PAC tau at 0.8)
    summ, per = coverage_table({"v": _cal(list(np.linspace(0, 1, 60)), [0] * 60)}, [0.8], n_splits=300,
                               fraction=0.5, delta=0.1, seed=0)
    p = per["pac"].to_numpy()
    assert (p == 0.8).sum() > 0 and summ.iloc[0]["pac_share_splits_below_target"] == pytest.approx(np.mean(p < 0.8))


def test_the_size_ablation_counts_a_split_exactly_at_the_target_as_not_below_it():
    """20 negatives, 10 to calibrate: each split covers k / 10 of the other 10, so some splits land exactly on
    0.8. The per-split coverages come from ``split_coverage`` with the ablation's seed; the share below the
    target counts only those strictly under it, for both methods."""
    from citebound.calibration.conformal import split_coverage

    neg = np.linspace(0, 1, 20)
    abl = calibration_size_ablation({"v": _cal(list(neg), [0] * 20)}, [10], [0.8], n_splits=200, seed=3)
    cov = split_coverage(neg, np.array([]), 10, [0.2], 200, np.random.default_rng(3))
    for method in ("conformal", "naive"):
        c = cov[method][0]
        assert (c == 0.8).sum() > 0 and np.mean(c < 0.8) < np.mean(c <= 0.8)
        row = abl[abl["method"] == method].iloc[0]
        assert row["share_splits_below_target"] == pytest.approx(np.mean(c < 0.8))
        assert row["mean_coverage"] == pytest.approx(c.mean())


def test_pac_ranks_table_by_hand():
    t = pac_ranks_table([9, 5], [0.9], 0.05).set_index("n_cal")
    assert t.loc[9, "k_marginal"] == 9 and t.loc[5, "k_marginal"] == 6  # ceil(10 * .9), ceil(6 * .9)
    assert t.loc[5, "k_pac"] == 6  # P(Binom(5, .9) <= 4) = 0.41 < 0.95: no k works -> n + 1


def _reattr_frame():
    # three sentences with gold; one without gold (dropped)
    rows = [
        # sentence, passage, label, bm25, lex, claim, passage text
        (0, 0, 1, 3.0, 0.1, "cells make atp", "cells make atp"),
        (0, 1, 0, 2.0, 0.9, "cells make atp", "rivers"),
        (0, 2, 0, 1.0, 0.5, "cells make atp", "mountains"),
        (1, 0, 0, 5.0, 0.8, "gene raises risk", "weather"),
        (1, 1, 1, 4.0, 0.2, "gene raises risk", "the gene raises cancer risk in mice"),
        (2, 0, 0, 1.0, 0.3, "protein binds receptor", "x"),
        (2, 1, 0, 2.0, 0.2, "protein binds receptor", "y"),
        (2, 2, 1, 0.5, 0.9, "protein binds receptor", "protein"),
        (3, 0, 0, 9.0, 0.1, "no gold", "z"),
    ]
    return pd.DataFrame(rows, columns=["sentence_id", "passage_idx", "label", "bm25", "lex", "claim", "passage"])


def test_reattribution_tables_by_hand():
    out = reattribution_tables(_reattr_frame(), {"bm25": "bm25", "lex": "lex"}, [1, 2], seed=0)
    rec = out["recall"].set_index(["ranker", "k"])
    # bm25 top-1: s0 gold (3.0), s1 distractor (5.0), s2 distractor (2.0) -> 1 of 3; top-2: s0, s1 -> 2 of 3
    # lex top-1: s0 no (0.9), s1 no (0.8), s2 gold (0.9) -> 1 of 3; top-2: s0 no (0.9, 0.5), s1 yes, s2 yes -> 2/3
    assert rec.loc[("bm25", 1), "recall"] == pytest.approx(1 / 3) and rec.loc[("bm25", 2), "recall"] == pytest.approx(2 / 3)
    assert rec.loc[("lex", 1), "recall"] == pytest.approx(1 / 3) and rec.loc[("lex", 2), "recall"] == pytest.approx(2 / 3)
    assert rec.loc[("bm25", 1), "n_sentences"] == 3  # the sentence without gold is dropped
    # random: k = 1 -> mean(1/3, 1/2, 1/3) = 7/18; k = 2 -> mean(1 - C(2,2)/C(3,2), 1, same) = (2/3 + 1 + 2/3)/3
    assert rec.loc[("random", 1), "recall"] == pytest.approx(7 / 18)
    assert rec.loc[("random", 2), "recall"] == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    # McNemar at k = 1: bm25 hits {s0}, lex hits {s2}: one discordant each way -> p = 1
    mc = out["mcnemar"].iloc[0]
    assert (mc["a_only"], mc["b_only"], mc["mcnemar_exact_p"]) == (1, 1, 1.0)
    st_ = out["strata"]
    halves = st_[(st_["scheme"] == "halves") & (st_["ranker"] == "bm25")]
    assert halves["n_sentences"].sum() == 3


def test_reattribution_mcnemar_direction():
    df = _reattr_frame()
    df["good"] = df["label"].astype(float)
    out = reattribution_tables(df, {"good": "good", "bm25": "bm25"}, [1], seed=0)
    mc = out["mcnemar"].iloc[0]
    # 'good' hits all 3 at k = 1, bm25 only s0: a_only = 2, b_only = 0; exact p = 2 * 0.5^2 = 0.5
    assert (mc["ranker_a"], mc["a_only"], mc["b_only"]) == ("good", 2, 0)
    assert mc["mcnemar_exact_p"] == pytest.approx(0.5)


def test_scope_table_by_hand():
    df = pd.DataFrame({"label": [1, 1, 1, 0, 0], "verdict_v": [True, True, False, True, False]})
    r = scope_table(df, ["v"], n_boot=50, seed=0).iloc[0]
    assert r["supported_rate_yes"] == pytest.approx(2 / 3) and r["supported_rate_no"] == pytest.approx(1 / 2)
    assert r["kappa"] == pytest.approx(cohen_kappa_score([1, 1, 1, 0, 0], [1, 1, 0, 1, 0]))
    assert r["n"] == 5


def test_lexical_overlap_by_label_against_scipy():
    from citebound.verifiers.lexical import token_jaccard
    df = pd.DataFrame({"claim": ["a b c", "a b", "x y", "p q r"], "passage": ["a b c d", "a", "z", "r s"],
                       "label": [1, 1, 0, 0]})
    t = lexical_overlap_by_label(df).set_index("label")
    sup = [token_jaccard("a b c", "a b c d"), token_jaccard("a b", "a")]
    ref = [token_jaccard("x y", "z"), token_jaccard("p q r", "r s")]
    assert t.loc["supported", "mean_jaccard"] == pytest.approx(np.mean(sup))
    assert t.loc["refuted", "median_jaccard"] == pytest.approx(np.median(ref))
    assert t.loc["supported", "mannwhitney_p"] == pytest.approx(sps.mannwhitneyu(sup, ref).pvalue)
    assert (t.loc["supported", "n"], t.loc["refuted", "n"]) == (2, 2)


def test_lexical_overlap_of_one_label_only_has_no_test_and_asks_scipy_nothing():
    import warnings
    df = pd.DataFrame({"claim": ["a b c", "a b"], "passage": ["a b c d", "a"], "label": [1, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy warns of a sample too small when asked; it must not be asked
        t = lexical_overlap_by_label(df).set_index("label")
    assert (t.loc["supported", "n"], t.loc["refuted", "n"]) == (2, 0)
    assert np.isnan(t.loc["supported", "mannwhitney_p"]) and np.isnan(t.loc["refuted", "mean_jaccard"])


def _boot_idx(n, n_boot, seed):
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _q_or_nan(x):
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    return (np.quantile(x, 0.025), np.quantile(x, 0.975)) if len(x) else (np.nan, np.nan)


def test_agreement_table_every_ci_from_the_same_resamples():
    rng = np.random.default_rng(5)
    n = 30
    v = {name: rng.random(n) < p for name, p in (("x", 0.6), ("y", 0.5), ("z", 0.7))}
    sample = pd.DataFrame({f"verdict_{k}": a for k, a in v.items()})
    t = agreement_table(sample, ["x", "y", "z"], n_boot=150, seed=9).set_index(["verifier_a", "verifier_b"])
    v["jury"] = (v["x"].astype(int) + v["y"] + v["z"]) >= 2
    idx = _boot_idx(n, 150, 9)
    for (a_name, b_name), row in t.iterrows():
        x, y = v[a_name], v[b_name]
        stats = {k: [] for k in ("observed_agreement", "kappa", "gwet_ac1", "positive_specific_agreement",
                                 "negative_specific_agreement")}
        for r in idx:
            xa, ya = x[r], y[r]
            a, b = np.sum(xa & ya), np.sum(xa & ~ya)
            c, d = np.sum(~xa & ya), np.sum(~xa & ~ya)
            stats["observed_agreement"].append((a + d) / n)
            same_const = len(set(xa)) == 1 and len(set(ya)) == 1 and xa[0] == ya[0]
            stats["kappa"].append(np.nan if same_const else cohen_kappa_score(xa, ya))
            pi = (xa.mean() + ya.mean()) / 2
            stats["gwet_ac1"].append(((a + d) / n - 2 * pi * (1 - pi)) / (1 - 2 * pi * (1 - pi)))
            stats["positive_specific_agreement"].append(2 * a / (2 * a + b + c) if 2 * a + b + c else np.nan)
            stats["negative_specific_agreement"].append(2 * d / (2 * d + b + c) if 2 * d + b + c else np.nan)
        for col, samples in stats.items():
            lo, hi = _q_or_nan(samples)
            assert (row[f"{col}_ci_low"], row[f"{col}_ci_high"]) == pytest.approx((lo, hi)), (a_name, b_name, col)
        pi = (x.mean() + y.mean()) / 2
        a, d = np.sum(x & y), np.sum(~x & ~y)
        assert row["gwet_ac1"] == pytest.approx(((a + d) / n - 2 * pi * (1 - pi)) / (1 - 2 * pi * (1 - pi)))


def test_agreement_shares_are_nan_without_flags():
    sample = pd.DataFrame({"verdict_x": [True, True], "verdict_y": [True, False]})
    r = agreement_table(sample, ["x", "y"], n_boot=5, seed=0).set_index(["verifier_a", "verifier_b"]).loc[("x", "y")]
    # x flags nothing: c + d = 0 -> NaN; y flags pair 1, which x supports: b / (b + d) = 1
    assert math.isnan(r["share_a_flags_b_supports"]) and r["share_b_flags_a_supports"] == 1.0


def test_coverage_table_every_column_against_split_coverage():
    from citebound.calibration.conformal import split_coverage
    neg = list(np.round(np.linspace(0.05, 0.95, 19), 3))
    pos = [0.2, 0.6, 0.9]
    cal = {"v": _cal(neg + pos, [0] * 19 + [1] * 3)}
    summ, per = coverage_table(cal, [0.8, 0.9], n_splits=25, fraction=0.4, delta=0.2, seed=3)
    n_cal = round(0.4 * 19)  # 8
    cov = split_coverage(np.array(neg), np.array(pos), n_cal, [0.2, 0.1], 25, np.random.default_rng(3), delta=0.2)
    assert list(summ.columns) == ["verifier", "target", "n_cal", "n_test_unsupported", "n_supported", "mean_coverage",
                                  "coverage_q05", "share_splits_below_target", "pac_mean_coverage",
                                  "pac_share_splits_below_target", "pac_delta", "mean_flag_rate_supported",
                                  "naive_mean_coverage"]
    for i, (t, r) in enumerate(zip([0.8, 0.9], summ.itertuples())):
        c, p = cov["conformal"][i], cov["pac"][i]
        assert (r.verifier, r.target, r.n_cal, r.n_test_unsupported, r.n_supported, r.pac_delta) == \
            ("v", t, 8, 11, 3, 0.2)
        assert r.mean_coverage == pytest.approx(c.mean()) and r.coverage_q05 == pytest.approx(np.quantile(c, 0.05))
        assert r.share_splits_below_target == pytest.approx(np.mean(c < t))
        assert r.pac_mean_coverage == pytest.approx(p.mean())
        assert r.pac_share_splits_below_target == pytest.approx(np.mean(p < t))
        assert r.mean_flag_rate_supported == pytest.approx(cov["flag_supported"][i].mean())
        assert r.naive_mean_coverage == pytest.approx(cov["naive"][i].mean())
    assert list(per.columns) == ["verifier", "target", "split", "conformal", "pac", "naive"]
    assert per["split"].tolist() == list(range(25)) * 2 and per["target"].tolist() == [0.8] * 25 + [0.9] * 25
    assert per.index.tolist() == list(range(50))  # one row label each (not 0-24 twice)
    np.testing.assert_allclose(per["pac"], np.r_[cov["pac"][0], cov["pac"][1]])
    np.testing.assert_allclose(per["naive"], np.r_[cov["naive"][0], cov["naive"][1]])
    # coverage exactly at the target is not "below" it: every split of constant negatives covers 1.0
    flat = {"v": _cal([0.5] * 10, [0] * 10)}
    s, _ = coverage_table(flat, [1.0 - 1e-9], n_splits=5, fraction=0.5, delta=0.2, seed=0)
    assert s["share_splits_below_target"].iloc[0] == 0.0


def test_coverage_table_calibration_size_edges():
    # fraction 0.1 of 10 negatives: n_cal = 1 (allowed); fraction 1.0: n_cal = n (skipped, nothing to test on)
    cal = {"a": _cal(list(np.linspace(0, 1, 10)), [0] * 10, v="a"),
           "b": _cal(list(np.linspace(0, 1, 10)), [0] * 10, v="b")}
    s, per = coverage_table(cal, [0.5], n_splits=3, fraction=0.1, delta=0.2, seed=0)
    assert s["n_cal"].tolist() == [1, 1] and s["verifier"].tolist() == ["a", "b"]
    s, per = coverage_table(cal, [0.5], n_splits=3, fraction=1.0, delta=0.2, seed=0)
    assert s.empty and per.empty


def test_calibration_size_ablation_columns_by_hand():
    from citebound.calibration.conformal import split_coverage
    neg = list(np.linspace(0.0, 1.0, 12))
    cal = {"v": _cal(neg, [0] * 12)}
    t = calibration_size_ablation(cal, [5], [0.8], n_splits=10, seed=2)
    cov = split_coverage(np.array(neg), np.zeros(0), 5, [0.2], 10, np.random.default_rng(2))
    assert list(t.columns) == ["verifier", "n_cal", "target", "method", "mean_coverage", "share_splits_below_target",
                               "infinite_tau"]
    for method in ("conformal", "naive"):
        r = t[t.method == method].iloc[0]
        assert (r["verifier"], r["n_cal"], r["target"]) == ("v", 5, 0.8)
        assert r["mean_coverage"] == pytest.approx(cov[method][0].mean())
        assert r["share_splits_below_target"] == pytest.approx(np.mean(cov[method][0] < 0.8))
        assert not r["infinite_tau"]  # k = ceil(6 * 0.8) = 5 <= 5


def test_unsupported_rates_ci_from_item_resamples():
    df = pd.DataFrame({"item_id": ["a", "a", "b", "c", "c", "c"], "verdict_v": [True, False, False, True, True, False]})
    r = unsupported_rates({"S": df}, ["v"], n_boot=300, seed=4).set_index("source").loc["S"]
    flags = {"a": (1, 2), "b": (1, 1), "c": (1, 3)}  # (unsupported, pairs) per item, in sorted item order
    items = sorted(flags)
    idx = _boot_idx(3, 300, 4)
    draws = [sum(flags[items[i]][0] for i in row) / sum(flags[items[i]][1] for i in row) for row in idx]
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(_q_or_nan(draws))
    assert (r["verifier"], r["n_items"], r["n_pairs"], r["unsupported_rate"]) == ("v", 3, 6, 0.5)
    assert list(unsupported_rates({"S": df}, ["v"], 10, 0).columns) == ["verifier", "source", "n_items", "n_pairs",
                                                                         "unsupported_rate", "ci_low", "ci_high"]


def test_scope_table_ci_and_columns():
    y = np.array([1, 1, 1, 0, 0, 1, 0, 1])
    p = np.array([1, 0, 1, 1, 0, 1, 0, 0], bool)
    df = pd.DataFrame({"label": y, "verdict_v": p})
    r = scope_table(df, ["v"], n_boot=120, seed=6)
    assert list(r.columns) == ["verifier", "n", "supported_rate_yes", "supported_rate_no", "kappa", "kappa_ci_low",
                               "kappa_ci_high"]
    r = r.iloc[0]
    ks = []
    for row in _boot_idx(8, 120, 6):
        yy, pp = y[row] == 1, p[row]
        const = len(set(yy)) == 1 and len(set(pp)) == 1 and yy[0] == pp[0]
        ks.append(np.nan if const else cohen_kappa_score(yy, pp))
    assert (r["kappa_ci_low"], r["kappa_ci_high"]) == pytest.approx(_q_or_nan(ks))
    assert r["supported_rate_yes"] == pytest.approx(3 / 5) and r["supported_rate_no"] == pytest.approx(1 / 3)


def test_review_budget_transfer_mondrian_columns_and_ties():
    cal = {"v": _cal([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], [0] * 9)}
    rb = review_budget(cal, {"S": pd.DataFrame({"score_v": [0.9, 0.95]})}, 0.9)
    assert list(rb.columns) == ["verifier", "source", "target_catch_rate", "tau", "n_cal_unsupported", "n_pairs",
                                "flag_rate", "ci_low", "ci_high"]
    from citebound.calibration.stats import wilson
    ci = wilson(1, 2)  # tau = 0.9: the score at tau is flagged, 0.95 is not
    assert rb[["flag_rate", "ci_low", "ci_high"]].iloc[0].tolist() == pytest.approx([ci.estimate, ci.low, ci.high])
    # transfer: a hard negative exactly at tau_easy is caught; a verifier without hard data is skipped, not the end
    cal2 = {"u": _cal([0.5] * 9, [0] * 9, v="u"), "v": cal["v"]}
    hard = {"v": _cal([0.9, 0.95, 0.3], [0, 0, 1])}
    t = transfer_table(cal2, hard, [0.9])
    assert t["verifier"].tolist() == ["v"] and t["hard_catch_rate"].iloc[0] == 0.5
    assert list(t.columns) == ["verifier", "target", "tau_easy", "n_easy_unsupported", "n_hard_unsupported",
                               "hard_catch_rate", "ci_low", "ci_high", "easy_mean_score", "hard_mean_score",
                               "mean_score_gap", "tau_needed_on_hard", "flag_rate_supported_at_tau_needed"]
    r = t.iloc[0]
    assert (r["target"], r["n_easy_unsupported"], r["easy_mean_score"], r["hard_mean_score"]) == \
        pytest.approx((0.9, 9, 0.5, 0.925))
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((wilson(1, 2).low, wilson(1, 2).high))
    t = transfer_table(cal, {"v": _cal([0.9, 0.95], [0, 0])}, [0.5])
    assert math.isnan(t["flag_rate_supported_at_tau_needed"].iloc[0])  # no supported hard pairs


def test_mondrian_ties_min_group_and_columns():
    # 20 and 21 negatives in two groups, scores with ties: coverage counts test scores equal to tau
    s = [0.5] * 20 + [0.5] * 21
    df = _cal(s, [0] * 41, group=["a"] * 20 + ["b"] * 21)
    t = mondrian_table({"v": df}, "group", target=0.5, n_splits=4, seed=0)
    assert t["group"].tolist() == ["a", "b"]  # default min_group = 20 keeps a group of exactly 20
    assert list(t.columns) == ["verifier", "group", "n_unsupported", "target", "pooled_mean_coverage",
                               "mondrian_mean_coverage", "pooled_share_below_target", "mondrian_share_below_target"]
    assert t["n_unsupported"].tolist() == [20, 21] and (t["target"] == 0.5).all()
    assert (t["pooled_mean_coverage"] == 1.0).all() and (t["mondrian_mean_coverage"] == 1.0).all()
    assert (t["pooled_share_below_target"] == 0.0).all() and (t["mondrian_share_below_target"] == 0.0).all()
    t = mondrian_table({"v": df}, "group", target=0.5, n_splits=4, seed=0, min_group=21)
    assert t["group"].tolist() == ["b"]


def test_reattribution_columns_random_ties_and_strata():
    rows = []
    for sid in range(8):  # 8 sentences, 3 candidates each, gold at position sid % 3; a constant ranker ties all
        for j in range(3):
            rows.append((sid, j, int(j == sid % 3), 1.0, float(j == sid % 3), f"claim {sid} words", f"claim {sid}"
                         if j == sid % 3 else "other text"))
    df = pd.DataFrame(rows, columns=["sentence_id", "passage_idx", "label", "const", "oracle", "claim", "passage"])
    df.loc[len(df)] = (8, 0, 0, 1.0, 0.0, "no gold", "x")
    out = reattribution_tables(df, {"const": "const", "oracle": "oracle"}, [1, 3], seed=11)
    rec = out["recall"]
    assert list(rec.columns) == ["ranker", "k", "n_sentences", "recall", "ci_low", "ci_high"]
    # the constant ranker's ties are broken by the seeded generator, exactly as rank_hits does with it
    from citebound.study.analysis import rank_hits
    h = rank_hits(df[df.sentence_id < 8], "const", [1, 3], np.random.default_rng(11))
    assert rec.set_index(["ranker", "k"]).loc[("const", 1), "recall"] == pytest.approx(h["hit@1"].mean())
    assert rec.set_index(["ranker", "k"]).loc[("oracle", 1), "recall"] == 1.0
    r = rec[rec.ranker == "random"]
    assert r["n_sentences"].tolist() == [8, 8] and r["ci_low"].isna().all() and r["ci_high"].isna().all()
    mc = out["mcnemar"]
    assert list(mc.columns) == ["ranker_a", "ranker_b", "k", "a_only", "b_only", "mcnemar_exact_p"]
    assert mc["k"].tolist() == [1]
    same = reattribution_tables(df, {"o1": "oracle", "o2": "oracle"}, [1], seed=0)["mcnemar"].iloc[0]
    assert (same["a_only"], same["b_only"], same["mcnemar_exact_p"]) == (0, 0, 1.0)  # no discordant pairs
    strata = out["strata"]
    assert list(strata.columns) == ["scheme", "stratum", "ranker", "n_sentences", "mean_jaccard", "recall@1",
                                    "ci_low", "ci_high"]
    q = strata[(strata.scheme == "quartiles") & (strata.ranker == "oracle")]
    assert q["stratum"].tolist() == ["Q1/4", "Q2/4", "Q3/4", "Q4/4"] and q["n_sentences"].tolist() == [2, 2, 2, 2]
    hv = strata[(strata.scheme == "halves") & (strata.ranker == "oracle")]
    assert hv["stratum"].tolist() == ["Q1/2", "Q2/2"] and (hv["recall@1"] == 1.0).all()
    from citebound.verifiers.lexical import token_jaccard
    j = sorted(token_jaccard(f"claim {s} words", f"claim {s}") for s in range(8))
    assert q["mean_jaccard"].tolist() == pytest.approx([np.mean(j[0:2]), np.mean(j[2:4]), np.mean(j[4:6]),
                                                        np.mean(j[6:8])])


def test_lexical_overlap_ignores_unlabelled_rows_and_one_sided_sets():
    df = pd.DataFrame({"claim": ["cells make energy", "cells make energy", "genes cause risk", "proteins bind"],
                       "passage": ["cells make energy", "cells rest", "genes", "rivers flow"],
                       "label": [1, 1, np.nan, 0]})
    t = lexical_overlap_by_label(df).set_index("label")
    assert list(lexical_overlap_by_label(df).columns) == ["label", "n", "mean_jaccard", "median_jaccard",
                                                         "mannwhitney_p"]
    assert (t.loc["supported", "n"], t.loc["refuted", "n"]) == (2, 1)  # the NaN-labelled row is neither
    assert t.loc["refuted", "median_jaccard"] == 0.0 and t.loc["refuted", "mean_jaccard"] == 0.0
    one = lexical_overlap_by_label(df[df.label == 1]).set_index("label")
    assert math.isnan(one.loc["supported", "mannwhitney_p"]) and math.isnan(one.loc["refuted", "mean_jaccard"])
    from citebound.verifiers.lexical import token_jaccard
    expected = np.median([token_jaccard("cells make energy", "cells make energy"),
                          token_jaccard("cells make energy", "cells rest")])
    assert math.isnan(one.loc["refuted", "median_jaccard"]) and one.loc["supported", "median_jaccard"] == expected


def test_validation_recall_and_specificity_with_unequal_error_counts():
    # 2 false supports and 1 false flag, so a swapped cell of the 2x2 table changes both numbers
    from sklearn.metrics import recall_score

    y = np.array([1, 1, 1, 1, 0, 0, 0])
    p = np.array([1, 1, 1, 0, 1, 1, 0])
    df = pd.DataFrame({"label": y, "verdict_v": p.astype(bool), "score_v": np.linspace(0, 1, 7)})
    t = validation_table(df, ["v"], n_boot=50, seed=1).iloc[0]
    assert t["recall_supported"] == pytest.approx(recall_score(y, p)) == pytest.approx(3 / 4)
    assert t["specificity"] == pytest.approx(recall_score(1 - y, 1 - p)) == pytest.approx(1 / 3)


def test_mondrian_table_over_splits_where_a_small_group_has_nothing_held_out_by_hand():
    """Group c has 2 negatives: some of the 12 splits put both in the calibration half (nothing of c held out) or
    neither (no tau of its own); only the others count, so its coverages are means over those splits, never NaN.
    Target 0.5: with one or two of c held out, a split's coverage can be exactly 0.5, which is not below it."""
    s = [0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.4, 0.6, 0.8, 1.0, 0.35, 0.65]
    g = list("aaaaabbbbbcc")
    df = _cal(s, [0] * 12, group=g)
    seed, n_splits, target = 6, 12, 0.5
    t = mondrian_table({"v": df}, "group", target=target, n_splits=n_splits, seed=seed, min_group=1).set_index("group")

    rng, sa, ga = np.random.default_rng(seed), np.array(s), np.array(g)
    pooled = {k: [] for k in "abc"}
    own = {k: [] for k in "abc"}
    for _ in range(n_splits):
        mask = rng.random(12) < 0.5
        for grp in "abc":
            gm = ga == grp
            test = sa[gm & ~mask]
            if (gm & mask).any() and len(test):
                pooled[grp].append(np.mean(test <= _half_tau(sa[mask])))
                own[grp].append(np.mean(test <= _half_tau(sa[gm & mask])))
    assert 0 < len(pooled["c"]) < n_splits  # the case this test is for: c skipped in some splits
    for grp in "abc":
        row = t.loc[grp]
        assert row["pooled_mean_coverage"] == pytest.approx(np.mean(pooled[grp]))
        assert row["mondrian_mean_coverage"] == pytest.approx(np.mean(own[grp]))
        assert row["pooled_share_below_target"] == pytest.approx(np.mean(np.array(pooled[grp]) < target))
        assert row["mondrian_share_below_target"] == pytest.approx(np.mean(np.array(own[grp]) < target))
    assert any(c == target for grp in "abc" for c in pooled[grp])  # some split's coverage is exactly the target
