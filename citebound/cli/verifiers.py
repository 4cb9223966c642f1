"""citebound verifiers: the shipped verifier definitions, what each can tell apart, and the extra it needs.

Example::

    citebound verifiers            # a table that fits 100 columns
    citebound verifiers --json     # every field: kind, extra, what it sees, its score scale, what it needs
"""
from __future__ import annotations

import argparse
from typing import Any

from citebound.cli.common import add_command

WEIGHTS = "model weights from the hub (its definition names them), or --override model=PATH; a GPU for speed"
# what a verifier kind needs beyond the plain install, and what its score means
NEEDS = {"lexical": "nothing", "embedding": "nothing (the MiniLM weights ship with the install)",
         "contradiction": "nothing (the graph and the check's head ship with the install)",
         "trained": "a trained head (--model DIR, from citebound train or the study's train_verifier rule)",
         "fitted": "its fitted model JSON (--model, from the study's fit_stacked rule)",
         "nli": WEIGHTS, "attrscore": WEIGHTS,
         "hhem": WEIGHTS, "minicheck": WEIGHTS,
         "llm": "the [llm] extra and an OpenAI-compatible endpoint", "ragas": "the [ragas] extra and an endpoint",
         "remote": "a model server with a pooling route (vLLM --runner pooling); --override url=... model=..."}
# the pip extra each kind's runtime needs beyond `pip install citebound`
EXTRA = {"lexical": "-", "embedding": "-", "trained": "-", "fitted": "-", "contradiction": "-", "nli": "torch",
         "attrscore": "torch", "hhem": "torch", "minicheck": "torch", "llm": "llm", "ragas": "ragas",
         "remote": "-"}
WIDTH = 100
from citebound.verifiers import SCALES, SEES  # noqa: E402


def add_parser(sub: Any) -> None:
    p = add_command(sub, "verifiers", __doc__, "list the shipped verifier definitions")
    p.add_argument("--json", action="store_true", help="one JSON object per verifier, every field")
    p.set_defaults(func=run)


def rows() -> list[dict[str, str]]:
    from citebound import definitions

    out = []
    for name in definitions.available("verifier"):
        d = definitions.load("verifier", name)
        kind = str(d.get("kind", "?"))
        row = {"name": name, "kind": kind, "extra": EXTRA.get(kind, "?"), "sees": SEES.get(kind, "?"),
               "score": SCALES.get(kind, "?"), "needs": NEEDS.get(kind, "?")}
        if kind == "remote":  # where it points, credentials redacted (a key is only ever a file's path)
            from citebound.scoring.llm_backends import redact_url

            row["endpoint"] = f"{d.get('api', 'classify')} {redact_url(str(d.get('url', '')))} model {d.get('model')}"
        out.append(row)
    return out


def run(args: argparse.Namespace) -> int:
    import json
    import textwrap

    found = rows()
    if args.json:
        for r in found:
            print(json.dumps(r))
        return 0
    cols = ("name", "kind", "extra")
    w = [max(len(c), *(len(r[c]) for r in found)) for c in cols]
    left = sum(w) + 2 * len(w)
    print("  ".join(f"{c.upper():{n}}" for c, n in zip(cols, w)) + "  CAN TELL APART")
    for r in found:
        lines = textwrap.wrap(r["sees"], WIDTH - left) or [""]
        print("  ".join(f"{r[c]:{n}}" for c, n in zip(cols, w)) + "  " + lines[0])
        for more in lines[1:]:
            print(" " * left + more)
    print("\nEXTRA: pip install 'citebound[EXTRA]' (-: the plain install). Score scales, needs: --json")
    return 0
