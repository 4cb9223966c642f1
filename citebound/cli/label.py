"""citebound label: label a seeded uniform random sample of citations on a local page.

The labels feed ``citebound calibrate --labels``. ``--agreement A B`` instead reports two labellers'
agreement on the same sample (kappa, AC1 and observed agreement, with CIs).

Example::

    citebound guard --input answers.jsonl --echo-input --out guarded.jsonl
    citebound label --input guarded.jsonl --out labels.jsonl --sample 200
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from citebound.cli.common import (
    CLIError,
    add_command,
    add_verifier_args,
    labeller_default,
    parse_overrides,
    runtime_args,
)
from citebound.cli.inputs import check_out, iter_json_records, parse_answer


def add_parser(sub: Any) -> None:
    lb = add_command(sub, "label", __doc__, "label a seeded uniform random sample of citations on a local page "
                                            "(for citebound calibrate --labels); or --agreement A B")
    lb.add_argument("--input", metavar="FILE", help="answers with passages (JSON/JSONL), or guard --echo-input output")
    lb.add_argument("--from-reports", metavar="FILE",
                    help="guarded answers (citebound guard --echo-input output): a uniform sample of the citations the "
                         "guard deployed, with its verdicts, for citebound monitor --labels and calibrate --labels")
    lb.add_argument("--out", metavar="LABELS", help="the labels file (JSONL; resumed if it exists)")
    lb.add_argument("--sample", type=int, metavar="N", help="citations to sample (default: all, in random order)")
    lb.add_argument("--seed", type=int, default=0, help="the sample's seed")
    lb.add_argument("--labeller", default=labeller_default(), help="who labels (stored per label)")
    lb.add_argument("--alpha", type=float, default=0.1, help="the panel's alpha")
    lb.add_argument("--port", type=int, default=8766, help="the page's port on 127.0.0.1")
    lb.add_argument("--base", type=int, choices=[0, 1], default=1, help="citation base when a record has none")
    lb.add_argument("--repair-truncated", action="store_true",
                    help="resume a labels file whose last line a crash cut short: drop that partial line")
    lb.add_argument("--host", default="127.0.0.1",
                    help="address the page listens on; requests must name it (or localhost) in their Host header")
    lb.add_argument("--agreement", nargs=2, metavar=("A", "B"),
                    help="two labellers' files of the same sample: kappa, AC1 and observed agreement with CIs")
    add_verifier_args(lb)
    lb.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Label a seeded uniform sample of citations on a local page, or report two labellers' agreement."""
    from citebound.labelling.store import LabelError, agreement, read_labels

    if args.agreement:
        try:
            a, b = (read_labels(p) for p in args.agreement)
        except (LabelError, OSError) as e:
            raise CLIError(str(e)) from None
        print(json.dumps(agreement(a, b, seed=args.seed), indent=2))
        return 0
    if args.input and args.from_reports:
        raise CLIError("give --input or --from-reports, not both")
    args.reports_only = bool(args.from_reports)
    args.input = args.input or args.from_reports
    if not args.input or not args.out:
        raise CLIError("give --input ANSWERS (or --from-reports GUARDED) and --out LABELS (or --agreement A B)")
    if args.sample is not None and args.sample < 1:
        raise CLIError(f"--sample must be >= 1, got {args.sample}")
    if not 0 < args.alpha < 1:
        raise CLIError(f"--alpha must be in (0, 1), got {args.alpha}")
    check_out(args.out)
    try:
        from citebound.labelling.app import create_label_app
    except ImportError as e:
        raise CLIError(f"citebound label needs the [serve] extra (pip install 'citebound[serve]'): {e}") from None
    session = make_label_session(args)
    url = f"http://{args.host}:{args.port}/"
    p = session.state()["panel"]
    print(f"labelling {len(session.sample)} sampled citations (seed {args.seed}); {p['labelled']} already labelled "
          f"in {args.out}; open {url}", file=sys.stderr, flush=True)
    import uvicorn
    uvicorn.run(create_label_app(session, host=args.host, port=args.port), host=args.host, port=args.port,
                log_level="warning")
    p = session.state()["panel"]
    print(f"labelled {p['labelled']} of {p['sample_size']}: {p['supported']} supported, {p['unsupported']} "
          f"unsupported, {p['cant_tell']} can't tell, {p['sample_size'] - p['labelled']} not labelled",
          file=sys.stderr)
    return 0


def read_answers(path: str, reports_only: bool = False) -> tuple[list[dict[str, Any]], list[int]]:
    """The answer records to sample from and their input lines; a bad one is counted and reported, not sampled.
    ``reports_only``: every record must carry the guard's report (--from-reports)."""
    records, lines, skipped = [], [], 0
    for lineno, rec in iter_json_records(path):
        where = f"{path}:{lineno}"
        try:
            if isinstance(rec, CLIError):
                raise rec
            if not isinstance(rec, dict) or "answer" not in rec or not ("passages" in rec or "ctxs" in rec):
                raise CLIError(f"{where}: expected an answer with its passages (raw answers, or citebound guard "
                               "--echo-input output)")
            if reports_only and "report" not in rec:
                raise CLIError(f"{where}: no 'report': --from-reports reads citebound guard --echo-input output")
            parse_answer(rec, where)
        except CLIError as e:  # counted and reported; the rest are sampled from
            print(f"skipped: {e}", file=sys.stderr)
            skipped += 1
            continue
        records.append(rec)
        lines.append(int(rec.get("line") or lineno) if "report" in rec else lineno)
    if skipped:
        print(f"{skipped} answers skipped (not sampled from); see the lines above", file=sys.stderr)
    return records, lines


def next_steps(args: argparse.Namespace) -> list[str]:
    """The commands that use the finished labels, exactly: recalibrate, and (for deployed citations) test the
    guarantee in force."""
    import shlex

    q = shlex.quote
    verifier = f"--verifier {q(args.verifier)}" + "".join(f" --override {q(o)}" for o in args.override or []) + (
        f" --model {q(args.model)}" if args.model else "")
    out = [f"citebound calibrate --labels {q(args.out)} {verifier} --alpha {args.alpha:g} --out cal.json"]
    if getattr(args, "reports_only", False):
        out.append(f"citebound monitor --reports {q(args.input)} {verifier} --labels {q(args.out)}")
    return out


def make_label_session(args: argparse.Namespace):
    """The sample and the labels file of a citebound label run: the sample is drawn from the parsed
    citations first, the labels file is checked against it, and only then does the verifier load, to
    score the sampled citations that are not labelled yet."""
    from citebound.labelling.store import (
        LabelError,
        LabelSession,
        LabelStore,
        citation_population,
        input_digest,
        score_items,
        uniform_sample,
    )
    from citebound.scoring.loader import VerifierLoadError, configured_hash, load_scorer, verifier_definitions

    records, lines = read_answers(args.input, getattr(args, "reports_only", False))
    try:
        items, counts = citation_population(records, lines, args.input, base=args.base)
    except LabelError as e:
        raise CLIError(str(e)) from None
    if not items:
        raise CLIError(f"{args.input}: no citation that points at a passage, nothing to label")
    for line in counts["skipped"]:
        print(f"skipped: {line}", file=sys.stderr)
    if counts["answers_skipped"]:
        print(f"{counts['answers_skipped']} answers skipped (not sampled from); see the lines above", file=sys.stderr)
    sample = uniform_sample(items, args.sample, args.seed)
    print(f"{counts['answers']} answers, {counts['citations']} citations, {counts['invalid_not_sampled']} "
          f"invalid or unreadable (no passage; not sampled), {len(items)} to sample from; sampled {len(sample)}",
          file=sys.stderr, flush=True)
    try:
        vcfg, _, _ = verifier_definitions(args.verifier, parse_overrides(args.override), runtime_args(args))
        meta = {"sample_seed": args.seed, "sample_size": len(sample), "input_sha256": input_digest(args.input),
                "verifier": args.verifier, "verifier_hash": configured_hash(vcfg, args.model)}
        store = LabelStore(args.out, meta, repair_truncated=args.repair_truncated)  # checked before any model loads
    except (VerifierLoadError, LabelError) as e:
        raise CLIError(str(e)) from None
    if store.repaired:
        print(f"warning: {args.out}: dropped a partial last line (a crash mid-write); that click is to label again",
              file=sys.stderr)
    done = store.labelled
    todo = [it for it in sample if it.item_id not in done and it.score is None]
    if todo:
        try:
            scorer = load_scorer(args.verifier, parse_overrides(args.override), model_path=args.model,
                                 cache_dir=args.cache_dir, runtime=runtime_args(args))
        except VerifierLoadError as e:
            raise CLIError(str(e)) from None
        if scorer.hash != meta["verifier_hash"]:
            raise CLIError(f"verifier {args.verifier!r} loaded with id {scorer.hash}, not {meta['verifier_hash']}: "
                           "give --model the trained verifier's folder explicitly")
        print(f"scoring the {len(todo)} sampled citations not labelled yet with {scorer.name}", file=sys.stderr, flush=True)
        scored = {it.item_id: it for it in score_items(todo, scorer)}
        sample = [scored.get(it.item_id, it) for it in sample]
    try:
        session = LabelSession(sample, store, args.labeller, alpha=args.alpha)
        session.next_steps = next_steps(args)
        return session
    except LabelError as e:
        raise CLIError(str(e)) from None
