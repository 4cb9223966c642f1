"""citebound guard: verify -> re-attribute -> flag the citations of cited answers.

Example::

    citebound guard --input "$(citebound example)" --verifier lexical
    citebound guard --input answers.jsonl --out guarded.jsonl --calibration cal.json --html audit.html
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from citebound.cli.common import (
    CLIError,
    add_command,
    add_limit_arg,
    add_out_arg,
    add_policy_args,
    add_verifier_args,
    parse_limits,
    parse_overrides,
    runtime_args,
)
from citebound.cli.inputs import check_out, close_out, iter_json_records, open_out, parse_answer

COUNTS = ("n_citations", "verified", "reattributed", "flagged", "invalid", "unverified", "uncited")


def add_parser(sub: Any) -> None:
    g = add_command(sub, "guard", __doc__, "verify -> re-attribute -> flag the citations of cited answers")
    g.add_argument("--input", default="-", metavar="FILE",
                   help="answer JSON, or JSONL (one answer per line); '-' = stdin")
    add_out_arg(g, "the guarded answers and reports (JSON; JSONL for JSONL input)")
    g.add_argument("--html", metavar="FILE", help="also write a self-contained HTML audit page")
    g.add_argument("--calibration", metavar="JSON",
                   help="calibration from 'citebound calibrate': flag iff score <= tau; default: the verifier's shipped "
                        "calibration on the expert attribution gold where it has one (citebound verifiers), else its "
                        "verdict; 'none': the verifier's verdict")
    g.add_argument("--no-mark-reattributed", action="store_true",
                   help="write a re-attributed citation as [2] instead of [2 (was 4)]")
    g.add_argument("--no-reattribute", action="store_true",
                   help="flag failed citations without looking for a better passage")
    g.add_argument("--reattributor", default="bm25", metavar="NAME",
                   help="re-attributor definition (citebound/definitions/reattributor/NAME.yaml): bm25 or verifier")
    g.add_argument("--proposals", type=int, default=3, help="BM25 proposals the verifier checks per failed citation")
    g.add_argument("--group", metavar="NAME",
                   help="the calibration group of the answers (a calibration made with grouped labels); a record's "
                        "own 'group' field wins; default: the pooled calibration")
    g.add_argument("--remove", action="store_true", help="the same as --action remove")
    add_policy_args(g)
    g.add_argument("--base", type=int, choices=[0, 1], default=1,
                   help="citation numbering base when a record has no citation_base: 1 = [1] is the first passage")
    g.add_argument("--jsonl", action="store_true", help="treat input as JSONL even without .jsonl suffix")
    g.add_argument("--echo-input", action="store_true",
                   help="also write each answer and its passages into the output (input for citebound label)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.add_argument("--batch-answers", type=int, default=16, metavar="N",
                   help="answers whose citations go to the verifier together")
    add_limit_arg(g)
    add_verifier_args(g)
    g.set_defaults(func=run)


def make_guard(args: argparse.Namespace):
    """The :class:`~citebound.guarding.guard.Guard` the guard command's options describe (built once)."""

    if args.batch_answers < 1:
        raise CLIError(f"--batch-answers must be >= 1, got {args.batch_answers}")
    if args.proposals < 1:
        raise CLIError(f"--proposals must be >= 1, got {args.proposals}")
    from citebound.cli.common import build_guard, check_state

    check_state(args.state, wait_s=0)
    return build_guard(args, base=args.base, proposals=args.proposals, mark_reattributed=not args.no_mark_reattributed)


class _Run:
    """One guard command's output files, totals and audit-page entries."""

    def __init__(self, args: argparse.Namespace, guard: Any, batch: bool):
        self.args, self.guard, self.batch = args, guard, batch
        self.out = open_out(args.out)
        self.html = open_out(args.html) if args.html else None
        self.totals = {"answers": 0, "failed_answers": 0, "blocked": 0, **{k: 0 for k in COUNTS}}
        self.entries: list[Any] = []
        self.budgets: list[dict[str, Any]] = []  # each report's budget and its weight (report.pooled_review_budget)
        self.failed: list[tuple[str, str]] = []  # (answer id or line, why), for the audit page
        self.verifier_errors, self.first_error = 0, ""

    def flush(self, chunk: list[tuple[int, Any, str, list[str], int | None]]) -> None:
        results = self._guard_groups(chunk)
        for (lineno, rec, answer, passages, base), (text, report) in zip(chunk, results):
            self.totals["answers"] += 1
            for k in COUNTS:
                self.totals[k] += getattr(report, k)
            result = {"id": rec.get("id"), "guarded_answer": None if report.blocked else text,
                      "report": report.to_dict()}
            self.totals["blocked"] += report.blocked
            self.budgets.append({k: getattr(report, k) for k in ("review_budget", "n_citations", "uncited",
                                                                  "uncited_policy")})
            for a in report.audit:  # the verifier could not run: the output fails closed, the command says so
                if a.action == "unverified" and not a.unreadable:  # what no verifier failure explains is unreadable
                    self.verifier_errors += 1
                    self.first_error = self.first_error or a.reason
            if self.args.echo_input:  # what citebound label needs to show each citation's passage
                result.update(answer=answer, passages=passages, line=lineno,
                              citation_base=self.args.base if base is None else base)
            self.out.write(json.dumps(result) + "\n" if self.batch else json.dumps(result, indent=2) + "\n")
            if self.html is not None:
                from citebound.guarding.audit_page import AuditEntry
                self.entries.append(AuditEntry(str(rec.get("id", lineno)), answer, result["guarded_answer"],
                                               result["report"]))

    def _guard_groups(self, chunk: list[tuple[int, Any, str, list[str], int | None]]) -> list[Any]:
        """Each answer guarded under its group's calibration (its record's 'group', else --group), in order."""
        from citebound.calibration.groups import check_group_name
        from citebound.text.limits import GuardInputError

        by: dict[str | None, list[int]] = {}
        for i, (lineno, rec, *_) in enumerate(chunk):  # each record's group was checked as it was read
            g = check_group_name(rec.get("group"), f"{self.args.input}:{lineno}") if isinstance(rec, dict) else None
            by.setdefault(g if g is not None else self.args.group, []).append(i)
        out: list[Any] = [None] * len(chunk)
        for g, idx in by.items():
            try:
                done = self.guard.guard_many([chunk[i][2:5] for i in idx], group=g)
            except GuardInputError as e:  # an unknown group names the answers' file and line
                raise CLIError(f"{self.args.input}:{chunk[idx[0]][0]}: {e}") from None
            for i, r in zip(idx, done):
                out[i] = r
        return out

    def fail(self, message: str, rec: Any, lineno: int | None, *, printed: bool) -> None:
        if not printed:
            print(f"error: {message}", file=sys.stderr)
        self.totals["failed_answers"] += 1
        rid = rec.get("id") if isinstance(rec, dict) else None
        self.failed.append((str(rid if rid is not None else f"line {lineno}"), message))

    def close(self) -> None:
        close_out(self.out)
        if self.html is not None:
            from citebound.guarding.audit_page import render_audit_page
            g = self.guard
            self.html.write(render_audit_page(self.entries, verifier=g.verifier_name, rule=g.rule, guarantee=g.guarantee,
                                              failed=self.failed))
            close_out(self.html)
        from citebound.guarding.report import pooled_review_budget

        t = self.totals
        t["review_budget"] = round(pooled_review_budget(self.budgets), 4)
        if self.batch:
            print("counts: " + json.dumps(t), file=sys.stderr)


def read_checked(args: argparse.Namespace, limits: Any, state_fail: Any, batch: bool
                 ) -> list[tuple[int, Any, str, list[str], int | None]]:
    """Every input answer, parsed and checked against the limits before any model loads (a refusal
    costs what parsing costs); a bad one is reported and counted (a single answer: the error)."""
    from citebound.calibration.groups import check_group_name
    from citebound.guarding.guard import plan_citations
    from citebound.text.limits import GuardInputError

    valid = []
    for lineno, rec in iter_json_records(args.input, limits.max_request_bytes):
        where = f"{args.input}:{lineno}" if batch else args.input
        try:
            if isinstance(rec, CLIError):
                raise rec
            answer, passages, base = parse_answer(rec, where)
            try:
                check_group_name(rec.get("group"), where) if isinstance(rec, dict) else None
            except ValueError as e:  # this answer's own failure, reported and counted, not the whole run's
                raise CLIError(str(e)) from None
            try:
                plan_citations(answer, passages, args.base if base is None else base, limits)
            except GuardInputError as e:
                raise CLIError(f"{where}: {e}") from None
        except CLIError as e:
            if not batch:
                raise
            state_fail(str(e), rec, lineno)
            continue
        valid.append((lineno, rec, answer, passages, base))
    return valid


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from citebound.scoring.loader import VerifierLoadError, verifier_definitions

    check_out(args.out)
    check_out(args.html)
    limits = parse_limits(args.limit)
    try:  # a misspelt verifier or config key fails here, before the input is read or a model loads
        verifier_definitions(args.verifier, parse_overrides(args.override), runtime_args(args))
    except VerifierLoadError as e:
        raise CLIError(str(e)) from None
    batch = args.input.endswith(".jsonl") or args.jsonl
    failed: list[tuple[str, Any, int]] = []

    def refused(msg: str, rec: Any, line: int) -> None:
        print(f"error: {msg}", file=sys.stderr, flush=True)
        failed.append((msg, rec, line))

    valid = read_checked(args, limits, refused, batch)
    guard = make_guard(args)  # the model loads only now
    state = _Run(args, guard, batch)
    for msg, rec, line in failed:
        state.fail(msg, rec, line, printed=True)
    bar = tqdm(total=len(valid), desc="guard", unit="answer", disable=not batch or args.quiet, file=sys.stderr)
    for start in range(0, len(valid), args.batch_answers):  # one verifier call spans these answers
        chunk = valid[start:start + args.batch_answers]
        state.flush(chunk)  # every answer was checked against the limits as it was read: none is past one here
        bar.update(len(chunk))
    bar.close()
    state.close()
    if state.verifier_errors:
        print(f"error: {state.verifier_errors} citations could not be checked (written as unverified, "
              f"[N UNVERIFIED]): {state.first_error}", file=sys.stderr)
    return 2 if state.totals["failed_answers"] or state.verifier_errors else 0
