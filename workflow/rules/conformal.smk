# Split-conformal guard: coverage, calibration-size ablation, review budget,
# transfer to hard negatives, PAC and Mondrian variants.


rule conformal:
    input:
        **scored_inputs("cal", [CAL_SET]),
        **scored_inputs("hard", [HARD_SET]),
        **scored_inputs("src", SOURCE_SETS),
        frozen_pairs=pairs([FROZEN_SET]),
    output:
        coverage=report(
            f"{RES}/tables/conformal_coverage.csv", caption="../report/conformal.rst", category="4 Conformal guard"
        ),
        ablation=report(
            f"{RES}/tables/conformal_ablation.csv", caption="../report/conformal.rst", category="4 Conformal guard"
        ),
        budget=report(f"{RES}/tables/review_budget.csv", caption="../report/budget.rst", category="4 Conformal guard"),
        curve=f"{RES}/tables/budget_curve.csv",
        transfer=report(f"{RES}/tables/transfer.csv", caption="../report/transfer.rst", category="5 Transfer"),
        mondrian=report(f"{RES}/tables/mondrian.csv", caption="../report/beyond.rst", category="6 Beyond the paper"),
        pac=report(f"{RES}/tables/pac_ranks.csv", caption="../report/beyond.rst", category="6 Beyond the paper"),
        cov_png=report(f"{FIG}/conformal_coverage.png", caption="../report/conformal.rst", category="4 Conformal guard"),
        abl_png=report(f"{FIG}/conformal_ablation.png", caption="../report/conformal.rst", category="4 Conformal guard"),
        budget_png=report(f"{FIG}/review_budget.png", caption="../report/budget.rst", category="4 Conformal guard"),
        transfer_png=report(f"{FIG}/transfer.png", caption="../report/transfer.rst", category="5 Transfer"),
    log:
        f"{RES}/logs/conformal.log",
    benchmark:
        f"{RES}/benchmarks/conformal.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            panel=PANEL,
            seed=A.seed,
            conformal={k: to_plain(v) for k, v in CFG.conformal.items() if k != "guarantees"},
            sets={"cal": [CAL_SET], "hard": [HARD_SET], "src": SOURCE_SETS},
        ),
    script:
        "../../scripts/conformal.py"
