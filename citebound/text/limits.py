"""Bounds on everything a guard input controls, in one place for the library, the CLI and a service.

A hostile answer must be refused quickly and without memory growth: ``[1-1000000000]`` would
otherwise expand into a billion citations. Each limit has a safe default and can be raised; past a
limit the guard raises :class:`LimitExceeded`, which names the limit, its value and what was seen
(the CLI exits 2 with that message).

>>> Limits().max_range
1000
>>> try:
...     Limits(max_passages=2).check_passages(["a", "b", "c"])
... except LimitExceeded as e:
...     print(e)
3 passages; the limit is 2 (max_passages)
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar


class GuardInputError(ValueError):
    """Bad guard input; the message says what is wrong."""


def check_text(text: str, what: str) -> None:
    """Refuse text that is not well-formed unicode (a lone surrogate cannot be encoded, tokenised or written).

    >>> try:
    ...     check_text("ok " + chr(0xD800), "'answer'")
    ... except GuardInputError as e:
    ...     print(e)
    'answer' is not well-formed unicode: a lone surrogate at character 3
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise GuardInputError(f"{what} is not well-formed unicode: a lone surrogate at character {e.start}") from None


class LimitExceeded(GuardInputError):
    """An input past one of the guard's limits; ``limit`` names it, ``value`` is its setting."""

    def __init__(self, what: str, limit: str, value: int):
        super().__init__(f"{what}; the limit is {value} ({limit})")
        self.limit, self.value = limit, value


@dataclass(frozen=True)
class Limits:
    """The guard's input limits (counts, and the upstream's read timeout in whole seconds; characters are
    Python string lengths)."""

    max_range: int = 1000  # citations one range marker such as [3-7] may expand to
    max_citations_per_sentence: int = 200
    max_citations_per_answer: int = 5000
    max_sentences: int = 10_000  # per answer
    max_passages: int = 1000  # per answer
    max_passage_chars: int = 1_000_000  # per passage; every window of a passage is scored, none is cut
    max_answer_chars: int = 500_000
    # (claim, window) units the verifier scores for one answer, windows counted at 600/300: what a request's
    # memory grows with (~170 bytes a unit; 2,000,000 units: ~0.4 GB with lexical, measured in docs/GUARD.md)
    max_units_per_answer: int = 2_000_000
    max_request_bytes: int = 32 * 1024 * 1024  # one input file / request body
    max_answers_per_request: int = 1000  # answers in one batch request to the service
    max_upstream_bytes: int = 8 * 1024 * 1024  # the guarding proxy's read of its upstream's answer (or stream)
    max_stream_held_chars: int = 100_000  # streamed text held waiting for its sentence to end
    upstream_read_timeout_s: int = 60  # seconds the proxy waits for the upstream's next bytes
    max_stream_s: int = 600  # seconds a streamed answer may take in all (a trickling upstream is cut there)

    # hard ceilings: no setting may pass these (so one flag cannot bring a memory or CPU bomb back)
    CEILINGS: ClassVar[dict[str, int]] = {
        "max_range": 10_000, "max_citations_per_sentence": 2_000, "max_citations_per_answer": 50_000,
        "max_sentences": 100_000, "max_passages": 10_000, "max_passage_chars": 10_000_000,
        "max_answer_chars": 5_000_000, "max_units_per_answer": 20_000_000,
        "max_request_bytes": 256 * 1024 * 1024, "max_answers_per_request": 10_000,
        "max_upstream_bytes": 64 * 1024 * 1024, "max_stream_held_chars": 1_000_000, "upstream_read_timeout_s": 3600,
        "max_stream_s": 86_400}

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"limit {f.name} must be a positive integer, got {v!r}")
            if v > self.CEILINGS[f.name]:
                raise ValueError(f"limit {f.name}={v} is past its hard ceiling {self.CEILINGS[f.name]}")

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> Limits:
        """Limits with some values replaced (``{"max_range": 50}``); an unknown name is an error, and so is a value
        that is not already a positive integer (``True``, ``2.7`` and ``"5"`` are refused by name, never read as
        1, 2 or 5)."""
        names = {f.name for f in fields(cls)}
        bad = sorted(set(values or {}) - names)
        if bad:
            raise ValueError(f"unknown limit(s) {bad}; valid: {sorted(names)}")
        return cls(**dict(values or {}))

    def check_answer(self, answer: str) -> None:
        if len(answer) > self.max_answer_chars:
            raise LimitExceeded(f"the answer has {len(answer)} characters", "max_answer_chars", self.max_answer_chars)

    def check_passages(self, passages: Sequence[str]) -> None:
        if len(passages) > self.max_passages:
            raise LimitExceeded(f"{len(passages)} passages", "max_passages", self.max_passages)
        for i, p in enumerate(passages):
            if len(p) > self.max_passage_chars:
                raise LimitExceeded(f"passage {i} has {len(p)} characters", "max_passage_chars",
                                    self.max_passage_chars)

    def check_sentences(self, n: int) -> None:
        if n > self.max_sentences:
            raise LimitExceeded(f"the answer has {n} sentences", "max_sentences", self.max_sentences)

    def check_citations(self, in_sentence: int, in_answer: int, sentence_index: int) -> None:
        if in_sentence > self.max_citations_per_sentence:
            raise LimitExceeded(f"sentence {sentence_index} makes {in_sentence} citations",
                                "max_citations_per_sentence", self.max_citations_per_sentence)
        if in_answer > self.max_citations_per_answer:
            raise LimitExceeded(f"the answer makes more than {self.max_citations_per_answer} citations",
                                "max_citations_per_answer", self.max_citations_per_answer)

    def check_units(self, n: int) -> None:
        if n > self.max_units_per_answer:
            raise LimitExceeded(f"the answer's citations make {n} (claim, passage window) units to score",
                                "max_units_per_answer", self.max_units_per_answer)

    def check_held(self, n: int) -> None:
        if n > self.max_stream_held_chars:
            raise LimitExceeded(f"the stream has held {n} characters without a complete sentence",
                                "max_stream_held_chars", self.max_stream_held_chars)
