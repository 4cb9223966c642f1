"""The graph build's own steps (citebound/models/build.py) on inputs whose result is known: the skeleton written
from the shipped graph is the pinned one, a map naming a weight the skeleton lacks is refused, ``--export`` takes
the torch route, the quantisers pick the nodes their names say, float16 storage starts at exactly ``min_elements``
and never touches integers, and ``graph.json`` (the mark of a complete graph) is put in place last."""
import json
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from citebound.models import SKELETON_SHA, file_sha256
from citebound.models import build as b


def test_the_skeleton_written_from_the_shipped_graph_is_the_pinned_one(tmp_path, graph):
    """36 of the 38 large weights are stored transposed (MatMul's layout): every one must be found, and emptied."""
    model, _, _ = graph
    out = tmp_path / "s.onnx"
    assert b.write_skeleton(model, b._weights_dir(), out) == SKELETON_SHA
    assert json.loads(out.with_suffix(".json").read_text()) == json.loads(b.SKELETON.with_suffix(".json").read_text())
    assert out.stat().st_size < 1_000_000


def test_a_skeleton_map_naming_a_weight_the_graph_lacks_is_refused(tmp_path, monkeypatch):
    sk = tmp_path / "minilm.skeleton.onnx"
    shutil.copy(b.SKELETON, sk)
    mapping = json.loads(b.SKELETON.with_suffix(".json").read_text())
    mapping["no_such_initializer__fp16"] = next(iter(mapping.values()))
    sk.with_suffix(".json").write_text(json.dumps(mapping))
    monkeypatch.setattr(b, "SKELETON", sk)
    with pytest.raises(b.BuildError, match="1 of its weights have no initializer"):
        b.assemble(b._weights_dir(), tmp_path / "g.onnx")


def test_export_takes_the_torch_route_for_the_shipped_precision(tmp_path, monkeypatch):
    class Exported(Exception):
        pass

    def export(weights, path):
        raise Exported(path.name)

    monkeypatch.setattr(b, "export_fp32", export)
    with pytest.raises(Exported, match="fp32.onnx"):
        b.build("fp16w", tmp_path / "g", export=True)


def _named_graph(path):
    """Six layers of MiniLM's MatMul names (query, attention output, intermediate, output) and the word-embedding
    Gather, as the exporter names them: int8 quantises all 24 MatMuls, int8-ffn the 12 feed-forward ones."""
    nodes, names = [], []
    for layer in range(6):
        for part in ("attention/self/query", "attention/output/dense", "intermediate/dense", "output/dense"):
            names.append(f"/encoder/layer.{layer}/{part}/MatMul")
    x = "x"
    for i, n in enumerate(names):
        nodes.append(helper.make_node("MatMul", [x, "w"], [f"h{i}"], name=n))
        x = f"h{i}"
    nodes.insert(0, helper.make_node("Gather", ["emb", "ids"], ["x"], name="/embeddings/word_embeddings/Gather"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 2])],
                          [numpy_helper.from_array(np.ones((2, 2), np.float32), "w"),
                           numpy_helper.from_array(np.ones((3, 2), np.float32), "emb")])
    onnx.save(helper.make_model(g), str(path))
    return names


def test_the_quantisers_pick_the_nodes_their_names_say(tmp_path):
    names = _named_graph(tmp_path / "g.onnx")
    gather = "/embeddings/word_embeddings/Gather"
    assert b.quantised_nodes(tmp_path / "g.onnx", "int8") == names + [gather]
    ffn = [n for n in names if "/intermediate/" in n or n.endswith("/output/dense/MatMul") and "/attention/" not in n]
    assert len(ffn) == 12 and b.quantised_nodes(tmp_path / "g.onnx", "int8-ffn") == ffn + [gather]


def test_float16_storage_starts_at_exactly_min_elements_and_leaves_integers(tmp_path):
    arrays = {"f4095": np.linspace(0, 1, 4095, dtype=np.float32) + 1e-4, "f4096": np.linspace(0, 1, 4096, dtype=np.float32) + 1e-4,
              "i5000": np.arange(5000, dtype=np.int64) * 70_001}
    nodes = [helper.make_node("Identity", [k], [f"out_{k}"]) for k in arrays]
    outs = [helper.make_tensor_value_info(f"out_{k}", TensorProto.INT64 if k[0] == "i" else TensorProto.FLOAT, [len(v)])
            for k, v in arrays.items()]
    g = helper.make_graph(nodes, "g", [], outs, [numpy_helper.from_array(v, k) for k, v in arrays.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "src.onnx"))
    b.store_fp16(tmp_path / "src.onnx", tmp_path / "dst.onnx", min_elements=4096)
    stored = {i.name: i.data_type for i in onnx.load(str(tmp_path / "dst.onnx")).graph.initializer}
    assert stored == {"f4095": TensorProto.FLOAT, "f4096__fp16": TensorProto.FLOAT16, "i5000": TensorProto.INT64}
    got = dict(zip(["out_f4095", "out_f4096", "out_i5000"],
                   ort.InferenceSession(str(tmp_path / "dst.onnx"), providers=["CPUExecutionProvider"]).run(None, {})))
    assert np.array_equal(got["out_f4095"], arrays["f4095"])
    assert np.array_equal(got["out_f4096"], arrays["f4096"].astype(np.float16).astype(np.float32))
    assert not np.array_equal(got["out_f4096"], arrays["f4096"])  # rounded: it went through float16
    assert np.array_equal(got["out_i5000"], arrays["i5000"])


def test_graph_json_is_put_in_place_after_every_other_file(tmp_path, monkeypatch):
    order = []
    real = os.replace

    def recording(src, dst):
        order.append(os.path.basename(dst))
        real(src, dst)

    monkeypatch.setattr(os, "replace", recording)
    digest = b.build(out=tmp_path / "g")
    assert sorted(order) == ["LICENSE", "graph.json", "model.onnx", "tokenizer.json"] and order[-1] == "graph.json"
    assert file_sha256(tmp_path / "g" / "model.onnx") == digest
