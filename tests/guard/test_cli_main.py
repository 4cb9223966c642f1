"""citebound's entry point (citebound/cli/main.py): a mistyped option written with its value still gets its
suggestion, and an error nobody expected (a bug) is raised with its traceback, never folded into one line."""
from __future__ import annotations

import pytest

from citebound.cli.main import main


@pytest.mark.parametrize("typo,suggestion", [
    ("--verifer", "--verifier"), ("--verifer=lexical", "--verifier"),
    # a long value: matched whole against the options, it would be too far from any to suggest one
    ("--verifer=my-finetuned-verifier", "--verifier"),
    ("--calibraton=results/calibrations/lexical.json", "--calibration")])
def test_a_mistyped_option_gets_its_suggestion_with_or_without_a_value(typo, suggestion, capsys):
    with pytest.raises(SystemExit) as e:
        main(["guard", "--input", "x.jsonl", typo])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"unrecognized arguments: {typo} (did you mean {suggestion}" in err


def test_an_unexpected_error_is_raised_not_folded_into_one_line(monkeypatch, capsys):
    def bug(args):
        raise ZeroDivisionError("a bug in a command")

    monkeypatch.setattr("citebound.cli.example.run", bug)
    with pytest.raises(ZeroDivisionError, match="a bug in a command"):
        main(["example"])
    assert "error:" not in capsys.readouterr().err
