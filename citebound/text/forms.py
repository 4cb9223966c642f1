"""Citation forms a reader sees that the guard does not parse, found so that each one goes to review (the
guard makes it an ``unverified`` citation of its sentence), never passes silently clean; and which sentences
a set of spans touches.

>>> [view[lo:hi] for view in ["Cells grow\u00b2 (3) [1-2-3] in 10\u2076 plates."] for lo, hi in other_forms(view, view)]
['\u00b2', '(3)', '[1-2-3]']
"""
from __future__ import annotations

import bisect
import re
from typing import Any

from citebound.text.citations import SUSPECT_RE

# Other citation forms a reader sees, which the guard does not parse: each one found (outside a parsed
# marker) makes its sentence's citations include one 'unverified', so it goes to review, never clean.
# Superscript digits (², ⁽²⁾, [²]) except an exponent (10⁶, m², s⁻¹: after a digit, a one- or two-letter
# unit or a superscript minus); a parenthesised or braced number of one to three digits ((2), （2）, {2},
# ⟨2⟩, 〈2〉); circled digits (②, ⓶, ❷); brackets written as character references (&#91;2&#93;).
_SUP = "\u2070\u00b9\u00b2\u00b3\u2074-\u2079"
_SMALL_NUM = r"\s*\d{1,3}(?:\s*[-,;\u2013]\s*\d{1,3}){0,20}\s*"
OTHER_FORMS_RE = re.compile(
    "|".join([
        rf"(?<![\d\u207b{_SUP}])(?<!(?<![^\W\d_])[^\W\d_])(?<!(?<![^\W\d_])[^\W\d_]{{2}})"
        rf"\u207d?[{_SUP}]{{1,6}}(?:[,\u2013-][{_SUP}]{{1,6}}){{0,10}}\u207e?(?![\u207b{_SUP}])",
        rf"[(\uff08]{_SMALL_NUM}[)\uff09]", rf"\{{{_SMALL_NUM}\}}", rf"[\u27e8\u3008]{_SMALL_NUM}[\u27e9\u3009]",
        "[\u2460-\u2473\u24ea-\u24ff\u2776-\u2793\u3251-\u325f\u32b1-\u32bf]",
        r"&(?:#0*91|#x0*5b|lsqb|lbrack);[^&\n]{0,60}?&(?:#0*93|#x0*5d|rsqb|rbrack);",
    ]), re.I)
# <sup>…</sup> and <cite>…</cite> around a number (found in the raw answer: the view blanks the tags)
TAG_FORMS_RE = re.compile(r"<(sup|cite)\b[^<>]{0,200}>\s*\[?\s*\d{1,3}(?:\s*[-,;\u2013]\s*\d{1,3}){0,20}\s*\]?\s*</\1\s*>",
                          re.I)


def other_forms(answer: str, view: str) -> list[tuple[int, int]]:
    """Spans of what a reader takes for a citation and the guard cannot read, in reading order: brackets with
    a digit that no marker pattern parses ([1-3-5], [1a]), superscript, parenthesised, braced, angled and
    circled numbers, brackets written as character references, and a number in <sup> or <cite>."""
    found = [(m.start(), m.end()) for m in SUSPECT_RE.finditer(view)]
    for m in OTHER_FORMS_RE.finditer(view):  # a bracket around it ([²]) is part of what the reader sees
        lo, hi = m.start(), m.end()
        found.append((lo - 1, hi + 1) if lo and view[lo - 1] == "[" and view[hi:hi + 1] == "]" else (lo, hi))
    for m in TAG_FORMS_RE.finditer(answer):
        if not view[m.start():m.end()].strip():
            continue  # inside a hidden element
        before = answer[max(m.start() - 3, 0):m.start()]
        if m.group(1).lower() == "sup" and re.search(r"(?:\d|(?<![^\W\d_])[^\W\d_]{1,2})$", before):
            continue  # an exponent: 10<sup>6</sup>, m<sup>2</sup>
        found.append((m.start(), m.end()))
    found.sort()
    out: list[tuple[int, int]] = []
    for lo, hi in found:  # overlapping finds ([²] is a bracket and a superscript) are one
        if out and lo < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def sentences_touching(sents: list[Any], spans: list[tuple[int, int]]) -> set[int]:
    """Indices of the sentences that overlap any of ``spans`` (both sorted by start)."""
    out: set[int] = set()
    starts = [s.start for s in sents]
    for lo, hi in spans:
        k = max(bisect.bisect_right(starts, lo) - 1, 0)
        while k < len(sents) and sents[k].start < hi:
            if sents[k].end > lo:
                out.add(sents[k].index)
            k += 1
    return out


# One code point for one code point (so every span stays valid): full-width digits, brackets and
# separators, lenticular, tortoise-shell and white square brackets, and the dash family, as the ASCII a
# marker uses.
_FOLD = str.maketrans({**{chr(0xFF10 + d): str(d) for d in range(10)},
                       "\uff3b": "[", "\uff3d": "]", "\u3010": "[", "\u3011": "]", "\u3014": "[", "\u3015": "]",
                       "\u3016": "[", "\u3017": "]", "\u301a": "[", "\u301b": "]", "\u27e6": "[", "\u27e7": "]",
                       "\ufe5d": "[", "\ufe5e": "]", "\uff0c": ",", "\u3001": ",",
                       "\uff1b": ";", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2014": "-", "\u2015": "-",
                       "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-", "\u00a0": " ", "\u2009": " ",
                       "\u202f": " ", "\u3000": " "})


def fold_markers(text: str) -> str:
    """``text`` with the characters a reader takes for marker syntax as their ASCII forms, one for one.

    >>> fold_markers("X holds \uff3b\uff11\uff3d and \u30102\u3011 [1\u20143] \u27e64\u27e7.")
    'X holds [1] and [2] [1-3] [4].'
    """
    return text.translate(_FOLD)
