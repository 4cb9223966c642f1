"""AttrScore scoring throughput: citebound's batched scorer vs a naive per-pair script.

Naive reference (the way a per-pair script is usually written): for each pair,
one full forward pass per label string (encoder recomputed each time) plus a
separate ``generate`` call for the verdict. citebound: batches of pairs, the
encoder run once per input, the decoder teacher-forced on each label reusing it.
Both run on the same locally built T5 (random weights, flan-T5-like shape) on
real (claim, window) pairs from the SciFact gold set, and their P(Attributable)
must agree (float32, to 1e-4). Prints pairs/s, the ratio, and each mode's peak RSS.

    python benchmarks/verifier_throughput.py [--pairs 64] [--model DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_pairs(n: int) -> tuple[list[str], list[str]]:
    from citebound.scoring.io import read_records
    from citebound.verifiers import make_windows

    mirror = Path(os.environ.get("CITEBOUND_DATA_MIRROR", ROOT.parent / "shared" / "data"))
    recs = read_records(mirror / "scholarqabench/single_paper_tasks/scifact_test.jsonl")
    claims, wins = [], []
    for r in recs:
        for w in make_windows(r["gold_ctx"][0]["text"]):
            claims.append(r["input"])
            wins.append(w)
    return claims[:n], wins[:n]


def build_model(path: Path, texts: list[str]) -> None:
    import torch
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    from citebound.study import tiny

    tiny.build_tiny_t5(path, texts)  # tokenizer + small model; replaced by a wider one below
    tok = PreTrainedTokenizerFast.from_pretrained(path)
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=len(tok), d_model=256, d_kv=32, d_ff=1024, num_layers=4, num_decoder_layers=4,
                   num_heads=8, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
                   feed_forward_proj="gated-gelu", tie_word_embeddings=False)
    T5ForConditionalGeneration(cfg).eval().save_pretrained(path)


def run_mode(mode: str, model: str, n: int) -> dict:
    import numpy as np
    import torch
    import yaml

    from citebound.verifiers.attrscore import AttrScoreVerifier

    torch.set_num_threads(os.cpu_count() or 1)
    cfg = yaml.safe_load((ROOT / "citebound/definitions/verifier/attrscore.yaml").read_text())
    cfg.update(model=model, revision=None, device="cpu", batch_size=16)
    v = AttrScoreVerifier(cfg)
    claims, wins = load_pairs(n)
    t0 = time.perf_counter()
    if mode == "batched":
        scores, verdicts = v.judge(claims, wins)
        verdicts = verdicts.tolist()
    else:
        scores, verdicts = [], []
        with torch.inference_mode():
            for c, w in zip(claims, wins):
                enc = v.tokenizer(v.prompt(c, w), return_tensors="pt", truncation=True, max_length=v.max_input_tokens)
                ll = []
                for ids in v.label_ids:
                    out = v.model(**enc, labels=ids[None])
                    ll.append(-out.loss.item() * len(ids))
                ll = np.array(ll)
                p = np.exp(ll - ll.max())
                scores.append(float(p[0] / p.sum()))
                gen = v.model.generate(**enc, max_new_tokens=4, do_sample=False)
                verdicts.append(v.tokenizer.decode(gen[0], skip_special_tokens=True).strip().startswith(v.labels[0]))
    dt = time.perf_counter() - t0
    return {"mode": mode, "pairs": len(claims), "seconds": dt, "pairs_per_s": len(claims) / dt,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "scores": [float(s) for s in scores]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--model", help="a local seq2seq model dir (default: build a T5 locally)")
    ap.add_argument("--mode", choices=["batched", "naive"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.mode:
        print(json.dumps(run_mode(a.mode, a.model, a.pairs)))
        return 0
    model = a.model
    if model is None:
        model = str(Path(tempfile.mkdtemp()) / "t5")
        claims, wins = load_pairs(a.pairs)
        build_model(Path(model), claims + wins)
    res = {}
    for mode in ("naive", "batched"):  # separate processes: separate peak memory
        out = subprocess.run([sys.executable, __file__, "--mode", mode, "--model", model, "--pairs", str(a.pairs)],
                             capture_output=True, text=True, check=True)
        res[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    import numpy as np
    diff = float(np.max(np.abs(np.array(res["naive"]["scores"]) - np.array(res["batched"]["scores"]))))
    ratio = res["batched"]["pairs_per_s"] / res["naive"]["pairs_per_s"]
    print(f"naive   : {res['naive']['pairs_per_s']:8.2f} pairs/s  peak RSS {res['naive']['peak_rss_mb']:.0f} MB")
    print(f"batched : {res['batched']['pairs_per_s']:8.2f} pairs/s  peak RSS {res['batched']['peak_rss_mb']:.0f} MB")
    print(f"ratio (batched / naive): {ratio:.2f}x   (target >= 5x)   max |P diff| = {diff:.2e}")
    return 0 if diff < 1e-4 else 1  # float32 batched vs single GEMMs differ in summation order


if __name__ == "__main__":
    sys.exit(main())
