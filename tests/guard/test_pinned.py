"""Hand-computed values for the statistics, the conformal layer and the scoring protocol.

Every expected value is worked out by hand in the comment beside it, or comes from an
independent library (scikit-learn, scipy, statsmodels' formulas written out), never from the
function under test.
"""
import math
import sqlite3

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from citebound.calibration import stats as st
from citebound.calibration.conformal import (
    ConformalGuard,
    SmallCalibrationWarning,
    conformal_threshold,
    naive_threshold,
    pac_rank,
    split_coverage,
)
from citebound.verifiers.base import ScoreCache, score_pairs, verifier_hash, window_spans

Z975 = 1.959963984540054


def _wilson_by_hand(k, n, z=Z975):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# ---------------------------------------------------------------- stats

@pytest.mark.parametrize("k,n", [(0, 5), (5, 5), (3, 7), (1, 2), (40, 100)])
def test_wilson_by_formula(k, n):
    lo, hi = _wilson_by_hand(k, n)
    ci = st.wilson(k, n)
    assert (ci.estimate, ci.low, ci.high) == pytest.approx((k / n, lo, hi), abs=1e-12)


def test_wilson_level_and_empty():
    lo, hi = _wilson_by_hand(3, 10, z=sps.norm.ppf(0.95))  # alpha = 0.1 -> z = 1.6449
    assert (st.wilson(3, 10, alpha=0.1).low, st.wilson(3, 10, alpha=0.1).high) == pytest.approx((lo, hi))
    ci = st.wilson(0, 0)
    assert math.isnan(ci.estimate) and math.isnan(ci.low) and math.isnan(ci.high)


def test_table2x2_is_not_symmetric_in_b_and_c():
    x = np.array([1, 1, 1, 0, 0, 0], bool)
    y = np.array([1, 0, 0, 1, 0, 0], bool)
    assert st.table2x2(x, y) == (1, 2, 1, 2)
    assert st.table2x2(y, x) == (1, 1, 2, 2)


@pytest.mark.parametrize("a,b,c,d", [(40, 10, 5, 45), (3, 0, 7, 1), (0, 4, 4, 0), (10, 2, 0, 0), (1, 2, 3, 4)])
def test_kappa_against_sklearn(a, b, c, d):
    x = np.array([1] * a + [1] * b + [0] * c + [0] * d)
    y = np.array([1] * a + [0] * b + [1] * c + [0] * d)
    expected = cohen_kappa_score(x, y)
    assert st.kappa_from_table(a, b, c, d) == pytest.approx(expected)
    assert st.boot_kappa([a], [b], [c], [d])[0] == pytest.approx(expected)


def test_kappa_undefined_cases_are_nan():
    assert math.isnan(st.kappa_from_table(5, 0, 0, 0))  # pe = 1: both raters constant and equal
    assert math.isnan(st.kappa_from_table(0, 0, 0, 7))
    assert math.isnan(st.kappa_from_table(0, 0, 0, 0))
    assert math.isnan(st.boot_kappa([5], [0], [0], [0])[0])
    # pe just under 1 is defined: a=9, b=1 -> po = 0.9, pe = (10*9 + 0*1)/100 = 0.9 -> kappa = 0
    assert st.kappa_from_table(9, 1, 0, 0) == pytest.approx(0.0)


def test_ac1_by_hand_and_boot_matches():
    # a=3, b=1, c=2, d=4 (n=10): pa = 0.7, pi = (0.4 + 0.5) / 2 = 0.45, pe = 2 * 0.45 * 0.55 = 0.495
    expected = (0.7 - 0.495) / (1 - 0.495)
    assert st.gwet_ac1(3, 1, 2, 4) == pytest.approx(expected)
    assert st.boot_ac1([3, 5], [1, 0], [2, 0], [4, 5]) == pytest.approx([expected, 1.0])
    # a=2, b=3, c=0, d=5: pa = 0.7, pi = (0.5 + 0.2) / 2 = 0.35, pe = 0.455
    assert st.gwet_ac1(2, 3, 0, 5) == pytest.approx((0.7 - 0.455) / (1 - 0.455))
    assert st.boot_ac1([2], [3], [0], [5])[0] == pytest.approx((0.7 - 0.455) / (1 - 0.455))


def test_specific_agreements_and_zero_denominators():
    assert st.positive_specific_agreement(1, 2, 3, 4) == pytest.approx(2 / 7)
    assert st.negative_specific_agreement(1, 2, 3, 4) == pytest.approx(8 / 13)
    assert math.isnan(st.positive_specific_agreement(0, 0, 0, 4))
    assert math.isnan(st.negative_specific_agreement(4, 0, 0, 0))
    assert st.positive_specific_agreement(0, 1, 0, 4) == 0.0


@pytest.mark.parametrize("b,c", [(0, 0), (3, 3), (0, 5), (7, 1), (1, 7)])
def test_mcnemar_against_scipy_binomtest(b, c):
    expected = sps.binomtest(min(b, c), b + c, 0.5).pvalue if b + c else 1.0
    assert st.mcnemar_exact(b, c) == pytest.approx(expected)


def test_roc_auc_against_sklearn_with_ties():
    s = np.array([0.1, 0.4, 0.4, 0.35, 0.8, 0.4, 0.9, 0.1])
    y = np.array([0, 0, 1, 1, 1, 0, 1, 1], bool)
    assert st.roc_auc(s, y) == pytest.approx(roc_auc_score(y, s))
    assert math.isnan(st.roc_auc(s, np.ones(8, bool))) and math.isnan(st.roc_auc(s, np.zeros(8, bool)))
    # hand: positives {0.9}, negatives {0.1, 0.5}: both pairs ordered -> 1; {0.5} vs {0.5}: tie -> 0.5
    assert st.roc_auc([0.1, 0.9, 0.5], [0, 1, 0]) == 1.0
    assert st.roc_auc([0.5, 0.5], [0, 1]) == 0.5


def test_boot_auc_rows_against_sklearn():
    s = np.array([0.1, 0.4, 0.4, 0.35, 0.8])
    y = np.array([0, 0, 1, 1, 1], bool)
    idx = np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 0, 2, 2, 4], [2, 3, 4, 2, 3]])
    got = st.boot_auc(s, y, idx)
    for r in range(3):
        assert got[r] == pytest.approx(roc_auc_score(y[idx[r]], s[idx[r]]))
    assert math.isnan(got[3])  # only positives drawn


def test_bootstrap_indices_shape_and_range():
    idx = st.bootstrap_indices(3, 4000, np.random.default_rng(0))
    assert idx.shape == (4000, 3) and set(np.unique(idx)) == {0, 1, 2}
    np.testing.assert_array_equal(idx, np.random.default_rng(0).integers(0, 3, size=(4000, 3)))


def test_percentile_ci_drops_non_finite_and_uses_both_tails():
    x = np.array([5.0, 1.0, np.nan, 3.0, 2.0, 4.0, np.inf, -np.inf])
    finite = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert st.percentile_ci(x) == pytest.approx((np.quantile(finite, 0.025), np.quantile(finite, 0.975)))
    # alpha = 0.5 -> the 25th and 75th percentiles of 1..5: 2 and 4
    assert st.percentile_ci(finite, alpha=0.5) == pytest.approx((2.0, 4.0))
    lo, hi = st.percentile_ci(np.array([np.nan]))
    assert math.isnan(lo) and math.isnan(hi)


def test_boot_tables_and_ratio():
    x = np.array([1, 1, 0, 0], bool)
    y = np.array([1, 0, 1, 0], bool)
    # rows: each pair once; (both, both, x only, x only); (neither x3, y only)
    idx = np.array([[0, 1, 2, 3], [0, 0, 1, 1], [3, 3, 3, 2], [1, 1, 1, 0]])
    a, b, c, d = st.boot_tables(x, y, idx)
    assert (a.tolist(), b.tolist(), c.tolist(), d.tolist()) == ([1, 2, 0, 1], [1, 2, 0, 3], [1, 0, 1, 0],
                                                                [1, 0, 3, 0])
    r = st.boot_ratio(np.array([1.0, 0.0, 2.0]), np.array([4.0, 0.0, 2.0]))
    assert r[0] == 0.25 and math.isnan(r[1]) and r[2] == 1.0


def test_cluster_bootstrap_rate_is_ratio_of_resampled_sums():
    succ, tot = np.array([1.0, 0.0, 2.0]), np.array([2.0, 1.0, 4.0])
    got = st.cluster_bootstrap_rate(succ, tot, 300, np.random.default_rng(5))
    idx = np.random.default_rng(5).integers(0, 3, size=(300, 3))
    expected = [sum(succ[i] for i in row) / sum(tot[i] for i in row) for row in idx]
    assert got == pytest.approx(expected)


# ---------------------------------------------------------------- conformal

def test_threshold_at_k_equal_n_is_the_largest_not_inf():
    # n = 9, alpha = 0.1: k = 9 = n -> the largest score, no warning
    assert conformal_threshold([0.9, 0.1, 0.5, 0.3, 0.2, 0.4, 0.6, 0.8, 0.7], 0.1) == 0.9
    # n = 8: k = ceil(9 * 0.9) = 9 > 8 -> inf
    with pytest.warns(SmallCalibrationWarning):
        assert conformal_threshold(np.arange(8) / 10, 0.1) == math.inf


@pytest.mark.parametrize("n,alpha,k", [(10, 0.1, 9), (20, 0.05, 19), (4, 0.6, 2), (10, 0.95, 1), (3, 0.5, 2), (7, 0.99, 1),
                                       (10, 0.28, 8)])  # ceil(7.2) = 8, not round(7.2) = 7
def test_naive_threshold_rank_by_hand(n, alpha, k):
    # k = max(1, ceil(n (1 - alpha))): e.g. n = 4, alpha = 0.6 -> ceil(1.6) = 2; n = 7, alpha = 0.99 -> ceil(0.07) = 1
    s = np.arange(n, 0, -1) / 100  # unsorted on purpose
    assert naive_threshold(s, alpha) == pytest.approx(k / 100)


def test_pac_rank_smallest_k_and_none():
    from scipy.stats import binom
    for n, alpha, delta in [(30, 0.2, 0.1), (100, 0.1, 0.05), (50, 0.3, 0.5)]:
        k = pac_rank(n, alpha, delta)
        assert binom.cdf(k - 1, n, 1 - alpha) >= 1 - delta
        assert binom.cdf(k - 2, n, 1 - alpha) < 1 - delta
    # n = 5, alpha = 0.1, delta = 0.05: even k = 5 gives P(Binom(5, .9) <= 4) = 1 - .9^5 = 0.41 < 0.95 -> none
    assert pac_rank(5, 0.1, 0.05) == 6
    # n = 1, alpha = 0.5, delta = 0.5: k = 1 -> P(Binom(1, .5) <= 0) = 0.5 >= 0.5
    assert pac_rank(1, 0.5, 0.5) == 1


def test_guard_calibrate_ignores_positives_and_nan_and_falls_back_for_unknown_groups():
    scores = [0.3, np.nan, 0.1, 0.2, 0.9, 0.05, 0.4]
    labels = [0, 0, 0, 0, 1, 1, 0]
    groups = ["a", "a", "a", "b", "b", "a", "b"]
    g = ConformalGuard(alpha=0.4).calibrate(scores, labels, groups=groups)
    # finite negatives 0.3, 0.1, 0.2, 0.4 (n = 4): k = ceil(5 * 0.6) = 3 -> tau = 0.3
    assert (g.n_unsupported, g.k, g.tau) == (4, 3, 0.3)
    # group a: {0.3, 0.1}, k = ceil(3 * .6) = 2 -> 0.3; group b: {0.2, 0.4} -> 0.4
    assert g.group_tau == {"a": 0.3, "b": 0.4}
    assert g.predict([0.35, 0.35, 0.35], groups=["a", "b", "zzz"]).tolist() == [False, True, False]
    assert g.predict([0.3, 0.31]).tolist() == [True, False]


def _split_coverage_by_hand(neg, pos, n_cal, alpha, n_splits, seed, delta):
    rng = np.random.default_rng(seed)
    perm = rng.random((n_splits, len(neg))).argsort(axis=1)
    out = {"conformal": [], "naive": [], "pac": [], "flag_supported": [], "tau": []}
    for p in perm:
        cal, test = sorted(neg[p[:n_cal]]), neg[p[n_cal:]]
        k = math.ceil(round((n_cal + 1) * (1 - alpha), 9))
        tau = cal[k - 1] if k <= n_cal else math.inf
        kn = max(1, math.ceil(round(n_cal * (1 - alpha), 9)))
        kp = pac_rank(n_cal, alpha, delta)
        tau_p = cal[kp - 1] if kp <= n_cal else math.inf
        out["tau"].append(tau)
        out["conformal"].append(sum(t <= tau for t in test) / len(test))
        out["naive"].append(sum(t <= cal[kn - 1] for t in test) / len(test))
        out["pac"].append(sum(t <= tau_p for t in test) / len(test))
        out["flag_supported"].append(sum(q <= tau for q in pos) / len(pos))
    return out


# (8, 0.2) and (4, 0.4): the PAC rank is exactly n_cal (delta 0.2); (1, 0.5), (4, 0.8): the naive rank is 1
@pytest.mark.parametrize("n_cal,alpha", [(5, 0.2), (9, 0.1), (4, 0.1), (6, 0.5), (8, 0.2), (4, 0.4), (1, 0.5),
                                         (4, 0.8)])
@pytest.mark.parametrize("neg", [[0.05, 0.1, 0.1, 0.2, 0.3, 0.35, 0.5, 0.5, 0.6, 0.7, 0.8, 0.9],
                                 [0.1, 0.2, 0.3, 0.4] * 3])  # heavy ties: test scores equal to tau
def test_split_coverage_against_a_loop(n_cal, alpha, neg):
    neg = np.array(neg)
    pos = np.array([0.1, 0.5, 0.65, 0.95])
    got = split_coverage(neg, pos, n_cal, [alpha], 6, np.random.default_rng(11), delta=0.2)
    want = _split_coverage_by_hand(neg, pos, n_cal, alpha, 6, 11, 0.2)
    for key in want:
        assert got[key].shape == (1, 6)
        np.testing.assert_allclose(got[key][0], want[key])


@pytest.mark.filterwarnings("error")  # no mean of an empty array
def test_split_coverage_rejects_bad_sizes_and_handles_no_positives():
    neg = np.arange(5) / 10
    for n_cal in (0, 5, 6):
        with pytest.raises(ValueError, match="n_cal"):
            split_coverage(neg, np.zeros(0), n_cal, [0.1], 2, np.random.default_rng(0))
    out = split_coverage(neg, np.zeros(0), 4, [0.5], 2, np.random.default_rng(0))
    assert np.isnan(out["flag_supported"]).all() and "pac" not in out


# ---------------------------------------------------------------- the scoring protocol

@pytest.mark.parametrize("n,w,s,expected", [
    (600, 600, 300, [(0, 600)]),
    (601, 600, 300, [(0, 600), (1, 601)]),
    (900, 600, 300, [(0, 600), (300, 900)]),
    (901, 600, 300, [(0, 600), (300, 900), (301, 901)]),
    (899, 600, 300, [(0, 600), (299, 899)]),  # no window may run past the end
    (9, 4, 3, [(0, 4), (3, 7), (5, 9)]),
    (0, 600, 300, [(0, 0)]),
    (10, 4, 3, [(0, 4), (3, 7), (6, 10)]),
    (11, 4, 3, [(0, 4), (3, 7), (6, 10), (7, 11)]),
])
def test_window_spans_by_hand(n, w, s, expected):
    assert window_spans(n, w, s) == expected


def test_verifier_hash_ignores_only_runtime_keys():
    base = {"kind": "nli", "model": "m", "revision": "r", "max_length": 512, "batch_size": 8}
    h = verifier_hash(base)
    for k, v in [("batch_size", 64), ("device", "cuda"), ("threshold", 0.3), ("max_retries", 9),
                 ("resources", {"gpu": 1}), ("base_url", "x"), ("timeout_seconds", 1)]:
        assert verifier_hash({**base, k: v}) == h, k
    for k, v in [("model", "m2"), ("revision", "r2"), ("max_length", 256), ("kind", "attrscore"),
                 ("prompt", "p"), ("label_words", ["a"])]:
        assert verifier_hash({**base, k: v}) != h, k


def test_cache_key_separates_claim_from_window_and_round_trips(tmp_path):
    assert ScoreCache.key("ab", "c") != ScoreCache.key("a", "bc")
    c = ScoreCache(tmp_path / "c.sqlite")
    items = [(ScoreCache.key(str(i), "w"), i / 1000, i % 2 == 0) for i in range(1201)]
    items[7] = (items[7][0], float("nan"), False)
    c.put_many(items)
    got = c.get_many([k for k, _, _ in items] + ["absent"])
    assert len(got) == 1201 and "absent" not in got  # read in chunks of 500: 500 + 500 + 201
    assert got[items[1200][0]] == (1.2, True) and got[items[3][0]] == (0.003, False)
    assert math.isnan(got[items[7][0]][0])


def test_cache_opened_while_another_job_holds_its_write_lock_waits_instead_of_failing(tmp_path):
    """SQLite refuses the switch to WAL at once ("database is locked", no busy wait) while another
    connection holds the write lock: the kit smoke run's side-by-side score jobs hit it in CI. The
    cache must wait for the lock (held here by another process for 1.5 s) and then open."""
    import subprocess
    import sys
    import time

    path = tmp_path / "c.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, time\n"
        f"c = sqlite3.connect({str(path)!r}); c.execute('CREATE TABLE x (y)'); c.commit()\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('INSERT INTO x VALUES (1)'); print('locked', flush=True)\n"
        "time.sleep(1.5); c.commit()\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t = time.monotonic()
        c = ScoreCache(path, timeout=30)
        assert time.monotonic() - t >= 0.5  # it waited for the holder
        c.put_many([("k", 0.25, False)])
        assert c.get_many(["k"]) == {"k": (0.25, False)}
        c.close()
    finally:
        holder.wait(timeout=30)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, time\n"
        f"c = sqlite3.connect({str(tmp_path / 'd.sqlite')!r}); c.execute('CREATE TABLE x (y)'); c.commit()\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute('INSERT INTO x VALUES (1)'); print('locked', flush=True)\n"
        "time.sleep(3); c.commit()\n")], stdout=subprocess.PIPE, text=True)
    try:  # and it gives up with SQLite's own error once its timeout has passed
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            ScoreCache(tmp_path / "d.sqlite", timeout=0.5)
    finally:
        holder.wait(timeout=30)


class TableVerifier:
    """Scores a unit by a lookup on the window's first letter; records every call."""
    name = "table"
    binary = False
    batch_size = 4

    def __init__(self, table, threshold=None):
        self.table, self.calls = table, []
        if threshold is not None:
            self.threshold = threshold

    def judge(self, claims, windows):
        self.calls.append(list(zip(claims, windows)))
        s = np.array([self.table[w[0]] for w in windows], float)
        return s, s >= 0.5


def test_score_pairs_max_over_windows_dedup_chunks_and_claim_cap():
    # passage "aaaabbbbcccc" in windows of 4 at stride 4 -> "aaaa", "bbbb", "cccc"
    v = TableVerifier({"a": 0.2, "b": 0.7, "c": 0.4, "d": float("nan")})
    ps = score_pairs(v, ["claim one", "claim one", "claim two", "claim three"], ["aaaabbbbcccc", "aaaabbbbcccc", "ccccaaaa",
                                                                      "dddd"],
                     window_chars=4, stride=4, claim_cap=5, chunk_units=2, progress=False)
    # units: (claim, aaaa), (claim, bbbb), (claim, cccc) shared by pairs 0 and 1 after the 5-char cap
    # ("claim one" and "claim two" both become "claim"), plus (claim, dddd): 4 units
    assert ps.n_units == 4 and ps.n_cached == 0
    assert [len(c) for c in v.calls] == [2, 2]
    assert all(c == "claim" for call in v.calls for c, _ in call)
    assert ps.score[:3].tolist() == [0.7, 0.7, 0.4]
    assert ps.best_window[:3].tolist() == [1, 1, 0]
    assert ps.n_windows.tolist() == [3, 3, 2, 1]
    assert ps.verdict.tolist() == [True, True, False, False]
    assert math.isnan(ps.score[3]) and ps.reason == ["", "", "", "unscored"] and ps.best_window[3] == -1


def test_score_pairs_chunks_by_the_verifiers_own_chunk_units_unless_told():
    passages = ["aaaabbbbccccdddd", "aaaabbbbccccdddd"]  # 2 claims x 4 windows = 8 units
    v = TableVerifier({"a": 0.2, "b": 0.7, "c": 0.4, "d": 0.1})
    score_pairs(v, ["x", "y"], passages, window_chars=4, stride=4, progress=False)
    assert [len(c) for c in v.calls] == [8]  # no chunk_units anywhere: 256 per call
    v = TableVerifier({"a": 0.2, "b": 0.7, "c": 0.4, "d": 0.1})
    v.chunk_units = 3  # a verifier that wants its units 3 at a time (the embedding verifier: 16,384)
    ps = score_pairs(v, ["x", "y"], passages, window_chars=4, stride=4, progress=False)
    assert [len(c) for c in v.calls] == [3, 3, 2] and ps.score.tolist() == [0.7, 0.7]
    v.calls.clear()
    score_pairs(v, ["x", "y"], passages, window_chars=4, stride=4, chunk_units=5, progress=False)
    assert [len(c) for c in v.calls] == [5, 3]  # the caller's chunk_units wins


def test_score_pairs_verdict_from_threshold_for_cached_units(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    first = TableVerifier({"a": 0.5, "b": 0.3}, threshold=0.9)  # verdicts from judge: 0.5 -> True
    a = score_pairs(first, ["c"], ["aaaabbbb"], window_chars=4, stride=4, cache=cache, progress=False)
    assert a.verdict.tolist() == [True]  # fresh units keep the verifier's own verdict
    # a second run reads the cache, and its threshold (0.4 / 0.6) re-derives verdict = score >= threshold
    again = TableVerifier({"a": 0.0, "b": 0.0}, threshold=0.5)
    b = score_pairs(again, ["c"], ["aaaabbbb"], window_chars=4, stride=4, cache=cache, progress=False)
    assert again.calls == [] and b.n_cached == 2 and b.score.tolist() == [0.5] and b.verdict.tolist() == [True]
    c = score_pairs(TableVerifier({}, threshold=0.51), ["c"], ["aaaabbbb"], window_chars=4, stride=4, cache=cache,
                    progress=False)
    assert c.verdict.tolist() == [False]


@pytest.mark.filterwarnings("error")  # undefined statistics are NaN quietly, not with a RuntimeWarning
def test_undefined_statistics_are_quiet_nans():
    assert math.isnan(st.kappa_from_table(0, 0, 0, 0)) and math.isnan(st.gwet_ac1(0, 0, 0, 0))
    assert math.isnan(st.boot_kappa([3], [0], [0], [0])[0]) and math.isnan(st.boot_ac1([0], [0], [0], [0])[0])
    assert math.isnan(st.boot_ratio(np.array([0.0]), np.array([0.0]))[0])
    got = st.boot_auc([0.2, 0.8, 0.5], [1, 1, 0], np.array([[0, 1, 1], [2, 2, 2], [0, 2, 1]]))
    assert math.isnan(got[0]) and math.isnan(got[1]) and got[2] == 0.5  # row 2: 0.5 beats 0.2, not 0.8


def test_boot_ratio_small_and_fractional_denominators():
    r = st.boot_ratio(np.array([1.0, 0.25, 3.0]), np.array([1.0, 0.5, 2.0]))
    assert r.tolist() == [1.0, 0.5, 1.5]


def test_table2x2_and_ac1_accept_integer_votes():
    assert st.table2x2([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == (2, 1, 1, 1)
    # verdict columns read back from CSV with gaps come as floats 0.0 / 1.0
    assert st.table2x2(np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])) == (1, 1, 0, 1)
    assert st.table2x2(np.array([True, False]), np.array([1.0, 0.0])) == (1, 0, 0, 1)
    a, b, c, d = st.boot_tables(np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([[0, 1]]))
    assert (a[0], b[0], c[0], d[0]) == (0, 1, 1, 0)
    a, b, c, d = st.boot_tables(np.array([True, False]), np.array([0.0, 1.0]), np.array([[0, 1]]))
    assert (a[0], b[0], c[0], d[0]) == (0, 1, 1, 0)
    a, b, c, d = st.boot_tables([1, 1, 0, 0], [1, 0, 1, 0], np.array([[0, 1, 2, 3]]))
    assert (a[0], b[0], c[0], d[0]) == (1, 1, 1, 1)
    # one positive and one negative per row: AUC is 0 or 1, never NaN
    assert st.boot_auc([0.1, 0.9], [0, 1], np.array([[0, 1]]))[0] == 1.0
    assert st.boot_auc([0.9, 0.1], [0, 1], np.array([[0, 1]]))[0] == 0.0


def test_default_protocol_is_600_char_windows_at_stride_300():
    assert window_spans(1000) == [(0, 600), (300, 900), (400, 1000)]
    from citebound.verifiers.base import make_windows
    assert [len(w) for w in make_windows("x" * 901)] == [600, 600, 600]
    assert make_windows("ab" * 300) == ["ab" * 300]  # exactly 600: one window


def test_score_pairs_defaults_cap_claims_at_600_and_chunk_256_units(capsys):
    import re
    v = TableVerifier({"a": 0.5, "b": 0.6, "c": 0.9, "d": 0.1})
    claims = ["c" * 700] + [f"claim {i}" for i in range(99)]
    # 1,000 chars: windows start at 0 ("a"), 300 ("b") and 400 ("c")
    ps = score_pairs(v, claims, ["a" * 300 + "b" + "d" * 99 + "c" * 600] * 100)
    assert [len(c) for c in v.calls] == [256, 44]
    assert len(v.calls[0][0][0]) == 600
    assert {w[0] for call in v.calls for _, w in call} == {"a", "b", "c"}
    assert {len(w) for call in v.calls for _, w in call} == {600}
    assert ps.n_units == 300 and ps.n_windows.tolist() == [3] * 100
    assert ps.best_window.tolist() == [2] * 100 and ps.score.tolist() == [0.9] * 100
    err = capsys.readouterr().err
    assert "score[table]" in err and "300/300" in err and re.search(r"[\d.]+win/s", err)  # a bar by default
    score_pairs(TableVerifier({"a": 0.9}), ["c"], ["a"], progress=False)
    assert "score[" not in capsys.readouterr().err


def test_score_pairs_logs_its_counts(caplog, tmp_path):
    import logging
    cache = ScoreCache(tmp_path / "c.sqlite")
    score_pairs(TableVerifier({"a": 0.9, "b": 0.1}), ["c"], ["aaaa"], window_chars=4, stride=4, cache=cache,
                progress=False)
    with caplog.at_level(logging.INFO, logger="citebound.verifiers.base"):
        score_pairs(TableVerifier({"a": 0.9, "b": 0.1}), ["c", "c", "d"], ["aaaa", "aaaabbbb", "bbbb"],
                    window_chars=4, stride=4, cache=cache, progress=False)
    # units: (c, aaaa) cached, (c, bbbb), (d, bbbb) new
    assert caplog.messages == ["table: 3 pairs, 3 unique (claim, window) units, 1 cached, 2 to score"]


def test_score_pairs_skipped_pairs_do_not_stop_the_ones_after_them():
    v = TableVerifier({"a": 0.9, "d": float("nan")})
    ps = score_pairs(v, ["c", None, "c", "c", "e"], ["dddd", "aaaa", "", "aaaa", "aaaa"], window_chars=4, stride=4,
                     progress=False)
    assert ps.reason == ["unscored", "missing_claim", "empty_passage", "", ""]
    assert ps.score[3:].tolist() == [0.9, 0.9] and ps.verdict.tolist() == [False, False, False, True, True]
    assert ps.score[2] == 0.0 and ps.n_windows.tolist() == [1, 0, 0, 1, 1]
    # the arrays keep their types when written to a table
    assert ps.verdict.dtype == bool and ps.best_window.dtype.kind == "i" and ps.n_windows.dtype.kind == "i"
    assert ps.best_window.tolist() == [-1, -1, -1, 0, 0]


def test_cache_in_a_new_nested_folder_and_key_format(tmp_path):
    c = ScoreCache(tmp_path / "new" / "deeper" / "c.sqlite")
    c.put_many([(ScoreCache.key("c", "w"), 0.5, True)])
    assert (tmp_path / "new" / "deeper" / "c.sqlite").exists()
    k = ScoreCache.key("c", "w")
    assert len(k) == 40 and int(k, 16) >= 0  # 40 hex digits of sha256("c\x1fw")
    import hashlib
    assert k == hashlib.sha256(b"c\x1fw").hexdigest()[:40]


def test_guard_takes_json_nulls_as_missing_scores():
    # scores read from JSON may hold null: not a calibration example, and flagged at deployment
    g = ConformalGuard(alpha=0.5).calibrate([0.2, None, 0.4, 0.9], [0, 0, 0, 1])
    assert (g.n_unsupported, g.k, g.tau) == (2, 2, 0.4)  # k = ceil(3 * 0.5) = 2 of {0.2, 0.4}
    assert g.predict([None, 0.5, 0.4]).tolist() == [True, False, True]
