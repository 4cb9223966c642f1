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
