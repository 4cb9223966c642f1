"""Helpers shared by the analyses."""
from __future__ import annotations

import numpy as np

from ... import stats as st


def seeded_rng(seed: int) -> np.random.Generator:
    """The analyses' one seeded generator."""
    return np.random.default_rng(seed)


def ci_cols(prefix: str, point: float, samples: np.ndarray) -> dict[str, float]:
    """``prefix``, ``prefix_ci_low``, ``prefix_ci_high``: a point value and its 95% percentile interval."""
    lo, hi = st.percentile_ci(samples)
    return {prefix: point, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi}
