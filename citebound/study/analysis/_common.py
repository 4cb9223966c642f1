"""Helpers shared by the analyses."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pandas as pd

from citebound.calibration import stats as st


def seeded_rng(seed: int) -> np.random.Generator:
    """The analyses' one seeded generator."""
    return np.random.default_rng(seed)


def ci_cols(prefix: str, point: float, samples: np.ndarray) -> dict[str, float]:
    """``prefix``, ``prefix_ci_low``, ``prefix_ci_high``: a point value and its 95% percentile interval."""
    lo, hi = st.percentile_ci(samples)
    return {prefix: point, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi}


def sources_then_pooled(sources: Iterable[str], build: Callable[[str], pd.DataFrame]) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(source, build(source))`` for each source, then ``("pooled", all of them)`` with each item id
    prefixed by its source, so that the pooled bootstrap resamples answers, never merges two."""
    pooled = []
    for source in sources:
        d = build(source)
        pooled.append(d.assign(item_id=source + "|" + d["item_id"].astype(str)))
        yield source, d
    if pooled:
        yield "pooled", pd.concat(pooled, ignore_index=True)
