"""citebound guard's run-level values, worked out by hand: the counts line (blocked answers, uncited sentences) on
standard error, never in the guarded output on standard output; the first verifier error named, not the last;
answers and failures with id 0 named 0 on the audit page; an unwritable --html path refused before anything is
written. In process, through main()."""
from __future__ import annotations

import json

from citebound.cli.main import main
from tests.fake_classifier import FakeClassifier

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
GOOD = "Aspirin irreversibly inhibits platelet cyclooxygenase [1]."


def _write(tmp_path, *records) -> str:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(src)


def _counts(err: str) -> dict:
    (line,) = [x for x in err.splitlines() if x.startswith("counts: ")]
    return json.loads(line[len("counts: "):])


def test_the_counts_go_to_stderr_and_count_blocked_answers_and_uncited_sentences(tmp_path, capsys):
    """--action block above 0.3, guarded output to standard output. Answer 0: verified, one uncited sentence
    ("Bananas are yellow.": words, no marker), budget 1/2 under the uncited policy "flag": blocked. Answer 1:
    verified alone: budget 0, not blocked. Answer 2: "Unicorns sing [1]." flagged: budget 1, blocked. Counts:
    3 answers, 2 blocked, 3 citations, 2 verified, 1 flagged, 1 uncited."""
    src = _write(tmp_path, {"id": 0, "answer": f"{GOOD} Bananas are yellow.", "passages": [ASPIRIN]},
                 {"id": 1, "answer": GOOD, "passages": [ASPIRIN]},
                 {"id": 2, "answer": "Unicorns sing [1].", "passages": [ASPIRIN]})
    code = main(["guard", "--input", src, "--verifier", "lexical", "--no-reattribute", "--action", "block",
                 "--block-above", "0.3", "--out", "-", "--quiet"])
    out, err = capsys.readouterr()
    rows = [json.loads(x) for x in out.splitlines()]  # every stdout line is a guarded answer
    assert code == 0
    assert [(r["id"], r["guarded_answer"] is None) for r in rows] == [(0, True), (1, False), (2, True)]
    c = _counts(err)
    assert (c["answers"], c["blocked"], c["n_citations"], c["verified"], c["flagged"], c["uncited"]) == (3, 2, 3, 2, 1, 1)


def test_the_command_names_the_first_verifier_error_not_the_last(tmp_path, capsys):
    """One answer per verifier call. The served verifier answers 500 to any request holding "Zorp" (answer 0)
    and a score above 1 to every other (answer 1): both citations are unverified; the summary counts 2 and names
    answer 0's error, the 500."""
    src = _write(tmp_path, {"id": 0, "answer": "Zorp quix blen [1].", "passages": [ASPIRIN]},
                 {"id": 1, "answer": GOOD, "passages": [ASPIRIN]})
    with FakeClassifier() as server:
        server.fail_on, server.behaviour = "Zorp", "above"
        code = main(["guard", "--input", src, "--verifier", "remote_nli", "--override", f"url={server.url}",
                     "--override", "model=fake-nli", "--override", "max_retries=0", "--no-reattribute",
                     "--batch-answers", "1", "--out", str(tmp_path / "out.jsonl"), "--quiet"])
    err = capsys.readouterr().err
    rows = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert code == 2
    reasons = [r["report"]["audit"][0]["reason"] for r in rows]
    assert "500" in reasons[0] and "500" not in reasons[1]
    (summary,) = [x for x in err.splitlines() if "citations could not be checked" in x]
    assert summary.startswith("error: 2 citations could not be checked")
    assert summary.endswith(reasons[0])


def test_answers_and_failures_with_id_0_are_named_0_on_the_audit_page(tmp_path, capsys):
    src = _write(tmp_path, {"id": 0, "answer": GOOD, "passages": [ASPIRIN]},
                 {"id": 0, "answer": 5, "passages": [ASPIRIN]})
    html = tmp_path / "audit.html"
    code = main(["guard", "--input", src, "--verifier", "lexical", "--no-reattribute", "--html", str(html),
                 "--out", str(tmp_path / "out.jsonl"), "--quiet"])
    page = html.read_text()
    assert code == 2
    assert 'data-answer-id="0"' in page and 'data-failed="0"' in page
    assert 'data-answer-id="1"' not in page and "line 2" not in page


def test_an_unwritable_html_path_is_refused_before_anything_is_written(tmp_path, capsys):
    src = _write(tmp_path, {"id": 0, "answer": GOOD, "passages": [ASPIRIN]})
    out = tmp_path / "out.jsonl"
    code = main(["guard", "--input", src, "--verifier", "lexical", "--html", str(tmp_path / "no" / "such" / "a.html"),
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code != 0
    assert "a.html" in err
    assert not out.exists()
