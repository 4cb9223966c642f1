"""Exact binomial tails and the Clopper-Pearson upper bound, in numpy: what calibration needs of
scipy.stats, without scipy in the guard's install (tests/guard/test_binomial.py compares with scipy).

>>> round(float(binom_cdf(1, 3, 0.5)), 12)   # (1 + 3) / 8
0.5
>>> round(upper_bound(0, 10, 0.05), 6)   # 1 - 0.05 ** (1 / 10)
0.258866
"""
from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np


@lru_cache(maxsize=64)
def _log_factorials(n: int) -> np.ndarray:
    """log(j!) for j = 0..n (math.lgamma, once per n: calibration asks for the same n again and again)."""
    return np.array([math.lgamma(j + 1.0) for j in range(n + 1)])


def _log_pmf(n: int, p: float, k: np.ndarray) -> np.ndarray:
    lf, kk = _log_factorials(n), k.astype(np.int64)
    return lf[n] - lf[kk] - lf[n - kk] + k * math.log(p) + (n - k) * math.log1p(-p)


# Past this n, a tail is summed over a window around the mean (and around k), not from a table of n log
# factorials: a count a client posts (returned labels) then costs O(sqrt n), not O(n) time and memory.
EXACT_MAX_N = 100_000
_SPAN_SD = 40  # terms further than 40 standard deviations from the mean are below exp(-800) of the mode's


def _exact_log_pmf(n: int, p: float, j: int) -> float:
    return (math.lgamma(n + 1.0) - math.lgamma(j + 1.0) - math.lgamma(n - j + 1.0) + j * math.log(p)
            + (n - j) * math.log1p(-p))


def _window_log_pmf(n: int, p: float, j0: int, j1: int, block: int = 256) -> np.ndarray:
    """log P(Binomial(n, p) = j) for j = j0..j1 (inclusive): exact (lgamma) every ``block`` terms, and the
    ratio of neighbours between, so the rounding of the running sum never spans more than a block."""
    out = np.empty(j1 - j0 + 1)
    ratio = math.log(p) - math.log1p(-p)
    for b0 in range(j0, j1 + 1, block):
        b1 = min(j1, b0 + block - 1)
        i = np.arange(b0, b1, dtype=float)
        out[b0 - j0:b1 - j0 + 1] = _exact_log_pmf(n, p, b0) + np.concatenate(
            [[0.0], np.cumsum(np.log(n - i) - np.log(i + 1) + ratio)])
    return out


def _span(n: int, p: float) -> tuple[int, int]:
    """The window [lo, hi] of j outside which no term of Binomial(n, p) matters."""
    w = int(math.ceil(_SPAN_SD * math.sqrt(n * p * (1 - p)))) + 50
    m = int(n * p)
    return max(0, m - w), min(n, m + w)


def _sf_windowed(k: int, n: int, p: float) -> float:
    lo, hi = _span(n, p)
    a = k + 1
    if a > hi:  # the tail starts past the window: its terms only fall from a on
        j0, j1 = a, min(n, a + (hi - lo) + 50)
    else:
        j0, j1 = max(a, lo), hi
    return float(min(1.0, np.exp(_window_log_pmf(n, p, j0, j1)).sum()))


def _cdf_windowed(ks: np.ndarray, n: int, p: float) -> np.ndarray:
    lo, hi = _span(n, p)
    idx = np.floor(ks).astype(np.int64)
    # a k below the window: its lower tail is summed back from k over its own terms, which only fall
    below = np.array([np.exp(_window_log_pmf(n, p, max(0, int(k) - (hi - lo) - 50), int(k))).sum() if 0 <= k < lo
                      else 0.0 for k in idx])
    inside = np.zeros(len(idx))
    if idx.max() >= lo:  # some k reaches the window: one cumulative sum over it serves them all
        inside = np.cumsum(np.exp(_window_log_pmf(n, p, lo, hi)))[np.clip(idx - lo, 0, hi - lo)]
    return np.clip(np.where(idx < 0, 0.0, np.where(idx >= n, 1.0, np.where(idx < lo, below, inside))), 0.0, 1.0)


def binom_cdf(k, n: int, p: float):
    """P(Binomial(n, p) <= k), for a number or an array of k (k < 0 gives 0, k >= n gives 1)."""
    ks = np.asarray(k, dtype=float)
    scalar = ks.ndim == 0
    ks = np.atleast_1d(ks)
    if n <= 0 or p <= 0.0:
        out = np.where(ks >= 0, 1.0, 0.0)
    elif p >= 1.0:
        out = np.where(ks >= n, 1.0, 0.0)
    elif n > EXACT_MAX_N:
        out = _cdf_windowed(ks, n, p)
    else:
        top = int(min(max(np.floor(ks.max()), -1), n))
        cdf = np.cumsum(np.exp(_log_pmf(n, p, np.arange(top + 1, dtype=float)))) if top >= 0 else np.zeros(0)
        idx = np.floor(ks).astype(np.int64)
        out = np.where(idx < 0, 0.0, np.where(idx >= n, 1.0, cdf[np.clip(idx, 0, max(top, 0))] if top >= 0 else 0.0))
        out = np.clip(out, 0.0, 1.0)
    return float(out[0]) if scalar else out


def binom_sf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) > k), summed over the upper tail itself (no 1 - cdf cancellation for tiny tails)."""
    if k < 0:
        return 1.0
    if k >= n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    if n > EXACT_MAX_N:
        return _sf_windowed(k, n, p)
    return float(min(1.0, np.exp(_log_pmf(n, p, np.arange(k + 1, n + 1, dtype=float))).sum()))


def upper_bound(k: int, n: int, level: float) -> float:
    """The rate r with P(Binomial(n, r) <= k) = level: the one-sided Clopper-Pearson upper bound on a
    rate with k events in n (1 when k >= n or n = 0), by bisection (the tail falls as r grows)."""
    if n <= 0 or k >= n:
        return 1.0
    if k < 0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if binom_cdf(k, n, mid) > level:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15:
            break
    return (lo + hi) / 2


def normal_isf(q: float) -> float:
    """z with P(Z > z) = q for a standard normal Z: scipy's where it is installed (the study's, so its
    Wilson intervals keep statsmodels' last bits), else the standard library's (within 2e-15 of it)."""
    try:
        from scipy.special import ndtri
    except ImportError:
        return NormalDist().inv_cdf(1.0 - q)
    return float(-ndtri(q))
