"""The MCP tools' inputs as an agent may send them (#56): every argument of the wrong type or value refused with
its name, the claim limit at its value and one past, and the compact report's claim cut at 200 characters."""
from __future__ import annotations

import pytest

from citebound import Guard
from citebound.guarding.report import GuardInputError
from citebound.serving.mcp_server import MAX_CLAIM_CHARS, guard_answer, verify_citation

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
ANSWER = "Aspirin irreversibly inhibits platelet cyclooxygenase [1]."


@pytest.fixture(scope="module")
def guard():
    return Guard("lexical", reattributor=None)


@pytest.mark.parametrize("kw,why", [
    ({"answer": 5}, "'answer' must be a string, got int"),
    ({"passages": ASPIRIN}, "'passages' must be a list of strings or of {'text': ...} objects, got str"),
    ({"passages": [{"title": "t"}]}, "'passages': passage 0 has missing text"),
    ({"citation_base": 2}, "'citation_base' must be 0 or 1, got 2"),
    ({"citation_base": True}, "'citation_base' must be 0 or 1, got True"),
    ({"citation_base": "1"}, "'citation_base' must be 0 or 1, got '1'"),
    ({"group": 5}, "'group' must be a string (a calibration group) or null, got int"),
    ({"detail": "all"}, "'detail' must be 'compact' or 'full', got 'all'"),
])
def test_guard_answer_refuses_each_bad_argument_by_name(guard, kw, why):
    args = {"answer": ANSWER, "passages": [ASPIRIN]} | kw
    with pytest.raises(GuardInputError) as e:
        guard_answer(guard, **args)
    assert why in str(e.value)


@pytest.mark.parametrize("base,answer,verified", [(0, "Aspirin irreversibly inhibits platelet cyclooxygenase [0].", 1),
                                                  (1, ANSWER, 1), (0, ANSWER, 0)])
def test_guard_answer_reads_citations_at_the_base_given(guard, base, answer, verified):
    out = guard_answer(guard, answer, [ASPIRIN], citation_base=base, detail="full")
    assert out["report"]["verified"] == verified and out["report"]["n_citations"] == 1


@pytest.mark.parametrize("kw,why", [
    ({"claim": 5}, "'claim' must be a string, got int"), ({"passage": None}, "'passage' must be a string, got NoneType"),
    ({"claim": " \n"}, "'claim' is empty"), ({"passage": " "}, "'passage' is empty"),
    ({"claim": "a" * (MAX_CLAIM_CHARS + 1)}, f"'claim' has {MAX_CLAIM_CHARS + 1} characters; the limit is {MAX_CLAIM_CHARS}"),
    ({"claim": "aspirin \ud800"}, "'claim' is not well-formed unicode"),
])
def test_verify_citation_refuses_each_bad_argument_by_name(guard, kw, why):
    args = {"claim": "Aspirin inhibits cyclooxygenase.", "passage": ASPIRIN} | kw
    with pytest.raises(GuardInputError) as e:
        verify_citation(guard, **args)
    assert why in str(e.value)


def test_a_claim_of_exactly_the_limit_is_checked(guard):
    out = verify_citation(guard, ("aspirin " * 2000)[:MAX_CLAIM_CHARS], ASPIRIN)
    assert out["verdict"] in ("passes", "fails") and out["score"] is not None


@pytest.mark.parametrize("n,shown", [(200, None), (201, 200)])
def test_the_compact_report_cuts_a_claim_past_200_characters(guard, n, shown):
    claim = ("Vitamin d cures colds " * 20)[:n - 1].rstrip() + "."
    claim = claim + "x" * (n - len(claim))  # exactly n characters, a claim the passage does not support
    claim = claim[:-1] + "."
    assert len(claim) == n
    out = guard_answer(guard, claim[:-1] + " [1].", [ASPIRIN])
    (f,) = out["failing"]
    want = f["claim"]
    if shown is None:
        assert len(want) == 200 and not want.endswith("\u2026")
    else:
        assert want.endswith("\u2026") and len(want) == shown + 1


def test_verify_citations_passage_is_held_to_the_guards_passage_limit():
    """A Guard whose passages may have 50 characters: a passage of 50 is checked, one of 51 refused, naming the
    limit (LimitExceeded is a GuardInputError: the tool's error, never a score of a text past the limit)."""
    from citebound.text.limits import LimitExceeded, Limits

    g = Guard("lexical", reattributor=None, limits=Limits(max_passage_chars=50))
    ok = verify_citation(g, "Aspirin inhibits platelet cyclooxygenase", ASPIRIN[:50].ljust(50))
    assert ok["verdict"] in ("passes", "fails") and ok["score"] is not None
    with pytest.raises(LimitExceeded, match="max_passage_chars"):
        verify_citation(g, "Aspirin inhibits platelet cyclooxygenase", ASPIRIN[:50] + "x")


def test_a_blocked_answers_text_never_reaches_the_agent():
    """block past 0.3: one citation of one flagged (no passage holds 'unicorns'): budget 1 > 0.3, withheld: no
    guarded text, the reason and the counts. (Its report may quote the claims, as /v1/guard's does: the agent sent
    the answer itself; the proxy, whose caller never saw the upstream's text, leaves them out.)"""
    g = Guard("lexical", reattributor=None, action="block", block_above=0.3, threshold=0.5)
    for detail in ("compact", "full"):
        out = guard_answer(g, "Unicorns sing opera loudly [1].", [ASPIRIN], detail=detail)
        assert out["guarded_answer"] is None and "budget" in out["blocked"]
        counts = out["counts"] if detail == "compact" else out["report"]
        assert (counts["blocked"], counts["flagged"], counts["review_budget"]) == (True, 1, 1.0)
    ok = guard_answer(g, ANSWER, [ASPIRIN])
    assert ok["guarded_answer"] == ANSWER and "blocked" not in ok
