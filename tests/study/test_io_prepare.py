import json

import pytest

from citebound.scoring.io import DataError, FileSpec, fetch_file, read_records, sha256sum
from citebound.study.prepare import PAIR_COLUMNS, prepare_set


def test_fetch_from_mirror_checks_sha256(tmp_path, mirror):
    rel = "citation_guard/expected_results_summary.json"
    good = FileSpec(rel, "https://example.invalid/x", sha256sum(mirror / rel))
    assert fetch_file(good, tmp_path / "ok.json", str(mirror)) == str(mirror / rel)
    bad = FileSpec(rel, "https://example.invalid/x", "0" * 64)
    with pytest.raises(DataError, match=r"expected_results_summary.json: sha256 mismatch"):
        fetch_file(bad, tmp_path / "bad.json", str(mirror))
    assert not (tmp_path / "bad.json").exists()
    with pytest.raises(DataError, match="not found in mirror"):
        fetch_file(FileSpec("nope.json", "u", "0" * 64), tmp_path / "n.json", str(mirror))


def test_truncated_json_names_file_and_line(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('[{"a": 1},\n{"b": ')
    with pytest.raises(DataError, match=r"t.json:2: invalid JSON"):
        read_records(p)
    q = tmp_path / "t.jsonl"
    q.write_text('{"a": 1}\n{"b"\n')
    with pytest.raises(DataError, match=r"t.jsonl:2"):
        read_records(q)


def test_jsonl_that_is_one_array_is_read(tmp_path):
    p = tmp_path / "arr.jsonl"
    p.write_text(json.dumps([{"a": 1}, {"a": 2}], indent=2))
    assert read_records(p) == [{"a": 1}, {"a": 2}]


def test_attribution_gold_labels_and_nan_passages(tmp_path):
    rec = {"id": "q1", "subject": "bio", "output": "Cells make ATP [0]. Corona forms [1, 3]. Plain sentence.",
           "ctxs": [{"text": "cells make atp"}, {"text": "corona"}, {"text": float("nan")}, {"text": "other"}]}
    p = tmp_path / "h.json"
    p.write_text(json.dumps([rec]))  # json.dumps writes the NaN passage as NaN, as in the released file
    prep = prepare_set("gold/attr", "attribution_gold", {"answers": p}, {"citation_base": 0, "fit_fraction": 0.0})
    df = prep.pairs
    assert list(df.columns) == PAIR_COLUMNS
    # sentence 0 x 3 non-empty passages, sentence 1 x 3
    assert len(df) == 6
    s0 = df[df.sentence_id == "q1:0"].set_index("passage_index")["label"].to_dict()
    assert s0 == {0: 1.0, 1: 0.0, 3: 0.0}
    s1 = df[df.sentence_id == "q1:1"].set_index("passage_index")["label"].to_dict()
    assert s1 == {0: 0.0, 1: 1.0, 3: 1.0}
    assert prep.stats.skipped["empty_candidate"] == 2  # NaN passage, once per cited sentence
    assert (prep.stats.n_sentences, prep.stats.n_cited_sentences) == (3, 2)
    assert set(df.split) == {"eval"}


def test_pubmedqa_dict_gold_ctx_is_joined(tmp_path):
    rows = [{"input": "Q1?", "answer": "yes", "gold_ctx": [{"title": "", "text": {"contexts": ["a b", "c"]}}]},
            {"input": "Q2?", "answer": "no", "gold_ctx": [{"title": "", "text": "plain"}]}]
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    df = prepare_set("gold/pm", "pubmedqa", {"qa_items": p}, {}).pairs
    assert df.passage.tolist() == ["a b c", "plain"] and df.label.tolist() == [1.0, 0.0]


def test_bad_scifact_record_names_file_and_line(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"input": "c", "answer": "true", "gold_ctx": [{"text": "t"}]}) + "\n"
                 + json.dumps({"input": "c", "answer": "maybe"}) + "\n")
    with pytest.raises(DataError, match=r"s.jsonl:2: expected 'input' and answer in"):
        prepare_set("gold/sf", "scifact", {"claims": p}, {})


def test_sections_per_section_ids_restart(tmp_path):
    rec = {"question": "q", "response": {"sections": [
        {"text": "A holds [1]. B holds [2].", "citations": [{"id": "1", "snippets": ["s1"]}, {"id": "2", "snippets": []}]},
        {"text": "C holds [1].", "citations": [{"id": "1", "snippets": ["s3"]}]}]}}
    p = tmp_path / "r.json"
    p.write_text(json.dumps([rec]))
    prep = prepare_set("released/x", "sections", {"dev": p}, {})
    assert prep.pairs.passage.tolist() == ["s1", "s3"]
    assert prep.pairs.sentence_id.tolist() == ["dev:0:0", "dev:0:2"]
    assert dict(prep.stats.skipped) == {"empty_passage": 1}


@pytest.mark.parametrize("name,kind,key,path", [
    ("released/nora", "nora", "answers", "scholarqabench/scholarqa_cs/qa_metadata_all.jsonl"),
    ("released/sqa_qwen3", "sections", "expert",
     "ai2_scholarqa_eval_cs2_reports/expert_written/sqa-qwen3_8b_SFT_fullanswer.jsonl"),
])
def test_real_released_files_give_pairs(mirror, name, kind, key, path):
    prep = prepare_set(name, kind, {key: mirror / path}, {})
    assert prep.stats.n_pairs > 500
    assert prep.pairs.passage.str.len().min() > 0
    assert prep.pairs.claim.str.len().max() <= 600


def test_scifact_heldout_from_claims_and_corpus(tmp_path):
    claims = [{"id": 1, "claim": "A causes B.", "evidence": {"10": [{"sentences": [0], "label": "SUPPORT"}]}},
              {"id": 2, "claim": "C blocks D.", "evidence": {"11": [{"sentences": [1], "label": "CONTRADICT"}],
                                                             "99": [{"sentences": [0], "label": "SUPPORT"}]}},
              {"id": 3, "claim": "No evidence here.", "evidence": {}}]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(c) for c in claims))
    corpus = [{"doc_id": 10, "title": "t", "abstract": ["A causes B.", "More."]}, {"_id": "11", "text": "C lets D go."}]
    (tmp_path / "k.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    prep = prepare_set("gold/sf_ho", "scifact_corpus", {"claims": tmp_path / "c.jsonl", "corpus": tmp_path / "k.jsonl"}, {})
    assert prep.pairs[["claim", "passage", "label"]].values.tolist() == [
        ["A causes B.", "A causes B. More.", 1.0], ["C blocks D.", "C lets D go.", 0.0]]
    assert dict(prep.stats.skipped) == {"unknown_id": 1, "nei_claim": 1}


def test_missing_sha256_fails_and_prints_the_value(tmp_path, mirror):
    rel = "citation_guard/expected_results_summary.json"
    with pytest.raises(DataError, match=rf"no sha256 is recorded for {rel}; the fetched file has sha256 {sha256sum(mirror / rel)}"):
        fetch_file(FileSpec(rel, "u", ""), tmp_path / "x.json", str(mirror))


def test_a_failed_fetch_leaves_no_part_file(tmp_path):
    """The copy goes to a .part- file beside the destination; a checksum mismatch (or a missing file) removes it."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "f.json").write_text("[1]")
    dest = tmp_path / "out" / "f.json"
    for spec in (FileSpec("f.json", "u", "0" * 64), FileSpec("nope.json", "u", "0" * 64)):
        with pytest.raises(DataError):
            fetch_file(spec, dest, str(mirror))
        assert list(dest.parent.iterdir()) == []


def test_a_jsonl_file_that_is_one_array_after_blank_lines_is_read_as_the_array(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('\n  \n[{"a": 1},\n {"a": 2}]\n')
    assert read_records(p) == [{"a": 1}, {"a": 2}]


def test_scifact_counts_a_claim_without_evidence_as_uncited_and_skips_mixed_evidence(tmp_path):
    """Three claims: one supported by its abstract, one with no evidence (a sentence, not a cited one), one whose
    abstract has a supporting and a contradicting evidence set (neither label holds: skipped as invalid)."""
    claims = [{"id": 1, "claim": "A causes B.", "evidence": {"10": [{"sentences": [0], "label": "SUPPORT"}]}},
              {"id": 2, "claim": "Nothing known.", "evidence": {}},
              {"id": 3, "claim": "C blocks D.", "evidence": {"11": [{"sentences": [0], "label": "SUPPORT"},
                                                                    {"sentences": [1], "label": "CONTRADICT"}]}}]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(c) for c in claims))
    corpus = [{"doc_id": 10, "abstract": ["A causes B."]}, {"doc_id": 11, "abstract": ["C blocks D.", "C frees D."]}]
    (tmp_path / "k.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    prep = prepare_set("gold/sf", "scifact_corpus", {"claims": tmp_path / "c.jsonl", "corpus": tmp_path / "k.jsonl"}, {})
    assert prep.pairs[["claim", "label"]].values.tolist() == [["A causes B.", 1.0]]
    assert (prep.stats.n_sentences, prep.stats.n_cited_sentences) == (3, 2)
    assert dict(prep.stats.skipped) == {"nei_claim": 1, "invalid_record": 1}


def test_attribution_gold_is_zero_based_unless_its_config_says_and_its_split_follows_the_seed(tmp_path):
    import hashlib

    recs = [{"id": f"q{i}", "output": "Cells make ATP [0].", "ctxs": [{"text": "cells make atp"}, {"text": "other"}]}
            for i in range(40)]
    p = tmp_path / "h.json"
    p.write_text(json.dumps(recs))
    prep = prepare_set("gold/attr", "attribution_gold", {"answers": p}, {"fit_fraction": 0.5})
    first = prep.pairs[prep.pairs.item_id == "q0"].set_index("passage_index")["label"].to_dict()
    assert first == {0: 1.0, 1: 0.0}  # [0] is the first passage
    splits = {}
    for seed in (0, 1):
        prep = prepare_set("gold/attr", "attribution_gold", {"answers": p}, {"fit_fraction": 0.5, "split_seed": seed})
        splits[seed] = prep.pairs.groupby("item_id")["split"].first().to_dict()
        # the split's definition: the first 8 hex digits of sha256("<seed>:<item id>"), as a fraction, below 0.5
        want = {f"q{i}": "fit" if int(hashlib.sha256(f"{seed}:q{i}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < 0.5
                else "eval" for i in range(40)}
        assert splits[seed] == want
    assert splits[0] != splits[1]


def test_frozen_scores_skip_a_nan_and_are_never_capped(tmp_path):
    p = tmp_path / "scores.json"
    p.write_text('{"supported_p_attr_scores": [0.9, NaN, 0.8], "unsupported_p_attr_scores": [0.1, 0.2, 0.3]}')
    prep = prepare_set("frozen/qasa", "frozen_scores", {"scores": p}, {}, max_items=2)
    assert sorted(prep.pairs["frozen_score"].tolist()) == [0.1, 0.2, 0.3, 0.8, 0.9]
    assert prep.pairs["label"].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert dict(prep.stats.skipped) == {"invalid_record": 1} and prep.stats.n_sentences == 6


def test_attribution_gold_skips_name_their_set_item_sentence_and_marker(tmp_path):
    """Base 0, four passages, the third blank: sentence 2 cites [7] (out of range); sentences 0 and 1 each skip the
    blank passage [2] as a candidate. Each skip names its set, its item, its sentence as item:index, its marker and
    why; the stats name the set and its kind."""
    rec = {"id": "q1", "output": "Cells make ATP [0]. Corona forms [1, 3]. Plain sentence [7].",
           "ctxs": [{"text": "cells make atp"}, {"text": "corona"}, {"text": " "}, {"text": "other"}]}
    p = tmp_path / "h.json"
    p.write_text(json.dumps([rec]))
    prep = prepare_set("gold/attr", "attribution_gold", {"answers": p}, {"citation_base": 0, "fit_fraction": 0.0})
    row = {"set": "gold/attr", "item_id": "q1"}
    assert prep.skips.to_dict("records") == [
        row | {"sentence_id": "q1:2", "marker": "[7]", "reason": "out_of_range"},
        row | {"sentence_id": "q1:0", "marker": "[2]", "reason": "empty_candidate"},
        row | {"sentence_id": "q1:1", "marker": "[2]", "reason": "empty_candidate"}]
    assert (prep.stats.set, prep.stats.kind) == ("gold/attr", "attribution_gold")
    assert dict(prep.stats.skipped) == {"empty_candidate": 2, "out_of_range": 1}
