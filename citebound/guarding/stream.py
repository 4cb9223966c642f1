"""Guarding a streamed answer sentence by sentence, with the same result as guarding it whole.

A stream's text arrives in pieces; :class:`SentenceHold` holds it until a sentence is complete by the
guard's own rule (a sentence ends where the next one starts: :func:`citebound.text.citations.sentences`)
and releases **segments**: runs of complete sentences, from one sentence's own start to the next's.
What the guard does to a sentence depends only on that sentence (its markers, its claim, the passages),
so guarding each segment and joining the results gives the text the whole answer would get, byte for
byte, provided a segment's boundary can no longer move. It can move while the text after it may still
change what came before:

- the next sentence's leading markers (``end. [2] Next``) belong to the sentence before, so a sentence is
  complete only once the next one has a character that no marker can start (not ``[`` or ``(``) after its
  leading markers; otherwise once a second sentence has started after it;
- hidden markup (a comment, a hidden element) blanks text out of claims and boundaries; an element or
  comment still open, or a ``<`` whose tag may still complete, can blank what follows it, so nothing from
  there on is judged until it closes;
- a UTF-16 surrogate pair split across pieces is joined before it is judged.

One kind of text changes what came before it whatever the boundaries: markup that restyles the whole answer (a
stylesheet, a declarative shadow root, an ``<html>`` or ``<body>`` tag; :func:`citebound.text.visible.restyles`).
The whole answer then fails every citation closed, which sentences already sent cannot match, so
:meth:`StreamAssembler.blocked` stops the stream at the segment that holds it.

:class:`Joiner` joins the guarded segments: a sentence removed mid-answer takes the whitespace after it,
and an answer with removed sentences ends without trailing whitespace, so trailing whitespace is held
until more text follows or the stream ends. :func:`merge_reports` adds the segments' reports into the
answer's report (indices and spans shifted), equal to the report of the whole answer.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from citebound.guarding.report import GuardReport
from citebound.text.citations import sentences
from citebound.text.limits import LimitExceeded, Limits
from citebound.text.visible import HIDDEN, MAX_TAG, blank_spans, restyles, scan

_SURROGATES = re.compile("[\ud800-\udfff]")


def _join_surrogates(text: str) -> str:
    """Pairs of UTF-16 surrogates (a character split across two JSON strings) as the one character."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def stable_end(text: str) -> int:
    """How much of ``text`` more text cannot re-read: up to an element, comment or tag that the end of the
    text leaves open (more text may close it, and what it hides or obscures is decided by all of it), a ``<``
    whose tag may still complete, or a trailing lone high surrogate."""
    end = len(text)
    opened = scan(text).open_to_end
    if opened is not None:
        end = opened
    lt = text.rfind("<")
    if lt >= 0 and len(text) - lt <= MAX_TAG and ">" not in text[lt + 1:]:
        end = min(end, lt)
    if end and "\ud800" <= text[end - 1] <= "\udbff":
        end -= 1
    return end


def commit_point(text: str) -> int:
    """The length of ``text``'s prefix that is complete sentences whose boundaries more text cannot move
    (0: none yet), never inside an element that obscures its text (the rest of it, guarded alone, would lose
    what obscures it). ``text`` starts at a sentence's own start."""
    stable = text[:stable_end(text)]
    seen = scan(stable)
    view = blank_spans(stable, seen.spans[HIDDEN])
    sents = sentences(view)
    if len(sents) < 2:
        return 0
    last = sents[-1]
    q = last.start
    while q < len(view) and view[q] in " ,;":  # where the last sentence's leading-marker parse stopped
        q += 1
    # nothing more can join the sentence before the last as a marker: the last one's start is a cut
    cuts = [s.start for s in sents[1:-1]] + ([last.start] if q < len(view) and view[q] not in "[(" else [])
    for cut in reversed(cuts):
        if not any(lo < cut < hi for lo, hi in seen.elements):
            return cut
    return 0


class SentenceHold:
    """Streamed text in, complete segments out (:func:`commit_point`), within the limits: the answer's
    length (``max_answer_chars``) and the text held waiting for a sentence to end (``max_stream_held_chars``)."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        self.held = ""
        self.committed = 0  # characters released so far
        self._checked_at = 0  # len(held) when commit_point last ran

    def feed(self, delta: str) -> str:
        """Add a piece of the stream; returns the segment it completes ('' when none)."""
        if not delta:
            return ""
        if _SURROGATES.search(delta):
            self.held = _join_surrogates(self.held + delta)
        else:
            self.held += delta
        total = self.committed + len(self.held)
        if total > self.limits.max_answer_chars:
            raise LimitExceeded(f"the streamed answer has {total} characters", "max_answer_chars",
                                self.limits.max_answer_chars)
        # commit_point reads the whole held text: past 4,096 held characters (no sentence has ended), it runs
        # again only once the text has grown by a quarter, so a stream with no sentence end costs linear time
        if len(self.held) > 4096 and len(self.held) < self._checked_at * 5 // 4:
            return ""
        self._checked_at = len(self.held)
        c = commit_point(self.held)
        if not c:
            self.limits.check_held(len(self.held))
            return ""
        seg, self.held = self.held[:c], self.held[c:]
        self.committed += c
        self._checked_at = len(self.held)
        return seg

    def finish(self) -> str:
        """The rest of the stream: the last segment (may be empty)."""
        rest, self.held = self.held, ""
        self.committed += len(rest)
        self._checked_at = 0
        return rest


class Joiner:
    """Guarded segments in, streamed text out: trailing whitespace waits for what follows it."""

    def __init__(self) -> None:
        self.pending = ""

    def add(self, text: str) -> str:
        body = text.rstrip()
        if not body:
            self.pending += text
            return ""
        out = self.pending + body
        self.pending = text[len(body):]
        return out

    def finish(self, removed_any: bool) -> str:
        """The held whitespace, unless the answer had sentences removed (it then ends without it)."""
        out, self.pending = ("" if removed_any else self.pending), ""
        return out


_ADDED = ("n_sentences", "n_cited_sentences", "n_citations", "verified", "reattributed", "flagged", "invalid",
          "unverified", "removed_sentences", "hidden_regions", "uncited")  # the report counts that add across segments


def merge_reports(parts: Sequence[tuple[int, GuardReport]], fail_open: bool = False) -> GuardReport:
    """The report of a whole answer from its segments' ``(offset, report)``: counts added, each audit's
    sentence index and marker spans shifted to the whole answer."""
    if not parts:
        return GuardReport()
    out = copy.deepcopy(parts[0][1])
    out.audit, out.uncited_sentences = [], []
    out.blocked, out.block_reason = False, ""  # block decides on the whole answer (Guard.blocks), not on a part
    for k in _ADDED:
        setattr(out, k, 0)
    for offset, r in parts:
        for a in r.audit:
            a = copy.deepcopy(a)
            a.sentence_index += out.n_sentences
            a.spans = [(lo + offset, hi + offset) for lo, hi in a.spans]
            out.audit.append(a)
        out.uncited_sentences += [[lo + offset, hi + offset] for lo, hi in r.uncited_sentences]
        for k in _ADDED:
            setattr(out, k, getattr(out, k) + getattr(r, k))
    out.set_review_budget(fail_open)
    out.guarantee_card = parts[-1][1].guarantee_card
    if not out.rule:
        out.rule = next((r.rule for _, r in parts if r.rule), "")
    return out


class StreamAssembler:
    """One stream's state: :class:`SentenceHold` for the text coming in, :class:`Joiner` for the guarded
    text going out, and the segments' reports. The caller guards each segment (``open_end`` for all but
    the last) and hands the result to :meth:`add`."""

    def __init__(self, limits: Limits | None = None, fail_open: bool = False):
        self.hold, self.joiner, self.fail_open = SentenceHold(limits), Joiner(), fail_open
        self.parts: list[tuple[int, GuardReport]] = []
        self.offset = 0
        self.sent = 0  # sentences whose text has gone out
        self.restyled: str | None = None  # what in the last segment restyles the whole answer (visible.restyles)

    def feed(self, delta: str) -> str:
        return self.hold.feed(delta)

    def finish(self) -> str:
        return self.hold.finish()

    def add(self, segment: str, guarded: str, report: GuardReport) -> str:
        """A guarded segment in; the text to send now out."""
        self.parts.append((self.offset, report))
        self.offset += len(segment)
        self.sent += report.n_sentences
        self.restyled = restyles(segment)
        return self.joiner.add(guarded)

    def blocked(self, guard: Any, prior: Sequence[tuple[int, GuardReport]] = (), uncited_later: bool = False
                ) -> GuardReport | None:
        """After :meth:`add`: the report so far, marked blocked, when ``guard``'s ``action="block"`` withholds
        the answer now (its last segment and what follows are not to be sent); else None. ``prior``: the reports
        of the answer's parts before this stream's text (an API answer of several text runs), which the decision
        counts too: block decides on the whole answer so far, as on an unstreamed answer. ``uncited_later``: this
        text's sentences that cite nothing in it may yet be cited as data (an API's citations come after the text
        they cite): the decision leaves them out, and the caller decides again on the whole part once its
        citations are in.

        Whatever the action, a segment that restyles the whole answer (a stylesheet, a declarative shadow root, an
        ``<html>`` or ``<body>`` tag: :func:`citebound.text.visible.restyles`) stops the stream: it can change how
        the text already sent is drawn, which no sentence-by-sentence check can take back."""
        if self.restyled is None and guard.action != "block":
            return None
        so_far = self.report()
        if self.restyled is None:
            whole = merge_reports([*prior, *self.parts], self.fail_open) if prior else so_far
            if uncited_later:
                whole = replace(whole, uncited=whole.uncited - sum(r.uncited for _, r in self.parts))
                whole.set_review_budget(self.fail_open)
            if not guard.blocks(whole):
                return None
        went_out = self.sent - self.parts[-1][1].n_sentences
        of_part = " of this part" if prior else ""
        so_far.blocked = True
        if self.restyled is not None:
            so_far.block_reason = (f"the answer holds {self.restyled}, which can change how all of its text is drawn, "
                                   "the text before it too: a stream cannot check that sentence by sentence, so it "
                                   f"stops here ({went_out} sentences{of_part} were sent)")
        else:
            so_far.block_reason = (f"{whole.block_reason}; in a stream, block withholds only what is not yet sent "
                                   f"({went_out} sentences{of_part} were)")
        return so_far

    def report(self) -> GuardReport:
        return merge_reports(self.parts, self.fail_open)

    def end(self) -> tuple[str, GuardReport]:
        """The text still to send after the last segment, and the whole answer's report."""
        rep = self.report()
        return self.joiner.finish(rep.removed_sentences > 0), rep


__all__ = ["SentenceHold", "Joiner", "StreamAssembler", "merge_reports", "commit_point", "stable_end", "LimitExceeded"]
