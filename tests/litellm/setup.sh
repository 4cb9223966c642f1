#!/usr/bin/env bash
# The LiteLLM test's own venv (tests/litellm/run.sh runs it): the LiteLLM proxy at the version pyproject.toml's
# [litellm] extra pins, and citebound's core dependencies; citebound itself is read from this checkout
# (PYTHONPATH, set by run.sh), so this can run while the project's own editable install runs. Its own venv because
# litellm[proxy] pins an MCP SDK older than the [mcp] extra's. Installed only if missing.
# Usage: bash tests/litellm/setup.sh   (LITELLM_VENV=... to choose the venv)
set -euo pipefail
set -f  # the requirement specs hold brackets
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${LITELLM_VENV:-$root/.venv-litellm}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" -c "import litellm.proxy.proxy_server, httpx, onnxruntime, tokenizers, rank_bm25" 2>/dev/null; then
  read -r -a deps <<<"$("$venv/bin/python" -c "import tomllib; p = tomllib.load(open('$root/pyproject.toml', 'rb'))['project']; \
print(' '.join(p['dependencies'] + p['optional-dependencies']['litellm']))")"
  "$venv/bin/pip" install -q "${deps[@]}" httpx
fi
