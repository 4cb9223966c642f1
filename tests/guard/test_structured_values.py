"""Citations carried as data, value by value (worked out by hand): the limit on their number at its value and one
past, the number of a quoted text (the first of equal request passages; one number for a text quoted twice), a
citation attached to no claim left unchecked, the audit named by its citation, and where each position of an
answer stands in its guarded text (inside a rewritten marker, past either end)."""
import pytest

from citebound import Guard
from citebound.guarding.structured import Attached, check, guard_with, plan, position_map
from citebound.text.limits import LimitExceeded, Limits

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
STATINS = "Statins lower LDL cholesterol."


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


NO_TEXT = ("not checked: it carries no text to check (the document it points at is not in the request or the "
           "response)")


@pytest.mark.parametrize("answer,cites,reasons", [
    # an empty answer: a quoted text is attached to no sentence; a blank or missing one carries nothing to check
    ("", [Attached(0, ASPIRIN, "c0"), Attached(0, "  ", "c1"), Attached(0, None, "c2")],
     ["not checked: it is attached to no sentence", NO_TEXT, NO_TEXT]),
    # one sentence: a blank or missing text is not checked, and says why; a text is checked
    (ASPIRIN, [Attached(54, None, "c0"), Attached(54, " \n", "c1"), Attached(54, ASPIRIN, "c2")], [NO_TEXT, NO_TEXT, ""]),
])
def test_why_a_citation_as_data_is_not_checked(answer, cites, reasons):
    got = check(Guard("lexical"), answer, cites, [])
    assert [a.reason for a in got] == reasons
    assert [(a.action, a.unreadable, a.score is None) for a in got] == [
        ("unverified", True, True) if r else ("verified", False, False) for r in reasons]


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


def test_a_citation_attached_in_the_leading_whitespace_checks_the_first_sentence():
    """'  Aspirin inhibits COX. Statins lower LDL.': the first sentence starts at 2. Citations attached at 0 and 1
    (before it: a Messages text block that starts with a newline) belong to the first sentence, as one attached
    after its start does; never to the last."""
    answer = "  Aspirin inhibits COX. Statins lower LDL."
    p = plan(answer, [Attached(0, "Aspirin inhibits COX.", "c0"), Attached(1, "Aspirin inhibits COX.", "c1"),
                      Attached(23, "Aspirin inhibits COX.", "c2"), Attached(42, "Statins lower LDL.", "c3")], [])
    assert p.sentence == [(0, 2, 23, "Aspirin inhibits COX.")] * 3 + [(1, 24, 42, "Statins lower LDL.")]
    assert [it[0] for it in p.items] == ["Aspirin inhibits COX. [1]"] * 3 + ["Statins lower LDL. [2]"]


@pytest.mark.parametrize("original, guarded, expected", [
    # trailing whitespace after the last kept sentence: the end maps to the guarded text's end (17 -> 25)
    ("A [9]. B is so.  ", "A [9 INVALID]. B is so.  ",
     [0, 1, 2, 3, 4, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 25, 25]),
    # a marker that parts inside its number ('1' of [12] against '3' of [3]): its characters walk along the new
    # marker together (3 -> 3, 4 -> 4) and stop at its ']' (5 -> 4), never going back
    ("A [12]. B.", "A [3]. B.", [0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 9]),
    # the last sentence removed: it and the end map to where the guarded text ends (14)
    ("A [9]. B [8].", "A [9 INVALID].", [0, 1, 2, 3, 4, 13, 14, 14, 14, 14, 14, 14, 14, 14]),
    # a form with no ']' of its own ('²') flagged by the 13 characters " [UNVERIFIED]" put after it (guarded 2-14):
    # what follows it in its sentence walks on past the flag (' ' 2 -> 15, 'b' -> 16, '.' -> 17), not to the end
    ("A² b. C.", "A² [UNVERIFIED] b. C.", [0, 1, 15, 16, 17, 18, 19, 20, 21]),
    # the same flag just before the sentence's '.': the '.' (4) goes to the guarded '.' (17), the end to 18
    ("A b². C.", "A b² [UNVERIFIED]. C.", [0, 1, 2, 3, 17, 18, 19, 20, 21]),
    # a flagged form, then a marker rewritten after it: ' [2' walk on past the flag (15-17), ']' parts inside
    # the new marker (18), '.' goes to the one after '[2 INVALID]' (27)
    ("A² [2]. C.", "A² [UNVERIFIED] [2 INVALID]. C.", [0, 1, 15, 16, 17, 18, 27, 28, 29, 30, 31]),
    # the answer already holds the flag's text (guarded once before): it steps along its own copy, not skipped
    ("A [UNVERIFIED] b [9]. C.", "A [UNVERIFIED] b [9 INVALID]. C.", [*range(20), 28, 29, 30, 31, 32]),
])
def test_every_position_up_to_the_end_maps_into_the_guarded_text(original, guarded, expected):
    """Worked by hand: 'A [9]' and 'A [9 INVALID]' step together to position 4, where they part inside the marker
    (4 stays 4); the '.' after it (5) goes to the '.' after the rewritten marker (13), a kept sentence's end to the
    guarded sentence's end, and what follows no kept sentence (trailing whitespace, a removed sentence, the end of the
    text) to where the guarded text goes on: its end here. Never -1, which would place a citation nowhere."""
    f = position_map(original, guarded)
    assert [f(p) for p in range(len(original) + 1)] == expected


@pytest.mark.parametrize("block_above,second,withheld,budget", [
    # both sentences cited as data, both quoted word for word (lexical 1.0): nothing failed, budget 0 of 2
    (0.0, STATINS, False, 0.0), (0.5, STATINS, False, 0.0),
    # the second quotes the first's text: "Statins lower LDL cholesterol." shares no word with it, so it fails
    # (no other passage to re-attribute to): budget 1 of 2 = 0.5, withheld past 0.4, kept at 0.5 (not past it)
    (0.4, ASPIRIN, True, 0.5), (0.5, ASPIRIN, False, 0.5),
])
def test_block_judges_the_answer_with_its_citations_as_data(block_above, second, withheld, budget):
    """The markers' text alone has two sentences citing nothing (budget 1): blocking on it would withhold every
    answer whose citations are data. The block is decided on the whole report."""
    answer = f"{ASPIRIN} {STATINS}"
    cites = [Attached(len(ASPIRIN), ASPIRIN, "c0"), Attached(len(answer), second, "c1")]
    text, rep = guard_with(Guard("lexical", action="block", block_above=block_above), answer, cites, [])
    assert (rep.uncited, rep.review_budget, rep.blocked) == (0, budget, withheld)
    assert text == ("" if withheld else answer)
    assert rep.block_reason == (f"review budget 0.5 is past --block-above {block_above:g}: 1 of 2 citations failed or "
                                "could not be checked" if withheld else "")
