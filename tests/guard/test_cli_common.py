"""The options every command shares, at their edges: --override splits at its first '=' (a URL's query keeps
its own), values read as JSON where they are JSON; --threads 0 is refused before any model loads; a guard
command with --threads 0 exits 2 naming it."""
import argparse
import json

import pytest

from citebound.cli.common import CLIError, parse_overrides, runtime_args
from citebound.cli.main import main


def test_override_splits_at_the_first_equals_sign():
    got = parse_overrides(["base_url=http://h:8000/v1?a=b&c=d", "threshold=0.7", "name=x=y", "device=cpu",
                           "max_retries=0", "flag=true", "empty="])
    assert got == {"base_url": "http://h:8000/v1?a=b&c=d", "threshold": 0.7, "name": "x=y", "device": "cpu",
                   "max_retries": 0, "flag": True, "empty": ""}
    assert parse_overrides(None) == {}
    for bad in ("=v", "novalue"):
        with pytest.raises(CLIError, match="--override expects key=value"):
            parse_overrides([bad])


@pytest.mark.parametrize("threads, ok", [(None, True), (1, True), (0, False), (-1, False)])
def test_threads_is_at_least_one(threads, ok):
    args = argparse.Namespace(threads=threads, runtime=None, quantize=None)
    if ok:
        assert runtime_args(args) == {"runtime": None, "quantize": None, "threads": threads}
    else:
        with pytest.raises(CLIError, match=f"--threads must be >= 1, got {threads}"):
            runtime_args(args)


def test_guard_with_threads_0_exits_2_naming_it(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]}) + "\n")
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--threads", "0", "--quiet"]) == 2
    assert "--threads must be >= 1, got 0" in capsys.readouterr().err
