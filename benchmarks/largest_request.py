"""The memory and time of the largest in-bounds answer, and the refusal of one past the limit (#52 item 3).

An answer's memory grows with its (claim, passage window) units: the verifier scores each citation's claim
against every 600-character window (stride 300) of the cited passage. With the default limits the largest
answer the guard accepts makes ``max_units_per_answer`` (2,000,000) units; this prints its peak resident memory
and time on this machine, each in a fresh process, beside the first answer past the limit (refused before any
scoring).

    python benchmarks/largest_request.py [--verifier lexical]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, random, resource, sys, time
from citebound.guarding.guard import Guard
from citebound.text.limits import LimitExceeded
n_cit, n_chars, verifier = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(0)
words = [f"w{n}x" for n in range(5000)]
ps = [" ".join(rng.choice(words) for _ in range(n_chars // 5))[:n_chars] for _ in range(3)]
answer = " ".join(f"Claim {' '.join(rng.choice(words) for _ in range(8))} [{1 + k % 3}]." for k in range(n_cit))
g = Guard(verifier, reattributor=None)
t = time.perf_counter()
try:
    _, r = g.guard(answer, ps)
    out = {"outcome": f"guarded: {r.n_citations} citations"}
except LimitExceeded as e:
    out = {"outcome": f"refused: {e}"}
out |= {"seconds": round(time.perf_counter() - t, 2), "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verifier", default="lexical")
    args = ap.parse_args()
    windows = 2999  # a 900,000-character passage at 600/300
    rows = [("largest in bounds", 2_000_000 // windows), ("one citation past the limit", 2_000_000 // windows + 1),
            ("baseline (3 citations, short passages)", 3)]
    for name, n_cit in rows:
        chars = 900_000 if n_cit > 3 else 1000
        r = subprocess.run([sys.executable, "-c", CHILD, str(n_cit), str(chars), args.verifier], capture_output=True,
                           text=True, check=True)
        res = json.loads(r.stdout.strip().splitlines()[-1])
        units = n_cit * windows if chars == 900_000 else n_cit
        print(f"{name:40s} {units:>10,d} units  {res['seconds']:7.2f} s  peak {res['peak_mb']:5d} MB  {res['outcome'][:90]}")


if __name__ == "__main__":
    main()
