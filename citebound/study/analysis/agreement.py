"""Analysis 3: pairwise verifier agreement (and each against the panel's majority) on a fixed sample."""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.study.analysis._common import ci_cols, seeded_rng


def agreement_sample(scored: dict[str, pd.DataFrame], n: int, seed: int) -> pd.DataFrame:
    """A fixed, seeded sample of deployment pairs (the sample is recorded by id)."""
    allp = pd.concat([df.assign(source=s) for s, df in scored.items()], ignore_index=True)
    allp = allp.sort_values(["source", "pair_id"]).reset_index(drop=True)
    take = seeded_rng(seed).choice(len(allp), size=min(n, len(allp)), replace=False)
    return allp.iloc[np.sort(take)].reset_index(drop=True)


def agreement_table(sample: pd.DataFrame, verifiers: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Observed agreement, kappa, AC1, PSA, NSA (bootstrap CIs) for each verifier
    pair, plus each verifier against the panel's majority vote ('jury')."""
    verdicts = {v: sample[f"verdict_{v}"].to_numpy(bool) for v in verifiers}
    if len(verifiers) >= 2:
        votes = np.column_stack([verdicts[v] for v in verifiers]).sum(1)
        verdicts["jury"] = votes * 2 > len(verifiers)
    idx = st.bootstrap_indices(len(sample), n_boot, seeded_rng(seed))
    pairs = list(itertools.combinations(verifiers, 2)) + [(v, "jury") for v in verifiers if "jury" in verdicts]
    rows = []
    for x, y in pairs:
        a, b, c, d = st.table2x2(verdicts[x], verdicts[y])
        ba, bb, bc, bd = st.boot_tables(verdicts[x], verdicts[y], idx)
        n = a + b + c + d
        row = {"verifier_a": x, "verifier_b": y, "n": n, "both_supported": a, "a_only": b, "b_only": c,
               "both_unsupported": d}
        row |= ci_cols("observed_agreement", (a + d) / n, (ba + bd) / n)
        row |= ci_cols("kappa", st.kappa_from_table(a, b, c, d), st.boot_kappa(ba, bb, bc, bd))
        row |= ci_cols("gwet_ac1", st.gwet_ac1(a, b, c, d), st.boot_ac1(ba, bb, bc, bd))
        row |= ci_cols("positive_specific_agreement", st.positive_specific_agreement(a, b, c, d),
                        st.boot_ratio(2 * ba, 2 * ba + bb + bc))
        row |= ci_cols("negative_specific_agreement", st.negative_specific_agreement(a, b, c, d),
                        st.boot_ratio(2 * bd, 2 * bd + bb + bc))
        # of a's flags (a says unsupported), the share b calls supported: c / (c + d)
        row["share_a_flags_b_supports"] = c / (c + d) if c + d else np.nan
        row["share_b_flags_a_supports"] = b / (b + d) if b + d else np.nan
        rows.append(row)
    return pd.DataFrame(rows)
