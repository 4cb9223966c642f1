# Worked examples: the guard run on real released answers (re-attributed and flagged).


rule worked_examples:
    input:
        **scored_inputs("cal", [CAL_SET]),
        answers=(
            f"{RAW}/{SET_CFG['released/expert']['files']['answers']['path']}" if "released/expert" in SET_CFG else []
        ),
        models=[f"{RES}/models/{v}.json" for v in STACKED],
    output:
        table=report(
            f"{RES}/tables/worked_examples.csv", caption="../report/examples.rst", category="9 Worked examples"
        ),
    log:
        f"{RES}/logs/worked_examples.log",
    benchmark:
        f"{RES}/benchmarks/worked_examples.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            worked_examples=A.worked_examples,
            budget_target=CFG.conformal.budget_target,
            guard_verifier=GUARD_VERIFIER,
            windowing=CFG.windowing,
            reattributor=CFG.reattributor,
            sets={"cal": [CAL_SET]},
        ),
        verifiers=lambda w: verifier_bundle(GUARD_VERIFIER) if GUARD_VERIFIER else "{}",
        cache_dir=CFG.cache_dir,
    script:
        "../../scripts/worked_examples.py"


# The guard's shipped default calibrations: each CPU verifier, on the guard's own default runtime (the
# definition's, not an experiment's model_runtime), calibrated on the expert attribution gold's evaluation
# split. Not part of `all`: run `snakemake default_calibrations` when a verifier changes, then copy
# results/calibrations/*.json into citebound/calibrations/ (tests/guard/test_defaults.py checks they match).
rule default_calibrations:
    input:
        pairs=pairs([CAL_SET]),
    output:
        calibrations=[f"{RES}/calibrations/{v}.json" for v in DEFAULT_CAL_VERIFIERS],
    log:
        f"{RES}/logs/default_calibrations.log",
    benchmark:
        f"{RES}/benchmarks/default_calibrations.tsv"
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            verifiers=DEFAULT_CAL_VERIFIERS,
            alpha=round(1 - CFG.conformal.budget_target, 10),
            delta=0.1,
            calibration_set=CAL_SET,
        ),
        cache_dir=CFG.cache_dir,
    script:
        "../../scripts/default_calibrations.py"
