"""citebound calibrate: a split-conformal flag threshold from labelled citations or frozen scores.

With probability >= 1 - delta over the labelled sample, flagging every citation whose score is at or
below the threshold catches at least 1 - alpha of unsupported citations like the labelled ones.

Example::

    citebound calibrate --labels labels.jsonl --verifier embedding --alpha 0.1 --out cal.json
    citebound calibrate --scores scores.jsonl --verifier-id my-verifier --out cal.json

A record with a ``group`` (a domain, a pipeline, a source) also counts toward its group's own calibration
(``groups`` in the file); a group too small for alpha and delta falls back to the pooled one, and the file
says so. A request then names its group (``citebound guard --group``, ``Guard.guard(..., group=)``, the
service's ``group`` field).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from citebound.calibration.files import in_force
from citebound.calibration.groups import check_group_name
from citebound.cli.common import (
    DEFAULT_VERIFIER,
    CLIError,
    add_command,
    add_out_arg,
    add_verifier_args,
    make_scorer,
    parse_overrides,
    runtime_args,
)
from citebound.cli.inputs import check_out, close_out, iter_json_records, open_out


def add_parser(sub: Any) -> None:
    c = add_command(sub, "calibrate", __doc__, "split-conformal threshold from labelled citations or frozen scores")
    c.add_argument("--scores", metavar="JSONL", help='{"score": float, "label": 0|1} per line (1 = supported); '
                                                     "needs --verifier or --verifier-id")
    c.add_argument("--labels", metavar="JSONL", help='{"claim", "passage", "label"} per line, scored with --verifier')
    c.add_argument("--verifier-id", metavar="STRING",
                   help="with --scores from a verifier outside citebound: a name stamped on the calibration")
    c.add_argument("--alpha", type=float, default=0.1, help="1 - target catch rate on unsupported citations (0 < alpha < 1)")
    c.add_argument("--delta", type=float, default=0.1, help="PAC failure probability (0 < delta < 1)")
    c.add_argument("--beta", type=float,
                   help="also certify the false-flag rate on supported citations <= beta (Learn-then-Test, with "
                        "probability >= 1 - delta both rates hold); default: the one-sided conformal rule")
    c.add_argument("--precision", type=float, metavar="Q",
                   help="instead certify precision for readers: with probability >= 1 - delta at most a share Q of the "
                        "citations the guard passes are unsupported (needs --supported-share-min)")
    c.add_argument("--supported-share-min", type=float, metavar="P",
                   help="with --precision: the stated assumption that the deployment's share of supported citations is "
                        "at least P (the bound holds for every share >= P)")
    c.add_argument("--accept-refuted-share", action="store_true",
                   help="with --precision: write the calibration even when the labels' own supported share refutes "
                        "--supported-share-min (the refutation is recorded on its card); default: refuse")
    c.add_argument("--ltt-method", choices=["bonferroni", "holm", "fixed_sequence"], default=None,
                   help="with --beta: the multiple-testing scheme over the threshold grid (default: bonferroni)")
    c.add_argument("--grid", default=None, metavar="LO,HI,N",
                   help="with --beta or --precision: the fixed grid of thresholds tested, N points from LO to HI "
                        "(default: 0,1,201)")
    add_out_arg(c, "the calibration JSON")
    add_verifier_args(c, default=None)
    c.set_defaults(func=run)


def _finite_score(rec: dict[str, Any], where: str) -> float:
    score = rec.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise CLIError(f"{where}: expected a numeric 'score'")
    if not np.isfinite(score):
        raise CLIError(f"{where}: score is {score}, not a finite number")
    return float(score)


def labels_verifier(path: str) -> str | None:
    """The verifier a citebound label file was sampled with (its first record's), if any."""
    for _, rec in iter_json_records(path):
        return rec.get("verifier") if isinstance(rec, dict) else None
    return None


def _check_options(args: argparse.Namespace) -> None:
    extra = tuple(o for o in ("beta", "precision", "supported_share_min") if getattr(args, o) is not None)
    for opt in ("alpha", "delta") + extra:
        if not 0 < getattr(args, opt) < 1:
            raise CLIError(f"--{opt.replace('_', '-')} must be in (0, 1), got {getattr(args, opt)}")
    if (args.precision is None) != (args.supported_share_min is None):
        raise CLIError("--precision Q needs --supported-share-min P (the deployment's supported share is an assumption "
                       "you state), and --supported-share-min is only for --precision")
    if args.precision is not None and args.beta is not None:
        raise CLIError("give --precision Q or --beta B, not both: the guard deploys one threshold, certified by one "
                       "rule")
    if args.ltt_method is not None and args.beta is None:
        raise CLIError(f"--ltt-method {args.ltt_method} is only for --beta (Learn-then-Test); without --beta it would "
                       "be ignored")
    if args.grid is not None and args.beta is None and args.precision is None:
        raise CLIError("--grid is only for --beta or --precision; without either it would be ignored")
    if args.accept_refuted_share and args.precision is None:
        raise CLIError("--accept-refuted-share is only for --precision")
    args.ltt_method = args.ltt_method or "bonferroni"
    args.grid = args.grid or "0,1,201"
    if bool(args.scores) == bool(args.labels):
        raise CLIError("give exactly one of --scores (frozen scores) or --labels (claims to score)")
    check_out(args.out)
    if args.scores and not (args.verifier or args.verifier_id):
        raise CLIError("--scores needs --verifier NAME (the citebound verifier that produced them) or "
                       "--verifier-id STRING (any other verifier), so the guard can check it uses the same one")
    if args.verifier and args.verifier_id:
        raise CLIError("give --verifier or --verifier-id, not both")
    if args.labels and args.verifier_id:
        raise CLIError("--labels scores the claims with a citebound verifier: use --verifier, not --verifier-id")


class _Read:
    """The labelled records of a --scores or --labels file."""

    def __init__(self) -> None:
        self.scores: list[float] = []
        self.labels: list[int] = []
        self.claims: list[str] = []
        self.passages: list[str] = []
        self.lines: list[int] = []
        self.groups: list[str | None] = []  # each record's 'group' (None: pooled only)
        self.sample_meta: list[dict[str, Any]] = []  # records of a citebound label file
        self.cant_tell = 0
        self.carried: list[tuple[Any, Any]] = []  # --labels: each record's own (score, verifier_hash), if any


def read_labelled(src: str, with_scores: bool) -> _Read:
    r = _Read()
    for lineno, rec in iter_json_records(src):
        if isinstance(rec, CLIError):
            raise rec
        where = f"{src}:{lineno}"
        if isinstance(rec, dict) and "sample_seed" in rec:
            r.sample_meta.append(rec)
        if isinstance(rec, dict) and rec.get("judgement") == "cant_tell" and rec.get("label") is None:
            r.cant_tell += 1
            continue
        if not isinstance(rec, dict) or isinstance(rec.get("label"), (bool, float)) or rec.get("label") not in (0, 1):
            raise CLIError(f"{where}: expected 'label' 0 (unsupported) or 1 (supported)")
        try:
            r.groups.append(check_group_name(rec.get("group"), where))
        except ValueError as e:
            raise CLIError(str(e)) from None
        r.labels.append(int(rec["label"]))
        r.lines.append(lineno)
        if with_scores:
            r.scores.append(_finite_score(rec, where))
            continue
        if not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
            raise CLIError(f"{where}: expected 'claim' and 'passage' strings")
        r.claims.append(rec["claim"])
        r.passages.append(rec["passage"])
        r.carried.append((rec.get("score"), rec.get("verifier_hash")))
    if not r.labels:
        raise CLIError(f"{src}: no labelled examples")
    return r


def _verifier_identity(args: argparse.Namespace, r: _Read, src: str) -> tuple[str, str]:
    """(hash, name) of the verifier the scores come from; --labels scores them here."""
    if args.labels:
        from citebound.cli.inputs import is_score
        from citebound.scoring.loader import VerifierLoadError, configured_hash, verifier_definitions

        try:
            vcfg, _, _ = verifier_definitions(args.verifier, parse_overrides(args.override), runtime_args(args))
            want = configured_hash(vcfg, args.model)
        except VerifierLoadError as e:
            raise CLIError(str(e)) from None
        if r.carried and all(h == want and is_score(sc) for sc, h in r.carried):
            # citebound label scored them with this very verifier (its hash covers the weights and runtime)
            print(f"reusing the scores the {len(r.carried)} labels carry (verifier {args.verifier}, hash {want}): "
                  "nothing to score", file=sys.stderr, flush=True)
            r.scores = [float(sc) for sc, _ in r.carried]
            return want, str(vcfg.get("name", args.verifier))
        scorer = make_scorer(args)
        print(f"scoring {len(r.claims)} labelled citations with {scorer.name}", file=sys.stderr, flush=True)
        r.scores = list(scorer(r.claims, r.passages)[0])
        for lineno, sc in zip(r.lines, r.scores):
            if not np.isfinite(sc):
                raise CLIError(f"{src}:{lineno}: verifier {scorer.name!r} gave no score for this pair")
        return scorer.hash, scorer.name
    if args.verifier:
        from citebound.scoring.loader import VerifierLoadError, configured_hash, verifier_definitions
        try:
            vcfg, _, _ = verifier_definitions(args.verifier, parse_overrides(args.override), runtime_args(args))
        except VerifierLoadError as e:
            raise CLIError(str(e)) from None
        return configured_hash(vcfg, args.model), args.verifier
    return args.verifier_id, args.verifier_id


def _sample_summary(summary: dict[str, Any], r: _Read, src: str) -> None:
    """What a citebound label file's sample left out, into the summary's warnings."""
    if r.sample_meta:
        seeds = sorted({m.get("sample_seed") for m in r.sample_meta}, key=str)
        sizes = sorted({m.get("sample_size") for m in r.sample_meta}, key=str)
        if len(seeds) > 1 or len(sizes) > 1:
            raise CLIError(f"{src}: labels from more than one sample (seeds {seeds}, sizes {sizes})")
        labelled = len(r.labels) + r.cant_tell
        summary["sample"] = {"seed": seeds[0], "size": sizes[0], "labelled": labelled, "cant_tell": r.cant_tell,
                             "not_labelled": int(sizes[0]) - labelled,
                             "labellers": sorted({str(m.get("labeller")) for m in r.sample_meta})}
        if r.cant_tell or int(sizes[0]) > labelled:
            summary["warnings"].append(
                f"{r.cant_tell} can't-tell and {int(sizes[0]) - labelled} unlabelled citations of the {sizes[0]} "
                "sampled are left out; if they are mostly unsupported ones, the catch rate can fall short of the "
                "guarantee")
    elif r.cant_tell:
        summary["warnings"].append(f"{r.cant_tell} can't-tell records are left out; if they are mostly unsupported "
                                   "ones, the catch rate can fall short of the guarantee")


MAX_GRID = 10_001  # thresholds --grid may test


def _grid(args: argparse.Namespace, scores: Any) -> np.ndarray:
    from citebound.calibration.ltt import default_grid

    try:
        lo_s, hi_s, n_s = args.grid.split(",")
        lo, hi, n = float(lo_s), float(hi_s), int(n_s)
    except ValueError:
        raise CLIError(f"--grid expects LO,HI,N (two numbers and a count), got {args.grid!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise CLIError(f"--grid {args.grid}: LO and HI must be finite numbers with LO < HI")
    if not 2 <= n <= MAX_GRID:
        raise CLIError(f"--grid {args.grid}: N must be 2..{MAX_GRID} thresholds (each is a test; more only costs time)")
    grid = default_grid(lo, hi, n)
    s = np.asarray(scores, float)
    if s.min() < grid[0] or s.max() > grid[-1]:
        raise CLIError(f"scores range {s.min():.4g}..{s.max():.4g}, outside the grid {grid[0]:g}..{grid[-1]:g}: "
                       "give --grid LO,HI,N")
    return grid


def two_sided(summary: dict[str, Any], scores: Any, labels: Any, args: argparse.Namespace) -> None:
    """Replace the one-sided rule by the Learn-then-Test one: both rates certified, or no tau and why."""
    from citebound.calibration.ltt import calibrate_two_sided

    grid = _grid(args, scores)
    res = calibrate_two_sided(np.asarray(scores, float), labels, args.alpha, args.beta, args.delta, grid,
                              args.ltt_method)
    summary["two_sided"] = res.to_dict()
    summary["tau"] = res.tau
    summary["beta"] = args.beta
    summary["marginal_guarantee"] = (f"with probability >= {1 - args.delta:.3g} over the calibration draw, the miss rate "
                                     f"on unsupported citations is <= {args.alpha:g} and the false-flag rate on "
                                     f"supported ones <= {args.beta:g}" if res.tau is not None else
                                     f"none: no threshold certifies alpha {args.alpha:g} and beta {args.beta:g} at "
                                     f"delta {args.delta:g}")
    summary["no_tau_reason"] = None if res.tau is not None else res.rule


def _summary(scores: Any, labels: Any, args: argparse.Namespace, vname: str, vhash: str) -> dict[str, Any]:
    """One calibration (the pooled one, or a group's) of these scores by the rule the options ask for."""
    from citebound.calibration.files import calibration_summary

    summary = calibration_summary(scores, labels, args.alpha, args.delta, vname, vhash)
    if args.beta is not None:
        two_sided(summary, scores, labels, args)
    if args.precision is not None:
        from citebound.calibration.precision import calibrate_precision

        summary["precision"] = calibrate_precision(scores, labels, args.precision, args.delta, args.supported_share_min,
                                                   _grid(args, scores))
        check_share(summary, labels, args)
        if summary["precision"]["tau"] is None:
            summary["warnings"].append(summary["precision"]["guarantee"] + "; the guard keeps the catch-rate rule")
    return summary


def check_share(summary: dict[str, Any], labels: Any, args: argparse.Namespace) -> None:
    """Test the stated supported share against the labels' own: the one-sided Clopper-Pearson upper bound at
    1 - delta on their supported share. Below --supported-share-min the labels refute it: refuse, or (with
    --accept-refuted-share) record the refutation on the calibration's card."""
    from citebound.calibration.binomial import upper_bound

    y = np.asarray(labels, int)
    n, k = len(y), int(y.sum())
    upper = upper_bound(k, n, args.delta)
    if upper >= args.supported_share_min:
        return
    line = (f"the labels refute --supported-share-min {args.supported_share_min:g}: {k} of {n} are supported "
            f"({k / n:.1%}; at most {upper:.1%} at confidence {1 - args.delta:.3g}, one-sided Clopper-Pearson)")
    if not args.accept_refuted_share:
        raise CLIError(line + "; state the share your deployment has, or pass --accept-refuted-share if these labels "
                              "were sampled to over-represent unsupported citations")
    summary["precision"]["assumption_refuted"] = {"supported_share_min": args.supported_share_min, "n": n,
                                                  "n_supported": k, "upper_bound": upper, "level": 1 - args.delta}
    summary["precision"]["guarantee"] += f" (refuted by the calibration labels: {k} of {n} supported)"
    summary["warnings"].append(line + "; written anyway (--accept-refuted-share), the refutation is on the card")


def _groups(summary: dict[str, Any], r: _Read, args: argparse.Namespace, vname: str, vhash: str) -> None:
    """One calibration per group of the records (a group too small for alpha/delta falls back to the pooled)."""
    from citebound.calibration.groups import group_calibrations

    if not any(r.groups):
        return
    def one(s: Any, y: Any) -> dict[str, Any]:
        sub = _summary(s, y, args, vname, vhash)
        sub.pop("warnings", None)
        return sub

    summary["groups"] = group_calibrations(r.scores, r.labels, r.groups, one)
    fallback = sorted(g for g, e in summary["groups"].items() if e.get("fallback"))
    ungrouped = sum(g is None for g in r.groups)
    if ungrouped:
        summary["warnings"].append(f"{ungrouped} of {len(r.groups)} labelled citations carry no 'group': they count "
                                   "toward the pooled calibration only")
    for g in fallback:
        summary["warnings"].append(f"group {g!r} falls back to the pooled calibration: {summary['groups'][g]['reason']}")


def deployed_line(summary: dict[str, Any], scores: Any) -> str:
    """The threshold the guard deploys from this calibration, its rule and how many labelled citations it flags;
    the conformal tau only labelled as such when it is not the one in force."""
    kind, tau, promise = in_force(summary)
    flagged = float(np.mean(np.asarray(scores, float) <= tau)) if len(scores) else 0.0
    other = f"; conformal tau {summary['tau']:.6g} (not deployed)" if kind in ("pac", "precision") else ""
    return (f"tau in force ({kind}) = {tau:.6g}, flagging {100 * flagged:.1f}% of the labelled citations{other}\n"
            f"  guarantee: {promise}")


def run(args: argparse.Namespace) -> int:
    from citebound.calibration.files import CalibrationError

    _check_options(args)
    if args.labels and not args.verifier:
        args.verifier = labels_verifier(args.labels) or DEFAULT_VERIFIER
    src = args.scores or args.labels
    r = read_labelled(src, with_scores=bool(args.scores))
    vhash, vname = _verifier_identity(args, r, src)
    try:
        summary = _summary(r.scores, r.labels, args, vname, vhash)
    except CalibrationError as e:
        raise CLIError(f"{src}: {e}") from None
    _groups(summary, r, args, vname, vhash)
    _sample_summary(summary, r, src)
    for w in summary["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    fh = open_out(args.out)
    fh.write(json.dumps(summary, indent=2) + "\n")
    close_out(fh)
    head = f"calibrated {vname} on {len(r.labels)} labels ({summary['n_unsupported']} unsupported)"
    if summary["tau"] is None:
        print(f"{head}: no threshold ({summary['no_tau_reason']}); the guard refuses this file until you label more",
              file=sys.stderr)
    else:
        print(f"{head}: {deployed_line(summary, r.scores)}", file=sys.stderr)
    for g, e in summary.get("groups", {}).items():
        own = "pooled (too few)" if e.get("fallback") else f"tau in force = {in_force(e)[1]:.6g} ({in_force(e)[0]})"
        print(f"  group {g}: {e['n_unsupported']} unsupported, {e['n_supported']} supported: {own}", file=sys.stderr)
    return 0
