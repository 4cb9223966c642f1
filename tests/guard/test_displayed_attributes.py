"""Attribute text a browser draws on the page: an image's ``alt`` (in place of an image that does not load),
a form field's ``value`` and ``placeholder``, an option's ``label``, an inline frame's ``srcdoc``, a document
carried as a ``data:`` or ``javascript:`` URL in a frame, an embed or an object, and an SVG image carried as a
``data:`` URL (Chromium draws each: tests/guard/test_visibility_browser.py reads every frame's text). A reader may
see a claim and its marker there, so an answer checks it and fails it closed (obscured: the guard cannot tell
whether the image loads, or how much of a field's box shows); a passage supports nothing with it. Every other
attribute value is markup. Expected classes are read by hand from the HTML standard's rendering of each element."""
import numpy as np
import pytest

from citebound.guarding.guard import guard_answer
from citebound.guarding.stream import commit_point
from citebound.text.css import displayed_attributes
from citebound.text.visible import HIDDEN, OBSCURED, blank_hidden, passage_view, scan

P = ["Aspirin reduces the risk of heart attacks in adults.", "Mitochondria produce ATP in eukaryotic cells."]


def topic(claims, passages):
    """1.0 iff the passage holds the claim's first word (lower case), else 0.0."""
    s = np.array([1.0 if c.split()[0].lower() in p.lower() else 0.0 for c, p in zip(claims, passages)])
    return s, s > 0.5


def classes(frag: str) -> dict[str, int]:
    """The class of each token tk<N> of ``frag`` (every character of one token must share it)."""
    v = scan(frag)
    out = {}
    for tok in sorted({frag[i:i + 3] for i in range(len(frag)) if frag.startswith("tk", i)}):
        at = frag.index(tok)
        kinds = {k for k in (HIDDEN, OBSCURED) for lo, hi in v.spans[k] for i in range(at, at + 3) if lo <= i < hi}
        assert len(kinds) <= 1, (frag, tok, kinds)
        out[tok] = kinds.pop() if kinds else 0
    return out


@pytest.mark.parametrize("frag,expected", [
    ('<img src="f.png" alt="tk1">', {"tk1": OBSCURED}),
    ("<img alt='tk1' src=f.png>", {"tk1": OBSCURED}),
    ("<IMG ALT=tk1>", {"tk1": OBSCURED}),  # unquoted, upper case
    ('<img alt="tk1" alt="tk2">', {"tk1": OBSCURED, "tk2": HIDDEN}),  # the first of two wins, as in HTML
    ('<img title="tk1" data-x="tk2" aria-label="tk3" alt="">', {"tk1": HIDDEN, "tk2": HIDDEN, "tk3": HIDDEN}),
    ('<span alt="tk1">tk2</span>', {"tk1": HIDDEN, "tk2": 0}),  # alt draws nothing on a span
    ('<input value="tk1">', {"tk1": OBSCURED}),  # no type: a text box
    ('<input type="TEXT" value="tk1" placeholder="tk2">', {"tk1": OBSCURED, "tk2": OBSCURED}),
    ('<input type="submit" value="tk1">', {"tk1": OBSCURED}),  # the button's label
    ('<input type="submit" placeholder="tk1">', {"tk1": HIDDEN}),  # a button draws no placeholder
    ('<input type="date" placeholder="tk1">', {"tk1": HIDDEN}),
    ('<input type="frobnicate" value="tk1" placeholder="tk2">', {"tk1": OBSCURED, "tk2": OBSCURED}),  # a text box
    ('<input type="checkbox" value="tk1"><input type="radio" value="tk2">', {"tk1": HIDDEN, "tk2": HIDDEN}),
    ('<input type="hidden" value="tk1">', {"tk1": HIDDEN}),
    ('<input type="password" value="tk1" placeholder="tk2">', {"tk1": HIDDEN, "tk2": OBSCURED}),  # dots; the hint
    ('<input type="image" alt="tk1" value="tk2">', {"tk1": OBSCURED, "tk2": HIDDEN}),
    ('<textarea placeholder="tk1">tk2</textarea>', {"tk1": OBSCURED, "tk2": 0}),  # its contents: uncertain
    ('<select><option label="tk1">tk2</option><optgroup label="tk3"></optgroup></select>',
     {"tk1": OBSCURED, "tk2": 0, "tk3": OBSCURED}),  # an option shows its label in place of its text
    ('<iframe srcdoc="&lt;p&gt;tk1" title="tk2">tk3</iframe>', {"tk1": OBSCURED, "tk2": HIDDEN, "tk3": HIDDEN}),
    ('<iframe src="data:text/html,&lt;p&gt;tk1" name="tk2"></iframe>', {"tk1": OBSCURED, "tk2": HIDDEN}),
    ("<iframe src=\"javascript:'tk1'\"></iframe><iframe src='https://x.org/tk2'></iframe>",
     {"tk1": OBSCURED, "tk2": HIDDEN}),  # a page from elsewhere is not text the answer carries
    ('<iframe src=" JAVA&#9;SCRIPT:tk1"></iframe><iframe src="Data:,tk2"></iframe>', {"tk1": OBSCURED, "tk2": OBSCURED}),
    ('<iframe src="&#1;data:,tk1"></iframe><iframe src="da&#10;ta:,tk2"></iframe>', {"tk1": OBSCURED, "tk2": OBSCURED}),
    ('<iframe src="x data:,tk1"></iframe><iframe src="/data:,tk2"></iframe>', {"tk1": HIDDEN, "tk2": HIDDEN}),
    ('<embed src="data:,tk1"><object data="data:,tk2" src="data:,tk3">tk4</object>',
     {"tk1": OBSCURED, "tk2": OBSCURED, "tk3": HIDDEN, "tk4": 0}),
    ('<frame src="data:,tk1"><embed data="data:,tk2"><object src="data:,tk3"></object>',
     {"tk1": OBSCURED, "tk2": HIDDEN, "tk3": HIDDEN}),  # each reads its own attribute
    ('<img src="data:image/svg+xml,&lt;svg&gt;&lt;text&gt;tk1" alt="tk2">', {"tk1": OBSCURED, "tk2": OBSCURED}),
    ('<img src="DATA:Image/SVG+XML;base64,tk1"><img src="data:image/png;base64,tk2">',
     {"tk1": OBSCURED, "tk2": HIDDEN}),  # a PNG's pixels are a picture, as any image's
    ('<image src="data:image/svg+xml,tk1">tk2', {"tk1": OBSCURED, "tk2": 0}),  # <image> is a void <img>
    ('<input type="image" src="data:image/svg+xml,tk1"><input src="data:image/svg+xml,tk2">',
     {"tk1": OBSCURED, "tk2": HIDDEN}),  # a text box draws no image
    ('<img src="javascript:tk1"><video poster="data:image/svg+xml,tk2"></video>', {"tk1": HIDDEN, "tk2": HIDDEN}),
    ('<div style="display:none"><img alt="tk1"></div>', {"tk1": HIDDEN}),
    ('<img style="display:none" alt="tk1">', {"tk1": HIDDEN}),
    ('<div style="visibility:hidden"><img alt="tk1"></div>', {"tk1": HIDDEN}),
    ('<div style="opacity:0"><img alt="tk1"></div>', {"tk1": OBSCURED}),
    # where a browser may build another tree (a table moves what it cannot hold) or the guard has lost track of
    # it (a formatting element closed across a block), hidden may be shown: drawn text there is checked and fails
    # closed, as the element's own text
    ('<table><div hidden><img alt="tk1"></div></table>', {"tk1": OBSCURED}),
    ('<b><div>a</b></div><div hidden><img alt="tk1"></div>', {"tk1": OBSCURED}),
    ('<!-- <img alt="tk1"> -->', {"tk1": HIDDEN}),
    ('</img alt="tk1">', {"tk1": HIDDEN}),  # an end tag draws nothing
])
def test_which_attribute_text_is_drawn(frag, expected):
    assert classes(frag) == expected
    for tok, cls in expected.items():
        assert (tok in blank_hidden(frag)) is (cls != HIDDEN)  # an answer checks what may be drawn
        assert tok not in passage_view(frag) or cls == 0  # a passage supports with none of it


def test_the_obscured_span_is_the_value_as_written_and_the_rest_of_the_tag_is_markup():
    frag = 'Seen [1] <img src="f.png" alt="Aspirin cures cancer [2]">.'
    lo = frag.index("Aspirin")
    v = scan(frag)
    assert v.spans[OBSCURED] == [(lo, lo + len("Aspirin cures cancer [2]"))]
    assert v.spans[HIDDEN] == [(9, lo), (lo + 24, lo + 26)]  # '<img src="f.png" alt="' and '">'
    assert v.elements == [(9, len(frag) - 1)]  # a stream may not cut inside the tag


@pytest.mark.parametrize("tag,attrs,names", [
    ("img", {}, ["alt"]), ("input", {}, ["value", "placeholder"]), ("input", {"type": ""}, ["value", "placeholder"]),
    ("input", {"type": " Search "}, ["value", "placeholder"]), ("input", {"type": "reset"}, ["value"]),
    ("input", {"type": "range"}, []), ("input", {"type": "file"}, []), ("input", {"type": "color"}, []),
    ("input", {"type": "week"}, ["value"]), ("textarea", {}, ["placeholder"]), ("area", {"alt": "x"}, []),
    ("button", {"value": "x"}, []), ("a", {"title": "x"}, []), ("option", {}, ["label"]), ("optgroup", {}, ["label"]),
    ("iframe", {}, ["srcdoc"]), ("frame", {}, []), ("object", {"data": "x"}, []),
    ("iframe", {"src": "data:,x"}, ["srcdoc", "src"]), ("frame", {"src": "data:,x"}, ["src"]),
    ("embed", {"src": "javascript:x"}, ["src"]), ("object", {"data": "data:,x"}, ["data"]),
    ("img", {"src": "data:image/svg+xml,x"}, ["alt", "src"]), ("img", {"src": "data:,svg"}, ["alt"]),
])
def test_displayed_attributes_by_element_and_type(tag, attrs, names):
    assert displayed_attributes(tag, attrs) == names


def test_a_claim_in_an_image_alt_is_checked_and_fails_closed_with_its_sentence_only():
    answer = ('Aspirin reduces heart attacks [1] <img src="x.png" alt="Aspirin cures cancer [2]">. '
              "Mitochondria produce ATP [2].")
    text, r = guard_answer(answer, P, topic, reattribute=None)
    assert [(a.sentence_index, a.cited, a.action) for a in r.audit] == [
        (0, 1, "unverified"), (0, 2, "unverified"), (1, 2, "verified")]
    assert r.n_citations == 3 and r.review_budget == pytest.approx(2 / 3)
    assert text == ('Aspirin reduces heart attacks [1 UNVERIFIED] <img src="x.png" '
                    'alt="Aspirin cures cancer [2 UNVERIFIED]">. Mitochondria produce ATP [2].')


@pytest.mark.parametrize("answer,actions", [
    ('Aspirin reduces heart attacks [1]. <img alt="A chart.">', ["verified"]),  # its own sentence: no effect
    ('Aspirin reduces heart attacks <img alt="a chart"> [1].', ["unverified"]),  # inside: the claim may read so
    ('Aspirin reduces heart attacks [1]. <input type="checkbox" value="Aspirin cures cancer [2]">', ["verified"]),
    ('Aspirin reduces heart attacks [1]. <div hidden><img alt="Aspirin cures cancer [2]"></div>', ["verified"]),
    ('Mitochondria produce ATP <input value="[0]">.', ["unverified"]),  # index 0, base 0, in a field
    ('Mitochondria produce ATP [2]. <iframe srcdoc="Aspirin cures cancer [1]."></iframe>', ["verified", "unverified"]),
    ('Mitochondria produce ATP [2] <iframe src="data:text/html,Aspirin%20cures%20cancer"></iframe>.', ["unverified"]),
    ('Mitochondria produce ATP [2] <iframe src="https://example.org/a"></iframe>.', ["verified"]),
])
def test_drawn_attribute_text_at_the_sentence_edges(answer, actions):
    _, r = guard_answer(answer, P, topic, base=0 if "[0]" in answer else 1, reattribute=None)
    assert [a.action for a in r.audit] == actions


def test_a_stream_never_cuts_inside_a_tag_whose_text_is_drawn():
    text = 'A x [1]. B [1]. <img alt="C y. D z [2]. E w">'
    # sentences start at A, B, C, D and E; C, D and E lie inside the tag, so the last cut is B's start
    assert commit_point(text) == text.index("B")
