"""citebound example: print the path of the shipped example answer (guard input).

Example::

    citebound guard --input "$(citebound example)" --verifier lexical
"""
from __future__ import annotations

import argparse
from typing import Any

from citebound.cli.common import add_command


def add_parser(sub: Any) -> None:
    add_command(sub, "example", __doc__, "print the path of the shipped example answer (guard input)").set_defaults(
        func=run)


def run(args: argparse.Namespace) -> int:
    from citebound import examples

    print(examples.path())
    return 0
