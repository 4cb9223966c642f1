"""`citebound verifiers`: every word of what each verifier can tell apart is in the table, and the EXTRA
column says what is true: a verifier listed with "-" builds in a process that cannot import torch, one
listed with "torch" cannot."""
import json
import subprocess
import sys

from citebound.cli.main import main

BLOCKED = """
import json, sys
for m in ("torch", "transformers", "sentence_transformers"):
    sys.modules[m] = None  # as in a guard image without torch
from citebound import definitions
from citebound.verifiers import build_verifier
out = {}
for name in definitions.available("verifier"):
    try:
        build_verifier(definitions.load("verifier", name), sys.argv[1])
        out[name] = "built"
    except ModuleNotFoundError as e:
        out[name] = "missing " + str(e.name)
    except Exception as e:  # a model file, a server or a key it lacks here: not a missing package
        out[name] = type(e).__name__
print(json.dumps(out))
"""


def _table(capsys):
    assert main(["verifiers"]) == 0
    table = capsys.readouterr().out
    assert main(["verifiers", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return table, rows


def test_every_word_a_verifier_can_tell_apart_is_in_the_table(capsys):
    table, rows = _table(capsys)
    lines = table.splitlines()[1:]
    left = lines[0].index(rows[0]["sees"].split()[0])  # where the wrapped column starts
    names = {r["name"] for r in rows}
    text: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if not line.strip() or line.startswith("EXTRA:"):
            current = None
            continue
        first = line.split()[0]
        if not line.startswith(" ") and first in names:
            current = first
            text[current] = [line[left:]]
        elif current is not None:
            assert line[:left].strip() == "", line  # a continuation line sits under the column
            text[current].append(line[left:])
    assert set(text) == names
    for r in rows:
        assert " ".join(" ".join(text[r["name"]]).split()) == " ".join(r["sees"].split()), r["name"]
    assert sum(len(t) > 1 for t in text.values()) >= 3  # the check covers wrapped rows


def test_the_extra_column_is_what_building_without_torch_shows(tmp_path, capsys):
    _, rows = _table(capsys)
    r = subprocess.run([sys.executable, "-c", BLOCKED, str(tmp_path / "cache")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    built = json.loads(r.stdout.splitlines()[-1])
    for row in rows:
        got = built[row["name"]]
        if row["extra"] == "-":
            assert not got.startswith("missing"), (row["name"], got)
        elif row["extra"] == "torch":
            assert got in ("missing torch", "missing transformers"), (row["name"], got)
    kinds = {row["kind"]: row["extra"] for row in rows}
    assert kinds["remote"] == "-" and kinds["nli"] == "torch"  # both kinds were checked above
