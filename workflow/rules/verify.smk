# Verify stage: score every pair of a set with one verifier (full-passage
# protocol: 600-char windows at stride 300, max over windows, cached on disk).


rule score:
    """Scores of one base verifier on one set: results/scores/{set}/{verifier}.parquet."""
    input:
        pairs=f"{RES}/data/{{set}}/pairs.parquet",
    output:
        f"{RES}/scores/{{set}}/{{verifier}}.parquet",
    wildcard_constraints:
        verifier=_alt(BASE_VERIFIERS),
    params:
        verifier=verifier_json,
        windowing=slice_json("windowing"),
        cache_dir=CFG.cache_dir,
    threads: 2
    resources:
        gpu=lambda w: verifier_resources(w.verifier, "gpu", 0),
        mem_mb=lambda w: verifier_resources(w.verifier, "mem_mb", 4000),
        runtime=lambda w: verifier_resources(w.verifier, "runtime", 60),
    log:
        f"{RES}/logs/score/{{set}}/{{verifier}}.log",
    benchmark:
        f"{RES}/benchmarks/score/{{set}}/{{verifier}}.tsv"
    script:
        "../../scripts/score.py"


def _stacked_features(w, set_name):
    return scores([set_name], list(CFG.verifiers[w.verifier].features))


rule fit_stacked_verifier:
    """Fit a stacked verifier on the training split of its gold set only."""
    input:
        pairs=lambda w: pairs([CFG.verifiers[w.verifier].train_set]),
        features=lambda w: _stacked_features(w, CFG.verifiers[w.verifier].train_set),
    output:
        f"{RES}/models/{{verifier}}.json",
    wildcard_constraints:
        verifier=_alt(STACKED),
    params:
        verifier=verifier_json,
    log:
        f"{RES}/logs/fit/{{verifier}}.log",
    benchmark:
        f"{RES}/benchmarks/fit/{{verifier}}.tsv"
    script:
        "../../scripts/fit_stacked.py"


rule score_stacked:
    """Apply a fitted stacked verifier to a set's base-verifier scores."""
    input:
        pairs=f"{RES}/data/{{set}}/pairs.parquet",
        model=f"{RES}/models/{{verifier}}.json",
        features=lambda w: _stacked_features(w, w.set),
    output:
        f"{RES}/scores/{{set}}/{{verifier}}.parquet",
    wildcard_constraints:
        verifier=_alt(STACKED),
    params:
        verifier=verifier_json,
    log:
        f"{RES}/logs/score/{{set}}/{{verifier}}.log",
    benchmark:
        f"{RES}/benchmarks/score/{{set}}/{{verifier}}.tsv"
    script:
        "../../scripts/score_stacked.py"
