"""Request and response models of the service (pydantic: the OpenAPI schema comes from them)."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from citebound.guarding.guard import GuardReport
from citebound.text.limits import check_text


def well_formed(text: str) -> str:
    """A string that is well-formed unicode (:func:`~citebound.text.limits.check_text`, whose error is a
    ValueError): a 422 naming the field, never a 500 later."""
    check_text(text, "the text")
    return text


Text = Annotated[str, AfterValidator(well_formed)]


class Passage(BaseModel):
    text: str
    title: str | None = None


def _one_of_passages_ctxs(m: Any) -> Any:
    """``ctxs`` (OpenScholar's name, which the CLI reads too) is ``passages`` by another name: one of them."""
    if m.passages is not None and m.ctxs is not None:
        raise ValueError("give 'passages' or 'ctxs', not both")
    if m.ctxs is not None:
        m.passages, m.ctxs = m.ctxs, None
    return m


class AnswerIn(BaseModel):
    id: str | int | None = None
    answer: str
    passages: list[str | Passage] | None = Field(None, description="the passages the answer's [N] markers point at")
    ctxs: list[str | Passage] | None = Field(None, description="another name for 'passages' (OpenScholar's)")
    citation_base: Literal[0, 1] | None = Field(None, description="1: [1] is the first passage (default)")

    @model_validator(mode="after")
    def passages_or_ctxs(self) -> AnswerIn:
        _one_of_passages_ctxs(self)
        if self.passages is None:
            raise ValueError("'passages' (or 'ctxs') is required: missing context is never a pass")
        return self


class GuardRequest(BaseModel):
    """One answer (``answer`` + ``passages``) or a batch (``answers``)."""

    model_config = ConfigDict(extra="forbid")
    id: str | int | None = None
    answer: str | None = None
    passages: list[str | Passage] | None = None
    ctxs: list[str | Passage] | None = Field(None, description="another name for 'passages' (OpenScholar's)")
    citation_base: Literal[0, 1] | None = None
    answers: list[AnswerIn] | None = None
    calibration: str | None = Field(None, description="a calibration profile's name (GET /v1/calibrations)")
    group: str | None = Field(None, max_length=200,
                              description="the calibration group of the answers (a grouped calibration's; null: pooled)")

    @model_validator(mode="after")
    def one_or_batch(self) -> GuardRequest:
        _one_of_passages_ctxs(self)
        if (self.answers is None) == (self.answer is None):
            raise ValueError("give either 'answer' with 'passages', or 'answers' (a batch), not both or neither")
        if self.answer is not None and self.passages is None:
            raise ValueError("'passages' is required with 'answer': missing context is never a pass")
        return self


class GuardResult(BaseModel):
    id: str | int | None = None
    guarded_answer: str | None = Field(description="null when the answer is blocked (--action block)")
    report: GuardReport


class AnswerError(BaseModel):
    """One answer of a batch that could not be guarded: its position, id and why (the limit, if one)."""

    index: int
    id: str | int | None = None
    error: str
    limit: str | None = None


class GuardBatchResult(BaseModel):
    """One entry per answer, in order: its result, or its error; ``counts`` add up the results."""

    results: list[GuardResult | AnswerError]
    counts: dict[str, float]


class Pair(BaseModel):
    claim: Text
    passage: Text


class ScoreRequest(BaseModel):
    pairs: list[Pair]


class PairScore(BaseModel):
    score: float | None
    verdict: bool
    best_window: int


class ScoreResponse(BaseModel):
    verifier: str
    scores: list[PairScore]


class CiteboundExtra(BaseModel):
    passages: list[str | Passage] | None = None
    return_original: bool = Field(False, description="also return the upstream's unguarded text "
                                                     "(citebound.original_content); off by default, so that withheld or "
                                                     "unchecked text never leaves unless asked for")
    citation_base: Literal[0, 1] | None = None
    calibration: str | None = None
    group: str | None = Field(None, max_length=200)


class ChatRequest(BaseModel):
    """An OpenAI chat-completions request plus citebound's ``citebound`` field."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[dict[str, Any]]
    stream: bool | None = None
    citebound: CiteboundExtra | None = None


class MessagesRequest(BaseModel):
    """An Anthropic Messages request plus citebound's ``citebound`` field (``extra_body`` in the anthropic SDK)."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int
    stream: bool | None = None
    citebound: CiteboundExtra | None = None


class ResponsesRequest(BaseModel):
    """An OpenAI Responses request plus citebound's ``citebound`` field."""

    model_config = ConfigDict(extra="allow")
    model: str
    input: str | list[dict[str, Any]] | None = None
    stream: bool | None = None
    citebound: CiteboundExtra | None = None
