"""citebound guard's run-level outcomes no earlier test chose (#56): a record with a bad group is that record's
failure (reported with its file and line, counted, the others written), a verifier that cannot run makes the
command fail (exit 2, the count and the first reason) while its output marks every citation unverified, and
--batch-answers below 1 is refused. In process, through main()."""
from __future__ import annotations

import json

import pytest

from citebound.cli.main import main
from tests.fake_classifier import FakeClassifier

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."


def record(i, **extra) -> str:
    return json.dumps({"id": i, "answer": "Aspirin irreversibly inhibits platelet cyclooxygenase [1].",
                       "passages": [ASPIRIN]} | extra)


@pytest.mark.parametrize("group,why", [(5, "got 5"), ("", "got ''"), ("g" * 201, "at most 200 characters")])
def test_a_record_with_a_bad_group_is_its_own_failure(tmp_path, capsys, group, why):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([record(0), record(1, group=group), record(2)]) + "\n")
    out = tmp_path / "out.jsonl"
    code = main(["guard", "--input", str(src), "--verifier", "lexical", "--no-reattribute", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [0, 2]
    lines = [x for x in err.splitlines() if x.startswith("error: ")]
    assert len(lines) == 1 and f"{src}:2: 'group' must be a non-empty string" in lines[0] and why in lines[0]


def test_a_group_of_200_characters_is_a_group_name(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(record(0, group="g" * 200) + "\n")
    main(["guard", "--input", str(src), "--verifier", "lexical", "--no-reattribute", "--quiet"])
    err = capsys.readouterr().err
    assert "'group' must be" not in err  # a valid name: what fails is the calibration, which has no groups
    assert f"{src}:1: group '{'g' * 200}' given, but this calibration has no groups" in err


def test_a_verifier_that_cannot_run_fails_the_command_and_marks_every_citation(tmp_path, capsys):
    """The served verifier answers 400 to every call: both answers' citations are written [1 UNVERIFIED], and the
    command exits 2 saying how many (2) and why, never 0 with unchecked citations in its output."""
    src = tmp_path / "in.jsonl"
    src.write_text(record(0) + "\n" + record(1) + "\n")
    out = tmp_path / "out.jsonl"
    with FakeClassifier() as server:
        server.behaviour = "bad"
        code = main(["guard", "--input", str(src), "--verifier", "remote_nli", "--override", f"url={server.url}",
                     "--override", "model=fake-nli", "--override", "max_retries=0", "--no-reattribute",
                     "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert code == 2
    assert [r["guarded_answer"] for r in rows] == ["Aspirin irreversibly inhibits platelet cyclooxygenase [1 UNVERIFIED]."] * 2
    assert [r["report"]["unverified"] for r in rows] == [1, 1]
    assert (f"error: 2 citations could not be checked (written as unverified, [N UNVERIFIED]): the verifier gave no score: "
            f"the served verifier at {server.url}/classify failed: answered 400") in err
    assert [r["report"]["audit"][0]["reason"][:27] for r in rows] == ["the verifier gave no score:"] * 2


@pytest.mark.parametrize("on_error", ["closed", "open"])
def test_a_blank_or_hidden_passage_is_no_verifier_failure_and_fails_closed_either_way(tmp_path, capsys, on_error):
    """Its citation is [N UNVERIFIED] under --on-error open too (no verifier failed, so nothing is left open), and
    the command exits 0: nothing went wrong with the verifier."""
    src = tmp_path / "in.jsonl"
    answer = "Mitochondria produce ATP [1]. Mitochondria make energy [2]. Mitochondria produce ATP [3]."
    passages = ["Mitochondria produce ATP.", "   ", '<p hidden>Mitochondria make energy.</p>']
    src.write_text(json.dumps({"id": 0, "answer": answer, "passages": passages}) + "\n")
    out = tmp_path / "out.jsonl"
    code = main(["guard", "--input", str(src), "--verifier", "lexical", "--no-reattribute", "--on-error", on_error,
                 "--out", str(out), "--quiet"])
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert code == 0 and "could not be checked" not in capsys.readouterr().err
    assert row["guarded_answer"] == ("Mitochondria produce ATP [1]. Mitochondria make energy [2 UNVERIFIED]. "
                                     "Mitochondria produce ATP [3 UNVERIFIED].")
    assert [(a["action"], a["unreadable"]) for a in row["report"]["audit"]] == [
        ("verified", False), ("unverified", True), ("unverified", True)]
    assert row["report"]["review_budget"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("n,ok", [(0, False), (1, True)])
def test_batch_answers_of_at_least_1(tmp_path, capsys, n, ok):
    src = tmp_path / "in.jsonl"
    src.write_text(record(0) + "\n")
    code = main(["guard", "--input", str(src), "--verifier", "lexical", "--batch-answers", str(n), "--quiet"])
    err = capsys.readouterr().err
    assert (code == 0) is ok
    if not ok:
        assert "--batch-answers must be >= 1, got 0" in err
