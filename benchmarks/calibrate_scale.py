"""Calibration at lab scale (#52 item 8): ``citebound calibrate --scores`` over 1,000,000 unsupported labels (and
100,000 supported), timed end to end as a user runs it (reading the file included), beside 200,000 and
600,000; and the PAC rank it deploys checked against an exhaustive search with SciPy's binomial cdf.

    python benchmarks/calibrate_scale.py [--sizes 200000,600000,1000000]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def exhaustive_pac_rank(n: int, alpha: float, delta: float) -> int:
    from scipy.stats import binom

    ks = np.arange(1, n + 2)
    return int(ks[binom.cdf(ks - 1, n, 1 - alpha) >= 1 - delta][0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200000,600000,1000000")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'unsupported':>12} {'seconds':>8} {'tau in force':>14}  PAC rank = exhaustive (SciPy)")
    with tempfile.TemporaryDirectory() as d:
        for n in (int(x) for x in args.sizes.split(",")):
            path = Path(d) / f"s{n}.jsonl"
            neg, pos = rng.beta(2, 5, n), rng.beta(5, 2, 100_000)
            with open(path, "w") as f:
                f.writelines(f'{{"score":{s:.5f},"label":0}}\n' for s in neg)
                f.writelines(f'{{"score":{s:.5f},"label":1}}\n' for s in pos)
            out = Path(d) / f"c{n}.json"
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "citebound.cli.main", "calibrate", "--scores", str(path), "--verifier",
                            "lexical", "--out", str(out)], check=True, capture_output=True)
            took = time.perf_counter() - t
            cal = json.loads(out.read_text())
            from citebound.calibration.conformal import pac_rank

            same = pac_rank(n, 0.1, 0.1) == exhaustive_pac_rank(n, 0.1, 0.1)
            scores = np.sort(np.array([json.loads(x)["score"] for x in path.read_text().splitlines()[:n]]))
            tau_ok = cal["pac"]["tau"] == scores[exhaustive_pac_rank(n, 0.1, 0.1) - 1]
            print(f"{n:>12,d} {took:>8.1f} {cal['pac']['tau']:>14.6f}  {same and tau_ok}")


if __name__ == "__main__":
    main()
