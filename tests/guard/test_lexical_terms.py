"""The lexical verifier's terms by hand: the stemmer's length rule at its boundary, two-character terms,
and the overlap measures' denominators (recall over the claim's terms, Jaccard over the union, both ways)."""
import pytest

from citebound.verifiers.lexical import content_terms, term_recall, token_jaccard


@pytest.mark.parametrize("text, terms", [
    ("cats", {"cats"}),          # 4 letters: a suffix is cut only when more than 3 letters stay ("s": 4 > 4 fails)
    ("bikes", {"bike"}),         # "es" would leave 3 letters (5 > 5 fails); "s" leaves 4 (5 > 4)
    ("horses", {"hors"}),        # "es": 6 > 5
    ("relations", {"relation"}),  # "ations" would leave 3 (9 > 9 fails); only "s" is cut
    ("binding", {"bind"}),       # "ing": 7 > 6
    ("CT scans", {"ct", "scan"}),  # a two-character term is a term
    ("x ray", {"ray"}),          # one character is not
    ("The 44 men", {"44", "men"}),
])
def test_content_terms_by_hand(text, terms):
    assert content_terms(text) == frozenset(terms)


def test_recall_is_over_the_claims_terms_and_jaccard_over_the_union_either_way():
    assert term_recall("CT scans", "a CT") == 0.5          # {ct, scan} -> ct found
    assert term_recall("CT", "CT scans of the chest") == 1.0
    assert token_jaccard("protein", "protein binding") == 0.5  # {protein} & {protein, bind} over the union
    assert token_jaccard("protein binding", "protein") == 0.5
    assert token_jaccard("the", "of") == 0.0                 # no terms on either side
