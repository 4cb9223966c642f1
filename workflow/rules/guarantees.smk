# The guard's guarantees as a deployment tests them: two-sided Learn-then-Test over calibration draws,
# the certified false-flag rate, the drift monitor's false alarms and delay, per-group vs pooled, the
# label-shift robust alarm at other supported shares, and the label test under batched labels.


rule guarantees:
    input:
        **scored_inputs("cal", [CAL_SET]),
        **scored_inputs("hard", [HARD_SET]),
    output:
        violations=report(
            f"{RES}/tables/guarantees_ltt.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        certified=report(
            f"{RES}/tables/guarantees_certified.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        monitor=report(
            f"{RES}/tables/guarantees_monitor.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        groups=report(
            f"{RES}/tables/guarantees_groups.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        alarm=report(
            f"{RES}/tables/guarantees_alarm.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        labels=report(
            f"{RES}/tables/guarantees_labels.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        precision=report(
            f"{RES}/tables/guarantees_precision.csv", caption="../report/guarantees.rst", category="4 Conformal guard"
        ),
        png=report(f"{FIG}/guarantees.png", caption="../report/guarantees.rst", category="4 Conformal guard"),
    log:
        f"{RES}/logs/guarantees.log",
    benchmark:
        f"{RES}/benchmarks/guarantees.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            panel=PANEL,
            seed=A.seed,
            guarantees=CFG.conformal.guarantees,
            group_col=CFG.conformal.mondrian_group,
            sets={"cal": [CAL_SET], "hard": [HARD_SET]},
        ),
    script:
        "../../scripts/guarantees.py"
