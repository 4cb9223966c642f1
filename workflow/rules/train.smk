# A CPU verifier trained on the staged claim-evidence sets, selected on transfer (#25).


rule train_verifier:
    """The frozen-feature head: leave-one-source-out and expert-gold evaluation, model card, decision."""
    input:
        train=[f"{RAW}/{f.path}" for f in TRAIN.files.values()],
        dedupe_pairs=pairs([s for s in SCORED_SETS if s.startswith("gold/")]),
        dedupe_texts=[f"{RAW}/{f.path}" for f in TRAIN.dedupe_files.values()],
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
            train_verifier=train_settings(),
            dedupe_texts=list(TRAIN.dedupe_files),
            files=TRAIN.files,
            windowing=CFG.windowing,
            n_bootstrap=A.n_bootstrap,
            validation_set=VAL_SET,
            calibration_set=CAL_SET,
            dedupe_sets=[s for s in SCORED_SETS if s.startswith("gold/")],
            calibration_licence=calibration_licence(),
        ),
    script:
        "../../scripts/train_verifier.py"


rule train_network:
    """A network design (cross-encoder, contrastive bi-encoder): fine-tuned, selected on transfer, saved."""
    input:
        train=[f"{RAW}/{f.path}" for f in TRAIN.files.values()],
        dedupe_pairs=pairs([s for s in SCORED_SETS if s.startswith("gold/")]),
        dedupe_texts=[f"{RAW}/{f.path}" for f in TRAIN.dedupe_files.values()],
    output:
        table=f"{RES}/tables/train_verifier_{{design}}.csv",
        curve=f"{RES}/tables/train_verifier_{{design}}_curve.csv",
        model=directory(f"{RES}/models/trained_{{design}}"),
    log:
        f"{RES}/logs/train_network/{{design}}.log",
    benchmark:
        f"{RES}/benchmarks/train_network/{{design}}.tsv"
    wildcard_constraints:
        design="cross_encoder|bi_encoder",
    conda:
        "../../envs/cpu.yaml"
    threads: 2
    params:
        settings=lambda w: network_settings(w.design),
    script:
        "../../scripts/train_network.py"


rule verifier_designs:
    """Every design at its selected setting; the expert gold's choice and the adoption decision."""
    input:
        head=f"{RES}/tables/train_verifier.csv",
        networks=expand(f"{RES}/tables/train_verifier_{{design}}.csv", design=TRAIN.networks.designs),
        curves=expand(f"{RES}/tables/train_verifier_{{design}}_curve.csv", design=TRAIN.networks.designs),
        models=expand(f"{RES}/models/trained_{{design}}", design=TRAIN.networks.designs),
    output:
        table=report(
            f"{RES}/tables/verifier_designs.csv",
            caption="../report/verifier_designs.rst",
            category="12 Trained verifier",
        ),
        decision=f"{RES}/models/verifier_designs.json",
        card=f"{RES}/models/VERIFIER_DESIGNS.md",
        png=report(
            f"{FIG}/verifier_designs.png", caption="../report/verifier_designs.rst", category="12 Trained verifier"
        ),
    log:
        f"{RES}/logs/verifier_designs.log",
    conda:
        "../../envs/cpu.yaml"
    params:
        **settings(
            adopt_margin=TRAIN.adopt_margin,
            train_verifier={k: to_plain(v) for k, v in TRAIN.items() if k not in ("files", "build", "dedupe_files")},
        ),
    script:
        "../../scripts/verifier_designs.py"


rule train_contradiction:
    """The contradiction check: a support-vs-refute head on frozen MiniLM features, a veto on embedding (#47)."""
    input:
        train=[f"{RAW}/{f.path}" for f in TRAIN.files.values()],
        dedupe_pairs=pairs([s for s in SCORED_SETS if s.startswith("gold/")]),
        dedupe_texts=[f"{RAW}/{f.path}" for f in TRAIN.dedupe_files.values()],
    output:
        table=report(
            f"{RES}/tables/contradiction.csv", caption="../report/contradiction.rst", category="12 Trained verifier"
        ),
        catch=report(
            f"{RES}/tables/contradiction_catch.csv",
            caption="../report/contradiction.rst",
            category="12 Trained verifier",
        ),
        onnx=f"{RES}/models/contradiction/head.onnx",
        head=f"{RES}/models/contradiction/head.json",
        card=f"{RES}/models/contradiction/MODEL_CARD.md",
    log:
        f"{RES}/logs/train_contradiction.log",
    benchmark:
        f"{RES}/benchmarks/train_contradiction.tsv"
    conda:
        "../../envs/cpu.yaml"
    threads: 2
    params:
        **settings(
            train_verifier=train_settings(),
            contradiction=to_plain(CFG.contradiction),
            dedupe_texts=list(TRAIN.dedupe_files),
            files=TRAIN.files,
            windowing=CFG.windowing,
            n_bootstrap=A.n_bootstrap,
            validation_set=VAL_SET,
            calibration_set=CAL_SET,
            dedupe_sets=[s for s in SCORED_SETS if s.startswith("gold/")],
            calibration_licence=calibration_licence(),
        ),
    script:
        "../../scripts/train_contradiction.py"
