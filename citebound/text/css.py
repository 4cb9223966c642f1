"""The style rules of :mod:`citebound.text.visible`: what an element's ``style`` attribute (and a few
attributes and tags) pass on to its contents: hidden, invisible (``visibility``, which a descendant can undo),
obscured (rendered, but a reader cannot see it, or the guard cannot tell), the text colour and the background
painted behind it. Only inline styles are read; a stylesheet in the text makes everything obscured (the
scanner's business)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from citebound.text.html_lex import ascii_lower

HIDDEN_TAGS = {"template"}  # (a <head> hides nothing: a browser moves its text, and any element but
# <title>, <style>, <script> and the like, into the body, and ignores one that opens in the body)
UNCERTAIN_TAGS = {"select", "datalist", "option", "optgroup", "svg", "math", "object", "video", "audio", "canvas",
                   "map", "frameset", "dialog", "button", "meter", "progress", "ruby", "rt", "rp", "marquee"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
         "param", "keygen", "image"}
_NAMED_COLOURS = {"white": (255, 255, 255), "black": (0, 0, 0), "red": (255, 0, 0), "green": (0, 128, 0),
                  "blue": (0, 0, 255), "yellow": (255, 255, 0), "gray": (128, 128, 128), "grey": (128, 128, 128),
                  "silver": (192, 192, 192), "snow": (255, 250, 250), "ivory": (255, 255, 240),
                  "whitesmoke": (245, 245, 245), "ghostwhite": (248, 248, 255), "navy": (0, 0, 128),
                  "orange": (255, 165, 0), "purple": (128, 0, 128)}
_HEX = re.compile(r"#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$")
_RGB = re.compile(r"rgba?\(\s*([\d.]+%?)[\s,]+([\d.]+%?)[\s,]+([\d.]+%?)(?:\s*[,/]\s*([\d.]+%?))?\s*\)$")
_CSS_WS = " \t\n\r\f"
_IMPORTANT = re.compile(r"![ \t\n\r\f]*important[ \t\n\r\f]*$", re.I | re.A)
_LENGTH = re.compile(r"(-?[\d.]+)(px|pt|em|rem|%|vw|vh|ch|ex|cm|mm|in)?$")
_OFFSET_PROPS = ("left", "top", "right", "bottom", "margin-left", "margin-top", "margin-right", "margin-bottom",
                 "margin", "text-indent", "inset", "translate")
# offsets that move text towards the page's start, which no reader can scroll to: a line's height (16px) or more
# there can take a word, or the whole text, off the page (a shorthand's every part is read so)
_TOWARDS_START = ("left", "top", "margin-left", "margin-top", "margin", "text-indent", "inset", "translate")
LINE_PX = 16.0
OVERLAP_PX = -4.0  # letter spacing this negative (a quarter of a 16px letter) or more draws letters over each other
_SIZE_PROPS = ("width", "height", "max-width", "max-height")


@dataclass(frozen=True)
class State:
    """What an element passes on to its contents."""

    hidden: bool = False  # display:none or inside one: nothing inside can be shown again
    invisible: bool = False  # visibility:hidden inherited (a descendant may set visible)
    obscured: bool = False  # rendered, but a reader cannot see it (or the guard cannot tell)
    uncertain: bool = False
    colour: tuple | None = None  # the inherited text colour (r, g, b, alpha); None: the default (black)
    backdrop: tuple = (255, 255, 255, 1.0)  # the nearest background painted behind (the page's is white)


def _colour(value: str) -> tuple | None:
    v = value.strip().lower()
    if v == "transparent":
        return (0, 0, 0, 0.0)
    if v in _NAMED_COLOURS:
        return (*_NAMED_COLOURS[v], 1.0)
    m = _HEX.match(v)
    if m:
        h = m.group(1)
        if len(h) in (3, 4):
            h = "".join(c * 2 for c in h)
        alpha = int(h[6:8], 16) / 255 if len(h) == 8 else 1.0
        return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), alpha)
    m = _RGB.match(v)
    if m:
        def channel(x: str, scale: float) -> float:
            return float(x[:-1]) * scale / 100 if x.endswith("%") else float(x)
        try:
            r, g, b = (channel(m.group(i), 255) for i in (1, 2, 3))
            a = channel(m.group(4), 1) if m.group(4) else 1.0
        except ValueError:
            return None
        return (r, g, b, min(a, 1.0))
    return None


def _luminance(c: tuple) -> float:
    def lin(x: float) -> float:
        x = min(max(x, 0), 255) / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])


def unreadable(colour: tuple, backdrop: tuple) -> bool:
    """Text a reader cannot tell from its background: nearly transparent, or a contrast ratio under 1.5
    (WCAG's ratio; black on white is 21).

    >>> unreadable((255, 255, 255, 1.0), (255, 255, 255, 1.0)), unreadable((0, 0, 0, 1.0), (255, 255, 255, 1.0))
    (True, False)
    """
    if colour[3] < 0.1:
        return True
    hi, lo = sorted((_luminance(colour), _luminance(backdrop)), reverse=True)
    return (hi + 0.05) / (lo + 0.05) < 1.5


def _length_px(value: str) -> float | None:
    m = _LENGTH.match(value.strip().lower())
    if not m:
        return None
    try:
        x = float(m.group(1))
    except ValueError:
        return None
    unit = m.group(2) or "px"
    return x * {"px": 1, "pt": 4 / 3, "em": 16, "rem": 16, "%": 0.16, "vw": 8, "vh": 6, "ch": 8, "ex": 8,
                "cm": 37.8, "mm": 3.78, "in": 96}[unit]


# a style's tokens, as far as splitting it needs: a string, a comment, a bracket, a ';', a '/', any other run
_STYLE_TOKEN = re.compile(r"""'[^'\n\r\f]*'|"[^"\n\r\f]*"|/\*.*?\*/|[()\[\]{};'"/]|[^()\[\]{};'"/]+""", re.S)
_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _split_declarations(style: str) -> list[str] | None:
    """A style's declarations, split where CSS splits them: at each ';' outside a string, a comment and a bracket
    (``x:';display:none;'`` is one declaration, of an unknown property); a comment is a space. None where the
    guard cannot read the style: an escape, a string or a comment left open, a bracket that does not match."""
    if "\\" in style:
        return None
    if not any(c in style for c in "'\"()[]{}/"):
        return style.split(";")
    out, cur, want = [], [], []
    for m in _STYLE_TOKEN.finditer(style):
        tok = m.group()
        if tok in ("'", '"') or (tok == "/" and style.startswith("*", m.end())):
            return None  # a string cut by a line end or never closed, a comment never closed
        if tok.startswith("/*"):
            cur.append(" ")
            continue
        if tok in _CLOSER:
            want.append(_CLOSER[tok])
        elif tok in (")", "]", "}") and (not want or want.pop() != tok):
            return None
        elif tok == ";" and not want:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(tok)
    if want:
        return None
    out.append("".join(cur))
    return out


def _declarations(style: str) -> dict[str, str] | None:
    """The declarations of a style attribute, lower-cased; None when the guard cannot read them."""
    decls = _split_declarations(style)
    if decls is None:
        return None
    out: dict[str, str] = {}
    important: set[str] = set()
    for decl in decls:
        name, colon, value = decl.partition(":")
        if not colon:
            continue
        # CSS's whitespace and ASCII case only: "display:\u00a0none" is not "none" to a browser (the no-break space
        # starts an identifier), so it must not hide anything here
        name, value = ascii_lower(name.strip(_CSS_WS)), value.strip(_CSS_WS)
        bang = _IMPORTANT.search(value)
        if bang:
            value = value[:bang.start()].strip(_CSS_WS)
            important.add(name)
        elif name in important:
            continue  # a later declaration does not override an !important one unless it is !important too
        out[name] = ascii_lower(value)
    return out


def element_state(parent: State, tag: str, attrs: dict[str, str], sheet: bool) -> State:
    """The state an element opened in ``parent`` gives its contents."""
    hidden, invisible, obscured = parent.hidden, parent.invisible, parent.obscured
    uncertain = parent.uncertain or tag in UNCERTAIN_TAGS
    colour, backdrop = parent.colour, parent.backdrop
    decls = _declarations(attrs["style"]) if "style" in attrs else {}
    if decls is None:
        return State(hidden, invisible, True, uncertain, colour, backdrop)
    if tag == "font" and "color" in attrs:  # a presentational colour, below the style's own
        c = _colour(attrs["color"])
        obscured |= c is None  # HTML's legacy colour parsing makes a colour of any word: the guard cannot tell which
        colour = c if c is not None else colour
    display = decls.get("display", "")
    if display == "none" or ("hidden" in attrs and not display and attrs["hidden"].lower() != "until-found"):
        hidden = True
    if "hidden" in attrs and attrs["hidden"].lower() == "until-found":
        obscured = True
    if tag in HIDDEN_TAGS or (tag == "input" and attrs.get("type", "").lower() == "hidden"):
        hidden = True
    vis = decls.get("visibility")
    if vis in ("hidden", "collapse"):
        invisible = True
    elif vis == "visible":
        invisible = False
    elif vis is not None and vis not in ("inherit", "unset", "initial", "revert"):
        obscured = True
    if tag == "details" and "open" not in attrs:
        obscured = True  # a closed <details> shows its <summary> only; the guard does not split the two
    if sheet and tag not in VOID:
        obscured = True  # a stylesheet in the text may restyle any element: the guard cannot tell
    for name, value in decls.items():
        if any(f in value for f in ("var(", "calc(", "env(", "attr(", "expression(", "url(")):
            obscured = True
        elif name == "opacity":
            try:
                obscured |= float(value.rstrip("%")) / (100 if value.endswith("%") else 1) < 0.1
            except ValueError:
                obscured = True
        elif name == "font-size":
            px = _length_px(value)
            obscured |= px is not None and px < 4 or value in ("0",)
        elif name in ("clip", "clip-path", "transform", "filter", "mask", "mask-image", "-webkit-mask",
                      "-webkit-text-fill-color", "-webkit-text-stroke", "zoom", "scale", "rotate",
                      "content-visibility", "backdrop-filter", "mix-blend-mode", "text-shadow",
                      "-webkit-background-clip", "background-clip", "columns", "writing-mode", "perspective"):
            if value not in ("none", "auto", "normal", "visible", "initial", "unset", "inherit", "", "1", "0"):
                obscured = True
            elif name == "zoom" and value == "0":
                obscured = True
        elif name in _OFFSET_PROPS:
            for part in value.split():
                px = _length_px(part)
                if px is not None and (abs(px) >= 1000 or name in _TOWARDS_START and px <= -LINE_PX):
                    obscured = True
        elif name == "letter-spacing":
            px = _length_px(value)
            obscured |= px is not None and px <= OVERLAP_PX
        elif name == "color":
            c = _colour(value)
            if c is None and value not in ("inherit", "initial", "unset", "currentcolor"):
                obscured = True
            elif c is not None:
                colour = c
        elif name in ("background", "background-color"):
            c = _colour(value) if name == "background-color" else _colour(value.split()[0]) if value.split() else None
            if c is not None and c[3] >= 0.99:
                backdrop = c
            elif value not in ("none", "transparent", "initial", "unset", "inherit", "") and c is None:
                obscured = True  # an image or a gradient behind the text: the guard cannot tell its contrast
    overflow = decls.get("overflow", "") + " " + decls.get("overflow-x", "") + " " + decls.get("overflow-y", "")
    if "hidden" in overflow or "clip" in overflow or "scroll" in overflow or "auto" in overflow:
        for name in _SIZE_PROPS:
            px = _length_px(decls.get(name, "x"))
            if px is not None and px < 2:
                obscured = True
    if colour is not None and unreadable(colour, backdrop):
        obscured = True
    elif colour is None and unreadable((0, 0, 0, 1.0), backdrop):
        obscured = True
    return State(hidden, invisible, obscured, uncertain, colour, backdrop)


# attributes whose text a browser draws on the page: an image's alt (in place of an image that does not load,
# which the guard cannot tell), a form field's value and placeholder, an option's label (shown in place of its
# text), an inline frame's srcdoc (a whole document, drawn in the frame), a document the answer carries as a URL
# (a frame's, an embed's or an object's data: or javascript: URL) and an SVG image carried as a data: URL (its
# <text> is drawn). Input types not listed draw their value as a text box or a button label (an unknown type is a
# text box).
_NO_VALUE_INPUTS = {"hidden", "checkbox", "radio", "file", "color", "range", "image", "password"}
_NO_PLACEHOLDER_INPUTS = (_NO_VALUE_INPUTS - {"password"}) | {"submit", "reset", "button", "date", "datetime-local",
                                                              "month", "time", "week"}


_FRAMES = {"iframe": "src", "frame": "src", "embed": "src", "object": "data"}  # the attribute naming the document
_URL_EDGES = "".join(map(chr, range(33)))  # C0 controls and space: a URL parser strips them from both ends


def _carried(url: str, image: bool) -> bool:
    """Whether a URL carries its document in the answer: a data: URL (for an image, an SVG one: its <text> is
    drawn) or, for a frame, a javascript: URL. Read as a browser reads a URL: the ends stripped of spaces and
    controls, tabs and newlines removed anywhere, the scheme in any case (``" JAVA&#9;SCRIPT:'x'"`` runs)."""
    url = re.sub("[\t\n\r]", "", url).strip(_URL_EDGES).lower()
    if url.startswith("data:"):
        return not image or "svg" in url.split(",", 1)[0]
    return not image and url.startswith("javascript:")


def displayed_attributes(tag: str, attrs: dict[str, str]) -> list[str]:
    """The attributes of an element whose values a browser may draw as text a reader sees.

    >>> displayed_attributes("img", {"alt": "x"}), displayed_attributes("input", {"type": "checkbox"})
    (['alt'], [])
    >>> displayed_attributes("input", {}), displayed_attributes("input", {"type": " Password "})
    (['value', 'placeholder'], ['placeholder'])
    >>> displayed_attributes("iframe", {"src": "data:text/html,<p>x"}), displayed_attributes("iframe", {"src": "/p"})
    (['srcdoc', 'src'], ['srcdoc'])
    """
    def svg() -> list[str]:  # an image's src, when it carries an SVG document
        return ["src"] if _carried(attrs.get("src", ""), image=True) else []

    if tag in ("img", "image"):  # <image> is an <img> in HTML
        return ["alt"] + svg()
    if tag == "textarea":
        return ["placeholder"]
    if tag in ("option", "optgroup"):
        return ["label"]
    if tag in _FRAMES:
        carried = [_FRAMES[tag]] if _carried(attrs.get(_FRAMES[tag], ""), image=False) else []
        return (["srcdoc"] if tag == "iframe" else []) + carried
    if tag != "input":
        return []
    kind = attrs.get("type", "").strip().lower() or "text"
    if kind == "image":
        return ["alt"] + svg()
    return ([] if kind in _NO_VALUE_INPUTS else ["value"]) + ([] if kind in _NO_PLACEHOLDER_INPUTS else ["placeholder"])
