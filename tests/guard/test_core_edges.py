"""The guard's core (citebound/guarding/core.py) at its edges: a marker it cannot read right beside one it can, a
sentence's limit counting both, an obscured span of nothing, what makes a sentence a statement, the units limit
per cited passage, the halving that isolates failing units, the first window's evidence, proposals never an
empty passage, tied candidates, and guard_answers raising where guard_each isolates.

Positions and counts are worked by hand from the strings; scorers are tables or the lexical verifier."""
import pytest
from test_guarding import table_scorer

from citebound.guarding.core import guard_answer, guard_answers, guard_each, plan_citations
from citebound.scoring.loader import load_scorer
from citebound.text.limits import GuardInputError, LimitExceeded, Limits

P = ["Statins lower LDL cholesterol.", "Aspirin thins blood."]


def unreadable(answer, passages=P):
    return [(a.sentence_index, a.spans[0]) for a in plan_citations(answer, passages)[1] if a.cited == -1]


@pytest.mark.parametrize("answer,want", [
    # "Statins lower LDL cholesterol " is 30 characters: [1] is 30..33, what follows it starts at 33
    ("Statins lower LDL cholesterol [1]². Aspirin thins blood.", [(0, (33, 34))]),
    ("Statins lower LDL cholesterol [1](2). Aspirin thins blood.", [(0, (33, 36))]),
    ("Statins lower LDL cholesterol [1] ². Aspirin thins blood.", [(0, (34, 35))]),
    # the second sentence starts at 23 ("Statins lower LDL [1]. " is 23 characters): a (2) there is its own
    ("Statins lower LDL [1]. (2) Aspirin thins blood [2].", [(1, (23, 26))]),
    ("Statins lower LDL [1]. Aspirin thins blood [2].", []),
])
def test_a_marker_the_guard_cannot_read_is_found_beside_a_parsed_one_and_filed_under_its_sentence(answer, want):
    assert unreadable(answer) == want


def test_unreadable_markers_count_toward_the_sentences_citation_limit():
    lim = Limits(max_citations_per_sentence=2)
    assert len(plan_citations("Claim [1] (2).", P, limits=lim)[1]) == 2  # one parsed, one unreadable: at the limit
    with pytest.raises(LimitExceeded) as e:
        plan_citations("Claim [1] (2) (3).", P, limits=lim)  # three: one past
    assert e.value.limit == "max_citations_per_sentence"


def test_an_obscured_span_of_whitespace_leaves_its_sentence_checkable():
    scorer = load_scorer("lexical")
    _, rep = guard_answer('Statins lower <span style="filter:blur(3px)"> </span> LDL cholesterol [1].', P, scorer,
                          reattribute=None)
    assert [(a.action, a.unreadable) for a in rep.audit] == [("verified", False)]
    _, rep = guard_answer('Statins lower <span style="filter:blur(3px)">never</span> LDL cholesterol [1].', P, scorer,
                          reattribute=None)
    assert [(a.action, a.unreadable) for a in rep.audit] == [("unverified", True)]


@pytest.mark.parametrize("tail,uncited", [
    ("No.", 1),            # a word of two letters: a statement
    ("N\u200bo.", 1),      # the same word with an invisible character inside: still one to a reader
    ("(a) b.", 0),         # single letters (list labels): not a statement
    ("42.", 0),            # a number alone
])
def test_what_makes_an_uncited_sentence_a_statement(tail, uncited):
    _, rep = guard_answer(f"Statins lower LDL cholesterol [1]. {tail}", P, load_scorer("lexical"), reattribute=None)
    assert rep.n_sentences == 2 and rep.uncited == uncited


@pytest.mark.parametrize("base,cite,refused", [(1, 1, True), (1, 2, False), (0, 0, True), (0, 1, False)])
def test_the_units_limit_counts_the_windows_of_the_passage_cited(base, cite, refused):
    """The first passage is 1,200 characters: 3 windows at 600/300 (0, 300, 600); the second 20: 1. Limit 2."""
    passages = ["x" * 1200, "Aspirin thins blood."]
    lim = Limits(max_units_per_answer=2)
    if refused:
        with pytest.raises(LimitExceeded) as e:
            plan_citations(f"Claim [{cite}].", passages, base=base, limits=lim)
        assert e.value.limit == "max_units_per_answer" and "3 (claim, passage window) units" in str(e.value)
    else:
        assert [a.cited for a in plan_citations(f"Claim [{cite}].", passages, base=base, limits=lim)[1]] == [cite]


def test_two_failing_units_in_different_halves_leave_every_good_unit_scored():
    """Four units, the first and the last fail (their claims hold 'boom'): the halving gives the two good ones their
    scores and only the failing ones go unverified (4 -> 2 + 2 -> 1 + 1 + 1 + 1: two splits of the budget of
    2 * ceil(log2 4) + 2 = 6 retries each take 2)."""
    from failing_scorer import Failing

    answer = ("Boom one [1]. Statins lower LDL cholesterol [1]. Aspirin thins blood [2]. Boom two [2].")
    _, rep = guard_answer(answer, P, Failing("Boom"), reattribute=None)
    assert [a.action for a in rep.audit] == ["unverified", "verified", "verified", "unverified"]
    assert [a.reason.startswith("the verifier failed") for a in rep.audit] == [True, False, False, True]


def test_evidence_in_a_passages_first_window_is_that_window():
    passage = "Statins lower LDL cholesterol in adults. " + "Filler words about nothing at all. " * 40
    assert len(passage) > 1200
    _, rep = guard_answer("Statins lower LDL cholesterol [1].", [passage], load_scorer("lexical"), reattribute=None)
    ev = rep.audit[0].evidence
    assert (ev.start, ev.end) == (0, 600) and ev.text == passage[:600]


def test_re_attribution_never_proposes_an_empty_or_hidden_passage():
    passages = ["Paris is in France.", "", '<span style="display:none">Claim.</span>', "Claim holds here."]
    _, rep = guard_answer("Claim [1].", passages, table_scorer({}, passages=[p if "span" not in p else "" for p in passages]),
                          reattribute="verifier", proposals=5)
    assert rep.audit[0].candidates == 1  # only the fourth passage: the first is cited, the second and third are blank


def test_of_two_tied_candidates_that_fail_the_report_names_the_first_proposed():
    passages = ["Paris is in France.", "Ribosomes build proteins.", "Mitochondria make ATP."]
    scorer = table_scorer({("C.", 1): 0.3, ("C.", 2): 0.3}, passages=passages)
    _, rep = guard_answer("C [1].", passages, scorer, reattribute="verifier")
    a = rep.audit[0]
    assert (a.action, a.candidates, a.best_candidate) == ("flagged", 2, {"passage": 2, "score": 0.3})


def test_guard_answers_raises_on_bad_input_where_guard_each_puts_the_error_in_its_place():
    items = [("Statins lower LDL cholesterol [1].", P, 1), ("Claim [1].", P, 2)]
    with pytest.raises(GuardInputError, match="citation base must be 0 or 1"):
        guard_answers(items, load_scorer("lexical"), reattribute=None)
    ok, bad = guard_each(items, load_scorer("lexical"), reattribute=None)
    assert ok[1].verified == 1 and isinstance(bad, GuardInputError)
