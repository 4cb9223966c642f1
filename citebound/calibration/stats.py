"""Agreement statistics, intervals and vectorised bootstrap.

Binary conventions: ``True`` = the verifier calls the citation *supported*.
For two raters the 2x2 table is ``a`` both supported, ``b`` only the first,
``c`` only the second, ``d`` both unsupported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from citebound.calibration.binomial import normal_isf


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


def wilson(k: int, n: int, alpha: float = 0.05) -> Interval:
    """Wilson score interval for k successes out of n, written out in the order of operations of
    statsmodels' ``proportion_confint(method="wilson")`` (so the numbers are the same to the last bit;
    a test compares them), without needing statsmodels in the guard's install.

    >>> round(wilson(8, 10).low, 4), round(wilson(8, 10).high, 4)
    (0.4902, 0.9433)
    """
    if n == 0:
        return Interval(math.nan, math.nan, math.nan)
    kk, nn = np.float64(k), np.float64(n)
    q = kk / nn
    crit = normal_isf(alpha / 2.0)
    crit2 = crit ** 2
    denom = 1 + crit2 / nn
    center = (q + crit2 / (2 * nn)) / denom
    dist = crit * np.sqrt(q * (1.0 - q) / nn + crit2 / (4.0 * nn ** 2))
    dist /= denom
    return Interval(k / n, float(np.clip(center - dist, 0, 1)), float(np.clip(center + dist, 0, 1)))


def table2x2(x: np.ndarray, y: np.ndarray) -> tuple[int, int, int, int]:
    """(a, b, c, d) for two boolean raters."""
    x, y = np.asarray(x, bool), np.asarray(y, bool)
    return (int(np.sum(x & y)), int(np.sum(x & ~y)), int(np.sum(~x & y)), int(np.sum(~x & ~y)))


def kappa_from_table(a: float, b: float, c: float, d: float) -> float:
    """Cohen's kappa of a 2x2 table; NaN when undefined (no pairs, or both raters constant
    and equal, where chance agreement is 1)."""
    return float(boot_kappa([a], [b], [c], [d])[0])


def gwet_ac1(a: float, b: float, c: float, d: float) -> float:
    """Gwet's AC1 for two raters and two categories; NaN for an empty table."""
    return float(boot_ac1([a], [b], [c], [d])[0])


def positive_specific_agreement(a: float, b: float, c: float, d: float) -> float:
    """2a / (2a + b + c): agreement on 'supported'."""
    den = 2 * a + b + c
    return float(2 * a / den) if den else math.nan


def negative_specific_agreement(a: float, b: float, c: float, d: float) -> float:
    """2d / (2d + b + c): agreement on 'unsupported' (the flags)."""
    den = 2 * d + b + c
    return float(2 * d / den) if den else math.nan


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar p-value from the discordant counts (statsmodels)."""
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar(np.array([[0, b], [c, 0]]), exact=True).pvalue)


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC-AUC via the Mann-Whitney rank statistic (ties count one half); NaN with one class."""
    return float(boot_auc(scores, labels, np.arange(len(scores))[None, :])[0])


def bootstrap_indices(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n) matrix of resampling indices."""
    return rng.integers(n, size=(n_boot, n))


def percentile_ci(samples: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    s = np.asarray(samples, float)
    s = s[np.isfinite(s)]
    if not len(s):
        return math.nan, math.nan
    return float(np.quantile(s, alpha / 2)), float(np.quantile(s, 1 - alpha / 2))


def boot_tables(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """2x2 counts per bootstrap row (vectorised)."""
    xs, ys = np.asarray(x, bool)[idx], np.asarray(y, bool)[idx]
    return ((xs & ys).sum(1), (xs & ~ys).sum(1), (~xs & ys).sum(1), (~xs & ~ys).sum(1))


def boot_kappa(a, b, c, d) -> np.ndarray:
    """Cohen's kappa (po - pe) / (1 - pe) for arrays of 2x2 counts. Where chance agreement
    pe is 1 (both raters constant and equal) po is 1 too, so 0 / 0 gives the NaN."""
    a, b, c, d = (np.asarray(v, float) for v in (a, b, c, d))
    with np.errstate(invalid="ignore"):
        n = a + b + c + d
        po = (a + d) / n
        pe = ((a + b) * (a + c) + (c + d) * (b + d)) / n**2
        return (po - pe) / (1 - pe)


def boot_ac1(a, b, c, d) -> np.ndarray:
    """Gwet's AC1 for arrays of 2x2 counts: pe = 2 pi (1 - pi) with pi the raters' mean
    'supported' marginal, so pe <= 1/2 and only an empty table (0 / 0) gives NaN."""
    a, b, c, d = (np.asarray(v, float) for v in (a, b, c, d))
    with np.errstate(invalid="ignore"):
        n = a + b + c + d
        pi = ((a + b) / n + (a + c) / n) / 2
        pe = 2 * pi * (1 - pi)
        return ((a + d) / n - pe) / (1 - pe)


def boot_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (no division by zero is attempted)."""
    return np.where(den > 0, num / np.maximum(den, 1e-300), np.nan)


def boot_auc(scores: np.ndarray, labels: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """ROC-AUC per bootstrap row via ranks (vectorised)."""
    s = np.asarray(scores, float)[idx]
    y = np.asarray(labels, bool)[idx]
    from scipy.stats import rankdata  # the study's bootstrap (scipy is a study dependency)

    r = rankdata(s, axis=1)
    n1, n0 = y.sum(1), (~y).sum(1)
    # a row with one class has n1 * n0 = 0 and a zero numerator (the positives' ranks are
    # 1..n1, or there are none), so 0 / 0 gives the NaN
    with np.errstate(invalid="ignore"):
        return ((r * y).sum(1) - n1 * (n1 + 1) / 2) / (n1 * n0)


def cluster_bootstrap_rate(successes: np.ndarray, totals: np.ndarray, n_boot: int,
                           rng: np.random.Generator) -> np.ndarray:
    """Ratio-of-sums per bootstrap draw, resampling clusters (answers), not pairs."""
    idx = bootstrap_indices(len(totals), n_boot, rng)
    return boot_ratio(np.asarray(successes, float)[idx].sum(1), np.asarray(totals, float)[idx].sum(1))
