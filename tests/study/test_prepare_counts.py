"""What the data summary counts, worked out by hand (citebound/study/prepare.py): skipped citations (not reasons),
items with pairs (not pairs), gold claims as cited sentences, every gold context of a claim joined, generated
answers 1-based with their subject as group, a record without sections skipped and counted."""
from __future__ import annotations

import json
from collections import Counter

from citebound.study.prepare import SetStats, prepare_set


def test_a_summary_row_counts_skipped_citations_and_each_reason():
    s = SetStats(set="s", kind="k", skipped=Counter({"out_of_range": 2, "unknown_id": 1, "nei_claim": 4}))
    row = s.row()
    assert row["n_skipped"] == 7
    assert (row["skipped_out_of_range"], row["skipped_unknown_id"], row["skipped_nei_claim"], row["skipped_empty_passage"]) \
        == (2, 1, 4, 0)


def test_gold_claims_are_cited_sentences_with_every_gold_context_joined(tmp_path):
    rows = [{"input": "Q1?", "answer": "yes", "gold_ctx": [{"text": "first part"}, {"text": "second part"}]},
            {"input": "Q2?", "answer": "no", "gold_ctx": []},  # no context: a cited sentence, its citation skipped
            {"input": "Q3?", "answer": "no", "gold_ctx": [{"text": "third"}]}]
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    prep = prepare_set("gold/pm", "pubmedqa", {"qa_items": p}, {})
    assert prep.pairs[["claim", "passage", "label"]].values.tolist() == [["Q1?", "first part second part", 1.0],
                                                                        ["Q3?", "third", 0.0]]
    s = prep.stats
    assert (s.n_items, s.n_items_with_pairs, s.n_sentences, s.n_cited_sentences, s.n_pairs) == (3, 2, 3, 3, 2)
    assert dict(s.skipped) == {"empty_passage": 1}


def test_generated_answers_are_one_based_grouped_by_subject_and_counted_by_item(tmp_path):
    recs = [{"id": "g1", "subject": "bio", "output": "A holds [1]. B holds [2]. C holds [3].",
             "ctxs": [{"text": "a holds"}, {"text": "b holds"}]},
            {"id": "g2", "output": "D holds [1].", "ctxs": [{"text": "d holds"}]}]
    p = tmp_path / "gen.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs))
    prep = prepare_set("generated/x", "ctxs_answers", {"gen": p}, {})
    got = prep.pairs[["item_id", "passage_index", "passage", "group"]].values.tolist()
    assert got == [["g1", 0, "a holds", "bio"], ["g1", 1, "b holds", "bio"], ["g2", 0, "d holds", "gen"]]
    s = prep.stats
    assert (s.n_items, s.n_items_with_pairs, s.n_pairs, s.n_sentences, s.n_cited_sentences) == (2, 2, 3, 4, 4)
    assert dict(s.skipped) == {"out_of_range": 1} and s.row()["n_skipped"] == 1


def test_a_record_without_sections_is_skipped_and_counted(tmp_path):
    recs = [{"question": "q", "response": {"sections": [{"text": "A holds [1].", "citations": [{"id": "1", "snippets": ["a"]}]}]}},
            {"question": "q", "response": {"text": "no sections here"}}]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(recs))
    prep = prepare_set("released/x", "sections", {"dev": p}, {})
    assert prep.pairs["item_id"].tolist() == ["dev:0"]
    assert dict(prep.stats.skipped) == {"invalid_record": 1} and prep.stats.n_items == 2
    assert prep.skips[["item_id", "reason"]].values.tolist() == [["dev:1", "invalid_record"]]
