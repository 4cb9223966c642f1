"""Pair-level scoring used by the guard and the CLI: any configured verifier, stacked ones included.

:func:`load_scorer` is the one way the library and the CLI turn a verifier
name (``config/verifier/<name>.yaml``) plus overrides into a scorer.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .verifiers import PairScores, build_verifier, cache_for, score_pairs, verifier_hash, verifier_windowing
from .verifiers.fitted import stacked_verdicts


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
        self.windowing = verifier_windowing(cfg, windowing)
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
        ps = self.score(claims, passages)
        return ps.score, ps.verdict

    def score(self, claims: Sequence[str], passages: Sequence[str]) -> PairScores:
        """Scores, verdicts and each pair's best window (for a stacked verifier: its first base's)."""
        if self.model is not None:
            base = [b.score(claims, passages) for b in self.bases]
            feats = np.column_stack([p.score for p in base]) if len(claims) else np.zeros((0, len(self.bases)))
            s, verdict = stacked_verdicts(self.model, feats, self.cfg)
            first = base[0]
            return PairScores(s, verdict, first.best_window, first.n_windows, first.reason)
        return score_pairs(self.verifier, claims, passages, window_chars=self.windowing["window_chars"],
                           stride=self.windowing["stride"], claim_cap=self.windowing["claim_cap"],
                           max_windows=self.windowing.get("max_windows"),
                           cache=self.cache, progress=self.progress)


class VerifierLoadError(ValueError):
    """A verifier that cannot be configured or loaded; the message says which and why."""


def verifier_configs(name: str, overrides: Mapping[str, Any] | None = None,
                     runtime: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any], dict[str, int]]:
    """(the verifier's config with ``overrides`` applied, every verifier config, windowing).

    ``runtime`` (``runtime``, ``quantize``, ``threads``) goes to every in-process model verifier,
    the stacked verifier's base verifiers included."""
    from .config import MODEL_KINDS, ConfigError, compose_config, to_plain

    try:
        cfg = compose_config([f"verifier_panel=[{name}]", "datasets=[]", "sources=[]"])
    except ConfigError as e:
        raise VerifierLoadError(str(e).splitlines()[0]) from None
    verifiers = to_plain(cfg.verifiers)
    for v in verifiers.values():
        if v.get("kind") in MODEL_KINDS:
            v.update({k: val for k, val in (runtime or {}).items() if val is not None})
    verifiers[name].update(overrides or {})
    return verifiers[name], verifiers, to_plain(cfg.windowing)


def load_scorer(name: str, overrides: Mapping[str, Any] | None = None, *, model_path: str | Path | None = None,
                cache_dir: str | Path | None = None, progress: bool = False,
                runtime: Mapping[str, Any] | None = None) -> PairScorer:
    """A :class:`PairScorer` for ``config/verifier/<name>.yaml`` (keys replaced by ``overrides``; the
    in-process models' ``runtime``/``quantize``/``threads`` set by ``runtime``)."""
    vcfg, allv, windowing = verifier_configs(name, overrides, runtime)
    try:
        return PairScorer(vcfg, allv, windowing, cache_dir=cache_dir, model_path=model_path, progress=progress)
    except (OSError, ValueError) as e:
        raise VerifierLoadError(f"cannot load verifier {name!r}: {str(e).splitlines()[0]}") from None
