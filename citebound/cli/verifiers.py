"""citebound verifiers: the shipped verifier definitions, what each is and what it needs.

Example::

    citebound verifiers
"""
from __future__ import annotations

import argparse
from typing import Any

from citebound.cli.common import add_command

WEIGHTS = "model weights from the hub (its definition names them), or --override model=PATH; a GPU for speed"
# what a verifier kind needs beyond the plain install, and what its score means
NEEDS = {"lexical": "nothing", "embedding": "nothing (the MiniLM weights ship with the install)",
         "trained": "a trained head (--model DIR, from citebound train or the study's train_verifier rule)",
         "fitted": "its fitted model JSON (--model, from the study's fit_stacked rule)",
         "nli": WEIGHTS, "attrscore": WEIGHTS,
         "hhem": WEIGHTS, "minicheck": WEIGHTS,
         "llm": "the [llm] extra and an OpenAI-compatible endpoint", "ragas": "the [ragas] extra and an endpoint"}
from citebound.verifiers import SCALES  # noqa: E402


def add_parser(sub: Any) -> None:
    add_command(sub, "verifiers", __doc__, "list the shipped verifier definitions").set_defaults(func=run)


def rows() -> list[tuple[str, str, str, str]]:
    from citebound import definitions

    out = []
    for name in definitions.available("verifier"):
        kind = str(definitions.load("verifier", name).get("kind", "?"))
        out.append((name, kind, SCALES.get(kind, "?"), NEEDS.get(kind, "?")))
    return out


def run(args: argparse.Namespace) -> int:
    table = [("NAME", "KIND", "SCORE", "NEEDS"), *rows()]
    w = [max(len(r[i]) for r in table) for i in range(3)]
    for r in table:
        print(f"{r[0]:{w[0]}}  {r[1]:{w[1]}}  {r[2]:{w[2]}}  {r[3]}")
    return 0
