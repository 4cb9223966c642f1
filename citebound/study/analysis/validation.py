"""Analysis 1: verifier validation on human gold (recall, specificity, kappa, AUC) and the
catch-rate frontier."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.calibration.conformal import empirical_rank
from citebound.study.analysis._common import ci_cols, seeded_rng


def validation_table(df: pd.DataFrame, verifiers: Sequence[str], n_boot: int, seed: int,
                     reference: str = "embedding") -> pd.DataFrame:
    """Recall on supported, specificity, Cohen's kappa, ROC-AUC with bootstrap CIs; and, when the
    ``reference`` verifier is among them, each verifier's AUC minus the reference's with a paired
    bootstrap CI (both AUCs on the same resample of pairs)."""
    df = df[df["label"].isin([0, 1])]
    y = df["label"].to_numpy() == 1
    idx = st.bootstrap_indices(len(df), n_boot, seeded_rng(seed))
    rows = []
    for v in verifiers:
        pred = df[f"verdict_{v}"].to_numpy(bool)
        score = df[f"score_{v}"].fillna(0.0).to_numpy(float)
        a, b, c, d = st.table2x2(pred, y)  # pred supported & gold supported, ...
        ba, bb, bc, bd = st.boot_tables(pred, y, idx)
        row = {"verifier": v, "n": len(df), "n_supported": int(y.sum()), "n_unsupported": int((~y).sum())}
        row |= ci_cols("recall_supported", a / (a + c) if a + c else np.nan, st.boot_ratio(ba, ba + bc))
        row |= ci_cols("specificity", d / (b + d) if b + d else np.nan, st.boot_ratio(bd, bb + bd))
        row |= ci_cols("kappa", st.kappa_from_table(a, b, c, d), st.boot_kappa(ba, bb, bc, bd))
        boot = st.boot_auc(score, y, idx)
        row |= ci_cols("roc_auc", st.roc_auc(score, y), boot)
        if reference in verifiers:
            ref = df[f"score_{reference}"].fillna(0.0).to_numpy(float)
            row |= ci_cols(f"roc_auc_minus_{reference}", st.roc_auc(score, y) - st.roc_auc(ref, y),
                           boot - st.boot_auc(ref, y, idx))
        rows.append(row)
    return pd.DataFrame(rows)


def catch_rate_frontier(df: pd.DataFrame, verifiers: Sequence[str],
                        catch_rates: Sequence[float] = tuple(np.round(np.arange(0.5, 1.0001, 0.02), 2))) -> pd.DataFrame:
    """At each common catch rate on unsupported pairs, each verifier's review cost.

    The threshold is the conformal-style order statistic of the unsupported
    scores (flag if score <= t); review cost = share of supported pairs flagged.
    """
    df = df[df["label"].isin([0, 1])]
    rows = []
    for v in verifiers:
        s = df[f"score_{v}"].fillna(0.0).to_numpy(float)
        neg, pos = np.sort(s[df["label"] == 0]), s[df["label"] == 1]
        for c in catch_rates:
            k = empirical_rank(len(neg), c)
            t = neg[k - 1]
            rows.append({"verifier": v, "target_catch_rate": c, "threshold": t,
                         "achieved_catch_rate": float(np.mean(neg <= t)),
                         "review_cost": float(np.mean(pos <= t)) if len(pos) else np.nan})
    return pd.DataFrame(rows)
