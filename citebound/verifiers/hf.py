"""Shared ``transformers`` plumbing of the model verifiers: device and dtype choice, loading a
checkpoint, the configured runtime around an encoder, batched classification, and reading string
constants from a checkpoint's or repository's Python source without running it.
"""
from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoTokenizer

from citebound.scoring import deadline
from citebound.verifiers.runtimes import Forward, encode_sorted, runtime_of, set_threads, weights_key

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def pick_device(requested: str) -> torch.device:
    """The configured device, falling back to CPU (with float32) when CUDA is absent."""
    if requested.startswith("cuda") and not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device(requested)


def pick_dtype(name: str | None, device: torch.device) -> torch.dtype:
    if device.type == "cpu":
        return torch.float32
    return _DTYPES[name or "float32"]


def load_pretrained(auto_cls: Any, cfg: Mapping[str, Any], model_path: str | None = None):
    """(tokenizer, eval-mode model, device) for a config's model id/dir, revision, device and dtype."""
    device = pick_device(str(cfg.get("device", "cpu")))
    path, rev = model_path or cfg["model"], cfg.get("revision") or None
    tokenizer = AutoTokenizer.from_pretrained(path, revision=rev)
    model = auto_cls.from_pretrained(path, revision=rev, dtype=pick_dtype(cfg.get("dtype"), device))
    return tokenizer, model.to(device).eval(), device


def encoder_forward(model: torch.nn.Module, cfg: Mapping[str, Any], cache_dir: str | Path | None,
                    pick: Any, output: str) -> Forward:
    """The configured runtime (``runtime``, ``quantize``, ``threads``) around one encoder model."""
    runtime, quantize = runtime_of(cfg)
    set_threads(cfg.get("threads"))
    return Forward(model, pick, runtime, quantize, threads=cfg.get("threads"),
                   onnx_dir=Path(cache_dir) / "onnx" if cache_dir else None,
                   key=f"{cfg.get('name', 'model')}-{weights_key(model, output)}")


def classify(forward: Forward, tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, *,
             max_length: int, batch_size: int, device: torch.device, truncation: str | bool = True) -> np.ndarray:
    """(n, n_classes) softmax probabilities, from length-sorted batches, in input order."""
    out: np.ndarray | None = None
    for idx, enc in deadline.checked(encode_sorted(tokenizer, first, second, max_length=max_length,
                                                   batch_size=batch_size, truncation=truncation)):
        p = torch.softmax(forward(enc.to(device)).float(), dim=-1).cpu().numpy()
        if out is None:
            out = np.zeros((len(first), p.shape[1]))
        out[idx] = p
    return out if out is not None else np.zeros((0, 2))


def string_constants(source: str, scope: str | None = None) -> dict[str, str]:
    """Module-level (or class ``scope``) string assignments of a Python file, read with ``ast``.

    >>> string_constants('A = "x"\\nclass C:\\n    B = "y"\\n', "C")
    {'B': 'y'}
    """
    tree = ast.parse(source)
    body = tree.body
    if scope is not None:
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == scope), [])
    out = {}
    for node in body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value.value
    return out
