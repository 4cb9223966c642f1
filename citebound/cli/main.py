"""``citebound``: guard cited answers, calibrate a flag threshold, score pairs.

Examples::

    citebound guard --input "$(citebound example)" --verifier lexical
    citebound guard --input answers.jsonl --out guarded.jsonl --calibration cal.json
    citebound calibrate --labels labels.jsonl --verifier embedding --alpha 0.1 --out cal.json
    citebound score --input pairs.jsonl --verifier lexical
    citebound train --input my_pairs.jsonl --eval gold=my_gold.jsonl --out my_model
    citebound convert --format nora qa_metadata_all.jsonl > answers.jsonl
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from citebound.cli import calibrate, convert, example, guard, label, mcp, monitor, score, serve, train, verifiers
from citebound.cli.common import CLIError, HelpFormatter

COMMANDS = (guard, calibrate, monitor, score, serve, mcp, label, train, verifiers, example, convert)


def build_parser() -> argparse.ArgumentParser:
    from citebound import __version__

    p = argparse.ArgumentParser(prog="citebound", description=__doc__.split("\n\n")[0].strip("`").replace("``", ""),
                                epilog="Examples:\n" + __doc__.split("Examples::")[1].rstrip(),
                                formatter_class=HelpFormatter)
    p.add_argument("--version", action="version", version=f"citebound {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def _quiet_libraries() -> None:
    """Quiet the model libraries through the variables they read when (and if) a command imports them:
    importing transformers here only to quiet it cost every command ~0.8 s."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def _suggest(word: str, choices: Any) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def parse(argv: list[str]) -> argparse.Namespace:
    """argparse, with "did you mean" for a mistyped command or option (Python 3.11's argparse has none)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is not None and first not in commands and argv and argv[0] == first:
        parser.error(f"unknown command {first!r}{_suggest(first, commands)}; the commands: {', '.join(commands)}")
    args, extra = parser.parse_known_args(argv)
    if extra:
        sp = commands[args.command]
        hints = "".join(_suggest(x.split("=")[0], sp._option_string_actions) for x in extra if x.startswith("-"))
        sp.error(f"unrecognized arguments: {' '.join(extra)}{hints}")
    args.argv = argv
    return args


def main(argv: list[str] | None = None) -> int:
    """Parse, dispatch to the subcommand's ``run``, and turn its errors into one ``error:`` line (exit 2)."""
    args = parse(list(sys.argv[1:] if argv is None else argv))
    _quiet_libraries()
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:  # a write that fails after the file opened, e.g. a full disk
        where = e.filename or getattr(args, "out", None) or "output"
        print(f"error: {where}: cannot write ({e.strerror or e})", file=sys.stderr)
        return 2
    except Exception as e:  # a verifier's endpoint that failed mid-run: one line that names it
        from citebound.scoring.llm_backends import EndpointError

        if not isinstance(e, EndpointError):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
