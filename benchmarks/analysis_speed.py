"""Time of the analysis stage's heavy blocks on real scores.

Conformal block: B random calibration/test splits x every calibration size x
3 targets (+ the per-target coverage with PAC), on the released QASA AttrScore
scores (1000) and, when a lite run exists, on the lite verifiers' attribution
gold scores. Bootstrap block: 2000 resamples of validation metrics, rates and
agreement. Then the whole analysis stage of the lite run, timed through
Snakemake's own benchmark files. Target: analysis stage < 60 s on 2 cores.

    python benchmarks/analysis_speed.py [results/benchmarks]
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from citebound.study import analysis  # noqa: E402

MIRROR = Path(os.environ.get("CITEBOUND_DATA_MIRROR", ROOT.parent / "shared" / "data"))


def frozen() -> pd.DataFrame:
    d = json.loads((MIRROR / "citation_guard/qasa_calibration_scores.json").read_text())
    s = d["supported_p_attr_scores"] + d["unsupported_p_attr_scores"]
    return pd.DataFrame({"score_attr": s, "label": [1] * 500 + [0] * 500, "group": "qasa"})


def main() -> int:
    cal = {"attr": frozen()}
    t0 = time.perf_counter()
    analysis.coverage_table(cal, [0.9, 0.94, 0.98], 1000, 0.5, 0.1, 0)
    analysis.calibration_size_ablation(cal, [25, 50, 100, 200, 400], [0.9, 0.94, 0.98], 1000, 0)
    t_conf = time.perf_counter() - t0
    print(f"conformal block (B=1000 x 5 sizes x 3 targets + coverage/PAC, n=500 negatives): {t_conf:.2f} s")

    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({"label": rng.integers(0, 2, n).astype(float), "item_id": rng.integers(0, 200, n).astype(str)})
    for v in ("a", "b", "c"):
        df[f"score_{v}"] = rng.random(n)
        df[f"verdict_{v}"] = df[f"score_{v}"] > 0.5
    t0 = time.perf_counter()
    analysis.validation_table(df, ["a", "b", "c"], 2000, 0)
    analysis.unsupported_rates({"s1": df, "s2": df}, ["a", "b", "c"], 2000, 0)
    analysis.agreement_table(df.head(300), ["a", "b", "c"], 2000, 0)
    t_boot = time.perf_counter() - t0
    print(f"bootstrap block (2000 resamples: validation n={n}, rates 2 sources, agreement n=300, 3 verifiers): "
          f"{t_boot:.2f} s")

    bench = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results" / "benchmarks"
    # every rule of the analysis stage (the rules that read scores and write tables)
    rules = ["validate", "rates", "agreement", "conformal", "reattribution", "scope", "worked_examples"]
    missing = [r for r in rules if not (bench / f"{r}.tsv").exists()]
    if not missing:
        secs = {r: float(pd.read_csv(bench / f"{r}.tsv", sep="\t")["s"].iloc[-1]) for r in rules}
        total = sum(secs.values())
        print("lite analysis stage (from Snakemake benchmark files): "
              + ", ".join(f"{k} {v:.1f}s" for k, v in secs.items()) + f"; total {total:.1f} s (target < 60 s)")
    else:
        print(f"no benchmark file for {missing} under {bench}: run `snakemake --cores all` first "
              "(or pass the run's results/benchmarks folder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
