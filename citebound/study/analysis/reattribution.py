"""Analysis 7: re-attribution, recall@k of the human-labelled passage per ranker."""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from citebound.calibration import stats as st
from citebound.study.analysis._common import seeded_rng
from citebound.verifiers.lexical import token_jaccard


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
    hits = {name: rank_hits(df, col, ks, seeded_rng(seed)) for name, col in rankers.items()}
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
