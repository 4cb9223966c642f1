"""Pair-level scoring used by the guard: any configured verifier, stacked ones included."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .verifiers import build_verifier, cache_for, score_pairs, verifier_hash
from .verifiers.fitted import apply_stacked


class PairScorer:
    """``scorer(claims, passages) -> (P(support), verdict)`` under the full-passage protocol.

    Stacked verifiers (``kind: fitted``) score each pair with their base
    verifiers first, then apply the fitted model, exactly as the pipeline does.
    """

    def __init__(self, cfg: Mapping[str, Any], verifiers: Mapping[str, Mapping[str, Any]],
                 windowing: Mapping[str, int], cache_dir: str | Path | None = None,
                 model_path: str | Path | None = None, progress: bool = False):
        self.cfg = dict(cfg)
        self.name = str(cfg["name"])
        self.hash = verifier_hash(cfg)
        self.windowing = dict(windowing)
        self.cache_dir = cache_dir
        self.progress = progress
        if cfg.get("kind") == "fitted":
            if not model_path or not Path(model_path).is_file():
                raise FileNotFoundError(f"verifier {self.name} needs its fitted model JSON "
                                        f"(run the pipeline to make results/models/{self.name}.json); got {model_path}")
            self.model = json.loads(Path(model_path).read_text())
            self.bases = [PairScorer(verifiers[f], verifiers, windowing, cache_dir) for f in self.model["features"]]
            self.hash = verifier_hash({**cfg, "model": self.model})
        else:
            self.model = None
            self.verifier = build_verifier(cfg, cache_dir or "results/cache")
            self.cache = cache_for(cfg, cache_dir) if cache_dir else None

    def __call__(self, claims: Sequence[str], passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.model is not None:
            feats = np.column_stack([b(claims, passages)[0] for b in self.bases]) if len(claims) else np.zeros((0, len(self.bases)))
            s = apply_stacked(self.model, feats)
            return s, s >= float(self.cfg.get("threshold", 0.5))
        ps = score_pairs(self.verifier, claims, passages, window_chars=self.windowing["window_chars"],
                         stride=self.windowing["stride"], claim_cap=self.windowing["claim_cap"],
                         cache=self.cache, progress=self.progress)
        return ps.score, ps.verdict
