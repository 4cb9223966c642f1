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
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert missing == []
    assert "../shared" not in README
