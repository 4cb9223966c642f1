"""The authors' kit as an experiment: the slice through HF datasets (offline path, md5 check) and
the kit analyses on values worked out by hand."""
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import MIRROR as _MIRROR
from conftest import require_mirror
from hypothesis import given, settings
from hypothesis import strategies as st

from citebound.study import kit

require_mirror()

MIRROR = Path(_MIRROR)
MANIFEST = json.loads((MIRROR / "citation_guard" / "bioasq_slice_manifest.json").read_text())
QA_CSV = MIRROR / "rag_mini_bioasq" / "question-answer-passages_test.csv"


@pytest.fixture(scope="module")
def qa_rows():
    return kit.load_rows({"format": "csv", "data_files": str(QA_CSV)})  # the datasets code path


@pytest.fixture(scope="module")
def local_dataset(qa_rows, tmp_path_factory):
    """A 4-question dataset of the hub's schema written as parquet, as rule kit_test_data does."""
    d = tmp_path_factory.mktemp("kit")
    qa, corpus, manifest = kit.stand_in_dataset(MANIFEST, qa_rows, 4)
    qa.to_parquet(d / "qa.parquet", index=False)
    corpus.to_parquet(d / "corpus.parquet", index=False)
    return d, manifest


def load_local(d):
    qa = kit.load_rows({"format": "parquet", "data_files": str(d / "qa.parquet")})
    corpus = kit.load_rows({"format": "parquet", "data_files": str(d / "corpus.parquet")})
    return qa, kit.passage_table(corpus)


# ---------------------------------------------------------------- data

def test_every_manifest_entry_matches_the_mirrored_rows(qa_rows):
    """All 200 entries: the row exists, its question's sha256 prefix and its PubMed ids are the manifest's."""
    assert len(qa_rows) == 4719
    for m in MANIFEST["entries"]:
        q = qa_rows[m["qa_row"]]
        assert hashlib.sha256(q["question"].encode()).hexdigest()[:16] == m["q_sha16"]
        assert set(m["pmids"]) <= set(kit.pmid_list(q["relevant_passage_ids"]))
    _, _, small = kit.stand_in_dataset(MANIFEST, qa_rows, 200)  # runs slice_records over every entry
    assert len(small["entries"]) == 200


def test_local_parquet_through_datasets_rebuilds_and_verifies(local_dataset):
    d, manifest = local_dataset
    qa, passages = load_local(d)
    records, md5 = kit.rebuild_slice(manifest, qa, passages)
    assert md5 == manifest["expected_md5"] == hashlib.md5(json.dumps(records, ensure_ascii=False, indent=2).encode()).hexdigest()
    first = MANIFEST["entries"][0]
    assert records[0]["id"] == first["id"] and [c["title"] for c in records[0]["ctxs"]] == [f"PMID:{p}" for p in first["pmids"]]
    assert records[0]["input"] == qa[first["qa_row"]]["question"]
    assert records[0]["output"] == qa[first["qa_row"]]["answer"].strip()


def test_md5_mismatch_fails_naming_the_first_changed_record(local_dataset):
    d, manifest = local_dataset
    qa, passages = load_local(d)
    pmid = manifest["entries"][1]["pmids"][0]
    changed = {**passages, pmid: passages[pmid] + " "}
    assert pmid not in manifest["entries"][0]["pmids"]  # so entry 1 is the first record that changes
    with pytest.raises(kit.KitDataError, match=r"md5 .* != manifest .*first differing record: entry 1, bioasq_583, qa row 583"):
        kit.rebuild_slice(manifest, qa, changed)
    # the authors' manifest has no per-record md5s: the message still says what matched
    bare = {**manifest, "entries": [{k: v for k, v in m.items() if k != "record_md5"} for m in manifest["entries"]]}
    with pytest.raises(kit.KitDataError, match="PubMed ids matched, so passage or answer text differs$"):
        kit.rebuild_slice(bare, qa, changed)


def test_row_hash_and_pmid_checks_name_the_entry(local_dataset):
    d, manifest = local_dataset
    qa, passages = load_local(d)
    e = manifest["entries"]
    swapped = [dict(r) for r in qa]
    swapped[e[2]["qa_row"]] = dict(qa[0])
    with pytest.raises(kit.KitDataError, match=rf"manifest entry 2 \({e[2]['id']}, qa row {e[2]['qa_row']}\): question hash"):
        kit.rebuild_slice(manifest, swapped, passages)
    with pytest.raises(kit.KitDataError, match="entry 0 .*only 10 rows"):
        kit.rebuild_slice(manifest, qa[:10], passages)
    stray = {**manifest, "entries": [{**e[0], "pmids": e[0]["pmids"] + [1]}] + e[1:]}
    with pytest.raises(kit.KitDataError, match=r"entry 0 .*PubMed ids \[1\] are not among"):
        kit.rebuild_slice(stray, qa, passages)
    missing = {k: v for k, v in passages.items() if k != e[3]["pmids"][-1]}
    with pytest.raises(kit.KitDataError, match=rf"entry 3 .*\[{e[3]['pmids'][-1]}\] are not in the passage corpus"):
        kit.rebuild_slice(manifest, qa, missing)


def test_a_manifest_row_exactly_one_past_the_split_is_named(local_dataset):
    d, manifest = local_dataset
    qa, passages = load_local(d)
    row = manifest["entries"][0]["qa_row"]
    with pytest.raises(kit.KitDataError, match=rf"entry 0 .*qa row {row}\): the QA split has only {row} rows"):
        kit.rebuild_slice(manifest, qa[:row], passages)


def test_a_stand_in_passage_joins_at_most_max_answers_answers(qa_rows):
    """Each PubMed id of the first three entries gets the answers of the QA rows that list it, in row order, cut to
    max_answers and joined by a space (worked out here from the rows directly); three of entry 2's ids are listed
    by two rows, so max_answers 1 must drop one answer there."""
    pmids = sorted({int(p) for e in MANIFEST["entries"][:3] for p in e["pmids"]})
    listing = {p: [str(r["answer"]).strip() for r in qa_rows if p in kit.pmid_list(r["relevant_passage_ids"])]
               for p in pmids}
    assert sum(len(v) == 2 for v in listing.values()) == 3
    for max_answers in (1, 2):
        _, corpus, _ = kit.stand_in_dataset(MANIFEST, qa_rows, 3, max_answers=max_answers)
        got = dict(zip(corpus["id"].tolist(), corpus["passage"]))
        assert got == {p: " ".join(v[:max_answers]) for p, v in listing.items()}


def test_hub_failure_falls_back_to_the_mirror_for_qa_and_names_the_missing_corpus(monkeypatch, tmp_path):
    import logging

    monkeypatch.setenv("CITEBOUND_DATA_MIRROR", str(MIRROR))
    import datasets
    import huggingface_hub

    # offline as this machine is, without waiting for the network timeouts
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    hub = {"repo": "rag-datasets/rag-mini-bioasq", "split": "test", "revision": "main"}
    with pytest.raises(kit.KitDataError, match="passage corpus .*not mirrored.*experiment=kit_smoke"):
        kit.hub_tables({**hub, "config": "question-answer-passages"}, {**hub, "config": "text-corpus"},
                       "rag_mini_bioasq/question-answer-passages_test.csv", tmp_path, logging.getLogger("t"))


# ---------------------------------------------------------------- metrics by hand

def test_rouge_l_recall_by_hand():
    # LCS of "the cat sat on the mat" and "the cat is on the mat" is "the cat on the mat": 5 of 6
    assert kit.rouge_l_recall("The cat sat on the mat.", "the cat is on the mat") == pytest.approx(5 / 6)
    assert kit.rouge_l_recall("mat the", "the mat") == pytest.approx(1 / 2)
    # a word the candidate repeats matches one reference word once: "the the the" against "the cat": 1 of 2
    assert kit.rouge_l_recall("the the the", "the cat") == pytest.approx(1 / 2)
    assert kit.rouge_l_recall("anything", "") == 0.0
    # caps: the reference cut to its first 2 words, the candidate to its first 1
    assert kit.rouge_l_recall("the cat", "the cat is on", max_reference=2) == 1.0
    assert kit.rouge_l_recall("the cat", "the cat is on", max_candidate=1) == pytest.approx(1 / 4)


def test_citation_prf_by_hand():
    ans = ("Levels increased in treated patients [1]. The drug was found to help in trials [3]. "
           "Another finding was reported without any marker. Short one [2].")
    r = kit.citation_prf(ans, 2, r"increas|found|finding")
    # cited ids {1, 3, 2}: 1 and 2 in range -> P = 2/3; cue sentences: 3, of which 2 carry a marker -> R = 2/3
    assert r["citation_precision"] == pytest.approx(2 / 3)
    assert r["citation_recall"] == pytest.approx(2 / 3)
    assert r["citation_f1"] == pytest.approx(2 / 3)
    none = kit.citation_prf("Nothing here matches the pattern at all.", 3, r"increas")
    assert none == {"citation_precision": 1.0, "citation_recall": 0.0, "citation_f1": 0.0}
    # precision 0 (the only id, 9, past 2 passages) and recall 0 (the cued sentence has no marker): F1 0, not 0 / 0
    both = kit.citation_prf("Levels increased a lot. Another sentence here [9].", 2, r"increas")
    assert both == {"citation_precision": 0.0, "citation_recall": 0.0, "citation_f1": 0.0}
    # a 20-character sentence is too short to count; 21 counts
    assert kit.kit_sentences("x" * 19 + ". " + "y" * 20 + ".") == ["y" * 20 + "."]


def test_sentence_support_any_citation():
    # sentence ids as citebound.study.prepare writes them: '<item id>:<sentence index>' (item ids may hold colons)
    pairs = pd.DataFrame({"item_id": ["a", "a", "a", "b:x"], "sentence_id": ["a:0", "a:0", "a:2", "b:x:1"]})
    sup = kit.sentence_support(pairs, pd.Series([False, True, False, False]))
    assert sup == {"a": {0: True, 2: False}, "b:x": {1: False}}


def test_item_row_coverage_by_hand():
    answer = "Alpha beta gamma [1]. Delta epsilon [2]. Zeta eta."
    reference = "alpha beta delta epsilon zeta"
    rng = np.random.default_rng(0)
    # both cited sentences unsupported: guard and random removal both drop them
    r = kit.item_row(answer, reference, 2, {0: False, 1: False}, r"a", rng)
    assert (r["n_sentences"], r["n_cited"], r["n_unsupported"]) == (3, 2, 2)
    assert r["coverage_answer"] == pytest.approx(1.0)
    assert r["coverage_guard"] == pytest.approx(1 / 5) == r["coverage_random"]  # only "zeta" is left
    # sentence 1 unsupported: the guard keeps alpha beta + zeta (3/5); random removes one of 0 or 1
    r = kit.item_row(answer, reference, 2, {0: True, 1: False}, r"a", np.random.default_rng(1))
    assert r["coverage_guard"] == pytest.approx(3 / 5)
    assert r["coverage_random"] in (pytest.approx(3 / 5), pytest.approx(3 / 5))
    # nothing unsupported: nothing removed
    r = kit.item_row(answer, reference, 2, {0: True}, r"a", rng)
    assert r["coverage_guard"] == r["coverage_random"] == pytest.approx(1.0) and r["n_unsupported"] == 0


def _items(u, c, f1=None):
    n = len(u)
    f1 = f1 if f1 is not None else [0.5] * n
    return pd.DataFrame({"item_id": [str(i) for i in range(n)], "error": False, "n_unsupported": u, "n_cited": c,
                         "citation_precision": 1.0, "citation_recall": f1, "citation_f1": f1,
                         "coverage_answer": 1.0, "coverage_guard": 0.8, "coverage_random": 0.6})


def test_cell_summary_points_and_intervals_recomputed():
    items = _items([1, 0, 3, 0], [4, 2, 5, 1], [0.2, 0.4, 0.9, 1.0])
    out = kit.cell_summary(items, 500, np.random.default_rng(7))
    assert out["unsupported_pct"] == pytest.approx(100 * 4 / 12)
    assert out["citation_f1"] == pytest.approx(0.625)
    assert out["coverage_guard_minus_random"] == pytest.approx(0.2)
    assert (out["n_items"], out["n_cited"], out["n_unsupported"]) == (4, 12, 4)
    idx = np.random.default_rng(7).integers(4, size=(500, 4))  # the same resamples, recomputed plainly
    u, c = np.array([1, 0, 3, 0]), np.array([4, 2, 5, 1])
    rates = [100 * u[i].sum() / c[i].sum() for i in idx]
    assert out["unsupported_pct_ci_low"] == pytest.approx(np.quantile(rates, 0.025))
    assert out["unsupported_pct_ci_high"] == pytest.approx(np.quantile(rates, 0.975))
    f1 = np.array([0.2, 0.4, 0.9, 1.0])
    assert out["citation_f1_ci_high"] == pytest.approx(np.quantile([f1[i].mean() for i in idx], 0.975))


def test_paired_difference_by_hand():
    lit, bare = _items([1, 2, 0], [4, 4, 2]), _items([0, 1, 0], [5, 5, 0])
    out = kit.paired_difference(lit, bare, 300, np.random.default_rng(3))
    assert out["difference_pp"] == pytest.approx(100 * (3 / 10 - 1 / 10))
    assert out["n_items"] == 3
    idx = np.random.default_rng(3).integers(3, size=(300, 3))
    ua, ca, ub, cb = np.array([1, 2, 0]), np.array([4, 4, 2]), np.array([0, 1, 0]), np.array([5, 5, 0])
    d = [100 * (ua[i].sum() / ca[i].sum() - ub[i].sum() / cb[i].sum()) for i in idx if cb[i].sum() and ca[i].sum()]
    assert out["difference_pp_ci_low"] == pytest.approx(np.quantile(d, 0.025))
    assert out["significant_positive"] == (np.quantile(d, 0.025) > 0)


def test_a_positive_paired_difference_whose_interval_reaches_zero_is_not_significant():
    """lit 2 of 8 unsupported against bare 1 of 8: +12.5 pp, but one item carries it all, so a quarter of the
    resamples leave it out and the 2.5% quantile of the resampled differences is below 0 (recomputed here)."""
    lit, bare = _items([2, 0, 0, 0], [2, 2, 2, 2]), _items([1, 0, 0, 0], [2, 2, 2, 2])
    out = kit.paired_difference(lit, bare, 400, np.random.default_rng(9))
    assert out["difference_pp"] == pytest.approx(12.5)
    idx = np.random.default_rng(9).integers(4, size=(400, 4))
    u_a, u_b, c = np.array([2, 0, 0, 0]), np.array([1, 0, 0, 0]), np.array([2, 2, 2, 2])
    low = np.quantile([100 * (u_a[i].sum() - u_b[i].sum()) / c[i].sum() for i in idx], 0.025)
    assert out["difference_pp_ci_low"] == pytest.approx(low) and low <= 0
    assert out["significant_positive"] is False


def test_cross_domain_tau_and_flag_rates_by_hand():
    neg = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    curve = {"alphas": [0.1, 0.2], "tau": [0.88, 0.77]}
    out = kit.cross_domain(neg, [0.1, 0.2], curve, {"m/bare": np.array([0.05, 0.9, 0.95, np.nan])})
    # alpha 0.1: k = ceil(10 * 0.9) = 9 -> tau = 0.9 (flags 0.05 and 0.9: 2 of 3 finite scores);
    # alpha 0.2: k = ceil(10 * 0.8) = 8 -> tau = 0.8 (flags 0.05: 1 of 3)
    assert out["tau"].tolist() == [0.9, 0.8]
    assert out["tau_authors"].tolist() == [0.88, 0.77]
    assert out["flag_rate"].tolist() == pytest.approx([2 / 3, 1 / 3])
    assert out["n_pairs"].tolist() == [3, 3]
    assert out["guaranteed_catch"].tolist() == pytest.approx([0.9, 0.8])  # 1 - alpha


def test_vs_authors_bands_are_inclusive_and_n_cited_exact():
    expected = {"cells": {"cond_b2": {"citation_f1_mean": 0.5, "unsupported_pct": 2.0, "unsupported_ci95": [1.0, 3.0],
                                      "n_cited": 10}},
                "paired_lit_minus_bare_pp": {"point": 1.0}}
    bands = {"citation_f1_mean": 0.01, "unsupported_pct": 0.5, "unsupported_ci95_low": 0.5,
             "unsupported_ci95_high": 0.5, "n_cited": 0, "paired_difference_pp": 0.5}
    ours = {"cond_b2": {"citation_f1": 0.51, "unsupported_pct": 2.6, "unsupported_pct_ci_low": 0.5,
                        "unsupported_pct_ci_high": 3.25, "n_cited": 11}}
    t = kit.vs_authors(ours, {"difference_pp": 1.5}, expected, bands).set_index("metric")
    assert t.loc["citation_f1_mean", "within_band"]  # |0.51 - 0.5| = 0.01: on the band, inside
    assert not t.loc["unsupported_pct", "within_band"] and t.loc["unsupported_pct", "difference"] == pytest.approx(0.6)
    assert t.loc["unsupported_ci95_low", "within_band"] and t.loc["unsupported_ci95_high", "within_band"]
    assert not t.loc["n_cited", "within_band"]
    assert t.loc["paired_difference_pp", "within_band"]
    missing = kit.vs_authors({}, None, expected, bands)
    assert not missing["within_band"].any() and math.isnan(missing["ours"].iloc[0])


def test_summaries_one_row_per_cell_and_lit_minus_bare_per_model():
    items = {("m", "bare"): _items([0, 1], [2, 2]), ("m", "lit"): _items([1, 1], [2, 2]),
             ("m", "openscholar"): _items([0, 0], [1, 1])}
    cells, paired = kit.summaries(items, 100, 0)
    assert cells["cell"].tolist() == ["cond_b2", "cond_lit", "cond_os"]
    assert cells["unsupported_pct"].tolist() == pytest.approx([25.0, 50.0, 0.0])
    assert paired["difference_pp"].tolist() == pytest.approx([25.0])


# ---------------------------------------------------------------- citation P/R/F1 against a reference

@st.composite
def kit_answers(draw):
    n_passages = draw(st.integers(0, 4))
    sents = []
    for _ in range(draw(st.integers(0, 6))):
        words = draw(st.lists(st.sampled_from(["cells", "grow", "increased", "finding", "found", "protein", "x"]),
                              min_size=1, max_size=8))
        marks = draw(st.lists(st.integers(0, 6), max_size=3))  # 0 and past n_passages: out of range
        sents.append((words, marks))
    return n_passages, sents


@settings(max_examples=300, deadline=None)
@given(kit_answers())
def test_citation_prf_equals_a_reference_from_the_answers_spec(spec):
    """The kit's definitions, computed from what was generated (not by parsing): precision = distinct
    in-range ids / distinct ids (1 with none); recall = cued sentences longer than 20 characters that
    carry a marker / such cued sentences (0 with none); F1 their harmonic mean (0 when both are 0)."""
    n, sents = spec
    rendered = [" ".join(words) + "".join(f" [{m}]" for m in marks) + "." for words, marks in sents]
    answer = " ".join(rendered)
    ids = {m for _, marks in sents for m in marks}
    precision = len({i for i in ids if 1 <= i <= n}) / len(ids) if ids else 1.0
    cue = {"increased", "finding", "found"}
    cued = [(s, marks) for s, (words, marks) in zip(rendered, sents) if len(s) > 20 and cue & set(words)]
    recall = sum(1 for _, marks in cued if marks) / len(cued) if cued else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    got = kit.citation_prf(answer, n, r"increas|found|finding")
    assert got["citation_precision"] == pytest.approx(precision)
    assert got["citation_recall"] == pytest.approx(recall)
    assert got["citation_f1"] == pytest.approx(f1)


def test_the_hub_tables_load_each_source_with_the_cache_dir(monkeypatch, tmp_path):
    """With the hub reachable (a loader that records what it is asked), the QA rows and the corpus rows are each
    loaded from their own source, with the cache folder given, and returned in that order."""
    import logging

    asked = []

    def loader(source, cache_dir=None):
        asked.append((source["config"], cache_dir))
        return [{"from": source["config"]}]

    monkeypatch.setattr(kit, "load_rows", loader)
    hub = {"repo": "rag-datasets/rag-mini-bioasq", "split": "test", "revision": "main"}
    qa, corpus = kit.hub_tables({**hub, "config": "qa"}, {**hub, "config": "corpus"}, "x.csv", tmp_path,
                                logging.getLogger("t"))
    assert (qa, corpus) == ([{"from": "qa"}], [{"from": "corpus"}])
    assert asked == [("qa", tmp_path), ("corpus", tmp_path)]


def test_each_stand_in_entry_carries_the_md5_of_its_own_record(qa_rows):
    """The stand-in manifest's entries, each with the md5 of its record's JSON as the slice rebuilds it (entry i,
    record i): worked out here from the rebuilt records."""
    import hashlib
    import json

    qa, corpus, small = kit.stand_in_dataset(MANIFEST, qa_rows, 3)
    records = kit.slice_records([dict(m) for m in MANIFEST["entries"][:3]], qa_rows,
                                kit.passage_table(corpus.to_dict("records")))
    want = [hashlib.md5(json.dumps(r, ensure_ascii=False).encode()).hexdigest() for r in records]
    assert len(set(want)) == 3 and [m["record_md5"] for m in small["entries"]] == want
