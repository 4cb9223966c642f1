"""citebound monitor: the drift monitor offline, over a JSONL of guarded reports.

Feeds the scores of every citation the reports verified (in file order; an invalid pointer has no
score) to the conformal test martingale of a calibration, and prints the guarantee card it ends with:
``ok``, ``suspect`` (the martingale reached the card's ``alarm_at``, 2/delta for the label-shift-robust
alarm: deployed scores no longer look like any mix of the calibration's two classes) or ``void``
(``--labels``: labelled deployed citations reject the certified miss rate).

Example::

    citebound guard --input answers.jsonl --verifier embedding --out guarded.jsonl
    citebound monitor --reports guarded.jsonl --verifier embedding
    citebound monitor --reports guarded.jsonl --calibration cal.json --labels checked.jsonl

A report whose guarantee card names another calibration (another hash: another file, or another group's)
is skipped and counted, as are labels that carry another verifier's hash; when none match, it refuses.

``--labels``: ``citebound label``'s output on a sample of the guarded citations (``--from-reports``),
whose scores say whether the guard passed each (score > the calibration's tau in force); or one
``{"label": 0|1, "passed": true|false}`` per line. Can't-tell labels (``"label": null``) are skipped and
counted. The closed loop::

    citebound guard --input answers.jsonl --verifier embedding --echo-input --out guarded.jsonl
    citebound label --from-reports guarded.jsonl --out labels.jsonl --sample 200
    citebound monitor --reports guarded.jsonl --verifier embedding --labels labels.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from citebound.cli.common import CLIError, add_command, add_out_arg
from citebound.cli.inputs import close_out, open_out


def add_parser(sub: Any) -> None:
    m = add_command(sub, "monitor", __doc__, "the drift monitor over a JSONL of guarded reports")
    m.add_argument("--reports", required=True, metavar="FILE", help="citebound guard's output (JSONL, or one JSON)")
    src = m.add_mutually_exclusive_group(required=True)
    src.add_argument("--calibration", metavar="FILE", help="the calibration the reports were guarded with")
    src.add_argument("--verifier", help="use this verifier's shipped default calibration")
    m.add_argument("--labels", metavar="FILE",
                   help='labelled deployed citations: citebound label output (the score says whether the guard passed '
                        'it), or {"label": 0|1, "passed": bool} per line')
    m.add_argument("--group", metavar="NAME",
                   help="a grouped calibration's group: its calibration's monitor, fed the reports guarded under it "
                        "(default: the pooled calibration's, fed the reports guarded under that)")
    m.add_argument("--seed", type=int, default=0, help="seed of the conformal p-values' tie-breaking draws")
    add_out_arg(m, "the guarantee card (JSON)")
    m.set_defaults(func=run)


def _calibration(args: argparse.Namespace) -> dict[str, Any]:
    from citebound.calibration.files import CalibrationError, read_calibration
    from citebound.calibrations import shipped

    try:
        cal = read_calibration(args.calibration) if args.calibration else shipped(args.verifier)
    except CalibrationError as e:
        raise CLIError(str(e)) from None
    if cal is None:
        raise CLIError(f"no shipped calibration for verifier {args.verifier!r}; give --calibration FILE")
    if not cal.get("monitor_scores"):
        raise CLIError("the calibration carries no monitor_scores (made before citebound 0.3): recalibrate with "
                       f"citebound calibrate --labels LABELS.jsonl --verifier {cal['verifier']}")
    return cal


def _records(path: str):
    """(line, record) of the guarded records of a file: one JSON object or JSONL (``citebound guard``'s output),
    read as strictly as every other reader (UTF-8, bounded, the first bad line an error naming it)."""
    from citebound.cli.inputs import strict_records

    yield from strict_records(path)


def _scores(path: str, n: int, audit: list[Any]) -> list[float]:
    from citebound.cli.inputs import is_score

    out = []
    for a in audit:
        if not isinstance(a, dict) or a.get("score") is None:
            continue
        if not is_score(a["score"]):
            raise CLIError(f"{path}:{n}: a citation's score must be a finite number, got {str(a['score'])[:40]!r}")
        out.append(float(a["score"]))
    return out


def label_counts(path: str, keeper: Any) -> tuple[int, int, int]:
    """Feed the keeper's label test the unsupported labels of ``path``: (missed, unsupported, can't-tell). A
    record's ``passed`` says whether the guard passed it; else its ``guard_action`` (label --from-reports); else
    its ``score`` against the tau in force."""
    from citebound.calibration.files import in_force
    from citebound.cli.inputs import is_label, is_score

    tau = in_force(keeper.cal)[1]
    vhash = keeper.cal.get("verifier_hash")
    missed = unsupported = unsure = foreign = n_records = 0
    for n, rec in _records(path):
        if not isinstance(rec, dict) or "label" not in rec:
            raise CLIError(f'{path}:{n}: expected a label record ("label": 0|1|null, and "passed" or "score")')
        n_records += 1
        if rec.get("verifier_hash") is not None and rec["verifier_hash"] != vhash:
            foreign += 1  # labels of citations another verifier judged: they say nothing of this calibration
            continue
        if rec["label"] is None:
            unsure += 1
            continue
        if not is_label(rec["label"]):
            raise CLIError(f"{path}:{n}: 'label' must be 0, 1 or null, got {str(rec['label'])[:40]!r}")
        if isinstance(rec.get("passed"), bool):
            passed = rec["passed"]
        elif isinstance(rec.get("guard_action"), str):  # citebound label --from-reports: the guard's own verdict
            passed = rec["guard_action"] == "verified"
        elif is_score(rec.get("score")) and tau is not None:
            passed = float(rec["score"]) > tau
        else:
            raise CLIError(f"{path}:{n}: no 'passed' and no score to tell whether the guard passed it"
                           + (" (the calibration has no tau)" if tau is None else ""))
        if rec["label"] == 0:
            unsupported += 1
            missed += passed
    if n_records and foreign == n_records:
        raise CLIError(f"{path}: all {foreign} labels carry another verifier's hash than the calibration's "
                       f"({keeper.cal.get('verifier')!r}, id {vhash}): label the citations this verifier judged")
    if unsupported:
        keeper.labels(missed, unsupported)
    print(f"labels: {unsupported} unsupported, {missed} of them passed by the guard; {unsure} can't-tell skipped; "
          f"{foreign} of another verifier skipped", file=sys.stderr)
    return missed, unsupported, unsure


def run(args: argparse.Namespace) -> int:
    from citebound.guarding.card import Calibrations

    cal = _calibration(args)
    try:
        keeper, fallback = Calibrations(cal, seed=args.seed).resolve(args.group)  # a group's own, or the pooled one
    except ValueError as e:
        raise CLIError(str(e)) from None
    if keeper.monitor is None:
        raise CLIError(f"group {args.group!r}'s calibration carries no monitor_scores: recalibrate")
    mon, target = keeper.monitor, keeper.cal.get("group") or "pooled"
    reports = skipped = other = 0
    names: dict[str, int] = {}
    for n, rec in _records(args.reports):
        report = (rec.get("report") or {}) if isinstance(rec, dict) else {}
        audit = report.get("audit") if isinstance(report, dict) else None
        if not isinstance(audit, list):  # an answer the guard refused (its error line) has no report
            skipped += 1
            continue
        scores = _scores(args.reports, n, audit)  # every report is read strictly, counted or not
        card = report.get("guarantee_card")
        # one monitor, one calibration: a report counts only when its card names this calibration's hash
        named = card.get("calibration_hash") if isinstance(card, dict) else None
        if named != keeper.hash:
            other += 1
            names[str(named)] = names.get(str(named), 0) + 1
            continue
        keeper.observe_scores(scores)
        reports += 1
    if not reports:
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(names.items(), key=lambda kv: -kv[1])[:3])
        raise CLIError(f"{args.reports}: no report was guarded under this calibration (hash {keeper.hash}, "
                       f"{target!r})" + (f"; the {other} reports name {seen}" if other else
                                         f": the file holds no guarded reports ({skipped} lines without one)"))
    if args.labels:
        label_counts(args.labels, keeper)
    out = open_out(args.out)
    try:
        out.write(json.dumps(keeper.card(args.group, fallback), indent=1) + "\n")
    finally:
        close_out(out)
    print(f"{reports} reports, {mon.n_seen} citation scores ({skipped} lines without a report skipped, {other} reports "
          f"of another calibration than {target!r} skipped): state "
          f"{mon.state}, martingale {mon.value:.4g} (alarm at {mon.card()['alarm_at']:g})", file=sys.stderr)
    return 0
