"""Edges of spans and indices, each expected value worked out by hand: a citation of the first passage (index 0)
that is blank or sits in an obscured sentence, a stream's merged report (its first segment's report left as it
was), a span that ends exactly where the next sentence starts, exactly max_sentences sentences, the audit page's
ids for answers without one (numbered from 1, as the failed ones are), and a range's two ends in order."""
from __future__ import annotations

import httpx
import pytest
from test_guard_assembly import first_word as holds_first_word  # 0.9 iff the passage holds the claim's first word

import citebound
from citebound.guarding.core import guard_answer
from citebound.guarding.stream import merge_reports


@pytest.mark.parametrize("base", [0, 1])
def test_a_citation_of_the_first_passage_is_checked_for_a_blank_passage_and_an_obscured_sentence(base):
    first = base  # the marker that names index 0
    blank = ['<span hidden>Cells make ATP.</span>', "Cells make ATP."]
    _, rep = citebound.guard(f"Cells make ATP [{first}].", blank, verifier=holds_first_word, reattributor=None, base=base)
    a = rep.audit[0]
    assert (a.cited, a.action, a.unreadable) == (first, "unverified", True)
    assert a.reason.startswith(f"passage [{first}] has no text a reader can see")
    obscured = f'Cells make ATP <span style="opacity:0">and cure colds</span> [{first}].'
    _, rep = citebound.guard(obscured, ["Cells make ATP.", "x"], verifier=holds_first_word, reattributor=None, base=base)
    a = rep.audit[0]
    assert (a.action, a.unreadable) == ("unverified", True)
    assert a.reason.startswith("part of this sentence is text a reader may not see")


def test_merging_a_streams_reports_leaves_each_segments_report_as_it_was():
    """Two segments, one citation each; the whole has 2 sentences and 2 audits (the second's spans shifted by the
    first segment's 20 characters), and the first segment's own report still has its one audit at its own offset."""
    seg1, seg2 = "Cells make ATP [1]. ", "Cells burn fat [2]."
    assert len(seg1) == 20
    _, r1 = guard_answer(seg1, ["Cells make ATP.", "Aspirin."], holds_first_word, reattribute=None)
    _, r2 = guard_answer(seg2, ["Cells make ATP.", "Aspirin."], holds_first_word, reattribute=None)
    whole = merge_reports([(0, r1), (20, r2)])
    assert (whole.n_sentences, whole.n_citations, whole.verified, whole.flagged) == (2, 2, 1, 1)
    assert [(a.sentence_index, a.spans) for a in whole.audit] == [(0, [(15, 18)]), (1, [(35, 38)])]
    assert len(r1.audit) == 1 and r1.audit[0].spans == [(15, 18)] and r1.n_sentences == 1
    assert whole.review_budget == 0.5


def test_a_span_ending_where_the_next_sentence_starts_touches_only_its_own():
    from citebound.text.citations import sentences
    from citebound.text.forms import sentences_touching

    sents = sentences("Cells make ATP. Cells burn fat. Aspirin thins blood.")
    starts = [s.start for s in sents]
    assert starts == [0, 16, 32]
    assert sentences_touching(sents, [(5, 16)]) == {0}
    assert sentences_touching(sents, [(5, 17)]) == {0, 1}
    assert sentences_touching(sents, [(15, 16)]) == set()  # the space between them belongs to neither


def test_exactly_max_sentences_is_taken_and_one_more_refused():
    from citebound.text.limits import LimitExceeded, Limits

    Limits(max_sentences=3).check_sentences(3)
    with pytest.raises(LimitExceeded, match="the answer has 4 sentences"):
        Limits(max_sentences=3).check_sentences(4)
    three = "Cells make ATP [1]. Cells burn fat [1]. Cells divide [1]."
    _, rep = guard_answer(three, ["Cells make ATP."], holds_first_word, reattribute=None, limits=Limits(max_sentences=3))
    assert rep.n_sentences == 3
    with pytest.raises(LimitExceeded, match="max_sentences"):
        guard_answer(three + " Cells rest [1].", ["Cells make ATP."], holds_first_word, reattribute=None,
                     limits=Limits(max_sentences=3))


def test_a_range_cites_its_ends_in_order():
    from citebound.text.citations import expand_numeric

    assert expand_numeric("1-3") == [1, 2, 3]
    assert expand_numeric("2 - 4, 7") == [2, 3, 4, 7]
    _, rep = citebound.guard("Cells make ATP [1-3].", ["Cells make ATP.", "Cells.", "Aspirin."], verifier=holds_first_word,
                             reattributor=None)
    assert [(a.cited, a.action) for a in rep.audit] == [(1, "verified"), (2, "verified"), (3, "flagged")]


def test_the_audit_page_numbers_answers_without_an_id_from_one():
    from service_helpers import running

    from citebound.serving import ServeConfig

    batch = {"answers": [{"answer": "Cells make ATP [1].", "passages": ["Cells make ATP."]},
                         {"answer": "Aspirin thins blood [1].", "passages": ["Aspirin thins blood."]},
                         {"id": "own", "answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]}]}
    with running(ServeConfig(verifier="lexical", max_wait_ms=2)) as url:
        html = httpx.post(f"{url}/v1/guard?format=html", json=batch, timeout=60).text
    assert 'data-answer-id="1"' in html and 'data-answer-id="2"' in html and 'data-answer-id="own"' in html
    assert 'data-answer-id="0"' not in html
