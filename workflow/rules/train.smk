# A CPU verifier trained on the staged claim-evidence sets, selected on transfer (#25).


rule train_verifier:
    """The frozen-feature head: leave-one-source-out and expert-gold evaluation, model card, decision."""
    input:
        train=[f"{RAW}/{f.path}" for f in TRAIN.files.values()],
        dedupe_pairs=pairs([s for s in SCORED_SETS if s.startswith("gold/")]),
    output:
        table=report(
            f"{RES}/tables/train_verifier.csv", caption="../report/train_verifier.rst", category="12 Trained verifier"
        ),
        dedupe=f"{RES}/tables/train_verifier_dedupe.csv",
        model=f"{RES}/models/trained/head.json",
        card=f"{RES}/models/trained/MODEL_CARD.md",
        png=report(f"{FIG}/train_verifier.png", caption="../report/train_verifier.rst", category="12 Trained verifier"),
    log:
        f"{RES}/logs/train_verifier.log",
    benchmark:
        f"{RES}/benchmarks/train_verifier.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: 2
    params:
        **settings(
            train_verifier={k: to_plain(v) for k, v in TRAIN.items() if k not in ("files", "build")},
            files=TRAIN.files,
            windowing=CFG.windowing,
            n_bootstrap=A.n_bootstrap,
            validation_set=VAL_SET,
            calibration_set=CAL_SET,
            dedupe_sets=[s for s in SCORED_SETS if s.startswith("gold/")],
        ),
    script:
        "../../scripts/train_verifier.py"
