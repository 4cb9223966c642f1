"""citebound monitor's counts where a wrong choice keeps every bound: a labelled score exactly at tau (flagged,
so not missed), labels of another verifier, can't-tell labels, and a report whose card names no calibration.
Expected counts by hand from the records written here."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from citebound.calibration.files import in_force
from citebound.calibrations import shipped
from citebound.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def guarded(tmp_path, capsys):
    """The example answer guarded with lexical: 3 scored citations (one invalid pointer without a score)."""
    reports = tmp_path / "r.json"
    assert main(["guard", "--input", str(ROOT / "citebound/examples/answer.json"), "--verifier", "lexical",
                 "--out", str(reports), "--quiet"]) == 0
    capsys.readouterr()
    rec = json.loads(reports.read_text())
    assert [a.get("score") for a in rec["report"]["audit"]].count(None) == 1
    return reports, rec


def _monitor(tmp_path, capsys, reports, labels=None):
    card = tmp_path / "card.json"
    argv = ["monitor", "--verifier", "lexical", "--reports", str(reports), "--out", str(card)]
    if labels is not None:
        argv += ["--labels", str(labels)]
    assert main(argv) == 0
    return json.loads(card.read_text())["monitor"], capsys.readouterr().err


def test_label_counts_at_tau_another_verifier_and_cant_tell(tmp_path, capsys, guarded):
    reports, _ = guarded
    cal = shipped("lexical")
    tau = in_force(cal)[1]
    up = float(np.nextafter(tau, 1.0))
    labels = tmp_path / "labels.jsonl"
    rows = [{"label": 0, "score": tau},                     # flagged (score <= tau): caught
            {"label": 0, "score": up},                      # one ulp above: passed, missed
            {"label": 0, "passed": True, "verifier_hash": "not-this-one"},  # another verifier's: skipped
            {"label": 0, "passed": True, "verifier_hash": cal["verifier_hash"]},  # this verifier's: missed
            {"label": None, "score": 0.0},                  # can't tell: skipped
            {"label": 1, "score": up}]                      # supported: not a test of the catch rate
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mon, err = _monitor(tmp_path, capsys, reports, labels)
    assert (mon["labels"]["missed"], mon["labels"]["unsupported"]) == (2, 3)
    assert ("labels: 3 unsupported, 2 of them passed by the guard; 1 can't-tell skipped; "
            "1 of another verifier skipped") in err


def test_a_report_whose_card_names_no_calibration_is_not_fed(tmp_path, capsys, guarded):
    reports, rec = guarded
    no_card = json.loads(json.dumps(rec))
    del no_card["report"]["guarantee_card"]
    reports = tmp_path / "three.jsonl"
    reports.write_text(json.dumps(rec) + "\n" + json.dumps(no_card) + "\n" + json.dumps(rec) + "\n")
    mon, err = _monitor(tmp_path, capsys, reports)
    assert mon["deployed_scores"] == 6  # two reports of three scores; the one without a card is not fed
    assert "2 reports, 6 citation scores" in err and "1 reports of another calibration" in err
