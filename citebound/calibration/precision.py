"""A precision guarantee for readers: of the citations the guard passes, at most a share ``q`` are
unsupported, with probability at least ``1 - delta`` over the calibration draw.

A reader asks "of the citations shown as clean, how many are wrong?": the false-discovery rate among
passed citations. At a threshold tau (pass iff score > tau), with ``m(tau)`` the share of unsupported
citations that pass and ``f(tau)`` the share of supported ones flagged, and ``pi`` the deployment's share
of supported citations::

    FDR(tau) = (1 - pi) m(tau) / ((1 - pi) m(tau) + pi (1 - f(tau)))

It rises with ``m`` and falls with ``pi`` and with ``1 - f``. The share ``pi`` is not estimable from the
calibration alone, so it is a **stated assumption**: a lower bound ``pi_min`` on the deployment's supported
share (the bound holds for every ``pi >= pi_min``). For every tau of a grid fixed in advance, exact
one-sided Clopper-Pearson bounds at level ``delta / (2 |grid|)`` give ``m(tau) <= m_up`` and ``f(tau) <=
f_up``; by the union bound all of them hold at once with probability ``>= 1 - delta``, and then ``FDR(tau)
<= (1 - pi_min) m_up / ((1 - pi_min) m_up + pi_min (1 - f_up))`` at every tau. Every tau whose bound is
``<= q`` is certified (simultaneously, so choosing among them may look at the data); the guard deploys the
smallest, which keeps the most supported citations. This is Learn-then-Test (Angelopoulos et al., 2021)
with a monotone risk bound in place of a p-value per hypothesis.

>>> r = calibrate_precision([0.1] * 50 + [0.9] * 50, [0] * 50 + [1] * 50, q=0.1, delta=0.1, supported_share_min=0.5,
...                         grid=[0.5])
>>> r["tau"], r["certified"]
(0.5, 1)
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from citebound.calibration.binomial import upper_bound as _upper_bound
from citebound.calibration.ltt import default_grid, risk_counts

upper_bound = functools.lru_cache(maxsize=65536)(_upper_bound)  # (k, n, level) recur across taus and draws


def fdr_bounds(scores: Any, labels: Any, grid: Any, delta: float, supported_share_min: float) -> np.ndarray:
    """The simultaneous upper bound on FDR(tau) at every tau of ``grid``."""
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    grid = np.asarray(grid, float)
    k0, n0, k1, n1 = risk_counts(s, y, grid)
    level = delta / (2 * len(grid))
    m_up = np.array([upper_bound(int(k), int(n0), float(level)) if n0 else 1.0 for k in k0])
    f_up = np.array([upper_bound(int(k), int(n1), float(level)) if n1 else 1.0 for k in k1])
    pi = supported_share_min
    bad = (1 - pi) * m_up
    good = pi * (1 - f_up)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bad + good > 0, bad / (bad + good), 1.0)


def calibrate_precision(scores: Any, labels: Any, q: float, delta: float, supported_share_min: float,
                        grid: Any = None) -> dict[str, Any]:
    """The precision calibration: the certified taus, the deployed (smallest) one, and what it promises."""
    for name, v in (("q", q), ("delta", delta), ("supported_share_min", supported_share_min)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must be in (0, 1), got {v}")
    grid = np.sort(np.asarray(default_grid() if grid is None else grid, float))
    bound = fdr_bounds(scores, labels, grid, delta, supported_share_min)
    ok = bound <= q
    at = int(np.flatnonzero(ok)[0]) if ok.any() else None  # the smallest certified tau keeps the most citations
    tau = float(grid[at]) if at is not None else None
    out = {"q": q, "delta": delta, "supported_share_min": supported_share_min, "certified": int(ok.sum()),
           "tau": tau, "fdr_bound_at_tau": float(bound[at]) if at is not None else None}
    out["guarantee"] = (f"with probability >= {1 - delta:.3g} over the calibration draw, at most {q:g} of the citations "
                        f"the guard passes are unsupported, if the deployment's supported share is >= "
                        f"{supported_share_min:g}" if tau is not None else
                        f"none: no threshold certifies a false-discovery rate <= {q:g} at delta {delta:g} with a "
                        f"supported share >= {supported_share_min:g} (label more citations, or loosen q)")
    return out
