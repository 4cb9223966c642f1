# Re-attribution on the attribution gold: BM25 proposes, the verifier disposes.


rule reattribution:
    input:
        **scored_inputs("cal", [CAL_SET]),
        **scored_inputs("val", [VAL_SET]),
    output:
        table=report(f"{RES}/tables/reattribution.csv", caption="../report/reattribution.rst", category="7 Re-attribution"),
        mcnemar=f"{RES}/tables/reattribution_mcnemar.csv",
        strata=report(f"{RES}/tables/reattribution_strata.csv", caption="../report/reattribution.rst", category="7 Re-attribution"),
        overlap=f"{RES}/tables/scifact_lexical_overlap.csv",
        png=report(f"{FIG}/reattribution.png", caption="../report/reattribution.rst", category="7 Re-attribution"),
    params:
        **analysis_params(),
        reattributor=slice_json("reattributor"),
    log:
        f"{RES}/logs/reattribution.log",
    benchmark:
        f"{RES}/benchmarks/reattribution.tsv"
    script:
        "../../scripts/reattribution.py"
