"""The trained verifier's design: a small regularised head on frozen MiniLM features.

Per (claim, window) unit, on the scoring protocol (claims capped at 600 characters, passages in
600-character windows at stride 300):

- ``cos_l2``, ``cos_l4``, ``cos_l6``: cosine of the mean-pooled claim and window at layers 2, 4 and 6
  of the shipped all-MiniLM-L6-v2 (layer 6 is what the embedding verifier scores);
- ``maxsim``: token alignment, the mean over the claim's tokens of the best cosine to a window token
  (last layer);
- ``term_recall``: the lexical verifier's share of claim content terms found in the window;
- ``numbers``: share of the claim's numbers found in the window (1 when it has none);
- ``negation``: 1 when exactly one of claim and window carries a negation cue (version 2, a head trained now:
  contractions such as "doesn't" included; see :data:`~citebound.verifiers.trained.NEGATION_CUES`).

A labelled pair trains the head through its window with the highest ``cos_l6`` (the window the
embedding verifier scores it by); at scoring, as for every verifier, the head scores each window and
the pair takes the maximum. The head is an L2-regularised logistic regression (balanced classes) on
standardised features.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from citebound.verifiers.base import make_windows
from citebound.verifiers.trained import (  # noqa: F401 (re-exported: the guard's trained verifier reads the same)
    FEATURES,
    LAYERS,
    NEGATION_VERSION,
    FrozenEncoder,
    apply_head,
    negation_mismatch,
    number_share,
)


class FrozenFeatures(FrozenEncoder):
    """The trained verifier's feature extractor (the same code scores with it), plus a labelled pair's
    units on the scoring protocol."""

    def __init__(self, model_path: str, batch_size: int = 32, max_length: int = 256, threads: int | None = None,
                 runtime: dict[str, Any] | None = None):
        """``runtime``: the encoder's runtime keys (default: the exact torch path, which the study trains
        on; ``{"runtime": "onnx", "graph": "shipped"}`` is the graph the guard's trained verifier scores with)."""
        super().__init__(model_path, {"batch_size": batch_size, "max_length": max_length, "threads": threads,
                                      **(runtime or {})})

    def pair_units(self, claims: Sequence[str], passages: Sequence[str], window_chars: int = 600, stride: int = 300,
                   claim_cap: int = 600, progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Every (claim, window) unit of the pairs on the scoring protocol: (unit features, owning pair index)."""
        cs, ws, owner = [], [], []
        for i, (c, p) in enumerate(zip(claims, passages)):
            for w in make_windows(p, window_chars, stride) or [""]:
                cs.append(c[:claim_cap])
                ws.append(w)
                owner.append(i)
        return self.unit_features(cs, ws, progress=progress), np.asarray(owner, int)


def best_window(units: np.ndarray, owner: np.ndarray, n_pairs: int) -> np.ndarray:
    """(n_pairs, len(FEATURES)): each pair's unit with the highest layer-6 cosine (the window the
    embedding verifier scores a pair by; a pair's training instance)."""
    cos = units[:, FEATURES.index("cos_l6")]
    out = np.zeros((n_pairs, units.shape[1]))
    best = np.full(n_pairs, -np.inf)
    for u, (i, c) in enumerate(zip(owner, cos)):
        if c > best[i]:
            best[i], out[i] = c, units[u]
    return out


def pair_scores(model: dict[str, Any], units: np.ndarray, owner: np.ndarray, n_pairs: int) -> np.ndarray:
    """P(support) per pair: the head on every window, max over the pair's windows (the scoring protocol
    every verifier follows)."""
    p = apply_head(model, units)
    out = np.full(n_pairs, -np.inf)
    np.maximum.at(out, owner, p)
    return out


def fit_head(x: np.ndarray, y: np.ndarray, c: float = 1.0, features: Sequence[str] = FEATURES,
             negation_version: int = NEGATION_VERSION) -> dict[str, Any]:
    """Standardise, then an L2 logistic regression with balanced classes; a JSON-serialisable model whose
    columns are ``features`` (the trained head's, or the contradiction check's), recording the negation cue
    ``x`` was computed with (:data:`~citebound.verifiers.trained.NEGATION_CUES`)."""
    from sklearn.linear_model import LogisticRegression

    mu, sd = x.mean(0), x.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    lr = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit((x - mu) / sd, y.astype(int))
    return {"features": list(features), "mean": mu.tolist(), "scale": sd.tolist(), "coef": lr.coef_[0].tolist(),
            "intercept": float(lr.intercept_[0]), "C": c, "n_train": len(y), "n_train_supported": int(y.sum()),
            "negation_version": int(negation_version)}
