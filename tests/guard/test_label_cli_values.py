"""citebound label's session from its options (#56, round 91): ``--repair-truncated`` reaches the labels file, so a
file whose last line a crash cut short is resumed (that partial click dropped, with a warning), and without the
option it is refused naming the option."""
import json

import pytest

from citebound.cli.common import CLIError
from citebound.cli.label import make_label_session
from citebound.cli.main import parse


def test_repair_truncated_reaches_the_labels_file(tmp_path, capsys):
    src, out = tmp_path / "answers.jsonl", tmp_path / "labels.jsonl"
    src.write_text(json.dumps({"id": "a", "answer": "Statins lower LDL [1]. Mitochondria make ATP [2].",
                               "passages": ["Statins lower LDL.", "Mitochondria make ATP."]}) + "\n")
    argv = ["label", "--input", str(src), "--out", str(out), "--verifier", "lexical"]
    first = make_label_session(parse(argv))
    assert len(first.sample) == 2
    first.label(first.sample[0].item_id, "supported")
    whole = out.read_text()
    with open(out, "a") as f:
        f.write('{"item_id": "a:0:1", "lab')  # a crash mid-write: no newline
    with pytest.raises(CLIError, match="--repair-truncated"):
        make_label_session(parse(argv))
    capsys.readouterr()
    again = make_label_session(parse([*argv, "--repair-truncated"]))
    assert "dropped a partial last line" in capsys.readouterr().err
    assert len(again.sample) == 2 and out.read_text() == whole  # the partial line is gone, the rest kept
    assert list(again.store.labelled) == [first.sample[0].item_id]
