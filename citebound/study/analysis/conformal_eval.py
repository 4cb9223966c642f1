"""Analyses 4-6: the split-conformal guard evaluated (coverage over random splits, calibration
size, review budget, PAC ranks, Mondrian groups)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.calibration.conformal import (
    ConformalGuard,
    conformal_rank,
    conformal_threshold,
    pac_rank,
    split_coverage,
    tau_warnings_silenced,
)
from citebound.study.analysis._common import seeded_rng


def calibration_arrays(df: pd.DataFrame, v: str) -> tuple[np.ndarray, np.ndarray]:
    s = df[f"score_{v}"].to_numpy(float)
    ok = np.isfinite(s)
    return s[ok & (df["label"] == 0).to_numpy()], s[ok & (df["label"] == 1).to_numpy()]


def coverage_table(cal: dict[str, pd.DataFrame], targets: Sequence[float], n_splits: int,
                   fraction: float, delta: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Coverage of held-out unsupported pairs over random splits, per verifier and target.

    Returns (summary per verifier x target, per-split coverages for plots).
    """
    rows, per_split = [], []
    for v, df in cal.items():
        neg, pos = calibration_arrays(df, v)
        n_cal = int(round(fraction * len(neg)))
        if n_cal < 1 or n_cal >= len(neg):
            continue
        alphas = [round(1 - t, 10) for t in targets]
        with tau_warnings_silenced():
            cov = split_coverage(neg, pos, n_cal, alphas, n_splits, seeded_rng(seed), delta=delta)
        for i, t in enumerate(targets):
            c, p = cov["conformal"][i], cov["pac"][i]
            rows.append({
                "verifier": v, "target": t, "n_cal": n_cal, "n_test_unsupported": len(neg) - n_cal,
                "n_supported": len(pos), "mean_coverage": c.mean(), "coverage_q05": np.quantile(c, 0.05),
                "share_splits_below_target": float(np.mean(c < t)),
                "pac_mean_coverage": p.mean(), "pac_share_splits_below_target": float(np.mean(p < t)),
                "pac_delta": delta, "mean_flag_rate_supported": float(np.nanmean(cov["flag_supported"][i])),
                "naive_mean_coverage": cov["naive"][i].mean(),
            })
            per_split.append(pd.DataFrame({"verifier": v, "target": t, "split": np.arange(len(c)),
                                           "conformal": c, "pac": p, "naive": cov["naive"][i]}))
    return pd.DataFrame(rows), (pd.concat(per_split, ignore_index=True) if per_split else pd.DataFrame())


def calibration_size_ablation(cal: dict[str, pd.DataFrame], sizes: Sequence[int], targets: Sequence[float],
                              n_splits: int, seed: int) -> pd.DataFrame:
    """Conformal vs naive empirical quantile at each calibration size."""
    rows = []
    for v, df in cal.items():
        neg, pos = calibration_arrays(df, v)
        usable = [n for n in sizes if n < len(neg)]
        for n_cal in usable:
            alphas = [round(1 - t, 10) for t in targets]
            with tau_warnings_silenced():
                cov = split_coverage(neg, pos, n_cal, alphas, n_splits, seeded_rng(seed))
            for i, t in enumerate(targets):
                for method in ("conformal", "naive"):
                    c = cov[method][i]
                    rows.append({"verifier": v, "n_cal": n_cal, "target": t, "method": method,
                                 "mean_coverage": c.mean(), "share_splits_below_target": float(np.mean(c < t)),
                                 "infinite_tau": bool(method == "conformal" and np.isinf(cov["tau"][i]).all())})
    return pd.DataFrame(rows)


def review_budget(cal: dict[str, pd.DataFrame], deploy: dict[str, pd.DataFrame], target: float) -> pd.DataFrame:
    """Flag rate per source at a guaranteed catch rate (tau from all calibration negatives)."""
    rows = []
    for v, df in cal.items():
        neg, _ = calibration_arrays(df, v)
        guard = ConformalGuard(alpha=round(1 - target, 10))
        guard.calibrate(neg, np.zeros(len(neg)))
        for source, d in deploy.items():
            flags = guard.predict(d[f"score_{v}"].to_numpy(float))
            ci = st.wilson(int(flags.sum()), len(flags))
            rows.append({"verifier": v, "source": source, "target_catch_rate": target, "tau": guard.tau,
                         "n_cal_unsupported": guard.n_unsupported, "n_pairs": len(flags),
                         "flag_rate": ci.estimate, "ci_low": ci.low, "ci_high": ci.high})
    return pd.DataFrame(rows)


def budget_curve(cal: dict[str, pd.DataFrame], deploy: dict[str, pd.DataFrame],
                 targets: Sequence[float] = tuple(np.round(np.arange(0.5, 0.99, 0.02), 2))) -> pd.DataFrame:
    """The recall-cost dial: pooled deployment flag rate at each catch-rate target."""
    rows = []
    for v, df in cal.items():
        neg, _ = calibration_arrays(df, v)
        s = np.concatenate([d[f"score_{v}"].to_numpy(float) for d in deploy.values()]) if deploy else np.zeros(0)
        for t in targets:
            with tau_warnings_silenced():
                tau = conformal_threshold(neg, round(1 - t, 10))
            rows.append({"verifier": v, "target_catch_rate": t, "tau": tau,
                         "pooled_flag_rate": float(np.mean(~(s > tau))) if len(s) else np.nan})
    return pd.DataFrame(rows)


def mondrian_table(cal: dict[str, pd.DataFrame], group_col: str, target: float, n_splits: int,
                   seed: int, min_group: int = 20) -> pd.DataFrame:
    """Per-group coverage: one pooled tau vs one tau per group (Mondrian), random splits."""
    rows = []
    a = round(1 - target, 10)
    for v, df in cal.items():
        d = df[np.isfinite(df[f"score_{v}"]) & (df["label"] == 0)]
        groups = d[group_col].astype(str).to_numpy()
        s = d[f"score_{v}"].to_numpy(float)
        rng = seeded_rng(seed)
        cov_pool: dict[str, list] = {}
        cov_mond: dict[str, list] = {}
        for _ in range(n_splits):
            cal_mask = rng.random(len(s)) < 0.5
            with tau_warnings_silenced():
                guard = ConformalGuard(alpha=a).calibrate(s[cal_mask], np.zeros(int(cal_mask.sum())),
                                                          groups=groups[cal_mask])
            for g in np.unique(groups):
                test = s[(groups == g) & ~cal_mask]
                if g not in guard.group_tau or not len(test):
                    continue
                cov_pool.setdefault(g, []).append(np.mean(test <= guard.tau))
                cov_mond.setdefault(g, []).append(np.mean(test <= guard.group_tau[g]))
        for g in sorted(cov_pool):
            n_g = int((groups == g).sum())
            if n_g < min_group:
                continue
            rows.append({"verifier": v, "group": g, "n_unsupported": n_g, "target": target,
                         "pooled_mean_coverage": float(np.mean(cov_pool[g])),
                         "mondrian_mean_coverage": float(np.mean(cov_mond[g])),
                         "pooled_share_below_target": float(np.mean(np.array(cov_pool[g]) < target)),
                         "mondrian_share_below_target": float(np.mean(np.array(cov_mond[g]) < target))})
    return pd.DataFrame(rows)


def pac_ranks_table(ns: Iterable[int], targets: Sequence[float], delta: float) -> pd.DataFrame:
    """k for the marginal and the PAC threshold at each calibration size."""
    return pd.DataFrame([{"n_cal": n, "target": t, "k_marginal": conformal_rank(n, round(1 - t, 10)),
                          "k_pac": pac_rank(n, round(1 - t, 10), delta), "delta": delta}
                         for n in ns for t in targets])
