"""What a reader sees of an answer or a passage that holds HTML, decided as a browser decides it.

Model output and web pages are shown through renderers. :func:`scan` reads a text once (linear time: one
pass over its tags with bounded patterns, a bounded element stack, nothing backtracked) and sorts every
character into one of four classes:

* **shown**: text a browser renders where a reader can see it;
* **hidden**: text a browser does not render at all (it is not in the page's ``innerText``): comments,
  ``<script>``/``<style>``/``<template>``/``<title>`` contents, elements with the ``hidden``
  attribute, ``display:none``, ``visibility:hidden`` (a child can set ``visibility:visible`` again, as in
  CSS), and the markup itself (tags and their attribute values are never text a reader sees);
* **obscured**: text a browser renders that a reader cannot see, or where the guard cannot tell:
  ``opacity`` near 0, transparent text, text in the colour of its background (white on the white page
  too; a ``<font>``'s colour is read as a style's), a font under 4px, letters spaced -4px or closer,
  ``clip``/``clip-path``/``transform``/``filter``, an offset of 1,000px or more (16px, a line, towards the
  page's start, where no reader can scroll),
  a box under 2px with ``overflow:hidden``, a closed ``<details>``, a style the guard cannot read
  (``var()``, ``calc()``, escapes), and, where the text carries a stylesheet, everything; and the attribute
  text a browser draws on the page: an image's ``alt`` (drawn where the image does not load, which the guard
  cannot tell), a form field's ``value`` and ``placeholder``, an option's ``label``, an inline frame's
  ``srcdoc``, and a document carried as a ``data:`` or ``javascript:`` URL in a frame, an embed, an object or
  (SVG) an image (:func:`citebound.text.css.displayed_attributes`);
* **uncertain** (passages only): a tag never closed before the end, ``<textarea>``/``<select>`` and the
  like, an ``<xmp>``'s text (drawn as written, its tags too), a ``<noscript>``'s (drawn where a renderer parses
  the text without scripting, as HTML sanitisers do). An answer keeps it as text.

A *word in an attribute* never hides anything: ``style="overflow:hidden"``, ``class="hidden-xs"`` and
``title="a hidden gem"`` are shown. Other attribute values (a ``title`` tooltip, ``aria-label``) are not text
on the page: they are markup. Two views follow:

* :func:`blank_hidden` (the answer): hidden characters become spaces, at the same offsets, so every
  claim and marker a reader sees is checked; :func:`scan` lists the rest (``spans[OBSCURED]``), and the guard makes
  every citation of a sentence that holds obscured text ``unverified`` (it cannot tell what the reader
  takes the claim to be);
* :func:`passage_view` (a passage): only shown text is left; the rest supports nothing.

>>> blank_hidden("Aspirin cures migraine<!-- in a trial of 12 -->.") == "Aspirin cures migraine" + " " * 25 + "."
True
>>> blank_hidden('<div style="overflow:hidden">Seen [2].</div>').strip()
'Seen [2].'
>>> passage_view('ATP <span style="color:transparent">is made by mitochondria</span>.').split()
['ATP', '.']
>>> scan('Seen [1] <img src="f.png" alt="Aspirin cures cancer [2]">.').spans[OBSCURED]
[(31, 55)]
>>> drop_invisible("cu\\u200bres")
'cures'
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from citebound.text.css import VOID, State, displayed_attributes, element_state, unreadable  # noqa: F401 (re-exported)
from citebound.text.html_lex import BOGUS, MAX_ATTRS, MAX_TAG, TAG_OPEN, WS_CLASS, ascii_lower, attributes, comment_end, script_end  # noqa: F401

# zero-width and other invisible format characters
INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")

SHOWN, HIDDEN, OBSCURED, UNCERTAIN = 0, 1, 2, 3

MAX_DEPTH = 256  # open elements; deeper, the guard cannot tell (obscured)

# elements whose contents are raw text up to their close tag
_RAW_HIDDEN = {"script", "style", "title", "iframe", "noembed", "noframes"}
# drawn: an <xmp>'s text as written, its tags too; a text area's in a box; a <noscript>'s where the renderer parsed
# the text without scripting (DOMParser, as HTML sanitisers do), not where it set it as an element's HTML
_RAW_UNCERTAIN = {"textarea", "xmp", "noscript"}
# opening one of these closes an open <p> (HTML's "close a p element"); an <li> closes an open <li> likewise
_CLOSES_P = {"address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl",
             "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
             "hgroup", "hr", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "ul", "li",
             "dd", "dt", "listing", "plaintext", "search"}
# text inside these moves in ways the guard does not model (a table foster-parents text out of a hidden
# element): where the text holds one, what looks hidden is uncertain (an answer checks it, a passage drops it)
_TREE_CHANGERS = {"table", "tbody", "thead", "tfoot", "tr", "td", "th", "caption", "colgroup", "frame", "html",
                  "body", "plaintext", "image", "frameset", "applet", "head"}  # a <head> in a body is ignored
# close tags of formatting elements run HTML's adoption agency; the others stop at a "special" element
_FORMATTING = {"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"}
_SPECIAL = _CLOSES_P | {"li", "dd", "dt", "template", "iframe", "img", "br", "hr", "object", "select", "textarea",
                        "button", "marquee", "applet", "caption", "td", "th", "tr", "table"}
# a <p> is closed by the tags above only where it is in "button scope": none of these stands between
_BUTTON_SCOPE = {"applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button"}
# an <li> (a <dd>, a <dt>) closes an open one only where no special element but these stands between
_LIST_SCOPE_OPEN = {"address", "div", "p"}


_SHEET = re.compile(r"<style\b|<link\b[^<>]{0,2000}stylesheet")
_PAGE_TAG = re.compile(r"</?(?:html|body)\b")


def _shadow_root(lower: str) -> bool:
    return "shadowroot" in lower and "<template" in lower


def restyles(text: str) -> str | None:
    """What in ``text`` can change how all of a page's text is drawn, the text before it too: a stylesheet, a
    declarative shadow root, an ``<html>`` or ``<body>`` tag (a page's parser gives their attributes, ``hidden``
    or a style, to the whole page); None when nothing. A stream, guarded sentence by sentence, cannot take back
    what it sent before one (:meth:`citebound.guarding.stream.StreamAssembler.blocked` stops there).

    >>> restyles("Fine [1]."), restyles("x <STYLE>p{}</STYLE>"), restyles("<body hidden>")
    (None, 'a stylesheet', 'an <html> or <body> tag')
    """
    lower = ascii_lower(text)
    if _SHEET.search(lower):
        return "a stylesheet"
    if _shadow_root(lower):
        return "a declarative shadow root"
    return "an <html> or <body> tag" if _PAGE_TAG.search(lower) else None


@dataclass
class Visibility:
    """One scan of a text: per class, the (start, end) spans; ``elements`` are the spans of whole elements
    that obscure (a stream must not cut inside one: the cut would lose what hides the rest)."""

    text: str
    spans: dict[int, list[tuple[int, int]]] = field(default_factory=lambda: {HIDDEN: [], OBSCURED: [],
                                                                              UNCERTAIN: []})
    hidden_regions: int = 0  # comments and hidden elements (not tags)
    elements: list[tuple[int, int]] = field(default_factory=list)
    open_to_end: int | None = None  # where an element, comment or tag that the end of the text cut starts

    def _add(self, kind: int, lo: int, hi: int) -> None:
        if hi <= lo or kind == SHOWN:
            return
        runs = self.spans[kind]
        if runs and runs[-1][1] >= lo:
            runs[-1] = (runs[-1][0], max(runs[-1][1], hi))
        else:
            runs.append((lo, hi))


class _Scanner:
    """One pass of :func:`scan` (HTML's tree building, as far as visibility needs it)."""

    def __init__(self, text: str):
        self.text, self.lower = text, ascii_lower(text)  # offsets in one are offsets in the other
        self.vis = Visibility(text)
        # a declarative shadow root (<template shadowrootmode=open>) is drawn where the text is parsed as a page and
        # inert where it is set as an element's HTML, and it hides its host's own text: the guard cannot tell, so the
        # text is as one that carries a stylesheet (everything obscured) and its hidden text is checked too
        shadow = _shadow_root(self.lower)
        self.sheet = shadow or bool(_SHEET.search(self.lower))
        self.tree = shadow or bool(re.search(r"</?(?:{})\b".format("|".join(sorted(_TREE_CHANGERS))), self.lower))
        self.broken = False  # from here on the guard cannot tell what a browser shows (misnested, unreadable)
        self.stack: list[tuple[str, State, int]] = []  # (tag, the state inside, where its open tag starts)
        # where on the stack each tag name, each special element, each button-scope element and each list-scope
        # stop stands (ascending): every scope question is answered from their last entries, so a tag costs O(1)
        # (amortised) however deep the stack is, never a walk down it
        self.at: dict[str, list[int]] = {}
        self.special: list[int] = []
        self.button: list[int] = []
        self.list_stop: list[int] = []
        self.base = State(obscured=self.sheet)

    def state(self) -> State:
        return self.stack[-1][1] if self.stack else self.base

    def text_class(self) -> int:
        st = self.state()
        if st.hidden or st.invisible:  # where the tree may differ, hidden text may be shown: checked, fails closed
            return OBSCURED if self.tree or self.broken else HIDDEN
        if st.obscured:
            return OBSCURED
        return UNCERTAIN if st.uncertain or self.broken else SHOWN

    def add_text(self, lo: int, hi: int) -> None:
        self.vis._add(self.text_class(), lo, hi)

    def push(self, tag: str, inner: State, lt: int) -> None:
        i = len(self.stack)
        self.stack.append((tag, inner, lt))
        self.at.setdefault(tag, []).append(i)
        for flag, where in ((_SPECIAL, self.special), (_BUTTON_SCOPE, self.button)):
            if tag in flag:
                where.append(i)
        if tag in _SPECIAL and tag not in _LIST_SCOPE_OPEN:
            self.list_stop.append(i)

    def last(self, *names: str) -> int:
        """Where the last open element of these names stands on the stack (-1: none open)."""
        return max((self.at[n][-1] for n in names if self.at.get(n)), default=-1)

    def pop_to(self, k: int, at: int) -> None:
        for name, st, start in reversed(self.stack[k:]):
            if st.obscured and not self.base.obscured:
                self.vis.elements.append((start, at))
            self.at[name].pop()
        for where in (self.special, self.button, self.list_stop):
            while where and where[-1] >= k:
                where.pop()
        del self.stack[k:]

    def displayed(self, tag: str, attrs: dict[str, str], where: dict[str, tuple[int, int]]) -> list[tuple[int, int]]:
        """The spans of the element's attribute values a browser may draw (none where the element is not rendered)."""
        names = displayed_attributes(tag, attrs)
        if not names:
            return []
        inner = element_state(self.state(), tag, attrs, self.sheet)
        if (inner.hidden or inner.invisible) and not (self.tree or self.broken):
            return []
        return sorted(where[n] for n in names if n in where and where[n][1] > where[n][0])

    def close(self, tag: str, at: int) -> None:
        """An end tag: pop to its element, as HTML does (an end tag that matches nothing is ignored)."""
        k = self.last(tag)
        if tag not in _SPECIAL and self.special and self.special[-1] > k:  # a special element stands between
            if tag in _FORMATTING:
                self.broken = True  # the adoption agency moves things: the guard cannot tell from here
            return  # "any other end tag" stops at a special element
        if k < 0:
            return
        st = self.stack[k][1]
        if tag in _FORMATTING and any(s != st for _, s, _ in self.stack[k + 1:]):
            self.broken = True  # misnested formatting: the adoption agency rearranges what is inside
        self.pop_to(k, at)

    def open(self, tag: str, attrs: dict[str, str], lt: int, tag_end: int) -> int:
        """A start tag ending at ``tag_end``; returns where scanning goes on."""
        # implied end tags: a new <li> closes an open <li> (a <dd> or <dt> an open <dd> or <dt>) where no special
        # element but <address>, <div> or <p> stands between; then these tags close a <p> in button scope
        same = ("li",) if tag == "li" else ("dd", "dt") if tag in ("dd", "dt") else ()
        if same and (k := self.last(*same)) >= 0 and self.list_stop[-1] == k:
            self.pop_to(k, lt)
        if tag in _CLOSES_P and (k := self.last("p")) >= 0 and (not self.button or self.button[-1] < k):
            self.pop_to(k, lt)
        parent = self.state()
        inner = element_state(parent, tag, attrs, self.sheet)
        if tag in _RAW_HIDDEN or tag in _RAW_UNCERTAIN:
            close = re.compile(rf"</{re.escape(tag)}[{WS_CLASS}/>]").search(self.lower, tag_end)
            hi = len(self.text) if close is None else (self.text.find(">", close.start()) + 1 or len(self.text))
            if tag == "script" and close is not None:
                end = script_end(self.lower, tag_end)  # a double-escaped script runs past its first </script>
                if end is None or end > close.start():
                    late = len(self.text) if end is None else (self.text.find(">", end) + 1 or len(self.text))
                    self.vis._add(UNCERTAIN, hi, late)  # a browser hides it: an answer checks it, a passage drops it
                    self.vis.hidden_regions += 1
                    if end is None and self.vis.open_to_end is None:
                        self.vis.open_to_end = lt
                    self.vis._add(HIDDEN, tag_end, hi)
                    return late
            if tag in _RAW_HIDDEN:
                self.vis._add(HIDDEN, tag_end, hi)
                self.vis.hidden_regions += 1
            else:
                self.vis._add(HIDDEN if inner.hidden or inner.invisible else OBSCURED if inner.obscured else UNCERTAIN,
                              tag_end, hi)
            if close is None and self.vis.open_to_end is None:
                self.vis.open_to_end = lt
            return hi
        if tag in VOID:
            return tag_end
        if (inner.hidden and not parent.hidden) or (inner.invisible and not parent.invisible):
            self.vis.hidden_regions += 1
        if len(self.stack) >= MAX_DEPTH:
            inner = State(inner.hidden, inner.invisible, True, inner.uncertain, inner.colour, inner.backdrop)
        self.push(tag, inner, lt)
        return tag_end

    def run(self) -> Visibility:
        text, vis, pos = self.text, self.vis, 0
        while pos < len(text):
            lt = text.find("<", pos)
            if lt < 0:
                self.add_text(pos, len(text))
                break
            self.add_text(pos, lt)
            if text.startswith("<!--", lt):
                end = comment_end(text, lt)
                pos = len(text) if end < 0 else end
                vis._add(HIDDEN, lt, pos)
                vis.hidden_regions += 1
                if end < 0:
                    vis.open_to_end = lt
                continue
            m = TAG_OPEN.match(text, lt)
            if not m:
                end = text.find(">", lt + 2, lt + MAX_TAG) if BOGUS.match(text, lt) else -1
                if end >= 0:
                    vis._add(HIDDEN, lt, end + 1)
                    pos = end + 1
                else:
                    self.add_text(lt, lt + 1)
                    pos = lt + 1
                continue
            parsed = attributes(text, lt, m.end())
            if parsed is None:  # a tag the guard cannot read within reach: a browser may make it anything
                if vis.open_to_end is None and len(text) - lt <= MAX_TAG:
                    vis.open_to_end = lt  # a stream may still complete it
                self.broken = True
                self.add_text(lt, lt + 1)
                pos = lt + 1
                continue
            attrs, tag_end, where = parsed
            tag = ascii_lower(m.group(2))
            at = lt
            for lo, hi in [] if m.group(1) else self.displayed(tag, attrs, where):
                vis._add(HIDDEN, at, lo)
                vis._add(OBSCURED, lo, hi)  # drawn as text, or not (an image that loads): the guard cannot tell
                at = hi
            vis._add(HIDDEN, at, tag_end)  # the markup itself
            if at > lt and not self.base.obscured:
                vis.elements.append((lt, tag_end))  # a stream must not cut inside the tag
            if m.group(1):
                self.close(tag, tag_end)
                pos = tag_end
            else:
                pos = self.open(tag, attrs, lt, tag_end)
        first = next((start for _, st, start in self.stack
                      if st.hidden or st.invisible or st.obscured or st.uncertain), None)
        if first is not None and not self.base.obscured:
            vis.open_to_end = first if vis.open_to_end is None else min(vis.open_to_end, first)
        self.pop_to(0, len(text))
        return vis


def scan(text: str) -> Visibility:
    """Sort every character of ``text`` into shown, hidden, obscured and uncertain (the module's rules)."""
    if "<" not in text:
        return Visibility(text)
    return _Scanner(text).run()


def blank_spans(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    out, pos = [], 0
    for lo, hi in sorted(spans):
        if hi <= pos:
            continue
        lo = max(lo, pos)
        out += [text[pos:lo], " " * (hi - lo)]
        pos = hi
    out.append(text[pos:])
    return "".join(out)


def hidden_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every region a browser does not render: comments, hidden elements and markup."""
    return scan(text).spans[HIDDEN]


def blank_hidden(text: str) -> str:
    """The answer as checked: ``text`` with every region a browser does not render replaced by spaces (same
    length, so spans stay valid). Obscured and uncertain text stays: it is checked, and fails closed."""
    return blank_spans(text, scan(text).spans[HIDDEN])


def passage_view(text: str) -> str:
    """The passage as it can support: only shown text, the rest as spaces (same length), invisible
    characters dropped (so offsets move only where those are)."""
    v = scan(text)
    return drop_invisible(blank_spans(text, v.spans[HIDDEN] + v.spans[OBSCURED] + v.spans[UNCERTAIN]))


def drop_invisible(text: str) -> str:
    """``text`` without zero-width and other invisible format characters."""
    return INVISIBLE.sub("", text)


def safe_link(url: str) -> bool:
    """Whether a link target is http(s) (or relative): ``javascript:``, ``data:`` and the like are not.

    >>> safe_link("https://a.org/x"), safe_link(" JavaScript:alert(1)"), safe_link("/rel")
    (True, False, True)
    """
    u = drop_invisible(url).strip().lower()
    scheme = re.match(r"([a-z][a-z0-9+.-]*):", u)
    return scheme is None or scheme.group(1) in ("http", "https")
