# Verify stage: score every pair of a set with one verifier (full-passage
# protocol: 600-char windows at stride 300, max over windows, cached on disk).


rule score:
    """Scores of one base verifier on one set: results/scores/{set}/{verifier}.parquet."""
    input:
        pairs=f"{RES}/data/{{set}}/pairs.parquet",
        model=lambda w: trained_model(w.verifier),
    output:
        f"{RES}/scores/{{set}}/{{verifier}}.parquet",
    log:
        f"{RES}/logs/score/{{set}}/{{verifier}}.log",
    benchmark:
        f"{RES}/benchmarks/score/{{set}}/{{verifier}}.tsv"
    wildcard_constraints:
        verifier=alt(BASE_VERIFIERS),
    priority: lambda w: score_priority(w.set)
    conda:
        lambda w: verifier_env(w.verifier)
    threads: lambda w: verifier_resources(w.verifier, "threads", 2)
    resources:
        gpu=lambda w: verifier_resources(w.verifier, "gpu", 0),
        mem_mb=lambda w: verifier_resources(w.verifier, "mem_mb", 4000),
        runtime=lambda w: verifier_resources(w.verifier, "runtime", 60),
        slurm_partition=lambda w: slurm_partition(verifier_resources(w.verifier, "gpu", 0)),
    params:
        verifier=verifier_json,
        windowing=slice_json("windowing"),
        cache_dir=CFG.cache_dir,
    script:
        "../../scripts/score.py"


rule fit_stacked_verifier:
    """Fit a stacked verifier on the training split of its gold set only."""
    input:
        pairs=lambda w: pairs([CFG.verifiers[w.verifier].train_set]),
        features=lambda w: stacked_features(w, CFG.verifiers[w.verifier].train_set),
    output:
        f"{RES}/models/{{verifier}}.json",
    log:
        f"{RES}/logs/fit/{{verifier}}.log",
    benchmark:
        f"{RES}/benchmarks/fit/{{verifier}}.tsv"
    wildcard_constraints:
        verifier=alt(STACKED),
    priority: STACKED_PRIORITY  # short, and every stacked score job waits for it
    conda:
        "../../envs/cpu.yaml"
    params:
        verifier=verifier_json,
    script:
        "../../scripts/fit_stacked.py"


rule score_stacked:
    """Apply a fitted stacked verifier to a set's base-verifier scores."""
    input:
        pairs=f"{RES}/data/{{set}}/pairs.parquet",
        model=f"{RES}/models/{{verifier}}.json",
        features=lambda w: stacked_features(w, w.set),
    output:
        f"{RES}/scores/{{set}}/{{verifier}}.parquet",
    log:
        f"{RES}/logs/score/{{set}}/{{verifier}}.log",
    benchmark:
        f"{RES}/benchmarks/score/{{set}}/{{verifier}}.tsv"
    wildcard_constraints:
        verifier=alt(STACKED),
    priority: STACKED_PRIORITY  # seconds each; run as soon as the fit is done rather than at the end
    conda:
        "../../envs/cpu.yaml"
    params:
        verifier=verifier_json,
    script:
        "../../scripts/score_stacked.py"
