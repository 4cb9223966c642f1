"""The audit page's text (#56 round 66): everything the answer, the passages and the reports bring is escaped
wherever the page puts it (the answer's text after its last mark, a row's claim, a tip's evidence and reason);
a tip's evidence of exactly 300 characters is shown whole and one more gets an ellipsis; a citation carried as
data of passage 0 keeps its number; the page's review budget is pooled over citations, not a mean of answers';
a re-attributed citation's tip names the passage it moved to; an empty guarded answer is shown, not withheld.
Each expected value is worked out by hand in the comments."""
from __future__ import annotations

import copy
import re

import pytest
from test_audit_page_values import _sections

from citebound import Guard
from citebound.guarding.audit_page import AuditEntry, render_audit_page

STATINS = "Statins lower LDL cholesterol in adults."
MITO = "Mitochondria produce ATP in cells."
HOSTILE = "<script>alert(1)</script>"


def guarded(answer: str, passages: list[str]) -> tuple[str, dict]:
    """lexical at 0.5: a citation passes iff more than half of its claim's content terms are in the passage."""
    text, rep = Guard("lexical", threshold=0.5).guard(answer, passages)
    return text, rep.to_dict()


def tips(html: str) -> list[str]:
    return re.findall(r'<span class="tip">(.*?)</span></a>', html, re.S)


def test_every_text_from_the_answer_passages_and_reports_is_escaped_where_the_page_puts_it():
    # [1] holds every term of the first claim (verified); the second sentence cites nothing; its text, after the
    # last mark, carries markup too. The guard reads claims and passages as a reader sees them (markup blanked),
    # so the report's claim, evidence and reason are set here to what a report from elsewhere may hold
    answer = "Statins <blink>lower</blink> LDL cholesterol [1]. Then <marquee>x</marquee> happened"
    text, rep = guarded(answer, [STATINS])
    rep["audit"][0]["evidence"]["text"] = f"{HOSTILE} Statins lower LDL cholesterol in adults."
    rep["audit"][0]["reason"] = "<img src=x onerror=alert(2)>"
    rep["audit"][0]["claim"] = "Statins <blink>lower</blink> LDL cholesterol."
    html = render_audit_page([AuditEntry("a", answer, text, rep)])
    for raw in ("<script", "<blink", "<marquee", "<img"):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in tips(html)[0]  # the evidence, in the tip
    assert "&lt;img src=x onerror=alert(2)&gt;" in tips(html)[0]  # the reason, in the tip
    assert "&lt;marquee&gt;x&lt;/marquee&gt; happened" in html  # the answer's text after its last mark
    row = re.search(r'<tr id="a0-c0".*?</tr>', html, re.S).group(0)
    assert "Statins &lt;blink&gt;lower&lt;/blink&gt; LDL cholesterol" in row  # the row's claim


@pytest.mark.parametrize("n,ellipsis", [(299, False), (300, False), (301, True)])
def test_a_tips_evidence_of_300_characters_is_whole_and_longer_is_cut_with_an_ellipsis(n, ellipsis):
    # evidence at offset 0 and shorter than the 600-character window: snapping leaves it as it is, so the tip
    # shows its first 300 characters, with an ellipsis only when there were more
    text, rep = guarded("Statins lower LDL cholesterol [1].", [STATINS])
    rep["audit"][0]["evidence"] = {"passage": 1, "start": 0, "end": n, "text": "y" * (n - 1) + ".", "score": 1.0}
    (tip,) = tips(render_audit_page([AuditEntry("a", "Statins lower LDL cholesterol [1].", text, rep)]))
    shown = re.search(r'<span class="evidence">(.*)</span>$', tip, re.S).group(1)
    assert shown.count("y") == min(n - 1, 300) and shown.endswith("&hellip;") is ellipsis


def test_a_citation_carried_as_data_of_passage_0_keeps_its_number():
    # a zero-width span where the citation attaches; cited 0 (base 0); its kind from the marker
    answer = "Statins lower LDL cholesterol."
    text, rep = guarded("Statins lower LDL cholesterol [1].", [STATINS])
    a = rep["audit"][0]
    a.update(spans=[[30, 30]], cited=0, marker="c0 (char_location)")
    html = render_audit_page([AuditEntry("a", answer, answer, rep)])
    chip = re.search(r'<a class="cite verified"[^>]*>(.*?)<span class="tip">', html).group(1)
    assert chip == "0 char_location"
    row = re.search(r'<tr id="a0-c0".*?</tr>', html, re.S).group(0)
    assert "<td>[0 char_location]</td>" in row


def test_the_pages_review_budget_is_pooled_over_the_citations():
    # answer A: 1 citation, flagged (its passage shares no term; the only other passage shares none either)
    # answer B: 3 citations, all verified. Pooled: 1 of 4 = 25.0%; a mean of the answers' budgets would be 50.0%
    pa = ["Unrelated words entirely here.", "Nothing alike at all."]
    ta, ra = guarded("Mitochondria produce ATP [1].", pa)
    tb, rb = guarded("Statins lower LDL cholesterol [1]. Statins lower LDL [1]. LDL cholesterol [1].", [STATINS])
    assert (ra["flagged"], ra["n_citations"], rb["verified"], rb["n_citations"]) == (1, 1, 3, 3)
    html = render_audit_page([AuditEntry("a", "Mitochondria produce ATP [1].", ta, ra),
                              AuditEntry("b", "Statins lower LDL cholesterol [1]. Statins lower LDL [1]. LDL cholesterol [1].",
                                         tb, rb)])
    assert 'data-review-budget="0.250000"' in html and "Review budget: 25.0% need a person" in html


def test_a_re_attributed_citations_tip_names_the_passage_it_moved_to():
    # [1] (statins) holds none of the claim's terms; passage 2 holds all: moved from 1 to 2
    answer = "Mitochondria produce ATP [1]."
    text, rep = guarded(answer, [STATINS, MITO])
    assert (rep["audit"][0]["action"], rep["audit"][0]["cited"], rep["audit"][0]["new_pointer"]) == ("reattributed", 1, 2)
    (tip,) = tips(render_audit_page([AuditEntry("a", answer, text, rep)]))
    assert "moved to [2] (score 1.000)" in tip and "moved to [1]" not in tip


def test_an_empty_guarded_answer_is_shown_and_a_withheld_one_says_so():
    text, rep = guarded("Statins lower LDL cholesterol [1].", [STATINS])
    blocked = copy.deepcopy(rep) | {"blocked": True, "block_reason": "review budget 1 is past --block-above 0.3"}
    html = render_audit_page([AuditEntry("empty", "Statins lower LDL cholesterol [1].", "", rep),
                              AuditEntry("held", "Statins lower LDL cholesterol [1].", None, blocked)])
    sections = _sections(html)
    assert "withheld" not in sections["empty"]
    assert '<summary>guarded text</summary><div class="text"></div>' in sections["empty"]
    assert '<em class="withheld">withheld: review budget 1 is past --block-above 0.3</em>' in sections["held"]


@pytest.mark.parametrize("answer", ["Statins lower LDL cholesterol [1. 2] Mitochondria produce ATP.",
                                    "Statins lower LDL [1. 2]. Mitochondria produce ATP [2]."])
def test_a_sentence_that_starts_inside_a_marker_shows_the_answer_once(answer):
    """'[1. 2]' is one unreadable marker to the citation reader, but the sentence splitter ends a sentence at
    its '. ': the next sentence starts inside the marker's span. The answer's text is shown once, as written
    (the chip stands for the whole marker, the sentence opens after it)."""
    import html as entities

    text, rep = guarded(answer, [STATINS, MITO])
    page = render_audit_page([AuditEntry("a", answer, text, rep)])
    div = re.search(r'<div class="text">(.*?)</div><table>', page, re.S).group(1)
    div = re.sub(r'<span class="tip">.*?</span></a>', "</a>", div, flags=re.S)
    assert entities.unescape(re.sub(r"<[^>]+>", "", div)) == answer


def test_a_blocked_answer_is_shown_under_the_review_filter_whatever_its_citations():
    # every citation verified, no uncited sentence, but withheld (a report of another part of the answer, or of a
    # run with another policy, may say so): the filter shows it, and counts it among those needing a person
    text, rep = guarded("Statins lower LDL cholesterol [1].", [STATINS])
    blocked = copy.deepcopy(rep) | {"blocked": True, "block_reason": "the answer so far is past --block-above"}
    html = render_audit_page([AuditEntry("ok", "Statins lower LDL cholesterol [1].", text, rep),
                              AuditEntry("held", "Statins lower LDL cholesterol [1].", None, blocked)])
    classes = re.findall(r'<section class="answer (\w+)" id="answer-\d+" data-answer-id="(\w+)"', html)
    assert classes == [("clean", "ok"), ("needs", "held")]
    assert "needs a person (1 of 2 answers)" in html
