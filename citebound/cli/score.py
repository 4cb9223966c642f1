"""citebound score: score claim-passage pairs with any verifier.

Example::

    echo '{"claim": "Cells make ATP.", "passage": "Mitochondria make ATP in cells."}' | citebound score --verifier lexical
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from citebound.cli.common import CLIError, add_command, add_out_arg, add_verifier_args, make_scorer
from citebound.cli.inputs import check_out, close_out, iter_json_records, open_out
from citebound.text.limits import GuardInputError, check_text


def add_parser(sub: Any) -> None:
    s = add_command(sub, "score", __doc__, "score claim-passage pairs with any verifier")
    s.add_argument("--input", default="-", metavar="FILE", help='JSONL of {"claim", "passage"}; \'-\' = stdin')
    add_out_arg(s, "the input records with score, verdict and verifier added (JSONL)")
    add_verifier_args(s)
    s.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_out(args.out)
    recs = []
    for lineno, rec in iter_json_records(args.input):
        if isinstance(rec, CLIError):
            raise rec
        if not isinstance(rec, dict) or not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
            raise CLIError(f"{args.input}:{lineno}: expected 'claim' and 'passage' strings")
        for key in ("claim", "passage"):
            try:
                check_text(rec[key], f"'{key}'")
            except GuardInputError as e:
                raise CLIError(f"{args.input}:{lineno}: {e}: fix the record or drop it") from None
        recs.append(rec)
    scorer = make_scorer(args)
    s, v = scorer([r["claim"] for r in recs], [r["passage"] for r in recs])
    out = open_out(args.out)
    for r, sc, vd in zip(recs, s, v):
        out.write(json.dumps({**r, "score": None if np.isnan(sc) else float(sc), "verdict": bool(vd),
                              "verifier": scorer.name}) + "\n")
    close_out(out)
    return 0
