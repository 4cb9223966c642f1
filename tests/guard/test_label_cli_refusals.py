"""citebound label refuses what it cannot use before any page starts (#56): each refusal one line naming the
option, the values beside each refusal going on to the page (recorded here instead of serving it)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
from citebound.cli.main import main  # noqa: E402


@pytest.fixture
def served(monkeypatch):
    calls = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: calls.append(kw))
    return calls


@pytest.fixture
def answers(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"id": 1, "answer": "Aspirin inhibits cyclooxygenase [1].",
                             "passages": ["Aspirin inhibits cyclooxygenase in platelets."]}) + "\n")
    return f


@pytest.mark.parametrize("argv,why", [
    (["--input", "{a}", "--from-reports", "{a}", "--out", "{o}"], "give --input or --from-reports, not both"),
    (["--input", "{a}"], "give --input ANSWERS (or --from-reports GUARDED) and --out LABELS"),
    (["--out", "{o}"], "give --input ANSWERS (or --from-reports GUARDED) and --out LABELS"),
    (["--input", "{a}", "--out", "{o}", "--sample", "0"], "--sample must be >= 1, got 0"),
    (["--input", "{a}", "--out", "{o}", "--alpha", "0"], "--alpha must be in (0, 1), got 0.0"),
    (["--input", "{a}", "--out", "{o}", "--alpha", "1"], "--alpha must be in (0, 1), got 1.0"),
])
def test_label_refuses_in_one_line(argv, why, served, answers, tmp_path, capsys):
    argv = [x.replace("{a}", str(answers)).replace("{o}", str(tmp_path / "l.jsonl")) for x in argv]
    assert main(["label", *argv]) == 2 and not served
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err


@pytest.mark.parametrize("extra", [["--sample", "1"], ["--alpha", "0.001"], ["--alpha", "0.999"]])
def test_the_values_beside_each_refusal_start_the_page(extra, served, answers, tmp_path, capsys):
    assert main(["label", "--input", str(answers), "--out", str(tmp_path / "l.jsonl"), "--port", "8799", *extra]) == 0
    assert served and served[0]["port"] == 8799
    assert "labelling 1 sampled citations" in capsys.readouterr().err


def test_a_guarded_records_labels_point_at_its_input_line_and_a_raw_ones_at_its_own(tmp_path):
    """citebound guard --echo-input writes each answer's input line ('line'): a label sampled from it names that line
    (12, 30), not the guarded file's (1, 2); a raw answer's is its own line (3), and a 'line' of 0 falls back to it."""
    import json

    from citebound.cli.label import read_answers

    rec = {"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]}
    rows = [rec | {"report": {}, "line": 12}, rec | {"report": {}, "line": 30}, rec, rec | {"report": {}, "line": 0}]
    f = tmp_path / "g.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records, lines = read_answers(str(f))
    assert len(records) == 4 and lines == [12, 30, 3, 4]


def test_the_printed_next_steps_recalibrate_with_the_same_verifier_and_alpha(tmp_path):
    import argparse

    from citebound.cli.label import next_steps

    args = argparse.Namespace(verifier="embedding", override=["window=400", "batch_size=8"], model="my model",
                              alpha=0.05, out=str(tmp_path / "l.jsonl"), input="g.jsonl", reports_only=True)
    same = "--verifier embedding --override window=400 --override batch_size=8 --model 'my model'"
    assert next_steps(args) == [
        f"citebound calibrate --labels {tmp_path}/l.jsonl {same} --alpha 0.05 --out cal.json",
        f"citebound monitor --reports g.jsonl {same} --labels {tmp_path}/l.jsonl"]
    args.reports_only, args.override, args.model = False, None, None
    assert next_steps(args) == [f"citebound calibrate --labels {tmp_path}/l.jsonl --verifier embedding --alpha 0.05 "
                                "--out cal.json"]


def test_from_reports_samples_only_guarded_records_and_names_a_raw_one(tmp_path, served, capsys):
    """--from-reports reads citebound guard --echo-input output: a raw answer among the guarded ones is skipped, named
    by its line, and counted; the sample is the guarded record's one citation."""
    rec = {"answer": "Statins lower LDL cholesterol [1].", "passages": ["Statins lower LDL cholesterol."]}
    raw = tmp_path / "a.jsonl"
    raw.write_text(json.dumps(rec) + "\n")
    guarded = tmp_path / "g.jsonl"
    assert main(["guard", "--input", str(raw), "--verifier", "lexical", "--echo-input", "--quiet", "--out", str(guarded)]) == 0
    with guarded.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")
    capsys.readouterr()
    assert main(["label", "--from-reports", str(guarded), "--out", str(tmp_path / "l.jsonl"), "--verifier", "lexical"]) == 0
    err = capsys.readouterr().err
    assert f"skipped: {guarded}:2: no 'report': --from-reports reads citebound guard --echo-input output" in err
    assert "1 answers skipped (not sampled from)" in err and "labelling 1 sampled citations" in err


def test_a_record_without_an_answer_and_its_passages_is_skipped_saying_what_is_expected(tmp_path, capsys):
    """Lines 1-4: a list, an answer with no passages, passages with no answer, and a record with its passages as
    'ctxs' (OpenScholar's field): the first three are skipped, each named by its line with what was expected; the
    fourth is read."""
    import json

    from citebound.cli.label import read_answers

    rows = [["Statins lower LDL [1]."], {"answer": "Statins lower LDL [1]."}, {"passages": ["Statins lower LDL."]},
            {"answer": "Statins lower LDL [1].", "ctxs": [{"text": "Statins lower LDL."}]}]
    f = tmp_path / "a.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records, lines = read_answers(str(f))
    assert (len(records), lines) == (1, [4])
    err = capsys.readouterr().err
    for n in (1, 2, 3):
        assert (f"skipped: {f}:{n}: expected an answer with its passages (raw answers, or citebound guard "
                "--echo-input output)") in err, err
    assert "3 answers skipped (not sampled from)" in err
