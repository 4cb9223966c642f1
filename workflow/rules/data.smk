# Data stage: download (or mirror) -> prepare pair tables -> data summary.


rule download:
    """Fetch one raw file from upstream, or copy it from $CITEBOUND_DATA_MIRROR; verify sha256.

    The mirror is read from the environment, not a param: where a file came from
    does not change it (the sha256 is checked either way), so it triggers no rerun.
    """
    output:
        f"{RAW}/{{raw_path}}",
    log:
        f"{RES}/logs/download/{{raw_path}}.log",
    benchmark:
        f"{RES}/benchmarks/download/{{raw_path}}.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        spec=lambda w: config_json(RAW_FILES[w.raw_path]),
    script:
        "../../scripts/download.py"


rule prepare:
    """Normalise one gold set or deployment source into the pair-table schema."""
    input:
        unpack(raw_inputs),
    output:
        pairs=f"{RES}/data/{{set}}/pairs.parquet",
        skipped=f"{RES}/data/{{set}}/skipped.csv",
        stats=f"{RES}/data/{{set}}/stats.json",
    log:
        f"{RES}/logs/prepare/{{set}}.log",
    benchmark:
        f"{RES}/benchmarks/prepare/{{set}}.tsv"
    wildcard_constraints:
        set=alt(SET_CFG),
    priority: lambda w: score_priority(w.set)
    conda:
        "../../envs/cpu.yaml"
    params:
        set_cfg=set_json,
        claim_cap=CFG.windowing.claim_cap,
        max_items=CFG.max_items,
    script:
        "../../scripts/prepare_set.py"


rule data_summary:
    """Per dataset/source: items, sentences, cited sentences, pairs and every skip by reason."""
    input:
        [f"{RES}/data/{s}/stats.json" for s in SET_CFG],
    output:
        report(
            f"{RES}/tables/data_summary.csv",
            caption="../report/data_summary.rst",
            category="Data",
        ),
    log:
        f"{RES}/logs/data_summary.log",
    benchmark:
        f"{RES}/benchmarks/data_summary.tsv"
    conda:
        "../../envs/cpu.yaml"
    script:
        "../../scripts/data_summary.py"
