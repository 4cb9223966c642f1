"""Stable hashes of config slices: :func:`config_hash` and :func:`verifier_hash`.

A verifier's hash keys its score cache and is stamped on every calibration, so the guard can
refuse a calibration made with another verifier. It covers the keys that change scores and
leaves out those that only change how fast they come (threads, batch size, device).

>>> config_hash({"b": 1, "a": [1, 2]}) == config_hash({"a": [1, 2], "b": 1})
True
>>> verifier_hash({"name": "x", "kind": "lexical", "threads": 4}) == verifier_hash({"name": "x", "kind": "lexical"})
True
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Config keys that do not change a verifier's outputs (excluded from its hash).
RUNTIME_KEYS = frozenset({
    "resources", "batch_size", "device", "max_concurrency", "max_retries",
    "backoff_seconds", "timeout_seconds", "api_key_env", "base_url",
    # a verdict threshold never changes a cached score: verdicts are re-derived from scores
    "threshold",
    "threads",
    # how many embeddings a verifier keeps in memory for reuse
    "memo_texts",
    # where a served verifier is and how it is called: its identity (the served model) is hashed instead
    "url", "api_key_file", "max_response_bytes", "identity_check_seconds",
})
# Keys that change scores but whose default is the exact path: left out of the hash at their
# default, so the float32 PyTorch path keeps the hash (and the caches) it always had, and any
# other runtime or quantisation gets caches of its own.
EXACT_DEFAULTS = {"runtime": "torch", "quantize": "none"}


def canonical_json(node: Any) -> str:
    """JSON with sorted keys: the text a hash is taken of (and what rules get as params)."""
    return json.dumps(node, sort_keys=True)


def config_hash(node: Any) -> str:
    """Short stable hash of a plain config slice (keys sorted), or of a string."""
    text = node if isinstance(node, str) else canonical_json(node)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def verifier_hash(cfg: Mapping[str, Any]) -> str:
    """Hash of the output-relevant part of a verifier config (with the precision it really runs at:
    OpenVINO's bf16 is float32 on a CPU without native bfloat16; a trained verifier's head by its
    contents, wherever it lies)."""
    if cfg.get("runtime") == "openvino" and cfg.get("quantize") == "bf16":  # only then: runtimes imports torch
        from citebound.verifiers.runtimes import effective_quantize

        cfg = {**cfg, "quantize": effective_quantize(cfg)}
    from citebound.models import GRAPHS, SHIPPED, uses_shipped_graph

    if uses_shipped_graph(cfg):  # the wheel's graph by its bytes (the file is checked against this pin at load)
        cfg = {**cfg, "graph": f"minilm-{SHIPPED}-{(GRAPHS[SHIPPED] or 'unpinned')[:16]}"}
    elif "graph" in cfg:  # no graph, or one another runtime does not read: scores as without the key
        cfg = {k: v for k, v in cfg.items() if k != "graph"}
    if cfg.get("kind") == "trained" and cfg.get("model"):  # the head's own bytes, not just where it lies
        cfg = {**cfg, "model": model_digest(cfg["model"])}
    if cfg.get("kind") == "contradiction":  # the check's head by its bytes (pinned when shipped)
        from citebound.models import contradiction_head

        cfg = {**cfg, "head": contradiction_head(cfg.get("head", "shipped"))[1][:16]}
    return config_hash({k: v for k, v in cfg.items()
                        if k not in RUNTIME_KEYS and not (k in EXACT_DEFAULTS and v == EXACT_DEFAULTS[k])})


HEAD_FILE = "head.json"
DESIGN_FILE = "citebound.json"  # a fine-tuned network's design and threshold, next to its HF weights


def head_path(model: str | Path) -> Path:
    """``head.json`` of a trained verifier's model: the folder's, or the file itself."""
    p = Path(model)
    return p / HEAD_FILE if p.is_dir() else p


@functools.lru_cache(maxsize=32)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def model_digest(model: str | Path) -> str:
    """sha256 (16 hex) of a trained verifier's ``head.json``, or of a fine-tuned network's
    ``citebound.json``, config and weights; ``missing`` when there is none yet (a pipeline's score jobs
    run after its training job, and hash the model then)."""
    p = Path(model)
    if p.is_dir() and (p / DESIGN_FILE).is_file():
        files = [f for f in sorted(p.iterdir()) if f.name == DESIGN_FILE or f.name == "config.json"
                 or f.suffix in (".safetensors", ".bin")]
    else:
        files = [head_path(model)]
    if not all(f.is_file() for f in files):
        return "missing"
    parts = [_file_digest(str(f.resolve()), f.stat().st_mtime_ns, f.stat().st_size) for f in files]
    return parts[0] if len(parts) == 1 else hashlib.sha256("".join(parts).encode()).hexdigest()[:16]
