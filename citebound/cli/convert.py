"""citebound convert: released answers -> guard input JSONL with [N] markers.

Formats: nora (ScholarQA-CS Nora, qa_metadata_all.jsonl), sections (SQA-style sections with
citations), ctxs (OpenScholar output with ctxs). A file of another format is refused (exit 2). Released
files may hold NaN or Infinity (upstream's own fields); they are written as null, and counted.

Example::

    citebound convert --format nora qa_metadata_all.jsonl --out answers.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from citebound.cli.common import CLIError, add_command, add_out_arg
from citebound.cli.inputs import close_out, open_out


def add_parser(sub: Any) -> None:
    v = add_command(sub, "convert", __doc__, "released answers -> guard input JSONL with [N] markers")
    v.add_argument("path", help="a released answers file (JSON or JSONL)")
    v.add_argument("--format", choices=["nora", "sections", "ctxs"], required=True,
                   help="nora: ScholarQA-CS Nora; sections: SQA-style sections with citations; ctxs: OpenScholar")
    add_out_arg(v, "the guard input (JSONL)")
    v.set_defaults(func=run)


def finite_only(value: Any, count: list[int]) -> Any:
    """``value`` with every NaN or infinite float as None (released files hold them; the guard's input, JSON,
    cannot), counted in ``count[0]``.

    >>> c = [0]; finite_only({"a": [1.5, float("nan")], "b": float("inf")}, c), c[0]
    ({'a': [1.5, None], 'b': None}, 2)
    """
    import math

    if isinstance(value, float) and not math.isfinite(value):
        count[0] += 1
        return None
    if isinstance(value, dict):
        return {k: finite_only(v, count) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_only(v, count) for v in value]
    return value


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from citebound.guarding.convert import convert_records
    from citebound.scoring.io import DataError

    if not Path(args.path).is_file():
        raise CLIError(f"{args.path}: no such file")
    # the whole file is converted before anything is written: a bad record leaves no half-written output
    try:
        recs = list(convert_records(args.path, args.format))
    except (DataError, KeyError, AttributeError, TypeError, ValueError) as e:
        raise CLIError(f"{args.path}: cannot convert as {args.format!r} ({e})") from None
    except OSError as e:
        raise CLIError(f"{args.path}: cannot read ({e.strerror or e})") from None
    out = open_out(args.out)
    n = unresolved = 0
    nonfinite = [0]
    try:
        for rec in recs:
            out.write(json.dumps(finite_only(rec, nonfinite)) + "\n")
            n += 1
            unresolved += rec.get("unresolved_markers", 0)
    finally:
        close_out(out)
    if nonfinite[0]:
        print(f"{nonfinite[0]} non-finite numbers (NaN, Infinity) of {args.path} written as null: JSON has none",
              file=sys.stderr)
    print(f"converted {n} answers; {unresolved} markers left unresolved (unknown ids)", file=sys.stderr)
    return 0
