"""What every subcommand shares: the one-line error, the argument groups, verifier loading."""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

from citebound._env import getenv

DEFAULT_VERIFIER = "embedding"
# what the guard runs a model verifier on when neither --runtime/--quantize nor the definition says
# otherwise (tests/guard/test_cli.py pins it against the shipped definitions and this help text)
DEFAULT_RUNTIME = {"runtime": "torch", "quantize": "none"}


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after each option that has one (none after an option whose default is None or a flag's
    False: its help says what happens without it), descriptions and examples kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False or "default" in (action.help or "").lower():
            return action.help or ""
        return super()._get_help_string(action)


def add_command(sub: Any, name: str, doc: str, help: str) -> argparse.ArgumentParser:
    """A subcommand whose --help shows ``doc`` (its description and example) and every default."""
    return sub.add_parser(name, help=help, description=doc, formatter_class=HelpFormatter)


# ---------------------------------------------------------------- argument groups

def add_verifier_args(sp: argparse.ArgumentParser, default: str | None = DEFAULT_VERIFIER) -> None:
    """--verifier, --override, --model, --runtime, --quantize, --threads, --cache-dir."""
    g = sp.add_argument_group("verifier and runtime")
    g.add_argument("--verifier", default=default,
                   help="verifier definition (citebound/definitions/verifier/NAME.yaml; list: citebound verifiers)")
    g.add_argument("--override", action="append", metavar="KEY=VALUE",
                   help="replace a key of the verifier config, e.g. model=/path/to/model device=cpu (repeatable)")
    g.add_argument("--model", metavar="PATH",
                   help="a stacked verifier's fitted-model JSON (the pipeline writes results/models/NAME.json), or "
                        "a trained verifier's folder (default results/models/trained; citebound train writes one)")
    g.add_argument("--runtime", choices=["torch", "onnx", "openvino"],
                   help="inference runtime of the verifier's model (and a stacked verifier's bases); default: the "
                        "definition's: onnx on the graph inside the wheel for embedding, embedding+contradiction and trained (no "
                        "torch), "
                        f"{DEFAULT_RUNTIME['runtime']} (the exact float32 path, the [torch] extra) for the others; "
                        "torch, or onnx/openvino with --quantize, export from the weights ([torch] and [onnx] or "
                        "[openvino] extras)")
    g.add_argument("--quantize", choices=["none", "int8", "bf16"],
                   help="dynamic int8 quantisation of the model's linear layers, or bfloat16 weights; "
                        f"default: the definition's, {DEFAULT_RUNTIME['quantize']} for every shipped model verifier "
                        "(the shipped graph's own precision: citebound/models)")
    g.add_argument("--threads", type=int, metavar="N", help="CPU threads for the model (default: the runtime's own choice)")
    g.add_argument("--cache-dir", metavar="DIR", default=getenv("CACHE"), type=cache_dir,
                   help="folder for the on-disk score cache ($CITEBOUND_CACHE; none: no cache)")


def cache_dir(value: str) -> str | None:
    """--cache-dir's value: a folder, or none (any case) for no cache, never a folder named 'none'.

    >>> cache_dir("none"), cache_dir(" None "), cache_dir("/tmp/c")
    (None, None, '/tmp/c')
    """
    return None if value.strip().lower() == "none" else value


def add_out_arg(sp: argparse.ArgumentParser, what: str) -> None:
    sp.add_argument("--out", default="-", metavar="FILE", help=f"where to write {what}; '-' = stdout")


def add_limit_arg(sp: argparse.ArgumentParser) -> None:
    from citebound.text.limits import Limits

    names = ", ".join(f"{k} ({v})" for k, v in Limits().as_dict().items())
    sp.add_argument("--limit", action="append", metavar="NAME=N",
                    help=f"raise or lower an input limit (repeatable): {names}; an answer past a limit is refused, "
                         "naming it (exit 2)")


# ---------------------------------------------------------------- parsing shared options

def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings -> dict (values parsed as JSON where they are JSON)."""
    out: dict[str, Any] = {}
    for ov in pairs or []:
        key, sep, value = ov.partition("=")
        if not sep or not key:
            raise CLIError(f"--override expects key=value, got {ov!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def parse_limits(pairs: list[str] | None):
    """``--limit NAME=N`` strings -> :class:`~citebound.text.limits.Limits` (defaults for the rest)."""
    from citebound.text.limits import Limits

    values: dict[str, Any] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not value.strip().lstrip("-").isdigit() or len(value.strip()) > 18:
            raise CLIError(f"--limit expects NAME=INTEGER, got {item!r}")
        values[key] = int(value)
    try:
        return Limits.from_mapping(values)
    except ValueError as e:
        raise CLIError(str(e)) from None


def runtime_args(args: argparse.Namespace) -> dict[str, Any]:
    """--runtime/--quantize/--threads as the in-process model verifiers' runtime keys."""
    if args.threads is not None and args.threads < 1:
        raise CLIError(f"--threads must be >= 1, got {args.threads}")
    return {"runtime": args.runtime, "quantize": args.quantize, "threads": args.threads}


def make_scorer(args: argparse.Namespace):
    from citebound.scoring.loader import VerifierLoadError, load_scorer

    try:
        return load_scorer(args.verifier, parse_overrides(args.override), model_path=args.model,
                           cache_dir=args.cache_dir, runtime=runtime_args(args))
    except VerifierLoadError as e:
        raise CLIError(str(e)) from None


def labeller_default() -> str:
    return os.environ.get("USER", "labeller")


def add_policy_args(p: Any) -> None:
    """--action, --block-above, --on-error: what the guard does with an answer whose citations fail, and with
    a citation it could not check."""
    p.add_argument("--action", choices=["annotate", "remove", "block"], default="annotate",
                   help="annotate: rewrite failed markers as [N UNVERIFIED] / [N INVALID]; remove: delete "
                        "the sentences whose citations failed; block: withhold an answer whose review budget passes "
                        "--block-above (its report is still given)")
    p.add_argument("--block-above", type=float, metavar="X",
                   help="with --action block: the review budget (share of citations failed or unchecked, 0..1) past "
                        "which an answer is withheld")
    p.add_argument("--state", metavar="URL",
                   help="where the drift monitors keep their state: a SQLite file (PATH or sqlite:///PATH; every "
                        "process on this node that names it shares one monitor, and it survives restarts) or "
                        "redis://HOST:PORT/DB (replicas on several nodes; needs the [redis] extra); default: this "
                        "process's memory")
    p.add_argument("--uncited", choices=["flag", "ignore"], default="flag",
                   help="a sentence that cites nothing was not checked: flag counts it toward the review budget (and "
                        "so --action block); ignore leaves it out. Either way the report counts it ('uncited')")
    p.add_argument("--on-error", choices=["closed", "open"], default="closed",
                   help="a citation the verifier could not check (an error, a timeout, no score): closed "
                        "marks it [N UNVERIFIED] and sends it to review; open leaves its marker as written. Either way "
                        "it is counted as unverified, never as verified. A blank passage, or one whose text a reader "
                        "cannot see, is no verifier failure: it fails closed under open too")
    p.add_argument("--on-void", choices=["annotate", "flag-all"], default="annotate",
                   help="once returned labels reject the certified miss rate (the drift monitor's state is void): "
                        "annotate guards as before and the guarantee card says void; flag-all passes no "
                        "citation until the guard is recalibrated")


def check_state(url: str | None, password: str | None = None, wait_s: float = 30.0) -> None:
    """Refuse a ``--state`` value that names no store, and wait up to ``wait_s`` for a store that does not
    answer yet (Redis starting beside the service): then one ``error:`` line, never a traceback."""
    import time

    from citebound.calibration.state import StoreUnavailable, open_store

    if url is not None and not url.strip():
        raise CLIError("--state '': give a SQLite path, sqlite:///PATH or redis://HOST:PORT/DB, or leave --state out "
                       "for this process's memory")
    end = time.monotonic() + wait_s
    while True:
        try:
            store = open_store(url, password=password)
            store.ping()
            return
        except ValueError as e:
            raise CLIError(str(e)) from None
        except StoreUnavailable as e:
            if time.monotonic() >= end or "not a database" in str(e) or "readonly" in str(e):
                raise CLIError(f"--state: the store does not answer ({e}); waited {wait_s:g} s") from None
            time.sleep(1.0)


def build_guard(args: argparse.Namespace, **extra: Any):
    """The :class:`~citebound.guarding.guard.Guard` of the options ``guard`` and ``mcp`` share (verifier and runtime,
    calibration, re-attribution, policies, limits); ``extra``: a command's own keyword arguments."""
    from citebound.guarding.guard import Guard

    none = args.calibration == "none"
    try:
        return Guard(args.verifier, reattributor=None if args.no_reattribute else args.reattributor,
                     calibration=None if none else args.calibration, default_calibration=not none,
                     runtime=runtime_args(args), overrides=parse_overrides(args.override), model_path=args.model,
                     cache_dir=args.cache_dir, limits=parse_limits(args.limit), **policy_kwargs(args), **extra)
    except ValueError as e:  # a calibration, verifier, re-attributor or option the guard refuses, by name
        raise CLIError(str(e)) from None


def policy_kwargs(args: Any) -> dict[str, Any]:
    """The Guard keyword arguments of --action/--remove, --block-above and --on-error."""
    action = args.action
    if getattr(args, "remove", False):
        if action not in ("annotate", "remove"):
            raise CLIError(f"--remove contradicts --action {action}")
        action = "remove"
    if action == "block" and args.block_above is None:
        raise CLIError("--action block needs --block-above X (0 <= X < 1): the review budget past which an answer "
                       "is withheld")
    if action != "block" and args.block_above is not None:
        raise CLIError("--block-above is only for --action block")
    return {"action": action, "block_above": args.block_above, "on_error": args.on_error, "on_void": args.on_void,
            "uncited": args.uncited, "state": args.state}
