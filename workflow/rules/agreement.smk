# Pairwise verifier agreement on a fixed, recorded sample of deployment pairs.


rule agreement:
    input:
        **scored_inputs("src", SOURCE_SETS),
    output:
        table=report(f"{RES}/tables/agreement.csv", caption="../report/agreement.rst", category="3 Agreement"),
        sample=f"{RES}/tables/agreement_sample.csv",
        png=report(f"{FIG}/agreement.png", caption="../report/agreement.rst", category="3 Agreement"),
        pdf=f"{FIG}/agreement.pdf",
    log:
        f"{RES}/logs/agreement.log",
    benchmark:
        f"{RES}/benchmarks/agreement.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            panel=PANEL,
            agreement_sample=A.agreement_sample,
            n_bootstrap=A.n_bootstrap,
            seed=A.seed,
            sets={"src": SOURCE_SETS},
        ),
    script:
        "../../scripts/agreement.py"
