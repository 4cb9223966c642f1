"""How the guard rewrites a marker when its citations fare differently, and what a removed sentence takes with it,
worked out by hand: failing open passes only what the verifier could not judge (never text the guard could not
read), one marker holding a flagged and an open-failed citation, and the whitespace a removed sentence leaves."""
import numpy as np
import pytest

from citebound import Guard

PASSAGES = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]


def unicorns_fail(claims, passages):
    """A claim about unicorns scores 0.1 against passage 1 and gets no score at all against passage 2 (the verifier
    could not judge it); every other claim scores 0.9."""
    s = np.array([(np.nan if p.startswith("Mitochondria") else 0.1) if "Unicorns" in c else 0.9
                  for c, p in zip(claims, passages)])
    return s, ~np.isnan(s) & (s > 0.5)


@pytest.mark.parametrize("on_error,want", [
    ("closed", "Unicorns sing opera [1 UNVERIFIED, 2 UNVERIFIED]."),
    # open: the citation the verifier could not judge stands as written beside the flagged one
    ("open", "Unicorns sing opera [1 UNVERIFIED, 2]."),
])
def test_one_marker_with_a_flagged_and_an_unjudged_citation(on_error, want):
    text, rep = Guard(unicorns_fail, threshold=0.5, reattributor=None, on_error=on_error).guard(
        "Statins lower LDL cholesterol [1]. Unicorns sing opera [1, 2].", PASSAGES)
    assert text == "Statins lower LDL cholesterol [1]. " + want
    assert [a.action for a in rep.audit] == ["verified", "flagged", "unverified"]


@pytest.mark.parametrize("on_error", ["closed", "open"])
def test_failing_open_never_passes_a_sentence_the_guard_could_not_read(on_error):
    """``var(--x)`` is a colour the guard cannot resolve: what a reader sees of that sentence is unknown, so its
    citation is unverified and unreadable, and marked so even when failing open (which passes only the verifier's
    own failures: here the unicorn sentence's [2])."""
    answer = ('Statins lower LDL <span style="color: var(--x)">cholesterol</span> [1]. Unicorns sing opera [2]. '
              'Mitochondria produce ATP [2].')
    text, rep = Guard(unicorns_fail, threshold=0.5, reattributor=None, on_error=on_error).guard(answer, PASSAGES)
    assert [(a.action, a.unreadable) for a in rep.audit] == [("unverified", True), ("unverified", False),
                                                             ("verified", False)]
    assert "</span> [1 UNVERIFIED]." in text
    assert ("Unicorns sing opera [2 UNVERIFIED]." if on_error == "closed" else "Unicorns sing opera [2].") in text
    assert text.endswith("Mitochondria produce ATP [2].")


@pytest.mark.parametrize("answer,want", [
    # a removed sentence takes the whitespace after it, and a one-character sentence after it stays apart
    ("Statins lower LDL cholesterol [1]. Unicorns sing opera [1]. X", "Statins lower LDL cholesterol [1]. X"),
    ("Statins lower LDL cholesterol [1].\n\nUnicorns sing opera [1].\n\n*", "Statins lower LDL cholesterol [1].\n\n*"),
    # the last sentence removed: the whitespace before it goes too
    ("Statins lower LDL cholesterol [1].\n\nUnicorns sing opera [1].", "Statins lower LDL cholesterol [1]."),
    # the first removed: the text starts at the next sentence; an answer that lost a sentence ends at its last letter
    ("Unicorns sing opera [1]. Statins lower LDL cholesterol [1].  ", "Statins lower LDL cholesterol [1]."),
])
def test_what_a_removed_sentence_takes_with_it(answer, want):
    text, rep = Guard(unicorns_fail, threshold=0.5, reattributor=None, action="remove").guard(answer, PASSAGES)
    assert text == want and rep.removed_sentences == 1
