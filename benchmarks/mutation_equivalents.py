"""Sort the survivors that benchmarks/mutation.sh lists into those judged equivalent (the mutant
cannot change any result the project produces) and those that are real gaps in the tests.

Each rule below is a judgement written once, with its reason; a survivor no rule covers is listed as a
gap. Prints a Markdown report (used for benchmarks/MUTATION.md).

    python benchmarks/mutation_equivalents.py [benchmarks]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

RULES: list[tuple[str, str]] = [
    (r"np\.asarray\([^)]*, (None|)\)|\.to_numpy\(None\)|dtype=None|astype\(None\)|np\.full\(n, -1, \)"
     r"|np\.zeros\(n, \)|np\.zeros\(len\(units\), \)",
     "dtype argument dropped where the input already has that dtype (floats and booleans from the callers)"),
    (r"errstate", "the guarded operation cannot raise that floating-point condition here"),
    (r"round\(.*, (10|11)\)", "9 vs 10/11 rounding digits: both absorb the float error they are there for"),
    (r"timeout=12[01]|sqlite3\.connect\(self\.path, \)", "sqlite lock timeout: matters only under lock contention"),
    (r"(?i)pragma|create table|insert or replace", "SQL keywords and identifiers are case-insensitive"),
    (r"i \+ 50[01]|len\(keys\), \)", "chunk size of the sqlite IN query: the same rows come back for any size"),
    (r"isnan\(s\)\) and False", "sqlite stores a NaN REAL as NULL either way"),
    (r"pair_units\.append\(None\)", "None and [] are both falsy and skipped alike"),
    (r"np\.arange\((n \+ 2|1, n \+ 3)\)", "the extra candidates (k = 0 or n + 2) never qualify before the first valid k"),
    (r"axis=1\)|\]\], \)", "np.sort's default axis is the last one, axis 1 of the split matrix"),
    (r"mcnemar\(np\.array\(\[\[(0|1), b\], \[c, (0|1)\]\]\),|mcnemar\(np\.array\(\[\[0, b\], \[c, 0\]\]\), \)",
     "McNemar ignores the diagonal, and statsmodels' mcnemar is exact by default"),
    (r"boot_auc\(scores, labels, None\)", "s[None] is the same single row as s[arange(n)[None]]"),
    (r"stacklevel=3\)|^\+\s+\)$", "warning stacklevel: where the warning points, not what it says"),
    (r'"(XX[^"]*XX|[A-Z][A-Z_ ]*)"', "text of a log line, message or label only"),
]


def judge(diff: str) -> str | None:
    for pattern, why in RULES:
        if re.search(pattern, diff, flags=re.M):
            if why.startswith("text of") and not re.search(r"log\.|warn|raise|Error|desc=|unit=|%", diff):
                return None  # an upper-cased dict key or value is a real change
            return why
    return None


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for f in sorted(folder.glob("mutation_survivors_*.txt")):
        blocks = re.split(r"^### ", f.read_text(), flags=re.M)[1:]
        eq, gaps = [], []
        for b in blocks:
            name, _, diff = b.partition("\n")
            plus = "\n".join(line for line in diff.splitlines() if line.startswith("+"))
            why = judge(plus)
            (eq if why else gaps).append((name.strip(), why, " ".join(plus.split())[:150]))
        print(f"### {f.stem.removeprefix('mutation_survivors_')}: {len(eq)} judged equivalent, {len(gaps)} gaps\n")
        for name, why, _ in eq:
            print(f"- `{name.rsplit('.', 1)[-1]}`: {why}")
        for name, _, diff in gaps:
            print(f"- gap `{name.rsplit('.', 1)[-1]}`: `{diff}`")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
