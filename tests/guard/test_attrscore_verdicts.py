"""AttrScore on a tiny random flan-T5 whose vocabulary holds its three label words: the positive label is the first
when the config names none, and a generated verdict is read whatever its case (the real model answers
"Attributable"; the prefix it is compared with is lower case)."""
import json

import numpy as np
import pytest
from conftest import TEXTS, verifier_cfg

from citebound.study import tiny
from citebound.verifiers import build_verifier

CLAIMS = ["the gene increases cancer risk", "protein binds the receptor", "mitochondria produce atp"]
WINDOWS = ["the gene increases cancer risk in cells", "a protein", "mitochondria produce atp in cells"]
LABELS = ["attributable extrapolatory contradictory"]


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return tiny.build_tiny_t5(tmp_path_factory.mktemp("t5") / "model", TEXTS + LABELS, seed=4)


def cfg_of(model, **over):
    cfg = verifier_cfg("attrscore", model=str(model), revision=None, device="cpu", dtype="float32", batch_size=2)
    cfg.update(over)
    return cfg


def test_the_positive_label_is_the_first_when_none_is_named(t5, tmp_path):
    named = {lab: build_verifier(cfg_of(t5, positive_label=lab), tmp_path).judge(CLAIMS, WINDOWS)
             for lab in ("Attributable", "Contradictory")}
    cfg = cfg_of(t5)
    del cfg["positive_label"]
    p, verdict = build_verifier(cfg, tmp_path).judge(CLAIMS, WINDOWS)
    assert p.tolist() == named["Attributable"][0].tolist() and verdict.tolist() == named["Attributable"][1].tolist()
    assert not np.allclose(p, named["Contradictory"][0])  # the labels' probabilities differ: the test can tell


def test_a_generated_verdict_is_read_whatever_its_case(t5, tmp_path):
    """The tokenizer's words are made capitalised, so everything the model generates is; the verdict compares
    the answer lower-cased with the (lower-case) prefix, as worked out here from a plain generate call."""
    import shutil

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    d = tmp_path / "capitalised"
    shutil.copytree(t5, d)
    tj = json.loads((d / "tokenizer.json").read_text())
    tj["model"]["vocab"] = {(w.capitalize() if w.isalpha() else w): i for w, i in tj["model"]["vocab"].items()}
    (d / "tokenizer.json").write_text(json.dumps(tj))
    tok = AutoTokenizer.from_pretrained(d)
    m = AutoModelForSeq2SeqLM.from_pretrained(d).eval()
    cfg = cfg_of(d, verdict_mode="generate", max_new_tokens=4)
    answers = []
    for c, w in zip(CLAIMS, WINDOWS):
        enc = tok(cfg["prompts"]["ours"].format(claim=c, reference=w), return_tensors="pt", truncation=True,
                  max_length=1024)
        answers.append(tok.decode(m.generate(**enc, max_new_tokens=4, do_sample=False)[0], skip_special_tokens=True))
    first = next(a.strip() for a in answers if a.strip())
    assert first[0].isupper()
    prefix = first[:3].lower()
    p, verdict = build_verifier({**cfg, "verdict_prefix": prefix}, tmp_path).judge(CLAIMS, WINDOWS)
    want = [a.strip().lower().startswith(prefix) for a in answers]
    assert any(want) and verdict.tolist() == want and p.tolist() == [float(x) for x in want]
