"""Round two of "nothing passes unchecked": what a browser shows is checked, what it hides is not, and every
citation form a reader sees beside (or instead of) a parsed marker is parsed or sent to review. Expected
values are worked out by hand from the rules in ``citebound/text/visible.py`` and ``citations.py``."""
import numpy as np
import pytest

from citebound.guarding.guard import guard_answer
from citebound.text.visible import OBSCURED, blank_hidden, passage_view, scan

P = ["Aspirin reduces the risk of heart attacks in adults.", "Mitochondria produce ATP in eukaryotic cells."]


def topic(claims, passages):
    """1.0 iff the passage holds the claim's first word (lower case), else 0.0."""
    s = np.array([1.0 if c.split()[0].lower() in p.lower() else 0.0 for c, p in zip(claims, passages)])
    return s, s > 0.5


def test_the_issue_repro_the_false_sentence_is_checked_and_flagged():
    answer = ('<div style="overflow:hidden">The moon is made of green cheese [2].</div> '
              "Mitochondria produce ATP in eukaryotic cells [2].")
    text, r = guard_answer(answer, P, topic, reattribute=None)
    assert r.n_citations == 2 and r.flagged == 1 and r.verified == 1  # before: 1 citation, budget 0
    assert r.review_budget == pytest.approx(1 / 2)
    assert "cheese [2 UNVERIFIED]" in text


@pytest.mark.parametrize("attrs", ['style="overflow:hidden"', 'class="hidden-xs"', 'id="not-hidden"',
                                   'title="a hidden gem"', 'data-hidden="false"', 'aria-hidden="true"'])
def test_a_word_in_an_attribute_hides_nothing(attrs):
    frag = f"<span {attrs}>Seen text [1].</span>"
    view = blank_hidden(frag)
    assert view.strip() == "Seen text [1]." and len(view) == len(frag)
    assert passage_view(frag).strip() == "Seen text [1]."


@pytest.mark.parametrize("frag,kept", [
    ("<span hidden>x</span>y", "y"), ('<span style="display:none">x</span>y', "y"), ("<!-- x -->y", "y"),
    ("<script>x</script>y", "y"), ("<template>x</template>y", "y"), ('<input type="hidden" value="x">y', "y"),
    ('<div style="visibility:hidden">x<b style="visibility:visible">y</b></div>', "y"),
    ('<p style="display:none">x<div>y</div>', "y"),  # a <div> closes the hidden <p>
    ('<div hidden style="display:block">y</div>', "y"),  # an author display beats [hidden]
    ("<?php x ?>y", "y"), ("<!x>y", "y"),  # a bogus comment, to its first ">" and not a character short
])
def test_only_what_a_browser_does_not_render_is_left_out_of_an_answer(frag, kept):
    assert blank_hidden(frag).split() == [kept]


@pytest.mark.parametrize("frag,checked", [
    # HTML's tokenizer: <!--> and <!---> are whole empty comments, --!> closes one; chromium shows each "y"
    # (tests/guard/test_visibility_browser.py renders them). Before, the guard blanked each y as a comment.
    ("<!-->y [1].", ["y", "[1]."]), ("<!--->y [1].", ["y", "[1]."]), ("<!-- x --!>y [1].", ["y", "[1]."]),
    ("<!---->y", ["y"]), ("<!-- x -- >z -->y", ["y"]), ("<!--->y-->z", ["y-->z"]),
    # a close is looked for after the opening "<!--" only: "--!>" overlapping it is no close (chromium hides z),
    # nor is a "-->" just before it
    ("<!--!> z -->y", ["y"]), ("x--><!--z-->y", ["x-->", "y"]),
])
def test_a_comment_ends_where_a_browser_ends_it(frag, checked):
    assert blank_hidden(frag).split() == checked


@pytest.mark.parametrize("page,supports", [
    # a browser hides everything up to the second </script> here (HTML's double-escaped script data)
    ("<script><!--<script></script>Aspirin cures cancer.</script>Aspirin thins blood.", ["Aspirin", "thins", "blood."]),
    ("<script><!--<script></script>Aspirin cures cancer.", []),  # never closed: nothing after it supports
    ("<script><!--</script>Aspirin thins blood.", ["Aspirin", "thins", "blood."]),  # escaped only: it closes
    ("<script><!-- <script> --></script>Aspirin thins blood.", ["Aspirin", "thins", "blood."]),  # --> left it
])
def test_a_double_escaped_script_hides_what_a_browser_hides(page, supports):
    assert passage_view(page).split() == supports


def test_a_claim_after_an_empty_comment_is_checked_and_flagged():
    answer = "<!-->The moon is made of green cheese [2]. <!-- note -->Aspirin reduces heart attacks [1]."
    text, r = guard_answer(answer, P, topic, reattribute=None)
    assert r.n_citations == 2 and r.flagged == 1 and r.verified == 1
    assert [a.action for a in r.audit] == ["flagged", "verified"] and r.review_budget == pytest.approx(1 / 2)
    assert "cheese [2 UNVERIFIED]" in text


@pytest.mark.parametrize("frag", [
    '<span style="color:transparent">x</span>', '<span style="opacity:0">x</span>',
    '<span style="font-size:0">x</span>', '<span style="font-size:2px">x</span>', '<span style="color:#fff">x</span>',
    '<b style="background:#000"><i style="color:black">x</i></b>', '<span style="clip-path:inset(50%)">x</span>',
    '<span style="position:absolute;left:-9999px">x</span>', '<span style="text-indent:-1000px">x</span>',
    '<span style="transform:scale(0)">x</span>', '<div style="height:0;overflow:hidden">x</div>',
    '<span style="color:var(--c)">x</span>', '<span style="col\\or:white">x</span>', "<details>x</details>",
    "<style>p{color:white}</style><p>x</p>",
])
def test_text_a_reader_cannot_see_is_obscured_in_an_answer_and_supports_nothing(frag):
    assert "x" in blank_hidden(frag)  # checked: a browser renders it
    assert any("x" in frag[lo:hi] for lo, hi in scan(frag).spans[OBSCURED])  # and it fails closed
    assert "x" not in passage_view(frag).split()


@pytest.mark.parametrize("support", [
    '<span style="color:transparent">Mitochondria produce ATP</span>', '<i data-note="Mitochondria produce ATP"></i>',
    '<input type="hidden" value="Mitochondria produce ATP">', '<span style="clip-path:inset(50%)">Mitochondria</span>',
    '<span style="position:absolute;top:-5000px">Mitochondria</span>', '<span style="transform:scale(0)">Mitochondria</span>',
    '<span style="color:white;background:white">Mitochondria</span>',
])
def test_a_passage_whose_support_a_reader_cannot_see_supports_nothing(support):
    _, r = guard_answer("Mitochondria produce ATP [1].", [f"Unrelated text. {support}"], topic, reattribute=None)
    assert r.verified == 0 and r.flagged == 1


def test_an_obscured_part_of_a_sentence_fails_every_citation_of_it_closed_and_only_that_sentence():
    answer = ('Aspirin reduces heart attacks <span style="opacity:0">in adults</span> [1][2]. '
              "Mitochondria produce ATP [2].")
    text, r = guard_answer(answer, P, topic, reattribute=None)
    assert [a.action for a in r.audit] == ["unverified", "unverified", "verified"]
    assert r.review_budget == pytest.approx(2 / 3)
    assert text.endswith("Mitochondria produce ATP [2].") and "[1 UNVERIFIED][2 UNVERIFIED]" in text


@pytest.mark.parametrize("form,rewritten", [
    ("\u00b2", "\u00b2 [UNVERIFIED]"), ("<sup>2</sup>", "<sup>2</sup> [UNVERIFIED]"), ("(2)", "(2) [UNVERIFIED]"),
    ("&#91;2&#93;", "&#91;2&#93; [UNVERIFIED]"), ("\u207d\u00b2\u207e", "\u207d\u00b2\u207e [UNVERIFIED]"),
    ("[\u00b2]", "[\u00b2 UNVERIFIED]"), ("{2}", "{2} [UNVERIFIED]"), ("\u27e82\u27e9", "\u27e82\u27e9 [UNVERIFIED]"),
    ("\uff082\uff09", "\uff082\uff09 [UNVERIFIED]"), ("\u2461", "\u2461 [UNVERIFIED]"),
    ("<cite>2</cite>", "<cite>2</cite> [UNVERIFIED]"),
])
def test_a_citation_form_beside_a_parsed_marker_is_sent_to_review(form, rewritten):
    answer = f"Aspirin reduces heart attacks [1]{form}."
    text, r = guard_answer(answer, P, topic, reattribute=None)
    assert r.n_citations == 2 and r.verified == 1 and r.unverified == 1
    assert r.review_budget == pytest.approx(1 / 2)
    assert text == f"Aspirin reduces heart attacks [1]{rewritten}."


@pytest.mark.parametrize("form,cited", [("\u27e62\u27e7", 2), ("\ufe5d2\ufe5e", 2)])
def test_bracket_look_alikes_are_parsed_as_the_marker_they_look_like(form, cited):
    _, r = guard_answer(f"Mitochondria produce ATP {form}.", P, topic, reattribute=None)
    assert [a.cited for a in r.audit] == [cited] and r.verified == 1


@pytest.mark.parametrize("text", ["Cells grow 10\u2076 fold in 5 m\u00b2 plates [2].", "Decay is 3 s\u207b\u00b9 [2].",
                                  "Mitochondria produce 10<sup>6</sup> ATP [2].", "Mitochondria were seen in 2020 [2]."])
def test_exponents_and_years_are_not_citations(text):
    _, r = guard_answer(text, P, lambda c, p: (np.ones(len(c)), np.ones(len(c), bool)), reattribute=None)
    assert r.n_citations == 1 and r.unverified == 0


def test_a_form_alone_makes_its_sentence_cited_and_unverified_at_index_0():
    _, r = guard_answer("Aspirin works\u00b9. Mitochondria produce ATP [0].", P, topic, base=0, reattribute=None)
    assert sorted((a.sentence_index, a.cited, a.action) for a in r.audit) == [(0, -1, "unverified"), (1, 0, "flagged")]
    assert r.uncited == 0 and r.review_budget == 1.0


# ---- boundary tables (#56): each value at and beside the rule's edge, expected by hand from the rule

@pytest.mark.parametrize("frag,obscured", [
    ('<div style="background:#000">x</div>', True),  # default (black) text on black: contrast 1
    ('<div style="background:#000;color:#fff">x</div>', False),
    ('<div style="background:#777">x</div>', False),  # black on mid grey: contrast about 4.7
    ('<div style="width:1px;overflow:clip">x</div>', True), ('<div style="width:1px;overflow:hidden">x</div>', True),
    ('<div style="height:1px;overflow-y:scroll">x</div>', True), ('<div style="width:1px;overflow:auto">x</div>', True),
    ('<div style="width:2px;overflow:clip">x</div>', False),  # 2px is not under 2px
    ('<div style="width:1px">x</div>', False),  # no overflow rule: the text spills out, seen
    ('<span style="font-size:3.9px">x</span>', True), ('<span style="font-size:4px">x</span>', False),
    ('<span style="left:-1000px">x</span>', True), ('<span style="right:-999px">x</span>', False),
    ('<span style="right:-1000px">x</span>', True),
    ('<span style="margin-left:1000px">x</span>', True),
    ('<span style="color:rgba(0,0,0,0.09)">x</span>', True), ('<span style="color:rgba(0,0,0,0.1)">x</span>', False),
    ('<span style="opacity:0.09">x</span>', True), ('<span style="opacity:0.1">x</span>', False),
])
def test_obscuring_rules_at_their_edges(frag, obscured):
    v = scan(frag)
    at = frag.index(">x<") + 1
    assert any(lo <= at < hi for lo, hi in v.spans[OBSCURED]) is obscured
    assert "x" in blank_hidden(frag).split()  # shown or obscured, an answer checks it


@pytest.mark.parametrize("frag,checked", [
    # a browser keeps an attribute's first value and drops a repeat (HTML's tokenizer)
    ('<span style="" style="display:none">x</span>y', ["x", "y"]),
    ('<span style="display:none" style="">x</span>y', ["y"]),
    ('<span hidden hidden="until-found" style="display:none">x</span>y', ["y"]),
])
def test_a_repeated_attribute_keeps_its_first_value(frag, checked):
    assert blank_hidden(frag).split() == checked


@pytest.mark.parametrize("frag", [
    '<table><tr><td><span hidden>x</span></td></tr></table>',
    '<table style="display:none">x<tr><td>y</td></tr></table>',  # x is foster-parented out of the table: shown
    '<div hidden><td>x</td></div>',
])
def test_hidden_text_where_a_table_may_move_it_is_checked_and_fails_closed(frag):
    v = scan(frag)
    at = frag.index("x")
    assert "x" in blank_hidden(frag).split()
    assert any(lo <= at < hi for lo, hi in v.spans[OBSCURED])
    assert "x" not in passage_view(frag).split()


@pytest.mark.parametrize("depth,obscured", [(255, False), (256, False), (257, True), (300, True)])
def test_nesting_past_the_depth_limit_is_obscured_from_the_first_element_past_it(depth, obscured):
    from citebound.text.visible import MAX_DEPTH

    assert MAX_DEPTH == 256
    frag = "<b>" * depth + "x" + "</b>" * depth
    v = scan(frag)
    at = frag.index("x")
    assert any(lo <= at < hi for lo, hi in v.spans[OBSCURED]) is obscured
    assert ("x" in passage_view(frag).split()) is not obscured


@pytest.mark.parametrize("spans,want", [
    ([(1, 4), (2, 5)], "a    f"), ([(2, 5), (1, 4)], "a    f"), ([(1, 3), (3, 5)], "a    f"), ([(0, 6)], "      "),
    ([(0, 1), (0, 2), (5, 6)], "  cde "), ([], "abcdef"), ([(1, 2), (1, 2)], "a cdef"),
])
def test_blank_spans_keeps_length_with_overlapping_repeated_and_edge_spans(spans, want):
    from citebound.text.visible import blank_spans

    assert blank_spans("abcdef", spans) == want


@pytest.mark.parametrize("form,found", [
    ("(1)", True), ("(12)", True), ("(123)", True), ("(1234)", False), ("(0)", True), ("( 7 )", True),
    ("(1, 2)", True), ("(1-3)", True), ("{123}", True), ("{1234}", False),
])
def test_parenthesised_numbers_of_one_to_three_digits_are_citation_forms(form, found):
    from citebound.text.forms import other_forms

    text = f"Cells grow {form} in plates."
    spans = other_forms(text, text)
    assert (spans == [(11, 11 + len(form))]) is found and (spans == []) is (not found)


@pytest.mark.parametrize("answer, marker, span", [
    # 'Aspirin cures cancer ' is 21 characters: '[' at 21, the superscript at 22, ']' at 23
    ("Aspirin cures cancer [\u00b2]. Statins lower LDL [1].", "[\u00b2]", (21, 24)),
    # at the very start: the bracket at 0 is the form's too
    ("[\u00b2] Aspirin cures cancer. Statins lower LDL [1].", "[\u00b2]", (0, 3)),
    # no closing bracket: the form alone
    ("Aspirin cures cancer [\u00b2. Statins lower LDL [1].", "\u00b2", (22, 23)),
])
def test_a_bracketed_form_is_reported_with_its_brackets(answer, marker, span):
    """What the reader sees as the citation, brackets included, is the audit's marker and span (the reason quotes it)."""
    from citebound.guarding.core import plan_citations

    _, audits = plan_citations(answer, ["Statins lower LDL.", "Aspirin."])
    (odd,) = [a for a in audits if a.cited == -1]
    assert (odd.marker, odd.spans, odd.action) == (marker, [span], "unverified")
    assert odd.reason.startswith(f"{marker} looks like a citation")
