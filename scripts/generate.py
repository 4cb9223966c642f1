"""Rule generate: one model x one pipeline over the fixed generation tasks."""
import time

from citebound.scoring.llm_backends import build_backend, resolved_revision
from citebound.study.generation import generate_file, load_tasks
from citebound.study.workflow_helpers import param_json, start

if __name__ == "__main__":  # vLLM may spawn worker processes
    sm = snakemake  # noqa: F821
    log = start(sm)
    gen, pipe = param_json(sm, "generator"), param_json(sm, "pipeline")
    tasks = load_tasks(sm.input.tasks, sm.params.max_items)
    t0 = time.time()
    backend = build_backend(gen)
    meta = {"model": gen["model"], "revision": resolved_revision(gen["model"], gen.get("revision")),
            "revision_requested": gen.get("revision"), "backend": backend.name}
    try:
        stats = generate_file(backend, pipe, tasks, sm.output[0], meta, batch_size=int(gen.get("batch_size", 8)))
    finally:
        backend.close()
    log.info("%s/%s: %s in %.1fs", gen["name"], pipe["name"], stats, time.time() - t0)
