"""What an element passes to the elements inside it, and where raw text ends (#56, round 93), by hand: a text colour
and an uncertain container reach their descendants; a raw-text element closes at ``</script >`` or ``</title x>``
as a browser closes it; a linked stylesheet restyles everything; font sizes in millimetres and centimetres; and the
spans a stream must hold (an obscuring element, a raw-text element still open at the end)."""
import pytest

from citebound.text.visible import HIDDEN, OBSCURED, UNCERTAIN, blank_hidden, passage_view, scan

CLAIM = "Aspirin cures cancer [2]."


def span_of(text: str, part: str) -> tuple[int, int]:
    i = text.index(part)
    return i, i + len(part)


def test_a_text_colour_reaches_the_elements_inside():
    # white on black is readable; the <b> inside keeps the white text and paints white behind it: unreadable
    t = f'Statins <span style="color:#fff;background:#000">lower LDL <b style="background:#fff">{CLAIM}</b></span>.'
    assert scan(t).spans[OBSCURED] == [span_of(t, CLAIM)]
    assert CLAIM not in passage_view(t) and "lower LDL" in passage_view(t)
    # a <b> that sets black text of its own on that white is readable
    own = f'Statins <span style="color:#fff;background:#000">lower LDL <b style="color:#000;background:#fff">{CLAIM}</b></span>.'
    assert CLAIM in passage_view(own) and scan(own).spans[OBSCURED] == []


@pytest.mark.parametrize("outer", ["button", "select", "svg"])
def test_text_inside_an_uncertain_container_is_uncertain_however_deep(outer):
    t = f"Seen. <{outer}><b><i>{CLAIM}</i></b></{outer}> After."
    assert span_of(t, CLAIM) in [(lo, hi) for lo, hi in scan(t).spans[UNCERTAIN]]
    assert "Aspirin" not in passage_view(t) and "After." in passage_view(t)
    assert CLAIM in blank_hidden(t)  # an answer checks it


@pytest.mark.parametrize("close", ["</script >", "</script\t>", "</script foo>", "</script/>", "</SCRIPT >"])
def test_a_raw_text_element_closes_where_a_browser_closes_it(close):
    t = f"<script>var a = 1;{close}{CLAIM}"
    assert blank_hidden(t).endswith(CLAIM) and len(blank_hidden(t)) == len(t)
    assert passage_view(t).strip() == CLAIM
    assert scan(t).spans[HIDDEN] == [(0, len(t) - len(CLAIM))]
    # a title too: "</title x>" ends it
    t = f"<title>T</title x>{CLAIM}"
    assert passage_view(t).strip() == CLAIM


def test_a_linked_stylesheet_may_restyle_everything():
    t = f'<link rel="stylesheet" href="x.css">{CLAIM}'
    assert scan(t).spans[OBSCURED] == [(len(t) - len(CLAIM), len(t))]
    assert passage_view(t).strip() == ""
    icon = f'<link rel="icon" href="x.ico">{CLAIM}'  # not a stylesheet: the text is shown
    assert passage_view(icon).strip() == CLAIM and scan(icon).spans[OBSCURED] == []


@pytest.mark.parametrize("size,shown", [("1mm", False), ("2mm", True), ("0.1cm", False), ("0.2cm", True),
                                        ("0.04in", False), ("0.05in", True)])
def test_font_sizes_in_physical_units(size, shown):
    # 1mm = 3.78px and 0.1cm = 3.78px (under 4px: obscured); 2mm = 0.2cm = 7.56px; 0.04in = 3.84px, 0.05in = 4.8px
    t = f'Seen. <span style="font-size:{size}">{CLAIM}</span>'
    assert (scan(t).spans[OBSCURED] == []) is shown
    assert (CLAIM in passage_view(t)) is shown


def test_an_obscuring_element_is_a_span_a_stream_must_not_cut():
    t = 'A <span style="opacity:0">hid</span> B <b>plain</b> C'
    # the obscuring <span> from its open tag to the end of its close tag; the plain <b> is no such span
    assert scan(t).elements == [span_of(t, '<span style="opacity:0">hid</span>')]


def test_a_raw_text_element_open_at_the_end_is_held_back_from_its_open_tag():
    t = "Seen [1]. <script>var x = 1"
    assert scan(t).open_to_end == t.index("<script>")
    t = "Seen [1]. <textarea>draft"
    assert scan(t).open_to_end == t.index("<textarea>")
    assert scan("Seen [1]. <script>x</script> after").open_to_end is None


def test_a_tag_cut_by_the_end_is_held_back_when_it_may_still_end_within_a_tags_reach():
    """A tag whose attribute the end of the text cuts: a stream may still complete it, so it is held back from its
    '<', wherever it stands in a long text, as long as it could still end within MAX_TAG characters of it (one
    character more cannot: it is text, never held)."""
    from citebound.text.html_lex import MAX_TAG

    head = "Seen [1]. " + "x" * (2 * MAX_TAG)
    for tail in ('<b title="never closed', '<b title="' + "y" * (MAX_TAG - 11)):
        t = head + tail
        assert len(t) - t.index("<b") <= MAX_TAG and scan(t).open_to_end == t.index("<b")
    t = head + '<b title="' + "y" * (MAX_TAG - 10)
    assert len(t) - t.index("<b") == MAX_TAG and scan(t).open_to_end == t.index("<b")
    t = head + '<b title="' + "y" * (MAX_TAG - 9)  # one character more: it can no longer end in reach
    assert len(t) - t.index("<b") == MAX_TAG + 1 and scan(t).open_to_end is None
