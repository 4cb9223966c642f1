"""scripts/install_guard.sh, run for real on a copy of the checkout (slow tier): its pip steps go to a recording
stand-in (the packages are those of this venv), everything else is the script and the real graph build. On the
checkout as it is, it assembles the pinned graph and says so; with a tampered input (the weight map with two
tensors swapped, the skeleton with one byte changed) or a failing pip step, it stops with a non-zero status, never
says the guard is installed, and writes no graph."""
import hashlib
import os
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def _copy_checkout(dst):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    for f in files:
        src = ROOT / f
        if not src.is_file() or f.startswith(("citebound/models/minilm/", "tests/golden/")):
            continue
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        (dst / f).write_bytes(src.read_bytes())


def _shim(tmp, src, fail_pip: bool):
    """A PYTHON for the script: ``-m pip`` is recorded (and fails if asked), anything else runs this venv's Python
    with the copy first on its path."""
    shim = tmp / "python"
    shim.write_text("#!/usr/bin/env bash\n"
                    f'if [ "$1 $2" = "-m pip" ]; then echo "$@" >> "{tmp}/pip.log"; exit {1 if fail_pip else 0}; fi\n'
                    f'PYTHONPATH="{src}" exec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    return shim


def _swap_two_tensors(src):
    import json

    p = src / "citebound/models/minilm.skeleton.json"
    m = json.loads(p.read_text())
    q, k = "onnx::MatMul_721__fp16", "onnx::MatMul_728__fp16"  # layer 0's query and key weights
    m[q], m[k] = m[k], m[q]
    p.write_text(json.dumps(m, indent=1))


def _flip_a_byte(src):
    p = src / "citebound/models/minilm.skeleton.onnx"
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x01
    p.write_bytes(bytes(b))


@pytest.mark.parametrize("tamper", [None, "weight map", "skeleton", "pip"])
def test_install_guard_assembles_the_pinned_graph_or_stops(tmp_path, tamper):
    pytest.importorskip("onnx")
    from citebound.models import GRAPHS, SHIPPED

    src = tmp_path / "src"
    _copy_checkout(src)
    if tamper == "weight map":
        _swap_two_tensors(src)
    elif tamper == "skeleton":
        _flip_a_byte(src)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHON": str(_shim(tmp_path, src, tamper == "pip"))}
    r = subprocess.run(["bash", "scripts/install_guard.sh"], cwd=src, env=env, capture_output=True, text=True, timeout=600)
    graph = src / "citebound/models/minilm/model.onnx"
    if tamper is None:
        assert r.returncode == 0, r.stderr[-2000:]
        assert "the guard is installed" in r.stdout
        assert hashlib.sha256(graph.read_bytes()).hexdigest() == GRAPHS[SHIPPED]
        assert (tmp_path / "pip.log").read_text().count("-m pip install") == 2
        return
    assert r.returncode != 0, (tamper, r.stdout[-500:])
    assert "the guard is installed" not in r.stdout
    assert not graph.exists(), f"{tamper}: a graph was written"
    if tamper != "pip":
        assert "sha256" in r.stderr or "pinned" in r.stderr, r.stderr[-1000:]
