"""The README's quickstart, run as a newcomer would (in an empty folder), gives the output it shows;
and every repository path the README names exists."""
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

README = (ROOT / "README.md").read_text()


def _block(marker: str) -> str:
    m = re.search(re.escape(f"<!-- {marker} -->") + r"\s*```\w*\n(.*?)```", README, re.S)
    assert m, marker
    return m.group(1)


def test_the_quickstart_gives_the_output_shown(tmp_path):
    bindir = str(Path(sys.executable).parent)  # where the install put the citebound command
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    commands = _block("quickstart")
    assert len(commands.strip().splitlines()) <= 5
    r = subprocess.run(["bash", "-e", "-c", commands], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == _block("quickstart-output")


def test_the_set_up_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    setup = re.search(r"## Set-up.*?```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(setup) == 2 and setup[1] == "snakemake --cores all"
    assert setup[0] in ci.replace(" -q ", " ")  # CI runs it quietly
    assert "bash .ci/run" in README


def test_every_repository_path_the_readme_names_exists():
    paths = set(re.findall(r"\]\(((?!https?:|#|javascript:)[^)\s]+)\)", README))  # markdown links
    paths |= {p for p in re.findall(r"`((?:citebound|tests|docs|benchmarks|config|workflow|profiles|scripts)/[\w./-]+)`",
                                    README) if "<" not in p and "*" not in p}
    missing = sorted(p for p in paths if not (ROOT / p.split("#")[0]).exists())
    assert missing == []
    assert "../shared" not in README


def _blocks() -> list[tuple[str, str, str]]:
    """(the marker before it, language, body) of every fenced block."""
    return [(m.group(1) or "", m.group(2), m.group(3))
            for m in re.finditer(r"(?:<!-- ([^>]*) -->\n)?```(\w*)\n(.*?)```", README, re.S)]


def test_every_code_block_runs_here_or_names_the_test_that_runs_it():
    for marker, lang, body in _blocks():
        if marker in ("quickstart", "quickstart-output"):
            continue  # run by test_the_quickstart_gives_the_output_shown
        if lang in ("text", ""):
            continue
        assert marker.startswith("covered-by: "), f"a {lang} block with no covered-by marker: {body[:80]!r}"
        path, _, name = marker.split(": ", 1)[1].partition("::")
        assert re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(), re.M), marker


def test_the_python_block_runs_as_written():


    from citebound.guarding.guard import GuardInputError

    code = next(body for marker, lang, body in _blocks() if lang == "python" and "citebound.Guard" in body)
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - the README's own block, defining all it uses
    assert ns["report"].n_citations == 2 and len(ns["results"]) == 2
    assert ns["text"] == "Aspirin inhibits cyclooxygenase [1]. Statins lower LDL cholesterol [2 (was 1)]."
    assert not isinstance(ns["checked"][0], GuardInputError) and isinstance(ns["checked"][1], GuardInputError)


def test_the_serve_block_runs_as_written(tmp_path):
    """The serve block's two commands, with the port it names; curl's output is the guarded example."""
    import json
    import shutil
    import signal

    if shutil.which("curl") is None:
        import pytest

        pytest.skip("curl not installed")
    from service_helpers import wait_ready

    body = next(body for marker, lang, body in _blocks() if lang == "bash" and "citebound serve" in body)
    serve, curl = [line.split("#")[0].strip() for line in body.strip().splitlines()]
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.Popen(serve.split(), cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_ready("http://127.0.0.1:8000", attempts=1200), proc.stderr.read() if proc.poll() else ""
        r = subprocess.run(["bash", "-c", curl], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        out = json.loads(r.stdout)
        assert out["report"]["n_citations"] == 4 and "[4 INVALID]" in out["guarded_answer"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def test_the_readme_taus_are_the_ones_the_shipped_calibrations_deploy():
    """#52: every tau the README prints for a shipped calibration is the one in force (rounded as printed)."""
    from citebound.calibration.files import in_force
    from citebound.calibrations import shipped

    m = re.search(r"above τ \(([\d.]+) for `embedding`, ([\d.]+) for `lexical`", README)
    assert m, "the README's default-calibration sentence moved: update this test"
    for verifier, printed in zip(("embedding", "lexical"), m.groups()):
        kind, tau, _ = in_force(shipped(verifier))
        assert printed == f"{tau:.{len(printed.split('.')[1])}f}", (verifier, printed, tau, kind)
