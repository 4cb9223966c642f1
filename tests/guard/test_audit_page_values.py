"""The audit page's markup, value by value, each worked out by hand (citebound/guarding/audit_page.py): which
answers and sentences the review filter keeps, each chip's label (index 0 included), which evidence a tip shows,
each row's filter class, the run's monitor state, counts of one and of none, and the evidence snapping at offset
0 and at exactly the window's size."""
from __future__ import annotations

import re

import pytest

from citebound import Guard
from citebound.guarding.audit_page import AuditEntry, render_audit_page, snapped

P = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells.", "   "]  # the third is blank


def _entries() -> list[AuditEntry]:
    """lexical, threshold 0.5 (a citation passes iff the share of its claim's terms in the passage is > 0.5):
    clean: [1] holds all its terms: verified.
    unchecked: [3] is blank: unverified (nothing to check), the answer's only problem.
    moved: [1] holds none of its terms (0); passage 2 holds all (1): re-attributed to 2.
    base0: [0, 1] numbered from 0: [0] is passage 1 (verified); [1] is passage 2 (0), and the only other passage is
    blank: flagged."""
    g = Guard("lexical", threshold=0.5)
    out = []
    for aid, answer, base in (("clean", "Statins lower LDL cholesterol [1].", 1),
                              ("unchecked", "Mitochondria produce ATP [3].", 1),
                              ("moved", "Mitochondria produce ATP [1].", 1),
                              ("base0", "Statins lower LDL cholesterol [0, 1].", 0)):
        text, rep = g.guard(answer, P, base=base)
        out.append(AuditEntry(aid, answer, text, rep.to_dict()))
    # the run's monitor state is the last report's card (each report carries the card as it stood after it)
    for e, state in zip(out, ("ok", "ok", "suspect", "void")):
        e.report["guarantee_card"] = {"monitor": {"state": state, "meaning": f"state {state}"}}
    return out


def _sections(html: str) -> dict[str, str]:
    parts = re.split(r'(?=<section class="answer )', html)[1:]
    return {re.search(r'data-answer-id="([^"]+)"', s).group(1): s for s in parts}


@pytest.fixture(scope="module")
def page() -> str:
    return render_audit_page(_entries(), verifier="lexical", rule="pass iff score > 0.5")


def test_the_review_filter_keeps_every_answer_and_sentence_that_needs_a_person_and_no_other(page):
    secs = _sections(page)
    cls = {aid: re.match(r'<section class="answer (\w+)"', s).group(1) for aid, s in secs.items()}
    assert cls == {"clean": "clean", "unchecked": "needs", "moved": "clean", "base0": "needs"}
    sents = {aid: re.findall(r'<span class="(sent[^"]*)" data-sentence="0"', s) for aid, s in secs.items()}
    assert sents == {"clean": ["sent"], "unchecked": ["sent review"], "moved": ["sent"], "base0": ["sent review"]}
    rows = {aid: re.findall(r'<tr id="a\d+-c\d+" data-outcome="(\w+)" class="(\w+)">', s) for aid, s in secs.items()}
    assert rows == {"clean": [("verified", "passes")], "unchecked": [("unverified", "review")],
                    "moved": [("reattributed", "passes")], "base0": [("verified", "passes"), ("flagged", "review")]}
    assert "needs a person (2 of 4 answers)" in page


def test_each_chip_is_labelled_by_its_number_index_0_included(page):
    chips = {aid: re.findall(r'data-cited="(-?\d+)" tabindex="0">([^<]*)<span class="tip">', s)
             for aid, s in _sections(page).items()}
    assert chips == {"clean": [("1", "1")], "unchecked": [("3", "3")], "moved": [("1", "1")],
                     "base0": [("0", "0"), ("1", "1")]}
    assert '<td>[0]</td>' in _sections(page)["base0"]  # the row names passage 0 by its number too


def test_a_re_attributed_citations_tip_shows_the_evidence_it_was_moved_to(page):
    moved = _sections(page)["moved"]
    tip = re.search(r'<span class="tip">(.*?)</span></a>', moved).group(1)
    assert "moved to [2] (score 1.000)" in tip and "Mitochondria produce ATP in cells." in tip and "Statins" not in tip


def test_the_header_shows_the_runs_last_monitor_state_and_counts_of_one_and_of_none(page):
    assert re.findall(r'data-monitor="(\w+)"', page) == ["void"]
    assert "5 citations in 4 answers" in page
    answer_counts = re.findall(r'<div class="answer-counts">([^:]*):', page)
    assert answer_counts == ["1 citation", "1 citation", "1 citation", "2 citations"]
    assert page.count("0 uncited sentences") == 5 and "0 uncited sentence " not in page  # 4 answers and the header
    empty = render_audit_page([])
    assert "0 citations in 0 answers" in empty and "needs a person (0 of 0 answers)" in empty


W = "a" + "bcde " * 119 + "wxyz"  # 600 characters, the last word cut by the window's end


@pytest.mark.parametrize("ev,shown", [
    ({"text": "Aspirin inhibits COX.", "start": 0}, "Aspirin inhibits COX."),  # offset 0: nothing cut at its start
    ({"text": "pirin inhibits COX.", "start": 2}, "\u2026inhibits COX."),  # starts inside a word: it goes
    ({"text": "Aspirin inhibits COX.", "start": 1}, "\u2026inhibits COX."),  # any offset past 0 may cut a word
    ({"text": W, "start": 0}, W[:595] + "\u2026"),  # exactly the window's 600: its last word goes (and the space at 595)
    ({"text": W[1:], "start": 0}, W[1:]),  # 599 characters: the passage ended there, nothing was cut
    ({"text": W, "start": 300}, "\u2026" + W[6:595] + "\u2026"),  # both ends
])
def test_evidence_is_snapped_at_offset_0_and_at_exactly_the_window_size(ev, shown):
    assert snapped(ev) == shown


@pytest.mark.parametrize("last,cut", [(38, True), (39, False), (40, False)])
def test_a_cut_last_word_goes_only_when_it_is_shorter_than_40_characters(last, cut):
    """A 600-character window whose last word (``last`` letters) the window's end cut: the word goes when its space
    is within the last 39 characters (a word of 38 letters, the space 39 from the end); at 39 letters or more the
    space is 40 from the end or further, and the text is kept whole, only marked as cut."""
    text = "w" * (599 - last) + " " + "z" * last
    assert len(text) == 600
    assert snapped({"text": text, "start": 0}) == ("w" * (599 - last) if cut else text) + "\u2026"


def test_each_sentence_is_one_span_closed_where_the_next_opens_with_its_class_and_tip():
    """"Statins lower LDL cholesterol [1]. Aspirin is very old. Unicorns sing [1]." against the statin passage,
    threshold 0.5: the first verifies, the second cites nothing (uncited at 35, the length of the first sentence
    and its space), the third is flagged. Each sentence is a span opened at its start and closed where the next
    opens (the space between goes with the earlier one), the last at the text's end: classes sent, sent uncited
    (with its tip), sent review. Chips are left out (their markup is checked above)."""
    from citebound.guarding.audit_page import _answer_html

    answer = "Statins lower LDL cholesterol [1]. Aspirin is very old. Unicorns sing [1]."
    text, rep = Guard("lexical", threshold=0.5).guard(answer, P[:1])
    assert rep.to_dict()["uncited_sentences"] == [[35, 55]]
    html = _answer_html(0, AuditEntry("x", answer, text, rep.to_dict()))
    shown = re.search(r'<div class="text">(.*?)</div>', re.sub(r'<a class="cite .*?</a>', "CHIP", html)).group(1)
    assert shown == ('<span class="sent" data-sentence="0">Statins lower LDL cholesterol [CHIP]. </span>'
                     '<span class="sent uncited" data-sentence="1" title="cites nothing: not checked">Aspirin is very '
                     'old. </span><span class="sent review" data-sentence="2">Unicorns sing [CHIP].</span>')
