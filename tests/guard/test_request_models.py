"""The service's request bodies refused by their models, each by name: 'passages' and 'ctxs' together (one
answer, a batch's answer, the proxy's extra), 'answer' with 'answers', a group name past 200 characters; and
what each accepts at its boundary."""
import pytest
from pydantic import ValidationError

from citebound.serving.models import AnswerIn, ChatRequest, CiteboundExtra, GuardRequest


def refused(model, body, words):
    with pytest.raises(ValidationError, match=words):
        model.model_validate(body)


def test_passages_and_ctxs_together_are_refused_and_ctxs_alone_are_the_passages():
    refused(GuardRequest, {"answer": "a [1].", "passages": ["p"], "ctxs": ["q"]}, "give 'passages' or 'ctxs', not both")
    refused(AnswerIn, {"answer": "a [1].", "passages": ["p"], "ctxs": ["q"]}, "give 'passages' or 'ctxs', not both")
    refused(GuardRequest, {"answers": [{"answer": "a [1].", "passages": ["p"], "ctxs": ["q"]}]}, "not both")
    one = GuardRequest.model_validate({"answer": "a [1].", "ctxs": ["q"]})
    assert one.passages == ["q"] and one.ctxs is None
    batch = GuardRequest.model_validate({"answers": [{"answer": "a [1].", "ctxs": [{"text": "q", "title": "T"}]}]})
    assert batch.answers[0].passages[0].text == "q" and batch.answers[0].ctxs is None


def test_answer_and_answers_are_one_or_the_other():
    for body in ({"answer": "a [1].", "passages": ["p"], "answers": [{"answer": "b [1].", "passages": ["p"]}]}, {}):
        refused(GuardRequest, body, "give either 'answer' with 'passages', or 'answers'")
    refused(GuardRequest, {"answer": "a [1]."}, "'passages' is required with 'answer'")
    refused(AnswerIn, {"answer": "a [1]."}, "'passages' \\(or 'ctxs'\\) is required")


@pytest.mark.parametrize("model, wrap", [
    (GuardRequest, lambda g: {"answer": "a [1].", "passages": ["p"], "group": g}),
    (CiteboundExtra, lambda g: {"group": g}),
    (ChatRequest, lambda g: {"model": "m", "messages": [], "citebound": {"group": g}}),
])
def test_a_group_name_is_at_most_200_characters_everywhere(model, wrap):
    assert model.model_validate(wrap("g" * 200))
    refused(model, wrap("g" * 201), "at most 200 characters")
