# Generation stage: cited answers from open models over fixed passages
# (results/generations/{model}/{pipeline}.jsonl), GPU rules declare resources only.


def generator_cfg(name):
    return CFG.generators[source_key(name)]


def generation_inputs(w):
    task = SET_CFG[CFG.generation.task_set]
    inputs = {"tasks": f"{RAW}/{task['files']['answers']['path']}"}
    if generator_cfg(w.model).get("build_tiny"):
        inputs["model"] = generator_cfg(w.model).model
    return inputs


rule tiny_model:
    """Build the tiny random-weight Llama used by smoke runs (no download)."""
    output:
        directory("resources/models/tiny-llama"),
    log:
        f"{RES}/logs/tiny_model.log",
    benchmark:
        f"{RES}/benchmarks/tiny_model.tsv"
    script:
        "../../scripts/tiny_model.py"


rule generate:
    """Answers of one model under one pipeline; resumable (append + skip done ids)."""
    input:
        unpack(generation_inputs),
    output:
        f"{RES}/generations/{{model}}/{{pipeline}}.jsonl",
    params:
        generator=lambda w: config_json(generator_cfg(w.model)),
        pipeline=lambda w: config_json(CFG.pipelines[w.pipeline]),
        max_items=CFG.generation.get("max_items") or CFG.max_items,
    threads: lambda w: int(generator_cfg(w.model).get("threads", 1))
    resources:
        gpu=lambda w: int(generator_cfg(w.model).resources.gpu),
        mem_mb=lambda w: int(generator_cfg(w.model).resources.mem_mb),
        runtime=lambda w: int(generator_cfg(w.model).resources.runtime),
    log:
        f"{RES}/logs/generate/{{model}}/{{pipeline}}.log",
    benchmark:
        f"{RES}/benchmarks/generate/{{model}}/{{pipeline}}.tsv"
    script:
        "../../scripts/generate.py"
