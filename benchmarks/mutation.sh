#!/usr/bin/env bash
# Mutation score per core module (mutmut 3): every mutant of the module is run against the tests
# that cover it; prints killed / survived / no-test counts and the kill rate over mutants some test
# reaches. Only the fast test files run per mutant (the smoke DAG and the model-building tests are
# too slow for that), so "no test" counts what only those reach. A benchmark, not part of .ci/run.
# Usage: bash benchmarks/mutation.sh [module ...]      (pip install mutmut; CITEBOUND_DATA_MIRROR set)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
declare -A TESTS=(
  [conformal]="tests/guard/test_edges.py tests/guard/test_conformal_stats.py tests/guard/test_pinned.py"
  [stats]="tests/guard/test_conformal_stats.py tests/guard/test_edges.py tests/guard/test_pinned.py"
  [analysis]="tests/guard/test_edges.py tests/study/test_pinned_analysis.py"
  [citations]="tests/guard/test_citations.py tests/guard/test_guarding.py"
  [guarding]="tests/guard/test_guarding.py"
  [base]="tests/guard/test_verifiers.py tests/guard/test_guarding.py tests/guard/test_edges.py tests/guard/test_pinned.py"
)
declare -A FILES=([conformal]=citebound/calibration/conformal.py [stats]=citebound/calibration/stats.py [analysis]="citebound/study/analysis/*"
                  [citations]=citebound/text/citations.py [guarding]=citebound/guarding/guard.py [base]=citebound/verifiers/base.py)
mods=("$@"); [ ${#mods[@]} -gt 0 ] || mods=(conformal stats analysis citations guarding base)
printf "%-10s %7s %7s %9s %8s %10s\n" module mutants killed survived no_test kill_rate
for m in "${mods[@]}"; do
  work=$(mktemp -d /tmp/citebound-mutation.XXXXXX)
  (cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$work")
  tests=$(printf '"%s", ' ${TESTS[$m]})
  sed -i "s|^only_mutate = .*|only_mutate = [\"${FILES[$m]}\"]|; s|^pytest_add_cli_args_test_selection = .*|pytest_add_cli_args_test_selection = [${tests%, }]|" "$work/pyproject.toml"
  (cd "$work" && mutmut run --max-children "$(nproc)" >"$work/mutmut.log" 2>&1 && mutmut export-cicd-stats >/dev/null 2>&1) || {
    echo "$m: mutmut failed, see $work/mutmut.log"; continue; }
  python3 - "$m" "$work/mutants/mutmut-cicd-stats.json" <<'PY'
import json, sys
m, s = sys.argv[1], json.load(open(sys.argv[2]))
reached = s["killed"] + s["survived"] + s["timeout"] + s["suspicious"]
rate = (s["killed"] + s["timeout"]) / reached if reached else float("nan")
print(f"{m:<10} {s['total']:>7} {s['killed']:>7} {s['survived']:>9} {s['no_tests']:>8} {rate:>10.1%}")
PY
  # every survivor with its diff, to judge whether it is equivalent
  (cd "$work" && for name in $(mutmut results 2>/dev/null | awk -F: '/survived/ {print $1}'); do
     echo "### $name"; mutmut show "$name" 2>/dev/null | grep '^[-+][^-+]'; done) > "$root/benchmarks/mutation_survivors_$m.txt" || true
  rm -rf "$work"
done
