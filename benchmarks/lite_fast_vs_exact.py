"""Two lite runs, one per verifier arithmetic, compared: per verifier, max |delta score| and verdict
agreement over every scored pair of every set; then every headline number (unsupported rates per
source, validation recall / specificity / kappa / AUC) of the fast run against the exact run's value and
95% CI. Also each run's wall time from Snakemake's benchmark files (sum of job times and the span).

    python benchmarks/lite_fast_vs_exact.py EXACT_RESULTS_DIR FAST_RESULTS_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd


def score_agreement(exact: Path, fast: Path) -> pd.DataFrame:
    rows = []
    for f in sorted((fast / "scores").rglob("*.parquet")):
        e = exact / "scores" / f.relative_to(fast / "scores")
        if not e.is_file():
            continue
        a = pd.read_parquet(e).set_index("pair_id")
        b = pd.read_parquet(f).set_index("pair_id").reindex(a.index)
        ok = a["score"].notna() & b["score"].notna()
        rows.append({"set": str(f.parent.relative_to(fast / "scores")), "verifier": f.stem, "pairs": len(a),
                     "max_abs_delta": float((a["score"][ok] - b["score"][ok]).abs().max()) if ok.any() else 0.0,
                     "verdicts_equal": int((a["verdict"] == b["verdict"]).sum())})
    df = pd.DataFrame(rows)
    per = df.groupby("verifier").agg(pairs=("pairs", "sum"), verdicts_equal=("verdicts_equal", "sum"),
                                     max_abs_delta=("max_abs_delta", "max"))
    per["verdict_agreement"] = per["verdicts_equal"] / per["pairs"]
    return per


def headline(exact: Path, fast: Path) -> pd.DataFrame:
    rows = []
    r_e, r_f = (pd.read_csv(d / "tables" / "unsupported_rates.csv") for d in (exact, fast))
    key = [c for c in ("verifier", "source") if c in r_e.columns]
    m = r_e.merge(r_f, on=key, suffixes=("_exact", "_fast"))
    for _, r in m.iterrows():
        rows.append({"table": "unsupported_rates", "row": " / ".join(str(r[k]) for k in key), "metric": "rate",
                     "exact": r["unsupported_rate_exact"], "ci_low": r["ci_low_exact"], "ci_high": r["ci_high_exact"],
                     "fast": r["unsupported_rate_fast"]})
    v_e, v_f = (pd.read_csv(d / "tables" / "validation.csv") for d in (exact, fast))
    m = v_e.merge(v_f, on=["set", "verifier"], suffixes=("_exact", "_fast"))
    for _, r in m.iterrows():
        for metric in ("recall_supported", "specificity", "kappa", "roc_auc"):
            if f"{metric}_exact" in r:
                rows.append({"table": "validation", "row": f"{r['set']} / {r['verifier']}", "metric": metric,
                             "exact": r[f"{metric}_exact"], "ci_low": r.get(f"{metric}_ci_low_exact", np.nan),
                             "ci_high": r.get(f"{metric}_ci_high_exact", np.nan), "fast": r[f"{metric}_fast"]})
    df = pd.DataFrame(rows)
    df["inside_exact_ci"] = (df["fast"] >= df["ci_low"] - 1e-12) & (df["fast"] <= df["ci_high"] + 1e-12)
    return df


def wall(results: Path) -> tuple[float, int]:
    total, n = 0.0, 0
    for f in (results / "benchmarks").rglob("*.tsv"):
        t = pd.read_csv(f, sep="\t")
        total += float(t["s"].iloc[-1])
        n += 1
    return total, n


def main() -> int:
    exact, fast = (Path(p) for p in sys.argv[1:3])
    pd.set_option("display.width", 200)
    print("per-verifier agreement of the fast run's scores with the exact run's (every scored pair):")
    print(score_agreement(exact, fast).to_string())
    h = headline(exact, fast)
    print(f"\nheadline numbers: {int(h['inside_exact_ci'].sum())} of {len(h)} inside the exact run's 95% CI; "
          f"largest |fast - exact| = {float((h['fast'] - h['exact']).abs().max()):.4f}")
    print(h[~h["inside_exact_ci"]].to_string() if (~h["inside_exact_ci"]).any() else "(none outside)")
    diffs = h.assign(diff=(h["fast"] - h["exact"]).abs()).sort_values("diff", ascending=False).head(8)
    print(diffs[["table", "row", "metric", "exact", "fast", "ci_low", "ci_high"]].round(4).to_string())
    for name, d in (("exact", exact), ("fast", fast)):
        t, n = wall(d)
        print(f"{name}: {n} jobs, {t:.0f} s of job time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
