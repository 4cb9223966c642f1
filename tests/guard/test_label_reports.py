"""Labelling a guarded run (``citebound guard --echo-input`` output), value by value, worked out by hand
(citebound/labelling/store.py): the items a report yields (their sentence spans, evidence, score and action), what is
counted and not sampled, the record's own citation base, a report's score kept through scoring, the page's hiding of
the guard's action, a broken last line that a crash did not cut, and the panel's can't-tell count."""
from __future__ import annotations

import json

import pytest

from citebound.labelling.store import (
    Item,
    LabelError,
    LabelSession,
    LabelStore,
    citation_population,
    score_items,
)
from citebound.scoring.loader import load_scorer

ANSWER = "A holds [1]. B holds [2] [1]."  # sentences (0, 12) and (13, 29)
PASSAGES = ["p one", "p two!"]


def entry(si, cited, span, score, action="verified", claim="c"):
    return {"sentence_index": si, "cited": cited, "evidence": None if span is None else {"start": span[0], "end": span[1]},
            "score": score, "action": action, "claim": claim}


def record(audit, **extra):
    return {"id": "a", "answer": ANSWER, "passages": PASSAGES, "report": {"audit": audit}, **extra}


def test_a_report_yields_its_scored_citations_with_their_spans_and_counts_the_rest():
    audit = [entry(0, 1, (0, 5), 0.8, claim="A holds."),
             entry(1, 2, (1, 6), 0.2, "flagged", claim="B holds."),
             entry(1, 1, None, None, "unverified"),  # no evidence: the verifier gave nothing
             entry(1, 1, (0, 5), None, "unverified"),  # evidence but no score (the verifier failed)
             entry(1, 9, None, None, "invalid")]
    items, counts = citation_population([record(audit)], [4], "g.jsonl")
    assert items == [Item("a#s0#c1", -1, "a", ANSWER, 0, 12, "A holds.", 1, "p one", 0, 5, 0.8, "verified"),
                     Item("a#s1#c2", -1, "a", ANSWER, 13, 29, "B holds.", 2, "p two!", 1, 6, 0.2, "flagged")]
    assert (counts["answers"], counts["citations"], counts["invalid_not_sampled"]) == (1, 5, 3)
    # scoring keeps a report's own score and evidence (only unscored items are scored)
    assert score_items(items, load_scorer("lexical")) == items


def test_a_reports_own_citation_base_wins():
    audit = [entry(0, 0, (0, 5), 0.4), entry(1, 1, (2, 6), 0.6)]
    items, _ = citation_population([record(audit, citation_base=0)], [1], "g.jsonl", base=1)
    assert [(it.cited, it.passage, it.window_start, it.window_end) for it in items] == [(0, "p one", 0, 5), (1, "p two!", 2, 6)]


@pytest.mark.parametrize("bad,message", [
    (entry(2, 1, (0, 5), 0.5), "g.jsonl:7: audit entry 0 names sentence 2; the answer has 2 sentences"),
    (entry(-1, 1, (0, 5), 0.5), "g.jsonl:7: audit entry 0 names sentence -1"),
    (entry(0, 3, (0, 5), 0.5), r"g.jsonl:7: audit entry 0 cites \[3\], which is no passage of its 2 \(numbered from 1\)"),
    (entry(0, 0, (0, 5), 0.5), r"cites \[0\], which is no passage"),
    (entry(0, 1, (0, 6), 0.5), "evidence span 0-6 is outside its passage"),  # "p one" has 5 characters
    (entry(0, 1, (3, 2), 0.5), "evidence span 3-2 is outside"),
])
def test_a_report_that_does_not_fit_its_answer_is_refused_naming_the_line(bad, message):
    with pytest.raises(LabelError, match=message):
        citation_population([record([bad])], [7], "g.jsonl")


@pytest.mark.parametrize("span", [(0, 0), (5, 5), (0, 5), (4, 5)])  # "p one" has 5 characters
def test_an_evidence_span_inside_its_passage_is_taken_to_its_very_ends(span):
    """0 <= start <= end <= 5: an empty span at either end, and the whole passage, lie inside it."""
    items, _ = citation_population([record([entry(0, 1, span, 0.5)])], [7], "g.jsonl")
    assert [(it.window_start, it.window_end) for it in items] == [span]


def test_the_page_shows_neither_the_score_nor_the_guards_action(tmp_path):
    items, _ = citation_population([record([entry(0, 1, (0, 5), 0.8, "flagged", claim="A holds.")])], [1], "g.jsonl")
    sess = LabelSession(items, LabelStore(tmp_path / "l.jsonl", {}), "ann")
    shown = sess.state()["item"]
    assert "score" not in shown and "guard_action" not in shown and shown["item_id"] == "a#s0#c1"
    sess.label("a#s0#c1", "unsupported")
    written = json.loads((tmp_path / "l.jsonl").read_text())
    assert (written["guard_action"], written["score"], written["label"]) == ("flagged", 0.8, 0)  # recorded, not shown


GOOD = {"item_id": "x", "judgement": "supported", "label": 1, "score": 0.5}


def test_repair_drops_only_a_last_line_a_crash_cut(tmp_path):
    """--repair-truncated drops a last line without its newline (a crash mid-write), never a complete broken line."""
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps(GOOD) + "\n" + '{"item_id": "y", oops}\n')
    with pytest.raises(LabelError, match=r"l.jsonl:2: not valid JSON .*edited by hand"):
        LabelStore(f, {}, repair_truncated=True)
    assert len(f.read_text().splitlines()) == 2  # untouched
    f.write_text(json.dumps(GOOD) + "\n" + '{"item_id": "y", oo')
    store = LabelStore(f, {}, repair_truncated=True)
    assert store.repaired and [r["item_id"] for r in store.records] == ["x"] and f.read_text() == json.dumps(GOOD) + "\n"


def test_the_panel_counts_cant_tell_by_label_not_by_missing_score():
    from citebound.labelling.store import panel

    records = [{"label": 0, "score": None}, {"label": None, "score": 0.3}, {"label": None, "score": None},
               {"label": 1, "score": 0.9}, {"label": 0, "score": 0.2}]
    p = panel(records, 0.1, 50)
    # five labelled; two can't tell; of the three labelled 0 or 1, the one without a score enters no count
    assert (p["labelled"], p["cant_tell"], p["supported"], p["unsupported"]) == (5, 2, 1, 1)


def test_an_audit_entry_that_is_not_an_object_or_is_invalid_is_counted_not_sampled():
    """Of four entries: a string (no object), an invalid citation that carries evidence and a score all the same,
    a scored one, and a list: one item, four citations, three not sampled (none raises)."""
    audit = ["not an entry", entry(0, 1, (0, 5), 0.9, "invalid"), entry(1, 2, (1, 6), 0.2, "flagged", claim="B holds."),
             [1, 2]]
    items, counts = citation_population([record(audit)], [4], "g.jsonl")
    assert [it.item_id for it in items] == ["a#s1#c2"]
    assert (counts["citations"], counts["invalid_not_sampled"]) == (4, 3)


def test_the_labels_file_is_utf8_as_written_and_a_new_store_was_not_repaired(tmp_path):
    """A label's note in Greek and with an accent is written as those characters (the file is read by people and by
    jq), on append and on the rewrite undo makes; a store opened on a new file, or on an intact one, repaired
    nothing."""
    f = tmp_path / "labels.jsonl"
    store = LabelStore(f, {})
    assert store.repaired is False
    first = {"item_id": "a#s0#c1", "judgement": "supported", "label": 1, "score": 0.5, "note": "café, α-synuclein"}
    store.append(first)
    store.append({"item_id": "a#s1#c2", "judgement": "unsupported", "label": 0, "score": None, "note": "naïve"})
    assert "café, α-synuclein" in f.read_text(encoding="utf-8") and "\\u" not in f.read_text(encoding="utf-8")
    store.undo()  # rewrites the file without its last record
    assert f.read_text(encoding="utf-8") == ('{"item_id": "a#s0#c1", "judgement": "supported", "label": 1, "score": 0.5, '
                                             '"note": "café, α-synuclein"}\n')
    assert LabelStore(f, {}).repaired is False
