"""The config schema: every shipped config validates, every schema key is used, bad values and
unknown keys fail before the DAG with the key and the nearest valid one."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from jsonschema import Draft202012Validator

from citebound.study.config import ConfigError, compose_config, to_plain
from citebound.study.schema import SchemaError, check_cli_keys, load_schema, validate_config

CONFIG = ROOT / "config"


def group_dir(group: str) -> Path:
    """Where a group's files live: the guard's definitions (verifier, reattributor, windowing) or config/."""
    from citebound import definitions

    return definitions.ROOT / group if group in definitions.GROUPS else CONFIG / group

GROUP_DEF = {"verifier": "verifier", "generator": "generator", "pipeline": "pipeline", "dataset": "set",
             "source/released": "set"}


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONFIG / "experiment").glob("*.yaml")))
def test_every_experiment_composes_and_validates(experiment):
    validate_config(to_plain(compose_config([f"experiment={experiment}"])))


@pytest.mark.parametrize("group,path", [(g, p) for g in GROUP_DEF for p in sorted(group_dir(g).glob("*.yaml"))],
                         ids=lambda x: "/".join(str(x).split("/")[-2:]))
def test_every_group_file_matches_its_schema(group, path):
    schema = load_schema()
    sub = {"$defs": schema["$defs"], **schema["$defs"][GROUP_DEF[group]]}
    errors = list(Draft202012Validator(sub).iter_errors(yaml.safe_load(path.read_text())))
    assert not errors, [e.message for e in errors]


def test_every_schema_key_is_used_somewhere_in_config():
    schema = load_schema()
    used: dict[str, set] = {d: set() for d in GROUP_DEF.values()}
    for group, d in GROUP_DEF.items():
        for p in group_dir(group).glob("*.yaml"):
            used[d] |= set(yaml.safe_load(p.read_text()))
    for d, keys in used.items():
        stale = set(schema["$defs"][d]["properties"]) - keys
        assert not stale, f"{d}: schema keys no config file uses: {stale}"
    root = yaml.safe_load((CONFIG / "config.yaml").read_text())
    root["windowing"] = yaml.safe_load((group_dir("windowing") / "default.yaml").read_text())
    for section in ("windowing", "generation", "analysis"):
        assert set(schema["properties"][section]["properties"]) == set(root[section]), section
    conformal = yaml.safe_load((CONFIG / "conformal" / "default.yaml").read_text())
    assert set(schema["properties"]["conformal"]["properties"]) == set(conformal)
    # every key of the root file is in the schema and every schema key has a description
    assert set(root) - {"defaults", "hydra"} <= set(schema["properties"])
    for section in ("windowing", "generation", "analysis", "conformal"):
        for key, spec in schema["properties"][section]["properties"].items():
            assert spec.get("description"), f"{section}.{key} has no description"


@pytest.mark.parametrize("overrides,message", [
    (["+analysis.n_bootsrap=10"], "unknown config key 'analysis.n_bootsrap' (did you mean 'analysis.n_bootstrap'?)"),
    (["+verifiers.embedding.batch_sise=3"],
     "unknown config key 'verifiers.embedding.batch_sise' (did you mean 'verifiers.embedding.batch_size'?)"),
    (["+windowng={window_chars: 5}"], "unknown config key 'windowng' (did you mean 'windowing'?)"),
    (["conformal.targets=[0.9,1.5]"], "config key 'conformal.targets.1': 1.5 is greater than or equal to the maximum of 1"),
    (["conformal.pac_delta=0"], "config key 'conformal.pac_delta': 0 is less than or equal to the minimum of 0"),
    (["analysis.n_bootstrap=0"], "config key 'analysis.n_bootstrap': 0 is less than the minimum of 1"),
    (["analysis.n_bootstrap=many"], "config key 'analysis.n_bootstrap': 'many' is not of type 'integer'"),
    # two problems: the first (by key) is named, and one more is counted
    (["analysis.n_bootstrap=0", "windowing.stride=0"],
     "config key 'analysis.n_bootstrap': 0 is less than the minimum of 1 (and 1 more)"),
    (["windowing.stride=600"], "windowing.stride (600) must be smaller than windowing.window_chars (600)"),
    (["windowing.stride=0"], "config key 'windowing.stride': 0 is less than the minimum of 1"),
    (["analysis.guard_verifier=lexcal"], "analysis.guard_verifier='lexcal' is not in verifier_panel"),
    (["experiment=paper", "analysis.guard_verifier=openscholar_posthoc"], "gives binary scores"),
])
def test_bad_values_and_unknown_keys_are_refused(overrides, message):
    with pytest.raises(ConfigError) as e:
        compose_config(overrides)
    assert message in str(e.value)


def test_analysis_sets_must_be_selected_datasets():
    from citebound.study.schema import check_analysis_sets
    check_analysis_sets(to_plain(compose_config([])))
    with pytest.raises(SchemaError, match=r"analysis.calibration_set='gold/attribution' is not a selected dataset "
                                          r"\(did you mean 'gold/attribution_gold'\?\)"):
        check_analysis_sets(to_plain(compose_config(["analysis.calibration_set=gold/attribution"])))


def test_lite_model_runtime_reaches_encoders_and_leaves_seq2seq_verifiers_on_torch():
    """lite's model_runtime (openvino, bf16): every encoder verifier takes both keys; AttrScore and
    MiniCheck-Flan-T5 (seq2seq, torch only) take the quantisation and keep torch."""
    panel = "verifier_panel=[lexical,embedding,deberta_nli,hhem,minicheck_roberta,minicheck_deberta,attrscore," \
            "minicheck_flant5]"
    v = to_plain(compose_config(["experiment=lite", panel]).verifiers)
    for name in ("embedding", "deberta_nli", "hhem", "minicheck_roberta", "minicheck_deberta"):
        assert (v[name].get("runtime"), v[name].get("quantize")) == ("openvino", "bf16"), name
    for name in ("attrscore", "minicheck_flant5"):
        assert v[name].get("runtime", "torch") == "torch" and v[name].get("quantize") == "bf16", name
    assert "runtime" not in v["lexical"] and "quantize" not in v["lexical"]
    paper = to_plain(compose_config(["experiment=paper", panel]).verifiers)
    assert all(paper[n].get("runtime", "torch") == "torch" and paper[n].get("quantize", "none") == "none"
               for n in ("embedding", "attrscore", "hhem", "minicheck_flant5"))


def test_score_first_sets_must_be_sets_of_the_experiment():
    from citebound.study.schema import check_score_first
    sets = {"gold/attribution_gold": {}, "released/sqa_qwen3": {}}
    check_score_first(["released/sqa_qwen3"], sets)
    check_score_first([], sets)
    with pytest.raises(SchemaError, match=r"score_first: 'released/sqa_qwen' is not a set of this experiment "
                                          r"\(did you mean 'released/sqa_qwen3'\?\)"):
        check_score_first(["released/sqa_qwen3", "released/sqa_qwen"], sets)


def test_cli_config_keys():
    check_cli_keys({"experiment": "paper", "overrides": "[]"})
    with pytest.raises(SchemaError, match=r"unknown --config key 'experimnt' \(did you mean 'experiment'\?\)"):
        check_cli_keys({"experimnt": "paper"})


@pytest.mark.slow  # two Snakemake dry runs (11 s on 2 cores): the DAG's start-up, as the slow tier's DAG runs
def test_misspelt_config_key_fails_before_the_dag(tmp_path):
    # the two dry runs side by side (each is mostly Snakemake's start-up, one core each)
    runs = [subprocess.Popen([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
                              str(tmp_path / name), "-n", "--config", config], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
            for name, config in (("key", "experimnt=paper"), ("override", "overrides=[\"+analysis.n_bootsrap=10\"]"))]
    (out_key, _), (out_override, _) = (p.communicate(timeout=300) for p in runs)
    assert runs[0].returncode != 0
    assert "unknown --config key 'experimnt' (did you mean 'experiment'?)" in out_key
    assert "Job stats" not in out_key
    assert runs[1].returncode != 0 and "did you mean 'analysis.n_bootstrap'?" in out_override


def test_rule_settings_and_scored_sets_split_by_set_name(tmp_path):
    import json
    from types import SimpleNamespace

    import pandas as pd

    from citebound.study.workflow_helpers import eval_split, scored_sets
    files = {}
    for s in ("A", "B"):
        pd.DataFrame({"pair_id": [f"{s}1", f"{s}2"], "label": [1.0, 0.0]}).to_parquet(tmp_path / f"{s}.parquet")
        for v in ("x", "y"):
            pd.DataFrame({"pair_id": [f"{s}1", f"{s}2"], "verifier": v, "score": [0.1, 0.9] if s == "A" else [0.3, 0.4],
                          "verdict": [False, True], "best_window": 0, "n_windows": 1, "reason": "", "binary": False}
                         ).to_parquet(tmp_path / f"{s}_{v}.parquet")
            files.setdefault("scores", []).append(str(tmp_path / f"{s}_{v}.parquet"))
    sm = SimpleNamespace(params=SimpleNamespace(settings=json.dumps({"sets": {"src": ["A", "B"]}})),
                         input=SimpleNamespace(src_pairs=[str(tmp_path / "A.parquet"), str(tmp_path / "B.parquet")],
                                               src_scores=files["scores"]))
    out = scored_sets(sm, "src")
    assert list(out) == ["A", "B"]
    assert out["A"]["score_y"].tolist() == [0.1, 0.9] and out["B"]["score_x"].tolist() == [0.3, 0.4]
    sm.input.src_scores = files["scores"][:3]
    with pytest.raises(ValueError, match="src: 2 sets but 2 pair and 3 score files"):
        scored_sets(sm, "src")
    df = pd.DataFrame({"split": ["fit", "eval", "eval"], "v": [1, 2, 3]})
    assert eval_split(df)["v"].tolist() == [2, 3]
    assert eval_split(df[df.split == "fit"])["v"].tolist() == [1]  # no eval split: all rows


def test_a_suggestion_only_for_a_near_key():
    from citebound.study.schema import nearest

    keys = ["validation_set", "calibration_set", "scope_set"]
    assert nearest("calibraton_set", keys) == " (did you mean 'calibration_set'?)"
    assert nearest("zzz", keys) == ""  # nothing near: no guess
    assert nearest("anything", []) == ""
