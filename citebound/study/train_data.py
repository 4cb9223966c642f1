"""The staged claim-evidence training sets (``$CITEBOUND_DATA_MIRROR/train/``), read into one table.

Each reader follows ``train/SOURCES.md`` (schema, label map, gotchas) and returns rows
``source, domain, pair_id, claim, evidence, label`` with ``label`` 1 (supported) or 0 (not supported:
refuted, not enough information, partial). Rows a reader cannot use are counted by reason, never
dropped silently. :func:`dedupe_against` removes every training pair whose claim is also a claim of an
evaluation set, and counts what it removed per evaluation set.

ExpertQA and HealthVer are reserved for an independent check and are never read here.
"""
from __future__ import annotations

import ast
import csv
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from citebound.scoring.io import DataError
from citebound.training.evaluation import claim_key, dedupe_against  # noqa: F401 (the study's dedupe is the core's)

COLUMNS = ["source", "domain", "pair_id", "claim", "evidence", "label", "kind"]
# what a label 0 is, where the source says: "refute" (the evidence contradicts the claim), "nei" (not enough
# information), or "unsupported" (not told apart); a label 1 is "support"
KINDS = ("support", "refute", "nei", "unsupported")
RESERVED = ("expertqa", "healthver")  # the independent check's sets: never read, trained or tuned on


@dataclass
class TrainSet:
    pairs: pd.DataFrame
    skipped: Counter = field(default_factory=Counter)  # (source, reason) -> count


class Record(dict):
    """One staged record that knows where it came from: a field the schema promises but the record lacks
    is a :class:`DataError` naming the file and line (or index), not a bare ``KeyError``."""

    def __init__(self, data: Mapping, where: str):
        if not isinstance(data, Mapping):
            raise DataError(f"{where}: expected an object, got {type(data).__name__}")
        super().__init__(data)
        self.where = where

    def __missing__(self, key: str):
        raise DataError(f"{self.where}: no field {key!r} (train/SOURCES.md gives this file's schema)")


def _rows(source: str, domain: str, items: Iterable[tuple]) -> list[dict]:
    """Rows of ``(pid, claim, evidence, label[, kind])``; without a kind, a label 0 is "unsupported"."""
    return [{"source": source, "domain": domain, "pair_id": f"{source}:{it[0]}", "claim": it[1], "evidence": it[2],
             "label": it[3], "kind": it[4] if len(it) > 4 else ("support" if it[3] else "unsupported")}
            for it in items]


def _jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}:{i}: not JSON ({e.msg})") from None
                yield i, Record(obj, f"{path}:{i}")


def read_check_covid(root: Path, skipped: Counter) -> list[dict]:
    """Check-COVID: claim vs the cited CORD-19 abstract sentences; SUPPORT -> 1, REFUTE/NEI -> 0."""
    d = root / "check_covid" / "Check-COVID"
    corpus = {r["cord_id"]: r["abstract"] for _, r in _jsonl(d / "corpus.json")}
    out = []
    for i, r in _jsonl(d / "Check-COVID_all.json"):
        abstract = corpus.get(r.get("cord_id"))
        idx = [e.get("sent_index") for e in r.get("evidence_set") or []]
        if abstract is None or not idx or any(not isinstance(k, int) or not 0 <= k < len(abstract) for k in idx):
            skipped["check_covid", "unresolved_evidence"] += 1
            continue
        out.append((f"{i}", r["claim"].strip(), " ".join(abstract[k] for k in sorted(set(idx))),
                    int(r["label"] == "SUPPORT"), {"SUPPORT": "support", "REFUTE": "refute"}.get(r["label"], "nei")))
    return _rows("check_covid", "biomedical", out)


def _table_text(r: dict) -> str:
    cols, rows = (_listed(r[k]) for k in ("table_column_names", "table_content_values"))
    lines = [r.get("table_caption", ""), " | ".join(map(str, cols))] + [" | ".join(map(str, x)) for x in rows]
    return re.sub(r"\[BOLD\]\s*", "", "\n".join(lines)).strip()


def read_scitab(root: Path, skipped: Counter) -> list[dict]:
    """SciTab: claim vs its linearised table (caption, header, rows); supports -> 1."""
    path = root / "scitab" / "dataset" / "sci_tab.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for i, r in enumerate(data):
        r = Record(r, f"{path}[{i}]")
        try:
            table = _table_text(r)
        except (ValueError, SyntaxError, KeyError):
            skipped["scitab", "unreadable_table"] += 1
            continue
        out.append((str(r.get("id", i)), r["claim"].strip(), table, int(r["label"] == "supports"),
                    {"supports": "support", "refutes": "refute"}.get(r["label"], "nei")))
    return _rows("scitab", "scholarly", out)


def _csv(path: Path, columns: Iterable[str]) -> pd.DataFrame:
    """A staged CSV that must have ``columns`` (a clear error naming the file and the missing ones)."""
    df = pd.read_csv(path)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataError(f"{path}: no column(s) {missing} (train/SOURCES.md gives this file's schema)")
    return df


_DIRECTION = {-1: "significantly decreased", 0: "did not significantly change", 1: "significantly increased"}


def read_evidence_inference(root: Path, skipped: Counter) -> list[dict]:
    """Evidence Inference 2.0: claims templated from (intervention, comparator, outcome) in each of the
    three directions; the annotated direction -> 1, the two others -> 0 (refuted)."""
    d = root / "evidence_inference" / "annotations"
    readme = (d / "README.md").read_text(encoding="utf-8")
    m = re.search(r"### Incorrect:\s*\n([\d,\s]+)", readme)
    bad = {int(x) for x in re.findall(r"\d+", m.group(1))} if m else set()
    prompts = _csv(d / "prompts_merged.csv", ("PromptID", "Intervention", "Comparator", "Outcome")).set_index("PromptID")
    ann = _csv(d / "v2_annotations.csv", ("PromptID", "Valid Label", "Annotations", "Label Code"))
    out, seen = [], set()
    for _, a in ann.iterrows():
        pid = int(a["PromptID"])
        if str(a["Valid Label"]).strip() != "True":
            skipped["evidence_inference", "invalid_label"] += 1
            continue
        if pid in bad:
            skipped["evidence_inference", "incorrect_prompt"] += 1
            continue
        ev = a["Annotations"] if isinstance(a["Annotations"], str) else ""
        if not ev.strip() or pid not in prompts.index or a["Label Code"] not in _DIRECTION:
            skipped["evidence_inference", "empty_evidence_or_prompt"] += 1
            continue
        key = (pid, ev.strip(), int(a["Label Code"]))
        if key in seen:
            skipped["evidence_inference", "duplicate_annotation"] += 1
            continue
        seen.add(key)
        p = prompts.loc[pid]
        for code, verb in _DIRECTION.items():
            claim = f"{p['Intervention']} {verb} {p['Outcome']} compared with {p['Comparator']}."
            out.append((f"{pid}:{len(seen)}:{code}", claim, ev.strip(), int(code == key[2]),
                        "support" if code == key[2] else "refute"))
    return _rows("evidence_inference", "biomedical", out)


def _listed(x: object) -> list:
    """A list WiCE stores as its Python repr (``"['a', 'b']"``), or the list itself."""
    return ast.literal_eval(x) if isinstance(x, str) else list(x)


def read_wice(root: Path, skipped: Counter) -> list[dict]:
    """WiCE oracle chunks (dev + test; the same claims as the claim-level files, so only these) and the
    train split's partially supported subclaims (evidence: their supporting sentences) as hard negatives."""
    out = []
    base = root / "wice" / "code_and_resources" / "entailment_inputs" / "oracle_chunks" / "claim"
    for split in ("dev", "test"):
        for i, r in _jsonl(base / f"{split}.jsonl"):
            ev = _listed(r["evidence"])
            out.append((f"{split}:{i}", r["claim"].strip(), " ".join(ev).strip(), int(r["label"] == "supported")))
    for i, r in _jsonl(root / "wice" / "data" / "non_supported_tokens" / "train.jsonl"):
        ev, sup = (_listed(r[k]) for k in ("evidence", "supporting_sentences"))
        idx = sorted({k for group in sup for k in group if isinstance(k, int) and 0 <= k < len(ev)})
        if not idx:
            skipped["wice", "no_supporting_sentence"] += 1
            continue
        out.append((f"train:{i}", r["claim"].strip(), " ".join(ev[k] for k in idx).strip(), 0))
    return _rows("wice", "general", out)


_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "-COLON-": ":"}


def _detok(text: str) -> str:
    for k, v in _PTB.items():
        text = text.replace(k, v)
    return re.sub(r"\s+([.,;:!?)\]}'])", r"\1", re.sub(r"([(\[{])\s+", r"\1", text)).strip()


def read_fever_symmetric(root: Path, skipped: Counter) -> list[dict]:
    """Symmetric FEVER v0.2 (dev + test): SUPPORTS -> 1, REFUTES -> 0; FEVER tokens undone."""
    out, seen = [], set()
    for split in ("dev", "test"):
        for i, r in _jsonl(root / "fever_symmetric" / "symmetric_v0.2" / f"fever_symmetric_{split}.jsonl"):
            key = (r["claim"], r["evidence"])
            if key in seen:
                skipped["fever_symmetric", "duplicate_pair"] += 1
                continue
            seen.add(key)
            out.append((f"{split}:{i}", _detok(r["claim"]), _detok(r["evidence"]), int(r["label"] == "SUPPORTS"),
                        "support" if r["label"] == "SUPPORTS" else "refute"))
    return _rows("fever_symmetric", "general", out)


def _tsv(path: Path) -> Iterable[Record]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        for r in rows:
            yield Record({k: v for k, v in r.items() if v is not None}, f"{path}:{rows.line_num}")


def read_begin(root: Path, skipped: Counter) -> list[dict]:
    """BEGIN (WoW dev + test, CMU-DoG dev): response vs knowledge; Fully attributable -> 1, Not fully -> 0,
    Generic dropped (counted)."""
    out = []
    for rel in ("wow/begin_dev_wow.tsv", "wow/begin_test_wow.tsv", "cmu-dog/begin_dev_cmu.tsv"):
        for i, r in enumerate(_tsv(root / "begin" / rel)):
            lab = (r.get("begin_label") or "").strip()
            if lab == "Generic":
                skipped["begin", "generic_response"] += 1
                continue
            if lab not in ("Fully attributable", "Not fully attributable"):
                skipped["begin", "unknown_label"] += 1
                continue
            out.append((f"{rel}:{i}", r["response"].strip(), r["knowledge"].strip(), int(lab == "Fully attributable")))
    return _rows("begin", "general", out)


def read_scifact_train_rte(root: Path, skipped: Counter) -> list[dict]:
    """SciFact train claims vs rationale sentences (RTE format): entailment -> 1."""
    out = []
    for r in _tsv(root / "scifact_train_rte" / "RTE-scifact" / "train.tsv"):
        claim = r["sentence2"].strip().strip('"').replace('""', '"')
        ok = r["entailment"] == "entailment"  # not_entailment rows are SciFact's CONTRADICT (no NEI rows here)
        out.append((r["index"], claim, r["sentence1"].strip(), int(ok), "support" if ok else "refute"))
    return _rows("scifact_train_rte", "biomedical", out)


READERS: Mapping[str, Callable[[Path, Counter], list[dict]]] = {
    "check_covid": read_check_covid, "scitab": read_scitab, "evidence_inference": read_evidence_inference,
    "wice": read_wice, "fever_symmetric": read_fever_symmetric, "begin": read_begin,
    "scifact_train_rte": read_scifact_train_rte,
}


def read_train_sets(root: str | Path, sources: Iterable[str] | None = None) -> TrainSet:
    """The staged sets under ``root`` (``$CITEBOUND_DATA_MIRROR/train``), or the named ones.
    Blank claims or evidence are counted per source and left out."""
    root = Path(root)
    names = list(READERS) if sources is None else list(sources)
    for n in names:
        if n not in READERS:
            hint = " (reserved for the independent check)" if n.lower() in RESERVED else ""
            raise DataError(f"unknown training source {n!r}{hint}; valid: {', '.join(READERS)}")
    skipped: Counter = Counter()
    rows = []
    for n in names:
        for r in READERS[n](root, skipped):
            if not r["claim"] or not r["evidence"]:
                skipped[n, "blank_claim_or_evidence"] += 1
                continue
            rows.append(r)
    return TrainSet(pd.DataFrame(rows, columns=COLUMNS), skipped)
