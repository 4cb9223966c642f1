"""The guard's own binomial tails against scipy.stats (an independent implementation)."""
import numpy as np
import pytest
from hidden_imports import hide_imports
from scipy import stats

from citebound.calibration.binomial import binom_cdf, binom_sf, normal_isf, upper_bound


@pytest.mark.parametrize("n,p", [(1, 0.5), (10, 0.3), (37, 0.9), (500, 0.1), (2000, 0.97), (5, 1e-9)])
def test_binom_cdf_equals_scipy_for_every_k(n, p):
    ks = np.arange(-2, n + 3)
    np.testing.assert_allclose(binom_cdf(ks, n, p), stats.binom.cdf(ks, n, p), rtol=1e-10, atol=1e-13)
    assert binom_cdf(3, n, p) == pytest.approx(stats.binom.cdf(3, n, p), rel=1e-10, abs=1e-13)


def test_binom_cdf_edges_by_hand():
    assert binom_cdf(0, 4, 0.5) == 1 / 16
    assert binom_cdf(2, 4, 0.5) == pytest.approx(11 / 16)
    assert binom_cdf(-1, 4, 0.5) == 0.0 and binom_cdf(4, 4, 0.5) == 1.0
    assert binom_cdf(0, 4, 0.0) == 1.0 and binom_cdf(3, 4, 1.0) == 0.0 and binom_cdf(4, 4, 1.0) == 1.0


@pytest.mark.parametrize("k,n,level", [(0, 10, 0.05), (3, 10, 0.1), (12, 200, 0.01), (99, 100, 0.05), (0, 1, 0.5)])
def test_upper_bound_is_scipy_clopper_pearson(k, n, level):
    assert upper_bound(k, n, level) == pytest.approx(stats.beta.ppf(1 - level, k + 1, n - k), abs=1e-12)


def test_upper_bound_edges():
    assert upper_bound(10, 10, 0.05) == 1.0 and upper_bound(0, 0, 0.05) == 1.0
    assert upper_bound(-1, 0, 0.05) == 1.0  # no draws bound nothing, whatever k says
    assert upper_bound(0, 10, 0.05) == pytest.approx(1 - 0.05 ** 0.1, abs=1e-13)  # by hand: (1 - r)^10 = 0.05


def test_normal_isf_is_scipy_and_the_stdlib_fallback_is_close(monkeypatch):
    for q in (0.025, 0.05, 0.5, 0.9):
        assert normal_isf(q) == stats.norm.isf(q)
    hide_imports(monkeypatch, "scipy")
    for q in (0.025, 0.05, 0.1):
        assert normal_isf(q) == pytest.approx(stats.norm.isf(q), abs=2e-15)
    assert normal_isf(0.025) == pytest.approx(1.959963984540054, abs=1e-15)


def test_binom_sf_is_scipy_even_in_a_tiny_tail():
    for k, n, p in ((8, 10, 0.1), (0, 5, 0.5), (40, 50, 0.1), (-1, 3, 0.2), (3, 3, 0.2)):
        assert binom_sf(k, n, p) == pytest.approx(stats.binom.sf(k, n, p), rel=1e-10, abs=1e-300)
    assert binom_sf(8, 10, 0.1) == pytest.approx(9.1e-9, rel=1e-12)  # by hand: 10 * 0.1**9 * 0.9 + 0.1**10


def test_binom_sf_at_the_ends_of_p():
    """P(X > k) with p = 1 (X = n surely): 0 at k = n, 1 below; with p = 0 (X = 0): 0 at every k >= 0."""
    assert (binom_sf(4, 4, 1.0), binom_sf(3, 4, 1.0), binom_sf(0, 4, 0.0), binom_sf(-1, 4, 0.0)) == (0.0, 1.0, 0.0, 1.0)
    assert binom_sf(200_000, 200_000, 1.0) == 0.0 and binom_sf(199_999, 200_000, 1.0) == 1.0


@pytest.mark.parametrize("n,p,ks,rtol", [
    (100_001, 0.5, [0, 49_000, 50_000, 50_001, 51_000, 100_000], 1e-8),   # just past the exact table
    (1_000_000, 0.1, [0, 99_000, 100_000, 100_500, 105_000, 200_000, 999_999], 1e-8),
    (300_000, 0.9, [260_000, 269_000, 270_000, 270_500, 280_000], 1e-8),
    (200_000, 0.001, [0, 150, 200, 250, 400, 199_999], 1e-8),
    (200_000, 1e-6, [0, 1, 2, 5, 30], 1e-8),  # a mean of 0.2, sd 0.45: the window is the 50 terms added to 40 sd
    (100_000_000, 0.1, [0, 9_990_000, 10_000_000, 10_010_000, 10_100_000], 1e-6),  # lgamma's own rounding at 1e9
])
def test_tails_past_the_exact_table_against_scipy(n, p, ks, rtol):
    """Counts a client posts (returned labels) reach any n: the tails are summed over a window around the
    mean, and must still equal scipy's (exact incomplete beta), scalar and array, upper and lower."""
    from scipy import stats

    for k in ks:
        for ours, theirs in ((binom_sf(k, n, p), stats.binom.sf(k, n, p)), (binom_cdf(k, n, p), stats.binom.cdf(k, n, p))):
            assert ours == pytest.approx(theirs, rel=rtol, abs=1e-290), (n, p, k)
    assert np.allclose(binom_cdf(np.array(ks), n, p), stats.binom.cdf(ks, n, p), rtol=rtol, atol=1e-290)


def test_a_billion_labels_cost_a_window_not_a_table():
    """n = 10^9 would need an 8 GB table of log factorials; the windowed tail needs ~40 sd of terms."""
    import tracemalloc

    tracemalloc.start()
    got = binom_sf(100_000_000, 1_000_000_000, 0.1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got == pytest.approx(0.49997, abs=1e-4) and peak < 50 << 20  # P(X > mean) for a near-symmetric binomial
