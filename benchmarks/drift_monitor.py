"""The drift monitor on lite's gold scores (after `snakemake --cores all`): its false-alarm rate on
exchangeable streams and its detection delay on the transfer setting, and the certified false-flag rate
a 90% catch costs (two-sided Learn-then-Test) for each CPU verifier.

- false alarms: B random half-splits of attribution_gold's evaluation split; the monitor's reference is
  one half, its stream the other (shuffled). Ville's inequality bounds the alarm rate by delta.
- delay: the reference is the whole evaluation split (as the shipped calibration), the stream the
  human-refuted SciFact citations (the `transfer` table's hard set, where the catch rate falls), shuffled
  B times; citations until the alarm.
- certified beta: the smallest beta (0.01 steps) at which calibrate_two_sided certifies some tau at
  alpha = 0.1, delta = 0.1 (Bonferroni over a 201-point grid) on the evaluation split.

    python benchmarks/drift_monitor.py --B 200
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from citebound.calibration.ltt import calibrate_two_sided, default_grid
from citebound.calibration.monitor import DriftMonitor


def scores(setname: str, verifier: str, split: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    p = pd.read_parquet(f"results/data/gold/{setname}/pairs.parquet")
    if split:
        p = p[p.split == split]
    d = p.dropna(subset=["label"]).merge(pd.read_parquet(f"results/scores/gold/{setname}/{verifier}.parquet"),
                                         on="pair_id")
    d = d[np.isfinite(d.score)]
    return d.score.to_numpy(), d.label.astype(int).to_numpy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--B", type=int, default=200)
    ap.add_argument("--delta", type=float, default=0.1)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    for v in ("lexical", "embedding", "fitted"):
        s, y = scores("attribution_gold", v, "eval")
        alarms = 0
        for b in range(a.B):
            idx = rng.permutation(len(s))
            m = DriftMonitor(s[idx[:len(s) // 2]], delta=a.delta, seed=b)
            m.update(s[idx[len(s) // 2:]])
            alarms += m.state == "suspect"
        hs, hy = scores("scifact_gold", v)
        delays = []
        for b in range(a.B):
            m = DriftMonitor(s, delta=a.delta, seed=b)
            m.update(rng.permutation(hs))
            delays.append(m.alarm_at if m.alarm_at else np.inf)
        d = np.asarray(delays, float)
        hit = d[np.isfinite(d)]
        beta = next((round(float(b), 2) for b in np.arange(0.01, 1.0, 0.01)
                     if calibrate_two_sided(s, y, 0.1, float(b), a.delta, default_grid(size=201)).certified), None)
        print(f"{v}: false alarms {alarms}/{a.B} ({alarms / a.B:.1%}; delta {a.delta}); transfer stream of {len(hs)} "
              f"SciFact citations ({int((hy == 0).sum())} refuted): alarmed in {len(hit) / a.B:.0%}, median delay "
              f"{np.median(hit) if len(hit) else float('nan'):.0f}, p90 {np.percentile(hit, 90) if len(hit) else float('nan'):.0f} "
              f"citations; certified beta at alpha 0.1: {beta}", flush=True)


if __name__ == "__main__":
    main()
