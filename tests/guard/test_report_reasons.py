"""The report's one-line reasons and its passage reader (#56, round 46): each line written out by hand from the
audit entry it explains, and each passage shape the reader must refuse, named by its index."""
from __future__ import annotations

import pytest

from citebound.guarding.report import GuardInputError, normalise_passages, why

RULE = "score > 0.5"


@pytest.mark.parametrize("audit,line", [
    ({"action": "verified", "reason": "", "score": 0.9}, ""),
    # a reason stands for the score: the score is not repeated against the rule
    ({"action": "flagged", "reason": "the claim is negated", "score": 0.9, "candidates": 0},
     "the claim is negated; re-attribution tried no other passage"),
    ({"action": "flagged", "reason": "", "score": 0.31, "candidates": 1, "best_candidate": {"passage": 2, "score": None}},
     "score 0.31 fails the rule (score > 0.5); re-attribution tried 1 other passage: none could be scored"),
    # an invalid pointer says what re-attribution tried, as a flagged citation does
    ({"action": "invalid", "reason": "passage 7 does not exist", "score": None, "candidates": 2,
      "best_candidate": {"passage": 3, "score": 0.2}},
     "passage 7 does not exist; re-attribution tried 2 other passages: the best, [3], scores 0.2, which fails too"),
    ({"action": "invalid", "reason": "passage 0 does not exist", "score": None, "candidates": 0},
     "passage 0 does not exist; re-attribution tried no other passage"),
    ({"action": "unverified", "reason": "", "score": None}, "no score"),
    ({"action": "unverified", "reason": "the verifier timed out", "score": None}, "the verifier timed out"),
    ({"action": "reattributed", "reason": "", "score": 0.2, "new_pointer": 4, "new_score": 0.8},
     "score 0.2 fails the rule (score > 0.5); moved to passage 4, which scores 0.8 and passes"),
])
def test_why_a_citation_did_not_pass_as_written(audit, line):
    assert why(audit, RULE) == line


@pytest.mark.parametrize("passages,index", [
    ([5], 0), (["a", ["b"]], 1), (["a", "b", {"text": 3}], 2), ([{"title": "t"}], 0), (["a", None], 1),
    (["a", {"text": None, "title": "t"}], 1),
])
def test_a_passage_without_string_text_is_refused_by_its_index(passages, index):
    with pytest.raises(GuardInputError, match=rf"^passage {index} has missing text"):
        normalise_passages(passages)


def test_passages_as_strings_and_objects_keep_their_order_and_blank_text():
    assert normalise_passages(["a", {"text": "b", "title": "t"}, "", {"text": " "}]) == ["a", "b", "", " "]
    with pytest.raises(GuardInputError, match="must be a list"):
        normalise_passages({"text": "a"})
