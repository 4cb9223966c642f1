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


def binom_cdf(k, n: int, p: float):
    """P(Binomial(n, p) <= k), for a number or an array of k (k < 0 gives 0, k >= n gives 1)."""
    ks = np.asarray(k, dtype=float)
    scalar = ks.ndim == 0
    ks = np.atleast_1d(ks)
    if n <= 0 or p <= 0.0:
        out = np.where(ks >= 0, 1.0, 0.0)
    elif p >= 1.0:
        out = np.where(ks >= n, 1.0, 0.0)
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
