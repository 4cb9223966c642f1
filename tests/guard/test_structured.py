"""Citations carried as data (citebound/guarding/structured.py), library-level, with boundaries chosen on purpose:
where a citation attaches (a sentence's last character, the whitespace after it, the next sentence's first
character, offset 0, the text's end), which sentence it then cites and which stay uncited, what ``remove`` removes,
and which verdicts count as failed. Expected values are worked out by hand from the text's character positions."""
import pytest

from citebound import Guard
from citebound.guarding import structured
from citebound.guarding.report import CitationAudit
from citebound.guarding.structured import Attached

TEXT = "Aspirin inhibits platelet cyclooxygenase. Statins lower LDL. Dolphins sleep."
# sentences by hand: [0, 41) "Aspirin ... cyclooxygenase.", [42, 60) "Statins lower LDL.", [61, 76) "Dolphins sleep."
SENTS = [(0, 41), (42, 60), (61, 76)]
QUOTE = ["Aspirin irreversibly inhibits platelet cyclooxygenase.", "Statins lower LDL in adults.", "Dolphins sleep."]


@pytest.mark.parametrize("at,cites", [
    (0, 0),  # before the first character: the first sentence
    (1, 0), (41, 0),  # the first sentence's first character, its end (just after the '.')
    (42, 0),  # after the whitespace that follows it: the whitespace belongs to the sentence before
    (43, 1), (60, 1), (61, 1),  # inside the second, at its end, after its whitespace
    (62, 2), (76, 2), (999, 2),  # inside the last, at the text's end, past it (clamped)
])
def test_a_citation_cites_the_sentence_holding_the_place_it_attaches_to_and_only_that_one_is_cited(at, cites):
    g = Guard("lexical")
    _, rep = g.guard(TEXT, [])
    assert [list(s) for s in SENTS] == rep.uncited_sentences  # no markers: all three uncited
    found = structured.check(g, TEXT, [Attached(at, QUOTE[cites], "c")], [])
    p = structured.plan(TEXT, [Attached(at, QUOTE[cites], "c")], [])
    structured.add(rep, found, structured.sentence_starts(p))
    (a,) = rep.audit
    lo, hi = SENTS[cites]
    assert (a.sentence_index, a.claim, a.action) == (cites, TEXT[lo:hi], "verified")
    assert rep.uncited_sentences == [list(s) for k, s in enumerate(SENTS) if k != cites]
    assert (rep.uncited, rep.n_cited_sentences, rep.n_citations, rep.verified) == (2, 1, 1, 1)


@pytest.mark.parametrize("action,unreadable,fail_open,want", [
    ("verified", False, False, False), ("reattributed", False, False, False),
    ("flagged", False, False, True), ("flagged", False, True, True), ("invalid", False, True, True),
    ("unverified", False, False, True),  # could not be checked: fails closed
    ("unverified", False, True, False),  # --on-error open passes a checkable one the verifier could not judge
    ("unverified", True, True, True),  # nothing to check (a url_citation): never passed, even failing open
    ("unverified", True, False, True),
])
def test_which_verdicts_fail(action, unreadable, fail_open, want):
    a = CitationAudit(sentence_index=0, claim="c", cited=1, marker="m", spans=[(0, 0)], score=None, action=action,
                      reason="", unreadable=unreadable)
    assert structured.failed(a, fail_open) is want


def test_a_streamed_answers_card_is_the_monitors_state_after_the_whole_answer():
    """Three sentences, each its own segment: the monitor sees each segment's verified score as it is guarded, so
    the card the whole answer's report carries must count all three deployed scores (the first segment's card
    counted one)."""
    g = Guard("lexical")
    sents = ["Aspirin irreversibly inhibits platelet cyclooxygenase [1]. ", "Statins lower LDL cholesterol in adults [2]. ",
             "Aspirin irreversibly inhibits platelet cyclooxygenase [1]."]
    *_, report = g.stream(sents, QUOTE[:1] + ["Statins lower LDL cholesterol in adults."])
    assert report.n_citations == 3 and report.verified == 3
    assert report.guarantee_card["monitor"]["deployed_scores"] == 3
    assert g.keeper.card()["monitor"]["deployed_scores"] == 3
