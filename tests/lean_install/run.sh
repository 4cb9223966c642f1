#!/usr/bin/env bash
# The guard's lean install: build the wheel, install it alone (no extras) into a fresh venv, guard the
# shipped example answer with lexical and with the shipped MiniLM, and check that no study package is
# installed or imported (tests/lean_install/check_lean.py). Prints the venv's size and the install's time.
# Usage: bash tests/lean_install/run.sh [WORKDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
wd=${1:-$(mktemp -d /tmp/citebound-lean.XXXXXX)}
py=${PYTHON:-python3}
mkdir -p "$wd"; rm -rf "$wd/dist" "$wd/venv"
"$py" -m build --wheel --outdir "$wd/dist" "$root" >"$wd/build.log" 2>&1 || { tail -20 "$wd/build.log"; exit 1; }
wheel=$(ls "$wd"/dist/citebound-*.whl)
python3 -m venv "$wd/venv"
t0=$(date +%s)
"$wd/venv/bin/pip" install -q --disable-pip-version-check "$wheel" 2>&1 | grep -v "^WARNING: Location" || true
t1=$(date +%s)
"$wd/venv/bin/python" -c "import citebound" || { echo "the wheel did not install"; exit 1; }
echo "lean install: $(basename "$wheel") in $((t1 - t0)) s; venv $(du -sm "$wd/venv" | cut -f1) MB"
cd "$wd"   # away from the source tree, so the installed wheel is what runs
HF_HUB_OFFLINE=1 "$wd/venv/bin/python" "$root/tests/lean_install/check_lean.py"
