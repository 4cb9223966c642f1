"""The trained verifier (#25) on every CPU runtime: units/s, the ratio to the exact path (float32
PyTorch eager), the largest score difference and the verdict agreement with the exact path.

Units are real (claim, window) pairs of the lite sets (:func:`verifier_speed.lite_units`: run
``snakemake --cores all --until prepare`` first); the model is the pipeline's trained head
(``results/models/trained``, from ``snakemake --cores all train_verifier``) or ``--model DIR``. The summary
names the fastest path that keeps at least 99.5% of the exact path's verdicts.

    python benchmarks/trained_runtimes.py [--units 1000] [--threads 2] [--model results/models/trained]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from verifier_speed import AGREEMENT_GATE, RUNTIMES, lite_units  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--model", default=str(ROOT / "results" / "models" / "trained"))
    a = ap.parse_args()
    from citebound.verifiers import build_verifier
    from citebound.verifiers.base import judge_chunk

    claims, windows = lite_units(a.units)
    work = Path(tempfile.mkdtemp())
    rows, base = [], None
    for runtime, quantize in RUNTIMES:
        v = build_verifier({"name": "trained", "kind": "trained", "model": a.model, "runtime": runtime,
                            "quantize": quantize, "threads": a.threads}, work / "cache")
        v.judge(claims[:2], windows[:2])  # export and compile once, outside the timing (cached on disk)
        torch.set_num_threads(a.threads)
        step = judge_chunk(v)
        t = time.perf_counter()
        s = np.concatenate([v.judge(claims[i:i + step], windows[i:i + step])[0] for i in range(0, len(claims), step)])
        dt = time.perf_counter() - t
        if base is None:
            base = (s, dt)
        thr = v.threshold
        rows.append({"path": f"{runtime}/{quantize}", "units": len(claims), "units_per_s": len(claims) / dt,
                     "ratio_to_exact": base[1] / dt, "max_abs_delta": float(np.max(np.abs(s - base[0]))),
                     "verdict_agreement": float(np.mean((s >= thr) == (base[0] >= thr)))})
        r = rows[-1]
        print(f"trained {r['path']:16s} {r['units_per_s']:7.1f} units/s  x{r['ratio_to_exact']:4.2f} exact  "
              f"max|d|={r['max_abs_delta']:.2e}  agree={r['verdict_agreement']:.4f}", flush=True)
    out = ROOT / "benchmarks" / "trained_runtimes.csv"
    pd.DataFrame(rows).to_csv(out, index=False)
    ok = [r for r in rows if r["verdict_agreement"] >= AGREEMENT_GATE]
    best = max(ok, key=lambda r: r["units_per_s"])
    print(f"wrote {out}\nfastest path with >= {AGREEMENT_GATE:.1%} verdict agreement: {best['path']} at "
          f"{best['units_per_s']:.1f} units/s = x{best['ratio_to_exact']:.2f} the exact path")
    return 0


if __name__ == "__main__":
    sys.exit(main())
