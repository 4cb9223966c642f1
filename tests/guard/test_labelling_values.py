"""What the labelling store records, value by value, worked out by hand (citebound/labelling/store.py): the
evidence window a labeller is shown (window 0 included), a citation the verifier gave no score (null, never NaN),
a citation of passage 0 under base 0 (sampled like any other), and hand-edited records whose label or score is
not what citebound label writes."""
from __future__ import annotations

import json

import numpy as np
import pytest

from citebound.labelling.store import LabelError, LabelStore, check_record, citation_population, score_items
from citebound.scoring.loader import load_scorer

FILL = "Dolphins sleep with one half of the brain at a time while swimming slowly. "  # none of the claims' terms
HEAD = "Statins lower LDL cholesterol. " + FILL * 13  # the terms in the first 31 characters
TAIL = FILL * 13 + "Aspirin inhibits platelet aggregation."


def test_the_window_shown_is_the_best_one_window_0_included():
    """Passages of 1,006 and 1,013 characters: windows (0, 600), (300, 900) and (406, 1006), or (413, 1013). The
    statins claim's terms sit in window 0 only (score 1 there), the aspirin claim's in the last window only."""
    assert len(HEAD) == 1006 and len(TAIL) == 1013
    recs = [{"answer": "Statins lower LDL cholesterol [1]. Aspirin inhibits platelet aggregation [2].",
             "passages": [HEAD, TAIL]}]
    items, counts = citation_population(recs, [1], "a.jsonl")
    got = score_items(items, load_scorer("lexical"))
    assert [(it.cited, it.window_start, it.window_end, it.score) for it in got] == [(1, 0, 600, 1.0), (2, 413, 1013, 1.0)]


class NoScoreForBoom:
    """A scorer (the plain callable form) that gives NaN where the claim holds 'boom', 0.7 elsewhere."""

    def __call__(self, claims, passages):
        s = np.array([np.nan if "boom" in c.lower() else 0.7 for c in claims])
        return s, s > 0.5


def test_a_citation_the_verifier_gave_no_score_is_recorded_as_null():
    recs = [{"answer": "Boom goes the claim [1]. Statins lower LDL [1].", "passages": [HEAD]}]
    items, _ = citation_population(recs, [1], "a.jsonl")
    got = score_items(items, NoScoreForBoom())
    assert [(it.score, it.window_start, it.window_end) for it in got] == [(None, 0, 1006), (0.7, 0, 1006)]
    assert json.loads(json.dumps(got[0].score)) is None  # valid JSON, not NaN


def test_a_citation_of_passage_0_is_sampled_under_base_0():
    """Base 0: [0] and [1] point at the two passages (both sampled), [2] at none (counted, not sampled)."""
    recs = [{"answer": "Statins lower LDL [0]. Aspirin works [1][2].", "passages": [HEAD, TAIL], "citation_base": 0}]
    items, counts = citation_population(recs, [1], "a.jsonl", base=1)  # the record's own base wins
    assert [(it.cited, it.passage == p) for it, p in zip(items, (HEAD, TAIL))] == [(0, True), (1, True)]
    assert (counts["citations"], counts["invalid_not_sampled"]) == (3, 1)


@pytest.mark.parametrize("line,message", [
    ('{"item_id": "x", "judgement": "supported", "label": true, "score": 0.5}', "'label' True does not match"),
    ('{"item_id": "x", "judgement": "unsupported", "label": false, "score": 0.5}', "'label' False does not match"),
    ('{"item_id": "x", "judgement": "supported", "label": 1, "score": NaN}', "'score' must be a finite number or null"),
    ('{"item_id": "x", "judgement": "supported", "label": 1, "score": Infinity}', "'score' must be a finite number"),
    ('{"item_id": "x", "judgement": "supported", "label": 1, "score": true}', "'score' must be a finite number"),
    ('{"item_id": "x", "judgement": "supported", "label": 1, "score": 0.5, "position": true}',
     "'position' must be a int, got True"),
    ('{"item_id": "x", "judgement": "supported", "label": 1, "score": 0.5, "position": 1.0}',
     "'position' must be a int, got 1.0"),
    ('{"item_id": "x", "judgement": "supported", "label": 1}', "no 'score'"),
])
def test_a_hand_edited_label_or_score_is_refused_naming_the_line(tmp_path, line, message):
    f = tmp_path / "labels.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(LabelError, match=f"{f}:1: {message}"):
        LabelStore(f, {})


@pytest.mark.parametrize("rec", [
    {"item_id": "x", "judgement": "supported", "label": 1, "score": 0.5},
    {"item_id": "x", "judgement": "unsupported", "label": 0, "score": None},
    {"item_id": "x", "judgement": "cant_tell", "label": None, "score": 0},
    {"item_id": "x", "judgement": "supported", "label": 1, "score": 0.5, "position": 0},
])
def test_what_citebound_label_writes_is_accepted(rec):
    assert check_record(rec, "here") == rec
