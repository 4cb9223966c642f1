"""CSS readability rules at their own values (#56, round 84): a text colour is "nearly transparent" under alpha 0.1
(0.1 itself is read by its contrast: black on the page's white is 21, readable), and a font is too small to read
under 4px (4px itself, 3pt and 0.25em, both 4px, are read). Each class worked out by hand."""
from __future__ import annotations

import pytest

from citebound.text.visible import HIDDEN, OBSCURED, SHOWN
from tests.guard.test_visible_edges import cls, faces


@pytest.mark.parametrize("frag,want", [
    ('<span style="color:rgba(0,0,0,0.1)">x</span>', SHOWN),
    ('<span style="color:rgba(0,0,0,0.0999)">x</span>', OBSCURED),
    ('<span style="color:rgba(0,0,0,10%)">x</span>', SHOWN),
    ('<span style="color:#0000001a">x</span>', SHOWN),  # alpha 0x1a / 255 = 26/255 = 0.102
    ('<span style="color:#00000019">x</span>', OBSCURED),  # 25/255 = 0.098
    ('<span style="font-size:4px">x</span>', SHOWN),
    ('<span style="font-size:3.99px">x</span>', OBSCURED),
    ('<span style="font-size:3pt">x</span>', SHOWN),  # 3 * 4/3 = 4px
    ('<span style="font-size:0.25em">x</span>', SHOWN),  # 0.25 * 16 = 4px
    ('<span style="font-size:0.24em">x</span>', OBSCURED),  # 3.84px
])
def test_alpha_and_font_size_at_their_thresholds(frag, want):
    assert cls(frag) == want
    faces(frag, "x", want)


def test_a_style_the_guard_cannot_read_keeps_what_its_parent_hid_and_how():
    """A span whose style holds an escape (unreadable: obscured) inside a ``display:none`` parent stays hidden,
    even where a child sets ``visibility:visible`` (nothing shows again out of display:none); inside a
    ``visibility:hidden`` parent that child shows again, obscured by the unreadable style around it."""
    from citebound.text.visible import blank_hidden, scan

    inner = '<span style="color:\\31 23">x <b style="visibility:visible">{} [2].</b></span></div>'
    gone = 'Seen [1]. <div style="display:none">' + inner.format("Gone")
    assert scan(gone).spans[OBSCURED] == [] and blank_hidden(gone).strip() == "Seen [1]."
    back = 'Seen [1]. <div style="visibility:hidden">' + inner.format("Back")
    at = back.index("Back")
    assert scan(back).spans[OBSCURED] == [(at, at + len("Back [2]."))]
    assert blank_hidden(back).split() == ["Seen", "[1].", "Back", "[2]."]


def test_past_the_depth_limit_an_element_keeps_what_its_parent_hid_and_how():
    """Past 256 open elements the guard cannot tell (obscured), and keeps what hid the element: inside
    ``display:none`` nothing shows again; inside ``visibility:hidden`` a child set visible shows, obscured."""
    from citebound.text.visible import MAX_DEPTH, blank_hidden, scan

    deep = "<span>" * MAX_DEPTH + '<b style="visibility:visible">{} [2].</b>'
    gone = 'Seen [1]. <div style="display:none">' + deep.format("Gone")
    assert scan(gone).spans[OBSCURED] == [] and blank_hidden(gone).split() == ["Seen", "[1]."]
    back = 'Seen [1]. <div style="visibility:hidden">' + deep.format("Back")
    at = back.index("Back")
    assert (at, at + len("Back [2].")) in scan(back).spans[OBSCURED]
    assert blank_hidden(back).split() == ["Seen", "[1].", "Back", "[2]."]


@pytest.mark.parametrize("frag,want", [
    # IE's star hack after a quoted font: a ';' then a '*' starts a declaration (of no property), not a comment
    ("<span style=\"font-family:'Arial';*zoom:1\">x</span>", SHOWN),
    ("<span style=\"font-family:'Arial';*display:none\">x</span>", SHOWN),  # '*display' names no property
    ("<span style=\"font-family:'Arial';display:none;*zoom:1\">x</span>", HIDDEN),
    ("<span style=\"font-family:'Arial';color:red/*\">x</span>", OBSCURED),  # a comment never closed: unreadable
    ("<span style=\"font-family:'Arial';color:red/* a */;display:none\">x</span>", HIDDEN),
])
def test_a_star_after_a_separator_is_a_declaration_and_only_slash_star_opens_a_comment(frag, want):
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("frag,want", [
    # background-color is one colour, spaces and all; background's colour is its first word
    ('<span style="background-color:rgb(0, 0, 0);color:rgb(255, 255, 255)">x</span>', SHOWN),
    ('<span style="background-color:rgb(0, 0, 0)">x</span>', OBSCURED),  # black text on black
    ('<span style="background:#000 no-repeat;color:#fff">x</span>', SHOWN),
    ('<span style="background:#000 no-repeat">x</span>', OBSCURED),
    ('<span style="background:#fff no-repeat">x</span>', SHOWN),
])
def test_a_backdrop_is_read_from_background_color_whole_and_from_backgrounds_first_word(frag, want):
    assert cls(frag) == want
    faces(frag, "x", want)
