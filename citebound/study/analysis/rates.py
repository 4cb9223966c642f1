"""Analysis 2: unsupported-citation rates per verifier and source, with item-bootstrap CIs."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from citebound.calibration import stats as st
from citebound.study.analysis._common import seeded_rng


def unsupported_rates(scored: dict[str, pd.DataFrame], verifiers: Sequence[str], n_boot: int,
                      seed: int) -> pd.DataFrame:
    """Per verifier x source (and pooled): share of pairs judged unsupported,
    with a 95% CI from resampling answers (items), not pairs."""
    rows = []
    for v in verifiers:
        pooled = []
        for source, df in list(scored.items()) + [("pooled", None)]:
            if df is None:
                df = pd.concat(pooled, ignore_index=True) if pooled else None
                if df is None or not len(df):
                    continue
            else:
                pooled.append(df.assign(item_id=source + "|" + df["item_id"].astype(str)))
            flag = (~df[f"verdict_{v}"].to_numpy(bool)).astype(float)
            items = pd.DataFrame({"item": df["item_id"].to_numpy(), "flag": flag}).groupby("item")["flag"]
            succ, tot = items.sum().to_numpy(), items.count().to_numpy()
            boot = st.cluster_bootstrap_rate(succ, tot, n_boot, seeded_rng(seed))
            lo, hi = st.percentile_ci(boot)
            rows.append({"verifier": v, "source": source, "n_items": len(tot), "n_pairs": int(tot.sum()),
                         "unsupported_rate": float(succ.sum() / tot.sum()), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)
