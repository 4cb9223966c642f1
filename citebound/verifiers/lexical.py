"""Deterministic term-overlap verifier (no model, no download)."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has
have having he her here hers him his how i if in into is it its itself just may me might more most
must my no nor not of off on once only or other our ours out over own same she should so some such
than that the their theirs them then there these they this those through to too under until up very
was we were what when where which while who whom why will with would you your yours et al via using
used use based however thus therefore e g i.e eg ie
""".split())

_TOKEN = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def _stem(tok: str) -> str:
    for suf in ("ations", "ation", "ingly", "ings", "ing", "edly", "ies", "ied", "ed", "es", "ly", "s"):
        if len(tok) > len(suf) + 3 and tok.endswith(suf):
            return tok[: -len(suf)]
    return tok


@lru_cache(maxsize=200_000)
def content_terms(text: str) -> frozenset[str]:
    """Lower-cased, stop-word-free, lightly stemmed terms of ``text``.

    >>> sorted(content_terms("The proteins are binding to nanoparticles"))
    ['bind', 'nanoparticl', 'protein']
    """
    return frozenset(_stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS and len(t) > 1)


def term_recall(claim: str, window: str) -> float:
    """Share of the claim's content terms that occur in the window (0 if none)."""
    c = content_terms(claim)
    if not c:
        return 0.0
    return len(c & content_terms(window)) / len(c)


def token_jaccard(a: str, b: str) -> float:
    """Jaccard overlap of content terms."""
    x, y = content_terms(a), content_terms(b)
    return len(x & y) / len(x | y) if x | y else 0.0


class LexicalVerifier:
    binary = False

    def __init__(self, cfg: Mapping[str, Any]):
        self.name = cfg.get("name", "lexical")
        self.threshold = float(cfg.get("threshold", 0.6))
        self.batch_size = 4096

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        s = np.array([term_recall(c, w) for c, w in zip(claims, windows)], dtype=float)
        return s, s >= self.threshold
