"""Two-sided calibration by Learn-then-Test (Angelopoulos, Bates, Candès, Jordan and Lei, 2021).

The guard flags a citation iff its score is at or below tau. Two risks follow from tau:

- the **miss rate**: the share of unsupported citations that pass (score > tau), to keep at or below alpha;
- the **false-flag rate**: the share of supported citations flagged (score <= tau), to keep at or below beta.

Learn-then-Test certifies both at once. For each tau of a grid fixed before the data are seen, the null
hypothesis "miss rate > alpha or false-flag rate > beta" is tested with the exact binomial p-value of each
risk (the union null is rejected when both are: its p-value is the larger one), and the family of tests is
controlled by Bonferroni (each at delta / |grid|), by Holm's step-down (the smallest remaining p-value at
delta / #remaining, stopping at the first non-rejection; never fewer rejections than Bonferroni), or by
split fixed-sequence testing: a seeded :data:`SPLIT` share of the calibration citations (stratified by
class) orders the grid by their union p-values, most likely to hold first, and the other citations test it
in that order, each at delta, stopping at the first non-rejection (the order depends only on data the tests
do not use, so it is fixed before their data are seen). Every tau that is rejected is certified: with
probability at least 1 - delta over the calibration draw, *every* certified tau has both rates within
their bounds, so the choice among them may look at the data. The hint given when nothing is certified (the
best beta at alpha, the best alpha at beta) is computed by the same procedure, so the beta it names is one
the procedure certifies.

>>> round(binomial_p(1, 10, 0.3), 6)  # P(Bin(10, 0.3) <= 1) = 0.7**10 + 10 * 0.3 * 0.7**9
0.149308
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citebound.calibration.binomial import binom_cdf

METHODS = ("bonferroni", "holm", "fixed_sequence")
SPLIT = 0.3  # share of the calibration citations that order the fixed sequence (split fixed-sequence testing)
STEPS = np.round(np.arange(1, 100) / 100, 2)  # the bounds a hint may name


def binomial_p(k: int, n: int, rate: float) -> float:
    """P(Binomial(n, rate) <= k): the exact p-value of "the risk exceeds ``rate``" when ``k`` of ``n``
    calibration examples incur the loss (a small k is evidence that the risk is below ``rate``)."""
    if n == 0:
        return 1.0
    return float(binom_cdf(k, n, rate))


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
    out = TwoSided(alpha, beta, delta, method, int((y == 0).sum()), int((y == 1).sum()))
    counts = risk_counts(s, y, grid)

    def certified(a: float, b: float) -> np.ndarray:
        """The grid points the method certifies for bounds (a, b); a fixed sequence orders the grid for them."""
        order, (k0, n0, k1, n1) = None, counts
        if method == "fixed_sequence":
            test_s, test_y, order = split_order(s, y, grid, a, b)
            k0, n0, k1, n1 = risk_counts(test_s, test_y, grid)
        return certify(np.maximum(binomial_ps(k0, n0, a), binomial_ps(k1, n1, b)), method, delta, order)

    passed = certified(alpha, beta)
    out.certified = [float(x) for x in grid[passed]]
    if out.certified:
        out.tau = min(out.certified)
        out.rule = (f"flag iff score <= tau = {out.tau:.6g}: the smallest of {len(out.certified)} thresholds certified by "
                    f"Learn-then-Test ({method}, binomial p-values, delta = {delta})")
        return out
    if not best_bounds:  # a simulation that needs only what is certified skips the search below
        out.rule = f"no threshold is certified for alpha = {alpha} and beta = {beta} at delta = {delta}"
        return out
    out.best_beta_at_alpha = next((float(b) for b in STEPS if certified(alpha, b).any()), None)
    out.best_alpha_at_beta = next((float(a) for a in STEPS if certified(a, beta).any()), None)
    out.rule = f"no threshold is certified for alpha = {alpha} and beta = {beta} at delta = {delta} ({method}); " + advice(
        out, alpha, beta)
    return out


def advice(out: TwoSided, alpha: float, beta: float) -> str:
    """The cheaper fix when nothing is certified: a looser beta these labels certify, or more labels of the
    class that limits it."""
    if out.best_beta_at_alpha is None:
        return (f"no false-flag bound certifies alpha = {alpha} with {out.n_unsupported} unsupported labels: label more "
                f"unsupported citations, or loosen alpha (best certifiable at beta {beta}: "
                f"{out.best_alpha_at_beta if out.best_alpha_at_beta is not None else 'none'})")
    return (f"at alpha = {alpha} the best certifiable false-flag rate is {out.best_beta_at_alpha:.3g}: use --beta "
            f"{out.best_beta_at_alpha:.3g} (the cheaper fix), or label more supported citations (have "
            f"{out.n_supported}) to certify a tighter one")


def certify(p: np.ndarray, method: str, delta: float, order: np.ndarray | None = None) -> np.ndarray:
    """Which hypotheses (grid points) the family-wise procedure rejects, each p-value ``p`` given.

    >>> p = np.array([0.001, 0.04, 0.03, 0.2])
    >>> certify(p, "bonferroni", 0.1).tolist(), certify(p, "holm", 0.1).tolist()
    ([True, False, False, False], [True, True, True, False])
    >>> certify(p, "fixed_sequence", 0.1, np.array([0, 2, 3, 1])).tolist()   # stops at 0.2
    [True, False, True, False]
    """
    m = len(p)
    if method == "bonferroni":
        return p <= delta / m
    if method == "holm":
        idx = np.argsort(p, kind="stable")
        ok = np.cumprod(p[idx] <= delta / (m - np.arange(m))).astype(bool)
        out = np.zeros(m, bool)
        out[idx[ok]] = True
        return out
    if method == "fixed_sequence":
        if order is None:
            raise ValueError("fixed_sequence needs its order")
        ok = np.cumprod(p[order] <= delta).astype(bool)
        out = np.zeros(m, bool)
        out[order[ok]] = True
        return out
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def split_order(s: np.ndarray, y: np.ndarray, grid: np.ndarray, alpha: float, beta: float,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, labels of the citations that test, the grid's order): a seeded :data:`SPLIT` of each class
    orders the grid by its union p-values (smallest first, ties by the grid), the rest test."""
    rng = np.random.default_rng(seed)
    learn = np.zeros(len(s), bool)
    for c in (0, 1):
        idx = np.flatnonzero(y == c)
        learn[rng.permutation(idx)[: int(round(SPLIT * len(idx)))]] = True
    k0, n0, k1, n1 = risk_counts(s[learn], y[learn], grid)
    p = np.maximum(binomial_ps(k0, n0, alpha), binomial_ps(k1, n1, beta))
    return s[~learn], y[~learn], np.lexsort((np.arange(len(grid)), p))


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
        r = calibrate_two_sided(s, y, alpha, beta, delta, grid, method, best_bounds=False)
        certified_any += bool(r.certified)
        violations += any(t in bad for t in r.certified)
    return violations / trials, certified_any
