"""Two anytime-valid tests behind the guarantee card: a label test of the miss rate, and a drift alarm
that ignores a change of the supported share.

**The label test** (testing by betting, Waudby-Smith and Ramdas, "Estimating means of bounded random
variables by betting", JRSS-B 2024; Shafer, "Testing by betting", 2021). Each labelled unsupported citation
is ``X = 1`` if the guard passed it (a miss), else 0. Under the guarantee ``E[X] <= alpha``, so for every
``lam`` in ``[0, 1/alpha]`` the product of ``1 + lam * (X - alpha)`` is a nonnegative supermartingale, and so
is the average of such products over a fixed grid of ``lam`` (:data:`LAMBDAS`). By Ville's inequality the
average ever reaches ``1/delta`` with probability at most ``delta``, at whatever times it is looked at. Each
product depends on the labels only through their counts (``k`` misses of ``n``)::

    log M_lam = k * log(1 + lam * (1 - alpha)) + (n - k) * log(1 - lam * alpha)

so labels posted in batches, one at a time or all at once give the same value at the same totals, and a
post of ``n`` labels costs what a post of one does. The state turns ``void`` when the average reaches
``1/delta``.

**The drift alarm** (conformal test martingales, Vovk et al. 2003, under label shift after Podkopaev and
Ramdas, "Distribution-free uncertainty quantification for classification under label shift", UAI 2021).
The guarantee needs only that deployed *unsupported* citations score like the calibration's; the share
``pi`` of supported citations may be anything. Deployed scores are unlabelled, so the null is composite:
each score comes from ``pi * F1 + (1 - pi) * F0`` for some unknown ``pi``, with ``F0``, ``F1`` the
calibration's unsupported and supported score distributions. For each ``pi`` on a fixed grid
(:data:`PI_GRID`) the score's smoothed p-value (higher score = stranger) is the mixture of its
conformal p-values against each class's calibration scores,
``p_pi = pi * p1 + (1 - pi) * p0``, uniform under the null with that ``pi``; the average over a fixed
family of betting functions (:func:`log_bets`: power functions on either tail, and tents on the middle) of
their products is then a test martingale for that ``pi``. The alarm fires only when the martingale is past ``2/delta``
(``delta/2`` for Ville, ``delta/2`` for the references' error, below) for *every* ``pi`` on the grid: under
the null the martingale of the true ``pi`` stays below it with
probability ``>= 1 - delta`` (Ville), and so does the minimum. A change of the supported share alone is
the null with another ``pi``, so it does not fire; unsupported citations that start scoring where no
mixture of the two classes puts them (the transfer setting: hard negatives scored between the classes)
push every ``pi``'s martingale up. The references are the calibration's own scores (fixed, not grown by
deployment, which is unlabelled), so memory and time per update are constant: ``len(PI_GRID) *
len(bets)`` numbers, two binary searches per score.

The p-values above are computed against the calibration's *samples*, not the classes' true distributions,
and a long stream would in time detect the samples' own error (a mostly supported stream against a few
hundred supported calibration scores does so within a thousand citations). So the bets are made robust to
it. By the Dvoretzky-Kiefer-Wolfowitz inequality, with probability ``>= 1 - delta/2`` both classes'
empirical distributions lie within ``eps_c = sqrt(log(8/delta) / (2 n_c)) + 1/(n_c + 1)`` of the truth
(the second term: the smoothing), so every computed ``p_pi`` is within ``eps_pi = pi eps_1 + (1 - pi) eps_0``
of the true, uniform one. On that event a bet evaluated at the least favourable point of ``[p - eps_pi, p
+ eps_pi]`` (a decreasing bet at ``p + eps``, an increasing one at ``p - eps``, a tent at the lower of the
two ends) never pays more than the same bet at the true p-value, so each product is a supermartingale;
the alarm fires at ``2/delta`` (Ville: ``delta/2``). The chance of a false alarm is then at most ``delta``
in all, for any stream length: the robustness costs power (the ``guarantees`` rule measures both).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# bets lam * alpha in (0, 1): 20 evenly spaced fractions of the largest bet 1/alpha (never all-in)
LAMBDA_FRACTIONS = (np.arange(20) + 0.5) / 20 * 0.98
PI_GRID = np.round(np.linspace(0.0, 1.0, 51), 4)  # the supported shares the alarm's null ranges over
# the betting functions of the alarm, each with integral 1 on [0, 1]: power functions on small p-values
# (scores too high), on large ones (too low) and half-tents (a tent averaged with the uniform) on middling
# ones (scores piled between the classes)
EPS = (np.arange(10) + 0.5) / 10
KAPPA = np.array([0.5, 1.0, 2.0, 4.0, 8.0])


def log_bets(p: np.ndarray, eps: Any = 0.0) -> np.ndarray:
    """log of every betting function at each p-value, each evaluated at the least favourable point within
    ``eps`` of it: shape ``p.shape + (2 * len(EPS) + len(KAPPA),)``.

    >>> [round(float(x), 6) for x in np.exp(log_bets(np.array(0.5)))[-5:]]   # the tents at 1/2: (1 + (kappa + 1)) / 2
    [1.25, 1.5, 2.0, 3.0, 5.0]
    >>> [round(float(x), 6) for x in np.exp(log_bets(np.array(0.5), 0.25))[-2:]]   # at 0.25 or 0.75: (1 + (k+1) 2**-k) / 2
    [0.65625, 0.517578]
    """
    p = np.asarray(p, float)
    up = np.clip(p + eps, 1e-300, 1 - 1e-16)[..., None]  # where a decreasing bet pays least
    down = np.clip(p - eps, 1e-300, 1 - 1e-16)[..., None]  # where an increasing one does
    low = np.log(EPS) + (EPS - 1) * np.log(up)
    high = np.log(EPS) + (EPS - 1) * np.log1p(-down)

    def tent(q: np.ndarray) -> np.ndarray:  # half a tent, half the uniform: a tent alone loses all near 0 and 1
        return np.log(0.5 + 0.5 * (KAPPA + 1) * np.maximum(1 - np.abs(2 * q - 1), 0.0) ** KAPPA)

    return np.concatenate([low, high, np.minimum(tent(up), tent(down))], axis=-1)


def reference_error(n: int, delta: float) -> float:
    """How far (DKW at delta/4, plus the smoothing) ``n`` calibration scores' p-values may be from the truth.

    >>> round(reference_error(200, 0.1), 4)   # sqrt(log(80) / 400) + 1/201
    0.1096
    """
    return math.sqrt(math.log(8 / delta) / (2 * n)) + 1 / (n + 1)


def log_wealth(missed: int, n: int, alpha: float, fractions: Sequence[float] = LAMBDA_FRACTIONS) -> np.ndarray:
    """log of each bet's wealth after ``missed`` misses among ``n`` labelled unsupported citations.

    >>> round(float(np.exp(log_wealth(2, 2, 0.1, [0.5])[0])), 6)   # lam = 5: (1 + 5 * 0.9) ** 2
    30.25
    >>> round(float(np.exp(log_wealth(2, 3, 0.1, [0.5])[0])), 6)   # then a catch: * (1 - 5 * 0.1)
    15.125
    """
    lam = np.asarray(fractions, float) / alpha
    k, m = np.asarray(missed, float)[..., None], np.asarray(n, float)[..., None]  # broadcast over paths too
    return k * np.log1p(lam * (1 - alpha)) + (m - k) * np.log1p(-lam * alpha)


@dataclass
class MissRateTest:
    """Anytime-valid test of "the deployed threshold misses at most ``alpha`` of unsupported citations":
    :meth:`add` counts, :attr:`value` is the e-process (the average wealth), :attr:`void` once it reaches
    ``1/delta``."""

    alpha: float
    delta: float = 0.1
    missed: int = 0
    n: int = 0
    void: bool = False
    void_after: int | None = None  # labels seen when it turned void

    MAX_POST: int = 1_000_000  # labels one post may add (the arithmetic is O(1) whatever the count)

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1 or not 0 < self.delta < 1:
            raise ValueError(f"alpha and delta must be in (0, 1), got {self.alpha}, {self.delta}")

    @property
    def log_value(self) -> float:
        parts = log_wealth(self.missed, self.n, self.alpha)
        top = float(parts.max())
        return top + math.log(float(np.mean(np.exp(parts - top))))

    @property
    def value(self) -> float:
        lv = self.log_value
        return math.exp(lv) if lv < 700 else math.inf

    def add(self, missed: int, n: int) -> bool:
        """``missed`` of ``n`` more labelled unsupported citations passed the guard; True once void."""
        for name, v in (("missed", missed), ("unsupported", n)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
        if missed > n:
            raise ValueError(f"missed ({missed}) must be between 0 and unsupported ({n})")
        if n > self.MAX_POST:
            raise ValueError(f"{n} labels in one post; the limit is {self.MAX_POST} (post them in parts)")
        self.missed, self.n = self.missed + int(missed), self.n + int(n)
        if not self.void and self.log_value >= math.log(1 / self.delta):
            self.void, self.void_after = True, self.n
        return self.void


def smoothed_p(reference_sorted: np.ndarray, s: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """:func:`~citebound.calibration.monitor.conformal_p` for many scores at once (higher = stranger).

    >>> smoothed_p(np.array([0.1, 0.5, 0.5, 0.9]), np.array([0.5, 0.95]), np.array([0.5, 0.5]))
    array([0.5, 0.1])
    """
    lo = np.searchsorted(reference_sorted, s, "left")
    hi = np.searchsorted(reference_sorted, s, "right")
    n = len(reference_sorted)
    return ((n - hi) + theta * (hi - lo + 1)) / (n + 1)


def mixture_p(s0: np.ndarray, s1: np.ndarray, s: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``p_pi`` (rows: scores, columns: :data:`PI_GRID`) against sorted unsupported ``s0`` and supported ``s1``."""
    p0, p1 = smoothed_p(s0, s, theta), smoothed_p(s1, s, theta)
    return PI_GRID[None, :] * p1[:, None] + (1 - PI_GRID[None, :]) * p0[:, None]


def pi_error(n0: int, n1: int, delta: float) -> np.ndarray:
    """``eps_pi`` for every supported share of :data:`PI_GRID`."""
    return PI_GRID * reference_error(n1, delta) + (1 - PI_GRID) * reference_error(n0, delta)


def alarm_times(s0: Sequence[float], s1: Sequence[float], streams: np.ndarray, thetas: np.ndarray,
                delta: float) -> np.ndarray:
    """When :class:`ShiftRobustAlarm` first turns suspect on each row of ``streams`` (1-based; 0: never),
    every stream at once: the simulation's form of the same arithmetic (tested equal to the class)."""
    r0, r1 = np.sort(np.asarray(s0, float)), np.sort(np.asarray(s1, float))
    streams, thetas = np.atleast_2d(streams), np.atleast_2d(thetas)
    logs = np.zeros((streams.shape[0], len(PI_GRID), 2 * len(EPS) + len(KAPPA)))
    at = np.zeros(streams.shape[0], int)
    bound = math.log(2 / delta)
    eps = pi_error(len(r0), len(r1), delta)[None, :]
    for t in range(streams.shape[1]):
        logs += log_bets(mixture_p(r0, r1, streams[:, t], thetas[:, t]), eps)
        top = logs.max(axis=2, keepdims=True)
        lm = (top + np.log(np.mean(np.exp(logs - top), axis=2, keepdims=True)))[..., 0].min(axis=1)
        at[(at == 0) & (lm >= bound)] = t + 1
    return at


@dataclass
class ShiftRobustAlarm:
    """The drift alarm under label shift: :meth:`update` with deployed scores; :attr:`suspect` once every
    supported share's (robust) martingale has reached ``2/delta``."""

    unsupported_scores: Sequence[float]
    supported_scores: Sequence[float]
    delta: float = 0.1
    seed: int = 0
    n_seen: int = 0
    suspect: bool = False
    alarm_at: int | None = None
    _log: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        self._s0 = sorted(float(s) for s in self.unsupported_scores if s is not None and math.isfinite(float(s)))
        self._s1 = sorted(float(s) for s in self.supported_scores if s is not None and math.isfinite(float(s)))
        if not self._s0 or not self._s1:
            raise ValueError("the shift-robust alarm needs the calibration's scores of both classes")
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
        self._log = np.zeros((len(PI_GRID), 2 * len(EPS) + len(KAPPA)))
        self._rng = np.random.default_rng(self.seed)
        self._eps = pi_error(len(self._s0), len(self._s1), self.delta)

    def log_martingales(self) -> np.ndarray:
        """log of each supported share's mixture martingale."""
        top = self._log.max(axis=1, keepdims=True)
        return (top + np.log(np.mean(np.exp(self._log - top), axis=1, keepdims=True)))[:, 0]

    @property
    def value(self) -> float:
        """The smallest martingale over the supported shares (the alarm's statistic)."""
        lv = float(self.log_martingales().min())
        return math.exp(lv) if lv < 700 else math.inf

    def p_values(self, s: float, theta: float) -> np.ndarray:
        """``p_pi`` of one score for every ``pi`` on the grid."""
        return mixture_p(np.asarray(self._s0), np.asarray(self._s1), np.array([s]), np.array([theta]))[0]

    def update(self, scores: Iterable[float], thetas: Iterable[float] | None = None) -> bool:
        given = iter(thetas) if thetas is not None else None
        for s in scores:
            theta = float(next(given)) if given is not None else float(self._rng.uniform())
            if s is None or not math.isfinite(float(s)):
                continue
            self._log += log_bets(self.p_values(float(s), theta), self._eps)
            self.n_seen += 1
            if not self.suspect and float(self.log_martingales().min()) >= math.log(2 / self.delta):
                self.suspect, self.alarm_at = True, self.n_seen
        return self.suspect

