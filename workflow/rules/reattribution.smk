# Re-attribution on the attribution gold: BM25 proposes, the verifier disposes.


rule rank_with_generator:
    """A generation model as re-attribution ranker: P(Yes) that a candidate passage supports the sentence."""
    input:
        pairs=f"{RES}/data/{CAL_SET}/pairs.parquet",
        model=lambda w: [generator_cfg(w.model).model] if generator_cfg(w.model).get("build_tiny") else [],
    output:
        f"{RES}/reattribution/generator/{{model}}.parquet",
    log:
        f"{RES}/logs/rank_with_generator/{{model}}.log",
    benchmark:
        f"{RES}/benchmarks/rank_with_generator/{{model}}.tsv"
    conda:
        "../../envs/vllm.yaml"
    threads: lambda w: int(generator_cfg(w.model).get("threads", 1))
    resources:
        gpu=lambda w: int(generator_cfg(w.model).resources.gpu),
        mem_mb=lambda w: int(generator_cfg(w.model).resources.mem_mb),
        runtime=lambda w: int(generator_cfg(w.model).resources.runtime),
    params:
        generator=lambda w: config_json(generator_cfg(w.model)),
        prompt=lambda w: CFG.generator_rank_prompt,
    script:
        "../../scripts/rank_with_generator.py"


rule reattribution:
    input:
        **scored_inputs("cal", [CAL_SET]),
        **scored_inputs("val", [VAL_SET]),
        generator_scores=[f"{RES}/reattribution/generator/{m}.parquet" for m in CFG.generator_rankers],
    output:
        table=report(
            f"{RES}/tables/reattribution.csv", caption="../report/reattribution.rst", category="7 Re-attribution"
        ),
        mcnemar=f"{RES}/tables/reattribution_mcnemar.csv",
        strata=report(
            f"{RES}/tables/reattribution_strata.csv",
            caption="../report/reattribution.rst",
            category="7 Re-attribution",
        ),
        overlap=f"{RES}/tables/scifact_lexical_overlap.csv",
        png=report(f"{FIG}/reattribution.png", caption="../report/reattribution.rst", category="7 Re-attribution"),
    log:
        f"{RES}/logs/reattribution.log",
    benchmark:
        f"{RES}/benchmarks/reattribution.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(panel=PANEL, seed=A.seed, reattributor=CFG.reattributor, sets={"cal": [CAL_SET], "val": [VAL_SET]}),
    script:
        "../../scripts/reattribution.py"
