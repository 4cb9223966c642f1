# Verifier validation on SciFact gold: recall, specificity, kappa, AUC, frontier.


rule validate:
    input:
        **scored_inputs("val", VALIDATE_SETS, PANEL + list(A.validation_extra)),
    output:
        table=report(f"{RES}/tables/validation.csv", caption="../report/validation.rst", category="1 Validation"),
        frontier=report(f"{RES}/tables/frontier.csv", caption="../report/validation.rst", category="1 Validation"),
        png=report(f"{FIG}/validation.png", caption="../report/validation.rst", category="1 Validation"),
        pdf=f"{FIG}/validation.pdf",
    log:
        f"{RES}/logs/validate.log",
    benchmark:
        f"{RES}/benchmarks/validate.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            panel=PANEL,
            validation_extra=A.validation_extra,
            validation_set=VAL_SET,
            n_bootstrap=A.n_bootstrap,
            seed=A.seed,
            sets={"val": VALIDATE_SETS},
        ),
    script:
        "../../scripts/validate.py"
