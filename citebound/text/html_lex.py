r"""HTML read at the level of its tokens, as a browser's tokenizer reads it, for :mod:`citebound.text.visible`: a
start tag's attributes (bounded: :data:`MAX_TAG` characters a tag, :data:`MAX_ATTRS` attributes), where a comment
ends, and where a ``<script>``'s text ends. Every pattern is anchored and bounded, so each read is linear.

Whitespace is HTML's (tab, line feed, form feed, carriage return, space), not Python's ``\s``: a no-break space
or a vertical tab continues a name as it does in a browser. A tag the guard cannot read as a browser does (a name
or an unquoted value longer than it reads, more attributes than it keeps) is unreadable (None), never read in
part: the part left would start another attribute (``hidden``) that the browser does not see."""
from __future__ import annotations

import html
import re

MAX_TAG = 4000  # characters one tag may take, '<' to '>' (a longer one is text)
MAX_ATTRS = 100  # distinct attributes one tag may have (one more and the tag is unreadable: it could be `hidden`)

WS = "\t\n\f\r "  # HTML's whitespace (a carriage return is a line feed by then)
_NAME_ENDS, _ATTR_NAME_ENDS, _VALUE_ENDS = WS + "/>", WS + "/>=", WS + ">"  # what ends a name, a value
WS_CLASS = "".join(f"\\x{ord(c):02x}" for c in WS)  # the same, in a pattern's character class
TAG_OPEN = re.compile(rf"<(/?)([a-zA-Z][^{WS_CLASS}/>\x00]{{0,200}})")
_ATTR_NAME = re.compile(rf"[{WS_CLASS}/]*([^{WS_CLASS}/>][^{WS_CLASS}/>=]{{0,200}})?")
_ATTR_VALUE = re.compile(rf"[{WS_CLASS}]*=[{WS_CLASS}]*(?:\"([^\"]{{0,3000}})\"|'([^']{{0,3000}})'|([^{WS_CLASS}>]{{0,3000}}))")
_TAG_END = re.compile(rf"[{WS_CLASS}]*/?>")
_COMMENT_CLOSE = re.compile(r"--!?>")
BOGUS = re.compile(r"<(?:!|\?|/[^a-zA-Z>])")  # <!DOCTYPE …>, <?xml …?>, </3 …>: bogus comments to the next '>'

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    """``text`` with A-Z lowered and nothing else changed, as HTML matches names: its length and offsets stay
    (``str.lower`` turns one U+0130 into two characters).

    >>> ascii_lower("DIV\u0130"), len(ascii_lower("\u0130" * 3))
    ('div\u0130', 3)
    """
    return text.translate(_LOWER)


def attributes(text: str, lt: int, pos: int) -> tuple[dict[str, str], int, dict[str, tuple[int, int]]] | None:
    """The attributes of the tag opened at ``lt``, read from ``pos`` (after its name), where the tag ends, and
    where each value lies in ``text`` (as written, before character references are read); None when the tag
    does not end (its '>' included) within :data:`MAX_TAG` characters of its '<', or at all, or when the guard
    cannot read it whole (a name of more than 201 characters, an unquoted value of more than 3000, more than
    :data:`MAX_ATTRS` distinct attributes)."""
    attrs: dict[str, str] = {}
    where: dict[str, tuple[int, int]] = {}
    limit = lt + MAX_TAG
    if pos < len(text) and text[pos] not in _NAME_ENDS:
        return None  # the tag's name goes on past what the guard reads (or holds a NUL)
    while pos < limit:
        end = _TAG_END.match(text, pos)
        if end:
            return (attrs, end.end(), where) if end.end() - lt <= MAX_TAG else None
        m = _ATTR_NAME.match(text, pos)
        if not m.group(1):
            return None  # the end of the text
        pos = m.end()
        if pos < len(text) and text[pos] not in _ATTR_NAME_ENDS:
            return None  # a name longer than the guard reads
        v = _ATTR_VALUE.match(text, pos)
        value, span = "", (pos, pos)
        if v:
            if v.group(3) is not None and v.group(3)[:1] in ("\"", "'"):
                return None  # a quoted value that does not close within reach
            if v.group(3) is not None and v.end() < len(text) and text[v.end()] not in _VALUE_ENDS:
                return None  # an unquoted value longer than the guard reads
            g = next(k for k in (1, 2, 3) if v.group(k) is not None)
            value, span = v.group(g), v.span(g)
            pos = v.end()
        name = ascii_lower(m.group(1))
        if name not in attrs:  # a repeated attribute is ignored, as a browser ignores it
            if len(attrs) == MAX_ATTRS:
                return None
            attrs[name] = html.unescape(value)
            where[name] = span
    return None


def comment_end(text: str, lt: int) -> int:
    """Where the comment opened by ``<!--`` at ``lt`` ends, as HTML's tokenizer ends it (-1: at the end of the text):
    ``<!-->`` and ``<!--->`` are whole (empty) comments, and ``--!>`` closes one as ``-->`` does. A reader sees
    what follows them, so the guard must check it.

    >>> [comment_end(t, 0) for t in ("<!-->x", "<!--->x", "<!---->x", "<!-- a --!>x", "<!-- a -- >x")]
    [5, 6, 7, 11, -1]
    """
    if text.startswith(">", lt + 4):
        return lt + 5
    if text.startswith("->", lt + 4):
        return lt + 6
    m = _COMMENT_CLOSE.search(text, lt + 4)  # stops at the first close: each comment is read once
    return m.end() if m else -1


_SCRIPT_TOKENS = re.compile(rf"<!--|-->|<script[{WS_CLASS}/>]|</script[{WS_CLASS}/>]")


def script_end(lower: str, pos: int) -> int | None:
    """Where a ``<script>``'s contents from ``pos`` end (the start of the ``</script`` that closes it; None: the
    end of the text), by HTML's script-data states: after ``<!--`` a ``<script`` is double-escaped, and until
    ``-->`` or a ``</script`` leaves that, a ``</script>`` does not close the script. ``lower``: the text in
    lower case. One pass.

    >>> script_end("<!--<script></script>x</script>", 0), script_end("x</script>", 0), script_end("<!--", 0)
    (22, 1, None)
    """
    state = "data"
    for m in _SCRIPT_TOKENS.finditer(lower, pos):
        tok = m.group()
        if tok == "<!--":
            if state == "data":
                state = "escaped"
                if lower.startswith(">", m.end()) or lower.startswith("->", m.end()):
                    state = "data"  # <!--> and <!---> leave the escape at once
        elif tok == "-->":
            state = "data"
        elif tok.startswith("<script"):
            if state == "escaped":
                state = "double"
        elif state == "double":
            state = "escaped"
        else:
            return m.start()
    return None
