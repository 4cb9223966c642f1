"""``citebound score`` and the CLI's entry point, by what a user sees: strict JSON out (a pair with no score is
``null``, never ``NaN``), the line of a bad record, the passage's text checked like the claim's, one ``error:``
line and status 2 naming the file that failed, and a suggestion for a mistyped command or option."""
import io
import json
import sys

import pytest

from citebound.cli import score
from citebound.cli.main import main


def cli(args, capsys, monkeypatch, stdin=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def strict(line):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(line, parse_constant=refuse)


def test_a_pair_with_no_score_is_null_in_strict_json(capsys, monkeypatch):
    stdin = "".join(json.dumps({"claim": c, "passage": "Mitochondria make ATP."}) + "\n"
                    for c in ("", "Mitochondria make ATP."))
    rc, out, _ = cli(["score", "--verifier", "lexical"], capsys, monkeypatch, stdin)
    recs = [strict(x) for x in out.splitlines()]
    assert rc == 0 and [(r["score"], r["verdict"]) for r in recs] == [(None, False), (1.0, True)]


@pytest.mark.parametrize("records,where", [
    (['{"claim": "a", "passage": "b"}', '{"claim": "a"}'], "-:2: expected 'claim' and 'passage' strings"),
    (['{"claim": "a", "passage": 3}'], "-:1: expected 'claim' and 'passage' strings"),
    (['{"claim": "a", "passage": "b"}', "", '{"claim": "a", "passage": "\\ud800"}'], "-:3: 'passage' is not well-formed"),
    (['{"claim": "\\udc00", "passage": "b"}'], "-:1: 'claim' is not well-formed"),
])
def test_a_bad_record_is_named_by_its_line(records, where, capsys, monkeypatch):
    rc, out, err = cli(["score", "--verifier", "lexical"], capsys, monkeypatch, "\n".join(records) + "\n")
    assert rc == 2 and out == "" and err.startswith(f"error: {where}") and err.count("\n") == 1


@pytest.mark.parametrize("filename,named", [("/data/model/head.onnx", "/data/model/head.onnx"), (None, "scores.jsonl")])
def test_a_failed_write_names_the_file_that_failed(filename, named, tmp_path, capsys, monkeypatch):
    """An OSError mid-run: one line naming the file the error is about (else --out), status 2."""
    def run(args):
        raise OSError(28, "No space left on device", filename)
    monkeypatch.setattr(score, "run", run)
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(["score", "--verifier", "lexical", "--out", "scores.jsonl"], capsys, monkeypatch)
    assert rc == 2 and err == f"error: {named}: cannot write (No space left on device)\n"


@pytest.mark.parametrize("argv,hint", [(["gaurd"], "unknown command 'gaurd' (did you mean guard?)"),
                                       (["scroe"], "(did you mean score?)"),
                                       (["score", "--verifer", "lexical"], "(did you mean --verifier")])
def test_a_mistyped_command_or_option_gets_a_suggestion(argv, hint, capsys, monkeypatch):
    with pytest.raises(SystemExit) as e:
        cli(argv, capsys, monkeypatch)
    assert e.value.code == 2 and hint in capsys.readouterr().err
