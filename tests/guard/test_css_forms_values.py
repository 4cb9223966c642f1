"""The inline-style rules and the citation forms a reader sees, value by value (#56 round 69; citebound/text/css.py
and citebound/text/forms.py), each expected value worked out by hand in the comments: colours in every notation
the rules read (four-digit hex, rgb() percentages, a percent alpha), WCAG luminance with its channel weights,
lengths in em, styles the guard must not read as written (a CSS escape) or must read though they are unusual
(!important, upper case), calc() offsets, a 1px or 0-high clipping box; superscript one, full-width parentheses,
circled numbers past ten, a bracket reference with a leading zero, a number in <cite>, two forms side by side,
and a minus sign in a range marker."""
from __future__ import annotations

import re

import pytest

from citebound.text.css import State, _colour, element_state, unreadable
from citebound.text.forms import fold_markers, other_forms

WHITE, BLACK = (255, 255, 255, 1.0), (0, 0, 0, 1.0)


@pytest.mark.parametrize("value,want", [
    ("#fff8", (255, 255, 255, 0x88 / 255)),  # each digit doubled: ff ff ff 88
    ("#0008", (0, 0, 0, 0x88 / 255)),
    ("#abc", (0xaa, 0xbb, 0xcc, 1.0)),
    ("#11223380", (0x11, 0x22, 0x33, 0x80 / 255)),
    ("rgb(50%, 50%, 50%)", (127.5, 127.5, 127.5, 1.0)),  # 50% of 255
    ("rgb(100%,0%,0%)", (255.0, 0.0, 0.0, 1.0)),
    ("rgba(0, 0, 0, 5%)", (0.0, 0.0, 0.0, 0.05)),  # a percent alpha is a share of 1
    ("rgba(0 0 0 / 0.5)", (0.0, 0.0, 0.0, 0.5)),
])
def test_colours_in_every_notation(value, want):
    assert _colour(value) == pytest.approx(want)


def test_percent_colours_and_alpha_decide_readability():
    # 50% grey on white: L = lin(0.5) = ((0.5 + 0.055) / 1.055) ** 2.4 = 0.2140; (1.05) / (0.264) = 3.98 >= 1.5
    assert unreadable(_colour("rgb(50%, 50%, 50%)"), WHITE) is False
    assert unreadable(_colour("rgba(0, 0, 0, 5%)"), WHITE) is True  # alpha 0.05 < 0.1: nearly transparent


def test_luminance_weighs_green_over_blue():
    # on black (L = 0): ratio = (L + 0.05) / 0.05. lin(80 / 255) = ((0.31373 + 0.055) / 1.055) ** 2.4 = 0.08023
    # blue #000050: L = 0.0722 * 0.08023 = 0.00579, ratio 1.116 < 1.5: unreadable
    # green #005000: L = 0.7152 * 0.08023 = 0.05738, ratio 2.148: readable
    assert unreadable(_colour("#000050"), BLACK) is True
    assert unreadable(_colour("#005000"), BLACK) is False


def state(style: str | None = None, tag: str = "span", **attrs: str) -> State:
    a = dict(attrs) | ({"style": style} if style is not None else {})
    return element_state(State(), tag, a, False)


@pytest.mark.parametrize("style,obscured", [
    ("font-size: 0.5em", False),  # 0.5 x 16 = 8px
    ("font-size: 0.2em", True),  # 3.2px < 4
    ("font-size: 3pt", False),  # 4px: not under 4
    ("font-size: 2pt", True),  # 2.67px
    ("position: absolute; left: calc(-10000px)", True),  # calc(): the guard cannot tell where it goes
    ("overflow: hidden; width: 1px", True),  # under 2px
    ("overflow: hidden; width: 2px", False),
    ("overflow: hidden; max-height: 0", True),
    ("overflow: hidden; max-height: 3px", False),
    ("color: #000050; background-color: black", True),
    ("color: #005000; background-color: black", False),
])
def test_what_obscures_an_elements_text(style, obscured):
    assert state(style).obscured is obscured


@pytest.mark.parametrize("style", ["display: none !important", "DISPLAY: NONE", "Display:None!IMPORTANT"])
def test_display_none_is_read_whatever_its_case_and_importance(style):
    assert state(style).hidden is True


def test_a_style_with_a_css_escape_is_not_read_as_written():
    # a browser reads dis\play as display: the guard cannot tell what it says, so the text is obscured
    s = state("dis\\play: none")
    assert s.obscured is True or s.hidden is True


@pytest.mark.parametrize("kind,hidden", [("hidden", True), ("HIDDEN", True), ("Hidden", True), ("text", False)])
def test_an_input_of_type_hidden_in_any_case_is_hidden(kind, hidden):
    assert state(tag="input", type=kind).hidden is hidden


def spans(answer: str) -> list[str]:
    view = re.sub(r"<[^>]+>", lambda m: " " * len(m.group()), answer)  # what the scanner leaves: tags blanked
    return [answer[lo:hi] for lo, hi in other_forms(answer, view)]


@pytest.mark.parametrize("answer,found", [
    ("Cells grow\u00b9 fast.", ["\u00b9"]),
    ("Cells grow\u00b2 fast.", ["\u00b2"]),
    ("Cells grow \uff082\uff09 fast.", ["\uff082\uff09"]),  # full-width parentheses
    ("Cells grow (2) fast.", ["(2)"]),
    ("Cells grow \u246a fast.", ["\u246a"]),  # circled eleven
    ("Cells grow \u2473 fast.", ["\u2473"]),  # circled twenty
    ("Cells grow &#091;2&#093; fast.", ["&#091;2&#093;"]),  # a leading zero in the reference
    ("Cells grow &#91;2&#93; fast.", ["&#91;2&#93;"]),
    ("Cells grow<cite>2</cite> fast.", ["<cite>2</cite>"]),
    ("Cells grow<sup>2</sup> fast.", ["<sup>2</sup>"]),
    ("Cells grow\u00b2(3) fast.", ["\u00b2", "(3)"]),  # side by side: two forms, each to review
    ("A 10\u2076 plate of 5 m\u00b2.", []),  # exponents
])
def test_the_citation_forms_a_reader_sees(answer, found):
    assert spans(answer) == found


def test_a_minus_sign_and_other_dashes_in_a_marker_are_read_as_its_hyphen():
    assert fold_markers("[1\u22123] [1\u20143] [1\u20113]") == "[1-3] [1-3] [1-3]"


@pytest.mark.parametrize("rgb,luminance,on_black", [
    # 10 / 255 = 0.03922 <= 0.03928: the linear segment, L = 0.03922 / 12.92 = 0.003035; ratio 1.061
    ((10, 10, 10), 0.003035, True),
    # 42 / 255 = 0.16471: ((0.16471 + 0.055) / 1.055) ** 2.4 = 0.023152; ratio (0.073152 / 0.05) = 1.463
    ((42, 42, 42), 0.023152, True),
    # 44 / 255 = 0.17255: ((0.17255 + 0.055) / 1.055) ** 2.4 = 0.025186; ratio 1.504, just readable
    ((44, 44, 44), 0.025186, False),
    ((0, 0, 255), 0.0722, False),  # the channel weights, each alone: ratio (0.0722 + 0.05) / 0.05 = 2.44
    ((0, 255, 0), 0.7152, False),
    ((255, 0, 0), 0.2126, False),
    ((255, 255, 0), 0.9278, False),
])
def test_wcag_luminance_by_hand_and_its_contrast_on_black(rgb, luminance, on_black):
    from citebound.text.css import _luminance

    assert _luminance(rgb) == pytest.approx(luminance, abs=2e-6)
    assert unreadable((*rgb, 1.0), BLACK) is on_black
