"""The study's generation and preparation counts by hand: a batch's per-passage notes stay with their own item
and every call's tokens add up; max_items at its boundary, the claim cap, unlabelled pairs counted as neither
class, and blank passages skipped as citations and as candidates (round 13's survivors)."""
import json

import numpy as np
import yaml
from conftest import ROOT

from citebound.scoring.llm_backends import Completion
from citebound.study.generation import run_pipeline
from citebound.study.prepare import _Builder, prepare_attribution_gold


class ByItem:
    """Answers a prompt with the item it belongs to (its passages say 'alpha' or 'beta'); 10 prompt and 3
    completion tokens a call."""

    def __init__(self):
        self.calls = 0

    def chat(self, batch):
        self.calls += len(batch)
        return [Completion("seen alpha" if "alpha" in m[-1]["content"] else "seen beta", 10, 3) for m in batch]


def test_a_batchs_per_passage_notes_stay_with_their_item_and_tokens_add_up():
    pipe = yaml.safe_load((ROOT / "config" / "pipeline" / "paperqa2_prompts.yaml").read_text())
    items = [{"question": "q1", "passages": [{"text": "alpha one", "title": ""}, {"text": "alpha two", "title": ""}]},
             {"question": "q2", "passages": [{"text": "beta one", "title": ""}, {"text": "beta two", "title": ""},
                                             {"text": "beta three", "title": ""}]}]
    be = ByItem()
    res = run_pipeline(be, pipe, items)
    assert res[0]["steps"]["summaries"] == "[1] seen alpha\n\n[2] seen alpha"
    assert res[1]["steps"]["summaries"] == "[1] seen beta\n\n[2] seen beta\n\n[3] seen beta"
    # item 1: 2 summaries + 1 answer = 3 calls; item 2: 3 + 1 = 4
    assert [(r["prompt_tokens"], r["completion_tokens"]) for r in res] == [(30, 9), (40, 12)]
    assert be.calls == 7


def test_max_items_counts_distinct_items_up_to_its_value():
    b = _Builder("s", "gold", claim_cap=5, max_items=2)
    assert [b.accept(x) for x in ("a", "b", "a", "c", "b")] == [True, True, True, False, True]
    b.pair("a", 0, "abcdefgh", "passage", 0, 1.0)
    b.pair("a", 1, "abc", "passage", 0, 0.0)
    b.pair("b", 0, "xyz", "passage", 1, np.nan)  # not labelled: neither supported nor unsupported
    ps = b.finish()
    assert ps.pairs["claim"].tolist() == ["abcde", "abc", "xyz"]
    s = ps.stats
    assert (s.n_items, s.n_pairs, s.n_supported, s.n_unsupported) == (2, 3, 1, 1)


def test_blank_passages_are_skipped_as_citations_and_as_candidates(tmp_path):
    """Base 0: the sentence cites passages 0 (blank: an empty_passage skip, from extraction) and 1 (a gold pair,
    label 1). Re-attribution's candidates for it are every passage: 0 and 2 are blank (two empty_candidate
    skips), 1 is the gold one. A blank cited passage is thus counted once as a citation and once as a candidate."""
    p = tmp_path / "g.json"
    p.write_text(json.dumps([{"id": "r1", "output": "Aspirin lowers fever [0][1].",
                              "ctxs": [{"text": ""}, {"text": "Aspirin lowers fever."}, {"text": "  "}]}]))
    b = _Builder("g", "attribution", claim_cap=600)
    prepare_attribution_gold({"x": p}, {"citation_base": 0}, b)
    ps = b.finish()
    assert dict(ps.stats.skipped) == {"empty_passage": 1, "empty_candidate": 2}
    assert ps.pairs["passage_index"].tolist() == [1] and ps.pairs["label"].tolist() == [1.0]
    assert ps.skips["marker"].tolist() == ["[0]", "[0]", "[2]"]
