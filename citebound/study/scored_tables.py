"""Score tables: reading, writing and joining verifier outputs with pairs."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from citebound.verifiers.base import PairScores

SCORE_COLUMNS = ["pair_id", "verifier", "score", "verdict", "best_window", "n_windows", "reason", "binary"]


def score_table(pair_ids: Sequence[str], verifier: str, ps: PairScores, binary: bool) -> pd.DataFrame:
    return pd.DataFrame({
        "pair_id": list(pair_ids), "verifier": verifier, "score": ps.score, "verdict": ps.verdict,
        "best_window": ps.best_window, "n_windows": ps.n_windows, "reason": ps.reason, "binary": binary,
    }, columns=SCORE_COLUMNS)


def load_scored(pairs_path: str | Path, score_paths: Sequence[str | Path]) -> pd.DataFrame:
    """Pairs with one ``score_<v>``/``verdict_<v>`` column pair per verifier."""
    pairs = pd.read_parquet(pairs_path)
    for p in score_paths:
        s = pd.read_parquet(p)
        v = str(s["verifier"].iloc[0]) if len(s) else Path(p).stem
        s = s.set_index("pair_id")
        pairs[f"score_{v}"] = pairs["pair_id"].map(s["score"]).astype(float)
        pairs[f"verdict_{v}"] = pairs["pair_id"].map(s["verdict"]).fillna(False).astype(bool)
    return pairs


def feature_matrix(pairs: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    return np.column_stack([pairs[f"score_{n}"].to_numpy(dtype=float) for n in names])


def read_pair_scores(pair_ids: Sequence[str], path: str | Path) -> tuple[str, PairScores]:
    """(verifier name, its outcome) from one score table, aligned to ``pair_ids`` (a pair the
    table lacks has no score: NaN, not supported, no window, reason ``missing_score``)."""
    s = pd.read_parquet(path)
    name = str(s["verifier"].iloc[0]) if len(s) else Path(path).stem
    s = s.set_index("pair_id").reindex(list(pair_ids))
    missing = s["verifier"].isna().to_numpy()
    return name, PairScores(
        s["score"].to_numpy(float), s["verdict"].fillna(False).to_numpy(bool),
        s["best_window"].fillna(-1).to_numpy(int), s["n_windows"].fillna(0).to_numpy(int),
        ["missing_score" if m else str(r) for m, r in zip(missing, s["reason"].fillna(""))])
