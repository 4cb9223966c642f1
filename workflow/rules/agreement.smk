# Pairwise verifier agreement on a fixed, recorded sample of deployment pairs.


rule agreement:
    input:
        **scored_inputs("src", SOURCE_SETS),
    output:
        table=report(f"{RES}/tables/agreement.csv", caption="../report/agreement.rst", category="3 Agreement"),
        sample=f"{RES}/tables/agreement_sample.csv",
        png=report(f"{FIG}/agreement.png", caption="../report/agreement.rst", category="3 Agreement"),
        pdf=f"{FIG}/agreement.pdf",
    params:
        **analysis_params(),
    log:
        f"{RES}/logs/agreement.log",
    benchmark:
        f"{RES}/benchmarks/agreement.tsv"
    script:
        "../../scripts/agreement.py"
