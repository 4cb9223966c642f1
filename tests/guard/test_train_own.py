"""``citebound train`` observed (#56, round 47): what reaches the feature encoder, the bootstrap and the adoption
rule (spies that record the call and run the real code), and what the outputs say, worked out by hand from the
training pairs."""
from __future__ import annotations

import json
import re
import time

import pytest

from citebound.cli.main import main
from tests.guard.test_trained import OTHER, TOPICS, labelled

OTHERS = (OTHER, "Rainfall in the valley was above average for the third year in a row.")


def pairs(sources=("a", "b"), n=6):
    """Per claim one supported passage (it restates the claim) and two unsupported ones: 3 pairs, 1 supported."""
    return labelled(n, sources, OTHERS)


def jsonl(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One run with spies on the encoder, the bootstrap and the adoption rule: (out folder, stderr, calls)."""
    import citebound.training.evaluation as ev
    import citebound.training.head as head
    import citebound.training.own as own

    tmp = tmp_path_factory.mktemp("train")
    recs = pairs()
    gold = [{"claim": f"Gold {i}: {TOPICS[i]}.", "passage": f"It is known that {TOPICS[i]}.", "label": 1} for i in range(3)]
    gold += [{"claim": f"Gold {i}: {TOPICS[i]}.", "passage": OTHERS[0], "label": 0} for i in range(3)]
    calls = {"features": [], "bootstrap": [], "adopt": []}
    real_ff, real_boot, real_adopt = head.FrozenFeatures, ev.paired_auc_difference, own.choose_and_adopt

    class SpyFeatures(real_ff):
        def __init__(self, *a, **kw):
            calls["features"].append((a, kw))
            super().__init__(*a, **kw)

    def spy_boot(y, s_new, s_base, clusters, n_boot, seed):
        calls["bootstrap"].append((list(clusters), n_boot, seed))
        return real_boot(y, s_new, s_base, clusters, n_boot, seed)

    def spy_adopt(table, chosen, names, margin):
        calls["adopt"].append((list(names), margin))
        return real_adopt(table, chosen, names, margin)

    mp = pytest.MonkeyPatch()
    mp.setattr(head, "FrozenFeatures", SpyFeatures)
    mp.setattr(ev, "paired_auc_difference", spy_boot)
    mp.setattr(own, "choose_and_adopt", spy_adopt)
    out = tmp / "model"
    import contextlib
    import io

    err = io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stderr(err):
            rc = main(["train", "--input", jsonl(tmp / "p.jsonl", recs), "--eval", f"gold={jsonl(tmp / 'g.jsonl', gold)}",
                       "--out", str(out), "--C", "1,0.1", "--bootstrap", "37", "--margin", "0.2", "--seed", "5",
                       "--quiet"])
    finally:
        mp.undo()
        calls["wall"] = time.perf_counter() - t0
    assert rc == 0, err.getvalue()
    return out, err.getvalue(), calls, gold


def test_the_shipped_encoders_features_come_from_the_graph_the_guard_scores_with(trained):
    _, _, calls, _ = trained
    assert calls["features"] and all(kw["runtime"] == {"runtime": "onnx", "graph": "shipped"}
                                     for _, kw in calls["features"])


def test_the_evaluation_bootstrap_resamples_claims_as_often_as_asked(trained):
    _, _, calls, gold = trained
    # one bootstrap per C for the gold set; each gets the gold pairs' claims as clusters (each claim twice), 37 draws
    assert {n for _, n, _ in calls["bootstrap"]} == {37} and {s for _, _, s in calls["bootstrap"]} == {5}
    assert all(c == [g["claim"] for g in gold] for c, _, _ in calls["bootstrap"])


def test_the_margin_given_reaches_the_adoption_rule_and_the_card(trained):
    out, _, calls, _ = trained
    assert calls["adopt"] == [(["gold"], 0.2)]
    assert "at least +0.20 AUC above it" in (out / "MODEL_CARD.md").read_text()


def test_the_card_counts_supported_pairs_and_the_summary_names_the_chosen_c(trained):
    out, err, _, _ = trained
    card = (out / "MODEL_CARD.md").read_text()
    # 6 claims per source, 3 pairs each (1 supported): 18 pairs, 6 supported; no gold claim is a training claim
    assert "| a | 18 | 6 |" in card and "| b | 18 | 6 |" in card and "| (none matched) | | 0 |" in card
    chosen = json.loads((out / "head.json").read_text())["C"]
    assert f"); C = {chosen:g}; " in err and "0 training pairs removed" in err


def test_another_packaged_encoder_reaches_the_features_as_its_weights_folder_on_torch(tmp_path, monkeypatch):
    """An encoder shipped in another package (``package:lab_encoder``, a package whose ``model/`` holds weights):
    the features get that folder, on the exact torch path (no runtime keys), never the ``package:`` name."""
    import sys

    import citebound.training.head as head
    from citebound.training.own import train_own

    pkg = tmp_path / "lab_encoder"
    (pkg / "model").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    seen = []

    class Stop(Exception):
        pass

    def recording(model_path, **kw):
        seen.append((model_path, kw.get("runtime")))
        raise Stop

    monkeypatch.setattr(head, "FrozenFeatures", recording)
    import pandas as pd

    with pytest.raises(Stop):
        train_own(pd.DataFrame(pairs(("a", "b"), 3)), {}, encoder="package:lab_encoder", grid=[1.0], n_boot=5,
                  seed=0, windowing={"window_chars": 600, "stride": 300, "claim_cap": 600}, progress=False)
    assert seen == [(str(pkg / "model"), None)]


def test_without_an_evaluation_set_the_head_is_not_adopted(tmp_path, capsys):
    out = tmp_path / "m"
    rc = main(["train", "--input", jsonl(tmp_path / "p.jsonl", pairs(("a",), 5)), "--out", str(out), "--C", "1",
               "--folds", "5", "--bootstrap", "10", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert json.loads((out / "head.json").read_text())["adopted"] is False
    assert "does not beat embedding out of domain: no evaluation set given" in err


def test_an_out_that_is_a_file_is_refused_before_any_training(tmp_path, capsys, monkeypatch):
    import citebound.training.head as head

    def no_features(*a, **kw):
        raise AssertionError("training started")

    monkeypatch.setattr(head, "FrozenFeatures", no_features)
    f = tmp_path / "model"
    f.write_text("not a folder")
    rc = main(["train", "--input", jsonl(tmp_path / "p.jsonl", pairs()), "--out", str(f), "--quiet"])
    assert rc == 2 and f"--out {f}: exists and is not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["=gold.jsonl", "gold=", "gold.jsonl"])
def test_an_eval_without_a_name_or_a_file_is_refused(tmp_path, capsys, spec):
    rc = main(["train", "--input", jsonl(tmp_path / "p.jsonl", pairs()), "--eval", spec, "--out", str(tmp_path / "o")])
    assert rc == 2 and f"--eval {spec!r}: expected NAME=FILE" in capsys.readouterr().err


def test_the_cards_costs_are_durations_within_the_runs_wall_time(trained):
    """The card's "## Cost" lists the features' time, the head fits' and the total, each a duration (0 or more,
    at most the whole call's wall time, as rounded to .1 s) and the total at least the other two together."""
    out, _, calls, _ = trained
    cost = (out / "MODEL_CARD.md").read_text().split("## Cost", 1)[1]
    got = {k: float(v) for k, v in re.findall(r"^- (.+): ([0-9.]+) s$", cost, re.M)}
    assert list(got) == ["features of 36 training pairs", "head fits", "total"]
    assert all(0 <= v <= calls["wall"] + 0.05 for v in got.values()), (got, calls["wall"])
    assert got["total"] >= got["features of 36 training pairs"] + got["head fits"] - 0.1
