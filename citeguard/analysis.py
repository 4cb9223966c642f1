"""The study's analyses: pure functions from scored pair tables to tables.

Scored tables come from :func:`citeguard.scores.load_scored`: one row per
pair with ``label`` (1 supported / 0 unsupported / NaN unknown) and, per
verifier ``v``, ``score_v`` and ``verdict_v`` (True = supported).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from . import stats as st
from .conformal import ConformalGuard, conformal_threshold, pac_rank, split_coverage, tau_warnings_silenced
from .verifiers.lexical import token_jaccard


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _ci_cols(prefix: str, point: float, samples: np.ndarray) -> dict[str, float]:
    lo, hi = st.percentile_ci(samples)
    return {prefix: point, f"{prefix}_ci_low": lo, f"{prefix}_ci_high": hi}


# 1. Verifier validation on gold -------------------------------------------------

def validation_table(df: pd.DataFrame, verifiers: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Recall on supported, specificity, Cohen's kappa, ROC-AUC with bootstrap CIs."""
    df = df[df["label"].isin([0, 1])]
    y = df["label"].to_numpy() == 1
    idx = st.bootstrap_indices(len(df), n_boot, _rng(seed))
    rows = []
    for v in verifiers:
        pred = df[f"verdict_{v}"].to_numpy(bool)
        score = df[f"score_{v}"].fillna(0.0).to_numpy(float)
        a, b, c, d = st.table2x2(pred, y)  # pred supported & gold supported, ...
        ba, bb, bc, bd = st.boot_tables(pred, y, idx)
        row = {"verifier": v, "n": len(df), "n_supported": int(y.sum()), "n_unsupported": int((~y).sum())}
        row |= _ci_cols("recall_supported", a / (a + c) if a + c else np.nan, st.boot_ratio(ba, ba + bc))
        row |= _ci_cols("specificity", d / (b + d) if b + d else np.nan, st.boot_ratio(bd, bb + bd))
        row |= _ci_cols("kappa", st.kappa_from_table(a, b, c, d), st.boot_kappa(ba, bb, bc, bd))
        row |= _ci_cols("roc_auc", st.roc_auc(score, y), st.boot_auc(score, y, idx))
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
            k = max(1, int(math.ceil(round(c * len(neg), 9))))
            t = neg[k - 1]
            rows.append({"verifier": v, "target_catch_rate": c, "threshold": t,
                         "achieved_catch_rate": float(np.mean(neg <= t)),
                         "review_cost": float(np.mean(pos <= t)) if len(pos) else np.nan})
    return pd.DataFrame(rows)


# 2. Unsupported-citation rates ----------------------------------------------------

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
            boot = st.cluster_bootstrap_rate(succ, tot, n_boot, _rng(seed))
            lo, hi = st.percentile_ci(boot)
            rows.append({"verifier": v, "source": source, "n_items": len(tot), "n_pairs": int(tot.sum()),
                         "unsupported_rate": float(succ.sum() / tot.sum()), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


# 3. Pairwise agreement --------------------------------------------------------------

def agreement_sample(scored: dict[str, pd.DataFrame], n: int, seed: int) -> pd.DataFrame:
    """A fixed, seeded sample of deployment pairs (the sample is recorded by id)."""
    allp = pd.concat([df.assign(source=s) for s, df in scored.items()], ignore_index=True)
    allp = allp.sort_values(["source", "pair_id"]).reset_index(drop=True)
    take = _rng(seed).choice(len(allp), size=min(n, len(allp)), replace=False)
    return allp.iloc[np.sort(take)].reset_index(drop=True)


def agreement_table(sample: pd.DataFrame, verifiers: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Observed agreement, kappa, AC1, PSA, NSA (bootstrap CIs) for each verifier
    pair, plus each verifier against the panel's majority vote ('jury')."""
    verdicts = {v: sample[f"verdict_{v}"].to_numpy(bool) for v in verifiers}
    if len(verifiers) >= 2:
        votes = np.column_stack([verdicts[v] for v in verifiers]).sum(1)
        verdicts["jury"] = votes * 2 > len(verifiers)
    idx = st.bootstrap_indices(len(sample), n_boot, _rng(seed))
    pairs = list(itertools.combinations(verifiers, 2)) + [(v, "jury") for v in verifiers if "jury" in verdicts]
    rows = []
    for x, y in pairs:
        a, b, c, d = st.table2x2(verdicts[x], verdicts[y])
        ba, bb, bc, bd = st.boot_tables(verdicts[x], verdicts[y], idx)
        n = a + b + c + d
        row = {"verifier_a": x, "verifier_b": y, "n": n, "both_supported": a, "a_only": b, "b_only": c,
               "both_unsupported": d}
        row |= _ci_cols("observed_agreement", (a + d) / n, (ba + bd) / n)
        row |= _ci_cols("kappa", st.kappa_from_table(a, b, c, d), st.boot_kappa(ba, bb, bc, bd))
        row |= _ci_cols("gwet_ac1", st.gwet_ac1(a, b, c, d), st.boot_ac1(ba, bb, bc, bd))
        row |= _ci_cols("positive_specific_agreement", st.positive_specific_agreement(a, b, c, d),
                        st.boot_ratio(2 * ba, 2 * ba + bb + bc))
        row |= _ci_cols("negative_specific_agreement", st.negative_specific_agreement(a, b, c, d),
                        st.boot_ratio(2 * bd, 2 * bd + bb + bc))
        # of a's flags (a says unsupported), the share b calls supported: c / (c + d)
        row["share_a_flags_b_supports"] = c / (c + d) if c + d else np.nan
        row["share_b_flags_a_supports"] = b / (b + d) if b + d else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


# 4-6. Conformal guard ----------------------------------------------------------------

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
            cov = split_coverage(neg, pos, n_cal, alphas, n_splits, _rng(seed), delta=delta)
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
                cov = split_coverage(neg, pos, n_cal, alphas, n_splits, _rng(seed))
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


def transfer_table(cal: dict[str, pd.DataFrame], hard: dict[str, pd.DataFrame], targets: Sequence[float]) -> pd.DataFrame:
    """tau calibrated on easy in-question distractors, applied to human-refuted pairs."""
    rows = []
    for v in cal:
        if v not in hard:
            continue
        easy_neg, _ = calibration_arrays(cal[v], v)
        hard_neg, hard_pos = calibration_arrays(hard[v], v)
        for t in targets:
            a = round(1 - t, 10)
            with tau_warnings_silenced():
                tau = conformal_threshold(easy_neg, a)
                tau_hard = conformal_threshold(hard_neg, a)
            caught = int(np.sum(hard_neg <= tau))
            ci = st.wilson(caught, len(hard_neg))
            rows.append({
                "verifier": v, "target": t, "tau_easy": tau, "n_easy_unsupported": len(easy_neg),
                "n_hard_unsupported": len(hard_neg), "hard_catch_rate": ci.estimate, "ci_low": ci.low,
                "ci_high": ci.high, "easy_mean_score": float(np.mean(easy_neg)),
                "hard_mean_score": float(np.mean(hard_neg)),
                "mean_score_gap": float(np.mean(hard_neg) - np.mean(easy_neg)),
                "tau_needed_on_hard": tau_hard,
                "flag_rate_supported_at_tau_needed": float(np.mean(hard_pos <= tau_hard)) if len(hard_pos) else np.nan,
            })
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
        rng = _rng(seed)
        cov_pool: dict[str, list] = {}
        cov_mond: dict[str, list] = {}
        for _ in range(n_splits):
            cal_mask = rng.random(len(s)) < 0.5
            with tau_warnings_silenced():
                tau_pool = conformal_threshold(s[cal_mask], a)
                for g in np.unique(groups):
                    gm = groups == g
                    test = s[gm & ~cal_mask]
                    if (gm & cal_mask).sum() == 0 or not len(test):
                        continue
                    tau_g = conformal_threshold(s[gm & cal_mask], a)
                    cov_pool.setdefault(g, []).append(np.mean(test <= tau_pool))
                    cov_mond.setdefault(g, []).append(np.mean(test <= tau_g))
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
    from .conformal import conformal_rank
    return pd.DataFrame([{"n_cal": n, "target": t, "k_marginal": conformal_rank(n, round(1 - t, 10)),
                          "k_pac": pac_rank(n, round(1 - t, 10), delta), "delta": delta}
                         for n in ns for t in targets])


# 7. Re-attribution -----------------------------------------------------------------

def rank_hits(df: pd.DataFrame, score_col: str, ks: Sequence[int], rng: np.random.Generator | None = None) -> pd.DataFrame:
    """Per cited sentence: does a gold passage appear in the top-k by ``score_col``?
    Ties are broken at random (seeded) so a constant ranker scores like chance."""
    out = []
    for sid, g in df.groupby("sentence_id", sort=True):
        s = g[score_col].fillna(-np.inf).to_numpy(float)
        tie = rng.random(len(s)) if rng is not None else np.zeros(len(s))
        order = np.lexsort((tie, -s))
        gold = g["label"].to_numpy()[order] == 1
        out.append({"sentence_id": sid, **{f"hit@{k}": bool(gold[:k].any()) for k in ks},
                    "n_candidates": len(g), "n_gold": int(gold.sum())})
    return pd.DataFrame(out)


def random_recall(n_candidates: np.ndarray, n_gold: np.ndarray, k: int) -> float:
    """Expected recall@k of a uniformly random ranking: 1 - C(n-g, k) / C(n, k) per sentence
    (1 when the top k must hold a gold passage, 0 when there is none), averaged.

    >>> random_recall([4, 2, 3], [1, 1, 0], 2)
    0.5
    """
    vals = [0.0 if g == 0 else 1.0 if n - g < k else 1.0 - math.comb(n - g, k) / math.comb(n, k)
            for n, g in zip(n_candidates, n_gold)]
    return float(np.mean(vals)) if vals else float("nan")


def reattribution_tables(df: pd.DataFrame, rankers: dict[str, str], ks: Sequence[int], seed: int) -> dict[str, pd.DataFrame]:
    """Recall@k per ranker (Wilson CIs) + random baseline, McNemar between rankers, overlap strata."""
    df = df[df.groupby("sentence_id")["label"].transform("max") == 1]  # sentences with a gold candidate
    hits = {name: rank_hits(df, col, ks, _rng(seed)) for name, col in rankers.items()}
    rows = []
    for name, h in hits.items():
        for k in ks:
            ci = st.wilson(int(h[f"hit@{k}"].sum()), len(h))
            rows.append({"ranker": name, "k": k, "n_sentences": len(h), "recall": ci.estimate,
                         "ci_low": ci.low, "ci_high": ci.high})
    any_h = next(iter(hits.values())) if hits else pd.DataFrame()
    for k in ks:
        if len(any_h):
            rows.append({"ranker": "random", "k": k, "n_sentences": len(any_h),
                         "recall": random_recall(any_h["n_candidates"].to_numpy(), any_h["n_gold"].to_numpy(), k),
                         "ci_low": np.nan, "ci_high": np.nan})
    mc = []
    for x, y in itertools.combinations(hits, 2):
        hx, hy = hits[x]["hit@1"].to_numpy(), hits[y]["hit@1"].to_numpy()
        b, c = int(np.sum(hx & ~hy)), int(np.sum(~hx & hy))
        mc.append({"ranker_a": x, "ranker_b": y, "k": 1, "a_only": b, "b_only": c,
                   "mcnemar_exact_p": st.mcnemar_exact(b, c) if b + c else 1.0})
    # stratify by claim-gold token-Jaccard overlap
    gold = df[df["label"] == 1].groupby("sentence_id").apply(
        lambda g: max(token_jaccard(c, p) for c, p in zip(g["claim"], g["passage"])), include_groups=False)
    strata = []
    for scheme, q in (("halves", 2), ("quartiles", 4)):
        bins = pd.qcut(gold.rank(method="first"), q, labels=[f"Q{i + 1}/{q}" for i in range(q)])
        for name, h in hits.items():
            hh = h.set_index("sentence_id").join(bins.rename("stratum"))
            for stratum, g in hh.groupby("stratum", observed=True):
                ci = st.wilson(int(g["hit@1"].sum()), len(g))
                strata.append({"scheme": scheme, "stratum": stratum, "ranker": name, "n_sentences": len(g),
                               "mean_jaccard": float(gold.loc[g.index].mean()), "recall@1": ci.estimate,
                               "ci_low": ci.low, "ci_high": ci.high})
    return {"recall": pd.DataFrame(rows), "mcnemar": pd.DataFrame(mc), "strata": pd.DataFrame(strata)}


def lexical_overlap_by_label(df: pd.DataFrame) -> pd.DataFrame:
    """Claim-passage token Jaccard for supported vs refuted gold pairs (Mann-Whitney U)."""
    j = np.array([token_jaccard(c, p) for c, p in zip(df["claim"], df["passage"])])
    y = df["label"].to_numpy()
    sup, ref = j[y == 1], j[y == 0]
    u = sps.mannwhitneyu(sup, ref) if len(sup) and len(ref) else None
    return pd.DataFrame([{"label": "supported", "n": len(sup), "mean_jaccard": sup.mean() if len(sup) else np.nan,
                          "median_jaccard": np.median(sup) if len(sup) else np.nan,
                          "mannwhitney_p": u.pvalue if u else np.nan},
                         {"label": "refuted", "n": len(ref), "mean_jaccard": ref.mean() if len(ref) else np.nan,
                          "median_jaccard": np.median(ref) if len(ref) else np.nan,
                          "mannwhitney_p": u.pvalue if u else np.nan}])


# 8. Scope control ------------------------------------------------------------------------

def scope_table(df: pd.DataFrame, verifiers: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Kappa between 'supported' verdicts and the yes/no conclusion (support is not correctness)."""
    y = df["label"].to_numpy() == 1
    idx = st.bootstrap_indices(len(df), n_boot, _rng(seed))
    rows = []
    for v in verifiers:
        p = df[f"verdict_{v}"].to_numpy(bool)
        a, b, c, d = st.table2x2(p, y)
        row = {"verifier": v, "n": len(df), "supported_rate_yes": p[y].mean() if y.any() else np.nan,
               "supported_rate_no": p[~y].mean() if (~y).any() else np.nan}
        row |= _ci_cols("kappa", st.kappa_from_table(a, b, c, d), st.boot_kappa(*st.boot_tables(p, y, idx)))
        rows.append(row)
    return pd.DataFrame(rows)
