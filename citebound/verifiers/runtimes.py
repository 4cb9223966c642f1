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
    disk next to the score cache) and run by ONNX Runtime, with its own dynamic int8 quantisation;
  - ``runtime: openvino`` (``quantize: none`` or ``bf16``): the same ONNX graph compiled by OpenVINO's
    CPU plugin, which fuses attention, GELU and layer norm, at float32 or bfloat16 inference
    precision. On a CPU without native bfloat16 OpenVINO runs float32, and the verifier's hash says
    so (:func:`effective_quantize`), so those scores get a cache of their own.

Both keys are part of the verifier's hash (:func:`citebound.verifiers.base.verifier_hash`), so scores
of different runtimes never share a cache; the defaults (torch, none) hash as before.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from citebound.verifiers.graph import sorted_batches  # noqa: F401 (re-exported)

log = logging.getLogger(__name__)

RUNTIMES = ("torch", "onnx", "openvino")
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


@functools.lru_cache(maxsize=1)
def openvino_bf16() -> bool:
    """Whether OpenVINO's CPU plugin runs bfloat16 natively on this machine."""
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def effective_quantize(cfg: Mapping[str, Any]) -> str:
    """The precision a verifier config really runs at: its ``quantize``, except that OpenVINO on a
    CPU without native bfloat16 runs float32 (``none``)."""
    runtime, quantize = runtime_of(cfg)
    if runtime == "openvino" and quantize == "bf16" and not openvino_bf16():
        return "none"
    return quantize


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


def _loaded(model: torch.nn.Module | Callable[[], torch.nn.Module]) -> torch.nn.Module:
    return model if isinstance(model, torch.nn.Module) else model()


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

    ``model`` is the transformers model, or (for the onnx and openvino runtimes) a function that loads
    it: then it is loaded only if its graph is not yet exported. ``pick`` selects the output (e.g.
    ``lambda o: o.last_hidden_state``); ``onnx_dir`` is where exported graphs are cached (named by
    ``key``: the model's weights, the output and the quantisation).
    """

    def __init__(self, model: torch.nn.Module | Callable[[], torch.nn.Module], pick: Callable[[Any], torch.Tensor],
                 runtime: str = "torch", quantize: str = "none", *, onnx_dir: str | Path | None = None,
                 threads: int | None = None, key: str = "model"):
        self.runtime, self.quantize, self.pick, self._model = runtime, quantize, pick, model
        self.session = None
        if runtime == "torch":
            self.module = quantize_model(_Output(_loaded(model), pick).eval(), quantize)
        else:
            if runtime == "onnx" and quantize == "bf16":
                raise ValueError("quantize: bf16 runs on the torch or openvino runtime (ONNX Runtime's CPU kernels "
                                 "are float32/int8)")
            if runtime == "openvino" and quantize == "int8":
                raise ValueError("quantize: int8 runs on the torch or onnx runtime (OpenVINO's int8 needs a "
                                 "calibrated model); openvino takes none or bf16")
            self._onnx_dir = Path(onnx_dir or Path(tempfile.gettempdir()) / "citebound-onnx")
            self._key, self._threads = key, threads

    def _open(self, feeds: Mapping[str, torch.Tensor]) -> None:
        int8 = self.runtime == "onnx" and self.quantize == "int8"
        path = self._onnx_dir / f"{self._key}-{'int8' if int8 else 'none'}.onnx"
        if not path.is_file():
            export_onnx(_Output(_loaded(self._model), self.pick).eval(), feeds, path, int8=int8)
        threads = int(self._threads or torch.get_num_threads())
        if self.runtime == "onnx":
            self.session = open_onnxruntime(path, threads)
            return
        quantize = effective_quantize({"runtime": self.runtime, "quantize": self.quantize})
        if quantize != self.quantize:
            log.warning("this CPU has no native bfloat16: OpenVINO runs float32 (scores cached as quantize: none)")
        self.session = open_openvino(path, threads, bf16=quantize == "bf16")

    @torch.inference_mode()
    def __call__(self, feeds: Mapping[str, torch.Tensor]) -> torch.Tensor:
        feeds = {k: v for k, v in feeds.items() if k in INPUT_NAMES}
        if self.runtime == "torch":
            return self.module(**feeds)
        if self.session is None:
            self._open(feeds)
        return torch.from_numpy(self.session({k: v.cpu().numpy().astype(np.int64) for k, v in feeds.items()}))


Session = Callable[[Mapping[str, np.ndarray]], np.ndarray]


def open_onnxruntime(path: Path, threads: int) -> Session:
    """``run(feeds) -> output`` of an ONNX graph in ONNX Runtime (float32 or int8, as the graph is)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda feeds: session.run(None, {k: feeds[k] for k in names})[0]


def open_openvino(path: Path, threads: int, bf16: bool = False) -> Session:
    """``run(feeds) -> output`` of an ONNX graph compiled by OpenVINO's CPU plugin, at bfloat16 or float32
    inference precision (bf16 only where the CPU has it natively: see :func:`effective_quantize`)."""
    import openvino as ov

    precision = "bf16" if bf16 else "f32"
    # no CPU pinning: OpenVINO would pin every process's threads to the same first cores, so two
    # one-thread score jobs side by side would share one core and leave the other idle
    model = ov.Core().compile_model(str(path), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY",
        "ENABLE_CPU_PINNING": False})
    request = model.create_infer_request()
    names = [i.get_any_name() for i in model.inputs]
    return lambda feeds: np.array(request.infer({k: feeds[k] for k in names})[0], copy=True)


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


def files_key(path: str | Path, extra: str = "") -> str:
    """A short key of a local model folder's contents (its config, tokenizer and weight files) plus
    ``extra``: names an exported graph without loading the model."""
    h = hashlib.sha256(extra.encode())
    for f in sorted(Path(path).iterdir()):
        if f.is_file() and f.suffix in (".json", ".safetensors", ".bin", ".txt", ".model"):
            h.update(f.name.encode())
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]
