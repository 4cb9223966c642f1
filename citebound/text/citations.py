"""Citation-marker extraction from cited answers.

Turns an answer text plus its citation list into claim--citation pairs,
recording every citation that could not be resolved (and why) instead of
dropping it silently.

Marker formats handled (all seen in the released files of ``SOURCES.md``):

* numeric ``[1]``, grouped ``[1, 2]``, ranges ``[1-3]``, adjacent ``[1][2]``;
* markdown links ``[[1]](https://...)`` (You.com);
* bracketed ids that equal a citation ``id`` (STORM ``[5]``, SQA-Qwen3
  ``[261100944 | Chan et al. | 2023 | Citations: 0]``);
* parenthesised author-year ids that equal a citation ``id``
  (``(Rego et al., 2022)``, Nora ``(1, Mir et al., 2021)``).

Numeric markers are resolved through ``base`` (0- or 1-based) into a list of
passages; string ids are resolved through a per-section id table, so ids that
restart per section are handled by calling :func:`extract_pairs` per section.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from citebound.text.limits import LimitExceeded

CLAIM_CAP = 600

# [[1]](url) -- markdown-link citations; must be matched before plain brackets. The URL is bounded so
# that a run of unclosed "[[1](" costs linear time, not quadratic.
_LINK = r"\[\[(?P<link>\d+)\]\]\([^)\s]{0,2048}\)"
# [1], [1, 2], [1-3], [1,3-5], [1; 2], [ 1 ] (the guard folds full-width and dash look-alikes first: visible.py)
_NUMERIC = r"\[\s*(?P<num>\d+(?:\s*[-\u2013,;]\s*\d+)*)\s*\]"
# any other bracketed id with no nested brackets, e.g. [2611 | Chan et al. | 2023 | Citations: 0]
_BRACKET_ID = r"\[(?P<bid>[^\[\]\n]{1,200}\|[^\[\]\n]{0,200})\]"
# parenthesised author-year ids: (Rego et al., 2022) or (1, Mir et al., 2021); ';'-grouped too
_AUTHOR_YEAR = r"\((?P<ay>[^()\n]{0,200}?(?:19|20)\d\d[a-z]?)\)"

MARKER_RE = re.compile("|".join([_LINK, _NUMERIC, _BRACKET_ID, _AUTHOR_YEAR]))

# Square brackets with a digit in them, not a markdown link's text: what a reader may take for a citation. One
# that MARKER_RE does not parse ([1-3-5], [1a], [ref. 2]) is 'unverified' in the guard, never dropped.
SUSPECT_RE = re.compile(r"\[[^\[\]\n]{0,80}?\d[^\[\]\n]{0,80}\](?!\()")

class MalformedMarker(ValueError):
    """A numeric marker the guard cannot read exactly (``[1-3-5]``): its sentence is unverified."""

# Sentence boundary: end punctuation followed by whitespace (and not inside
# a marker), or a blank line / bullet.
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[*\-])|\n+")

# The authors' reproduction kit counts citation precision and recall with simpler rules of its own,
# kept here beside ours so that every sentence and marker rule lives in this one module (the study's
# kit analysis reproduces the kit's numbers, so it must split and match exactly as the kit does):
# a sentence ends at end punctuation followed by whitespace; a marker is exactly one number in brackets.
KIT_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
SINGLE_NUMERIC_MARKER = re.compile(r"\[(\d+)\]")


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer: its character span and its canonical text.

    Citation markers that open the next chunk ("... end. [2] Next") belong to
    the sentence before, so ``end`` can reach past the sentence's final period;
    ``text`` then joins them with one space.
    """

    index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Citation:
    """One citation a marker makes, located in the answer.

    ``passage_index`` is None for an unknown id and -1 for a number out of
    range. ``first`` is False when the same target was already cited earlier in
    the same sentence (``[1][1]``): a sentence has as many citations as it has
    distinct targets, in extraction and in the guard alike.
    """

    sentence_index: int
    start: int  # the marker's span in the answer
    end: int
    marker: str
    key: str
    passage_index: int | None
    first: bool


@dataclass(frozen=True)
class Pair:
    """One claim--citation pair extracted from an answer."""

    sentence_index: int
    claim: str
    marker: str
    citation_key: str  # resolved id (string id or passage index as str)
    passage_index: int  # index into the passage list


@dataclass(frozen=True)
class Skip:
    """A citation that could not be turned into a pair."""

    sentence_index: int
    marker: str
    reason: str  # 'out_of_range' | 'unknown_id' | 'empty_passage'


@dataclass
class Extraction:
    """Result of extracting pairs from one answer (or one section)."""

    n_sentences: int = 0
    n_cited_sentences: int = 0
    pairs: list[Pair] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)

    def extend(self, other: Extraction, sentence_offset: int, passage_offset: int = 0) -> None:
        """Append another section's result, shifting its sentence and passage indices."""
        self.n_sentences += other.n_sentences
        self.n_cited_sentences += other.n_cited_sentences
        for p in other.pairs:
            self.pairs.append(Pair(p.sentence_index + sentence_offset, p.claim, p.marker, p.citation_key,
                                   p.passage_index + passage_offset))
        for s in other.skips:
            self.skips.append(Skip(s.sentence_index + sentence_offset, s.marker, s.reason))


def sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` with their spans.

    >>> [(s.text, s.start, s.end) for s in sentences("A is B. [2] C.")]
    [('A is B. [2]', 0, 11), ('C.', 12, 14)]
    """
    out: list[Sentence] = []
    cuts = [(m.start(), m.end()) for m in SENTENCE_SPLIT.finditer(text)]
    bounds = zip([0] + [e for _, e in cuts], [s for s, _ in cuts] + [len(text)])
    for lo, hi in bounds:
        piece = text[lo:hi]
        if not piece.strip():
            continue
        lo += len(piece) - len(piece.lstrip())
        hi -= len(piece) - len(piece.rstrip())
        piece = text[lo:hi]
        lead = _leading_markers(piece)
        if lead and out:
            prev = out[-1]
            out[-1] = Sentence(prev.index, prev.start, lo + len(lead), prev.text + " " + lead)
            rest = piece[len(lead):]
            if not rest.strip():
                continue
            lo += len(lead) + len(rest) - len(rest.lstrip())
            piece = text[lo:hi]
        out.append(Sentence(len(out), lo, hi, piece))
    return out


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, keeping citation markers that trail a
    sentence's final period attached to that sentence.

    >>> split_sentences("A is B [1]. C is D. [2] E.")
    ['A is B [1].', 'C is D. [2]', 'E.']
    """
    return [s.text for s in sentences(text)]


def _leading_markers(s: str) -> str:
    end = 0
    while True:
        m = MARKER_RE.match(s, end)
        if not m:
            break
        end = m.end()
        while end < len(s) and s[end] in " ,;":
            end += 1
    return s[:end].rstrip(" ,;")


# whitespace before punctuation, matched only from a run's first character (linear on long runs)
_SPACE_BEFORE_PUNCT = re.compile(r"(?<!\s)\s+(?=[.,;:!?])")


def strip_markers(sentence: str, cap: int = CLAIM_CAP) -> str:
    """Remove citation markers and tidy whitespace; cap at ``cap`` characters.

    >>> strip_markers("Corona forms fast [1, 2] (Wan et al., 2020).")
    'Corona forms fast.'
    """
    text = MARKER_RE.sub("", sentence)
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    return text[:cap]


def expand_numeric(body: str, max_range: int | None = None, budget: int | None = None) -> list[int]:
    """Numbers a numeric marker body denotes; a reversed range names its two ends.

    ``max_range`` bounds how many citations one range may expand to, and ``budget`` how many the
    whole body may (the guard's :class:`~citebound.text.limits.Limits`): past either,
    :class:`~citebound.text.limits.LimitExceeded` is raised as soon as the count passes it, before the
    rest is expanded. With a bound, a number of more than 18 digits is refused too.

    >>> expand_numeric("1, 3-5"), expand_numeric("3\u20131")
    ([1, 3, 4, 5], [3, 1])
    >>> try:
    ...     expand_numeric("1-1000000000", max_range=1000)
    ... except ValueError as e:
    ...     print(e)
    citation range [1-1000000000] expands to 1000000000 citations; the limit is 1000 (max_range)
    """
    bounded = max_range is not None or budget is not None
    ids: list[int] = []
    for part in re.split(r"\s*[,;]\s*", body.strip()):
        rng = re.split(r"\s*[-\u2013]\s*", part)
        if len(rng) > 2:
            raise MalformedMarker(f"[{body[:40]}] is not a citation the guard can read (a range has two ends)")
        if bounded and any(len(x) > 18 for x in rng):
            raise LimitExceeded(f"citation number {part[:24]}... has more than 18 digits", "max_range", max_range or 0)
        if len(rng) == 2:
            lo, hi = int(rng[0]), int(rng[1])
            if max_range is not None and hi - lo + 1 > max_range:
                raise LimitExceeded(f"citation range [{part}] expands to {hi - lo + 1} citations", "max_range", max_range)
            new = range(lo, hi + 1) if hi >= lo else [lo, hi]
        else:
            new = [int(rng[0])]
        if budget is not None and len(ids) + len(new) > budget:
            raise LimitExceeded(f"a marker makes more than {budget} citations", "max_citations_per_sentence", budget)
        ids.extend(new)
    return ids


def is_blank(text: object) -> bool:
    """True for None, NaN and whitespace-only strings."""
    if text is None:
        return True
    if isinstance(text, float) and math.isnan(text):
        return True
    return not str(text).strip()


def extract_pairs(
    text: str,
    n_passages: int,
    *,
    base: int = 1,
    id_table: Mapping[str, int] | None = None,
    passage_blank: Sequence[bool] | None = None,
    claim_cap: int = CLAIM_CAP,
) -> Extraction:
    """Extract claim--citation pairs from one answer or section.

    Parameters
    ----------
    text : the answer text with inline markers.
    n_passages : length of the passage list that numeric markers index.
    base : 0 if ``[0]`` denotes the first passage, 1 if ``[1]`` does.
    id_table : maps literal citation ids (``"(Rego et al., 2022)"``, ``"[5]"``,
        ``"1"``) to passage indices; when given, a numeric marker ``[N]`` is
        looked up as ``"N"`` / ``"[N]"`` first.
    passage_blank : per passage, True when its text is empty/NaN.

    >>> ex = extract_pairs("X holds [1]. Y holds [3].", 2)
    >>> [(p.claim, p.passage_index) for p in ex.pairs], [s.reason for s in ex.skips]
    ([('X holds.', 0)], ['out_of_range'])
    """
    ext = Extraction()
    blank = list(passage_blank) if passage_blank is not None else [False] * n_passages
    string_ids = uses_string_ids(id_table)
    for sent in sentences(text):
        si = sent.index
        ext.n_sentences += 1
        cites = sentence_citations(text, sent, n_passages, base=base, id_table=id_table, string_ids=string_ids)
        if not cites:
            continue
        ext.n_cited_sentences += 1
        claim = strip_markers(sent.text, claim_cap)
        for c in cites:
            if not c.first:
                continue
            if c.passage_index is None:
                ext.skips.append(Skip(si, c.marker, "unknown_id"))
            elif c.passage_index < 0:
                ext.skips.append(Skip(si, c.marker, "out_of_range"))
            elif blank[c.passage_index]:
                ext.skips.append(Skip(si, c.marker, "empty_passage"))
            else:
                ext.pairs.append(Pair(si, claim, c.marker, c.key, c.passage_index))
    return ext


def sentence_citations(text: str, sentence: Sentence, n_passages: int, *, base: int = 1,
                       id_table: Mapping[str, int] | None = None, string_ids: bool = False,
                       max_range: int | None = None, max_citations: int | None = None) -> list[Citation]:
    """Every citation the markers of one sentence make, in reading order.

    The one definition of "a citation" that extraction, ``convert`` and the
    guard share. A repeated target in the same sentence (``[1][1]``, ``[1, 1]``)
    is returned again with ``first=False``.

    >>> t = "X holds [1][1] and [[2]](http://a.org) [1-3]."
    >>> [(c.marker, c.key, c.passage_index, c.first) for c in sentence_citations(t, sentences(t)[0], 2)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('[1]', '1', 0, True), ('[1]', '1', 0, False), ('[[2]](http://a.org)', '2', 1, True),
     ('[1-3]', '1', 0, False), ('[1-3]', '2', 1, False), ('[1-3]', '3', -1, True)]
    """
    out: list[Citation] = []
    seen: set[tuple[str, int | None]] = set()
    for m in MARKER_RE.finditer(text, sentence.start, sentence.end):
        left = None if max_citations is None else max_citations - len(out)
        try:
            targets = resolve_marker(m, n_passages, base=base, id_table=id_table, string_ids=string_ids,
                                     max_range=max_range, budget=left)
        except MalformedMarker:
            continue  # no citation; the guard's SUSPECT_RE scan finds the bracket and fails its sentence closed
        except LimitExceeded as e:
            if e.limit != "max_citations_per_sentence":
                raise
            raise LimitExceeded(f"sentence {sentence.index} makes more than {max_citations} citations",
                                "max_citations_per_sentence", int(max_citations)) from None
        for marker, key, idx in targets:
            target = (key, None) if idx is None or idx < 0 else ("", idx)
            out.append(Citation(sentence.index, m.start(), m.end(), marker, key, idx, target not in seen))
            seen.add(target)
    return out


def uses_string_ids(id_table: Mapping[str, int] | None) -> bool:
    """Author-year / bracketed ids are citations only where the citation list uses
    such ids; in numeric-citation answers they are prose ("shown by (Liu et al., 2007)")."""
    return id_table is not None and any(not k.strip("[]").isdigit() for k in id_table)


def resolve_marker(m: re.Match, n_passages: int, *, base: int = 1, id_table: Mapping[str, int] | None = None,
                   string_ids: bool = False, max_range: int | None = None,
                   budget: int | None = None) -> list[tuple[str, str, int | None]]:
    """(marker, key, passage index) for each citation a marker match denotes.

    The index is None for an unknown id and -1 for a number out of range; an
    author-year parenthesis that is prose yields nothing.
    """
    marker = m.group(0)
    targets: list[tuple[str, str, int | None]] = []
    if m.group("link") is not None or m.group("num") is not None:
        body = m.group("link") if m.group("link") is not None else m.group("num")
        if id_table is not None and (marker in id_table or body in id_table):
            key = marker if marker in id_table else body
            return [(marker, key, id_table[key])]
        for n in expand_numeric(body, max_range, budget):
            if id_table is not None:
                key = str(n) if str(n) in id_table else f"[{n}]"
                targets.append((marker, key, id_table.get(key)))
            else:
                idx = n - base
                targets.append((marker, str(n), idx if 0 <= idx < n_passages else -1))
        return targets
    if not string_ids or id_table is None:
        return targets
    key = m.group("bid") if m.group("bid") is not None else m.group("ay")
    for cand_marker, cand_keys in _author_year_candidates(marker, key):
        hit = next((k for k in cand_keys if k in id_table), None)
        if hit is not None:
            targets.append((cand_marker, hit, id_table[hit]))
        elif m.group("bid") is not None or _looks_like_citation(cand_keys[-1]):
            targets.append((cand_marker, cand_keys[-1], None))
    return targets


def citation_passages(citations: Any) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Passages (``text`` = joined snippets, ``title``) and the id -> index table of a
    section's citation list; entries without an id are ignored."""
    passages: list[dict[str, str]] = []
    table: dict[str, int] = {}
    for c in citations or []:
        if not isinstance(c, dict) or c.get("id") is None:
            continue
        text = " ".join(str(x) for x in (c.get("snippets") or []) if not is_blank(x)).strip()
        table.setdefault(str(c["id"]).strip(), len(passages))
        passages.append({"text": text, "title": str(c.get("title") or "")})
    return passages, table


def _looks_like_citation(body: str) -> bool:
    """Author-year parentheses that are clearly citations (contain 'et al' or '&')."""
    return bool(re.search(r"et al\.?|&|\band\b", body))


def _author_year_candidates(marker: str, body: str) -> list[tuple[str, list[str]]]:
    """Lookup keys for a bracketed or parenthesised id; ';'-groups split into parts."""
    if ";" in body and not marker.startswith("["):
        return [(f"({p.strip()})", [f"({p.strip()})", p.strip()]) for p in body.split(";") if p.strip()]
    return [(marker, [marker, f"[{body}]", f"({body})", body])]
