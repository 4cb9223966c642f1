"""The library's edges no table chose (#56): the Guard's refusals of contradicting options, a batch with one bad
answer among good ones (its own error, at its own index; the rest guarded as if alone), re-attribution's unit budget
at its value and one under, a citation number past 18 digits, a superscript form inside hidden markup, and the audit
page's evidence trimmed at word boundaries. Each expected value is worked out by hand in the test."""
from __future__ import annotations

import pytest

from citebound import Guard
from citebound.guarding.audit_page import snapped
from citebound.guarding.report import GuardInputError
from citebound.text.limits import LimitExceeded, Limits

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
STATINS = "Statins lower LDL cholesterol in adults."
ATP = "Mitochondria produce ATP in cells."


@pytest.mark.parametrize("kw,why", [
    ({"calibration": {"tau": 0.5}, "threshold": 0.5}, "give a calibration or a threshold, not both"),
    ({"base": 2}, "citation base must be 0 or 1, got 2"),
    ({"base": -1}, "citation base must be 0 or 1, got -1"),
    ({"uncited": "skip"}, "uncited must be one of ['flag', 'ignore'], got 'skip'"),
    ({"action": "block"}, "action 'block' needs block_above in [0, 1)"),
    ({"action": "block", "block_above": 1.0}, "action 'block' needs block_above in [0, 1)"),
    ({"action": "remove", "remove": False, "on_error": "maybe"}, "on_error must be one of"),
    ({"action": "annotate", "remove": True}, "remove=True contradicts action='annotate'"),
])
def test_the_guard_refuses_options_that_contradict_or_are_unknown(kw, why):
    with pytest.raises(GuardInputError) as e:
        Guard("lexical", reattributor=None, **kw)
    assert why in str(e.value)


@pytest.mark.parametrize("kw", [{"base": 0}, {"base": 1}, {"action": "block", "block_above": 0.0},
                                {"action": "block", "block_above": 0.999}])
def test_the_values_beside_each_refusal_are_accepted(kw):
    Guard("lexical", reattributor=None, **kw)


def test_guard_each_gives_a_bad_answer_its_own_error_at_its_index_and_guards_the_rest_as_if_alone():
    g = Guard("lexical", reattributor=None)
    good0 = ("Mitochondria produce ATP in cells [1].", [ATP])
    bad1 = ("Statins lower LDL [1].", [{"title": "no text"}])
    bad2 = ("Aspirin works [1].", "not a list")  # a string is not ten one-character passages
    good3 = ("Statins lower LDL cholesterol in adults [2]. Aspirin cures colds [1].", [ASPIRIN, STATINS], 1)
    out = g.guard_each([good0, bad1, bad2, good3])
    assert isinstance(out[1], GuardInputError) and "passage 0 has missing text" in str(out[1])
    assert isinstance(out[2], GuardInputError) and "'passages' (or 'ctxs') must be a list" in str(out[2])
    alone0, alone3 = g.guard(*good0[:2]), g.guard(*good3[:2])
    assert out[0][0] == alone0[0] == "Mitochondria produce ATP in cells [1]."
    assert out[3][0] == alone3[0]
    assert (out[0][1].verified, out[3][1].verified, out[3][1].flagged) == (1, 1, 1)
    with pytest.raises(GuardInputError):  # guard_many: one bad answer raises for all
        g.guard_many([good0, bad1])
    assert g.guard_many([(good0[0], tuple(good0[1]))])[0][0] == alone0[0]  # a tuple of passages is a list of them


BOOM = "Statins lower LDL boom [1]. Statins lower LDL cholesterol in adults [1]."


@pytest.mark.parametrize("on_error,first,budget", [("closed", "[1 UNVERIFIED]", 0.5), ("open", "[1]", 0.0)])
def test_guard_each_and_stream_follow_on_error_when_the_verifier_fails(on_error, first, budget):
    """The verifier fails on the first sentence only ('boom'); the second copies the passage (verified). Closed:
    the first marker is flagged UNVERIFIED, budget 1 of 2; open: it stays as written, budget 0. guard_each (a
    batch of two answers) and stream (a sentence a piece, their reports merged) say the same as guard."""
    from failing_scorer import Failing

    g = Guard(Failing(), threshold=0.5, reattributor=None, on_error=on_error)
    want = BOOM.replace("[1].", first + ".", 1)
    (t0, r0), (t1, r1) = g.guard_each([(BOOM, [STATINS]), ("Statins lower LDL cholesterol in adults [1].", [STATINS])])
    assert (t0, r0.unverified, r0.verified, r0.review_budget) == (want, 1, 1, budget)
    assert (t1, r1.verified, r1.review_budget) == ("Statins lower LDL cholesterol in adults [1].", 1, 0.0)
    *texts, rep = list(g.stream([BOOM[:27], BOOM[27:]], [STATINS]))
    assert "".join(texts) == want and (rep.unverified, rep.verified, rep.review_budget) == (1, 1, budget)


def test_unchecked_gives_the_text_with_every_citation_unverified_and_leaves_blocking_to_its_caller():
    """No verifier runs: both citations unverified, budget 1; with action block past 0 the text is still given
    (the stream or service that asked decides), the report not marked blocked. Bad input raises, as guard does."""
    g = Guard("lexical", reattributor=None, action="block", block_above=0.0)
    text, rep = g.unchecked("Aspirin works [1]. Statins work [2].", [ASPIRIN, STATINS], "ran past its time")
    assert text == "Aspirin works [1 UNVERIFIED]. Statins work [2 UNVERIFIED]."
    assert (rep.unverified, rep.review_budget, rep.blocked) == (2, 1.0, False)
    with pytest.raises(GuardInputError, match="must be a list"):
        g.unchecked("Aspirin works [1].", "not a list", "ran past its time")


@pytest.mark.parametrize("max_units,candidates,stopped", [(3, 3, False), (2, 2, True), (1, 1, True)])
def test_re_attribution_scores_proposals_up_to_the_unit_budget_and_says_where_it_stopped(max_units, candidates, stopped):
    """One flagged citation ([1] on the ATP claim points at the aspirin passage), four one-window passages: the
    proposer offers the 3 others (proposals=3), 1 unit each. A budget of 3 scores all three; 2 scores two and
    says it stopped; 1 (the verification's own unit fits too: 1 <= 1) scores one."""
    g = Guard("lexical", reattributor="bm25", proposals=3, limits=Limits(max_units_per_answer=max_units))
    _, rep = g.guard("Mitochondria produce ATP in cells [1].", [ASPIRIN, STATINS, ATP, "Cells divide."])
    (a,) = rep.audit
    assert a.candidates == candidates
    assert ("re-attribution stopped at the answer's max_units_per_answer limit" in a.reason) is stopped
    if max_units == 3:  # the ATP passage is among the three and supports the claim fully
        assert (a.action, a.new_pointer) == ("reattributed", 3)


@pytest.mark.parametrize("digits,refused", [(18, False), (19, True)])
def test_a_citation_number_of_more_than_18_digits_is_refused_not_parsed(digits, refused):
    g = Guard("lexical", reattributor=None)
    answer = f"Aspirin inhibits cyclooxygenase [{'9' * digits}]."
    if refused:
        with pytest.raises(LimitExceeded) as e:
            g.guard(answer, [ASPIRIN])
        assert "has more than 18 digits" in str(e.value) and e.value.limit == "max_range"
    else:
        _, rep = g.guard(answer, [ASPIRIN])
        assert (rep.n_citations, rep.invalid) == (1, 1)  # a pointer far past the one passage


@pytest.mark.parametrize("answer,unverified", [
    ("Aspirin works<sup>2</sup>. Statins lower LDL cholesterol in adults [1].", 1),  # a form: the sentence fails
    ('Aspirin works<span style="display:none"><sup>2</sup></span>. Statins lower LDL cholesterol in adults [1].', 0),
])
def test_a_sup_form_inside_hidden_markup_is_no_citation_a_reader_sees(answer, unverified):
    _, rep = Guard("lexical", reattributor=None).guard(answer, [STATINS])
    assert rep.unverified == unverified and rep.verified == 1


@pytest.mark.parametrize("ev,want", [
    ({"text": "alpha beta gamma", "start": 0}, "alpha beta gamma"),  # from the passage's start: nothing to cut
    ({"text": "pha beta gamma", "start": 5}, "\u2026beta gamma"),  # starts inside a word: that word goes
    ({"text": " beta gamma", "start": 5}, " beta gamma"),  # starts at a space: nothing cut
    ({"text": "x" * 39 + " tail", "start": 5}, "\u2026tail"),  # the space at 39: within the first 40, cut there
    ({"text": "x" * 40 + " tail", "start": 5}, "\u2026" + "x" * 40 + " tail"),  # at 40: not within them, kept
    # a full 600-character window that ends inside a word loses it; the last space at 596 is within 40 of the end
    ({"text": "ab " * 199 + "abc", "start": 0}, "ab " * 198 + "ab\u2026"),
    ({"text": "ab " + "x" * 597, "start": 0}, "ab " + "x" * 597 + "\u2026"),  # the last space far back: kept whole
    ({"text": "ab " * 199 + "ab", "start": 0}, "ab " * 199 + "ab"),  # 599 characters: the passage's own end
    ({"text": "ab " * 200, "start": 0}, "ab " * 200),  # 600, ending at a space: nothing cut
])
def test_an_evidence_window_loses_only_the_words_it_cuts(ev, want):
    assert snapped(ev) == want


def test_a_citation_that_had_a_reason_keeps_it_when_re_attribution_stops_at_the_budget():
    """[9] of four passages is invalid, and says so; re-attribution under a budget of 2 units scores two proposals
    and stops: its reason is the first, then "; ", then where re-attribution stopped (nothing of either lost)."""
    g = Guard("lexical", reattributor="bm25", proposals=3, limits=Limits(max_units_per_answer=2))
    _, rep = g.guard("Mitochondria produce ATP in cells [9].", [ASPIRIN, STATINS, ATP, "Cells divide."])
    (a,) = rep.audit
    assert a.candidates == 2
    assert a.reason == ("citation [9] points at no passage (have 4, numbered from 1); re-attribution stopped at "
                        "the answer's max_units_per_answer limit")
