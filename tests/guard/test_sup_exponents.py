"""A number in <sup> is a citation a reader sees, unless it is an exponent: after a digit (10<sup>6</sup>) or a
unit of one or two letters standing alone (m<sup>2</sup>, cm<sup>2</sup>). After a longer word (LDL, cells) it is a
citation the guard cannot read: the sentence gets one more citation, unverified, never passing clean. Each row's
guarded text is written by hand (lexical verifier; [1] holds every term of the statin claim)."""
import pytest

from citebound import Guard

P = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]


@pytest.mark.parametrize("answer,guarded,n_citations", [
    # after a word of three letters or more: a citation (the rule looks at most two letters back)
    ("Statins lower LDL<sup>2</sup> cholesterol [1].", "Statins lower LDL<sup>2</sup> [UNVERIFIED] cholesterol [1].", 2),
    ("Statins lower LDL cholesterol in adults<sup>3</sup> [1].",
     "Statins lower LDL cholesterol in adults<sup>3</sup> [UNVERIFIED] [1].", 2),
    ("Statins lower LDL cholesterol in cells<sup>2,3</sup> [1].",
     "Statins lower LDL cholesterol in cells<sup>2,3</sup> [UNVERIFIED] [1].", 2),
    # exponents: after a digit, or a one- or two-letter unit
    ("Statins lower LDL by 10<sup>2</sup> fold [1].", "Statins lower LDL by 10<sup>2</sup> fold [1].", 1),
    ("Statins lower LDL in cm<sup>2</sup> of plasma [1].", "Statins lower LDL in cm<sup>2</sup> of plasma [1].", 1),
    ("Statins lower LDL per m<sup>2</sup> [1].", "Statins lower LDL per m<sup>2</sup> [1].", 1),
])
def test_a_sup_number_is_a_citation_unless_it_is_an_exponent(answer, guarded, n_citations):
    text, rep = Guard("lexical").guard(answer, P)
    assert text == guarded
    assert (rep.n_citations, rep.verified, rep.unverified) == (n_citations, 1, n_citations - 1)
