"""Two-sided calibration by Learn-then-Test (Angelopoulos, Bates, Candès, Jordan and Lei, 2021).

The guard flags a citation iff its score is at or below tau. Two risks follow from tau:

- the **miss rate**: the share of unsupported citations that pass (score > tau), to keep at or below alpha;
- the **false-flag rate**: the share of supported citations flagged (score <= tau), to keep at or below beta.

Learn-then-Test certifies both at once. For each tau of a grid fixed before the data are seen, the null
hypothesis "miss rate > alpha or false-flag rate > beta" is tested with the exact binomial p-value of each
risk (the union null is rejected when both are: its p-value is the larger one), and the family of tests is
controlled by Bonferroni (each at delta / |grid|) or by fixed-sequence testing in a pre-set order (from
the grid's middle outwards, each at delta, stopping at the first non-rejection). Every tau that is rejected is
certified: with probability at least 1 - delta over the calibration draw, *every* certified tau has both
rates within their bounds, so the choice among them may look at the data.

>>> round(binomial_p(1, 10, 0.3), 6)  # P(Bin(10, 0.3) <= 1) = 0.7**10 + 10 * 0.3 * 0.7**9
0.149308
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citebound.calibration.binomial import binom_cdf
from citebound.calibration.binomial import upper_bound as cp_upper

METHODS = ("bonferroni", "fixed_sequence")


def binomial_p(k: int, n: int, rate: float) -> float:
    """P(Binomial(n, rate) <= k): the exact p-value of "the risk exceeds ``rate``" when ``k`` of ``n``
    calibration examples incur the loss (a small k is evidence that the risk is below ``rate``)."""
    if n == 0:
        return 1.0
    return float(binom_cdf(k, n, rate))


def upper_bound(k: int, n: int, level: float) -> float:
    """The smallest rate r with P(Binomial(n, r) <= k) <= level (Clopper-Pearson one-sided upper bound)."""
    return cp_upper(k, n, level)


def default_grid(lo: float = 0.0, hi: float = 1.0, size: int = 201) -> np.ndarray:
    """A fixed grid of thresholds (it must not depend on the calibration data)."""
    return np.linspace(lo, hi, size)


@dataclass
class TwoSided:
    """The outcome of :func:`calibrate_two_sided`."""

    alpha: float
    beta: float
    delta: float
    method: str
    n_unsupported: int
    n_supported: int
    certified: list[float] = field(default_factory=list)  # every tau certified
    tau: float | None = None  # the chosen one: the smallest certified tau (fewest flags), else None
    rule: str = ""
    best_beta_at_alpha: float | None = None  # when none passes: what a catch of 1 - alpha costs
    best_alpha_at_beta: float | None = None

    def to_dict(self) -> dict[str, Any]:
        lo, hi = (min(self.certified), max(self.certified)) if self.certified else (None, None)
        return {"alpha": self.alpha, "beta": self.beta, "delta": self.delta, "method": self.method,
                "n_unsupported": self.n_unsupported, "n_supported": self.n_supported, "tau": self.tau,
                "certified_tau_interval": [lo, hi], "n_certified": len(self.certified), "rule": self.rule,
                "best_beta_at_alpha": self.best_beta_at_alpha, "best_alpha_at_beta": self.best_alpha_at_beta}


def calibrate_two_sided(scores: Any, labels: Any, alpha: float, beta: float, delta: float,
                        grid: Any = None, method: str = "bonferroni", best_bounds: bool = True) -> TwoSided:
    """Every tau of ``grid`` certified to keep the miss rate <= alpha and the false-flag rate <= beta
    with probability >= 1 - delta, and the chosen (smallest) one; when none is, the best certifiable
    beta at alpha and the best alpha at beta (each at level delta / |grid| for Bonferroni; ``best_bounds=False``
    leaves them None)."""
    for name, v in (("alpha", alpha), ("beta", beta), ("delta", delta)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must be in (0, 1), got {v}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    if not np.isfinite(s).all():
        raise ValueError("every score must be finite")
    grid = np.sort(np.asarray(default_grid() if grid is None else grid, float))
    level = delta / len(grid) if method == "bonferroni" else delta
    out = TwoSided(alpha, beta, delta, method, int((y == 0).sum()), int((y == 1).sum()))
    k0, n0, k1, n1 = risk_counts(s, y, grid)
    p0, p1 = binomial_ps(k0, n0, alpha), binomial_ps(k1, n1, beta)
    passed = np.maximum(p0, p1) <= level  # the union null "either risk too high" is rejected
    if method == "fixed_sequence":  # outward from the grid's middle, a pre-set order, until the first failure
        order = np.argsort(np.abs(grid - (grid[0] + grid[-1]) / 2), kind="stable")
        keep = np.cumprod(passed[order]).astype(bool)
        passed = np.zeros(len(grid), bool)
        passed[order[keep]] = True
    out.certified = [float(x) for x in grid[passed]]
    if out.certified:
        out.tau = min(out.certified)
        out.rule = (f"flag iff score <= tau = {out.tau:.6g}: the smallest of {len(out.certified)} thresholds certified by "
                    f"Learn-then-Test ({method}, binomial p-values, delta = {delta})")
        return out
    if not best_bounds:  # a simulation that needs only what is certified skips the bisections below
        out.rule = f"no threshold is certified for alpha = {alpha} and beta = {beta} at delta = {delta}"
        return out
    beta_bounds = [upper_bound(int(a), n1, level) for a, ok in zip(k1, p0 <= level) if ok]
    alpha_bounds = [upper_bound(int(a), n0, level) for a, ok in zip(k0, p1 <= level) if ok]
    out.best_beta_at_alpha = min(beta_bounds) if beta_bounds else None
    out.best_alpha_at_beta = min(alpha_bounds) if alpha_bounds else None
    out.rule = (f"no threshold is certified for alpha = {alpha} and beta = {beta} at delta = {delta}; "
                + (f"at alpha = {alpha} the best certifiable false-flag rate is {out.best_beta_at_alpha:.3g}"
                   if out.best_beta_at_alpha is not None else f"no threshold certifies alpha = {alpha} alone"))
    return out


def risk_counts(scores: np.ndarray, labels: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, int]:
    """Per tau of ``grid``: missed unsupported (score > tau), n unsupported, flagged supported (score <= tau),
    n supported."""
    neg, pos = np.sort(scores[labels == 0]), np.sort(scores[labels == 1])
    missed = len(neg) - np.searchsorted(neg, grid, side="right")
    flagged = np.searchsorted(pos, grid, side="right")
    return missed, len(neg), flagged, len(pos)


def binomial_ps(k: np.ndarray, n: int, rate: float) -> np.ndarray:
    """:func:`binomial_p` for many k at once."""
    if n == 0:
        return np.ones(len(k))
    return binom_cdf(k, n, rate)


def violation_frequency(alpha: float, beta: float, delta: float, n0: int, n1: int, trials: int, seed: int,
                        method: str = "bonferroni", grid: Any = None) -> tuple[float, int]:
    """A seeded simulation of the guarantee: unsupported scores ~ Beta(2, 5), supported ~ Beta(5, 2),
    whose true risks at any tau are known in closed form. Returns the share of calibration draws in which
    some certified tau has a true miss rate > alpha or a true false-flag rate > beta, and how many
    draws certified anything."""
    from scipy.stats import beta as beta_dist

    rng = np.random.default_rng(seed)
    grid = default_grid(size=101) if grid is None else np.asarray(grid, float)
    true_miss = beta_dist.sf(grid, 2, 5)   # P(unsupported score > tau)
    true_flag = beta_dist.cdf(grid, 5, 2)  # P(supported score <= tau)
    bad = {float(t) for t, m, f in zip(grid, true_miss, true_flag) if m > alpha or f > beta}
    violations = certified_any = 0
    for _ in range(trials):
        s = np.concatenate([rng.beta(2, 5, n0), rng.beta(5, 2, n1)])
        y = np.concatenate([np.zeros(n0, int), np.ones(n1, int)])
        r = calibrate_two_sided(s, y, alpha, beta, delta, grid, method)
        certified_any += bool(r.certified)
        violations += any(t in bad for t in r.certified)
    return violations / trials, certified_any
