"""Held-out evaluation of the frozen-feature head: leave-one-source-out or grouped folds, the paired
bootstrap of the AUC difference against the embedding verifier, the choice of C and the adoption rule."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.training.head import FEATURES, best_window, fit_head, pair_scores

BASELINE = "cos_l6"  # the embedding verifier's score, up to the monotone (cos + 1) / 2


def auc(y: np.ndarray, s: np.ndarray) -> float:
    y = np.asarray(y, int)
    return st.roc_auc(np.asarray(s, float), y) if 0 < y.sum() < len(y) else float("nan")


def paired_auc_difference(y: np.ndarray, s_new: np.ndarray, s_base: np.ndarray, clusters: np.ndarray,
                          n_boot: int, seed: int) -> tuple[float, float, float]:
    """AUC(new) - AUC(base) and its 95% CI, resampling clusters (answers or claims), both scores on the
    same resample."""
    y, s_new, s_base = np.asarray(y, int), np.asarray(s_new, float), np.asarray(s_base, float)
    codes, uniq = pd.factorize(pd.Series(clusters))
    members = [np.flatnonzero(codes == k) for k in range(len(uniq))]
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_boot):
        idx = np.concatenate([members[k] for k in rng.integers(len(members), size=len(members))])
        if 0 < y[idx].sum() < len(idx):
            diffs.append(auc(y[idx], s_new[idx]) - auc(y[idx], s_base[idx]))
    lo, hi = st.percentile_ci(np.asarray(diffs))
    return auc(y, s_new) - auc(y, s_base), lo, hi


Units = tuple[np.ndarray, np.ndarray]  # (unit features, owning pair index)


def _scores(head: Mapping[str, Any], units: Units, n: int, pick: np.ndarray | None = None) -> np.ndarray:
    """The head's pair scores (max over windows), for all pairs or those where ``pick`` is True."""
    feats, owner = units
    if pick is None:
        return pair_scores(dict(head), feats, owner, n)
    keep = pick[owner]
    new_index = np.cumsum(pick) - 1
    return pair_scores(dict(head), feats[keep], new_index[owner[keep]], int(pick.sum()))


def evaluate(train: pd.DataFrame, train_units: Units, gold: Mapping[str, tuple[pd.DataFrame, Units]],
             variants: Mapping[str, Sequence[str]], grid: Sequence[float], n_boot: int,
             seed: int) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """The design x evaluation table and, per variant, its chosen C and the head fitted on all its sources.

    ``train``: pairs with ``source`` and ``label``; ``train_units``: their (claim, window) unit features and
    owning pair index; ``gold``: {name: (pairs with ``label`` and ``cluster``, their units)}. Heads fit on
    each pair's best window (:func:`best_window`) and score a pair by the max over its windows; the
    baseline is the embedding verifier's score, the best window's ``cos_l6``."""
    rows, chosen = [], {}
    base_col = FEATURES.index(BASELINE)
    x_train = best_window(*train_units, len(train))
    gold_base = {name: best_window(*u, len(g))[:, base_col] for name, (g, u) in gold.items()}
    for variant, sources in variants.items():
        in_v = train["source"].isin(list(sources)).to_numpy()
        tv, xv = train[in_v].reset_index(drop=True), x_train[in_v]
        y = tv["label"].to_numpy(int)
        pos = np.flatnonzero(in_v)

        def held(head, mask_v, pos=pos):  # the head's pair scores on the variant's pairs where mask_v is True
            pick = np.zeros(len(train), bool)
            pick[pos[mask_v]] = True
            return _scores(head, train_units, len(train), pick)

        loso_mean = {}
        for c in grid:
            aucs = []
            for src in sources:
                out = (tv["source"] == src).to_numpy()
                if out.all() or not out.any():
                    continue
                head = fit_head(xv[~out], y[~out], c)
                a, b = auc(y[out], held(head, out)), auc(y[out], xv[out][:, base_col])
                aucs.append(a)
                rows.append({"variant": variant, "C": c, "evaluation": f"loso:{src}", "n": int(out.sum()),
                             "auc": a, "embedding_auc": b, "delta": a - b})
            loso_mean[c] = float(np.nanmean(aucs)) if aucs else float("nan")
        best = max(grid, key=lambda c: (np.nan_to_num(loso_mean[c], nan=-1.0), -c))
        head = fit_head(xv, y, best)
        for name, (g, units) in gold.items():
            yg = g["label"].to_numpy(int)
            sg = _scores(head, units, len(g))
            d, lo, hi = paired_auc_difference(yg, sg, gold_base[name], g["cluster"].to_numpy(), n_boot, seed)
            rows.append({"variant": variant, "C": best, "evaluation": name, "n": len(g), "auc": auc(yg, sg),
                         "embedding_auc": auc(yg, gold_base[name]), "delta": d, "delta_ci_low": lo,
                         "delta_ci_high": hi})
        rng = np.random.default_rng(seed)
        test = holdout_mask(tv["source"], sources, rng)
        h_in = fit_head(xv[~test], y[~test], best)
        a, b = auc(y[test], held(h_in, test)), auc(y[test], xv[test][:, base_col])
        rows.append({"variant": variant, "C": best, "evaluation": "in_distribution", "n": int(test.sum()),
                     "auc": a, "embedding_auc": b, "delta": a - b})
        chosen[variant] = {"C": best, "loso_mean_auc": loso_mean[best], "head": head, "sources": list(sources)}
    table = pd.DataFrame(rows, columns=["variant", "C", "evaluation", "n", "auc", "embedding_auc", "delta",
                                        "delta_ci_low", "delta_ci_high"])
    return table, chosen


def holdout_mask(source: pd.Series, sources: Sequence[str], rng: np.random.Generator) -> np.ndarray:
    """The in-distribution hold-out: a seeded 20% (at least one pair) of each source's rows, drawn source by
    source in the given order."""
    test = np.zeros(len(source), bool)
    for src in sources:
        idx = np.flatnonzero((source == src).to_numpy())
        if len(idx):
            test[rng.choice(idx, size=max(1, len(idx) // 5), replace=False)] = True
    return test


def choose_and_adopt(table: pd.DataFrame, chosen: Mapping[str, Mapping[str, Any]], gold_names: Sequence[str],
                     margin: float) -> dict[str, Any]:
    """The variant with the best mean AUC over the expert gold sets, and whether it is adopted: AUC at
    least ``margin`` above embedding on every gold set with the CI's lower end above 0, and no left-out
    source where it is below embedding."""
    gold = table[table["evaluation"].isin(list(gold_names))]
    means = gold.groupby("variant")["auc"].mean()
    variant = str(means.idxmax())
    g = gold[gold["variant"] == variant].set_index("evaluation")
    c = chosen[variant]["C"]
    loso = table[(table["variant"] == variant) & (table["C"] == c) & table["evaluation"].str.startswith("loso:")]
    reasons = adoption_reasons(g, loso, gold_names, margin)
    return {"variant": variant, "C": c, "adopted": not reasons, "reasons": reasons}


def adoption_reasons(gold: pd.DataFrame, loso: pd.DataFrame, gold_names: Sequence[str], margin: float) -> list[str]:
    """Why a design fails the adoption rule (empty: adopted): on each gold set (``gold`` indexed by
    evaluation) an AUC gain of at least ``margin`` with the CI's lower end above 0; leave-one-source-out
    rows present and none below embedding."""
    reasons = []
    for name in gold_names:
        r = gold.loc[name]
        if not (r["delta"] >= margin and r["delta_ci_low"] > 0):
            reasons.append(f"{name}: AUC {r['auc']:.3f} vs embedding {r['embedding_auc']:.3f} (delta {r['delta']:+.3f}, "
                           f"95% CI {r['delta_ci_low']:+.3f} to {r['delta_ci_high']:+.3f}; needs >= +{margin:.2f}, CI above 0)")
    if loso.empty:
        reasons.append("no leave-one-source-out evaluation for this variant")
    for _, r in loso[loso["delta"] < 0].iterrows():
        reasons.append(f"{r['evaluation']}: AUC {r['auc']:.3f} below embedding's {r['embedding_auc']:.3f}")
    return reasons


def evaluation_rows(table: pd.DataFrame, lead: Callable[[pd.Series], list[str]]) -> list[str]:
    """Markdown rows of an evaluation table: ``lead(row)``'s cells, then evaluation, n, AUC, embedding AUC,
    delta and its 95% CI (empty where there is none)."""
    out = []
    for _, r in table.iterrows():
        ci = "" if pd.isna(r["delta_ci_low"]) else f"{r['delta_ci_low']:+.3f} to {r['delta_ci_high']:+.3f}"
        cells = [*lead(r), str(r["evaluation"]), str(r["n"]), f"{r['auc']:.3f}", f"{r['embedding_auc']:.3f}",
                 f"{r['delta']:+.3f}", ci]
        out.append("| " + " | ".join(cells) + " |")
    return out


def claim_folds(claims: Sequence[str], k: int, seed: int) -> list[str]:
    """``fold1`` .. ``fold{k}`` per claim: every copy of a claim (by :func:`claim_key`) in the same fold, the
    distinct claims dealt to folds in a seeded random order (so folds differ in size by at most one claim)."""
    keys = [claim_key(c) for c in claims]
    uniq = list(dict.fromkeys(keys))
    order = np.random.default_rng(seed).permutation(len(uniq))
    fold = {uniq[j]: f"fold{r % k + 1}" for r, j in enumerate(order)}
    return [fold[key] for key in keys]


def claim_key(text: str) -> str:
    """A claim for matching: lower case, letters and digits only, single spaces."""
    return " ".join(re.findall(r"[a-z0-9]+", str(text).lower()))


def dedupe_against(pairs: pd.DataFrame, eval_claims: Mapping[str, Iterable[str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training pairs whose claim matches no claim of any evaluation set (:func:`claim_key`), and a
    table of what was removed: per evaluation set and source, the training pairs that matched it
    (a pair matching two sets counts in both)."""
    keys = pairs["claim"].map(claim_key)
    drop = pd.Series(False, index=pairs.index)
    counts = []
    for name, claims in eval_claims.items():
        ev = {claim_key(c) for c in claims} - {""}
        hit = keys.isin(ev)
        for src in pairs["source"].unique():
            counts.append({"eval_set": name, "source": src, "removed": int((hit & (pairs["source"] == src)).sum())})
        drop |= hit
    return pairs[~drop].reset_index(drop=True), pd.DataFrame(counts, columns=["eval_set", "source", "removed"])
