"""Citations carried as data, value by value (worked out by hand): the limit on their number at its value and one
past, the number of a quoted text (the first of equal request passages; one number for a text quoted twice), a
citation attached to no claim left unchecked, the audit named by its citation, and where each position of an
answer stands in its guarded text (inside a rewritten marker, past either end)."""
import pytest

from citebound import Guard
from citebound.guarding.structured import Attached, check, plan, position_map
from citebound.text.limits import LimitExceeded, Limits

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."


def test_the_number_of_citations_as_data_is_bounded_at_its_limit():
    cites = [Attached(14, "X", f"c{k}") for k in range(3)]
    assert len(plan("Aspirin works.", cites[:2], [], limits=Limits(max_citations_per_answer=2)).items) == 2
    with pytest.raises(LimitExceeded, match="3 citations as data"):
        plan("Aspirin works.", cites, [], limits=Limits(max_citations_per_answer=2))


def test_a_quoted_text_equal_to_request_passages_is_the_first_of_them():
    """Passages P, Q, P (base 1): a citation quoting "P" is passage 1, not 3; nothing is added."""
    p = plan("Aspirin works.", [Attached(14, "P", "c0")], ["P", "Q", "P"])
    assert (p.number, p.passages) == ([1], ["P", "Q", "P"])
    p0 = plan("Aspirin works.", [Attached(14, "P", "c0")], ["P", "Q", "P"], base=0)
    assert p0.number == [0]


def test_a_text_quoted_twice_is_one_passage_with_one_number():
    """Two citations quote "X", in no request passage (P, Q, P): X is added once, as passage 4, for both."""
    p = plan("Aspirin works. Statins work.", [Attached(14, "X", "c0"), Attached(28, "X", "c1")], ["P", "Q", "P"])
    assert (p.number, p.passages) == ([4, 4], ["P", "Q", "P", "X"])
    assert [i[0] for i in p.items] == ["Aspirin works. [4]", "Statins work. [4]"]


def test_a_citation_attached_to_no_claim_is_not_checked():
    """An empty answer has no sentence: the citation has no claim, so no item checks it (number None)."""
    p = plan("", [Attached(0, ASPIRIN, "c0")], [])
    assert (p.items, p.number, p.sentence) == ([], [None], [(-1, 0, 0, "")])


def test_a_checked_citations_audit_is_named_by_the_citation_where_it_attaches():
    (a,) = check(Guard("lexical"), f"{ASPIRIN} Unicorns sing.", [Attached(54, ASPIRIN, "annotations[0] (file_citation)")], [])
    assert (a.marker, a.action, a.cited, a.sentence_index, a.spans) == (
        "annotations[0] (file_citation)", "verified", 1, 0, [(54, 54)])


def test_each_position_of_the_answer_stands_where_it_should_in_the_guarded_text():
    """"A [1]. B." guarded "A [1 UNVERIFIED]. B.": 'A', ' ', '[', '1' stay at 0-3; the ']' is at 4 (walked along
    the rewritten marker, not sent to its closing bracket at 15); '.' at 16; the space between the sentences at
    17 (the guarded sentence's end); 'B', '.' at 18, 19; the end at 20. Past either end: the nearest end."""
    f = position_map("A [1]. B.", "A [1 UNVERIFIED]. B.")
    assert [f(i) for i in range(10)] == [0, 1, 2, 3, 4, 16, 17, 18, 19, 20]
    assert (f(100), f(-5)) == (20, 0)


def test_a_sentence_is_matched_whatever_whitespace_its_parse_shows():
    """"A\\n[1]. B." guarded "A\\n[1 UNVERIFIED]. B.": the sentence parser reads the marker at the line start
    differently in the two texts (its texts show the newline as a space), so sentences are matched with markers and
    whitespace left out. Where citations attach: the answer's start 0 -> 0; the first sentence's end (6, after
    ".") -> 17, after the rewritten marker's "."; 'B' 7 -> 18; the end 9 -> 20 (unmatched, every one would be 20)."""
    f = position_map("A\n[1]. B.", "A\n[1 UNVERIFIED]. B.")
    assert (f(0), f(6), f(7), f(9)) == (0, 17, 18, 20)
