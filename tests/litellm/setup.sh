#!/usr/bin/env bash
# The LiteLLM test's own venv (tests/litellm/run.sh runs it): citebound with its [litellm] extra, the LiteLLM proxy
# at the version pyproject.toml pins. Its own venv because litellm[proxy] pins an MCP SDK older than the [mcp]
# extra's. Installed only if missing, so CI can run this while the project's own install runs.
# Usage: bash tests/litellm/setup.sh   (LITELLM_VENV=... to choose the venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${LITELLM_VENV:-$root/.venv-litellm}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c "import litellm.proxy.proxy_server, citebound, httpx" 2>/dev/null \
    || "$venv/bin/pip" install -q -e "$root[litellm]" httpx
