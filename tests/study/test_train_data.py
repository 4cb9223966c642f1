"""The staged training sets: counts and label maps against train/SOURCES.md, the readers on hand-made
files in each format, and the dedupe against evaluation claims."""
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from citebound.scoring.io import DataError
from citebound.study.train_data import read_train_sets
from citebound.training.evaluation import claim_key, dedupe_against

TRAIN = Path(os.environ.get("CITEBOUND_DATA_MIRROR", Path(__file__).resolve().parents[3] / "shared" / "data")) / "train"


@pytest.mark.skipif(not (TRAIN / "SOURCES.md").exists(), reason="no staged training data: set CITEBOUND_DATA_MIRROR")
def test_staged_sets_match_the_counts_sources_md_gives():
    ts = read_train_sets(TRAIN)
    by = ts.pairs.groupby("source")["label"].agg(["size", "sum"])
    # SOURCES.md: pairs (supported) per set
    want = {"check_covid": (1504, 505), "scitab": (1224, 457), "fever_symmetric": (1416, 706),
            "begin": (4368, 1631), "scifact_train_rte": (564, 370),
            "wice": (1043 + 1070 + 374, 342 + 330),  # oracle chunks dev + test, plus 374 partial hard negatives
            "evidence_inference": (3 * 3608, 3608)}  # 3,608 unique gold triples, each templated three ways
    assert {s: tuple(int(x) for x in by.loc[s]) for s in want} == want
    assert ts.skipped["begin", "generic_response"] == 85
    assert ts.skipped["fever_symmetric", "duplicate_pair"] == 4  # 1,420 rows, 1,416 unique pairs
    assert set(ts.pairs.domain) == {"biomedical", "scholarly", "general"}
    assert ts.pairs.pair_id.is_unique and ts.pairs.claim.str.strip().astype(bool).all()


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def test_readers_on_hand_made_files(tmp_path):
    r = tmp_path
    _write(r, "check_covid/Check-COVID/corpus.json",
           json.dumps({"cord_id": "c1", "abstract": ["S0.", "S1.", "S2."]}) + "\n")
    _write(r, "check_covid/Check-COVID/Check-COVID_all.json", "\n".join(json.dumps(x) for x in [
        {"claim": "A ", "cord_id": "c1", "label": "SUPPORT", "evidence_set": [{"sent_index": 2}, {"sent_index": 0}]},
        {"claim": "B", "cord_id": "c1", "label": "NOTENOUGHINFO", "evidence_set": [{"sent_index": 1}]},
        {"claim": "C", "cord_id": "c1", "label": "REFUTE", "evidence_set": [{"sent_index": 7}]}]) + "\n")
    _write(r, "begin/wow/begin_dev_wow.tsv", "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
           "t5\twow\tK one\tm\tR \"one\"\tFully attributable\n"
           "t5\twow\tK two\tm\tR two\tNot fully attributable\n"
           "t5\twow\tK three\tm\tR three\tGeneric\n")
    _write(r, "begin/wow/begin_test_wow.tsv", "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n")
    _write(r, "begin/cmu-dog/begin_dev_cmu.tsv", "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n")
    _write(r, "fever_symmetric/symmetric_v0.2/fever_symmetric_dev.jsonl", "\n".join(json.dumps(x) for x in [
        {"claim": "X -LRB- film -RRB- is good .", "evidence": "It is bad .", "label": "REFUTES"},
        {"claim": "X -LRB- film -RRB- is good .", "evidence": "It is bad .", "label": "REFUTES"}]) + "\n")
    _write(r, "fever_symmetric/symmetric_v0.2/fever_symmetric_test.jsonl",
           json.dumps({"claim": "Y is old .", "evidence": "Y was built in 1900 .", "label": "SUPPORTS"}) + "\n")
    ts = read_train_sets(r, ["check_covid", "begin", "fever_symmetric"])
    p = ts.pairs.set_index("pair_id")
    assert list(p.loc[["check_covid:1", "check_covid:2"], "evidence"]) == ["S0. S2.", "S1."]  # sentences in order
    assert list(p.loc[["check_covid:1", "check_covid:2"], "label"]) == [1, 0] and p.loc["check_covid:1", "claim"] == "A"
    assert ts.skipped["check_covid", "unresolved_evidence"] == 1  # index 7 of a 3-sentence abstract
    begin = ts.pairs[ts.pairs.source == "begin"]
    assert list(begin.claim) == ['R "one"', "R two"] and list(begin.label) == [1, 0]  # quotes kept: QUOTE_NONE
    assert ts.skipped["begin", "generic_response"] == 1
    fever = ts.pairs[ts.pairs.source == "fever_symmetric"]
    assert list(fever.claim) == ["X (film) is good.", "Y is old."] and list(fever.label) == [0, 1]
    assert ts.skipped["fever_symmetric", "duplicate_pair"] == 1


def test_reserved_and_unknown_sources_are_refused(tmp_path):
    with pytest.raises(DataError, match="reserved for the independent check"):
        read_train_sets(tmp_path, ["healthver"])
    with pytest.raises(DataError, match="unknown training source 'nope'"):
        read_train_sets(tmp_path, ["nope"])


def test_dedupe_against_evaluation_claims():
    pairs = pd.DataFrame({"source": ["a", "a", "b", "b"], "claim": ["Aspirin works.", "Statins, too!", "aspirin WORKS",
                                                                     "Other"],
                          "evidence": ["e"] * 4, "label": [1, 0, 1, 0]})
    assert claim_key("  Aspirin, WORKS! ") == "aspirin works"
    kept, removed = dedupe_against(pairs, {"scifact_dev": ["aspirin works"], "gold": ["statins too", "aspirin works."]})
    assert list(kept.claim) == ["Other"]
    assert list(kept.columns) == ["source", "claim", "evidence", "label"] and kept.index.tolist() == [0]
    r = removed.set_index(["eval_set", "source"])["removed"]
    assert (r["scifact_dev", "a"], r["scifact_dev", "b"], r["gold", "a"], r["gold", "b"]) == (1, 1, 2, 1)


def test_a_record_without_a_schema_field_names_its_file_and_line(tmp_path):
    r = tmp_path
    # FEVER line 2 lacks "evidence"
    _write(r, "fever_symmetric/symmetric_v0.2/fever_symmetric_dev.jsonl", "\n".join(json.dumps(x) for x in [
        {"claim": "Y is old .", "evidence": "Y was built in 1900 .", "label": "SUPPORTS"},
        {"claim": "Z is new .", "label": "REFUTES"}]) + "\n")
    _write(r, "fever_symmetric/symmetric_v0.2/fever_symmetric_test.jsonl", "")
    dev = r / "fever_symmetric/symmetric_v0.2/fever_symmetric_dev.jsonl"
    with pytest.raises(DataError, match=f"^{dev}:2: no field 'evidence'"):
        read_train_sets(r, ["fever_symmetric"])
    # a TSV row counts its header: BEGIN's third line (second record) lacks the response column's value
    hdr = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    _write(r, "begin/wow/begin_dev_wow.tsv", hdr + "t5\twow\tK\tm\tR\tGeneric\n" + "t5\twow\tK\tm\n")
    for rel in ("begin/wow/begin_test_wow.tsv", "begin/cmu-dog/begin_dev_cmu.tsv"):
        _write(r, rel, hdr)
    # the short row has no label: it is counted as unknown, and a row with a label but no response is an error
    ts = read_train_sets(r, ["begin"])
    assert ts.skipped["begin", "unknown_label"] == 1 and ts.skipped["begin", "generic_response"] == 1
    _write(r, "begin/wow/begin_dev_wow.tsv", "knowledge\tbegin_label\n" + "K\tGeneric\n" + "K\tFully attributable\n")
    with pytest.raises(DataError, match=r"begin_dev_wow.tsv:3: no field 'response'"):
        read_train_sets(r, ["begin"])
    # a CSV without a column the schema has
    d = r / "evidence_inference/annotations"
    _write(r, "evidence_inference/annotations/README.md", "")
    _write(r, "evidence_inference/annotations/prompts_merged.csv", "PromptID,Intervention,Outcome\n1,a,b\n")
    _write(r, "evidence_inference/annotations/v2_annotations.csv", "PromptID,Valid Label,Annotations,Label Code\n")
    with pytest.raises(DataError, match=rf"^{d / 'prompts_merged.csv'}: no column\(s\) \['Comparator'\]"):
        read_train_sets(r, ["evidence_inference"])


def test_reader_edges_on_hand_made_files(tmp_path):
    """An evidence index one past the abstract is unresolved; not-enough-information is its own kind; Evidence
    Inference's label code -1 means the intervention decreased the outcome, and a prompt the README lists as incorrect
    is skipped; SciFact-RTE's claims lose the quotes around them; a pair with blank evidence is counted and left out."""
    r = tmp_path
    _write(r, "check_covid/Check-COVID/corpus.json",
           json.dumps({"cord_id": "c1", "abstract": ["S0.", "S1.", "S2."]}) + "\n")
    _write(r, "check_covid/Check-COVID/Check-COVID_all.json", "\n".join(json.dumps(x) for x in [
        {"claim": "A", "cord_id": "c1", "label": "SUPPORT", "evidence_set": [{"sent_index": 3}]},
        {"claim": "B", "cord_id": "c1", "label": "NOTENOUGHINFO", "evidence_set": [{"sent_index": 2}]},
        {"claim": "C", "cord_id": "c1", "label": "REFUTE", "evidence_set": [{"sent_index": 0}]}]) + "\n")
    _write(r, "evidence_inference/annotations/README.md", "# Notes\n\n### Incorrect:\n7, 9\n\n### Other\n")
    _write(r, "evidence_inference/annotations/prompts_merged.csv",
           "PromptID,Intervention,Comparator,Outcome\n5,Aspirin,placebo,headache\n7,Zinc,placebo,colds\n")
    _write(r, "evidence_inference/annotations/v2_annotations.csv",
           "PromptID,Valid Label,Annotations,Label Code\n5,True,Headaches fell with aspirin.,-1\n"
           "7,True,Colds were fewer.,-1\n")
    _write(r, "scifact_train_rte/RTE-scifact/train.tsv", "index\tsentence1\tsentence2\tentailment\n"
           "0\tAspirin reduced \"risk\".\t\"Aspirin \"\"reduces\"\" risk.\"\tentailment\n"
           "1\t \tBlank evidence here.\tnot_entailment\n")
    ts = read_train_sets(r, ["check_covid", "evidence_inference", "scifact_train_rte"])
    cc = ts.pairs[ts.pairs.source == "check_covid"]
    assert list(cc.claim) == ["B", "C"] and list(cc.kind) == ["nei", "refute"] and list(cc.label) == [0, 0]
    assert ts.skipped["check_covid", "unresolved_evidence"] == 1  # index 3 of a 3-sentence abstract
    ei = ts.pairs[ts.pairs.source == "evidence_inference"].set_index("claim")
    assert len(ei) == 3 and ts.skipped["evidence_inference", "incorrect_prompt"] == 1
    assert ei.loc["Aspirin significantly decreased headache compared with placebo.", "label"] == 1
    assert ei.loc["Aspirin significantly increased headache compared with placebo.", "kind"] == "refute"
    assert ei.loc["Aspirin did not significantly change headache compared with placebo.", "label"] == 0
    sf = ts.pairs[ts.pairs.source == "scifact_train_rte"]
    assert list(sf.claim) == ['Aspirin "reduces" risk.'] and list(sf.kind) == ["support"]
    assert ts.skipped["scifact_train_rte", "blank_claim_or_evidence"] == 1
