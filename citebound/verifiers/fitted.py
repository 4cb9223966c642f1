"""Stacked verifier: logistic regression over base verifiers' pair scores.

Fitted on a training split of gold only; see ``citebound/definitions/verifier/fitted.yaml``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def fit_stacked(features: np.ndarray, labels: np.ndarray, names: Sequence[str], C: float = 1.0) -> dict[str, Any]:
    """Fit and return a JSON-serialisable model."""
    from sklearn.linear_model import LogisticRegression  # here: the score jobs only apply the model

    ok = np.all(np.isfinite(features), axis=1) & np.isfinite(labels)
    if ok.sum() < 10 or len(np.unique(labels[ok])) < 2:
        raise ValueError(f"need >= 10 labelled pairs of both classes to fit, got {int(ok.sum())}")
    lr = LogisticRegression(C=C, max_iter=1000, class_weight="balanced").fit(features[ok], labels[ok].astype(int))
    return {"features": list(names), "coef": lr.coef_[0].tolist(), "intercept": float(lr.intercept_[0]),
            "n_train": int(ok.sum()), "n_train_supported": int(labels[ok].sum())}


def apply_stacked(model: Mapping[str, Any], features: np.ndarray) -> np.ndarray:
    """P(support) = sigmoid(coef . x + intercept); NaN where any feature is NaN."""
    z = features @ np.asarray(model["coef"], dtype=float) + float(model["intercept"])
    return 1.0 / (1.0 + np.exp(-z))


def stacked_verdicts(model: Mapping[str, Any], features: np.ndarray,
                     cfg: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(P(support), verdict = score >= the config's threshold): the one way a stacked verifier
    judges, in the pipeline's score_stacked rule and in the guard alike."""
    score = apply_stacked(model, features)
    return score, score >= float(cfg["threshold"])
