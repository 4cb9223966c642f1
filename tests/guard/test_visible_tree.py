"""The visibility scanner's tree and bookkeeping rules (#56, round 45): implied end tags as HTML's tree builder
makes them, how many hidden regions a report counts, where a stream must hold text back, and link targets with
invisible characters in their scheme.

Every expected value is worked out by hand from HTML's rules; the implied-end-tag table was also checked in
Debian's Chromium (``document.body.innerText`` of each fragment, the same fragments as in
``test_visibility_browser.py``'s hand-picked list, which the slow tier runs against the browser).
"""
from __future__ import annotations

import pytest

from citebound.guarding.stream import stable_end
from citebound.text.visible import HIDDEN, MAX_TAG, SHOWN, UNCERTAIN, blank_hidden, passage_view, safe_link, scan


def cls(frag: str, mark: str = "x") -> int:
    """The class of the last ``mark`` in ``frag``."""
    at = frag.rindex(mark)
    found = [c for c, spans in scan(frag).spans.items() if any(lo <= at < hi for lo, hi in spans)]
    assert len(found) <= 1, (frag, found)
    return found[0] if found else SHOWN


@pytest.mark.parametrize("frag,want", [
    # a new <li> closes the open <li> (so x is out of the hidden one and shown) ...
    ("<li hidden>a<li>x", SHOWN), ("<ul><li hidden>a<span><li>x", SHOWN), ("<ul><li hidden>a<b><li>x", SHOWN),
    # ... through <address>, <div> and <p> (which it closes too) ...
    ("<ul><li hidden>a<div><li>x", SHOWN), ("<ul><li hidden>a<address><li>x", SHOWN),
    ("<ul><li hidden><p>a<li>x", SHOWN), ("<ul><li hidden><p>a</p><li>x", SHOWN),
    # ... but not through another special element: a nested list's item stays inside the hidden one
    ("<ul><li hidden>a<ul><li>x", HIDDEN), ("<ul><li hidden>a<section><li>x", HIDDEN),
    ("<ul><li hidden>a<button><li>x", HIDDEN),
    # <dd> and <dt> close either of them, by the same rule
    ("<dd hidden>a<dt>x", SHOWN), ("<dt hidden>a<dd>x", SHOWN), ("<dl><dd hidden><p>a<dt>x", SHOWN),
    ("<dl><dt hidden>a<div><dd>x", SHOWN), ("<dl><dt hidden>a<ul><dd>x", HIDDEN),
    # where both are open (one inside the other, a special element between), the innermost is the one closed
    ("<dl><dd><section><dt hidden>a<dd>x", SHOWN), ("<dl><dt><section><dd hidden>a<dt>x", SHOWN),
    # a block closes an open <p>, at the bottom of the stack too, but not across a button, an object or a marquee
    ('<p style="display:none">a<div>x', SHOWN), ("<div><p hidden>a<ul>x", SHOWN), ("<p hidden>a<span><div>x", SHOWN),
    ("<p hidden>a<button><div>x", HIDDEN), ("<p hidden>a<object><div>x", HIDDEN), ("<p hidden>a<marquee><div>x", HIDDEN),
])
def test_implied_end_tags_as_a_browser_makes_them(frag, want):
    assert cls(frag) == want
    at = frag.rindex("x")
    assert (blank_hidden(frag)[at] == "x") is (want != HIDDEN)  # an answer checks what a reader sees
    assert (passage_view(frag)[at] == "x") is (want == SHOWN)  # a passage supports with it only then


def test_a_hidden_li_closed_by_the_next_one_leaves_the_readers_claim_checked():
    answer = '<ul><li style="display:none"><p>Aspirin is safe [1].<li>Aspirin cures cancer [2].</ul>'
    view = blank_hidden(answer)
    assert "Aspirin cures cancer [2]." in view and "Aspirin is safe" not in view


@pytest.mark.parametrize("frag,want", [
    ("<div hidden><span hidden>a</span></div>b", 1),  # one hidden subtree is one region, however nested
    ('<div style="display:none"><p style="display:none">a</p></div>', 1),
    ('<div style="visibility:hidden"><span style="visibility:hidden">a</span></div>', 1),
    ('<span style="visibility:hidden">a</span><span style="visibility:hidden">b</span>', 2),
    ("<div hidden>a</div><span hidden>b</span>", 2),  # two siblings, two regions
    ("<!-- a --><script>b</script>", 2), ("<style>p{}</style>x<title>t</title>", 2),
    ("<script>a</script><script>b</script><!-- c -->", 3),
    ("<b>a</b><i>b</i>", 0),
])
def test_hidden_regions_count_each_hidden_subtree_once(frag, want):
    assert scan(frag).hidden_regions == want


@pytest.mark.parametrize("text,opened,stable", [
    # a comment the end leaves open: more text may close it (a '>' inside does not), so a stream holds it back
    ("Seen. <!-- a > b", 6, 6), ("Seen. <!-- a > b -->", None, 20),
    # an element that obscures (or hides) its text, left open: its rest is decided by text still to come
    ('Seen. <span style="opacity:0">Aspirin [1]. More', 6, 6),
    ('Seen. <span style="opacity:0">Aspirin [1].</span> More', None, 54),
    ("Seen. <span hidden>Aspirin [1]. More", 6, 6),
    ("Seen. <b>Aspirin [1]. More", None, 26),  # an open element that changes nothing holds nothing back
    # a double-escaped script the end leaves open (a browser hides what follows, until a second </script>)
    ("Seen. <script><!--<script>a</script>b", 6, 6), ("Seen. <script><!--<script>a</script>b</script> More", None, 51),
    # a tag the end leaves unreadable (a quote open) may still be completed, within a tag's reach of the end only
    ("Seen. <a title='x", 6, 6), ("Seen. <a title='x" + "y" * MAX_TAG, None, 17 + MAX_TAG),
    ("Seen. <a title='<script><!--<script>x", 6, 6),  # the first thing left open is where the stream stops
])
def test_where_a_stream_must_hold_text_back(text, opened, stable):
    assert scan(text).open_to_end == opened
    assert stable_end(text) == stable


@pytest.mark.parametrize("url,safe", [
    ("java\u200bscript:alert(1)", False), ("\u200bjavascript:alert(1)", False), ("javascript\u200b:alert(1)", False),
    ("data\u2060:text/html,x", False), ("https://a.org/x", True), ("/rel", True), ("ht\u200btps://a.org", True),
])
def test_a_link_scheme_is_read_without_its_invisible_characters(url, safe):
    assert safe_link(url) is safe


@pytest.mark.parametrize("frag,mark,want", [
    # after <!--<script> the script is double-escaped; a <!-- there changes nothing, the first </script> only
    # leaves the double escape, and the second one ends the script: x is script text a browser hides
    ("<script><!--<script><!--</script>x</script>y", "x", UNCERTAIN),
    ("<script><!--<script><!--</script>x</script>y", "y", SHOWN),
])
def test_a_comment_opener_inside_a_double_escaped_script(frag, mark, want):
    assert cls(frag, mark) == want
