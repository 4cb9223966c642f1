import math

import numpy as np
import pytest

from citebound.calibration import stats as st
from citebound.calibration.conformal import (
    ConformalGuard,
    SmallCalibrationWarning,
    conformal_rank,
    conformal_threshold,
    naive_threshold,
    pac_rank,
    split_coverage,
)

# 2x2: a=40 both supported, b=10, c=5, d=45 (n=100)
A, B, C, D = 40, 10, 5, 45


def test_kappa_hand_computed():
    po = 0.85
    pe = (50 * 45 + 50 * 55) / 100**2  # row/col marginals: (a+b)=50,(a+c)=45,(c+d)=50,(b+d)=55
    assert st.kappa_from_table(A, B, C, D) == pytest.approx((po - pe) / (1 - pe))
    assert st.boot_kappa(np.array([A]), np.array([B]), np.array([C]), np.array([D]))[0] == pytest.approx(0.7)


def test_ac1_psa_nsa_hand_computed():
    pi = (0.50 + 0.45) / 2
    pe = 2 * pi * (1 - pi)
    assert st.gwet_ac1(A, B, C, D) == pytest.approx((0.85 - pe) / (1 - pe))
    assert st.positive_specific_agreement(A, B, C, D) == pytest.approx(80 / 95)
    assert st.negative_specific_agreement(A, B, C, D) == pytest.approx(90 / 105)
    x = np.array([1] * 40 + [1] * 10 + [0] * 5 + [0] * 45, bool)
    y = np.array([1] * 40 + [0] * 10 + [1] * 5 + [0] * 45, bool)
    assert st.table2x2(x, y) == (A, B, C, D)


def test_wilson_known_value():
    # 8/10: Wilson 95% interval (Newcombe 1998) = (0.4902, 0.9433)
    ci = st.wilson(8, 10)
    assert (round(ci.low, 4), round(ci.high, 4)) == (0.4902, 0.9433)


def test_mcnemar_exact_binomial():
    # exact two-sided p = 2 * P(Binom(12, 0.5) <= 2)
    expected = 2 * sum(math.comb(12, i) for i in range(3)) / 2**12
    assert st.mcnemar_exact(10, 2) == pytest.approx(expected)


def test_auc_against_pair_counting():
    rng = np.random.default_rng(0)
    s, y = rng.random(40), rng.random(40) < 0.5
    pairs = [(1.0 if a > b else 0.5 if a == b else 0.0) for a in s[y] for b in s[~y]]
    assert st.roc_auc(s, y) == pytest.approx(np.mean(pairs))
    idx = np.arange(40)[None, :]
    assert st.boot_auc(s, y, idx)[0] == pytest.approx(np.mean(pairs))


def test_cluster_bootstrap_resamples_items():
    succ, tot = np.array([1.0, 0.0]), np.array([1.0, 9.0])
    draws = st.cluster_bootstrap_rate(succ, tot, 2000, np.random.default_rng(1))
    # possible item draws: {0,0}->1.0, {1,1}->0.0, mixed -> 0.1
    assert set(np.round(np.unique(draws), 6)) <= {0.0, 0.1, 1.0}


def test_conformal_threshold_matches_brute_force_rank():
    rng = np.random.default_rng(3)
    for n in (5, 19, 50, 101):
        s = rng.random(n)
        for alpha in (0.05, 0.1, 0.2, 0.5):
            k = math.ceil((n + 1) * (1 - alpha))
            if k > n:
                with pytest.warns(SmallCalibrationWarning):
                    assert conformal_threshold(s, alpha) == math.inf
                continue
            # brute force: smallest t among scores with #{s <= t} >= k
            brute = min(t for t in s if np.sum(s <= t) >= k)
            assert conformal_threshold(s, alpha) == brute
            assert conformal_rank(n, alpha) == k


def test_float_safe_rank():
    # (19 + 1) * 0.95 = 19.000000000000004 in floating point; k must be 19
    assert conformal_rank(19, 0.05) == 19


def test_guard_flags_ties_and_reports_small_n():
    g = ConformalGuard(alpha=0.2).calibrate([0.1, 0.2, 0.3, 0.4, 0.9, 0.95], [0, 0, 0, 0, 1, 1])
    assert (g.k, g.tau, g.n_unsupported) == (4, 0.4, 4)
    assert g.predict([0.4, 0.41, np.nan]).tolist() == [True, False, True]
    with pytest.warns(SmallCalibrationWarning, match="too few"):
        ConformalGuard(alpha=0.01).calibrate([0.1, 0.2], [0, 0])


def test_mondrian_groups():
    g = ConformalGuard(alpha=0.5).calibrate([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0] * 6, groups=list("aaabbb"))
    assert g.group_tau == {"a": 0.2, "b": 0.8}
    assert g.predict([0.5, 0.5], groups=["a", "b"]).tolist() == [False, True]


def test_coverage_at_least_target_on_exchangeable_scores():
    rng = np.random.default_rng(7)
    neg, pos = rng.beta(2, 5, 2000), rng.beta(5, 2, 500)
    cov = split_coverage(neg, pos, 100, [0.1, 0.05], 2000, rng, delta=0.1)
    # marginal guarantee: E[coverage] >= 1 - alpha (k/(n+1) = 91/101 = 0.901 and 96/101 = 0.950)
    assert cov["conformal"][0].mean() >= 0.9 - 0.003
    assert cov["conformal"][1].mean() >= 0.95 - 0.003
    # naive quantile under-covers on average at this size; PAC covers in >= 1-delta of splits
    assert cov["naive"][0].mean() < cov["conformal"][0].mean()
    assert np.mean(cov["pac"][0] >= 0.9) >= 0.9 - 0.02


def test_pac_rank_binomial_tail():
    from scipy.stats import binom
    n, alpha, delta = 200, 0.1, 0.05
    k = pac_rank(n, alpha, delta)
    assert binom.cdf(k - 1, n, 1 - alpha) >= 1 - delta > binom.cdf(k - 2, n, 1 - alpha)
    assert k > conformal_rank(n, alpha)
    assert naive_threshold(np.arange(1, 11) / 10, 0.1) == 0.9


def test_calibration_summary_counts_scores_at_tau_as_flagged_worked_by_hand():
    import math

    from citebound.calibration.files import calibration_summary

    # 9 unsupported scores 0.1..0.9, alpha 0.1: k = ceil(10 * 0.9) = 9, tau = 0.9 (the largest)
    unsup = [round(0.1 * i, 1) for i in range(1, 10)]
    sup = [0.9, 0.95, 1.0, 0.5]  # 0.9 sits exactly at tau: flagged (score <= tau), as is 0.5
    s = calibration_summary(unsup + sup, [0] * 9 + [1] * 4, alpha=0.1, delta=0.1, verifier="x", verifier_hash="h")
    assert (s["k"], s["tau"], s["n_unsupported"], s["n_supported"]) == (9, 0.9, 9, 4)
    assert s["flag_rate_supported"] == 2 / 4
    # expected flag rate: 9 + 2 of 13 flagged; Wilson 95% interval written out (z = 1.959964)
    k, n, z = 11, 13, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    fr = s["expected_flag_rate"]
    assert fr["estimate"] == pytest.approx(p)
    assert (fr["ci_low"], fr["ci_high"]) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_wilson_is_statsmodels_to_the_last_bit():
    """The guard's own Wilson interval (no statsmodels in its install) against statsmodels'."""
    from statsmodels.stats.proportion import proportion_confint

    from citebound.calibration.stats import wilson

    for n in (1, 2, 3, 7, 10, 13, 50, 199, 200):
        for k in range(n + 1):
            for alpha in (0.05, 0.1, 0.2):
                lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
                w = wilson(k, n, alpha)
                assert (w.estimate, w.low, w.high) == (k / n, float(lo), float(hi)), (k, n, alpha)


@pytest.mark.parametrize("alpha,delta", [(0.1, 0.1), (0.05, 0.01), (0.3, 0.2)])
def test_pac_rank_equals_an_exhaustive_search_at_every_scale(alpha, delta):
    """#52 item 8: the bisection deploys the same rank as testing every k with SciPy's cdf, for every n up to
    300, around the exact/windowed switch (100,000), and at 1,000,000."""
    from scipy.stats import binom

    def exhaustive(n):
        ks = np.arange(1, n + 2)
        return int(ks[binom.cdf(ks - 1, n, 1 - alpha) >= 1 - delta][0])
    for n in [*range(0, 301), 99_999, 100_000, 100_001, 1_000_000]:
        assert pac_rank(n, alpha, delta) == exhaustive(n), n


@pytest.mark.parametrize("n,alpha,k", [
    (9, 0.7, 3),    # (9 + 1) x 0.3 = 3 exactly; in floats 10 x (1 - 0.7) = 3.0000000000000004
    (19, 0.85, 3),  # 20 x 0.15 = 3; in floats 3.0000000000000004
    (9, 0.1, 9), (10, 0.1, 10), (19, 0.05, 19), (4, 0.5, 3),  # 10 x 0.9 = 9; 11 x 0.9 = 9.9; 20 x 0.95 = 19; 5 x 0.5 = 2.5
])
def test_the_conformal_rank_is_exact_where_float_products_overshoot_an_integer(n, alpha, k):
    assert conformal_rank(n, alpha) == k
    neg = [0.1 * i for i in range(1, n + 1)]  # the k-th smallest is 0.1 k
    assert ConformalGuard(alpha=alpha).calibrate(neg, [0] * n).tau == pytest.approx(0.1 * k)


def test_mondrian_groups_numbers_and_a_group_without_unsupported_labels():
    """alpha 0.5. Group 1's unsupported [0.1, 0.2, 0.3]: k = ceil(4 x 0.5) = 2, tau 0.2; group 2's [0.6, 0.7, 0.8]:
    tau 0.7; group 3 has only supported labels, so no tau of its own: the pooled one, k = ceil(7 x 0.5) = 4 of the
    six, 0.6. Groups given as numbers find their own tau (the taus are keyed by the group's text)."""
    scores = [0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
    labels = [0, 0, 0, 0, 0, 0, 1, 1, 1]
    groups = [1, 1, 1, 2, 2, 2, 3, 3, 1]
    g = ConformalGuard(alpha=0.5).calibrate(scores, labels, groups)
    assert (g.tau, g.group_tau) == (0.6, {"1": 0.2, "2": 0.7})
    # 0.25: above group 1's 0.2 (passes), under the pooled 0.6; 0.65: under group 2's 0.7, above the pooled 0.6;
    # 0.65 in group 3: the pooled 0.6 (passes), never an infinite tau that flags every citation of the group
    got = g.predict([0.25, 0.2, 0.65, 0.7, 0.65, 0.6], groups=[1, 1, 2, 2, 3, 3]).tolist()
    assert got == [False, True, True, True, False, True]
    assert g.predict([0.25], groups=["1"]).tolist() == [False]  # the same group by its text
