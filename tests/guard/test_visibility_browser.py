"""Visibility against a real browser: generated HTML fragments (hypothesis), rendered in headless Chromium.

Each text node holds one unique token. The browser says which tokens are in the page's ``innerText`` and which
of those a reader can see (the element is rendered, its box has a size on the page, its font is at least 4px,
its colour is not transparent and stands out from the background behind it). The guard must then:

* check every token in ``innerText`` in an answer (it is in :func:`blank_hidden`'s view);
* fail closed on every token in ``innerText`` that a reader cannot see (it lies in an obscured span);
* fail closed on every token the browser draws from an attribute (a rendered image's ``alt``, a text box's
  ``value``, the document in each frame shown: a ``srcdoc``, a ``data:`` or ``javascript:`` URL): not in
  ``innerText``, but on the page;
* let a passage support with seen tokens only (:func:`passage_view` keeps nothing else).

The browser is the oracle, not this code: where they disagree, the guard is wrong.
"""
from __future__ import annotations

import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citebound.text.visible import OBSCURED, blank_hidden, passage_view, scan

pytestmark = pytest.mark.slow  # a real browser

TOKEN = re.compile(r"tk\d+")

DECLARATIONS = [
    "display:none", "display:block", "display:inline", "visibility:hidden", "visibility:visible",
    "visibility:collapse", "opacity:0", "opacity:0.5", "font-size:0", "font-size:1px", "font-size:14px",
    "color:#fff", "color:white", "color:transparent", "color:#000", "color:red", "color:rgba(0,0,0,0)",
    "background:#fff", "background-color:#000", "overflow:hidden", "height:0", "height:20px", "width:0",
    "position:absolute;left:-9999px", "position:absolute;left:10px", "clip-path:inset(50%)",
    "transform:scale(0)", "transform:none", "text-indent:-9999px", "margin-left:4px",
]
ATTRIBUTES = ["hidden", 'aria-hidden="true"', 'class="hidden-xs"', 'title="a hidden gem"', 'id="not-hidden"',
              'data-hidden="false"', 'hidden="hidden"']
TAGS = ["span", "div", "p", "b", "em", "sup", "cite", "section"]


@st.composite
def fragments(draw, depth=0):
    """A well-formed fragment; every text node is a fresh token (numbered later)."""
    n = draw(st.integers(1, 3))
    parts = []
    for _ in range(n):
        kind = draw(st.sampled_from(["text", "element", "element", "comment", "raw", "input"] if depth < 4
                                    else ["text"]))
        if kind == "text":
            parts.append(" TOKEN ")
        elif kind == "comment":
            parts.append("<!-- TOKEN -->")
        elif kind == "raw":
            tag = draw(st.sampled_from(["script", "template", "noscript", "title"]))
            parts.append(f"<{tag}> TOKEN </{tag}>")
        elif kind == "input":
            parts.append(draw(st.sampled_from(['<input type="hidden" value="TOKEN">', '<input value="TOKEN">',
                                               '<img alt="TOKEN">', '<br>'])))
        else:
            tag = draw(st.sampled_from(TAGS))
            style = draw(st.lists(st.sampled_from(DECLARATIONS), max_size=3))
            attrs = draw(st.lists(st.sampled_from(ATTRIBUTES), max_size=2, unique=True))
            attrs += ['data-note="TOKEN"'] if draw(st.booleans()) else []
            head = " ".join([tag] + ([f'style="{";".join(style)}"'] if style else []) + attrs)
            inner = draw(fragments(depth=depth + 1))
            parts.append(f"<{head}>{inner}</{tag}>")
    return "".join(parts)


def number(fragment: str) -> str:
    count = iter(range(10_000))
    return re.sub("TOKEN", lambda _: f"tk{next(count)}", fragment)


ORACLE = """() => {
  const inner = document.body.innerText;
  const seen = [];
  const lum = (c) => { const f = (x) => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
                       return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const W = document.documentElement.scrollWidth, H = document.documentElement.scrollHeight;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    const r = range.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0 || r.right <= 0 || r.bottom <= 0 || r.left >= W || r.top >= H) continue;
    const cs = getComputedStyle(el);
    if (parseFloat(cs.fontSize) < 4) continue;
    let op = 1; for (let e = el; e; e = e.parentElement) op *= parseFloat(getComputedStyle(e).opacity);
    if (op < 0.1) continue;
    const fg = rgba(cs.color);
    if (fg[3] < 0.1) continue;
    let bg = [255, 255, 255, 1];
    for (let e = el; e; e = e.parentElement) { const b = rgba(getComputedStyle(e).backgroundColor);
                                               if (b[3] >= 0.99) { bg = b; break; } }
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    if ((hi + 0.05) / (lo + 0.05) < 1.5) continue;
    seen.push(n.textContent);
  }
  const drawn = [];  // an image's alt (drawn in place of an image with no source), a text box's value
  for (const el of document.querySelectorAll('img, input')) {
    if (!el.checkVisibility({visibilityProperty: true})) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) drawn.push(el.getAttribute(el.tagName === 'IMG' ? 'alt' : 'value') || '');
  }
  return {inner: inner, seen: seen.join(' '), drawn: drawn.join(' ')};
}"""


@pytest.fixture(scope="module")
def page():
    playwright = pytest.importorskip("playwright.sync_api")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("chromium is not installed; .ci/run installs Debian's chromium for this test")
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 1000, "height": 800}, java_script_enabled=True)
        yield pg
        browser.close()


SHOWN_FRAME = """(e) => { const r = e.getBoundingClientRect();
                            return e.checkVisibility({visibilityProperty: true}) && r.width > 0 && r.height > 0; }"""
DOCUMENT_TEXT = "() => document.body ? document.body.innerText : document.documentElement.textContent"


def frame_text(page) -> str:
    """The text of every document drawn in a frame whose frame element, and each one above it, is on the page
    (a srcdoc, a data: or javascript: URL; Playwright reads a frame of another origin too)."""
    out = []
    for f in page.frames[1:]:
        g, shown = f, True
        while shown and g.parent_frame is not None:
            shown, g = g.frame_element().evaluate(SHOWN_FRAME), g.parent_frame
        out += [f.evaluate(DOCUMENT_TEXT)] if shown else []
    return " ".join(out)


def browser_view(page, fragment: str) -> tuple[set[str], set[str], set[str]]:
    page.set_content(f"<!doctype html><html><body>{fragment}</body></html>")
    out = page.evaluate(ORACLE)
    out["drawn"] += " " + frame_text(page)
    return tuple(set(TOKEN.findall(out[k])) for k in ("inner", "seen", "drawn"))


def check(page, fragment: str) -> None:
    inner, seen, drawn = browser_view(page, fragment)
    seen &= inner
    checked = set(TOKEN.findall(blank_hidden(fragment)))
    assert inner <= checked, f"shown by the browser but not checked in an answer: {inner - checked}\n{fragment}"
    obscured = {t for lo, hi in scan(fragment).spans[OBSCURED] for t in TOKEN.findall(fragment[lo:hi])}
    unseen = inner - seen
    assert unseen <= obscured, f"in innerText but unseen, and not failed closed: {unseen - obscured}\n{fragment}"
    # attribute text the browser draws (not in innerText): checked, and failed closed
    assert drawn <= obscured, f"drawn from an attribute, and not failed closed: {drawn - obscured}\n{fragment}"
    supports = set(TOKEN.findall(passage_view(fragment)))
    assert supports <= seen, f"supports in a passage but a reader cannot see it: {supports - seen}\n{fragment}"


HAND_PICKED = [
    '<dl><dd><section><dt hidden>tk1<dd>tk2</dl><dl><dt><section><dd hidden>tk3<dt>tk4</dl>',  # the innermost closed
    '<table><div hidden><img alt="tk1"></div></table><b><div>tk2</b></div><div hidden><img alt="tk3"></div>',
    '<div style="overflow:hidden">tk1 The moon is made of green cheese [2].</div> tk2',
    '<span class="hidden-xs">tk1</span><span id="not-hidden">tk2</span><span title="a hidden gem">tk3</span>',
    '<span data-hidden="false">tk1</span><span data-note="tk9">tk2</span><input type="hidden" value="tk8">',
    '<img alt="tk1"><input value="tk2"><div style="display:none"><img alt="tk3"></div><input type=submit value=tk4>',
    '<iframe srcdoc="<p>tk1</p>"></iframe><iframe hidden srcdoc="tk2"></iframe><iframe srcdoc="&lt;b&gt;tk3"></iframe>',
    # a document the answer carries as a URL: drawn in the frame, an embed or an object
    '<iframe src="data:text/html,<p>tk1</p>"></iframe><iframe src="javascript:\'tk2\'"></iframe><embed src="data:,tk3">',
    '<object data="data:text/plain,tk1"></object><iframe src=" JAVA&#9;SCRIPT:\'tk2\'"></iframe>'
    '<iframe src="data:image/svg+xml,<svg xmlns=\'http://www.w3.org/2000/svg\'><text y=\'20\'>tk3</text></svg>">'
    '</iframe><iframe style="display:none" src="data:,tk4"></iframe><iframe srcdoc="<iframe src=\'data:,tk5\'>">'
    '</iframe>',
    '<span style="color:transparent">tk1</span><span style="clip-path:inset(50%)">tk2</span>',
    '<span style="position:absolute;left:-9999px">tk1</span><span style="transform:scale(0)">tk2</span>',
    '<div style="background:#fff"><span style="color:#fff">tk1</span></div><span style="color:white">tk2</span>',
    '<div style="visibility:hidden">tk1<span style="visibility:visible">tk2</span>tk3</div>',
    '<p style="display:none">tk1<div>tk2</div>tk3',  # a <div> closes the hidden <p>: tk2, tk3 are shown
    # implied end tags: a new <li> closes an open one through <p> and <div>, not through a nested list
    '<ul><li hidden><p>tk1<li>tk2</ul><ul><li hidden>tk3<ul><li>tk4</ul></ul><ul><li hidden>tk5<div><li>tk6</ul>',
    '<dl><dd hidden><p>tk1<dt>tk2</dl><dl><dt hidden>tk3<ul><dd>tk4</ul></dl>',
    # a block closes a <p> in button scope only: not across a button, an object or a marquee
    '<p hidden>tk1<button><div>tk2</div></button></p><p hidden>tk3<object><div>tk4</div></object></p>tk5',
    '<p hidden>tk1<marquee><div>tk2</div></marquee></p><p hidden>tk3<span><div>tk4</div></span>',
    '<div hidden style="display:block">tk1</div><div hidden>tk2</div>',
    '<details><summary>tk1</summary>tk2</details><details open><summary>tk3</summary>tk4</details>',
    '<div style="display:none"><span>tk1</div>tk2</span>',
    '<div style="background-color:#000"><span style="color:#000">tk1</span>tk2</div>',  # black on black
    '<div style="background-color:#000;color:#fff">tk1</div>',
    '<span style="font-size:0">tk1<b style="font-size:16px">tk2</b></span>',
    '<table style="display:none">tk1<tr><td>tk2</td></tr></table>',  # tk1 is foster-parented out
    '<span style="display:n\\one">tk1</span><span style="display&#58;none">tk2</span>',
    # comments as HTML's tokenizer ends them: <!--> and <!---> are whole, --!> closes one, -- > does not
    '<!-->tk1 <!--->tk2 <!-- x --!>tk3 <!-- a -- >tk4 -->tk5 <!--->tk6-->tk7',
    # a script double-escaped (<!--<script>) runs past its first </script>
    '<script><!--<script></script>tk1</script>tk2<script><!--</script>tk3<script><!-- <script> --></script>tk4',
    # HTML's whitespace is tab, line feed, form feed, carriage return and space: a no-break space or a vertical
    # tab continues a tag's name, so "hidden" is no attribute (tk1, tk2 shown); a name or an unquoted value longer
    # than the guard reads goes on too (tk3, tk4, tk5); the 101st attribute is read by the browser (tk6 hidden)
    '<span\u00a0hidden>tk1</span><span\x0bhidden>tk2</span><' + 'a' * 201 + 'hidden>tk3</a>',
    '<span ' + 'x' * 201 + 'hidden>tk4</span><span title=' + 'v' * 3000 + 'hidden>tk5</span>',
    '<span ' + ' '.join(f'a{i}' for i in range(100)) + ' hidden>tk6</span><span ' +
    ' '.join(f'b{i}' for i in range(99)) + ' hidden>tk7</span>tk8',
    # a dotted capital I is two characters in lower case (Python's, not HTML's): the offsets after it stay true
    '\u0130' * 40 + ' tk1 <script>x</script> tk2 <title>t</title> tk3',
    # CSS's whitespace and ASCII case: "\u00a0none" and "!\u0130mportant" are not "none" and "!important"
    '<span style="display:\u00a0none">tk1</span><span style="display:none !\u0130mportant">tk2</span>'
    '<span style="visibility:hidden\u3000">tk3</span><span style="display:none !IMPORTANT">tk4</span>'
    '<span style="DISPLAY:\tNONE">tk5</span><span style="display:none\x0b">tk6</span>'
    '<span style="display:none ! important">tk7</span><span style="\u00a0display:none">tk8</span>',
    # a ';' inside a string, a bracket or a comment does not end a declaration; one after a string does
    '<span style="x:\';display:none;\'">tk1</span><span style="x:(;display:none;)">tk2</span>'
    '<span style="x:[;display:none;]">tk3</span><span style="font-family:\'a\';display:none">tk4</span>'
    '<span style="x:\'/*\';display:none;y:\'*/\'">tk5</span><span style="color:rgb(0,0,0);display:none">tk6</span>'
    '<span style="x:1/*;display:none;*/">tk7</span>',
    # an <xmp>'s text is drawn as written (its tags too); a <head> in a body is ignored, its text shown
    '<xmp>tk1</xmp><xmp><b hidden>tk2</b></xmp><xmp hidden>tk3</xmp><xmp style="color:transparent">tk4</xmp>tk5',
    '<head>tk1</head><span>tk2<head hidden>tk3</head></span><head style="display:none"><p>tk4</p></head>tk5',
    # in one style, an !important declaration wins over a later one that is not
    '<span style="display:inline !important;display:none">tk1</span><span style="display:none !important;'
    'display:inline">tk2</span><span hidden style="display:inline !important;display:none">tk3</span><div '
    'style="visibility:hidden"><span style="visibility:visible !important;visibility:inherit">tk4</span></div>'
    '<span style="display:none !important;display:inline !important">tk5</span>',
    # a <font>'s colour, letters drawn over each other, text moved off the page's start: unseen, failed closed
    '<font color="#fff">tk1</font><font color="white">tk2</font><font color="red">tk3</font><font color="#fff" '
    'style="color:#000">tk4</font><span style="letter-spacing:-20px">tk5</span><span style="letter-spacing:-3px">'
    'tk6</span><span style="position:fixed;top:-500px">tk7</span><span style="position:absolute;left:-100px">tk8'
    '</span><span style="position:relative;top:-10px">tk9</span><span style="text-indent:-999px;display:block;'
    'overflow:hidden">tk10</span>',
    # a declarative shadow root, parsed as a page: drawn, and its host's own text (tk2) is not
    '<div><template shadowrootmode="open">tk1</template>tk2</div>tk3',
    # a special element opened and closed inside a hidden one stands between nothing once closed: the hidden
    # element's own end tag still closes it, a <div> still closes a hidden <p> (the <object> is no longer in button
    # scope), a new <li> still closes a hidden one (the <section> no longer stops the list)
    '<span hidden>tk1<div>tk2</div></span>tk3', '<p hidden>tk1<object></object><div>tk2</div>',
    '<ul><li hidden>tk1<section></section><li>tk2</ul>', '<span hidden><b>tk1<div>tk2</div></b></span>tk3',
]


@pytest.mark.parametrize("fragment", HAND_PICKED)
def test_hand_picked_fragments_agree_with_chromium(page, fragment):
    check(page, fragment)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fragments())
def test_generated_fragments_agree_with_chromium(page, fragment):
    check(page, number(fragment))


def test_noscript_text_that_a_sanitiser_draws_is_checked(page):
    """A renderer that parses the answer with DOMParser (no scripting, as HTML sanitisers do) and moves the nodes
    into the page draws a <noscript>'s contents; one that sets innerHTML does not. The guard cannot tell which:
    the text is checked in an answer and supports nothing in a passage."""
    fragment = "<noscript><b>tk1</b></noscript>tk2"
    page.set_content("<!doctype html><html><body><div id=a></div><div id=b></div></body></html>")
    drawn = page.evaluate("""(html) => {
      document.getElementById('a').innerHTML = html;
      const doc = new DOMParser().parseFromString(html, 'text/html'), b = document.getElementById('b');
      for (const n of Array.from(doc.body.childNodes)) b.appendChild(document.adoptNode(n));
      return [document.getElementById('a').innerText, b.innerText]; }""", fragment)
    assert set(TOKEN.findall(drawn[0])) == {"tk2"} and set(TOKEN.findall(drawn[1])) == {"tk1", "tk2"}
    assert set(TOKEN.findall(blank_hidden(fragment))) == {"tk1", "tk2"}
    assert set(TOKEN.findall(passage_view(fragment))) == {"tk2"}
