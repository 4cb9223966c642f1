"""The hostile-input review's examples, each in a fresh interpreter: wall time and peak RSS (MB).

    python benchmarks/hostile_examples.py                 # this tree (citebound)
    PYTHONPATH=/path/to/old/tree python benchmarks/hostile_examples.py --package citeguard   # an older tree

Each case runs under a 4 GB address-space cap; a case that exhausts it prints "memory". Prints one
Markdown row per case."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASES = {
    "one marker listing many ranges (~21 KB)": "'Claim [' + ','.join(['1-1000'] * 3000) + '].'",
    "one marker listing many ranges (~490 KB)": "'Claim [' + ','.join(['1-1000'] * 70000) + '].'",
    "linked-marker pattern, unclosed (~240 KB)": "'x. ' + '[[1]](' * 40000",
    "a 5,000-digit marker": "'Claim [' + '9' * 5000 + '].'",
}
CODE = """
import resource, json, time
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
{imports}
g = Guard("lexical")
answer = {answer}
t0 = time.perf_counter()
try:
    g.guard(answer, ["p one", "p two", "p three"])
    out = "guarded"
except MemoryError:
    out = "memory"
except Exception as e:
    out = type(e).__name__
print(json.dumps({{"s": time.perf_counter() - t0, "out": out,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
REATTRIBUTE = """
import resource, json, time
{imports}
g = Guard("lexical")
big = " ".join(f"word{{i}}" for i in range(90000))  # ~0.9 MB, under max_passage_chars
passages = [big] + [f"Short passage {{i}} about topic{{i}}." for i in range(20)]
answer = " ".join(f"Claim {{i}} about topic{{i}} [{{200 + i}}]." for i in range({n}))  # every citation invalid
t0 = time.perf_counter()
g.guard(answer, passages)
print(json.dumps({{"s": time.perf_counter() - t0, "out": "guarded",
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def run(code: str) -> dict:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return {"s": float("nan"), "out": "crashed: " + (r.stderr.strip().splitlines() or ["?"])[-1][:80], "rss": float("nan")}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", default="citebound")
    args = ap.parse_args()
    imports = ("from citebound.guarding.guard import Guard" if args.package == "citebound"
               else f"from {args.package}.guarding import Guard")
    print("| case | outcome | seconds | peak RSS MB |\n|---|---|---|---|")
    for name, answer in CASES.items():
        r = run(CODE.format(imports=imports, answer=answer))
        print(f"| {name} | {r['out']} | {r['s']:.2f} | {r['rss']:.0f} |", flush=True)
    for n in (10, 40):
        r = run(REATTRIBUTE.format(imports=imports, n=n))
        print(f"| re-attribution beside a 1 MB passage, {n} failed citations | {r['out']} | {r['s']:.2f} | {r['rss']:.0f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
