"""Verifier panel: build any configured verifier behind one interface."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from citebound.verifiers.base import (
    PairScores,
    ScoreCache,
    Verifier,
    make_windows,
    score_pairs,
    verifier_hash,
    verifier_windowing,
    window_spans,
)

# what each verifier kind's score is: P(support) only where it is one
BLIND = ("; it measures topic, not support: a passage that contradicts the claim ('did not reduce') scores like "
         "one that supports it")
SCALES = {"lexical": "share of the claim's content terms found in the passage window (not a probability)" + BLIND,
          "embedding": "(cosine + 1) / 2 of MiniLM embeddings (not a probability: unrelated text scores 0.5-0.6)"
                       + BLIND,
          "trained": "P(support) from the trained head", "fitted": "P(support) from the stacked model",
          "nli": "P(entailment)", "attrscore": "P(attributable)", "hhem": "P(consistent)", "minicheck": "P(support)",
          "llm": "the judge's verdict as 0/1 or its probability", "ragas": "share of the claim's statements supported",
          "remote": "the served classifier's probability of its supported class (or a cross-encoder's score)",
          "contradiction": "(cosine + 1) / 2 of MiniLM embeddings, minus 1 where a support-vs-refute head judges the "
                           "window contradicting (not a probability); the head is weak: it misses contradictions "
                           "without negation or direction cues"}

# what each kind can tell apart (citebound verifiers, the MCP tool descriptions, the README's choice table)
SEES = {"lexical": "on-topic from off-topic words; not negation or contradiction",
        "embedding": "on-topic from off-topic meaning; not negation or contradiction",
        "trained": "support vs not, as its training data taught it (see its card)",
        "fitted": "what its base verifiers see, combined",
        "nli": "entailment vs contradiction (an NLI model)", "attrscore": "attributable vs contradictory",
        "hhem": "consistent vs hallucinated", "minicheck": "supported vs unsupported, contradiction included",
        "llm": "what the judge model reads", "remote": "what the served model sees (an entailment checker: "
                                                      "contradiction included)", "ragas": "what the judge model reads",
        "contradiction": "on-topic from off-topic, and some contradictions (negation and direction cues)"}

# verifier kinds that run a transformers model in-process (and so take runtime/quantize/threads)
MODEL_KINDS = frozenset({"embedding", "nli", "attrscore", "minicheck", "hhem", "trained", "contradiction"})


def runs_encoder(v: Mapping[str, Any]) -> bool:
    """Whether a model verifier's config runs an encoder, which any runtime can run (torch, onnx,
    openvino); the seq2seq ones (AttrScore, MiniCheck-Flan-T5) run on torch only."""
    return v.get("kind") in ("embedding", "nli", "hhem", "trained") or (v.get("kind") == "minicheck"
                                                            and v.get("variant") == "encoder")


def build_verifier(cfg: Mapping[str, Any], cache_dir: str | Path = "results/cache") -> Verifier:
    """Instantiate the verifier a config describes (``kind`` selects the class)."""
    kind = cfg.get("kind")
    if kind == "lexical":
        from citebound.verifiers.lexical import LexicalVerifier
        return LexicalVerifier(cfg)
    if kind == "embedding":
        from citebound.verifiers.embedding import EmbeddingVerifier
        return EmbeddingVerifier(cfg, cache_dir)
    if kind == "attrscore":
        from citebound.verifiers.attrscore import AttrScoreVerifier
        return AttrScoreVerifier(cfg)
    if kind == "nli":
        from citebound.verifiers.nli import NLIVerifier
        return NLIVerifier(cfg, cache_dir)
    if kind == "minicheck":
        from citebound.verifiers.minicheck import MiniCheckVerifier
        return MiniCheckVerifier(cfg, cache_dir)
    if kind == "hhem":
        from citebound.verifiers.hhem import HHEMVerifier
        return HHEMVerifier(cfg, cache_dir)
    if kind == "trained":
        from citebound.verifiers.trained import TrainedVerifier
        return TrainedVerifier(cfg, cache_dir)
    if kind == "contradiction":
        from citebound.verifiers.contradiction import ContradictionVerifier
        return ContradictionVerifier(cfg, cache_dir)
    if kind == "llm":
        from citebound.verifiers.llm_judge import LLMVerifier
        return LLMVerifier(cfg, Path(cache_dir) / "llm" / f"{cfg['name']}-{verifier_hash(cfg)}.sqlite")
    if kind == "ragas":
        from citebound.verifiers.ragas_faithfulness import RagasVerifier
        return RagasVerifier(cfg)
    if kind == "remote":
        from citebound.verifiers.remote import RemoteVerifier
        return RemoteVerifier(cfg)
    if kind == "fitted":
        raise ValueError(f"verifier {cfg.get('name')!r} is stacked: fit it with fit_stacked, apply with apply_stacked")
    raise ValueError(f"unknown verifier kind {kind!r} (lexical, embedding, trained, attrscore, nli, minicheck, hhem, "
                     "llm, ragas, remote, fitted)")


def cache_for(cfg: Mapping[str, Any], cache_dir: str | Path) -> ScoreCache:
    return ScoreCache(Path(cache_dir) / "scores" / f"{cfg['name']}-{verifier_hash(cfg)}.sqlite")


__all__ = ["SCALES", "SEES", "BLIND",
           "MODEL_KINDS", "runs_encoder", "build_verifier", "cache_for", "score_pairs", "make_windows", "PairScores", "ScoreCache",
           "Verifier", "verifier_hash", "verifier_windowing", "window_spans"]
