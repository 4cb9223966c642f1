"""The LiteLLM guardrail's settings and edges (#56 round 64), its hooks driven with LiteLLM's own types in a
subprocess (tests/litellm/drive_hooks.py): the Guard its settings build (no verifier named is embedding;
``citebound_block_above: 0`` is a bound of 0, not a missing one), passages that are not a list a 422, a tool-call
answer's null content left null, a stream failing open or closed counted as each says, a stream that ends
while its only text is a held, unfinished sentence refused (502), never ended quietly with that text unchecked,
and a stream blocked at its finish ending as a content filter, its claims withheld. The guardrail's name, event hook
and default_on reach LiteLLM."""
from __future__ import annotations

import pytest
from guard_cases import CONFIGS, PASSAGES, write_calibration
from test_litellm_guardrail import REMOVED_LAST, drive, settings, streamed


@pytest.fixture(scope="module")
def got(tmp_path_factory):
    cal = write_calibration(tmp_path_factory.mktemp("litellm-values"))
    data = {"citebound": {"passages": PASSAGES}}
    scen = {
        "default": {"settings": {}, "inspect": True},
        "block-0": {"settings": settings("annotate", cal) | {"citebound_action": "block", "citebound_block_above": 0},
                    "inspect": True},
        "block-0-answer": {"settings": settings("annotate", cal) | {"citebound_action": "block", "citebound_block_above": 0},
                           "data": data, "choices": [REMOVED_LAST]},
        "passages-5": {"settings": settings("annotate", cal), "data": {"citebound": {"passages": 5}},
                       "choices": [REMOVED_LAST]},
        "tool-call": {"settings": settings("annotate", cal), "data": data, "choices": [None]},
        "open": {"settings": settings("open", cal), "data": data, "chunks": streamed(REMOVED_LAST), "failing": "Unicorns"},
        "closed": {"settings": settings("annotate", cal), "data": data, "chunks": streamed(REMOVED_LAST),
                   "failing": "Unicorns"},
        # one chunk, text and finish together: the statin sentence verifies as the chunk is read, the unicorn one
        # is flagged at the finish: 1 of 2 > 0.3, blocked there, the chunk's own text withheld with it
        "block-at-finish": {"settings": settings("block", cal), "data": data,
                            "chunks": [{"contents": [REMOVED_LAST], "finish": "stop"}]},
        "held-only": {"settings": settings("annotate", cal), "data": data,
                      "chunks": [{"contents": ["Statins lower"], "finish": None},
                                 {"contents": [" LDL cholesterol [1]"], "finish": None}]},
    }
    return dict(zip(scen, drive(list(scen.values()))))


def test_no_verifier_named_is_the_documented_embedding_default(got):
    assert got["default"] == {"status": 200, "verifier": "embedding", "action": "annotate", "block_above": 1.0,
                              "on_error": "closed", "litellm": ["citebound", "post_call", True]}


def test_a_block_bound_of_zero_is_a_bound(got):
    assert got["block-0"] == {"status": 200, "verifier": "lexical", "action": "block", "block_above": 0.0,
                              "on_error": "closed", "litellm": ["citebound", "post_call", True]}
    # one of the two citations fails: review budget 0.5 > 0, withheld
    r = got["block-0-answer"]
    assert r["status"] == 403 and r["detail"]["citebound"]["report"]["review_budget"] == 0.5


def test_passages_that_are_not_a_list_are_a_422_naming_them(got):
    r = got["passages-5"]
    assert r["status"] == 422 and r["detail"].startswith("citebound: ")


def test_a_tool_call_answers_null_content_stays_null(got):
    r = got["tool-call"]
    assert r["status"] == 200 and r["text"] == [None] and r["report"]["n_citations"] == 0


@pytest.mark.parametrize("mode,budget", [("open", 0.0), ("closed", 0.5)])
def test_a_stream_whose_verifier_fails_counts_it_as_its_on_error_says(got, mode, budget):
    """The verifier fails on the second sentence: unverified either way; failing open it is not to review
    (budget 0 of 2), failing closed it is (1 of 2)."""
    r = got[mode]
    assert CONFIGS["open"] == {"on_error": "open"}
    assert r["status"] == 200, r
    rep = r["report"]
    assert (rep["verified"], rep["unverified"], rep["review_budget"]) == (1, 1, budget)
    assert r["text"].startswith("Statins lower LDL cholesterol [1]. ")


def test_a_stream_that_ends_inside_its_only_held_sentence_is_refused(got):
    r = got["held-only"]
    assert r["status"] == 502 and "without a finish_reason" in r["detail"], r
    assert r["text"] == "" and "characters of an unfinished sentence were not sent" in r["detail"]


def test_a_stream_blocked_at_its_finish_ends_as_a_content_filter_with_every_claim_withheld(got):
    """Blocked when the finishing chunk's held sentence is checked: the client's last chunk ends in
    content_filter, carries none of the answer, and the report (1 verified, 1 flagged of 2: 0.5) has no claims."""
    r = got["block-at-finish"]
    assert (r["status"], r["finish"], r["text"]) == (200, "content_filter", ""), r
    rep = r["report"]
    assert (rep["blocked"], rep["verified"], rep["flagged"], rep["review_budget"]) == (True, 1, 1, 0.5)
    assert [a["claim"] for a in rep["audit"]] == [None, None]
