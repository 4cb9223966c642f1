"""The closed loop, as a lab runs it: guard with --echo-input, label a uniform sample of the deployed
citations (label --from-reports, the guard's verdicts carried), feed those labels to the monitor (monitor
--labels) and recalibrate from the same file (calibrate --labels). The label test's state is checked against
the betting e-process computed here from its definition: the mean over the 20 bets f_j = 0.98 (j + 0.5) / 20
of (1 + f (1 - alpha) / alpha)^missed (1 - f)^(unsupported - missed), void iff it reaches 1 / delta."""
import json

import pytest

from citebound.cli.label import make_label_session
from citebound.cli.main import main, parse

STEPS: list = []  # the page's state after each click of the last label_all
PASSAGES = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]


def e_value(missed: int, n: int, alpha: float = 0.1) -> float:
    fs = [0.98 * (j + 0.5) / 20 for j in range(20)]
    return sum((1 + f * (1 - alpha) / alpha) ** missed * (1 - f) ** (n - missed) for f in fs) / 20


def guarded(tmp_path, n_good: int, n_bad: int):
    rows = [{"id": f"g{i}", "answer": "Statins lower LDL cholesterol [1].", "passages": PASSAGES} for i in range(n_good)]
    rows += [{"id": f"b{i}", "answer": "Unicorns sing opera loudly [2].", "passages": PASSAGES} for i in range(n_bad)]
    src, out = tmp_path / "answers.jsonl", tmp_path / "guarded.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--echo-input", "--quiet", "--out", str(out)]) == 0
    return out


def label_all(tmp_path, reports, judge, sample=None):
    out = tmp_path / "labels.jsonl"
    args = parse(["label", "--from-reports", str(reports), "--out", str(out), "--verifier", "lexical"]
                 + (["--sample", str(sample)] if sample else []))
    args.reports_only, args.input = True, args.from_reports
    session = make_label_session(args)
    STEPS.clear()
    while (item := session.current()) is not None:
        assert "guard_action" not in session.state()["item"] and "score" not in session.state()["item"]  # no anchoring
        STEPS.append(session.label(item.item_id, judge(item)))
    return out, [json.loads(line) for line in out.read_text().splitlines()]


# (verified, flagged, verified that are wrong, void): e(4 of 6) = 133.3; e(3 of 8) = 3.78; e(1 of 1) = 5.41, below 10
# though every label so far is a miss; e(0 of 4) = 0.20
@pytest.mark.parametrize("n_good,n_bad,wrong,void", [(4, 2, 4, True), (3, 5, 3, False), (1, 0, 1, False),
                                                     (2, 4, 0, False)])
def test_labels_of_deployed_citations_feed_the_monitor_and_recalibrate(tmp_path, capsys, n_good, n_bad, wrong, void):
    reports = guarded(tmp_path, n_good, n_bad)
    # the person says the first `wrong` verified citations are unsupported after all; the flagged ones are unsupported
    seen = {"verified": 0}

    def judge(item):
        if item.guard_action == "verified":
            seen["verified"] += 1
            return "unsupported" if seen["verified"] <= wrong else "supported"
        return "unsupported"

    labels, rows = label_all(tmp_path, reports, judge)
    assert len(rows) == n_good + n_bad
    # the finished page names the exact commands that follow (run below as written)
    assert STEPS[-1]["done"] and STEPS[-1]["next_steps"] == [
        f"citebound calibrate --labels {labels} --verifier lexical --alpha 0.1 --out cal.json",
        f"citebound monitor --reports {reports} --verifier lexical --labels {labels}"]
    assert all(not s["next_steps"] for s in STEPS[:-1])
    assert sorted(r["guard_action"] for r in rows) == sorted(["verified"] * n_good + ["flagged"] * n_bad)
    capsys.readouterr()
    assert main(["monitor", "--reports", str(reports), "--verifier", "lexical", "--labels", str(labels)]) == 0
    out = capsys.readouterr()
    card = json.loads(out.out)
    unsupported = wrong + n_bad
    assert f"labels: {unsupported} unsupported, {wrong} of them passed by the guard" in out.err
    assert (e_value(wrong, unsupported) >= 10) == void
    assert (card["monitor"]["state"] == "void") == void
    # the same file recalibrates: its scores and labels
    cal = tmp_path / "cal.json"
    rc = main(["calibrate", "--labels", str(labels), "--verifier", "lexical", "--out", str(cal)])
    assert rc == 0 and json.loads(cal.read_text())["n_unsupported"] == unsupported


def test_from_reports_refuses_raw_answers(tmp_path, capsys):
    src = tmp_path / "raw.jsonl"
    src.write_text(json.dumps({"answer": "Statins lower LDL [1].", "passages": PASSAGES}) + "\n")
    args = parse(["label", "--from-reports", str(src), "--out", str(tmp_path / "l.jsonl"), "--verifier", "lexical"])
    args.reports_only, args.input = True, args.from_reports
    with pytest.raises(Exception, match="citation"):
        make_label_session(args)
    assert "--from-reports reads citebound guard --echo-input output" in capsys.readouterr().err


def test_calibrate_reuses_the_scores_labels_carry_when_the_verifier_is_the_same(tmp_path, capsys, monkeypatch):
    reports = guarded(tmp_path, 3, 2)
    labels, rows = label_all(tmp_path, reports, lambda item: "supported" if item.guard_action == "verified" else
                             "unsupported")
    import citebound.cli.calibrate as calibrate

    def no_scoring(args):
        raise AssertionError("the labels carry this verifier's scores: nothing should be scored")

    monkeypatch.setattr(calibrate, "make_scorer", no_scoring)
    cal = tmp_path / "cal.json"
    assert main(["calibrate", "--labels", str(labels), "--verifier", "lexical", "--out", str(cal)]) == 0
    assert "reusing the scores the 5 labels carry" in capsys.readouterr().err
    got = json.loads(cal.read_text())
    assert sorted(got["monitor_scores_unsupported"]) == sorted(r["score"] for r in rows if r["label"] == 0)
    # one label scored by another verifier (another hash): the scores are not all this one's, so it scores them
    monkeypatch.undo()
    rows[1]["verifier_hash"] = "0123456789abcdef"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(labels), "--verifier", "lexical", "--out", str(cal)]) == 0
    assert "scoring 5 labelled citations" in capsys.readouterr().err


def test_a_reattributed_citation_labelled_unsupported_was_not_passed(tmp_path, capsys):
    """The guard moved it away from the cited passage: a label saying the cited passage does not support the
    claim is a catch, not a miss. One verified (labelled unsupported: a miss) and two re-attributed."""
    rows = [{"id": "v", "answer": "Statins lower LDL cholesterol [1].", "passages": PASSAGES},
            {"id": "r1", "answer": "Mitochondria produce ATP [1].", "passages": PASSAGES},
            {"id": "r2", "answer": "Statins lower LDL cholesterol [2].", "passages": PASSAGES}]
    src, out = tmp_path / "answers.jsonl", tmp_path / "guarded.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--echo-input", "--quiet", "--out", str(out)]) == 0
    labels, got = label_all(tmp_path, out, lambda item: "unsupported")
    assert sorted(r["guard_action"] for r in got) == ["reattributed", "reattributed", "verified"]
    capsys.readouterr()
    assert main(["monitor", "--reports", str(out), "--verifier", "lexical", "--labels", str(labels)]) == 0
    assert "labels: 3 unsupported, 1 of them passed by the guard" in capsys.readouterr().err
