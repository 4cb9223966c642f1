"""The visibility rules no earlier table chose (#56): each rule's own value and its neighbours, the class of one
marked character worked out by hand from what a browser does with the markup.

A character is SHOWN (an answer checks it, a passage may support with it), HIDDEN (a browser does not render
it: an answer leaves it out, a passage too), OBSCURED or UNCERTAIN (rendered, or perhaps rendered, where the
guard cannot tell what a reader sees: an answer checks it and fails closed, a passage does not support with it).
"""
from __future__ import annotations

import pytest

from citebound.text.visible import HIDDEN, MAX_TAG, OBSCURED, SHOWN, UNCERTAIN, blank_hidden, passage_view, scan


def cls(frag: str, mark: str = "x") -> int:
    """The class of the last ``mark`` in ``frag`` (a character the markup itself never holds)."""
    at = frag.rindex(mark)
    v = scan(frag)
    found = [c for c, spans in v.spans.items() if any(lo <= at < hi for lo, hi in spans)]
    assert len(found) <= 1, (frag, found)
    return found[0] if found else SHOWN  # shown text is what no span holds


def faces(frag: str, mark: str, want: int) -> None:
    """What each class means for the two faces: an answer checks all but HIDDEN; a passage keeps SHOWN only."""
    at = frag.rindex(mark)
    assert (blank_hidden(frag)[at] == mark) is (want != HIDDEN)
    assert (passage_view(frag)[at] == mark) is (want == SHOWN)


@pytest.mark.parametrize("frag,want", [
    # hidden="until-found": the browser renders it collapsed until a find-in-page opens it
    ('<span hidden="until-found">x</span>', OBSCURED), ('<span hidden="UNTIL-FOUND">x</span>', OBSCURED),
    ('<span hidden="">x</span>', HIDDEN), ('<span hidden="until">x</span>', HIDDEN),
    # visibility: the keywords the guard knows, and one it does not
    ('<span style="visibility:sideways">x</span>', OBSCURED), ('<span style="visibility:inherit">x</span>', SHOWN),
    ('<span style="visibility:revert">x</span>', SHOWN), ('<span style="visibility:collapse">x</span>', HIDDEN),
    ('<div style="visibility:hidden"><span style="visibility:visible">x</span></div>', SHOWN),
    # opacity as a number and as a percentage, at 0.1 and beside it, and one the guard cannot read
    ('<span style="opacity:9%">x</span>', OBSCURED), ('<span style="opacity:10%">x</span>', SHOWN),
    ('<span style="opacity:0.099">x</span>', OBSCURED), ('<span style="opacity:half">x</span>', OBSCURED),
    # zoom: 0 shrinks the text to nothing; 1 and normal leave it
    ('<span style="zoom:0">x</span>', OBSCURED), ('<span style="zoom:1">x</span>', SHOWN),
    ('<span style="zoom:normal">x</span>', SHOWN), ('<span style="zoom:50%">x</span>', OBSCURED),
    ('<span style="transform:none">x</span>', SHOWN), ('<span style="transform:scale(0)">x</span>', OBSCURED),
    # colours the guard cannot read are obscured; the keywords that keep the parent's colour are not
    ('<span style="color:hsl(0,0%,0%)">x</span>', OBSCURED), ('<span style="color:rgb(1..2,0,0)">x</span>', OBSCURED),
    ('<span style="color:currentcolor">x</span>', SHOWN), ('<span style="color:inherit">x</span>', SHOWN),
    ('<span style="color:rgb(0,0,0)">x</span>', SHOWN), ('<span style="color:rgb(100%,100%,100%)">x</span>', OBSCURED),
    ('<span style="color:#fff0">x</span>', OBSCURED), ('<span style="color:#ffffff">x</span>', OBSCURED),
    # a backdrop: an image or gradient hides the contrast; a half-transparent colour leaves the page's white
    ('<div style="background:linear-gradient(#fff,#fff)">x</div>', OBSCURED),
    ('<div style="background:none">x</div>', SHOWN), ('<div style="background:#fff">x</div>', SHOWN),
    ('<div style="background-color:rgba(0,0,0,0.5)">x</div>', SHOWN),
    ('<div style="background-color:rgba(0,0,0,0.99)">x</div>', OBSCURED),  # opaque enough: black on black
    ('<div style="background:black;color:white">x</div>', SHOWN),
    # an invalid length is dropped, as a browser drops the declaration: the text stays where it is
    ('<span style="left:1..2px">x</span>', SHOWN), ('<span style="font-size:1..2px">x</span>', SHOWN),
    ('<span style="font-size:0">x</span>', OBSCURED), ('<span style="text-indent:-1000pt">x</span>', OBSCURED),
    ('<span style="text-indent:749pt">x</span>', SHOWN),  # 749pt is 998.7px, under 1000 (towards the end)
    ('<span style="text-indent:750pt">x</span>', OBSCURED),
])
def test_css_rules_the_guard_reads_and_the_ones_it_cannot(frag, want):
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("frag,mark,want", [
    # <!--> leaves a script's escape at once: the first </script> ends the script, what follows is shown
    ("<script><!--><script></script>x", "x", SHOWN),
    ("<script><!---><script></script>x", "x", SHOWN),
    # ... while <!-- <script> double-escapes it: the first </script> does not end it (a browser hides x)
    ("<script><!--<script></script>x", "x", UNCERTAIN),
    # misnested formatting: after </b> closes over <i>, the tree is rearranged (what follows is uncertain)
    # (a browser reopens the <i> after the </b>: y is in it; the same <i> changes nothing, a hidden one hides y)
    ('<b><i style="display:none">x</b>y</i>', "y", UNCERTAIN), ("<b><i>x</b>y</i>", "y", SHOWN),
    ("<b><i>x</i></b>y", "y", SHOWN), ('<b><i style="display:none">x</i></b>y', "y", SHOWN),
    # an end tag that is not formatting stops at a special element: </span> inside a <div> is ignored
    ('<span style="display:none"><div>x</span>y</div>', "y", HIDDEN),
    ('<span style="display:none"><em>x</span>y</em>', "y", SHOWN),
    # a formatting end tag over a special element: the adoption agency moves things, uncertain from there
    ("<b><div>x</b>y</div>", "y", UNCERTAIN),
    # a textarea renders its text in a box a reader may or may not read whole; hidden, it renders nothing
    ("<textarea>x</textarea>", "x", UNCERTAIN), ("<textarea hidden>x</textarea>", "x", HIDDEN),
    ('<textarea style="visibility:hidden">x</textarea>', "x", HIDDEN), ("<textarea>x</textarea>y", "y", SHOWN),
    # bogus comments (a doctype, a processing instruction, an end tag that is not a name) are markup
    ("<!DOCTYPE html>x", "D", HIDDEN), ("<!DOCTYPE html>x", "x", SHOWN), ('<?xml version="1.0"?>x', "v", HIDDEN),
    ("</3 y>x", "y", HIDDEN), ("</3 y>x", "x", SHOWN), ("<!y", "y", SHOWN), ("a <3 y", "y", SHOWN),
    # a quoted value that never closes: the tag cannot be read, a browser may make anything of what follows
    ('<span title="open>x', "x", UNCERTAIN), ("<span title='open>x", "x", UNCERTAIN),
    ('<span title="shut">x', "x", SHOWN),
])
def test_parser_rules_at_their_edges(frag, mark, want):
    assert cls(frag, mark) == want
    faces(frag, mark, want)


def _tag(length: int) -> str:
    """A ``<span style="display:none" t0="aaa…" t1="…" …>`` of exactly ``length`` characters, '<' to '>' (no
    value over 1000 characters: a quoted value has a limit of its own)."""
    tag = '<span style="display:none"'
    k = 0
    while len(tag) + 1 < length:
        room = length - len(tag) - 1 - len(f' t{k}=""')
        tag += f' t{k}="' + "a" * max(0, min(1000, room)) + '"' if room >= 0 else " " * (length - len(tag) - 1)
        k += 1
    return tag + ">"


@pytest.mark.parametrize("length,want", [(60, HIDDEN), (MAX_TAG - 1, HIDDEN), (MAX_TAG, HIDDEN),
                                         (MAX_TAG + 1, UNCERTAIN), (MAX_TAG + 200, UNCERTAIN)])
def test_a_tag_of_up_to_max_tag_characters_is_read_and_a_longer_one_is_not(length, want):
    """MAX_TAG is the most characters one tag may take, '<' to '>': that tag is read (its element hides x); a
    longer one cannot be read, so what follows is uncertain (an answer checks x and fails closed)."""
    assert MAX_TAG == 4000
    tag = _tag(length)
    assert len(tag) == length and tag.startswith("<") and tag.endswith(">")
    frag = "lead " + tag + "x</span> tail"
    assert cls(frag) == want
    faces(frag, "x", want)


def test_a_tag_with_many_short_attributes_past_max_tag_is_not_read_either():
    attrs = " a=1" * 1000  # 4000 characters of attributes, each read on its own
    frag = '<span style="display:none"' + attrs + ">x</span>"
    assert frag.index(">") + 1 > MAX_TAG
    assert cls(frag) == UNCERTAIN
    short = '<span style="display:none"' + " a=1" * 10 + ">x</span>"
    assert cls(short) == HIDDEN


@pytest.mark.parametrize("length,want", [(4000, HIDDEN), (4001, UNCERTAIN), (4002, UNCERTAIN)])
def test_spaces_before_the_tags_end_count_toward_max_tag(length, want):
    """The last attribute ends before MAX_TAG and spaces run on to the '>': the tag's length is to its '>'."""
    tag = _tag(length - 3)[:-1] + "   >"
    assert len(tag) == length
    frag = "lead " + tag + "x</span> tail"
    assert cls(frag) == want


# --- names, values and whitespace as HTML's tokenizer and CSS read them ----------------------------------------------

def _attrs(n: int) -> str:
    """n distinct attributes, the last one ``hidden``."""
    return " ".join([f"a{i}" for i in range(n - 1)] + ["hidden"])


@pytest.mark.parametrize("frag,want", [
    ("<span " + _attrs(1) + ">x</span>", HIDDEN),
    ("<span " + _attrs(100) + ">x</span>", HIDDEN),  # MAX_ATTRS distinct attributes: all read
    ("<span " + _attrs(101) + ">x</span>", UNCERTAIN),  # one more: the guard cannot read the tag as a browser does
    ("<span " + "a " * 150 + "hidden>x</span>", HIDDEN),  # a repeated attribute is ignored: two distinct
    ("<b" + "a" * 200 + " hidden>x</b>", HIDDEN),  # a tag name of 201 characters, read
    ("<b" + "a" * 201 + " hidden>x</b>", UNCERTAIN),  # 202: it goes on past what the guard reads
    ("<span " + "n" * 201 + " hidden>x</span>", HIDDEN),  # an attribute name of 201 characters
    ("<span " + "n" * 202 + " hidden>x</span>", UNCERTAIN),  # 202 ("n...nhidden" would read as "hidden")
    ("<span t=" + "v" * 3000 + " hidden>x</span>", HIDDEN),  # an unquoted value of 3000 characters
    ("<span t=" + "v" * 3001 + " hidden>x</span>", UNCERTAIN),  # 3001
    ("<span\x00 hidden>x</span>", UNCERTAIN),  # a NUL in a name: the browser reads U+FFFD; the guard fails closed
])
def test_a_tag_is_read_whole_or_not_at_all(frag, want):
    """MAX_ATTRS (100) distinct attributes, names of 201 characters and unquoted values of 3000 are read; one more
    and the tag is unreadable (what follows is uncertain: an answer checks x and fails closed, a passage drops it),
    never read in part: the rest of a long name would start another attribute the browser does not see."""
    from citebound.text.html_lex import MAX_ATTRS

    assert MAX_ATTRS == 100
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("ws,want", [(" ", HIDDEN), ("\t", HIDDEN), ("\n", HIDDEN), ("\f", HIDDEN), ("\r", HIDDEN),
                                     ("\u00a0", SHOWN), ("\x0b", SHOWN), ("\u3000", SHOWN), ("\x85", SHOWN),
                                     ("\x1c", SHOWN)])
def test_only_htmls_whitespace_ends_a_tags_name(ws, want):
    """Tab, line feed, form feed, carriage return and space end a tag's name; any other character, a no-break
    space too, continues it: "span<nbsp>hidden" is an unknown element a browser shows, with no hidden attribute."""
    frag = f"<span{ws}hidden>x</span>"
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("style,want", [
    ("display:none", HIDDEN), ("display: \t\nnone ", HIDDEN), ("DISPLAY:NONE", HIDDEN), ("display:\fnone\r", HIDDEN),
    ("display:\u00a0none", SHOWN), ("display:none\x0b", SHOWN), ("display:\u3000none", SHOWN),
    ("\u00a0display:none", SHOWN), ("visibility:hidden\u2003", OBSCURED),  # a visibility the guard cannot read
    ("display:none !important", HIDDEN), ("display:none !IMPORTANT", HIDDEN), ("display:none ! important", HIDDEN),
    ("display:none !\u0130mportant", SHOWN),  # a dotted capital I is no ASCII "i": the declaration is invalid
])
def test_only_csss_whitespace_and_ascii_case_make_a_value(style, want):
    """CSS trims space, tab, line feed, carriage return and form feed, and matches keywords in ASCII case: a
    no-break space or an ideographic space starts an identifier, so "\\u00a0none" is not "none" (a browser shows x)."""
    frag = f'<span style="{style}">x</span>'
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("k", [0, 1, 40])
def test_text_before_a_raw_element_that_lower_case_lengthens_leaves_the_offsets_true(k):
    """U+0130 is two characters in Python's lower case, one in HTML's (ASCII only): after k of them, a script's
    end is where it is, and x after it is shown."""
    frag = "\u0130" * k + " a <script>s</script> x. <title>t</title>y"
    assert cls(frag) == SHOWN and cls(frag, "y") == SHOWN
    assert cls(frag, "s") == HIDDEN and cls(frag, "t") == HIDDEN
    faces(frag, "x", SHOWN)


@pytest.mark.parametrize("style,want", [
    ("x:';display:none;'", SHOWN),  # one declaration, of an unknown property x: its string holds the ';'
    ('x:";display:none;"', SHOWN),
    ("x:(;display:none;)", SHOWN), ("x:[;display:none;]", SHOWN), ("x:{;display:none;}", SHOWN),
    ("font-family:'a';display:none", HIDDEN),  # the ';' after the string ends it
    ("color:rgb(0,0,0);display:none", HIDDEN),
    ("x:'/*';display:none;y:'*/'", HIDDEN),  # no comment inside a string
    ("x:1/*;display:none;*/", SHOWN),  # the comment is a space
    ("display/**/:none", HIDDEN), ("x:1/*;*/;display:none", HIDDEN),
    ("x:'open;display:none", OBSCURED), ("x:(;display:none", OBSCURED), ("x:);display:none", OBSCURED),
    ("display:none;x:1/*", OBSCURED),  # a string, a bracket or a comment left open: the guard cannot read it
])
def test_a_declaration_ends_at_a_semicolon_outside_strings_brackets_and_comments(style, want):
    """CSS splits a style's declarations at each ';' that no string, bracket or comment holds: a ';' inside one
    starts no declaration, so "display:none" there hides nothing (a browser shows x). A style left open is one
    the guard cannot read: x fails closed in an answer and supports nothing in a passage."""
    frag = f'<span style="{style.replace(chr(34), "&quot;")}">x</span>'
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("frag,want", [
    ("<xmp>x</xmp>", UNCERTAIN),  # drawn as written: an answer checks it; a passage does not support with it
    ("<xmp><b hidden>x</b></xmp>", UNCERTAIN),  # its tags are text, not elements: nothing hides x
    ("<xmp hidden>x</xmp>", HIDDEN), ('<xmp style="color:transparent">x</xmp>', OBSCURED),
    ('<textarea style="opacity:0">x</textarea>', OBSCURED), ("<textarea>x</textarea>", UNCERTAIN),
    ("<head>x</head>", SHOWN),  # a <head> in a body is ignored: x is in the body
    ("<head hidden>x</head>", OBSCURED),  # its attributes too; the guard does not model that: checked, fails closed
    ("<template>x</template>", HIDDEN),
])
def test_raw_text_a_browser_draws_and_a_head_that_hides_nothing(frag, want):
    """An <xmp>'s contents are raw text a browser draws (as a text area's are, in a box): never hidden unless the
    element is, failed closed when its style obscures it. A <head> opened in a page's body is ignored, so its text
    is shown; a <template>'s contents are never rendered."""
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("style,want", [
    ("display:inline !important;display:none", SHOWN),  # the later none is not !important: inline wins
    ("display:none !important;display:inline", HIDDEN),
    ("display:none !important;display:inline !important", SHOWN),  # both !important: the later wins
    ("display:inline !important;display:none !important", HIDDEN),
    ("display:none;display:inline", SHOWN), ("display:inline;display:none", HIDDEN),  # neither: the later wins
    ("visibility:visible !important;visibility:hidden", SHOWN),
])
def test_an_important_declaration_wins_over_a_later_one_that_is_not(style, want):
    """Within one style attribute the cascade orders !important before the order of writing: a later declaration
    of the same property overrides an earlier one only when it is !important or the earlier one is not."""
    frag = f'<span style="{style}">x</span>'
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("frag,want", [
    ('<font color="#fff">x</font>', OBSCURED), ('<font color="white">x</font>', OBSCURED),  # white on the white page
    ('<font color="red">x</font>', SHOWN), ('<font color="#fff" style="color:#000">x</font>', SHOWN),  # style wins
    ('<font color="chucknorris">x</font>', OBSCURED),  # HTML's legacy colour parsing: the guard cannot tell
    ('<span color="#fff">x</span>', SHOWN),  # only <font> has a colour attribute
    ('<span style="letter-spacing:-4px">x</span>', OBSCURED), ('<span style="letter-spacing:-3.9px">x</span>', SHOWN),
    ('<span style="letter-spacing:-0.25em">x</span>', OBSCURED), ('<span style="letter-spacing:2px">x</span>', SHOWN),
    ('<span style="position:absolute;top:-16px">x</span>', OBSCURED),  # a line's height towards the start
    ('<span style="position:absolute;top:-15px">x</span>', SHOWN),
    ('<span style="margin-left:-1em">x</span>', OBSCURED), ('<span style="text-indent:-20px">x</span>', OBSCURED),
    ('<span style="margin:0 0 0 -16px">x</span>', OBSCURED), ('<span style="translate:0 -16px">x</span>', OBSCURED),
    ('<span style="position:absolute;right:-100px">x</span>', SHOWN),  # towards the end: a reader can scroll there
    ('<span style="position:absolute;bottom:-999px">x</span>', SHOWN),
    ('<span style="position:absolute;right:-1000px">x</span>', OBSCURED),  # 1,000px either way: off the page
])
def test_a_fonts_colour_overlapping_letters_and_text_moved_off_the_pages_start(frag, want):
    """A <font>'s colour attribute colours its text as a style would (the style wins over it); letter spacing of
    -4px (a quarter of a 16px letter) or more draws letters over each other; an offset of a line's height (16px)
    or more towards the page's start (left, top, their margins, the indent) can take text where no reader can
    scroll. Each is text a reader cannot see: checked in an answer and failed closed, no support in a passage."""
    assert cls(frag) == want
    faces(frag, "x", want)


@pytest.mark.parametrize("prop,value", [
    ("left", "-16px"), ("top", "-16px"), ("margin-left", "-16px"), ("margin-top", "-16px"), ("margin", "-16px"),
    ("text-indent", "-16px"), ("inset", "-16px"), ("translate", "-16px"), ("translate", "0 -1em"),
    ("margin", "0 0 0 -12pt"),  # 12pt is 16px; a shorthand's every part is read
])
@pytest.mark.parametrize("px_less", [False, True])
def test_every_offset_towards_the_pages_start_obscures_from_a_lines_height(prop, value, px_less):
    """Each property that moves a box up or left (left, top, their margins, the shorthand margin, text-indent,
    inset, translate) takes text off the page's start from 16px on, each one on its own; 15px is still on the page.
    The list is written out here from CSS, not read from the code."""
    if px_less:
        value = value.replace("-16px", "-15px").replace("-1em", "-15px").replace("-12pt", "-15px")
    frag = f'<div style="position:relative;{prop}:{value}">x</div>'
    assert cls(frag) == (SHOWN if px_less else OBSCURED), frag


@pytest.mark.parametrize("prop", ["right", "bottom", "margin-right", "margin-bottom"])
def test_an_offset_towards_the_pages_end_obscures_only_from_1000px(prop):
    """Up or left is towards the page's start, where no reader can scroll; right or down a reader can follow
    (the page grows): there only 1,000px, off any page, obscures."""
    assert cls(f'<div style="position:relative;{prop}:-999px">x</div>') == SHOWN
    assert cls(f'<div style="position:relative;{prop}:-1000px">x</div>') == OBSCURED


@pytest.mark.parametrize("frag,hidden", [
    ("<!DOCTYPE html>x", [(0, 15)]),  # a bogus comment, its '>' too
    ("<?xml v?>x", [(0, 9)]), ("</3 a>x", [(0, 6)]), ("a<!x>b", [(1, 5)]),
    ("<span hidden>1 < 2</span>x", [(0, 25)]),  # a '<' that opens no tag is text: hidden where its element is
    ("<span hidden>1 <</span>x", [(0, 23)]),
])
def test_every_markup_and_hidden_character_is_hidden_to_the_last(frag, hidden):
    """Spans worked out by counting characters: a bogus comment (<!…>, <?…?>, </3…>) is hidden up to and with its
    '>', and a lone '<' inside a hidden element is hidden with it; the character after each is shown."""
    assert scan(frag).spans[HIDDEN] == hidden
    assert blank_hidden(frag) == "".join(" " if any(lo <= i < hi for lo, hi in hidden) else c for i, c in enumerate(frag))


def test_an_unreadable_tag_is_classified_from_its_own_lt():
    """A tag whose name is longer than the reader reads (here 301 characters) is unreadable: from its '<' on the
    guard cannot tell what a browser shows. Offsets counted by hand: '1 ' then '<' at 2, 306 characters in all;
    inside a hidden span (13 characters of tag, then '1 '), its '<' is at 15, the 'x' at 318, the end tag 319 to
    326, the 'y' after it at 326."""
    name = "b" + "c" * 300
    assert scan(f"1 <{name}>x").spans == {HIDDEN: [], OBSCURED: [], UNCERTAIN: [(2, 306)]}
    assert scan(f"<span hidden>1 <{name}>x</span>y").spans == {HIDDEN: [(0, 15), (319, 326)], OBSCURED: [(15, 319)],
                                                               UNCERTAIN: [(326, 327)]}


@pytest.mark.parametrize("frag", [
    "<span hidden>a<div>b</div></span>x",  # the <div> closed: the span's own end tag closes it
    "<p hidden>a<object></object><div>x</div>",  # the <object> closed: the <div> closes the hidden <p>
    "<ul><li hidden>a<section></section><li>x</ul>",  # the <section> closed: the new <li> closes the hidden one
    "<span hidden><b>a<div>b</div></b></span>x",
])
def test_a_closed_special_element_stands_between_nothing(frag):
    """A special element (a <div>, an <object>, a <section>) that opened and closed inside a hidden one is gone
    from the scopes HTML's end tags and implied ends look through: what follows is outside the hidden element,
    shown (Chromium shows x in each: tests/guard/test_visibility_browser.py)."""
    assert cls(frag) == SHOWN
    faces(frag, "x", SHOWN)


@pytest.mark.parametrize("frag,mark,want", [
    ('<div><template shadowrootmode="open">x</template>y</div>', "x", OBSCURED),  # drawn in a page: checked
    ('<div><template shadowrootmode="open">x</template>y</div>', "y", OBSCURED),  # the host's text: not drawn there
    ('<div><TEMPLATE SHADOWROOTMODE=closed>x</TEMPLATE></div>', "x", OBSCURED),
    ("<div><template>x</template>y</div>", "x", HIDDEN),  # a template without one is never drawn
    ("<div><template>x</template>y</div>", "y", SHOWN),
])
def test_a_declarative_shadow_root_is_drawn_or_not_as_the_renderer_parses_it(frag, mark, want):
    """<template shadowrootmode> is drawn, in place of its host's own text, where the text is parsed as a page,
    and is an inert template where it is set as an element's HTML: the guard cannot tell which, so both fail
    closed in an answer and support nothing in a passage."""
    assert cls(frag, mark) == want
    faces(frag, mark, want)


@pytest.mark.parametrize("frag,want", [("<noscript>x</noscript>", UNCERTAIN), ("<noscript><b hidden>x</b></noscript>", UNCERTAIN),
                                       ("<noscript hidden>x</noscript>", HIDDEN), ("<noembed>x</noembed>", HIDDEN)])
def test_noscript_text_is_checked_in_an_answer_and_supports_nothing(frag, want):
    """Drawn where the renderer parsed the text without scripting (DOMParser, as sanitisers do), not where it set
    it as an element's HTML: uncertain, unless the element itself is hidden."""
    assert cls(frag) == want
    faces(frag, "x", want)
