"""The deployable guard: verify -> re-attribute -> flag, for one cited answer.

For each citation of each cited sentence (what counts as a citation is
:func:`citebound.text.citations.sentence_citations`, shared with extraction):

1. **verify** the sentence (markers removed) against the cited passage; a
   citation that points at no passage (out of range) is **invalid**, the
   clearest unsupported citation there is;
2. if it fails or is invalid, **re-attribute**: the re-attributor (BM25 by
   default) proposes other provided passages and the verifier must accept one
   before the pointer moves (the sentence is kept, only the pointer changes;
   the best-scoring accepted proposal wins);
3. otherwise **flag** it in place as ``[N UNVERIFIED]`` or ``[N INVALID]`` (or,
   with ``remove=True``, drop the sentence).

With a calibration (``tau``) a citation passes iff ``score > tau`` (the
split-conformal rule); without, the verifier's own verdict decides. Each
audit entry carries the evidence: the best window's character span in the
passage and its text.

This module is the guard alone: it imports no study code (analysis,
statistics), only citation parsing, re-attribution and the verifier windows.
"""
from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citebound.guarding.reattributors import Reattributor, load_reattributor
from citebound.guarding.report import ACTIONS, CitationAudit, Evidence, GuardReport, failed, normalise_passages  # noqa: F401
from citebound.guarding.rewrite import apply as _apply
from citebound.guarding.rewrite import by_marker as _by_marker
from citebound.guarding.rewrite import rewrite as _rewrite
from citebound.guarding.rewrite import target as _target
from citebound.scoring import deadline
from citebound.text.citations import Citation, sentence_citations, sentences, strip_markers
from citebound.text.forms import fold_markers, other_forms, sentences_touching

# GuardInputError (bad input) and its subclass LimitExceeded: callers catch them from here too
from citebound.text.limits import GuardInputError, LimitExceeded, Limits, check_text  # noqa: F401
from citebound.text.visible import HIDDEN, OBSCURED, blank_spans, drop_invisible, passage_view, scan
from citebound.verifiers import SCALES
from citebound.verifiers.base import window_spans

Scorer = Callable[[Sequence[str], Sequence[str]], tuple[np.ndarray, np.ndarray]]


@dataclass
class _Judged:
    score: np.ndarray
    passed: np.ndarray
    evidence: list[Evidence]
    errors: list[str] = field(default_factory=list)  # per unit: why the verifier gave it no score ('' if it did)

    def __add__(self, other: _Judged) -> _Judged:
        return _Judged(np.concatenate([self.score, other.score]), np.concatenate([self.passed, other.passed]),
                       self.evidence + other.evidence, self.errors + other.errors)


@dataclass
class _Plan:
    """One answer on its way through the guard: its sentences, citations and audits."""

    answer: str
    passages: list[str]  # as verified: hidden markup blanked, invisible characters dropped
    base: int
    sents: list[Any]
    cites: dict[int, list[Citation]]
    audit_of: dict[tuple[int, Any], CitationAudit]
    audits: list[CitationAudit]
    report: GuardReport
    view: str = ""  # the answer as a reader sees it (hidden markup blanked, marker look-alikes folded)
    odd: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # per sentence: brackets it cannot read
    uncited: list[int] = field(default_factory=list)  # sentences with words and no citation
    max_units: int = Limits.max_units_per_answer  # (claim, window) units re-attribution may add


UNCITED = ("flag", "ignore")  # whether sentences that cite nothing count toward the review budget and block
_WORD = re.compile(r"[^\W\d_]{2,}")


def _uncited(sent_text: str) -> bool:
    """A sentence a reader takes for a statement: it has a word of two or more letters (markup alone, a
    number or a bullet does not)."""
    return _WORD.search(sent_text) is not None


def _plan(answer: str, passages: Sequence[str], base: int, tau: float | None, guarantee: str,
          limits: Limits) -> _Plan:
    if not isinstance(answer, str):
        raise GuardInputError("'answer' must be a string")
    if base not in (0, 1):
        raise GuardInputError(f"citation base must be 0 or 1, got {base!r}")
    passages = list(passages)
    limits.check_answer(answer)
    limits.check_passages(passages)
    check_text(answer, "'answer'")  # before it can join a batch: a lone surrogate would fail the batch's call
    for i, p in enumerate(passages):
        check_text(p, f"passage {i}")
    # a passage is read as a reader sees it: text a browser hides or a reader cannot see supports nothing
    passages = [passage_view(p) for p in passages]
    seen = scan(answer)
    # what a reader sees, at the same offsets: markup and hidden elements are neither claim nor marker, and a
    # full-width or dash-variant marker is the marker it looks like
    view = fold_markers(blank_spans(answer, seen.spans[HIDDEN]))
    sents = sentences(view)
    limits.check_sentences(len(sents))
    cites, total = {}, 0
    for s in sents:
        cites[s.index] = sentence_citations(view, s, len(passages), base=base, max_range=limits.max_range,
                                            max_citations=limits.max_citations_per_sentence)
        total += len(cites[s.index])
        limits.check_citations(len(cites[s.index]), total, s.index)
    odd: dict[int, list[tuple[int, int]]] = {}
    parsed = sorted((c.start, c.end) for cs in cites.values() for c in cs)
    starts = [s.start for s in sents]
    for lo, hi in other_forms(answer, view):  # what a reader takes for a citation that the guard cannot read
        k = bisect.bisect_left(parsed, (hi, -1))
        if k and parsed[k - 1][1] > lo or not sents:
            continue  # overlaps a parsed marker
        si = sents[max(bisect.bisect_right(starts, lo) - 1, 0)].index
        odd.setdefault(si, []).append((lo, hi))
        total += 1
        limits.check_citations(len(cites[si]) + len(odd[si]), total, si)
    # sentences holding text a reader may not see (styled invisible, or the guard cannot tell): their
    # citations cannot be checked against what the reader takes the claim to be
    obscured = sentences_touching(sents, [(lo, hi) for lo, hi in seen.spans[OBSCURED] if view[lo:hi].strip()])
    claims = {si: strip_markers(drop_invisible(sents[si].text)) for si, cs in cites.items() if cs or si in odd}
    uncited = [s.index for s in sents if s.index not in claims and _uncited(drop_invisible(s.text))]
    report = GuardReport(n_sentences=len(sents), n_cited_sentences=len(claims), guarantee=guarantee,
                         rule=f"pass iff score > tau = {tau:.6g}" if tau is not None else "pass iff verifier verdict",
                         hidden_regions=seen.hidden_regions, uncited=len(uncited))
    # one audit per distinct target of a sentence; repeats ([1][1]) share it
    audits: list[CitationAudit] = []
    audit_of: dict[tuple[int, Any], CitationAudit] = {}
    for si, cs in cites.items():
        for c in cs:
            target = _target(c)
            if (si, target) in audit_of:
                audit_of[(si, target)].spans.append((c.start, c.end))
                continue
            a = CitationAudit(si, claims[si], int(c.key), c.marker, [(c.start, c.end)], None,
                              "invalid" if c.passage_index < 0 else "verified")
            if c.passage_index < 0:
                a.reason = f"citation [{c.key}] points at no passage (have {len(passages)}, numbered from {base})"
            elif not passages[c.passage_index].strip():  # fails closed, failing open too: no verifier failed
                a.action, a.unreadable = "unverified", True
                a.reason = (f"passage [{c.key}] has no text a reader can see (empty, hidden or styled invisible): "
                            "there is nothing to check it against")
            elif si in obscured:
                a.action, a.unreadable = "unverified", True
                a.reason = ("part of this sentence is text a reader may not see (styled invisible, or styled in a way "
                            "the guard cannot read): what the reader takes the claim to be cannot be checked")
            audit_of[(si, target)] = a
            audits.append(a)
    for si, found in odd.items():
        for lo, hi in found:
            shown = view[lo:hi]  # never blank: other_forms finds its spans in what a reader sees
            audits.append(CitationAudit(si, claims[si], -1, shown, [(lo, hi)], None, "unverified", unreadable=True,
                                        reason=f"{shown[:60]} looks like a citation but is not one the guard can "
                                               "read ([N], [N, M], [N-M]): it was not checked"))
    report.n_citations = len(audits)
    windows = [n_windows(len(p)) for p in passages]
    limits.check_units(sum(windows[a.cited - base] for a in audits if a.action == "verified"))
    return _Plan(answer, passages, base, sents, cites, audit_of, audits, report, view, odd, uncited,
                 limits.max_units_per_answer)


def n_windows(chars: int, window_chars: int = 600, stride: int = 300) -> int:
    """How many windows the verifier scores in a passage of ``chars`` characters (at 600/300 by default).

    >>> n_windows(0), n_windows(600), n_windows(601), n_windows(900), n_windows(901)
    (1, 1, 2, 2, 3)
    """
    return 1 if chars <= window_chars else -(-(chars - window_chars) // stride) + 1


class Unavailable:
    """A scorer that cannot score (the guard's time ran out, its verifier is gone): every pair it is asked
    about is 'unverified' with ``reason``."""

    def __init__(self, reason: str):
        self.reason = reason

    def __call__(self, claims: Sequence[str], passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError(self.reason)


def plan_citations(answer: str, passages: Sequence[str], base: int = 1,
                   limits: Limits | None = None) -> tuple[list[Any], list[CitationAudit]]:
    """The sentences of an answer and the citations the guard would check in it, unscored: one
    :class:`CitationAudit` per distinct target of a sentence, ``invalid`` where it points at no passage.
    Costs what parsing costs (no verifier); bad input or a limit raises as in the guard."""
    plan = _plan(answer, list(passages), base, None, "", limits or Limits())
    return plan.sents, plan.audits


def _judge_units(scorer: Any, units: list[tuple[_Plan, str, int]], tau: float | None,
                 retries: list[int] | None = None) -> _Judged:
    """Judge (claim, passage index) units that may come from several answers, in one scorer call. When the
    call raises, the units are judged again in halves, so only the units that cause the error go without
    a score (each of them 'unverified', failing closed). The halving makes at most 2 * ceil(log2 n) + 2
    more calls (``retries``), enough to isolate one bad unit: a verifier that is down for every unit costs
    a few more failed calls, not one per unit."""
    if retries is None:
        retries = [2 * math.ceil(math.log2(max(len(units), 1))) + 2]
    if not units:
        return _Judged(np.zeros(0), np.zeros(0, bool), [])
    texts = [plan.passages[i] for plan, _, i in units]
    claims = [claim for _, claim, _ in units]
    windowing, error, notes = None, "", None
    try:
        if hasattr(scorer, "score"):  # a PairScorer: the full-passage protocol, with its windows
            ps = scorer.score(claims, texts)
            s, v, best, windowing = np.asarray(ps.score, float), ps.verdict, ps.best_window, scorer.windowing
            notes = [f"the verifier gave no score: {r[len('unscored: '):]}" if r.startswith("unscored: ") else ""
                     for r in ps.reason]
        else:  # a plain callable: no windows, so the evidence is the whole passage
            res = scorer(claims, texts)
            s, v, best = np.asarray(res[0], float), res[1], None
    except deadline.Cancelled:  # the request gave up: nothing of it runs on
        raise
    except Exception as e:  # noqa: BLE001 - fails closed: no score is no pass (each citation is 'unverified')
        if len(units) > 1 and not isinstance(scorer, Unavailable) and retries[0] >= 2:
            retries[0] -= 2
            half = len(units) // 2
            return _judge_units(scorer, units[:half], tau, retries) + _judge_units(scorer, units[half:], tau, retries)
        error = scorer.reason if isinstance(scorer, Unavailable) else f"the verifier failed: {type(e).__name__}: {str(e)[:300]}"
        s, v, best = np.full(len(units), np.nan), np.zeros(len(units), bool), None
    # a pair without a score (NaN) never passes, whatever its verdict says
    passed = (s > tau if tau is not None else np.asarray(v, bool)) & ~np.isnan(s)
    ev = []
    for t, ((plan, _, i), text) in enumerate(zip(units, texts)):
        lo, hi = 0, len(text)
        if windowing is not None and best[t] >= 0:
            lo, hi = window_spans(len(text), int(windowing["window_chars"]), int(windowing["stride"]))[int(best[t])]
        ev.append(Evidence(i + plan.base, lo, hi, text[lo:hi], None if np.isnan(s[t]) else float(s[t])))
    return _Judged(s, np.asarray(passed, bool), ev, [error or n for n in notes] if notes else [error] * len(units))


def judge_pair(scorer: Any, claim: str, passage: str, tau: float | None) -> tuple[bool, Evidence, str]:
    """One claim against one passage, as the guard judges a citation: (passes, best evidence window, why it
    has no score or ''). A verifier error fails closed (no score, does not pass)."""
    plan = _Plan(passage, [passage], 0, [], {}, {}, [], GuardReport())
    j = _judge_units(scorer, [(plan, claim, 0)], tau)
    return bool(j.passed[0]), j.evidence[0], j.errors[0]


def _verify(plans: list[_Plan], scorer: Any, tau: float | None) -> None:
    """1. verify every valid citation of every answer in one batch."""
    valid = [(plan, a) for plan in plans for a in plan.audits if a.action == "verified"]
    j = _judge_units(scorer, [(plan, a.claim, a.cited - plan.base) for plan, a in valid], tau)
    for (_, a), ok, ev, err in zip(valid, j.passed, j.evidence, j.errors):
        a.score, a.evidence = ev.score, ev
        if ev.score is None:  # could not be checked: neither verified nor known to fail
            a.action, a.evidence = "unverified", None
            a.reason = err or "the verifier gave no score for this pair"
        elif not ok:
            a.action = "flagged"


def _reattribute(plans: list[_Plan], scorer: Any, tau: float | None, reattribute: Reattributor) -> None:
    """2. re-attribute failed and invalid citations: proposals scored by the verifier, best accepted wins."""
    props: list[tuple[_Plan, CitationAudit, int]] = []
    for plan in plans:
        failed = [a for a in plan.audits if a.action in ("flagged", "invalid")]
        if not failed:
            continue
        deadline.check()
        propose = reattribute.proposer(plan.passages)  # one index per answer, not per failed citation
        units = 0  # bounded as verification is: past the answer's limit, no more proposals are scored
        for a in failed:
            cited_here = {c.passage_index for c in plan.cites[a.sentence_index] if c.passage_index >= 0}
            cited_here |= {i for i, p in enumerate(plan.passages) if not p.strip()}  # an empty one supports nothing
            for p in propose(a.claim, cited_here):
                units += n_windows(len(plan.passages[p]))
                if units > plan.max_units:
                    a.reason = (a.reason + "; " if a.reason else "") + (
                        "re-attribution stopped at the answer's max_units_per_answer limit")
                    break
                props.append((plan, a, p))
    j = _judge_units(scorer, [(plan, a.claim, p) for plan, a, p in props], tau)
    best: dict[int, tuple[CitationAudit, float, Evidence]] = {}
    for (_, a, _), sc, ok, ev in zip(props, j.score, j.passed, j.evidence):
        a.candidates += 1
        if sc is not None and np.isfinite(sc) and (a.best_candidate is None or sc > a.best_candidate["score"]):
            a.best_candidate = {"passage": ev.passage, "score": float(sc)}
        if ok and (id(a) not in best or sc > best[id(a)][1]):
            best[id(a)] = (a, float(sc), ev)
    for a, sc, ev in best.values():
        a.action, a.new_pointer, a.new_score, a.new_evidence = "reattributed", ev.passage, sc, ev


FLAGGED_FORM = " [UNVERIFIED]"  # written after a citation form with no ``]`` of its own (``²``, ``(2)``) that failed


def _finish(plan: _Plan, remove: bool, mark_reattributed: bool = True, fail_open: bool = False,
            open_end: bool = False, uncited: str = "flag") -> tuple[str, GuardReport]:
    """Counts and review budget; 3. rewrite markers, flag or remove. ``open_end``: the answer goes on after
    this text (a stream's complete sentences), so a removed last sentence is not the answer's last.

    The review budget is the share of what the answer asserts that a person must check: failed, invalid and
    (failing closed) unverified citations, and with ``uncited="flag"`` each sentence that cites nothing, over
    the citations plus (with "flag") those sentences. ``remove`` drops a sentence only when none of its
    citations stands (verified or re-attributed); an unreadable marker stands for nothing."""
    report, audits = plan.report, plan.audits
    report.audit = audits
    report.uncited_policy = uncited
    report.uncited_sentences = [[plan.sents[i].start, plan.sents[i].end] for i in plan.uncited]
    for a in audits:
        setattr(report, a.action, getattr(report, a.action) + 1)
    report.set_review_budget(fail_open)
    stands = {a.sentence_index for a in audits if not failed(a, fail_open)}  # a citation that passes as written
    drop = {a.sentence_index for a in audits} - stands if remove else set()  # every citation of the sentence failed
    report.removed_sentences = len(drop)
    edits = {}
    for si, cs in plan.cites.items():
        for (start, end), group in _by_marker(cs).items():
            edits[start] = (end, _rewrite(plan.view[start:end], [plan.audit_of[(si, _target(c))] for c in group],
                                          [int(c.key) for c in group], mark_reattributed, fail_open))
    for found in plan.odd.values():
        for start, end in found:
            if plan.view[end - 1] == "]":
                edits[start] = (end, plan.view[start:end - 1] + " UNVERIFIED]")
            else:
                edits[start] = (end, plan.answer[start:end] + FLAGGED_FORM)
    spans = [(s.start, s.end) for s in plan.sents if s.index in drop]
    if open_end:  # a sentinel stands for the text to come: a removed sentence takes the whitespace after it, as mid-answer
        return _apply(plan.answer + "\x00", edits, spans)[:-1], report
    return _apply(plan.answer, edits, spans), report


def guard_answers(items: Sequence[tuple[str, Sequence[str], int]], scorer: Scorer, *, tau: float | None = None,
                  reattribute: Reattributor | str | None = "bm25", proposals: int = 3, remove: bool = False,
                  guarantee: str = "", limits: Limits | None = None, mark_reattributed: bool = True,
                  fail_open: bool = False, open_end: bool = False, uncited: str = "flag") -> list[tuple[str, GuardReport]]:
    """Guard several ``(answer, passages, base)`` at once: every answer's verification units go to
    the verifier in one call, then every answer's re-attribution proposals in one more. Each answer's
    outcome is the one :func:`guard_answer` gives it alone."""
    return [r for r in guard_each(items, scorer, tau=tau, reattribute=reattribute, proposals=proposals, remove=remove,
                                  guarantee=guarantee, limits=limits, isolate=False, mark_reattributed=mark_reattributed,
                                  fail_open=fail_open, open_end=open_end, uncited=uncited)]


def guard_each(items: Sequence[tuple[str, Sequence[str], int]], scorer: Scorer, *, tau: float | None = None,
               reattribute: Reattributor | str | None = "bm25", proposals: int = 3, remove: bool = False,
               guarantee: str = "", limits: Limits | None = None, isolate: bool = True,
               mark_reattributed: bool = True, fail_open: bool = False,
               open_end: bool = False, uncited: str = "flag") -> list[tuple[str, GuardReport] | GuardInputError]:
    """:func:`guard_answers`, where with ``isolate`` an answer that is bad input or past a limit gets its
    error (a :class:`GuardInputError` or :class:`LimitExceeded`) in its place and the others are guarded."""
    if isinstance(reattribute, str):
        reattribute = load_reattributor(reattribute, proposals)
    limits = limits or Limits()
    slots: list[_Plan | GuardInputError] = []
    for answer, passages, base in items:
        try:
            slots.append(_plan(answer, passages, base, tau, guarantee, limits))
        except GuardInputError as e:  # LimitExceeded is one too
            if not isolate:
                raise
            slots.append(e)
    plans = [s for s in slots if isinstance(s, _Plan)]
    deadline.check()
    _verify(plans, scorer, tau)
    if reattribute is not None:
        deadline.check()
        _reattribute(plans, scorer, tau, reattribute)
    scale = SCALES.get(str(getattr(scorer, "cfg", {}).get("kind", "")), "")
    for s in plans:
        s.report.score_scale = scale
    return [_finish(s, remove, mark_reattributed, fail_open, open_end, uncited) if isinstance(s, _Plan) else s
            for s in slots]


def guard_answer(answer: str, passages: Sequence[str], scorer: Scorer, *, tau: float | None = None,
                 base: int = 1, reattribute: Reattributor | str | None = "bm25", proposals: int = 3,
                 remove: bool = False, guarantee: str = "", limits: Limits | None = None,
                 mark_reattributed: bool = True, uncited: str = "flag") -> tuple[str, GuardReport]:
    """Guard one answer; returns the guarded answer and its report.

    ``reattribute``: a :class:`Reattributor`, a re-attributor definition name
    (``bm25``, ``verifier``) or None for no re-attribution.
    """
    return guard_answers([(answer, passages, base)], scorer, tau=tau, reattribute=reattribute,
                         proposals=proposals, remove=remove, guarantee=guarantee, limits=limits,
                         mark_reattributed=mark_reattributed, uncited=uncited)[0]
