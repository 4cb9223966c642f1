"""MiniCheck, HHEM and the fast runtimes, through the real loading code on tiny random weights.

Every expected probability is computed here by hand from the same weights with plain
``transformers`` calls (one unit at a time, no sorting, no batching), so a swapped label, a wrong
input format or a batch put back in the wrong order fails."""
import hashlib
import json

import numpy as np
import pytest
import torch
from conftest import TEXTS, verifier_cfg
from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

from citebound.study import tiny
from citebound.verifiers import build_verifier, verifier_hash
from citebound.verifiers.hf import string_constants
from citebound.verifiers.runtimes import encode_sorted

CLAIMS = ["the gene increases cancer risk", "protein binds the receptor", "mitochondria produce atp",
          "lipid nanoparticles adsorb serum proteins in the blood of the patients"]
WINDOWS = ["the gene increases cancer risk in cells", "a protein", "mitochondria produce atp in cells of the study",
           "serum"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("checkers")
    # weights drawn at 0.3: at the default 0.02 a checker's scores are the same to 1e-5 whatever the input
    return {"roberta": tiny.build_tiny_checker(d / "roberta", "roberta", TEXTS + CLAIMS + WINDOWS,
                                               initializer_range=0.3),
            "deberta": tiny.build_tiny_checker(d / "deberta", "deberta", TEXTS + CLAIMS + WINDOWS, seed=1,
                                               initializer_range=0.3),
            "t5": tiny.build_tiny_t5(d / "t5", TEXTS + CLAIMS + WINDOWS, seed=2),
            "hhem": tiny.build_tiny_hhem(d / "hhem", TEXTS + CLAIMS + WINDOWS, seed=3)}


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("arch,config", [("roberta", "minicheck_roberta"), ("deberta", "minicheck_deberta")])
def test_minicheck_encoder_by_hand(models, arch, config, tmp_path):
    cfg = verifier_cfg(config, model=str(models[arch]), revision=None, batch_size=3)
    v = build_verifier(cfg, tmp_path)
    p, verdict = v.judge(CLAIMS, WINDOWS)
    tok = AutoTokenizer.from_pretrained(models[arch])
    m = AutoModelForSequenceClassification.from_pretrained(models[arch]).eval()
    want = []
    for c, w in zip(CLAIMS, WINDOWS):  # document + EOS + claim, one sequence
        with torch.no_grad():
            logits = m(**tok(w + tok.eos_token + c, return_tensors="pt")).logits[0].numpy()
        want.append(softmax(logits)[1])
    assert np.diff(np.sort(want)).min() > 1e-3  # every pair scores apart: a batch put back out of order fails
    assert p == pytest.approx(want, abs=1e-5)
    assert (verdict == (np.array(want) > 0.5)).all()
    # the decision is strict: a unit exactly at support_above is unsupported. Its score is taken from the same
    # one-unit batch that is judged (a batch of four pads it, and torch's thread count may change the last bits)
    alone = float(v.judge(CLAIMS[:1], WINDOWS[:1])[0][0])
    assert alone == pytest.approx(want[0], abs=1e-5)
    v.support_above = alone
    assert not v.judge(CLAIMS[:1], WINDOWS[:1])[1][0]
    v.support_above = np.nextafter(alone, -1.0)
    assert v.judge(CLAIMS[:1], WINDOWS[:1])[1][0]


def test_minicheck_flant5_by_hand(models, tmp_path):
    cfg = verifier_cfg("minicheck_flant5", model=str(models["t5"]), revision=None, label_token_ids=[5, 9], batch_size=3)
    p, verdict = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
    tok = AutoTokenizer.from_pretrained(models["t5"])
    m = AutoModelForSeq2SeqLM.from_pretrained(models["t5"]).eval()
    want = []
    for c, w in zip(CLAIMS, WINDOWS):
        enc = tok("predict: " + w + tok.eos_token + c, return_tensors="pt")
        with torch.no_grad():
            logits = m(**enc, decoder_input_ids=torch.tensor([[m.config.decoder_start_token_id]])).logits[0, 0].numpy()
        want.append(softmax(logits[[5, 9]])[1])
    assert p == pytest.approx(want, abs=1e-5) and (verdict == (np.array(want) > 0.5)).all()
    with pytest.raises(ValueError, match="seq2seq checker runs on torch"):
        build_verifier({**cfg, "runtime": "onnx"}, tmp_path)


def test_bespoke_minicheck_prompts_fetched_as_data_and_yes_probability(tiny_llama, tmp_path, monkeypatch):
    """The LLM variant: the authors' prompt file comes through the download path (mirror + sha256),
    is read with ast, and P(support) is the backend's P(Yes) on those messages."""
    from citebound.scoring.llm_backends import build_backend

    src = 'SYSTEM_PROMPT = """Check the claim."""\n\nUSER_PROMPT = """Doc: [DOCUMENT]\\nClaim: [CLAIM]"""\n'
    mirror = tmp_path / "mirror"
    (mirror / "minicheck").mkdir(parents=True)
    (mirror / "minicheck" / "utils.py").write_text(src)
    monkeypatch.setenv("CITEBOUND_DATA_MIRROR", str(mirror))
    base = verifier_cfg("bespoke_minicheck")
    spec = {**base["prompt_source"], "sha256": hashlib.sha256(src.encode()).hexdigest()}
    cfg = {**base, "backend": "transformers", "model": str(tiny_llama), "revision": None, "device": "cpu",
           "dtype": "float32", "prompt_source": spec, "batch_size": 3}
    p, verdict = build_verifier(cfg, tmp_path / "cache").judge(CLAIMS, WINDOWS)
    msgs = [[{"role": "system", "content": "Check the claim."},
             {"role": "user", "content": f"Doc: {w}\nClaim: {c}"}] for c, w in zip(CLAIMS, WINDOWS)]
    want = [build_backend({**cfg, "max_new_tokens": 1}).yes_probability([m])[0] for m in msgs]
    assert p == pytest.approx(want, abs=1e-5) and (verdict == (np.array(want) > 0.5)).all()
    # a changed prompt file fails its checksum, naming the file
    (tmp_path / "cache" / "prompts" / "minicheck" / "utils.py").unlink()
    (mirror / "minicheck" / "utils.py").write_text(src.replace("Check", "Judge"))
    with pytest.raises(Exception, match="utils.py"):
        build_verifier(cfg, tmp_path / "cache")


def test_hhem_reads_prompt_from_the_checkpoint_and_scores_by_hand(models, tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoConfig, T5ForTokenClassification

    cfg = verifier_cfg("hhem", model=str(models["hhem"]), revision=None, batch_size=3)
    p, verdict = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
    consts = string_constants((models["hhem"] / "configuration_hhem_v2.py").read_text(), "HHEMv2Config")
    assert consts["prompt"] == tiny.HHEM_TEST_PROMPT
    tok = AutoTokenizer.from_pretrained(consts["foundation"])
    m = T5ForTokenClassification(AutoConfig.from_pretrained(consts["foundation"], num_labels=2)).eval()
    state = {k[3:]: v for k, v in load_file(str(models["hhem"] / "model.safetensors")).items()}
    m.load_state_dict(state, strict=False)
    want = []
    for c, w in zip(CLAIMS, WINDOWS):  # premise = the window, hypothesis = the claim; first position's logits
        with torch.no_grad():
            logits = m(**tok(tiny.HHEM_TEST_PROMPT.format(text1=w, text2=c), return_tensors="pt")).logits[0, 0].numpy()
        want.append(softmax(logits)[1])
    assert p == pytest.approx(want, abs=1e-5) and (verdict == (np.array(want) >= 0.5)).all()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"model_type": "HHEMv2"}))
    with pytest.raises(ValueError, match="no foundation/prompt"):
        build_verifier({**cfg, "model": str(bad)}, tmp_path)


def test_encode_sorted_batches_longest_first_and_keeps_every_index(models):
    tok = AutoTokenizer.from_pretrained(models["roberta"])
    batches = encode_sorted(tok, WINDOWS, None, max_length=64, batch_size=3)
    idx = np.concatenate([i for i, _ in batches])
    assert sorted(idx.tolist()) == [0, 1, 2, 3]
    lengths = [len(tok(w)["input_ids"]) for w in WINDOWS]
    assert [lengths[i] for i in idx] == sorted(lengths, reverse=True)
    first = batches[0][1]["input_ids"]
    assert first.shape == (3, max(lengths))  # padded to its own longest, not the global one
    assert batches[1][1]["input_ids"].shape == (1, min(lengths))
    assert encode_sorted(tok, [], None, max_length=64, batch_size=3) == []


# ONNX Runtime's dynamic int8 (per-tensor activations) moves one of tiny random HHEM's four scores by 0.20 with
# the versions installed today (torch 2.13, transformers 5.24, onnxruntime 1.31-1.32): its bound is 0.25
@pytest.mark.parametrize("runtime,quantize,tol,agree", [("onnx", "none", 1e-4, 1.0), ("torch", "int8", 0.1, 0.75),
                                                          ("onnx", "int8", 0.25, 0.75), ("openvino", "none", 1e-3, 1.0),
                                                          ("openvino", "bf16", 0.05, 0.75), ("torch", "bf16", 0.05, 0.75)])
def test_fast_runtimes_track_the_exact_path(models, tiny_nli, tmp_path, runtime, quantize, tol, agree):
    """ONNX float32 reproduces the exact scores; int8 stays close (random tiny weights are the
    hard case for quantisation: the real agreement figures are in benchmarks/verifier_speed.py)."""
    for cfg in (verifier_cfg("minicheck_roberta", model=str(models["roberta"]), revision=None),
                verifier_cfg("deberta_nli", model=str(tiny_nli), revision=None, device="cpu"),
                verifier_cfg("hhem", model=str(models["hhem"]), revision=None),
                verifier_cfg("embedding")):
        exact = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
        assert np.ptp(exact[0]) > 0.05, cfg["name"]  # the pairs' scores differ: a reordered batch would show
        fast = build_verifier({**cfg, "runtime": runtime, "quantize": quantize, "threads": 1}, tmp_path).judge(CLAIMS, WINDOWS)
        assert np.abs(fast[0] - exact[0]).max() <= tol, cfg["name"]
        assert (fast[1] == exact[1]).mean() >= agree, cfg["name"]


def test_an_exported_graph_is_reused_without_loading_the_torch_model(tmp_path, monkeypatch):
    """The onnx/openvino embedding verifier loads the torch model only to export its graph: a second
    verifier over the same cache finds the graph, never loads the model, and scores the same."""
    import citebound.verifiers.hf as emb

    cfg = {**verifier_cfg("embedding"), "runtime": "openvino", "quantize": "none", "threads": 1}
    first = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
    assert len(list((tmp_path / "onnx").glob("embedding-*-none.onnx"))) == 1
    monkeypatch.setattr(emb, "load_pretrained", lambda *a, **k: pytest.fail("loaded the torch model"))
    v = build_verifier(cfg, tmp_path)
    second = v.judge(CLAIMS, WINDOWS)
    assert v.model is None and np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


def test_runtime_and_quantisation_are_in_the_cache_key():
    shipped = verifier_cfg("embedding")  # the guard's definition: the graph inside the wheel
    cfg = {k: v for k, v in shipped.items() if k not in ("runtime", "graph")}  # the exact torch path
    exact = verifier_hash(cfg)
    assert verifier_hash({**cfg, "runtime": "torch", "quantize": "none"}) == exact  # the defaults: old caches hold
    keys = {verifier_hash({**cfg, "runtime": r, "quantize": q}) for r in ("torch", "onnx") for q in ("none", "int8")}
    assert len(keys) == 4 and exact in keys and verifier_hash(shipped) not in keys
    assert verifier_hash({**cfg, "threads": 7}) == exact  # threads never change a score


def test_openvino_bf16_without_native_bfloat16_is_hashed_as_the_float32_it_runs(monkeypatch):
    """OpenVINO runs float32 on a CPU without native bfloat16: those scores must not share the bf16 cache."""
    from citebound.verifiers import runtimes

    cfg = verifier_cfg("embedding")
    ov_f32 = verifier_hash({**cfg, "runtime": "openvino", "quantize": "none"})
    monkeypatch.setattr(runtimes, "openvino_bf16", lambda: True)
    ov_bf16 = verifier_hash({**cfg, "runtime": "openvino", "quantize": "bf16"})
    assert len({ov_bf16, ov_f32, verifier_hash(cfg), verifier_hash({**cfg, "quantize": "bf16"})}) == 4
    monkeypatch.setattr(runtimes, "openvino_bf16", lambda: False)
    assert verifier_hash({**cfg, "runtime": "openvino", "quantize": "bf16"}) == ov_f32


def test_openvino_bf16_without_native_bfloat16_scores_as_float32(monkeypatch, tmp_path):
    """...and it really runs float32 there: the same scores as quantize: none, not bfloat16 ones."""
    from citebound.verifiers import runtimes

    cfg = {**verifier_cfg("embedding"), "runtime": "openvino", "threads": 1}
    f32 = build_verifier({**cfg, "quantize": "none"}, tmp_path).judge(CLAIMS, WINDOWS)[0]
    bf16 = build_verifier({**cfg, "quantize": "bf16"}, tmp_path).judge(CLAIMS, WINDOWS)[0]
    if runtimes.openvino_bf16():  # where bf16 runs natively it rounds differently from float32
        assert not np.array_equal(f32, bf16)
    monkeypatch.setattr(runtimes, "openvino_bf16", lambda: False)
    fallback = build_verifier({**cfg, "quantize": "bf16"}, tmp_path).judge(CLAIMS, WINDOWS)[0]
    assert np.array_equal(fallback, f32)


def test_bad_runtime_values_are_refused(tmp_path):
    with pytest.raises(ValueError, match="runtime 'tensorrt' is not one of"):
        build_verifier({**verifier_cfg("embedding"), "runtime": "tensorrt"}, tmp_path)
    with pytest.raises(ValueError, match="quantize 'int4' is not one of"):
        build_verifier({**verifier_cfg("embedding"), "quantize": "int4"}, tmp_path)
    with pytest.raises(ValueError, match="int8 runs on the torch or onnx runtime"):
        build_verifier({**verifier_cfg("embedding"), "runtime": "openvino", "quantize": "int8"}, tmp_path)
    with pytest.raises(ValueError, match="bf16 runs on the torch or openvino runtime"):
        build_verifier({**verifier_cfg("embedding"), "runtime": "onnx", "quantize": "bf16"}, tmp_path)


def test_attrscore_kit_reads_the_first_600_characters_and_parses_a_generated_verdict(tiny_t5, tmp_path):
    """The kit's AttrScore: one window (the passage's first 600 characters), a greedy generated answer,
    supported iff it starts with 'attribut'; checked against a plain generate call per unit."""
    from transformers import AutoModelForSeq2SeqLM

    from citebound.scoring.loader import PairScorer

    cfg = verifier_cfg("attrscore_kit", model=str(tiny_t5), revision=None, device="cpu", batch_size=3)
    scorer = PairScorer(cfg, {"attrscore_kit": cfg}, {"window_chars": 600, "stride": 300, "claim_cap": 600},
                        cache_dir=tmp_path)
    passages = [w * 30 for w in WINDOWS]  # every passage longer than 600 characters
    ps = scorer.score(CLAIMS, passages)
    assert (ps.n_windows == 1).all() and (ps.best_window == 0).all()
    tok = AutoTokenizer.from_pretrained(tiny_t5)
    m = AutoModelForSeq2SeqLM.from_pretrained(tiny_t5).eval()
    want = []
    for c, p in zip(CLAIMS, passages):
        enc = tok(cfg["prompts"]["ours"].format(claim=c, reference=p[:600]), return_tensors="pt", truncation=True,
                  max_length=512)
        words = tok.decode(m.generate(**enc, max_new_tokens=8, do_sample=False)[0], skip_special_tokens=True)
        want.append(words.strip().lower().startswith("attribut"))
    assert ps.verdict.tolist() == want and ps.score.tolist() == [float(w) for w in want]
    v = build_verifier({**cfg, "verdict_prefix": ""}, tmp_path)  # every answer starts with ''
    assert v.judge(CLAIMS, WINDOWS)[1].all()
    with pytest.raises(ValueError, match="verdict_mode 'vote'"):
        build_verifier({**cfg, "verdict_mode": "vote"}, tmp_path)
