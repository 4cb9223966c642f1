"""Score tables: reading, writing and joining verifier outputs with pairs."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .verifiers.base import PairScores

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
