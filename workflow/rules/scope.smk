# Scope control on PubMedQA: support verdicts vs yes/no conclusions.


rule scope:
    input:
        **scored_inputs("scope", [SCOPE_SET]),
    output:
        table=report(f"{RES}/tables/scope.csv", caption="../report/scope.rst", category="8 Scope"),
    log:
        f"{RES}/logs/scope.log",
    benchmark:
        f"{RES}/benchmarks/scope.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(panel=PANEL, n_bootstrap=A.n_bootstrap, seed=A.seed, sets={"scope": [SCOPE_SET]}),
    script:
        "../../scripts/scope.py"
