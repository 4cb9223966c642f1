"""--grid is the fixed grid of thresholds for either rule that tests a grid (#56, round 83): with --precision as
with --beta it is used, not refused, and the deployed threshold is the smallest certified one *of that grid*.
Expected values worked by hand."""
from __future__ import annotations

import json

import pytest

from citebound.cli.main import main

# 50 unsupported citations scoring 0.1 and 50 supported scoring 0.9; a citation passes iff its score > tau
ROWS = [{"score": 0.1, "label": 0}] * 50 + [{"score": 0.9, "label": 1}] * 50


def test_precision_tests_the_grid_given_and_deploys_its_smallest_certified_tau(tmp_path):
    """Grid 0, 0.5, 1 (--grid 0,1,3), q 0.2, delta 0.1, supported share >= 0.5. The bounds are Clopper-Pearson at
    delta / (2 * 3) = 1/60; for 0 of 50 the upper bound is 1 - (1/60)^(1/50) = 0.07862.
    tau 0: every unsupported citation passes (m = 1, bound 1): FDR bound 0.5 / (0.5 + 0.5 * 1) = 0.5 > 0.2.
    tau 0.5: none passes (m_up = 0.07862), no supported one is flagged (f_up = 0.07862):
      0.5 * 0.07862 / (0.5 * 0.07862 + 0.5 * 0.92138) = 0.07862 <= 0.2: certified.
    tau 1: every supported citation is flagged (1 - f_up = 0): FDR bound 1 > 0.2.
    So one certified tau, 0.5 (the default grid of 201 would deploy 0.1 instead)."""
    src, out = tmp_path / "s.jsonl", tmp_path / "cal.json"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert main(["calibrate", "--scores", str(src), "--verifier-id", "fixed", "--precision", "0.2",
                 "--supported-share-min", "0.5", "--grid", "0,1,3", "--out", str(out)]) == 0
    p = json.loads(out.read_text())["precision"]
    up = 1 - (1 / 60) ** (1 / 50)
    assert up == pytest.approx(0.07862, abs=1e-5)
    assert (p["tau"], p["certified"]) == (0.5, 1)
    assert p["fdr_bound_at_tau"] == pytest.approx(up, rel=1e-6)


def test_without_grid_precision_tests_the_default_grid_of_201(tmp_path):
    """The same labels on the default grid (0, 0.005, ..., 1): the smallest tau that flags every 0.1 is 0.1 itself
    (a score passes iff > tau)."""
    src, out = tmp_path / "s.jsonl", tmp_path / "cal.json"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert main(["calibrate", "--scores", str(src), "--verifier-id", "fixed", "--precision", "0.2",
                 "--supported-share-min", "0.5", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["precision"]["tau"] == pytest.approx(0.1)


@pytest.mark.parametrize("q,certified", [("0.2", True), ("0.05", False)])
def test_a_precision_that_no_tau_certifies_is_warned_of_and_one_that_is_is_not(tmp_path, capsys, q, certified):
    """On the grid 0, 0.5, 1 the best bound is 0.07862 (at tau 0.5, worked out above): q 0.2 is certified, q 0.05
    is not, and only then does calibrate warn that the guard keeps the catch-rate rule."""
    src, out = tmp_path / "s.jsonl", tmp_path / "cal.json"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert main(["calibrate", "--scores", str(src), "--verifier-id", "fixed", "--precision", q,
                 "--supported-share-min", "0.5", "--grid", "0,1,3", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    warning = ("warning: none: no threshold certifies a false-discovery rate <= 0.05 at delta 0.1 with a supported share "
               ">= 0.5 (label more citations, or loosen q); the guard keeps the catch-rate rule")
    assert (json.loads(out.read_text())["precision"]["tau"] is not None) == certified
    assert ("the guard keeps the catch-rate rule" in err) != certified
    assert certified or warning in err

