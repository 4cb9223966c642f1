"""``embedding+contradiction``: the embedding verifier with the contradiction check as a veto (#47).

Per (claim, window) unit, one pass of the shipped MiniLM graph gives the embedding score ``(cos_l6 + 1) / 2``
and the frozen features the check's head reads (:mod:`citebound.training.contradiction`); the head (ONNX,
pinned) gives P(support | support or refute). A unit whose P(support) is below ``veto_below`` loses 1 from
its score: below every threshold on the embedding's 0..1 scale, so a passage the check judges contradicting
never passes, whatever its similarity. The pair takes its best window; calibrate this verifier's own
threshold (``citebound calibrate``): the guarantee is then certified for the score that is deployed.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class ContradictionVerifier:
    binary = False
    chunk_units = 2_048

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        import onnxruntime as ort

        from citebound.models import contradiction_head, uses_shipped_graph
        from citebound.verifiers.trained import SHIPPED_ENCODER, FrozenEncoder

        self.name = cfg.get("name", "embedding+contradiction")
        self.threshold = float(cfg.get("threshold", 0.75))
        self.veto_below = float(cfg.get("veto_below", 0.5))
        path, _ = contradiction_head(cfg.get("head", "shipped"))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        from citebound.scoring.modelpath import resolve_model

        model = SHIPPED_ENCODER if uses_shipped_graph(cfg) else resolve_model(SHIPPED_ENCODER, "model")
        self.encoder = FrozenEncoder(model, cfg, cache_dir, name=self.name)

    def p_support(self, features: np.ndarray) -> np.ndarray:
        if not len(features):
            return np.zeros(0)
        return self.session.run(["p_support"], {"features": features.astype(np.float32)})[0].astype(float)

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        from citebound.training.contradiction import combined, embedding_score, unit_features

        if not len(claims):
            return np.zeros(0), np.zeros(0, bool)
        x = unit_features(self.encoder, claims, windows)
        s = combined(embedding_score(x), self.p_support(x), self.veto_below)
        return s, s >= self.threshold
