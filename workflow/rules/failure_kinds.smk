# What kind of failure an unsupported citation is (misattributed vs ungrounded), and ALCE-style
# citation precision/recall per source x verifier.


rule proposals:
    """The re-attributor's proposals for one source's cited sentences, as a pair table that the
    score rule scores like any set (verifier-independent, so built once per source)."""
    input:
        unpack(raw_inputs),
        pairs=f"{RES}/data/{{set}}/pairs.parquet",
    output:
        pairs=f"{RES}/data/{{set}}/proposals/pairs.parquet",
        sample=f"{RES}/data/{{set}}/proposals/sample.json",
    log:
        f"{RES}/logs/proposals/{{set}}.log",
    benchmark:
        f"{RES}/benchmarks/proposals/{{set}}.tsv"
    wildcard_constraints:
        set=alt(SOURCE_SETS),
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            claim_cap=CFG.windowing.claim_cap,
            max_items=CFG.max_items,
            items=A.failure_kinds_items,
            seed=A.seed,
            reattributor=CFG.reattributor,
        ),
        set_cfg=set_json,
    script:
        "../../scripts/proposals.py"


rule failure_kinds:
    input:
        **scored_inputs("src", SOURCE_SETS),
        **scored_inputs("prop", PROPOSAL_SETS),
        **scored_inputs("cal", [CAL_SET]),
        samples=[f"{RES}/data/{s}/proposals/sample.json" for s in SOURCE_SETS],
    output:
        table=report(
            f"{RES}/tables/failure_kinds.csv", caption="../report/failure_kinds.rst", category="10 Failure kinds"
        ),
        gold=report(
            f"{RES}/tables/failure_kinds_gold.csv",
            caption="../report/failure_kinds.rst",
            category="10 Failure kinds",
        ),
        png=report(f"{FIG}/failure_kinds.png", caption="../report/failure_kinds.rst", category="10 Failure kinds"),
    log:
        f"{RES}/logs/failure_kinds.log",
    benchmark:
        f"{RES}/benchmarks/failure_kinds.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            panel=PANEL,
            n_bootstrap=A.n_bootstrap,
            seed=A.seed,
            reattributor=CFG.reattributor,
            sets={"src": SOURCE_SETS, "prop": PROPOSAL_SETS, "cal": [CAL_SET]},
        ),
    script:
        "../../scripts/failure_kinds.py"


rule citation_pr:
    input:
        **scored_inputs("src", SOURCE_SETS),
    output:
        table=report(f"{RES}/tables/citation_pr.csv", caption="../report/citation_pr.rst", category="11 Citation P/R"),
        png=report(f"{FIG}/citation_pr.png", caption="../report/citation_pr.rst", category="11 Citation P/R"),
    log:
        f"{RES}/logs/citation_pr.log",
    benchmark:
        f"{RES}/benchmarks/citation_pr.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(panel=PANEL, n_bootstrap=A.n_bootstrap, seed=A.seed, sets={"src": SOURCE_SETS}),
    script:
        "../../scripts/citation_pr.py"
