"""citebound calibrate's refusals that no earlier test chose (#56): options that contradict, a score that is not a
finite number, scores outside the grid, labels from two samples. Each one line naming what to change; the values
beside each refusal calibrate."""
from __future__ import annotations

import json

import pytest

from citebound.cli.main import main


def scores_file(tmp_path, rows=None):
    f = tmp_path / "s.jsonl"
    rows = rows or [{"score": s / 40, "label": int(s % 3 == 0)} for s in range(40)]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


@pytest.mark.parametrize("argv,why", [
    (["--alpha", "1"], "--alpha must be in (0, 1), got 1.0"),
    (["--delta", "0"], "--delta must be in (0, 1), got 0.0"),
    (["--beta", "1"], "--beta must be in (0, 1), got 1.0"),
    (["--precision", "0.1"], "--precision Q needs --supported-share-min P"),
    (["--supported-share-min", "0.5"], "--precision Q needs --supported-share-min P"),
    (["--precision", "0.1", "--supported-share-min", "0.5", "--beta", "0.2"], "give --precision Q or --beta B, not both"),
    (["--ltt-method", "holm"], "--ltt-method holm is only for --beta"),
    (["--grid", "0,1,11"], "--grid is only for --beta or --precision"),
    (["--accept-refuted-share"], "--accept-refuted-share is only for --precision"),
    (["--verifier-id", "mine"], "give --verifier or --verifier-id, not both"),
    (["--beta", "0.2", "--grid", "0.1,1,11"], "scores range 0..0.975, outside the grid 0.1..1: give --grid LO,HI,N"),
    (["--beta", "0.2", "--grid", "0.5,0.5,11"], "--grid 0.5,0.5,11: LO and HI must be finite numbers with LO < HI"),
])
def test_calibrate_refuses_in_one_line(tmp_path, capsys, argv, why):
    f = scores_file(tmp_path)
    assert main(["calibrate", "--scores", str(f), "--verifier", "lexical", *argv]) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [["--beta", "0.6", "--grid", "0,0.975,40"], ["--ltt-method", "holm", "--beta", "0.6"]])
def test_the_values_beside_the_refusals_calibrate(tmp_path, capsys, argv):
    f = scores_file(tmp_path)
    assert main(["calibrate", "--scores", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json"), *argv]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["alpha"] == 0.1


def test_scores_needs_a_verifier_and_labels_no_verifier_id(tmp_path, capsys):
    f = scores_file(tmp_path)
    assert main(["calibrate", "--scores", str(f)]) == 2
    assert "--scores needs --verifier NAME" in capsys.readouterr().err
    assert main(["calibrate", "--scores", str(f), "--labels", str(f), "--verifier", "lexical"]) == 2
    assert "give exactly one of --scores (frozen scores) or --labels (claims to score)" in capsys.readouterr().err
    assert main(["calibrate", "--labels", str(f), "--verifier-id", "mine"]) == 2
    assert "use --verifier, not --verifier-id" in capsys.readouterr().err


@pytest.mark.parametrize("bad,why", [("NaN", "not usable JSON (a non-finite number (NaN)"), ('"0.5"', "expected a numeric 'score'"),
                                     ("true", "expected a numeric 'score'"),
                                     ("1e999", "not usable JSON (a number out of range (1e999)")])
def test_a_score_that_is_not_a_finite_number_names_its_line(tmp_path, capsys, bad, why):
    f = tmp_path / "s.jsonl"
    f.write_text('{"score": 0.1, "label": 0}\n{"score": ' + bad + ', "label": 1}\n')
    assert main(["calibrate", "--scores", str(f), "--verifier", "lexical"]) == 2
    assert f"{f}:2: {why}" in capsys.readouterr().err


def test_labels_from_two_samples_are_refused(tmp_path, capsys):
    rows = [{"claim": "a b", "passage": "a b", "label": i % 2, "sample_seed": 1 + (i == 3), "sample_size": 4,
             "verifier": "lexical"} for i in range(4)]
    f = tmp_path / "l.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical"]) == 2
    assert "labels from more than one sample (seeds [1, 2], sizes [4])" in capsys.readouterr().err


@pytest.mark.parametrize("n,ok", [(10_001, True), (10_002, False), (2, True), (1, False)])
def test_the_grid_takes_two_to_10001_thresholds(tmp_path, capsys, n, ok):
    f = scores_file(tmp_path)
    rc = main(["calibrate", "--scores", str(f), "--verifier", "lexical", "--beta", "0.6", "--grid", f"0,1,{n}",
               "--out", str(tmp_path / "c.json")])
    err = capsys.readouterr().err
    assert rc == (0 if ok else 2), err
    assert (f"--grid 0,1,{n}: N must be 2..10001 thresholds" in err) is not ok
    assert (tmp_path / "c.json").exists() is ok


def test_a_label_samples_cant_tell_and_unlabelled_citations_are_counted_apart(tmp_path, capsys):
    """Sample of 10: 6 labelled 0/1, 2 can't-tell (no label), 1 can't-tell that still carries a label (it counts
    as labelled), 1 never labelled (absent): labelled = 7 + 2 = 9, not_labelled = 10 - 9 = 1."""
    meta = {"sample_seed": 7, "sample_size": 10, "verifier": "lexical", "labeller": "ann"}
    rows = [{"claim": "statins lower ldl", "passage": "statins lower ldl in adults", "label": 1, **meta}] * 3
    rows += [{"claim": "statins cure colds", "passage": "aspirin thins blood", "label": 0, **meta}] * 3
    rows += [{"claim": "x y", "passage": "x y", "label": None, "judgement": "cant_tell", **meta}] * 2
    rows += [{"claim": "aspirin thins blood", "passage": "aspirin thins blood", "label": 1, "judgement": "cant_tell",
              **meta}]
    f = tmp_path / "l.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json")]) == 0
    cal = json.loads((tmp_path / "c.json").read_text())
    assert (cal["n_unsupported"], cal["n_supported"]) == (3, 4)
    assert cal["sample"] == {"seed": 7, "size": 10, "labelled": 9, "cant_tell": 2, "not_labelled": 1,
                             "labellers": ["ann"]}
    assert "2 can't-tell and 1 unlabelled citations of the 10 sampled are left out" in capsys.readouterr().err


def test_labels_reuse_carried_scores_only_when_every_record_carries_this_verifiers(tmp_path, capsys):
    """Two of three records carry a score under the shipped lexical verifier's hash, one carries none: all three are
    scored again (lexical: the share of the claim's terms in the passage), never a carried score used."""
    from citebound.calibrations import shipped

    want = shipped("lexical")["verifier_hash"]
    rows = [{"claim": "statins lower ldl", "passage": "statins lower ldl", "label": 1, "score": 0.123,
             "verifier_hash": want},
            {"claim": "statins cure colds", "passage": "aspirin thins blood", "label": 0, "score": 0.456,
             "verifier_hash": want},
            {"claim": "statins cure colds", "passage": "statins thin blood", "label": 0}]
    f = tmp_path / "l.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json")]) == 0
    assert "scoring 3 labelled citations with lexical" in capsys.readouterr().err
    scores = json.loads((tmp_path / "c.json").read_text())["monitor_scores"]
    assert 0.123 not in scores and 0.456 not in scores and len(scores) == 3
    rows[2].update(score=0.789, verifier_hash=want)
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json")]) == 0
    assert "reusing the scores the 3 labels carry" in capsys.readouterr().err
    assert sorted(json.loads((tmp_path / "c.json").read_text())["monitor_scores"]) == [0.123, 0.456, 0.789]


def test_the_deployed_line_counts_a_score_equal_to_tau_as_flagged():
    """Pass iff score > tau: of 0.1, 0.5, 0.5, 0.9 at tau 0.5, three are flagged (75.0%)."""
    from citebound.cli.calibrate import deployed_line

    summary = {"alpha": 0.1, "tau": 0.4, "pac": {"tau": 0.5, "delta": 0.1, "guarantee": "g"}}
    assert deployed_line(summary, [0.1, 0.5, 0.5, 0.9]) == (
        "tau in force (pac) = 0.5, flagging 75.0% of the labelled citations; conformal tau 0.4 (not deployed)\n"
        "  guarantee: g")


@pytest.mark.parametrize("label", ["1.0", "0.0", "true", "2", '"1"', "null"])
def test_a_label_other_than_the_integers_0_and_1_names_its_line(tmp_path, capsys, label):
    f = tmp_path / "s.jsonl"
    f.write_text('{"score": 0.1, "label": 0}\n{"score": 0.7, "label": ' + label + '}\n')
    assert main(["calibrate", "--scores", str(f), "--verifier", "lexical"]) == 2
    assert f"{f}:2: expected 'label' 0 (unsupported) or 1 (supported)" in capsys.readouterr().err


@pytest.mark.parametrize("pair", ['"claim": "Statins lower LDL.", "passage": 5', '"claim": 5, "passage": "Statins."',
                                  '"passage": "Statins."'])
def test_a_labels_record_missing_its_claim_or_passage_text_names_its_line(tmp_path, capsys, pair):
    """--labels: each record needs both texts; either one that is not a string (the other fine) names the line."""
    f = tmp_path / "l.jsonl"
    f.write_text('{"claim": "A.", "passage": "A.", "label": 0}\n{' + pair + ', "label": 1}\n')
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical"]) == 2
    assert f"{f}:2: expected 'claim' and 'passage' strings" in capsys.readouterr().err


def test_a_sample_with_unlabelled_citations_and_no_cant_tell_ones_is_warned_of(tmp_path, capsys):
    """Sample of 8, 6 labelled, none can't-tell: 2 left out, and the warning says so."""
    meta = {"sample_seed": 3, "sample_size": 8, "verifier": "lexical", "labeller": "ann"}
    rows = [{"claim": "statins lower ldl", "passage": "statins lower ldl in adults", "label": 1, **meta}] * 3
    rows += [{"claim": "statins cure colds", "passage": "aspirin thins blood", "label": 0, **meta}] * 3
    f = tmp_path / "l.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json")]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["sample"]["not_labelled"] == 2
    assert "0 can't-tell and 2 unlabelled citations of the 8 sampled are left out" in capsys.readouterr().err


def test_a_labelled_pair_the_verifier_cannot_score_names_its_line(tmp_path, capsys):
    """A verifier gives an empty claim no score (NaN, 'missing_claim'): calibrating on it would be calibrating on
    nothing."""
    rows = [{"claim": "statins lower ldl", "passage": "statins lower ldl", "label": 1},
            {"claim": "", "passage": "statins cure colds", "label": 0}]
    f = tmp_path / "l.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["calibrate", "--labels", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json")]) == 2
    assert f"{f}:2: verifier 'lexical' gave no score for this pair" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


def test_the_warnings_are_the_files_once_not_each_groups(tmp_path, capsys):
    """Two groups of 150 (75 unsupported each: enough for their own tau at alpha = delta = 0.1) and two ungrouped
    records: one warning (the ungrouped), at the top only."""
    rows = [{"score": k / 300, "label": int(k % 2), "group": "ab"[k % 4 // 2]} for k in range(300)]
    rows += [{"score": 0.5, "label": 0}, {"score": 0.9, "label": 1}]
    f = scores_file(tmp_path, rows)
    assert main(["calibrate", "--scores", str(f), "--verifier", "lexical", "--out", str(tmp_path / "c.json")]) == 0
    cal = json.loads((tmp_path / "c.json").read_text())
    assert sorted(cal["groups"]) == ["a", "b"] and not any("fallback" in g for g in cal["groups"].values())
    assert all("warnings" not in g for g in cal["groups"].values())
    assert any(w.startswith("2 of 302 labelled citations carry no 'group'") for w in cal["warnings"])
