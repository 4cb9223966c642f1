"""What each training pair is, on hand-made files (#56, round 90): a label-0 pair of a source that does not tell a
refutation from missing information is "unsupported"; SciTab's not-enough-info claims are "nei"; a SciTab table's
text keeps its header row; a WiCE subclaim's evidence is every sentence of every supporting group."""
import json
from pathlib import Path

from citebound.study.train_data import read_train_sets


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _jsonl(rows) -> str:
    return "".join(json.dumps(x) + "\n" for x in rows)


def test_begin_and_wice_label_0_pairs_are_unsupported_and_wice_evidence_joins_every_group(tmp_path):
    r, head = tmp_path, "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    _write(r, "begin/wow/begin_dev_wow.tsv", head + "t5\twow\tK one\tm\tR one\tFully attributable\n"
           "t5\twow\tK two\tm\tR two\tNot fully attributable\n")
    _write(r, "begin/wow/begin_test_wow.tsv", head)
    _write(r, "begin/cmu-dog/begin_dev_cmu.tsv", head + "t5\tcmu\tK three\tm\tR three\tNot fully attributable\n")
    chunks = "wice/code_and_resources/entailment_inputs/oracle_chunks/claim"
    _write(r, f"{chunks}/dev.jsonl", _jsonl([{"claim": "W dev", "evidence": ["E0.", "E1."], "label": "supported"},
                                             {"claim": "W part", "evidence": "['E2.']", "label": "partially_supported"}]))
    _write(r, f"{chunks}/test.jsonl", _jsonl([{"claim": "W test", "evidence": ["E3."], "label": "not_supported"}]))
    _write(r, "wice/data/non_supported_tokens/train.jsonl", _jsonl([
        # supporting sentences in two groups (0 and 3, then 1 and 4, one past the last): the evidence is sentences
        # 0, 1 and 3, in order (an index past the evidence names no sentence)
        {"claim": "W sub", "evidence": ["S0.", "S1.", "S2.", "S3."], "supporting_sentences": [[3, 0], [1, 4]]},
        {"claim": "W none", "evidence": ["T0."], "supporting_sentences": [[]]}]))
    ts = read_train_sets(r, ["begin", "wice"])
    p = ts.pairs.set_index("claim")
    assert p.loc[["R one", "R two", "R three"], "kind"].tolist() == ["support", "unsupported", "unsupported"]
    assert p.loc[["R one", "R two", "R three"], "label"].tolist() == [1, 0, 0]
    assert p.loc[["W dev", "W part", "W test", "W sub"], "kind"].tolist() == ["support", "unsupported", "unsupported",
                                                                              "unsupported"]
    assert p.loc[["W dev", "W part", "W test", "W sub"], "label"].tolist() == [1, 0, 0, 0]
    assert p.loc["W sub", "evidence"] == "S0. S1. S3."
    assert p.loc["W dev", "evidence"] == "E0. E1." and p.loc["W part", "evidence"] == "E2."
    assert ts.skipped["wice", "no_supporting_sentence"] == 1 and "W none" not in p.index


def test_scitab_kinds_and_the_tables_text_with_its_header(tmp_path):
    rows = [{"id": "t1", "claim": "A beats B.", "label": "supports", "table_caption": "Table 1: scores",
             "table_column_names": ["model", "[BOLD] F1"], "table_content_values": [["A", "[BOLD] 0.9"], ["B", "0.7"]]},
            {"id": "t2", "claim": "B beats A.", "label": "refutes", "table_caption": "T2",
             "table_column_names": "['m', 'acc']", "table_content_values": "[['A', '1']]"},
            {"id": "t3", "claim": "C is best.", "label": "not enough info", "table_caption": "T3",
             "table_column_names": ["m"], "table_content_values": [["C"]]}]
    _write(tmp_path, "scitab/dataset/sci_tab.json", json.dumps(rows))
    ts = read_train_sets(tmp_path, ["scitab"])
    p = ts.pairs.set_index("pair_id")
    assert p.loc[["scitab:t1", "scitab:t2", "scitab:t3"], "kind"].tolist() == ["support", "refute", "nei"]
    assert p.loc[["scitab:t1", "scitab:t2", "scitab:t3"], "label"].tolist() == [1, 0, 0]
    # caption, header, then each row, a line each, columns joined by " | ", [BOLD] markers gone
    assert p.loc["scitab:t1", "evidence"] == "Table 1: scores\nmodel | F1\nA | 0.9\nB | 0.7"
    assert p.loc["scitab:t2", "evidence"] == "T2\nm | acc\nA | 1"
