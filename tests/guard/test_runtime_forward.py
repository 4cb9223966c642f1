"""What a runtime feeds its model (citebound/verifiers/runtimes.py's Forward), against the model itself called by
transformers: a pair's token types reach the model (a BERT-style pair reads its two segments apart by them), extra
keys an encoding may carry are left out, an exported ONNX graph takes any batch size and sequence length after the
one it was exported with, and one core means one thread."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from citebound.verifiers import runtimes as R


@pytest.fixture(scope="module")
def bert():
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=12, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64, type_vocab_size=2, initializer_range=0.5, num_labels=3)
    return BertForSequenceClassification(cfg).eval()


def pair(ids: list[list[int]], second_from: list[int]) -> dict[str, torch.Tensor]:
    """Encodings of equal-length rows: segment B (type 1) from position second_from[r] on."""
    n = len(ids[0])
    types = [[0] * k + [1] * (n - k) for k in second_from]
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.ones(len(ids), n, dtype=torch.long),
            "token_type_ids": torch.tensor(types)}


ENC = pair([[1, 5, 6, 2, 7, 8, 2], [1, 9, 2, 10, 11, 3, 2]], [4, 3])


def direct(model, enc) -> np.ndarray:
    with torch.no_grad():
        return model(**enc).logits.numpy()


def test_a_pairs_token_types_reach_the_model(bert):
    want = direct(bert, ENC)
    no_types = direct(bert, {k: v for k, v in ENC.items() if k != "token_type_ids"})
    assert np.abs(want - no_types).max() > 1e-3  # the types change what this model computes
    got = R.Forward(bert, lambda o: o.logits, "torch")(ENC).numpy()
    assert got == pytest.approx(want, abs=1e-6)


def test_extra_keys_of_an_encoding_are_left_out(bert):
    extra = dict(ENC, special_tokens_mask=torch.zeros_like(ENC["input_ids"]), length=torch.tensor([7, 7]))
    got = R.Forward(bert, lambda o: o.logits, "torch")(extra).numpy()
    assert got == pytest.approx(direct(bert, ENC), abs=1e-6)


def test_an_exported_graph_takes_other_batch_sizes_and_lengths(bert, tmp_path):
    fwd = R.Forward(bert, lambda o: o.logits, "onnx", onnx_dir=tmp_path, threads=1, key="bert")
    short = pair([[1, 5, 2, 7, 2]], [3])
    for enc in (ENC, short, pair([[1, 5, 6, 9, 9, 9, 9, 2, 7, 8, 2]] * 3, [8, 8, 8])):
        extra = dict(enc, special_tokens_mask=torch.zeros_like(enc["input_ids"]))
        assert fwd(extra).numpy() == pytest.approx(direct(bert, enc), abs=1e-4)
    assert len(list(tmp_path.glob("*.onnx"))) == 1  # exported once, run three times


def test_one_core_means_one_thread():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        R.set_threads(1)
        assert torch.get_num_threads() == 1
        R.set_threads(None)  # nothing asked: left as it is
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_int8_on_onnx_runs_a_quantised_graph(bert, tmp_path):
    import onnx

    fwd = R.Forward(bert, lambda o: o.logits, "onnx", "int8", onnx_dir=tmp_path, threads=1, key="bert")
    got = fwd(ENC).numpy()
    [path] = tmp_path.glob("*.onnx")
    assert path.name == "bert-int8.onnx"
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert ops & {"MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul", "QLinearMatMul"}, ops
    assert got == pytest.approx(direct(bert, ENC), abs=0.25)  # close to float32, as int8 is


def test_the_weights_key_sees_names_and_shapes_not_only_values():
    values = torch.arange(6, dtype=torch.float32)

    def module(**params):
        return torch.nn.ParameterDict({k: torch.nn.Parameter(v) for k, v in params.items()})

    base = R.weights_key(module(w=values.reshape(2, 3)))
    assert R.weights_key(module(w=values.reshape(2, 3))) == base  # the same weights: the same key
    assert R.weights_key(module(w=values.reshape(3, 2))) != base  # the same values, another shape
    assert R.weights_key(module(v=values.reshape(2, 3))) != base  # the same values, another name


def test_a_model_folders_key_sees_its_file_names(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for folder, name in ((a, "vocab.txt"), (b, "merges.txt")):
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        (folder / name).write_text("x y\n")
    assert R.files_key(a) != R.files_key(b)
    assert R.files_key(a) == R.files_key(a)
