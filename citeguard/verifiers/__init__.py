"""Verifier panel: build any configured verifier behind one interface."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import PairScores, ScoreCache, Verifier, make_windows, score_pairs, verifier_hash, verifier_windowing, window_spans


def build_verifier(cfg: Mapping[str, Any], cache_dir: str | Path = "results/cache") -> Verifier:
    """Instantiate the verifier a config describes (``kind`` selects the class)."""
    kind = cfg.get("kind")
    if kind == "lexical":
        from .lexical import LexicalVerifier
        return LexicalVerifier(cfg)
    if kind == "embedding":
        from .embedding import EmbeddingVerifier
        return EmbeddingVerifier(cfg, cache_dir)
    if kind == "attrscore":
        from .models import AttrScoreVerifier
        return AttrScoreVerifier(cfg)
    if kind == "nli":
        from .models import NLIVerifier
        return NLIVerifier(cfg, cache_dir)
    if kind == "minicheck":
        from .checkers import MiniCheckVerifier
        return MiniCheckVerifier(cfg, cache_dir)
    if kind == "hhem":
        from .checkers import HHEMVerifier
        return HHEMVerifier(cfg, cache_dir)
    if kind == "llm":
        from .llm import LLMVerifier
        return LLMVerifier(cfg, Path(cache_dir) / "llm" / f"{cfg['name']}-{verifier_hash(cfg)}.sqlite")
    if kind == "ragas":
        from .llm import RagasVerifier
        return RagasVerifier(cfg)
    if kind == "fitted":
        raise ValueError(f"verifier {cfg.get('name')!r} is stacked: fit it with fit_stacked, apply with apply_stacked")
    raise ValueError(f"unknown verifier kind {kind!r} (lexical, embedding, attrscore, nli, minicheck, hhem, llm, ragas, fitted)")


def cache_for(cfg: Mapping[str, Any], cache_dir: str | Path) -> ScoreCache:
    return ScoreCache(Path(cache_dir) / "scores" / f"{cfg['name']}-{verifier_hash(cfg)}.sqlite")


__all__ = ["build_verifier", "cache_for", "score_pairs", "make_windows", "PairScores", "ScoreCache",
           "Verifier", "verifier_hash", "verifier_windowing", "window_spans"]
