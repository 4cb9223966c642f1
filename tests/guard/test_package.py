"""The guard as its own product: light imports, its own verifier definitions (read by the study
through Hydra's package search path), one Guard object, and the CLI's stated defaults."""
import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from citebound import definitions
from citebound.cli.common import DEFAULT_RUNTIME
from citebound.cli.main import build_parser, main
from citebound.guarding.guard import Guard, guard_answer
from citebound.scoring.hashing import verifier_hash
from citebound.scoring.loader import PairScorer, VerifierLoadError, load_scorer, verifier_definitions
from citebound.verifiers import MODEL_KINDS, PairScores

HEAVY = ["hydra", "omegaconf", "jsonschema", "torch", "pandas", "snakemake", "matplotlib", "scipy", "transformers"]


def _imported_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    mods = set(json.loads(out.stdout.strip().splitlines()[-1]))
    return [m for m in HEAVY if m in mods]


def test_import_citebound_loads_no_heavy_module():
    assert _imported_after("import citebound") == []


def test_guarding_with_lexical_loads_no_study_or_model_module():
    code = ("import citebound\n"
            "citebound.guard('Cells make ATP [1].', ['Cells make ATP in mitochondria.'], verifier='lexical')\n"
            "import citebound.cli.main, citebound.calibration.files, citebound.guarding.audit_page\n")
    assert _imported_after(code) == []


def test_study_modules_are_not_imported_by_the_core():
    code = ("import citebound, citebound.guarding.guard, citebound.cli.main, citebound.scoring.loader, "
            "citebound.guarding.reattributors\n")
    out = subprocess.run([sys.executable, "-c", code + "import sys; print([m for m in sys.modules "
                          "if m.startswith('citebound.study')])"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_every_study_verifier_is_a_shipped_definition_read_through_hydra():
    from citebound.study.config import compose_config, to_plain

    panel = ["lexical", "embedding", "deberta_nli", "hhem"]
    cfg = compose_config([f"verifier_panel=[{','.join(panel)}]", "datasets=[]", "sources=[]", "model_runtime=null"])
    for name in panel:
        d = definitions.load("verifier", name)
        if d.get("graph") == "shipped":  # the guard's graph inside the wheel is the guard's: the study runs torch
            d = {k: v for k, v in d.items() if k != "graph"} | {"runtime": "torch"}
        assert to_plain(cfg.verifiers[name]) == d
    assert to_plain(cfg.windowing) == definitions.windowing() == {"window_chars": 600, "stride": 300, "claim_cap": 600}
    assert to_plain(cfg.reattributor) == definitions.load("reattributor", "bm25")
    # there is one copy: the study's config tree holds no verifier or re-attributor files
    assert not (ROOT / "config" / "verifier").exists() and not (ROOT / "config" / "reattributor").exists()


def test_load_scorer_takes_the_definitions_defaults_not_an_experiments_runtime():
    # lite's model_runtime (openvino bf16) must not leak into the guard
    scorer = load_scorer("embedding")
    assert (scorer.cfg["runtime"], scorer.cfg["graph"]) == ("onnx", "shipped") and "quantize" not in scorer.cfg
    assert scorer.cfg == definitions.load("verifier", "embedding")
    assert scorer.hash == verifier_hash(definitions.load("verifier", "embedding"))
    # an explicit runtime reaches model verifiers only, and changes the hash
    cfg, needed, _ = verifier_definitions("fitted", runtime={"runtime": "onnx", "quantize": "int8"})
    assert needed["embedding"]["runtime"] == "onnx" and "runtime" not in needed["lexical"]
    assert "runtime" not in cfg
    assert verifier_hash(needed["embedding"]) != verifier_hash(definitions.load("verifier", "embedding"))


def test_cli_help_states_the_true_default_runtime():
    assert DEFAULT_RUNTIME == {"runtime": "torch", "quantize": "none"}
    on_graph = []
    for name in definitions.available("verifier"):
        d = definitions.load("verifier", name)
        if d.get("kind") in MODEL_KINDS:
            if d.get("graph") == "shipped":
                on_graph.append(name)
                assert d["runtime"] == "onnx" and d.get("quantize", "none") == "none", name
                continue
            assert d.get("runtime", "torch") == DEFAULT_RUNTIME["runtime"], name
            assert d.get("quantize", "none") == DEFAULT_RUNTIME["quantize"], name
    assert on_graph == ["embedding", "embedding+contradiction", "trained"]
    guard = next(a for a in build_parser()._subparsers._group_actions[0].choices["guard"]._actions
                 if "--runtime" in a.option_strings)
    assert "onnx on the graph inside the wheel for embedding, embedding+contradiction and trained" in guard.help
    assert "torch (the exact float32 path, the [torch] extra) for the others" in guard.help


def test_unknown_verifier_names_the_nearest_definition(capsys):
    with pytest.raises(VerifierLoadError, match="did you mean embedding"):
        load_scorer("embeding")
    assert main(["guard", "--input", "-", "--verifier", "lexicl"]) == 2
    assert "did you mean lexical" in capsys.readouterr().err


def test_guard_many_equals_guarding_each_answer_alone():
    g = Guard("lexical")
    items = [("Mitochondria produce ATP [1]. Ribosomes make protein [1].",
              ["Mitochondria produce ATP in cells.", "Ribosomes make protein from mRNA."]),
             ("Cats purr [2][1]. Dogs bark [3].", ["Dogs bark at night.", "Cats purr when content."]),
             ("No citations here.", ["A passage."])]
    many = g.guard_many(items)
    for (answer, passages), (text, report) in zip(items, many):
        alone_text, alone = guard_answer(answer, passages, g.scorer, reattribute="bm25", tau=g.tau, guarantee=g.guarantee)
        card = report.to_dict().pop("guarantee_card")  # the Guard's: its monitor counts every call's citations
        # the whole batch: [1], [1] | [2], [1] (the [3] of a two-passage answer is invalid: no score)
        assert card["monitor"]["deployed_scores"] == 4
        def outcome(r):
            return {k: v for k, v in r.to_dict().items() if k != "guarantee_card"}

        assert text == alone_text and outcome(report) == outcome(alone) and alone.guarantee_card == {}
    # the verifier is called twice for the whole batch (verify, then re-attribute), not per answer
    calls = []

    class Counting:
        name = "counting"

        def __call__(self, claims, passages):
            calls.append(len(claims))
            return g.scorer(claims, passages)

    Guard(Counting()).guard_many(items)
    # verify: 2 citations of answer 1 + [2] and [1] of answer 2 ([3] points at no passage) = 4 units;
    # re-attribute: answer 1's failed [1] -> 1 other passage; answer 2's failed [1] -> none (both are
    # cited in that sentence); its invalid [3] -> both passages: 1 + 0 + 2 = 3
    assert calls == [4, 3]


def test_guard_object_with_calibration_checks_the_verifier(tmp_path):
    cal = {"format": "citebound-calibration/1", "tau": 0.5, "alpha": 0.1, "verifier": "embedding", "verifier_hash": "0" * 16,
           "n_unsupported": 20}
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(cal))
    with pytest.raises(ValueError, match="embedding"):
        Guard("lexical", calibration=str(p))


def test_stacked_combine_is_the_pipelines_rule(tmp_path):
    model = {"features": ["lexical", "embedding"], "coef": [2.0, -1.0], "intercept": 0.5}
    mp = tmp_path / "fitted.json"
    mp.write_text(json.dumps(model))
    cfg = definitions.load("verifier", "fitted")
    scorer = PairScorer(cfg, {}, definitions.windowing(), model_path=mp)
    lex = PairScores(np.array([0.5, np.nan, 1.0]), np.array([False, False, True]), np.array([2, -1, 0]),
                     np.array([3, 0, 1]), ["", "empty_passage", ""], n_units=4, n_cached=1)
    emb = PairScores(np.array([0.25, 0.75, np.nan]), np.array([False, True, False]), np.array([1, 0, -1]),
                     np.array([3, 1, 0]), ["", "", ""], n_units=5, n_cached=2)
    ps = scorer.combine([lex, emb])
    # sigmoid(2*0.5 - 0.25 + 0.5) = sigmoid(1.25); the others miss a feature
    assert ps.score[0] == pytest.approx(1 / (1 + np.exp(-1.25)))
    assert np.isnan(ps.score[1]) and np.isnan(ps.score[2])
    assert ps.verdict.tolist() == [True, False, False]  # threshold 0.5 from the definition
    assert ps.best_window.tolist() == [2, -1, 0] and ps.n_windows.tolist() == [3, 0, 1]  # the first base's
    assert ps.reason == ["", "empty_passage", "missing_feature"]
    assert (ps.n_units, ps.n_cached) == (9, 3)  # every base's units were judged (or read from its cache)
    with pytest.raises(ValueError, match="needs 2 base outcomes"):
        scorer.combine([lex])


def test_definitions_are_package_data_of_the_wheel():
    files = sorted(p.relative_to(definitions.ROOT).as_posix() for p in definitions.ROOT.rglob("*.yaml"))
    assert "verifier/embedding.yaml" in files and "reattributor/bm25.yaml" in files and "windowing/default.yaml" in files
    text = (ROOT / "pyproject.toml").read_text()
    assert '"citebound.definitions" = ["*/*.yaml"]' in text
