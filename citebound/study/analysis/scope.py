"""Analysis 8: scope control, support verdicts vs yes/no conclusions (support is not correctness)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.study.analysis._common import ci_cols, seeded_rng


def scope_table(df: pd.DataFrame, verifiers: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Kappa between 'supported' verdicts and the yes/no conclusion (support is not correctness)."""
    y = df["label"].to_numpy() == 1
    idx = st.bootstrap_indices(len(df), n_boot, seeded_rng(seed))
    rows = []
    for v in verifiers:
        p = df[f"verdict_{v}"].to_numpy(bool)
        a, b, c, d = st.table2x2(p, y)
        row = {"verifier": v, "n": len(df), "supported_rate_yes": p[y].mean() if y.any() else np.nan,
               "supported_rate_no": p[~y].mean() if (~y).any() else np.nan}
        row |= ci_cols("kappa", st.kappa_from_table(a, b, c, d), st.boot_kappa(*st.boot_tables(p, y, idx)))
        rows.append(row)
    return pd.DataFrame(rows)
