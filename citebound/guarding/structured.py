"""Citations carried as data beside an answer's text, checked like ``[N]`` markers.

The Responses API puts ``annotations`` on its output text (``file_citation``, ``url_citation``, with character
positions), and Anthropic's Messages API puts ``citations`` on its text blocks (``char_location``,
``page_location``, ``content_block_location``, ``search_result_location``), each quoting its ``cited_text``.
Each such citation attaches to a place in the answer's text (:attr:`Attached.at`: the end of the span it is
attached to). It is checked as a marker at that place would be: its claim is the sentence holding that place, its
passage is the text it quotes, and the guard verifies, re-attributes (among the request's passages and the other
quoted texts) and flags it under the same threshold. The quoted texts are numbered after the request's passages,
in order of first appearance (a quoted text that is one of the request's passages is that passage). A citation
with no text to check (a ``url_citation``, a file whose text neither the request nor the response carries) is
``unverified`` and marked unreadable: it adds to the review budget and ``--on-error open`` does not pass it. A
sentence that a structured citation supports is cited, not ``uncited``.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from citebound.guarding.core import FLAGGED_FORM as _FLAGGED_FORM
from citebound.guarding.report import CitationAudit, GuardReport, failed  # noqa: F401 (failed: re-exported)
from citebound.text.citations import sentences, strip_markers
from citebound.text.limits import LimitExceeded, Limits


@dataclass
class Attached:
    """One structured citation: where it attaches in the answer's text, the text it quotes (None: nothing to
    check), and how the report names it."""

    at: int
    text: str | None
    label: str


@dataclass
class Plan:
    """The guard's work for an answer's structured citations: one one-sentence answer per checkable citation,
    all against ``passages`` (the request's, then each quoted text once)."""

    items: list[tuple[str, list[str], int]]
    checked: list[int]  # which citation each item checks
    sentence: list[tuple[int, int, int, str]]  # per citation: (sentence index, start, end, claim); index -1: none
    passages: list[str]
    number: list[int | None]  # per citation: the number of the passage it quotes (None: nothing to check)


def plan(answer: str, cites: Sequence[Attached], passages: Sequence[str], base: int = 1,
         limits: Limits | None = None) -> Plan:
    """The one-sentence answers that check ``cites`` against the text each quotes.

    >>> p = plan("Aspirin blocks COX. Statins lower LDL.", [Attached(19, "Aspirin inhibits COX.", "c0")], ["P1"])
    >>> p.items[0][0], p.number, p.passages
    ('Aspirin blocks COX. [2]', [2], ['P1', 'Aspirin inhibits COX.'])
    """
    limits = limits or Limits()
    if len(cites) > limits.max_citations_per_answer:
        raise LimitExceeded(f"the answer carries {len(cites)} citations as data", "max_citations_per_answer",
                            limits.max_citations_per_answer)
    sents = sentences(answer)
    starts = [s.start for s in sents]  # each citation's sentence found by bisection: n log n for n citations
    ext = list(passages)
    seen: dict[str, int] = {}
    for k, text in enumerate(ext):  # a quoted text that is one of the request's passages is that passage
        seen.setdefault(text, k)
    items, checked, where, number = [], [], [], []
    for i, c in enumerate(cites):
        pos = min(max(c.at - 1, 0), max(len(answer) - 1, 0))
        k = bisect.bisect_right(starts, pos) - 1  # the last sentence starting at or before it (whitespace after
        s = sents[max(k, 0)] if sents else None  # a sentence belongs to it; before the first: the first)
        claim = strip_markers(s.text) if s is not None else ""
        where.append((s.index, s.start, s.end, claim) if s is not None else (-1, 0, 0, ""))
        if c.text is None or not c.text.strip() or not claim.strip():
            number.append(None)
            continue
        if c.text not in seen:
            seen[c.text] = len(ext)
            ext.append(c.text)
        number.append(seen[c.text] + base)
        items.append((f"{claim.rstrip()} [{seen[c.text] + base}]", ext, base))  # every item sees every quoted text
        checked.append(i)
    return Plan(items, checked, where, ext, number)


def audits(p: Plan, cites: Sequence[Attached], results: Sequence[tuple[str, GuardReport]]) -> list[CitationAudit]:
    """Each citation's audit, in order: the guard's verdict on its one-sentence answer, placed where the citation
    attaches; an unverified, unreadable one for a citation with nothing to check."""
    by_cite = dict(zip(p.checked, results))
    out = []
    for i, c in enumerate(cites):
        index, _, _, claim = p.sentence[i]
        got = by_cite.get(i)
        if got is not None and got[1].audit:
            a = got[1].audit[0]
            a.sentence_index, a.claim, a.marker, a.spans = max(index, 0), claim, c.label, [(c.at, c.at)]
            out.append(a)
            continue
        why = ("it carries no text to check (the document it points at is not in the request or the response)"
               if c.text is None or not c.text.strip() else "it is attached to no sentence")
        out.append(CitationAudit(sentence_index=max(index, 0), claim=claim, cited=-1, marker=c.label,
                                 spans=[(c.at, c.at)], score=None, action="unverified", reason=f"not checked: {why}",
                                 unreadable=True))
    return out


def add(report: GuardReport, found: Sequence[CitationAudit], cited_at: Sequence[int | None],
        fail_open: bool = False) -> GuardReport:
    """``report`` (the answer's text guarded) with its structured citations' audits added: counted like markers'
    citations, and the sentences they cite no longer counted as citing nothing. ``cited_at``: per citation, where the
    sentence it cites starts in the report's text (:func:`sentence_starts`; None: attached to no sentence, or to one
    removed)."""
    uncited = sorted(map(tuple, report.uncited_sentences))
    starts, now_cited = [u[0] for u in uncited], set()
    for a, pos in zip(found, cited_at, strict=True):
        report.audit.append(a)
        report.n_citations += 1
        setattr(report, a.action, getattr(report, a.action) + 1)
        if pos is None:
            continue
        k = bisect.bisect_right(starts, pos) - 1
        if k >= 0 and pos < uncited[k][1]:
            now_cited.add(k)
    if now_cited:
        report.uncited_sentences = [list(u) for k, u in enumerate(uncited) if k not in now_cited]
        report.uncited -= len(now_cited)
        report.n_cited_sentences += len(now_cited)
    report.set_review_budget(fail_open)
    return report


def sentence_starts(p: Plan, where: Any = None) -> list[int | None]:
    """Per citation of plan ``p``, where the sentence it cites starts (``where``: a map from the planned text's
    positions to the guarded text's, :func:`position_map`, when sentences were removed before guarding)."""
    return [None if index < 0 else (start if where is None else where(start)) for index, start, _, _ in p.sentence]


def verdict(a: CitationAudit) -> dict[str, Any]:
    """A citation's verdict as the ``citebound`` field of its citation object says it."""
    return {"action": a.action, "score": a.score, "reason": a.reason, "passage": a.cited if a.cited >= 0 else None} | (
        {"moved_to": a.new_pointer, "moved_score": a.new_score} if a.action == "reattributed" else {})


def remove_sentences(answer: str, spans: Sequence[tuple[int, int]]) -> str:
    """``answer`` without the sentences ``spans`` ([start, end), in any order, repeats allowed), each taking the
    whitespace after it."""
    from citebound.guarding.rewrite import apply

    return apply(answer, {}, list(spans)) if spans else answer


def check(guard: Any, answer: str, cites: Sequence[Attached], passages: Sequence[str], base: int = 1,
          group: str | None = None) -> list[CitationAudit]:
    """The audits of ``cites`` by ``guard`` (the library's face; the service runs :func:`plan`'s items through its
    batcher instead)."""
    p = plan(answer, cites, passages, base, guard.limits)
    results = guard.guard_many(p.items, group=group, block=False) if p.items else []
    return audits(p, cites, results)


def guard_with(guard: Any, answer: str, cites: Sequence[Attached], passages: Sequence[str], base: int = 1,
               group: str | None = None) -> tuple[str, GuardReport]:
    """``answer`` guarded by ``guard`` with the citations it carries as data: its text and report, the citations'
    audits in the report (the library's face of what the proxy does). With ``action="block"``, the answer is
    withheld on the whole report's review budget, its citations as data counted.

    >>> from citebound import Guard
    >>> text, rep = guard_with(Guard("lexical"), "Aspirin inhibits COX. ", [Attached(22, "Aspirin inhibits COX.", "c0")], [])
    >>> rep.n_citations, rep.verified, rep.uncited
    (1, 1, 0)
    """
    ((text, report),) = guard.guard_many([(answer, passages, base)], group=group, block=False)
    p = plan(answer, cites, passages, base, guard.limits)
    results = guard.guard_many(p.items, group=group, block=False) if p.items else []
    add(report, audits(p, cites, results), sentence_starts(p), guard.on_error == "open")
    if guard.blocks(report):  # action="block" judges the whole answer, its citations as data counted
        text = ""
    return text, report


__all__ = ["Attached", "Plan", "plan", "audits", "add", "sentence_starts", "failed", "verdict", "remove_sentences", "check",
           "guard_with", "position_map"]


def _align(a: str, b: str, out: list[int], a0: int, b0: int) -> None:
    """``out[a0 + i]`` for each position i of sentence ``a`` (guarded into ``b``): equal characters step together;
    the flag the guard put after a form with no ``]`` is skipped in ``b``; where the two differ otherwise, both
    stand in a marker the guard rewrote, and each skips to its own ``]``. Linear; once the two cannot be re-aligned,
    the rest of ``a`` maps to the end of ``b``."""
    i = j = 0
    while i < len(a):
        if b.startswith(_FLAGGED_FORM, j) and not a.startswith(_FLAGGED_FORM, i):
            j += len(_FLAGGED_FORM)
            continue
        if j < len(b) and a[i] == b[j]:
            out[a0 + i] = b0 + j
            i, j = i + 1, j + 1
            continue
        ia, jb = a.find("]", i), b.find("]", j)
        if ia < 0 or jb < 0:
            break
        for k in range(i, ia + 1):
            out[a0 + k] = b0 + min(jb, j + (k - i))
        i, j = ia + 1, jb + 1
    for k in range(i, len(a)):
        out[a0 + k] = b0 + len(b)


_OPEN, _CLOSE = "\\[\\uff3b\\u3010\\u3014\\u27e6\\ufe5d", "\\]\\uff3d\\u3011\\u3015\\u27e7\\ufe5e"  # [ and its look-alikes
_BRACKETS = re.compile(f"[{_OPEN}][^{_OPEN}{_CLOSE}]*[{_CLOSE}]|\\s+")


def _without_markers(text: str) -> str:
    """A sentence's text with every bracketed run and all whitespace left out: the same before and after the guard
    rewrote its markers."""
    return _BRACKETS.sub("", text)


def position_map(original: str, guarded: str) -> Any:
    """Where each position of ``original`` stands in ``guarded``, the guard's text of it (markers rewritten,
    sentences removed), in linear time: sentences are matched in order by their text without markers (a sentence
    with no match was removed: its positions go to where the next kept one starts), then aligned character by
    character within each.

    >>> f = position_map("A [9]. B is so. C.", "A [9 INVALID]. C.")
    >>> [f(p) for p in (0, 5, 6, 7, 16, 18)]
    [0, 13, 14, 15, 15, 17]
    """
    if original == guarded:
        return lambda p: p
    so, sg = sentences(original), sentences(guarded)
    out = [-1] * (len(original) + 1)
    j = 0
    for s in so:
        if j < len(sg) and _without_markers(s.text) == _without_markers(sg[j].text):
            _align(original[s.start:s.end], guarded[sg[j].start:sg[j].end], out, s.start, sg[j].start)
            out[s.end] = sg[j].end
            j += 1
    nxt = len(guarded)
    for p in range(len(original), -1, -1):  # the rest (removed sentences, whitespace): where what follows starts
        if out[p] < 0:
            out[p] = nxt
        else:
            nxt = out[p]
    return lambda p: out[min(max(p, 0), len(original))]
