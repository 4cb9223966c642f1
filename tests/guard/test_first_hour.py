"""The path a new lab follows: defaults with a stated meaning, echo-input and labelling that cannot mix
answers up, nothing dropped silently, and a CLI that tells what it does."""
import json
import subprocess
import sys
from contextlib import redirect_stdout
from io import StringIO

import pytest
from conftest import ROOT

from citebound import examples
from citebound.cli.main import main


def run(args: list[str], capsys) -> tuple[int, str, str]:
    buf = StringIO()
    with redirect_stdout(buf):
        rc = main(args)
    return rc, buf.getvalue(), capsys.readouterr().err


# ---------------------------------------------------------------- --echo-input and labelling


def test_echo_input_keeps_each_answers_own_passages_across_a_batch_boundary(tmp_path, capsys):
    # 5 answers of different lengths and passage counts, 2 per verifier batch: boundaries after 2 and 4
    recs = []
    for i in range(5):
        passages = [f"Answer {i} passage {k}: topic{i} fact{k} holds." for k in range(1 + i)]
        answer = " ".join(f"Topic{i} fact{k} holds [{k + 1}]." for k in range(1 + i))
        recs.append({"id": f"a{i}", "answer": answer, "passages": passages} if i != 2 else
                    {"answer": answer, "passages": passages})
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    rc, out, _ = run(["guard", "--input", str(src), "--verifier", "lexical", "--echo-input", "--batch-answers", "2",
                      "--quiet"], capsys)
    got = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and len(got) == 5
    for line, (rec, g) in enumerate(zip(recs, got), 1):
        assert g["passages"] == rec["passages"] and g["answer"] == rec["answer"] and g["line"] == line
        assert g["report"]["n_citations"] == len(rec["passages"])


def test_echo_input_writes_each_answers_own_citation_base(tmp_path, capsys):
    """--base 1; the second record says citation_base 0: its echo says 0 (what citebound label reads its markers by),
    the others 1, and its [0] was checked against its first passage."""
    recs = [{"id": "a", "answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]},
            {"id": "b", "answer": "Statins lower LDL [0].", "passages": ["Statins lower LDL."], "citation_base": 0},
            {"id": "c", "answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."], "citation_base": 1}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rc, out, _ = run(["guard", "--input", str(src), "--verifier", "lexical", "--echo-input", "--base", "1",
                      "--batch-answers", "3", "--quiet"], capsys)
    got = [json.loads(x) for x in out.splitlines()]
    assert rc == 0 and [g["citation_base"] for g in got] == [1, 0, 1]
    assert [g["report"]["verified"] for g in got] == [1, 1, 1]


def test_every_sampled_citation_of_id_less_answers_can_be_labelled(tmp_path, capsys):
    from citebound.cli.label import make_label_session
    from citebound.cli.main import build_parser

    recs = [{"answer": f"Claim {i} one [1]. Claim {i} two [2].", "passages": [f"Claim {i} one.", f"Claim {i} two."]}
            for i in range(3)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({**r, "id": None}) for r in recs) + "\n")
    args = build_parser().parse_args(["label", "--input", str(src), "--out", str(tmp_path / "l.jsonl"), "--sample",
                                      "6", "--verifier", "lexical"])
    sess = make_label_session(args)
    assert len({it.item_id for it in sess.sample}) == 6  # line-numbered ids: no two answers share one
    for _ in range(6):
        it = sess.current()
        sess.label(it.item_id, "supported")
    assert sess.state()["done"] and sess.state()["panel"]["labelled"] == 6
    assert {it.answer_id for it in sess.sample} == {"line1", "line2", "line3"}


def test_label_scores_only_the_sample_and_nothing_already_labelled(tmp_path, monkeypatch, capsys):
    from citebound.cli import label as label_cli
    from citebound.cli.main import build_parser
    from citebound.scoring import loader

    seen: list[int] = []
    real = loader.load_scorer

    def counting(*a, **k):
        s = real(*a, **k)
        inner = s.score

        def score(claims, passages):
            seen.append(len(claims))
            return inner(claims, passages)
        s.score = score
        return s

    monkeypatch.setattr(loader, "load_scorer", counting)
    recs = [{"id": f"a{i}", "answer": " ".join(f"Fact {i}.{k} holds [{k + 1}]." for k in range(10)),
             "passages": [f"Fact {i}.{k} holds." for k in range(10)]} for i in range(10)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    argv = ["label", "--input", str(src), "--out", str(tmp_path / "l.jsonl"), "--sample", "7", "--verifier", "lexical"]
    sess = label_cli.make_label_session(build_parser().parse_args(argv))
    assert seen == [7]  # 100 citations, 7 sampled: 7 scored
    for _ in range(3):
        sess.label(sess.current().item_id, "unsupported")
    label_cli.make_label_session(build_parser().parse_args(argv))
    assert seen == [7, 4]  # the resume scores the 4 not labelled yet
    with pytest.raises(Exception, match="sample_seed"):  # a mismatched file: refused before any model loads
        label_cli.make_label_session(build_parser().parse_args(argv + ["--seed", "5"]))
    assert seen == [7, 4]


def test_label_names_the_line_of_an_echo_record_with_foreign_passages(tmp_path, capsys):
    rc, out, _ = run(["guard", "--input", str(examples.path()), "--verifier", "lexical", "--echo-input"], capsys)
    rec = json.loads(out)
    rec["passages"] = rec["passages"][:1]  # the report cites [3]; the passages are no longer the ones it guarded
    src = tmp_path / "e.jsonl"
    src.write_text(json.dumps(rec) + "\n")
    rc, _, err = run(["label", "--input", str(src), "--out", str(tmp_path / "l.jsonl"), "--verifier", "lexical"], capsys)
    assert rc == 2 and f"{src}:1: audit entry" in err and "no passage" in err and "Traceback" not in err


# ---------------------------------------------------------------- defaults with a stated meaning


@pytest.mark.parametrize("verifier", ["lexical", "embedding"])
def test_the_shipped_examples_planted_bad_citation_is_never_clean_under_the_defaults(verifier, capsys):
    rc, out, _ = run(["guard", "--input", str(examples.path()), "--verifier", verifier], capsys)
    rep = json.loads(out)["report"]
    planted = [a for a in rep["audit"] if "migraine" in a["claim"]]
    assert rc == 0 and len(planted) == 1 and planted[0]["action"] == "invalid"
    assert "[4 INVALID]" in json.loads(out)["guarded_answer"] and rep["review_budget"] > 0
    assert "calibrated on gold/attribution_gold" in rep["guarantee"] and "holds only for" in rep["guarantee"]
    assert "not a probability" in rep["score_scale"]


def test_a_reattributed_citation_shows_in_the_guarded_text(capsys):
    rc, out, _ = run(["guard", "--input", str(examples.path()), "--verifier", "lexical"], capsys)
    text = json.loads(out)["guarded_answer"]
    assert "[3 (was 2)]" in text and "[2 (was 3)]" in text
    rc, out, _ = run(["guard", "--input", str(examples.path()), "--verifier", "lexical", "--no-mark-reattributed"], capsys)
    assert "(was" not in json.loads(out)["guarded_answer"]


def test_shipped_calibrations_belong_to_the_default_verifiers():
    """Stale shipped calibrations (a verifier changed since `snakemake default_calibrations`) fail here."""
    from citebound.calibrations import available, shipped
    from citebound.scoring.loader import configured_hash, verifier_definitions

    assert available() == ["embedding", "lexical"]
    for name in available():
        cal = shipped(name)
        assert cal["verifier_hash"] == configured_hash(verifier_definitions(name)[0]), name
        assert cal["provenance"]["made_by"] == "snakemake default_calibrations" and cal["n_unsupported"] > 1000
        assert 0 < cal["tau"] < 1 and cal["alpha"] == 0.1


def test_calibration_none_is_the_verifiers_verdict(capsys):
    rc, out, _ = run(["guard", "--input", str(examples.path()), "--verifier", "lexical", "--calibration", "none"], capsys)
    assert json.loads(out)["report"]["rule"] == "pass iff verifier verdict"


# ---------------------------------------------------------------- nothing silent


def test_convert_refuses_a_file_of_another_format(tmp_path, capsys):
    src = tmp_path / "ctxs.jsonl"
    src.write_text(json.dumps({"id": "x", "output": "A [0].", "ctxs": [{"text": "A."}]}) + "\n")
    rc, out, err = run(["convert", "--format", "nora", str(src)], capsys)
    assert rc == 2 and "not the 'nora' format" in err and out == ""
    rc, out, _ = run(["convert", "--format", "ctxs", str(src)], capsys)
    assert rc == 0 and json.loads(out)["citation_base"] == 0


def test_convert_counts_every_unresolved_marker_and_every_non_finite_number(tmp_path, capsys):
    """Two answers: the first leaves two author-year markers unresolved, the second one. OpenScholar's ctxs with a NaN
    score and an Infinity nested two levels down: both become null, and are counted."""
    cites = [{"id": "(Rego et al., 2022)", "snippets": ["r"]}]
    recs = [{"response": {"sections": [{"text": "A (Zed et al., 1999). B (Rego et al., 2022) (Ng et al., 2001).",
                                        "citations": cites}]}},
            {"response": {"sections": [{"text": "C (Ok et al., 2020).", "citations": cites}]}}]
    src = tmp_path / "r.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    rc, out, err = run(["convert", "--format", "sections", str(src)], capsys)
    assert rc == 0
    got = [json.loads(x) for x in out.splitlines()]
    assert [g["unresolved_markers"] for g in got] == [2, 1] and got[0]["answer"].startswith("A (Zed et al., 1999). B [1]")
    assert "converted 2 answers; 3 markers left unresolved (unknown ids)" in err and "non-finite" not in err
    ctxs = tmp_path / "c.jsonl"
    ctxs.write_text(json.dumps({"id": "x", "output": "A [0].", "ctxs": [
        {"text": "A.", "score": float("nan"), "meta": {"ranks": [1, float("inf")]}}]}) + "\n")  # as upstream writes
    rc, out, err = run(["convert", "--format", "ctxs", str(ctxs)], capsys)
    assert rc == 0 and json.loads(out)["passages"] == [{"text": "A.", "score": None, "meta": {"ranks": [1, None]}}]
    assert f"2 non-finite numbers (NaN, Infinity) of {ctxs} written as null" in err


def test_the_audit_page_lists_every_answer_that_failed(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([json.dumps({"id": "good", "answer": "A holds [1].", "passages": ["A holds."]}),
                              json.dumps({"id": "toolong", "answer": "B [1-5000].", "passages": ["B."]}),
                              "{not json"]) + "\n")
    rc, _, err = run(["guard", "--input", str(src), "--verifier", "lexical", "--html", str(tmp_path / "p.html"),
                      "--quiet"], capsys)
    page = (tmp_path / "p.html").read_text()
    assert rc == 2 and "2 answers could not be guarded" in page
    assert 'data-failed="toolong"' in page and "max_range" in page and 'data-failed="line 3"' in page
    assert '"failed_answers": 2' in err


def test_calibrate_prints_a_one_line_summary(tmp_path, capsys):
    rows = [{"score": s / 20, "label": int(s > 10)} for s in range(20)]
    src = tmp_path / "s.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rc, out, err = run(["calibrate", "--scores", str(src), "--verifier-id", "x", "--alpha", "0.5"], capsys)
    # by hand: PAC k = 9 (P(Binom(11, 0.5) <= 8) = 1981/2048 >= 0.9, <= 7 is 1816/2048), so tau = the 9th
    # unsupported score 0.40, which flags the 9 scores <= 0.40 of 20; the conformal k = ceil(12 x 0.5) = 6: 0.25
    assert rc == 0 and ("calibrated x on 20 labels (11 unsupported): tau in force (pac) = 0.4, flagging 45.0% of the "
                        "labelled citations; conformal tau 0.25 (not deployed)") in err


@pytest.mark.slow  # eleven fresh interpreters
def test_version_help_and_verifier_table():
    out = subprocess.run([sys.executable, "-m", "citebound", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip().startswith("citebound 0.")
    for cmd in ("guard", "calibrate", "score", "serve", "label", "train", "verifiers", "example", "convert"):
        h = subprocess.run([sys.executable, "-m", "citebound", cmd, "--help"], capture_output=True, text=True, cwd=ROOT)
        assert h.returncode == 0 and "Example::" in h.stdout, cmd
    h = subprocess.run([sys.executable, "-m", "citebound", "calibrate", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert "(default: 0.1)" in h.stdout  # defaults shown
    top = subprocess.run([sys.executable, "-m", "citebound", "--help"], capture_output=True, text=True, cwd=ROOT).stdout
    assert "``" not in top
    assert "(default: None)" not in h.stdout


def test_the_verifier_table_fits_100_columns_and_names_each_extra(capsys):
    from citebound import definitions
    from citebound.cli.main import main

    assert main(["verifiers"]) == 0
    head, *rows = capsys.readouterr().out.splitlines()
    assert head.split() == ["NAME", "KIND", "EXTRA", "CAN", "TELL", "APART"] and max(map(len, rows)) <= 100
    assert main(["verifiers", "--json"]) == 0
    got = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert got["embedding"]["extra"] == "-" and got["deberta_nli"]["extra"] == "torch" and got["llm_judge"]["extra"] == "llm"
    assert "not negation or contradiction" in got["embedding"]["sees"] and "--model" in got["trained"]["needs"]
    remote = definitions.load("verifier", "remote_nli")
    assert got["remote_nli"]["endpoint"] == f"classify http://127.0.0.1:8000 model {remote['model']}"


def test_the_verifier_table_never_prints_an_endpoint_s_credentials(tmp_path, monkeypatch, capsys):
    """A remote definition edited to carry a user and password in its URL: the table shows the host, not them."""
    import shutil

    from citebound import definitions
    from citebound.cli.main import main

    root = tmp_path / "definitions"
    shutil.copytree(definitions.ROOT, root)
    p = root / "verifier" / "remote_nli.yaml"
    p.write_text(p.read_text().replace("url: http://127.0.0.1:8000", "url: http://lab:s3cret-pw@10.0.0.5:8000"))
    monkeypatch.setattr(definitions, "ROOT", root)
    assert main(["verifiers", "--json"]) == 0
    out = capsys.readouterr().out
    row = next(r for r in map(json.loads, out.splitlines()) if r["name"] == "remote_nli")
    assert "10.0.0.5:8000" in row["endpoint"] and "s3cret-pw" not in out


@pytest.mark.parametrize("argv,hint", [(["gaurd"], "did you mean guard?"),
                                       (["guard", "--verifer", "lexical"], "did you mean --verifier"),
                                       (["calibrate", "--alhpa", "0.1"], "did you mean --alpha")])
def test_a_typo_gets_did_you_mean(argv, hint, capsys):
    from citebound.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and hint in err, err
    if len(argv) > 1:  # the subcommand's own usage, not the top-level one
        assert f"usage: citebound {argv[0]}" in err


def test_the_version_is_the_packages():
    import tomllib

    from citebound import __version__

    assert __version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_there_is_a_licence_file():
    assert "Apache License" in (ROOT / "LICENSE").read_text()


@pytest.mark.parametrize("env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "https://127.0.0.1:9"}])
def test_a_hub_verifier_offline_fails_fast_naming_the_ways_out(env, monkeypatch, capsys, tmp_path):
    import time

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    t0 = time.monotonic()
    assert main(["guard", "--verifier", "deberta_nli", "--input", str(examples.path()), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - t0 < 10
    assert "HF_HUB_OFFLINE" in err and "--override model=PATH" in err and "not in the local cache" in err
    assert ("HF_HUB_OFFLINE is set" in err) == ("HF_HUB_OFFLINE" in env)


def test_guarding_with_the_graph_imports_neither_transformers_nor_torch(tmp_path):
    """#52 item 10: the embedding guard on the shipped graph needs neither; importing transformers to quiet it
    cost every command ~0.8 s."""
    src = tmp_path / "a.jsonl"
    src.write_text('{"answer": "Mitochondria make ATP [1].", "passages": ["Mitochondria make ATP."]}\n')
    code = ("import sys; from citebound.cli.main import main; rc = main(['guard', '--input', sys.argv[1], '--verifier', "
            "'embedding', '--quiet', '--out', sys.argv[2]]); print(rc, 'transformers' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "o.jsonl")], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.stdout.split() == ["0", "False", "False"], out.stderr[-1000:]
