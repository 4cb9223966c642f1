"""``citeguard``: guard cited answers, calibrate a flag threshold, score pairs.

Examples::

    citeguard guard --input answer.json --verifier embedding
    citeguard guard --input answers.jsonl --out guarded.jsonl --calibration cal.json
    citeguard calibrate --scores scores.jsonl --verifier embedding --alpha 0.1 --out cal.json
    citeguard score --input pairs.jsonl --verifier lexical
    citeguard convert --format nora qa_metadata_all.jsonl > answers.jsonl
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Iterator, TextIO

import numpy as np

log = logging.getLogger("citeguard")


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# ---------------------------------------------------------------- verifier loading

def load_verifier_configs(name: str, overrides: list[str]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(verifier cfg, all needed verifier cfgs, windowing) from the project config."""
    from .config import ConfigError, compose_config, to_plain

    try:
        cfg = compose_config([f"verifier_panel=[{name}]", "datasets=[]", "sources=[]"])
    except ConfigError as e:
        raise CLIError(str(e).splitlines()[0]) from None
    verifiers = to_plain(cfg.verifiers)
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if not sep:
            raise CLIError(f"--override expects key=value, got {ov!r}")
        try:
            verifiers[name][key] = json.loads(value)
        except json.JSONDecodeError:
            verifiers[name][key] = value
    return verifiers[name], verifiers, to_plain(cfg.windowing)


def make_scorer(args: argparse.Namespace):
    from .scorer import PairScorer

    vcfg, allv, windowing = load_verifier_configs(args.verifier, args.override or [])
    try:
        return PairScorer(vcfg, allv, windowing, cache_dir=args.cache_dir, model_path=args.model,
                          progress=False)
    except (OSError, ValueError) as e:
        raise CLIError(f"cannot load verifier {args.verifier!r}: {str(e).splitlines()[0]}") from None


# ---------------------------------------------------------------- input helpers

def _open_in(path: str) -> TextIO:
    if path == "-":
        return sys.stdin
    if not Path(path).is_file():
        raise CLIError(f"{path}: no such file")
    return open(path, encoding="utf-8")


def _open_out(path: str | None) -> TextIO:
    return sys.stdout if path in (None, "-") else open(path, "w", encoding="utf-8")


def _jsonl(path: str, lines: Iterator[str]) -> Iterator[tuple[int, Any]]:
    for lineno, line in enumerate(lines, 1):
        if line.strip():
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as e:
                yield lineno, CLIError(f"{path}:{lineno}: not valid JSON ({e.msg})")


def iter_json_records(path: str) -> Iterator[tuple[int, Any]]:
    """(line number, record) from a JSON object/array file or a JSONL stream (streamed).

    A bad JSONL line is yielded as a :class:`CLIError` naming file and line.
    """
    fh = _open_in(path)
    if path.endswith(".jsonl"):
        yield from _jsonl(path, fh)
        return
    text = fh.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if sum(1 for ln in text.splitlines() if ln.strip()) > 1:  # JSONL on stdin
            yield from _jsonl(path, iter(text.splitlines()))
            return
        raise CLIError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    for i, rec in enumerate(data if isinstance(data, list) else [data], 1):
        yield i, rec


def parse_answer(rec: Any, where: str) -> tuple[str, list[str], int | None]:
    from .guarding import GuardInputError, normalise_passages

    if not isinstance(rec, dict):
        raise CLIError(f"{where}: expected a JSON object with 'answer' and 'passages'")
    if "answer" not in rec or not isinstance(rec["answer"], str):
        raise CLIError(f"{where}: missing 'answer' (a string)")
    if "passages" not in rec and "ctxs" not in rec:
        raise CLIError(f"{where}: missing 'passages' (or 'ctxs')")
    try:
        passages = normalise_passages(rec.get("passages", rec.get("ctxs")))
    except GuardInputError as e:
        raise CLIError(f"{where}: {e}") from None
    base = rec.get("citation_base")
    return rec["answer"], passages, int(base) if base is not None else None


# ---------------------------------------------------------------- calibration files

def load_calibration(path: str, scorer) -> dict[str, Any]:
    try:
        cal = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CLIError(f"{path}: cannot read calibration ({e})") from None
    for key in ("alpha", "tau", "verifier", "verifier_hash"):
        if key not in cal:
            raise CLIError(f"{path}: not a citeguard calibration (missing {key!r})")
    if cal["verifier_hash"] != scorer.hash:
        raise CLIError(f"{path}: calibrated for verifier {cal['verifier']!r} (config {cal['verifier_hash']}), "
                       f"not {scorer.name!r} (config {scorer.hash}); recalibrate with this verifier")
    return cal


def calibration_summary(scores: np.ndarray, labels: np.ndarray, alpha: float, delta: float,
                        verifier: str, verifier_hash: str) -> dict[str, Any]:
    from .conformal import ConformalGuard, SmallCalibrationWarning, pac_rank
    from .stats import wilson

    ok = np.isfinite(scores)
    scores, labels = scores[ok], labels[ok]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SmallCalibrationWarning)
        guard = ConformalGuard(alpha=alpha).calibrate(scores, labels)
    neg = np.sort(scores[labels == 0])
    kp = pac_rank(len(neg), alpha, delta)
    flags = ~(scores > guard.tau)
    fr = wilson(int(flags.sum()), len(flags))
    need = int(np.ceil(1 / alpha - 1))
    msgs = [str(w.message) for w in caught]
    if len(neg) < 2 * need:
        msgs.append(f"only {len(neg)} unsupported examples: alpha={alpha} needs >= {need} for a finite tau; "
                    f"collect >= ~200 labelled citations from the target domain")
    return {
        "alpha": alpha, "tau": guard.tau, "k": guard.k, "n_unsupported": guard.n_unsupported,
        "n_supported": int((labels == 1).sum()), "n_dropped_nan": int((~ok).sum()),
        "verifier": verifier, "verifier_hash": verifier_hash,
        "marginal_guarantee": f"a new unsupported citation is flagged with probability >= {1 - alpha:.3g}",
        "pac": {"delta": delta, "k": kp, "tau": float(neg[kp - 1]) if kp <= len(neg) else float("inf"),
                "guarantee": f"with probability >= {1 - delta:.3g} over the calibration draw, "
                             f"the catch rate is >= {1 - alpha:.3g}"},
        "expected_flag_rate": {"estimate": fr.estimate, "ci_low": fr.low, "ci_high": fr.high,
                               "note": "share of all labelled citations flagged at tau (Wilson 95% CI)"},
        "flag_rate_supported": float(np.mean(scores[labels == 1] <= guard.tau)) if (labels == 1).any() else None,
        "assumption": "calibration unsupported citations are exchangeable with deployment unsupported citations",
        "warnings": msgs,
    }


# ---------------------------------------------------------------- commands

def cmd_guard(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from .guarding import GuardInputError, guard_answer

    scorer = make_scorer(args)
    tau, guarantee = None, ""
    if args.calibration:
        cal = load_calibration(args.calibration, scorer)
        tau = float(cal["tau"])
        guarantee = (f"{cal['marginal_guarantee']} (alpha={cal['alpha']}, tau={tau:.6g}, "
                     f"n_unsupported={cal.get('n_unsupported')}); assumes {cal.get('assumption', 'exchangeability')}")
    out = _open_out(args.out)
    batch = args.input.endswith(".jsonl") or args.jsonl
    totals = {"answers": 0, "failed_answers": 0, "n_citations": 0, "verified": 0, "reattributed": 0,
              "flagged": 0, "invalid": 0}
    records = iter_json_records(args.input)
    bar = tqdm(records, desc="guard", unit="answer", disable=not batch or args.quiet, file=sys.stderr)
    for lineno, rec in bar:
        where = f"{args.input}:{lineno}" if batch else args.input
        try:
            if isinstance(rec, CLIError):
                raise rec
            answer, passages, base = parse_answer(rec, where)
            text, report = guard_answer(answer, passages, scorer, tau=tau, base=base if base is not None else args.base,
                                 reattribute=None if args.no_reattribute else args.reattributor,
                                 proposals=args.proposals, remove=args.remove, guarantee=guarantee)
        except (CLIError, GuardInputError) as e:
            if not batch:
                raise CLIError(str(e)) from None
            print(f"error: {e}", file=sys.stderr)
            totals["failed_answers"] += 1
            continue
        totals["answers"] += 1
        for k in ("n_citations", "verified", "reattributed", "flagged", "invalid"):
            totals[k] += getattr(report, k)
        result = {"id": rec.get("id"), "guarded_answer": text, "report": report.to_dict()}
        out.write(json.dumps(result) + "\n" if batch else json.dumps(result, indent=2) + "\n")
    if out is not sys.stdout:
        out.close()
    totals["review_budget"] = round(totals["flagged"] / totals["n_citations"], 4) if totals["n_citations"] else 0.0
    if batch:
        print("counts: " + json.dumps(totals), file=sys.stderr)
    return 2 if totals["failed_answers"] else 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    if bool(args.scores) == bool(args.labels):
        raise CLIError("give exactly one of --scores (frozen scores) or --labels (claims to score)")
    scorer = None
    if args.labels:
        scorer = make_scorer(args)
    else:
        from .verifiers import verifier_hash
        vcfg, _, _ = load_verifier_configs(args.verifier, args.override or [])
    scores, labels, claims, passages = [], [], [], []
    src = args.scores or args.labels
    for lineno, rec in iter_json_records(src):
        if isinstance(rec, CLIError):
            raise rec
        if not isinstance(rec, dict) or rec.get("label") not in (0, 1, True, False):
            raise CLIError(f"{src}:{lineno}: expected 'label' 0 (unsupported) or 1 (supported)")
        labels.append(int(rec["label"]))
        if args.scores:
            if not isinstance(rec.get("score"), (int, float)):
                raise CLIError(f"{src}:{lineno}: expected a numeric 'score'")
            scores.append(float(rec["score"]))
        else:
            if not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
                raise CLIError(f"{src}:{lineno}: expected 'claim' and 'passage' strings")
            claims.append(rec["claim"])
            passages.append(rec["passage"])
    if args.labels:
        scores = list(scorer(claims, passages)[0])
        vhash, vname = scorer.hash, scorer.name
    else:
        vhash, vname = verifier_hash(vcfg), args.verifier
    summary = calibration_summary(np.asarray(scores, float), np.asarray(labels), args.alpha, args.delta, vname, vhash)
    for w in summary["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    fh = _open_out(args.out)
    fh.write(json.dumps(summary, indent=2) + "\n")
    if fh is not sys.stdout:
        fh.close()
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    scorer = make_scorer(args)
    recs = []
    for lineno, rec in iter_json_records(args.input):
        if isinstance(rec, CLIError):
            raise rec
        if not isinstance(rec, dict) or not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
            raise CLIError(f"{args.input}:{lineno}: expected 'claim' and 'passage' strings")
        recs.append(rec)
    s, v = scorer([r["claim"] for r in recs], [r["passage"] for r in recs])
    out = _open_out(args.out)
    for r, sc, vd in zip(recs, s, v):
        out.write(json.dumps({**r, "score": None if np.isnan(sc) else float(sc), "verdict": bool(vd),
                              "verifier": scorer.name}) + "\n")
    if out is not sys.stdout:
        out.close()
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .convert import convert_records
    from .io import DataError

    out = _open_out(args.out)
    n = unresolved = 0
    try:
        for rec in convert_records(args.path, args.format):
            out.write(json.dumps(rec) + "\n")
            n += 1
            unresolved += rec.get("unresolved_markers", 0)
    except (DataError, KeyError, AttributeError) as e:
        raise CLIError(f"{args.path}: cannot convert as {args.format!r} ({e})") from None
    if out is not sys.stdout:
        out.close()
    print(f"converted {n} answers; {unresolved} markers left unresolved (unknown ids)", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="citeguard", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def verifier_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--verifier", default="embedding", help="verifier config name (config/verifier/NAME.yaml)")
        sp.add_argument("--override", action="append", metavar="KEY=VALUE",
                        help="override a verifier config key, e.g. model=/path/to/model device=cpu")
        sp.add_argument("--model", help="fitted-model JSON for stacked verifiers (results/models/NAME.json)")
        sp.add_argument("--cache-dir", default=os.environ.get("CITEGUARD_CACHE"), help="on-disk score cache")

    g = sub.add_parser("guard", help="verify -> re-attribute -> flag the citations of cited answers")
    g.add_argument("--input", default="-", help="answer JSON, or JSONL (one answer per line); '-' = stdin")
    g.add_argument("--out", default="-")
    g.add_argument("--calibration", help="calibration JSON from 'citeguard calibrate' (conformal flag rule)")
    g.add_argument("--no-reattribute", action="store_true")
    g.add_argument("--reattributor", choices=["bm25", "verifier"], default="bm25")
    g.add_argument("--proposals", type=int, default=3, help="re-attribution proposals the verifier checks")
    g.add_argument("--remove", action="store_true", help="delete flagged sentences instead of marking them")
    g.add_argument("--base", type=int, choices=[0, 1], default=1, help="citation numbering base")
    g.add_argument("--jsonl", action="store_true", help="treat input as JSONL even without .jsonl suffix")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    verifier_opts(g)
    g.set_defaults(func=cmd_guard)

    c = sub.add_parser("calibrate", help="split-conformal threshold from labelled citations or frozen scores")
    c.add_argument("--scores", help='JSONL of {"score": float, "label": 0|1} (1 = supported)')
    c.add_argument("--labels", help='JSONL of {"claim", "passage", "label"} scored with --verifier')
    c.add_argument("--alpha", type=float, default=0.1, help="1 - target catch rate on unsupported citations")
    c.add_argument("--delta", type=float, default=0.1, help="PAC failure probability")
    c.add_argument("--out", default="-")
    verifier_opts(c)
    c.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("score", help="score claim-passage pairs with any verifier")
    s.add_argument("--input", default="-", help='JSONL of {"claim", "passage"}')
    s.add_argument("--out", default="-")
    verifier_opts(s)
    s.set_defaults(func=cmd_score)

    v = sub.add_parser("convert", help="released answers -> guard input JSONL with [N] markers")
    v.add_argument("path")
    v.add_argument("--format", choices=["nora", "sections", "ctxs"], required=True)
    v.add_argument("--out", default="-")
    v.set_defaults(func=cmd_convert)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover
        pass
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if getattr(args, "alpha", None) is not None and not 0 < args.alpha < 1:
        print("error: --alpha must be in (0, 1)", file=sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
