"""What the contradiction check costs per answer: the same released answers guarded in-process, one answer at a
time, with ``embedding`` and with ``embedding+contradiction`` (one Guard each, warm, no score cache), on this
machine's cores. Prints per-answer p50/p95 and the ratio of the medians and of the totals: the adoption rule's
cost check (<= 1.5x, citebound.training.contradiction.ADOPTION).

    python benchmarks/contradiction_cost.py --answers 40     # needs the data mirror ($CITEBOUND_DATA_MIRROR)
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guard_service import load_answers  # noqa: E402

from citebound import Guard  # noqa: E402


def timed(guard: Guard, answers: list[dict]) -> list[float]:
    out = []
    for a in answers:
        t0 = time.perf_counter()
        guard.guard(a["answer"], a["passages"])
        out.append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answers", type=int, default=40)
    ap.add_argument("--mirror", default=os.environ.get("CITEBOUND_DATA_MIRROR", "../shared/data"))
    args = ap.parse_args()
    answers = load_answers(Path(args.mirror))[0][: args.answers]
    guards = {v: Guard(v, cache_dir=None) for v in ("embedding", "embedding+contradiction")}
    for g in guards.values():  # warm: the model loaded, the first batch's allocations made
        g.guard(answers[0]["answer"], answers[0]["passages"])
    times = {v: timed(g, answers) for v, g in guards.items()}
    for v, t in times.items():
        q = statistics.quantiles(t, n=20)
        print(f"{v:26s} per answer p50 {1000 * statistics.median(t):7.1f} ms  p95 {1000 * q[18]:7.1f} ms  "
              f"total {sum(t):6.1f} s ({len(t)} answers)")
    med = statistics.median(times["embedding+contradiction"]) / statistics.median(times["embedding"])
    tot = sum(times["embedding+contradiction"]) / sum(times["embedding"])
    print(f"cost ratio: median {med:.2f}x, total {tot:.2f}x (adoption rule: <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
