"""The review budget under ``--on-error open`` by hand (#56, round 94): a citation the verifier failed on (no score,
a timeout) passes and leaves the budget; one the guard could not read (``unreadable``) counts either way."""
import pytest

from citebound.guarding.report import CitationAudit, GuardReport


def audit(action: str, unreadable: bool = False) -> CitationAudit:
    return CitationAudit(sentence_index=0, claim="c", cited=1, marker="[1]", spans=[(0, 3)], score=None,
                         action=action, unreadable=unreadable)


@pytest.mark.parametrize("fail_open,want", [(True, 2 / 5), (False, 3 / 5)])
def test_the_budget_counts_a_verifier_failure_only_when_failing_closed(fail_open, want):
    # five citations: verified, flagged, unverified (the verifier failed), unverified (unreadable), verified.
    # open: flagged + unreadable = 2 of 5; closed: flagged + both unverified = 3 of 5
    r = GuardReport(n_citations=5, flagged=1, unverified=2, verified=2,
                    audit=[audit("verified"), audit("flagged"), audit("unverified"), audit("unverified", True),
                           audit("verified")])
    r.set_review_budget(fail_open)
    assert r.review_budget == pytest.approx(want)


def test_uncited_sentences_join_both_sides_of_the_budget_under_flag():
    # two citations, one a verifier failure; one uncited sentence under "flag": open (0 + 1) / 3, closed (1 + 1) / 3
    r = GuardReport(n_citations=2, unverified=1, verified=1, uncited=1, uncited_policy="flag",
                    audit=[audit("unverified"), audit("verified")])
    r.set_review_budget(True)
    assert r.review_budget == pytest.approx(1 / 3)
    r.set_review_budget(False)
    assert r.review_budget == pytest.approx(2 / 3)
