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
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

CLAIM_CAP = 600

# [[1]](url) -- markdown-link citations; must be matched before plain brackets.
_LINK = r"\[\[(?P<link>\d+)\]\]\([^)\s]*\)"
# [1], [1, 2], [1-3], [1,3-5]
_NUMERIC = r"\[(?P<num>\d+(?:\s*[-\u2013,]\s*\d+)*)\]"
# any other bracketed id with no nested brackets, e.g. [2611 | Chan et al. | 2023 | Citations: 0]
_BRACKET_ID = r"\[(?P<bid>[^\[\]\n]{1,200}\|[^\[\]\n]{0,200})\]"
# parenthesised author-year ids: (Rego et al., 2022) or (1, Mir et al., 2021); ';'-grouped too
_AUTHOR_YEAR = r"\((?P<ay>[^()\n]{0,200}?(?:19|20)\d\d[a-z]?)\)"

MARKER_RE = re.compile("|".join([_LINK, _NUMERIC, _BRACKET_ID, _AUTHOR_YEAR]))

# Sentence boundary: end punctuation followed by whitespace (and not inside
# a marker), or a blank line / bullet.
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[*\-])|\n+")


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

    def extend(self, other: "Extraction", sentence_offset: int, passage_offset: int = 0) -> None:
        """Append another section's result, shifting its sentence and passage indices."""
        self.n_sentences += other.n_sentences
        self.n_cited_sentences += other.n_cited_sentences
        for p in other.pairs:
            self.pairs.append(Pair(p.sentence_index + sentence_offset, p.claim, p.marker, p.citation_key,
                                   p.passage_index + passage_offset))
        for s in other.skips:
            self.skips.append(Skip(s.sentence_index + sentence_offset, s.marker, s.reason))


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, keeping citation markers that trail a
    sentence's final period attached to that sentence.

    >>> split_sentences("A is B [1]. C is D. [2] E.")
    ['A is B [1].', 'C is D. [2]', 'E.']
    """
    raw = [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]
    out: list[str] = []
    for s in raw:
        lead = _leading_markers(s)
        if lead and out:
            out[-1] = out[-1] + " " + lead
            s = s[len(lead):].strip()
            if not s:
                continue
        out.append(s)
    return out


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


def strip_markers(sentence: str, cap: int = CLAIM_CAP) -> str:
    """Remove citation markers and tidy whitespace; cap at ``cap`` characters.

    >>> strip_markers("Corona forms fast [1, 2] (Wan et al., 2020).")
    'Corona forms fast.'
    """
    text = MARKER_RE.sub("", sentence)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    return text[:cap]


def _expand_numeric(body: str) -> list[int]:
    ids: list[int] = []
    for part in re.split(r"\s*,\s*", body.strip()):
        rng = re.split(r"\s*[-\u2013]\s*", part)
        if len(rng) == 2:
            lo, hi = int(rng[0]), int(rng[1])
            ids.extend(range(lo, hi + 1) if hi >= lo else [lo, hi])
        else:
            ids.append(int(rng[0]))
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
    for si, sentence in enumerate(split_sentences(text)):
        claim = strip_markers(sentence, claim_cap)
        ext.n_sentences += 1
        targets = [t for m in MARKER_RE.finditer(sentence)
                   for t in resolve_marker(m, n_passages, base=base, id_table=id_table, string_ids=string_ids)]
        if not targets:
            continue
        ext.n_cited_sentences += 1
        seen_idx: set[int] = set()
        for marker, key, idx in targets:
            if idx is None:
                ext.skips.append(Skip(si, marker, "unknown_id"))
            elif idx < 0:
                ext.skips.append(Skip(si, marker, "out_of_range"))
            elif blank[idx]:
                ext.skips.append(Skip(si, marker, "empty_passage"))
            elif idx not in seen_idx:
                seen_idx.add(idx)
                ext.pairs.append(Pair(si, claim, marker, key, idx))
    return ext


def uses_string_ids(id_table: Mapping[str, int] | None) -> bool:
    """Author-year / bracketed ids are citations only where the citation list uses
    such ids; in numeric-citation answers they are prose ("shown by (Liu et al., 2007)")."""
    return id_table is not None and any(not k.strip("[]").isdigit() for k in id_table)


def resolve_marker(m: re.Match, n_passages: int, *, base: int = 1, id_table: Mapping[str, int] | None = None,
                   string_ids: bool = False) -> list[tuple[str, str, int | None]]:
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
        for n in _expand_numeric(body):
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
