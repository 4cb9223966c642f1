import json
import subprocess
import sys

import numpy as np
import pytest

from citebound.calibration.files import FORMAT
from citebound.cli.main import main
from citebound.guarding.guard import guard_answer as guard
from citebound.verifiers import score_pairs
from citebound.verifiers.lexical import LexicalVerifier

PASSAGES = [
    "In eukaryotic cells, mitochondria produce ATP through oxidative phosphorylation.",
    "Lipid nanoparticles adsorb serum proteins and form a protein corona in blood.",
    "The Eiffel Tower is a wrought-iron tower in Paris.",
    "Serum proteins are adsorbed by lipid nanoparticles, forming a corona; apolipoproteins dominate it.",
]
ANSWER = ("Mitochondria produce ATP through oxidative phosphorylation [1]. "
          "Lipid nanoparticles adsorb serum proteins and form a corona [3]. "
          "Quantum gravity remains unsolved [2].")


def lexical(c, p):
    ps = score_pairs(LexicalVerifier({"threshold": 0.6}), c, p, progress=False)
    return ps.score, ps.verdict


def test_verify_reattribute_flag():
    text, rep = guard(ANSWER, PASSAGES[:3], lexical)
    assert text == ("Mitochondria produce ATP through oxidative phosphorylation [1]. "
                    "Lipid nanoparticles adsorb serum proteins and form a corona [2 (was 3)]. "
                    "Quantum gravity remains unsolved [2 UNVERIFIED].")
    assert [a.action for a in rep.audit] == ["verified", "reattributed", "flagged"]
    assert (rep.verified, rep.reattributed, rep.flagged, rep.n_citations) == (1, 1, 1, 3)
    assert rep.review_budget == pytest.approx(1 / 3)


def test_reattribution_picks_best_scoring_not_first():
    # passage 2 (index 1) and passage 4 (index 3) both pass; a scorer that prefers index 3 must win
    def scorer(claims, passages):
        s = np.array([0.9 if p == PASSAGES[3] else 0.7 if p == PASSAGES[1] else 0.0 for p in passages])
        return s, s > 0.5
    _, rep = guard("Nanoparticles adsorb serum proteins [3].", PASSAGES, scorer, proposals=3)
    assert rep.audit[0].action == "reattributed" and rep.audit[0].new_pointer == 4


def test_remove_mode_and_grouped_citations():
    text, rep = guard(ANSWER, PASSAGES[:3], lexical, remove=True, reattribute=None)
    assert "Quantum" not in text and "corona" not in text and rep.removed_sentences == 2
    text, rep = guard("Lipid nanoparticles adsorb serum proteins and form a corona [1, 2].", PASSAGES[:3], lexical)
    assert text.endswith("[1 UNVERIFIED, 2].") and [a.action for a in rep.audit] == ["flagged", "verified"]


def test_out_of_range_reported_not_crashing_and_base0():
    text, rep = guard("Mitochondria produce ATP through oxidative phosphorylation [0]. Bad [9].", PASSAGES[:3],
                      lexical, base=0)
    assert rep.audit[0].action == "verified" and rep.audit[1].action == "invalid"
    assert "points at no passage" in rep.audit[1].reason and text.endswith("Bad [9 INVALID].")


def test_threshold_rule_uses_tau():
    _, rep = guard(ANSWER, PASSAGES[:3], lexical, tau=0.99, reattribute=None)
    # lexical scores: 1.0, 1.0 on its own cited? -> sentence 2 cites Eiffel (0), sentence 3 cites corona (low)
    assert [a.action for a in rep.audit] == ["verified", "flagged", "flagged"]
    assert "tau = 0.99" in rep.rule


def run_cli(args, stdin=None, capsys=None, monkeypatch=None):
    if stdin is not None:
        import io
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("stdin,msg", [
    ("not json", "not valid JSON"),
    ('{"passages": [{"text": "a"}]}', "missing 'answer'"),
    ('{"answer": "a [1]", "passages": "nope"}', "must be a list"),
    ('{"answer": "a [1]", "passages": [{"title": "t"}]}', "passage 0 has missing text"),
])
def test_cli_bad_input_one_line_errors(stdin, msg, capsys, monkeypatch):
    rc, out, err = run_cli(["guard", "--verifier", "lexical"], stdin, capsys, monkeypatch)
    assert rc == 2 and msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_guard_ctxs_alias_and_out_of_range(capsys, monkeypatch):
    rec = {"answer": "Mitochondria produce ATP through oxidative phosphorylation [1]. Other [5].",
           "ctxs": [{"text": PASSAGES[0]}]}
    rc, out, err = run_cli(["guard", "--verifier", "lexical"], json.dumps(rec), capsys, monkeypatch)
    res = json.loads(out)
    assert rc == 0 and res["report"]["invalid"] == 1 and res["report"]["verified"] == 1


def test_calibration_round_trip_and_foreign_verifier_refused(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(0)
    lines = [{"score": float(s), "label": 0} for s in rng.uniform(0, 0.5, 99)] + \
            [{"score": float(s), "label": 1} for s in rng.uniform(0.5, 1, 50)]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    cal = tmp_path / "cal.json"
    rc, _, err = run_cli(["calibrate", "--scores", str(tmp_path / "s.jsonl"), "--verifier", "lexical",
                          "--alpha", "0.1", "--out", str(cal)], None, capsys, monkeypatch)
    c = json.loads(cal.read_text())
    neg = np.sort([x["score"] for x in lines if x["label"] == 0])
    assert rc == 0 and c["k"] == 90 and c["tau"] == pytest.approx(neg[89]) and c["n_unsupported"] == 99
    assert c["pac"]["k"] >= c["k"] and 0 < c["expected_flag_rate"]["estimate"] < 1
    # guard uses tau (here the PAC one, 99 unsupported labels being enough): a citation whose lexical score is
    # <= tau is flagged even if the verdict says supported
    c["pac"]["tau"] = 0.99
    cal.write_text(json.dumps(c))
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": [{"text": p} for p in PASSAGES[:3]]}))
    rc, out, _ = run_cli(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "lexical", "--calibration",
                          str(cal), "--no-reattribute"], None, capsys, monkeypatch)
    rep = json.loads(out)["report"]
    assert rc == 0 and rep["flagged"] == 2 and "tau=0.99, pac" in rep["guarantee"]
    rc, _, err = run_cli(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "embedding",
                          "--calibration", str(cal)], None, capsys, monkeypatch)
    assert rc == 2 and "calibrated for verifier 'lexical'" in err


def test_calibration_stamps_the_runtime_and_guard_needs_the_same(tmp_path, capsys, monkeypatch):
    """A calibration made on the shipped graph (the definition's runtime) is refused by a guard of the same
    verifier on the torch path, and one made on torch float32 by a torch bf16 guard (other arithmetic, other
    scores), with a message naming the settings; the same flags pass."""
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps({"score": s, "label": y})
                                                for s, y in ((0.2, 0), (0.3, 0), (0.4, 0), (0.9, 1))))
    cal = tmp_path / "cal.json"
    rc, _, _ = run_cli(["calibrate", "--scores", str(tmp_path / "s.jsonl"), "--verifier", "embedding", "--quantize",
                        "none", "--alpha", "0.5", "--out", str(cal)], None, capsys, monkeypatch)
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": [{"text": p} for p in PASSAGES[:3]]}))
    guard = ["guard", "--input", str(tmp_path / "a.json"), "--verifier", "embedding", "--calibration", str(cal),
             "--no-reattribute", "--quiet"]
    rc2, _, err = run_cli(guard + ["--runtime", "torch"], None, capsys, monkeypatch)
    assert rc == 0 and rc2 == 2 and "with other settings" in err and "--runtime" in err
    torch_cal = tmp_path / "torch_cal.json"
    rc, _, _ = run_cli(["calibrate", "--scores", str(tmp_path / "s.jsonl"), "--verifier", "embedding", "--runtime", "torch",
                        "--alpha", "0.5", "--out", str(torch_cal)], None, capsys, monkeypatch)
    rc4, _, err = run_cli([*guard[:6], str(torch_cal), *guard[7:], "--runtime", "torch", "--quantize", "bf16"], None,
                          capsys, monkeypatch)
    assert rc == 0 and rc4 == 2 and "with other settings" in err and "--quantize" in err
    rc3, out, _ = run_cli(guard + ["--quantize", "none"], None, capsys, monkeypatch)
    rep = json.loads(out)["report"]
    assert rc3 == 0 and rep["verified"] + rep["flagged"] + rep["invalid"] > 0 and "tau=" in rep["guarantee"]


def test_calibrate_warns_on_too_few_unsupported(tmp_path, capsys, monkeypatch):
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps({"score": s, "label": 0}) for s in (0.1, 0.2, 0.3)))
    rc, out, err = run_cli(["calibrate", "--scores", str(tmp_path / "s.jsonl"), "--verifier", "lexical",
                            "--alpha", "0.1"], None, capsys, monkeypatch)
    assert rc == 0 and "too few" in err and json.loads(out)["tau"] is None and "no finite threshold" not in out
    assert "needs at least 9" in json.loads(out)["no_tau_reason"] and "Infinity" not in out


def test_batch_jsonl_counts_and_bad_line(tmp_path, capsys, monkeypatch):
    good = json.dumps({"id": "a", "answer": ANSWER, "passages": PASSAGES[:3]})
    (tmp_path / "b.jsonl").write_text(good + "\n{broken\n" + good + "\n")
    rc, out, err = run_cli(["guard", "--input", str(tmp_path / "b.jsonl"), "--verifier", "lexical", "--quiet"],
                           None, capsys, monkeypatch)
    assert rc == 2 and f"{tmp_path / 'b.jsonl'}:2: not valid JSON" in err
    counts = json.loads(err.split("counts: ", 1)[1])
    assert counts["answers"] == 2 and counts["failed_answers"] == 1 and counts["flagged"] == 2
    assert len(out.strip().splitlines()) == 2


def test_convert_nora_then_guard_batch(tmp_path, mirror):
    src = mirror / "scholarqabench" / "scholarqa_cs" / "qa_metadata_all.jsonl"
    conv = subprocess.run([sys.executable, "-m", "citebound.cli.main", "convert", "--format", "nora", str(src),
                           "--out", str(tmp_path / "n.jsonl")], capture_output=True, text=True)
    assert conv.returncode == 0 and "converted 100 answers" in conv.stderr
    first = json.loads((tmp_path / "n.jsonl").read_text().splitlines()[0])
    assert "[1]" in first["answer"] and first["passages"][0]["text"]
    res = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(tmp_path / "n.jsonl"),
                          "--verifier", "lexical", "--quiet", "--out", str(tmp_path / "g.jsonl")],
                         capture_output=True, text=True)
    counts = json.loads(res.stderr.split("counts: ", 1)[1])
    assert res.returncode == 0 and counts["answers"] == 100 and counts["n_citations"] > 3000
    assert (counts["verified"] + counts["reattributed"] + counts["flagged"] + counts["invalid"] + counts["unverified"]
            == counts["n_citations"])


def test_model_verifier_through_cli_override(tiny_t5, tmp_path, capsys, monkeypatch):
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": PASSAGES[:3]}))
    rc, out, err = run_cli(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "attrscore",
                            "--override", f"model={tiny_t5}", "--override", "device=cpu", "--override", "revision=null"],
                           None, capsys, monkeypatch)
    rep = json.loads(out)["report"]
    assert rc == 0, err
    assert rep["n_citations"] == 3 and all(a["score"] is not None and 0 <= a["score"] <= 1 for a in rep["audit"])


def test_library_api_with_calibration_dict_and_name():
    import citebound
    scorer = citebound.load_scorer("lexical")
    cal = {"format": FORMAT, "alpha": 0.1, "tau": 0.99, "verifier": "lexical", "verifier_hash": scorer.hash,
           "marginal_guarantee": "g"}
    text, rep = citebound.guard(ANSWER, [{"text": p} for p in PASSAGES[:3]], verifier=scorer, threshold=cal,
                                reattributor=None)
    assert rep.flagged == 2 and rep.guarantee.startswith("g (marginal only") and text.count("UNVERIFIED") == 2
    assert "tau=0.99, marginal" in rep.guarantee
    with pytest.raises(ValueError, match="calibrated for verifier 'lexical'"):
        citebound.guard(ANSWER, PASSAGES[:3], verifier=scorer, threshold=dict(cal, verifier_hash="x"))


def test_missing_config_dir_is_a_clear_error(tmp_path, capsys, monkeypatch):
    from citebound.study.config import ConfigError, compose_config
    with pytest.raises(ConfigError, match="no citebound config at"):
        compose_config([], config_dir=tmp_path)


# ---------------------------------------------------------------- calibration cannot be misused

def _write_scores(path, rows):
    path.write_text("\n".join(json.dumps(r) if isinstance(r, dict) else r for r in rows) + "\n")
    return str(path)


def test_calibrate_scores_needs_the_verifier_that_made_them(tmp_path, capsys, monkeypatch):
    src = _write_scores(tmp_path / "s.jsonl", [{"score": 0.1, "label": 0}, {"score": 0.9, "label": 1}])
    rc, _, err = run_cli(["calibrate", "--scores", src], None, capsys, monkeypatch)
    assert rc == 2 and "--scores needs --verifier NAME" in err and "--verifier-id" in err
    rc, _, err = run_cli(["calibrate", "--scores", src, "--verifier", "lexical", "--verifier-id", "x"],
                         None, capsys, monkeypatch)
    assert rc == 2 and "not both" in err


def test_calibration_by_verifier_id_is_refused_by_a_configured_verifier(tmp_path, capsys, monkeypatch):
    rows = [{"score": i / 40, "label": 0} for i in range(20)] + [{"score": 0.99, "label": 1}]
    src = _write_scores(tmp_path / "s.jsonl", rows)
    cal = tmp_path / "cal.json"
    rc, _, _ = run_cli(["calibrate", "--scores", src, "--verifier-id", "my-minicheck-v2", "--out", str(cal)],
                       None, capsys, monkeypatch)
    c = json.loads(cal.read_text())
    # k = ceil((20 + 1) * 0.9) = 19 -> tau = 19th smallest unsupported score = 18/40
    assert rc == 0 and (c["verifier"], c["verifier_hash"], c["k"]) == ("my-minicheck-v2", "my-minicheck-v2", 19)
    assert c["tau"] == pytest.approx(18 / 40)
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": PASSAGES[:3]}))
    rc, _, err = run_cli(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "lexical", "--calibration",
                          str(cal)], None, capsys, monkeypatch)
    assert rc == 2 and "calibrated for verifier 'my-minicheck-v2'" in err
    assert "guard with --verifier my-minicheck-v2 or recalibrate" in err
    # the library takes it with the user's own scorer (no config hash to compare)
    import citebound
    text, rep = citebound.guard(ANSWER, PASSAGES[:3], verifier=lexical, threshold=str(cal), reattributor=None)
    assert "tau=0.45" in rep.guarantee and rep.rule == "pass iff score > tau = 0.45"


def test_calibration_stamped_with_the_named_verifier_config(tmp_path, capsys, monkeypatch):
    from citebound.scoring.loader import verifier_definitions
    from citebound.verifiers import verifier_hash
    src = _write_scores(tmp_path / "s.jsonl", [{"score": 0.2, "label": 0}, {"score": 0.9, "label": 1}])
    rc, out, _ = run_cli(["calibrate", "--scores", src, "--verifier", "lexical"], None, capsys, monkeypatch)
    c = json.loads(out)
    assert rc == 0 and c["verifier"] == "lexical"
    assert c["verifier_hash"] == verifier_hash(verifier_definitions("lexical")[0])
    assert c["verifier_hash"] != verifier_hash(verifier_definitions("embedding")[0])


@pytest.mark.parametrize("rows,msg", [
    ([{"score": 0.5, "label": 1}, {"score": 0.7, "label": 1}], "no unsupported examples (label 0) among 2"),
    # JSON has no NaN or Infinity: every CLI reader refuses them as it parses the line
    ([{"score": 0.5, "label": 0}, '{"score": NaN, "label": 0}'], "s.jsonl:2: not usable JSON (a non-finite number (NaN)"),
    ([{"score": 0.5, "label": 0}, '{"score": Infinity, "label": 1}'], "s.jsonl:2: not usable JSON (a non-finite number (Infinity)"),
    ([{"score": 0.5, "label": 0}, '{"score": 1e400, "label": 1}'], "s.jsonl:2: not usable JSON (a number out of range (1e400)"),
    ([{"score": "0.5", "label": 0}], "s.jsonl:1: expected a numeric 'score'"),
    ([{"score": 0.5, "label": 2}], "s.jsonl:1: expected 'label' 0 (unsupported) or 1"),
    ([{"score": 0.5, "label": 0.5}], "s.jsonl:1: expected 'label' 0"),
    ([], "s.jsonl: no labelled examples"),
])
def test_calibrate_rejects_unusable_scores(rows, msg, tmp_path, capsys, monkeypatch):
    src = _write_scores(tmp_path / "s.jsonl", rows)
    rc, out, err = run_cli(["calibrate", "--scores", src, "--verifier", "lexical"], None, capsys, monkeypatch)
    assert rc == 2 and msg in err and out == "" and "Traceback" not in err


def test_calibrate_labels_scores_with_the_verifier(tmp_path, capsys, monkeypatch):
    # lexical scores: a claim whose every content term is in the passage scores 1.0; none, 0.0
    rows = [{"claim": "Mitochondria produce ATP.", "passage": PASSAGES[0], "label": 1}] + \
           [{"claim": "Quantum gravity remains unsolved.", "passage": PASSAGES[i % 3], "label": 0} for i in range(12)]
    src = _write_scores(tmp_path / "l.jsonl", rows)
    rc, out, err = run_cli(["calibrate", "--labels", src, "--verifier", "lexical", "--alpha", "0.2"],
                           None, capsys, monkeypatch)
    c = json.loads(out)
    # k = ceil(13 * 0.8) = 11 of 12 unsupported scores, all 0.0 -> tau = 0.0; flagged: the 12 zeros
    assert rc == 0 and (c["k"], c["tau"], c["n_unsupported"], c["n_supported"]) == (11, 0.0, 12, 1)
    assert c["flag_rate_supported"] == 0.0 and c["expected_flag_rate"]["estimate"] == pytest.approx(12 / 13)


# ---------------------------------------------------------------- files: errors, not tracebacks

def test_file_errors_are_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": PASSAGES[:3]}))
    a = str(tmp_path / "a.json")
    cases = [
        (["guard", "--input", a, "--verifier", "lexical", "--out", str(tmp_path / "nope" / "o.json")],
         f"folder {str(tmp_path / 'nope')!r} does not exist"),
        (["guard", "--input", a, "--verifier", "lexical", "--out", str(tmp_path)], "is a directory; give a file name"),
        (["guard", "--input", a, "--verifier", "lexical", "--html", str(tmp_path / "x" / "p.html")], "does not exist"),
        (["guard", "--input", str(tmp_path), "--verifier", "lexical"], "is a directory, not an input file"),
        (["guard", "--input", str(tmp_path / "missing.json"), "--verifier", "lexical"], "missing.json: no such file"),
        (["guard", "--input", a, "--verifier", "lexical", "--calibration", str(tmp_path)], "is a directory, not a calibration"),
        (["guard", "--input", a, "--verifier", "lexical", "--calibration", a], "not a citebound calibration (missing 'alpha')"),
        (["guard", "--input", a, "--verifier", "lexical", "--reattributor", "nope"], "unknown re-attributor 'nope'"),
        (["guard", "--input", a, "--verifier", "nope"], "unknown verifier"),
        (["guard", "--input", a, "--verifier", "lexical", "--proposals", "0"], "--proposals must be >= 1"),
        (["guard", "--input", a, "--verifier", "lexical", "--out", "/dev/full"], "/dev/full: cannot write (No space left"),
        (["calibrate", "--scores", a, "--verifier", "lexical", "--alpha", "1.0"], "--alpha must be in (0, 1)"),
        (["calibrate", "--scores", a, "--verifier", "lexical", "--delta", "0"], "--delta must be in (0, 1)"),
        (["score", "--input", a, "--verifier", "lexical", "--out", str(tmp_path / "n" / "s.jsonl")], "does not exist"),
    ]
    for args, msg in cases:
        rc, _, err = run_cli(args, None, capsys, monkeypatch)
        assert rc == 2 and msg in err, (args, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (args, err)


def test_one_proposal_is_the_smallest_taken(tmp_path, capsys, monkeypatch):
    """--proposals 1 is allowed (one BM25 candidate per flagged citation); 0 is refused (above)."""
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": PASSAGES[:3]}))
    rc, out, err = run_cli(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "lexical", "--proposals", "1"],
                           None, capsys, monkeypatch)
    assert rc in (0, 1) and "--proposals" not in err and json.loads(out)["report"]["n_citations"] > 0, err


def test_every_option_has_help():
    from citebound.cli.main import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = [f"{name} {' '.join(a.option_strings) or a.dest}" for name, sp in sub.choices.items()
               for a in sp._actions if a.dest != "help" and not (a.help or "").strip()]
    assert missing == []


def test_cli_score_and_remove_and_verifier_reattributor(tmp_path, capsys, monkeypatch):
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"claim": "Mitochondria produce ATP.", "passage": PASSAGES[0]},
        {"claim": "Quantum gravity remains unsolved.", "passage": PASSAGES[0]}]))
    rc, out, _ = run_cli(["score", "--input", str(tmp_path / "p.jsonl"), "--verifier", "lexical"], None, capsys, monkeypatch)
    recs = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and [(r["score"], r["verdict"], r["verifier"]) for r in recs] == [(1.0, True, "lexical"),
                                                                                   (0.0, False, "lexical")]
    (tmp_path / "a.json").write_text(json.dumps({"answer": ANSWER, "passages": PASSAGES[:3]}))
    rc, out, _ = run_cli(["guard", "--input", str(tmp_path / "a.json"), "--verifier", "lexical", "--remove",
                          "--reattributor", "verifier"], None, capsys, monkeypatch)
    res = json.loads(out)
    assert rc == 0 and res["guarded_answer"] == ("Mitochondria produce ATP through oxidative phosphorylation [1]. "
                                                 "Lipid nanoparticles adsorb serum proteins and form a corona [2 (was 3)].")
    assert res["report"]["removed_sentences"] == 1 and res["report"]["audit"][1]["new_evidence"]["passage"] == 2
