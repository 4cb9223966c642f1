"""Citations carried as data (citebound/guarding/structured.py): effects a count alone does not show, each worked
out by hand. Re-attribution sees every text the answer quotes, a later citation's included; failing open, a
verifier failure on a structured citation leaves the review budget, in the library's face as in the service's; a
sentence two failed citations cite is removed once."""
from __future__ import annotations

from failing_scorer import Failing

from citebound import Guard
from citebound.guarding import structured
from citebound.guarding.structured import Attached

# sentences by hand: [0, 38) "Aspirin inhibits platelet aggregation.", [39, 69) "Statins lower LDL cholesterol."
TEXT = "Aspirin inhibits platelet aggregation. Statins lower LDL cholesterol."
Q_STATINS = "Statins lower LDL cholesterol in adults."
Q_ASPIRIN = "Aspirin inhibits platelet aggregation in vitro."


def test_a_citation_is_re_attributed_to_a_text_that_only_a_later_citation_quotes():
    """Each sentence quotes the other's support. Numbered in order of first appearance (no request passages, base
    1): Q_STATINS is 1, Q_ASPIRIN 2. Lexically, sentence 0 has none of its terms in 1 (score 0) and all in 2, so
    it moves to 2 (score 1 > 0.5); sentence 1, the other way round, moves from 2 to 1. The first citation can move
    only if its check sees the text the second one quotes."""
    g = Guard("lexical", threshold=0.5)
    text, rep = structured.guard_with(g, TEXT, [Attached(38, Q_STATINS, "c0"), Attached(69, Q_ASPIRIN, "c1")], [])
    got = [structured.verdict(a) | {"at": a.sentence_index} for a in rep.audit]
    assert [(v["at"], v["action"], v["passage"], v.get("moved_to"), v.get("moved_score")) for v in got] == [
        (0, "reattributed", 1, 2, 1.0), (1, "reattributed", 2, 1, 1.0)]
    assert (text, rep.n_citations, rep.reattributed, rep.uncited, rep.review_budget) == (TEXT, 2, 2, 0, 0.0)


def test_failing_open_a_verifier_failure_on_a_structured_citation_leaves_the_budget_and_closed_counts_it():
    """Two structured citations, one per sentence; the verifier fails on the first's claim only (the other is
    checked on its own and verified): 1 unverified (a verifier failure, not unreadable). Closed: budget 1/2. Open:
    0/2 (the only failure is the verifier's)."""
    answer = "Statins lower LDL boom. Aspirin inhibits platelet aggregation."
    cites = [Attached(23, Q_STATINS, "c0"), Attached(62, Q_ASPIRIN, "c1")]
    for on_error, budget in (("closed", 0.5), ("open", 0.0)):
        _, rep = structured.guard_with(Guard(Failing(), threshold=0.5, on_error=on_error), answer, cites, [])
        assert [(a.action, a.unreadable) for a in rep.audit] == [("unverified", False), ("verified", False)], on_error
        assert (rep.n_citations, rep.unverified, rep.verified, rep.uncited, rep.review_budget) == (2, 1, 1, 0, budget), on_error


def test_a_citation_with_nothing_to_check_counts_failing_open_too():
    """A url_citation (no text) beside one the verifier failed on: open, only the unreadable one counts: 1/2."""
    answer = "Statins lower LDL boom. Aspirin inhibits platelet aggregation."
    cites = [Attached(23, Q_STATINS, "c0"), Attached(62, None, "c1 (url_citation)")]
    _, rep = structured.guard_with(Guard(Failing(), threshold=0.5, on_error="open"), answer, cites, [])
    assert [(a.action, a.unreadable) for a in rep.audit] == [("unverified", False), ("unverified", True)]
    assert (rep.n_citations, rep.unverified, rep.review_budget) == (2, 2, 0.5)


def test_a_sentence_given_twice_is_removed_once():
    """[3, 6) is "B." with the space after it: removed once, the rest kept whole ("A. C. D.")."""
    answer = "A. B. C. D."
    assert structured.remove_sentences(answer, [(3, 5), (3, 5)]) == "A. C. D."
    assert structured.remove_sentences(answer, [(6, 8), (3, 5), (6, 8)]) == "A. D."
    assert structured.remove_sentences(answer, []) == answer
