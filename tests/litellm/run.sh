#!/usr/bin/env bash
# A real LiteLLM proxy (its own venv: tests/litellm/setup.sh) with citebound's guardrail, in front of a scripted
# upstream: streamed and unstreamed text, flags and block through LiteLLM (tests/litellm/check_litellm.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/setup.sh"
venv=${LITELLM_VENV:-$here/../../.venv-litellm}
cd "$here/../.."
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/python" tests/litellm/check_litellm.py
