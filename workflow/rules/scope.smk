# Scope control on PubMedQA: support verdicts vs yes/no conclusions.


rule scope:
    input:
        **scored_inputs("scope", [SCOPE_SET]),
    output:
        table=report(f"{RES}/tables/scope.csv", caption="../report/scope.rst", category="8 Scope"),
    params:
        **analysis_params(),
    log:
        f"{RES}/logs/scope.log",
    benchmark:
        f"{RES}/benchmarks/scope.tsv"
    script:
        "../../scripts/scope.py"
