"""Fast CPU inference for the transformer verifiers.

Three things make a verifier's forward passes cheaper on a CPU without changing what it computes:

* **length-sorted batches** (:func:`encode_sorted`): units are tokenised once, sorted by token
  count and padded per batch, so a short window no longer pays for the longest one's padding;
  outputs go back to the caller's order;
* **the rule's thread count** (:func:`set_threads`): ``torch`` and ONNX Runtime use exactly the
  cores Snakemake gave the job;
* **a runtime** (:class:`Forward`), chosen per verifier config:

  - ``runtime: torch``, ``quantize: none``: PyTorch eager, float32 -- the exact path, and what the
    paper experiment uses;
  - ``runtime: torch``, ``quantize: int8``: dynamic int8 quantisation of every ``nn.Linear``
    (weights int8, activations quantised per batch);
  - ``runtime: torch``, ``quantize: bf16``: the weights and activations in bfloat16 (CPUs with
    AVX512-BF16 or AMX run it natively);
  - ``runtime: onnx`` (``quantize: none`` or ``int8``): the module exported once to ONNX (cached on
    disk next to the score cache) and run by ONNX Runtime, with its own dynamic int8 quantisation.

Both keys are part of the verifier's hash (:func:`citeguard.verifiers.base.verifier_hash`), so scores
of different runtimes never share a cache; the defaults (torch, none) hash as before.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

log = logging.getLogger(__name__)

RUNTIMES = ("torch", "onnx")
QUANTIZE = ("none", "int8", "bf16")
DEFAULTS = {"runtime": "torch", "quantize": "none"}
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def runtime_of(cfg: Mapping[str, Any]) -> tuple[str, str]:
    """(runtime, quantize) of a verifier config, checked."""
    runtime, quantize = str(cfg.get("runtime", "torch")), str(cfg.get("quantize", "none"))
    if runtime not in RUNTIMES:
        raise ValueError(f"verifier {cfg.get('name')!r}: runtime {runtime!r} is not one of {list(RUNTIMES)}")
    if quantize not in QUANTIZE:
        raise ValueError(f"verifier {cfg.get('name')!r}: quantize {quantize!r} is not one of {list(QUANTIZE)}")
    return runtime, quantize


def quantize_model(model: torch.nn.Module, quantize: str) -> torch.nn.Module:
    """The model for the torch runtime: as it is (none), with dynamically quantised int8 linear
    layers (int8), or in bfloat16 (bf16)."""
    if quantize == "int8":
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    if quantize == "bf16":
        return model.to(torch.bfloat16)
    return model


def set_threads(n: int | None) -> None:
    """Use ``n`` intra-op threads in torch (ONNX sessions take theirs from :class:`Forward`)."""
    if n:
        torch.set_num_threads(int(n))


def sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Indices in batches of ``batch_size``, longest first (stable for equal lengths).

    >>> [b.tolist() for b in sorted_batches([3, 9, 1, 9, 5], 2)]
    [[1, 3], [4, 0], [2]]
    """
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def encode_sorted(tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, *, max_length: int,
                  batch_size: int, truncation: str | bool = True) -> list[tuple[np.ndarray, dict[str, torch.Tensor]]]:
    """Tokenise every text (pair) once, then pad per length-sorted batch:
    a list of (indices into the inputs, padded encodings)."""
    if not len(first):
        return []
    enc = tokenizer(list(first), list(second) if second is not None else None, truncation=truncation,
                    max_length=max_length, padding=False)
    keys = [k for k in INPUT_NAMES if k in enc]
    out = []
    for idx in sorted_batches([len(x) for x in enc["input_ids"]], batch_size):
        feats = [{k: enc[k][i] for k in keys} for i in idx]
        out.append((idx, tokenizer.pad(feats, padding=True, return_tensors="pt")))
    return out


class _Output(torch.nn.Module):
    """One tensor out of a transformers model (what the verifier reads), for export and quantisation."""

    def __init__(self, model: torch.nn.Module, pick: Callable[[Any], torch.Tensor]):
        super().__init__()
        self.model, self.pick = model, pick

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        return self.pick(self.model(input_ids=input_ids, attention_mask=attention_mask, **kw))


class Forward:
    """``forward(encodings) -> tensor`` of one model output, in the configured runtime.

    ``pick`` selects the output (e.g. ``lambda o: o.last_hidden_state``); ``onnx_dir`` is where
    exported graphs are cached (keyed by the model's weights, the output and the quantisation).
    """

    def __init__(self, model: torch.nn.Module, pick: Callable[[Any], torch.Tensor], runtime: str = "torch",
                 quantize: str = "none", *, onnx_dir: str | Path | None = None, threads: int | None = None,
                 key: str = "model"):
        self.runtime, self.quantize = runtime, quantize
        self.module = _Output(model, pick).eval()
        if runtime == "torch":
            self.module = quantize_model(self.module, quantize)
            self.session = None
        else:
            if quantize == "bf16":
                raise ValueError("quantize: bf16 runs on the torch runtime (ONNX Runtime's CPU kernels are float32/int8)")
            self.session = None
            self._onnx_dir = Path(onnx_dir or Path(tempfile.gettempdir()) / "citeguard-onnx")
            self._key, self._threads = key, threads

    def _open(self, feeds: Mapping[str, torch.Tensor]) -> None:
        import onnxruntime as ort

        path = self._onnx_dir / f"{self._key}-{self.quantize}.onnx"
        if not path.is_file():
            export_onnx(self.module, feeds, path, int8=self.quantize == "int8")
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(self._threads or torch.get_num_threads())
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self._names = [i.name for i in self.session.get_inputs()]

    @torch.inference_mode()
    def __call__(self, feeds: Mapping[str, torch.Tensor]) -> torch.Tensor:
        feeds = {k: v for k, v in feeds.items() if k in INPUT_NAMES}
        if self.runtime == "torch":
            return self.module(**feeds)
        if self.session is None:
            self._open(feeds)
        out = self.session.run(None, {k: feeds[k].cpu().numpy().astype(np.int64) for k in self._names})[0]
        return torch.from_numpy(out)


def export_onnx(module: torch.nn.Module, feeds: Mapping[str, torch.Tensor], path: Path, int8: bool) -> None:
    """Export ``module`` with dynamic batch and sequence axes (and quantise it dynamically to int8);
    written to a temporary name and renamed, so parallel jobs never read half a file."""
    import onnx

    path.parent.mkdir(parents=True, exist_ok=True)
    names = [k for k in INPUT_NAMES if k in feeds]
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        fp32 = Path(tmp) / "model.onnx"
        torch.onnx.export(module, tuple(feeds[k] for k in names), str(fp32), input_names=names,
                          output_names=["output"], dynamic_axes={**{k: {0: "batch", 1: "seq"} for k in names},
                                                                 "output": {0: "batch"}},
                          opset_version=17, dynamo=False)
        onnx.checker.check_model(str(fp32))
        final = fp32
        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            final = Path(tmp) / "model.int8.onnx"
            quantize_dynamic(str(fp32), str(final), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(final, path)
    log.info("exported %s (%s)", path, "int8" if int8 else "fp32")


def weights_key(model: torch.nn.Module, extra: str = "") -> str:
    """A short key of a model's weights (names, shapes and a sample of values) plus ``extra``."""
    h = hashlib.sha256(extra.encode())
    for name, p in model.state_dict().items():
        flat = p.detach().reshape(-1)
        h.update(f"{name}{tuple(p.shape)}".encode())
        h.update(flat[:: max(1, flat.numel() // 64)][:64].float().numpy().tobytes())
    return h.hexdigest()[:16]
