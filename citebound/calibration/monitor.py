"""A drift alarm for a deployed calibration: a conformal test martingale over the verifier scores of
deployed citations (no labels needed), and a binomial test once labels come back.

**The martingale** (Vovk, Nouretdinov and Gammerman, "Testing exchangeability on-line", 2003). The
calibration's scores are the first observations of one sequence; each deployed score ``s`` then gets the
smoothed conformal p-value of its strangeness against everything seen before it (calibration and
deployed alike), with *higher score = stranger* (the guarantee breaks when unsupported citations score
higher than the calibration's did)::

    p = (#{seen > s} + theta * (#{seen == s} + 1)) / (#seen + 1),   theta ~ U(0, 1)

Under exchangeability these p-values are independent and uniform, so for any betting function f with
integral 1 on [0, 1] the product of f(p) is a test martingale, and by Ville's inequality it ever reaches
1/delta with probability at most delta. The betting function is the *simple mixture* of the power
functions ``eps * p ** (eps - 1)`` over eps in (0, 1), averaged on a fixed grid of eps (a mixture of
martingales is a martingale), kept in log space. The state becomes ``suspect`` when the martingale first
reaches 1/delta, and stays so.

With a calibration that carries its scores by class (``monitor_scores_unsupported`` and
``monitor_scores_supported``, since citebound 0.3.1) the alarm is instead the label-shift robust one of
:class:`citebound.calibration.eprocess.ShiftRobustAlarm`: it does not fire when only the share of supported
citations differs from the calibration's, and its memory does not grow with the stream. The mixture
martingale above stays for older calibration files (the card says which alarm runs).

**Labels.** When labelled deployed citations come back (a ``citebound label`` sample), the miss rate the
calibration promises (alpha) is tested with the anytime-valid betting e-process of
:class:`citebound.calibration.eprocess.MissRateTest`: valid however the labels are batched and however often
the state is looked at. Past 1/delta the state becomes ``void``. (:func:`miss_rate_p`, the fixed-n binomial
p-value, is kept for reference: re-run after every post, it is not valid at every look.)
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from citebound.calibration.binomial import binom_sf

if TYPE_CHECKING:
    from citebound.calibration.eprocess import MissRateTest

STATES = ("ok", "suspect", "void")
EPS_GRID = (np.arange(100) + 0.5) / 100  # midpoints of 100 equal bins of (0, 1)


def conformal_p(seen_sorted: Sequence[float], s: float, theta: float) -> float:
    """Smoothed conformal p-value of ``s`` against the sorted scores seen before (higher = stranger).

    >>> conformal_p([0.1, 0.5, 0.9], 0.95, 0.5)   # none higher, none equal: 0.5 / 4
    0.125
    >>> conformal_p([0.1, 0.5, 0.5, 0.9], 0.5, 0.5)   # one higher, two equal: (1 + 0.5 * 3) / 5
    0.5
    """
    lo = bisect.bisect_left(seen_sorted, s)
    hi = bisect.bisect_right(seen_sorted, s)
    greater, equal = len(seen_sorted) - hi, hi - lo
    return (greater + theta * (equal + 1)) / (len(seen_sorted) + 1)


def miss_rate_p(missed: int, n_unsupported: int, alpha: float) -> float:
    """P(Binomial(n, alpha) >= missed): small when more unsupported citations passed than alpha allows."""
    if n_unsupported <= 0 or missed <= 0:
        return 1.0
    return binom_sf(missed - 1, n_unsupported, alpha)


@dataclass
class DriftMonitor:
    """The monitor of one calibration: ``update(scores)`` with deployed scores, ``labels(...)`` with
    returned labels; ``state``, ``value`` (the martingale) and :meth:`card` report it."""

    calibration_scores: Sequence[float]
    delta: float = 0.1
    alpha: float = 0.1
    seed: int = 0
    by_class: tuple[Sequence[float], Sequence[float]] | None = None  # (unsupported, supported) scores
    state: str = "ok"
    log_m: float = 0.0
    n_seen: int = 0
    alarm_at: int | None = None
    labels_seen: tuple[int, int] = (0, 0)
    label_p: float | None = None
    history: list = field(default_factory=list)  # resets: who and when
    _seen: list[float] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta}")
        scores = [float(s) for s in self.calibration_scores if s is not None and math.isfinite(float(s))]
        if not scores:
            raise ValueError("the drift monitor needs the calibration's scores (none are finite)")
        from citebound.calibration.eprocess import ShiftRobustAlarm

        self._seen = sorted(scores)
        self._rng = np.random.default_rng(self.seed)
        self._log_parts = np.zeros(len(EPS_GRID))  # log of each power martingale
        self.robust = (ShiftRobustAlarm(self.by_class[0], self.by_class[1], self.delta, self.seed)
                       if self.by_class is not None and len(self.by_class[0]) and len(self.by_class[1]) else None)
        self.label_test = self._label_test()

    @property
    def value(self) -> float:
        """The alarm's statistic: the robust alarm's smallest martingale, else the mixture martingale."""
        if self.robust is not None:
            return self.robust.value
        return float(math.exp(self.log_m)) if self.log_m < 700 else math.inf

    def update(self, scores: Iterable[float], thetas: Iterable[float] | None = None) -> str:
        """Feed deployed citations' scores (NaN, i.e. not scored, is skipped: it carries no evidence).
        ``thetas``: the tie-breaking uniforms, one per score (default: the monitor's seeded draws)."""
        if self.robust is not None:
            if self.robust.update(scores, thetas) and self.state == "ok":
                self.state, self.alarm_at = "suspect", self.robust.alarm_at
            self.n_seen = self.robust.n_seen
            return self.state
        given = iter(thetas) if thetas is not None else None
        for s in scores:
            theta = float(next(given)) if given is not None else float(self._rng.uniform())
            if s is None or not math.isfinite(float(s)):
                continue
            p = conformal_p(self._seen, float(s), theta)
            bisect.insort(self._seen, float(s))
            self._log_parts += np.log(EPS_GRID) + (EPS_GRID - 1.0) * math.log(max(p, 1e-300))
            top = self._log_parts.max()
            self.log_m = float(top + math.log(np.mean(np.exp(self._log_parts - top))))
            self.n_seen += 1
            if self.state == "ok" and self.log_m >= math.log(1.0 / self.delta):
                self.state, self.alarm_at = "suspect", self.n_seen
        return self.state

    def labels(self, missed: int, n_unsupported: int) -> str:
        """Labelled deployed citations: ``missed`` of ``n_unsupported`` unsupported ones passed the guard."""
        self.label_test.add(missed, n_unsupported)  # ValueError for a bad count, before anything changes
        t = self.label_test
        self.labels_seen = (t.missed, t.n)
        self.label_p = miss_rate_p(t.missed, t.n, self.alpha)
        if t.void:
            self.state = "void"
        return self.state

    def dump(self) -> dict:
        """The monitor's state as a JSON object of fixed size (for :mod:`citebound.calibration.state`)."""
        t = self.label_test
        out = {"state": self.state, "n_seen": self.n_seen, "alarm_at": self.alarm_at,
               "labels": [t.missed, t.n, t.void_after], "history": self.history[-50:]}
        if self.robust is not None:
            out["robust"] = self.robust._log.round(12).tolist()
        else:  # the mixture martingale (its growing reference of deployed scores stays in this process)
            out["mixture"] = [self.log_m, self._log_parts.round(12).tolist()]
        return out

    def _label_test(self, missed: int = 0, n: int = 0, void_after: int | None = None) -> MissRateTest:
        """The label test of this monitor's miss rate (alpha) at its level (delta), with the counts so far."""
        from citebound.calibration.eprocess import MissRateTest

        return MissRateTest(self.alpha, self.delta, missed=missed, n=n, void=void_after is not None,
                            void_after=void_after)

    def load(self, st: dict | None) -> DriftMonitor:
        """Take the state :meth:`dump` gave (None: the state of a fresh monitor)."""
        if st is None:
            st = {"state": "ok", "n_seen": 0, "alarm_at": None, "labels": [0, 0, None], "history": []}
        self.state, self.n_seen, self.alarm_at = st["state"], int(st["n_seen"]), st["alarm_at"]
        self.history = list(st.get("history") or [])
        missed, n, void_after = st["labels"]
        self.label_test = self._label_test(int(missed), int(n), void_after)
        self.labels_seen = (int(missed), int(n))
        self.label_p = miss_rate_p(int(missed), int(n), self.alpha) if n else None
        if self.robust is not None:
            r = self.robust
            r._log = np.array(st["robust"], float) if "robust" in st else np.zeros_like(r._log)
            r.n_seen, r.suspect, r.alarm_at = self.n_seen, self.alarm_at is not None, self.alarm_at
        elif "mixture" in st:
            self.log_m, self._log_parts = float(st["mixture"][0]), np.array(st["mixture"][1], float)
        else:
            self.log_m, self._log_parts = 0.0, np.zeros(len(EPS_GRID))
        return self

    def card(self) -> dict:
        """What a guarantee card says of the monitor."""
        t = self.label_test
        return {"state": self.state, "meaning": MEANING[self.state],
                "alarm": ("label-shift robust (any supported share)" if self.robust is not None else
                          "mixture martingale: fires when the supported share changes too; recalibrate with "
                          "citebound 0.3.1+ for the label-shift robust alarm"),
                "martingale": round(self.value, 6), "alarm_at": (2.0 if self.robust is not None else 1.0) / self.delta,
                "deployed_scores": self.n_seen, "first_alarm_after": self.alarm_at, "history": self.history[-10:],
                "labels": {"missed": self.labels_seen[0], "unsupported": self.labels_seen[1],
                           "e_value": float(f"{t.value:.6g}"), "void_at": 1.0 / self.delta,
                           "void_after": t.void_after,
                           "p_value": None if self.label_p is None else float(f"{self.label_p:.6g}")}}


# what each state means for a person, and what to do (the card, the audit page, the proxy's header)
MEANING = {
    "ok": "no sign that deployed unsupported citations score differently from the calibration's",
    "suspect": ("deployed scores no longer look like any mix of the calibration's supported and unsupported ones: "
                "the catch rate may not hold. Label a sample (citebound label --from-reports) and post the labels"),
    "void": ("returned labels reject the promised catch rate (anytime-valid test at delta): recalibrate on labels "
             "from this deployment (citebound calibrate --labels)"),
}
