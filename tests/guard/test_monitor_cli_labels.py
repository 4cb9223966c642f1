"""citebound monitor --labels with nothing to count (#56, round 54): an empty labels file is read as no labels (the
card unchanged, a line that says so), not refused as if every label were another verifier's."""
from __future__ import annotations

import json
from pathlib import Path

from citebound.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_an_empty_labels_file_is_no_labels(tmp_path, capsys):
    reports, labels, card = tmp_path / "r.json", tmp_path / "labels.jsonl", tmp_path / "card.json"
    assert main(["guard", "--input", str(ROOT / "citebound/examples/answer.json"), "--verifier", "lexical",
                 "--out", str(reports), "--quiet"]) == 0
    labels.write_text("")
    capsys.readouterr()
    assert main(["monitor", "--verifier", "lexical", "--reports", str(reports), "--labels", str(labels),
                 "--out", str(card)]) == 0
    err = capsys.readouterr().err
    assert "labels: 0 unsupported, 0 of them passed by the guard; 0 can't-tell skipped; 0 of another verifier skipped" in err
    labels_seen = json.loads(card.read_text())["monitor"]["labels"]
    assert (labels_seen["missed"], labels_seen["unsupported"], labels_seen["e_value"], labels_seen["p_value"]) == (0, 0, 1.0, None)
