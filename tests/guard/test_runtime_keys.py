"""The NLI verifier by hand on a tiny random DeBERTa (premise = the window, hypothesis = the claim, only the window
truncated), and what names an exported graph or a quantised model: a weight changed past a tensor's first values,
a changed weight file, the output a graph computes, the configured thread count, the length encodings are cut to,
and int8 really quantising every linear layer."""
import numpy as np
import pytest
import torch
from conftest import TEXTS, verifier_cfg
from test_model_verifiers import softmax
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from citebound.study import tiny
from citebound.verifiers import build_verifier
from citebound.verifiers import runtimes as R

# each claim or window built from the tiny vocabulary; the last window is long, and so is the last claim
CLAIMS = ["the gene increases cancer risk", "protein binds the receptor", "mitochondria produce atp",
          "lipid nanoparticles adsorb serum proteins and the gene increases cancer risk"]
WINDOWS = ["the gene increases cancer risk in cells", "protein", "mitochondria produce atp in cells",
           " ".join(TEXTS * 3)]


@pytest.fixture(scope="module")
def nli(tmp_path_factory):
    """Weights drawn wider than the default (0.02), at which its probabilities hardly depend on the input."""
    return tiny.build_tiny_deberta_nli(tmp_path_factory.mktemp("nli") / "model", TEXTS + CLAIMS + WINDOWS,
                                       initializer_range=0.3)


@pytest.mark.parametrize("max_length", [512, 16])
def test_nli_by_hand_premise_is_the_window_and_only_it_is_truncated(nli, tmp_path, max_length):
    """At 16 tokens the last pair does not fit: the window (the premise) is cut, the claim kept whole."""
    cfg = verifier_cfg("deberta_nli", model=str(nli), revision=None, device="cpu", batch_size=3,
                       max_length=max_length)
    p, verdict = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
    tok = AutoTokenizer.from_pretrained(nli)
    m = AutoModelForSequenceClassification.from_pretrained(nli).eval()
    entail = m.config.label2id["entailment"]
    probs = []
    for c, w in zip(CLAIMS, WINDOWS):  # one pair at a time, no batching, no sorting
        enc = tok(w, c, truncation="only_first", max_length=max_length, return_tensors="pt")
        if max_length == 16 and c == CLAIMS[-1]:
            ids = enc["input_ids"][0].tolist()
            assert len(ids) == 16 and tok.decode(ids).count("gene increases cancer risk") == 1
        with torch.no_grad():
            probs.append(softmax(m(**enc).logits[0].numpy()))
    probs = np.array(probs)
    assert np.ptp(probs[:, entail]) > 0.05  # the scores tell the pairs apart
    assert p == pytest.approx(probs[:, entail], abs=1e-5)
    assert verdict.tolist() == (probs.argmax(1) == entail).tolist()


def test_encodings_are_cut_at_max_length_exactly(nli):
    tok = AutoTokenizer.from_pretrained(nli)
    [(idx, enc)] = R.encode_sorted(tok, [WINDOWS[-1]], [CLAIMS[0]], max_length=16, batch_size=4,
                                   truncation="only_first")
    assert idx.tolist() == [0] and enc["input_ids"].shape == (1, 16)
    [(idx, enc)] = R.encode_sorted(tok, [WINDOWS[-1]], None, max_length=9, batch_size=4)
    assert enc["input_ids"].shape == (1, 9)


def test_the_weights_key_sees_a_value_past_the_first_64_and_the_extra():
    torch.manual_seed(0)
    a = torch.nn.Linear(100, 100)
    b = torch.nn.Linear(100, 100)
    b.load_state_dict(a.state_dict())
    assert R.weights_key(a) == R.weights_key(b)
    assert R.weights_key(a, "logits") != R.weights_key(a, "pooled")
    with torch.no_grad():  # the key samples every (10,000 // 64 = 156)-th value of a tensor: the 11th sample
        b.weight.view(-1)[156 * 10] += 1.0
    assert R.weights_key(a) != R.weights_key(b)


@pytest.mark.parametrize("name", ["model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json"])
def test_a_model_folders_key_changes_with_each_of_its_files(tmp_path, name):
    for f in ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json"):
        (tmp_path / f).write_bytes(b"x" * 10)
    (tmp_path / "README.md").write_text("not part of the model")
    before = R.files_key(tmp_path)
    (tmp_path / "README.md").write_text("edited")
    assert R.files_key(tmp_path) == before
    (tmp_path / name).write_bytes(b"x" * 9 + b"y")
    assert R.files_key(tmp_path) != before


def test_int8_on_torch_quantises_every_linear_layer():
    from torch.ao.nn.quantized.dynamic import Linear as QLinear

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    q = R.quantize_model(model, "int8")
    kinds = [type(m) for m in q.modules() if isinstance(m, (torch.nn.Linear, QLinear))]
    assert kinds == [QLinear, QLinear]
    assert R.quantize_model(model, "none") is model
    assert all(p.dtype == torch.bfloat16 for p in R.quantize_model(
        torch.nn.Sequential(torch.nn.Linear(8, 2)), "bf16").parameters())


@pytest.fixture(scope="module")
def checker(tmp_path_factory):
    return tiny.build_tiny_checker(tmp_path_factory.mktemp("checker") / "roberta", "roberta", TEXTS,
                                   initializer_range=0.3)


def test_two_outputs_of_one_model_get_two_graphs(checker, tmp_path):
    """The exported graph is named by the output it computes too: a second output of the same model in the same
    cache is exported for itself, not read from the first's graph."""
    from citebound.verifiers.hf import encoder_forward

    tok = AutoTokenizer.from_pretrained(checker)
    model = AutoModelForSequenceClassification.from_pretrained(checker).eval()
    cfg = {"name": "tiny", "runtime": "onnx", "quantize": "none", "threads": 1}
    [(_, enc)] = R.encode_sorted(tok, TEXTS, None, max_length=32, batch_size=8)
    both = encoder_forward(model, cfg, tmp_path, lambda o: o.logits, "logits")(enc)
    first = encoder_forward(model, cfg, tmp_path, lambda o: o.logits[:, :1], "first-logit")(enc)
    assert both.shape == (4, 2) and first.shape == (4, 1)
    assert first[:, 0].numpy() == pytest.approx(both[:, 0].numpy(), abs=1e-5)
    assert len(list((tmp_path / "onnx").glob("*.onnx"))) == 2


def test_an_onnx_session_runs_on_the_configured_threads(checker, tmp_path, monkeypatch):
    opened = []
    real = R.open_onnxruntime

    def recording(path, threads):
        opened.append(threads)
        return real(path, threads)

    monkeypatch.setattr(R, "open_onnxruntime", recording)
    tok = AutoTokenizer.from_pretrained(checker)
    model = AutoModelForSequenceClassification.from_pretrained(checker).eval()
    [(_, enc)] = R.encode_sorted(tok, TEXTS[:2], None, max_length=32, batch_size=8)
    torch_threads = torch.get_num_threads()
    for threads in (1, 3, None):
        R.Forward(model, lambda o: o.logits, "onnx", onnx_dir=tmp_path, threads=threads, key="k")(enc)
    assert opened == [1, 3, torch_threads]


@pytest.fixture(scope="module")
def hhem(tmp_path_factory):
    return tiny.build_tiny_hhem(tmp_path_factory.mktemp("hhem") / "hhem", TEXTS + CLAIMS + WINDOWS, seed=3)


def test_hhem_config_json_wins_over_its_configuration_file(hhem, tmp_path):
    """config.json's prompt is taken before the class attribute in configuration_hhem_v2.py; what config.json lacks
    (here the foundation) still comes from the file."""
    import json
    import shutil

    from citebound.verifiers.hhem import hhem_settings

    d = tmp_path / "hhem"
    shutil.copytree(hhem, d)
    from_file = hhem_settings(d)
    conf = json.loads((d / "config.json").read_text())
    conf["prompt"] = "premise: {text1} hypothesis: {text2}"
    conf.pop("foundation", None)
    (d / "config.json").write_text(json.dumps(conf))
    assert hhem_settings(d) == {"prompt": "premise: {text1} hypothesis: {text2}", "foundation": from_file["foundation"]}


def test_hhem_at_exactly_its_threshold_is_consistent(hhem, tmp_path):
    cfg = verifier_cfg("hhem", model=str(hhem), revision=None, batch_size=3)
    p, _ = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
    at = build_verifier({**cfg, "threshold": float(p[2])}, tmp_path)
    q, verdict = at.judge(CLAIMS, WINDOWS)
    assert q.tolist() == p.tolist()
    assert verdict.tolist() == [bool(x >= p[2]) for x in p] and verdict[2]
