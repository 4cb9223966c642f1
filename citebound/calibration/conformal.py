"""Split-conformal flagging of unsupported citations.

Calibrate on the scores of human-labelled *unsupported* citations:
``tau = s_(k)``, the k-th smallest, with ``k = ceil((n + 1)(1 - alpha))``;
flag a citation when ``score <= tau`` (ties are flagged). If the calibration
negatives are exchangeable with deployment negatives, a new unsupported
citation is flagged with probability >= 1 - alpha (Vovk et al., 2005;
Angelopoulos & Bates, 2021). The PAC variant picks the smallest k with
``P(Binom(n, 1 - alpha) <= k - 1) >= 1 - delta`` so the catch rate of the
calibrated threshold itself is >= 1 - alpha with probability >= 1 - delta
(Vovk, 2012).

>>> g = ConformalGuard(alpha=0.2).calibrate([0.1, 0.9, 0.3, 0.4, 0.2], [0, 1, 0, 0, 0])
>>> g.tau, g.k, g.predict([0.25, 0.35]).tolist()
(0.4, 4, [True, True])
"""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from citebound.calibration.binomial import binom_cdf


class SmallCalibrationWarning(UserWarning):
    pass


@contextlib.contextmanager
def tau_warnings_silenced():
    """Silence :class:`SmallCalibrationWarning` inside simulation loops, where an
    infinite tau at a small calibration size is an expected, recorded outcome."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallCalibrationWarning)
        yield


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def conformal_rank(n: int, alpha: float) -> int:
    """k = ceil((n + 1)(1 - alpha)), computed robustly against float error.

    >>> conformal_rank(9, 0.1), conformal_rank(10, 0.1), conformal_rank(19, 0.05)
    (9, 10, 19)
    """
    _check_alpha(alpha)
    return empirical_rank(n + 1, 1 - alpha)  # the +1 correction: the empirical rank among n + 1


def conformal_threshold(neg_scores: Sequence[float], alpha: float) -> float:
    """tau = k-th smallest unsupported score; +inf (with a warning) when k > n."""
    s = np.sort(np.asarray(neg_scores, float))
    n = len(s)
    k = conformal_rank(n, alpha)
    if k > n:
        warnings.warn(f"{n} unsupported calibration examples are too few for alpha={alpha} "
                      f"(need k={k} <= n): tau = +inf, everything is flagged", SmallCalibrationWarning,
                      stacklevel=2)
        return math.inf
    return float(s[k - 1])


def empirical_rank(n: int, level: float) -> int:
    """k = ceil(n * level), at least 1: the rank of the plain empirical ``level`` quantile (no +1
    correction), computed robustly against float error.

    >>> empirical_rank(10, 0.9), empirical_rank(10, 0.72), empirical_rank(4, 0.1)
    (9, 8, 1)
    """
    return max(1, int(math.ceil(round(n * level, 9))))


def naive_threshold(neg_scores: Sequence[float], alpha: float) -> float:
    """Empirical (1 - alpha) quantile without the +1 correction: k = ceil(n (1 - alpha))."""
    s = np.sort(np.asarray(neg_scores, float))
    k = empirical_rank(len(s), 1 - alpha)
    return float(s[min(k, len(s)) - 1])


def pac_rank(n: int, alpha: float, delta: float) -> int:
    """Smallest k with P(Binom(n, 1 - alpha) <= k - 1) >= 1 - delta; n + 1 if none.

    The cdf rises with k, so the rank is found by bisection: O(log n) cdf values, each O(sqrt n) past
    :data:`~citebound.calibration.binomial.EXACT_MAX_N` (a million labels calibrate in seconds), and the same k
    as testing every k in turn.

    >>> pac_rank(10, 0.1, 0.1), pac_rank(100, 0.1, 0.1), pac_rank(5, 0.5, 0.1)
    (11, 95, 5)
    """
    lo, hi = 1, n + 1  # k = n + 1 always qualifies (the cdf at n is 1): it stands for 'none'
    while lo < hi:
        mid = (lo + hi) // 2
        if binom_cdf(mid - 1, n, 1 - alpha) >= 1 - delta:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class ConformalGuard:
    """Split-conformal flag threshold (optionally Mondrian: one per group)."""

    alpha: float = 0.1
    tau: float = math.nan
    k: int = 0
    n_unsupported: int = 0
    group_tau: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_alpha(self.alpha)

    def calibrate(self, scores: Sequence[float], labels: Sequence[int],
                  groups: Sequence[str] | None = None) -> ConformalGuard:
        s, y = np.asarray(scores, float), np.asarray(labels)
        neg = s[(y == 0) & np.isfinite(s)]
        self.n_unsupported = len(neg)
        self.k = conformal_rank(len(neg), self.alpha)
        self.tau = conformal_threshold(neg, self.alpha)
        if groups is not None:
            g = np.asarray(groups)
            mask = (y == 0) & np.isfinite(s)
            self.group_tau = {str(v): conformal_threshold(s[mask & (g == v)], self.alpha) for v in np.unique(g[mask])}
        return self

    def predict(self, scores: Sequence[float], groups: Sequence[str] | None = None) -> np.ndarray:
        """True = flag (score <= tau); NaN scores are flagged."""
        s = np.asarray(scores, float)
        if groups is None or not self.group_tau:
            tau = np.full(len(s), self.tau)
        else:
            tau = np.array([self.group_tau.get(str(g), self.tau) for g in groups])
        return ~(s > tau)


def split_coverage(neg: np.ndarray, pos: np.ndarray, n_cal: int, alphas: Sequence[float], n_splits: int,
                   rng: np.random.Generator, delta: float | None = None) -> dict[str, np.ndarray]:
    """Random calibration/test splits of the negatives (vectorised).

    Returns per alpha (rows) and split (columns): conformal and naive (and PAC)
    coverage on held-out negatives, and the flag rate on supported pairs.
    """
    neg, pos = np.asarray(neg, float), np.asarray(pos, float)
    n = len(neg)
    if not 0 < n_cal < n:
        raise ValueError(f"n_cal={n_cal} must be in (0, {n})")
    perm = rng.random((n_splits, n)).argsort(axis=1)
    cal = np.sort(neg[perm[:, :n_cal]], axis=1)
    test = neg[perm[:, n_cal:]]
    out: dict[str, list] = {"conformal": [], "naive": [], "pac": [], "flag_supported": [], "tau": []}
    for a in alphas:
        k = conformal_rank(n_cal, a)
        tau = cal[:, k - 1] if k <= n_cal else np.full(n_splits, np.inf)
        kn = empirical_rank(n_cal, 1 - a)
        tau_naive = cal[:, min(kn, n_cal) - 1]
        out["tau"].append(tau)
        out["conformal"].append((test <= tau[:, None]).mean(1))
        out["naive"].append((test <= tau_naive[:, None]).mean(1))
        out["flag_supported"].append((pos[None, :] <= tau[:, None]).mean(1) if len(pos) else np.full(n_splits, np.nan))
        if delta is not None:
            kp = pac_rank(n_cal, a, delta)
            tau_pac = cal[:, kp - 1] if kp <= n_cal else np.full(n_splits, np.inf)
            out["pac"].append((test <= tau_pac[:, None]).mean(1))
    return {k: np.array(v) for k, v in out.items() if v}
