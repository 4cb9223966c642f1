"""What a reader sees of an answer: markup that a renderer hides is not part of any claim.

Model output is often shown through a markdown or HTML renderer, which hides HTML comments, elements
marked hidden (``hidden``, ``display:none``, ``visibility:hidden``, ``aria-hidden="true"``,
``font-size:0``), ``<script>``/``<style>``/``<template>`` contents, and zero-width characters. Text there
could lift a claim the reader sees bare to "verified", so the guard verifies the visible text only:
:func:`blank_hidden` replaces hidden regions by spaces of the same length (every span into the answer
stays valid, and a marker inside a hidden region is no citation), and :func:`drop_invisible` removes
zero-width characters from a claim. The scan is linear: tags are matched with bounded patterns and
nesting is counted, never backtracked.

>>> blank_hidden("Aspirin cures migraine<!-- in a trial of 12 -->.") == "Aspirin cures migraine" + " " * 25 + "."
True
>>> drop_invisible("cu\\u200bres")
'cures'
"""
from __future__ import annotations

import re

# zero-width and other invisible format characters
INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]{0,20})\b([^<>]{0,2000})>")
_HIDING_ATTR = re.compile(r"\bhidden\b|display\s*:\s*none|visibility\s*:\s*hidden|aria-hidden\s*=\s*[\"']?true|"
                          r"font-size\s*:\s*0(?![.\d]*[1-9])|opacity\s*:\s*0(?![.\d]*[1-9])", re.I)
_HIDING_TAGS = {"script", "style", "template", "noscript"}
_VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "source", "area", "base", "col", "embed", "param", "track"}


def hidden_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every region a renderer hides: comments (an unclosed one hides the rest) and
    hidden elements with their contents (to their matching close tag, nesting counted; else the end)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        lt = text.find("<", pos)
        if lt < 0:
            return spans
        if text.startswith("<!--", lt):
            end = text.find("-->", lt + 4)
            spans.append((lt, len(text) if end < 0 else end + 3))
            pos = spans[-1][1]
            continue
        m = _TAG.match(text, lt)
        if not m or m.group(1):
            pos = lt + 1
            continue
        tag = m.group(2).lower()
        if tag in _VOID or not (tag in _HIDING_TAGS or _HIDING_ATTR.search(m.group(3))):
            pos = m.end()
            continue
        end = _close(text, m.end(), tag)
        spans.append((lt, end))
        pos = end


def _close(text: str, pos: int, tag: str) -> int:
    """Where the element opened just before ``pos`` ends: after its matching close tag, or the text's end."""
    depth = 1
    pattern = re.compile(r"<(/?)" + re.escape(tag) + r"\b[^<>]{0,2000}>", re.I)
    for m in pattern.finditer(text, pos):
        depth += -1 if m.group(1) else 1
        if depth == 0:
            return m.end()
    return len(text)


def blank_hidden(text: str) -> str:
    """``text`` with every hidden region replaced by spaces (same length, so spans stay valid)."""
    spans = hidden_spans(text)
    if not spans:
        return text
    out, pos = [], 0
    for lo, hi in spans:
        out += [text[pos:lo], " " * (hi - lo)]
        pos = hi
    out.append(text[pos:])
    return "".join(out)


def drop_invisible(text: str) -> str:
    """``text`` without zero-width and other invisible format characters."""
    return INVISIBLE.sub("", text)


def safe_link(url: str) -> bool:
    """Whether a link target is http(s) (or relative): ``javascript:``, ``data:`` and the like are not.

    >>> safe_link("https://a.org/x"), safe_link(" JavaScript:alert(1)"), safe_link("/rel")
    (True, False, True)
    """
    u = drop_invisible(url).strip().lower()
    scheme = re.match(r"([a-z][a-z0-9+.-]*):", u)
    return scheme is None or scheme.group(1) in ("http", "https")


# One code point for one code point (so every span stays valid): full-width digits, brackets and
# separators, lenticular and tortoise-shell brackets, and the dash family, as the ASCII a marker uses.
_FOLD = str.maketrans({**{chr(0xFF10 + d): str(d) for d in range(10)},
                       "\uff3b": "[", "\uff3d": "]", "\u3010": "[", "\u3011": "]", "\u3014": "[", "\u3015": "]",
                       "\u3016": "[", "\u3017": "]", "\u301a": "[", "\u301b": "]", "\uff0c": ",", "\u3001": ",",
                       "\uff1b": ";", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2014": "-", "\u2015": "-",
                       "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-", "\u00a0": " ", "\u2009": " ",
                       "\u202f": " ", "\u3000": " "})


def fold_markers(text: str) -> str:
    """``text`` with the characters a reader takes for marker syntax as their ASCII forms, one for one.

    >>> fold_markers("X holds \uff3b\uff11\uff3d and \u30102\u3011 [1\u20143].")
    'X holds [1] and [2] [1-3].'
    """
    return text.translate(_FOLD)
