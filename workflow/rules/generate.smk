# Generation stage: cited answers from open models over fixed passages
# (results/generations/{model}/{pipeline}.jsonl), GPU rules declare resources only.


rule tiny_model:
    """Build the tiny random-weight Llama used by smoke runs (no download)."""
    output:
        directory("resources/models/tiny-llama"),
    log:
        f"{RES}/logs/tiny_model.log",
    benchmark:
        f"{RES}/benchmarks/tiny_model.tsv"
    conda:
        "../../envs/cpu.yaml"
    script:
        "../../scripts/tiny_model.py"


rule generate:
    """Answers of one model under one pipeline; resumable (append + skip done ids)."""
    input:
        unpack(generation_inputs),
    output:
        f"{RES}/generations/{{model}}/{{pipeline}}.jsonl",
    log:
        f"{RES}/logs/generate/{{model}}/{{pipeline}}.log",
    benchmark:
        f"{RES}/benchmarks/generate/{{model}}/{{pipeline}}.tsv"
    conda:
        "../../envs/vllm.yaml"
    threads: lambda w: int(generator_cfg(w.model).get("threads", 1))
    resources:
        gpu=lambda w: int(generator_cfg(w.model).resources.gpu),
        slurm_partition=lambda w: slurm_partition(int(generator_cfg(w.model).resources.gpu)),
        mem_mb=lambda w: int(generator_cfg(w.model).resources.mem_mb),
        runtime=lambda w: int(generator_cfg(w.model).resources.runtime),
    params:
        generator=lambda w: config_json(generator_cfg(w.model)),
        pipeline=lambda w: config_json(CFG.pipelines[w.pipeline]),
        max_items=CFG.generation.get("max_items") or CFG.max_items,
    script:
        "../../scripts/generate.py"
