"""A scorer that fails on one text: the lexical verifier, except that a call whose claims hold ``trigger`` raises
(a stand-in for a verifier error that one request's text causes)."""
from __future__ import annotations


class Failing:
    name, hash, windowing = "failing", "f" * 16, {"window_chars": 600, "stride": 300, "claim_cap": 600}

    def __init__(self, trigger: str = "boom"):
        from citebound.scoring.loader import load_scorer

        self.trigger = trigger
        self.inner = load_scorer("lexical")
        self.cfg = self.inner.cfg

    def score(self, claims, passages):
        if any(self.trigger in c for c in claims):
            raise RuntimeError("verifier failed on this text")
        return self.inner.score(claims, passages)
