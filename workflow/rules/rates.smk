# Unsupported-citation rate per verifier x source, item-bootstrap CIs.


rule rates:
    input:
        **scored_inputs("src", SOURCE_SETS),
        validation=f"{RES}/tables/validation.csv",
    output:
        table=report(f"{RES}/tables/unsupported_rates.csv", caption="../report/rates.rst", category="2 Rates"),
        png=report(f"{FIG}/unsupported_rates.png", caption="../report/rates.rst", category="2 Rates"),
        pdf=f"{FIG}/unsupported_rates.pdf",
    log:
        f"{RES}/logs/rates.log",
    benchmark:
        f"{RES}/benchmarks/rates.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            panel=PANEL, validation_set=VAL_SET, n_bootstrap=A.n_bootstrap, seed=A.seed, sets={"src": SOURCE_SETS}
        ),
    script:
        "../../scripts/rates.py"
