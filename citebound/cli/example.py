"""citebound example: print the path of the shipped example answer (guard input), or of a chat request for
the guarding proxy (--chat: a question, the same passages in its citebound field).

Example::

    citebound guard --input "$(citebound example)" --verifier lexical
    curl -s localhost:8000/v1/chat/completions -H 'content-type: application/json' -d @"$(citebound example --chat)"
"""
from __future__ import annotations

import argparse
from typing import Any

from citebound.cli.common import add_command


def add_parser(sub: Any) -> None:
    p = add_command(sub, "example", __doc__, "print the path of the shipped example answer (guard input)")
    p.add_argument("--chat", action="store_true", help="the chat request for the guarding proxy instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from citebound import examples

    print(examples.path("chat.json" if args.chat else "answer.json"))
    return 0
