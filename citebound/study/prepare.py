"""Normalise raw gold sets and released answers into one pair-table schema.

Every set (gold or deployment) becomes a parquet table with
:data:`PAIR_COLUMNS`; :class:`SetStats` counts sentences, cited sentences,
pairs and every skipped citation with its reason.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from citebound.scoring.io import DataError, read_json_object, read_records
from citebound.text.citations import CLAIM_CAP, Extraction, citation_passages, extract_pairs, is_blank

PAIR_COLUMNS = [
    "set", "pair_id", "item_id", "sentence_id", "claim", "passage", "passage_index",
    "label", "group", "split", "marker", "frozen_score",
]
SKIP_COLUMNS = ["set", "item_id", "sentence_id", "marker", "reason"]
PASSAGE_COLUMNS = ["item_id", "passage_index", "passage"]


@dataclass
class SetStats:
    """Counts reported in ``results/tables/data_summary.csv``."""

    set: str
    kind: str
    n_items: int = 0
    n_items_with_pairs: int = 0
    n_sentences: int = 0
    n_cited_sentences: int = 0
    n_pairs: int = 0
    n_supported: int = 0
    n_unsupported: int = 0
    skipped: Counter = field(default_factory=Counter)

    def row(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "skipped"}
        skipped = self.skipped
        d["n_skipped"] = int(sum(skipped.values()))
        for reason in ("out_of_range", "unknown_id", "empty_passage", "empty_candidate", "invalid_record",
                       "generation_error", "nei_claim"):
            d[f"skipped_{reason}"] = int(skipped.get(reason, 0))
        return d


@dataclass
class PreparedSet:
    pairs: pd.DataFrame
    skips: pd.DataFrame
    stats: SetStats
    passages: pd.DataFrame  # every non-blank passage each answer had, cited or not (re-attribution proposals)


class _Builder:
    def __init__(self, set_name: str, kind: str, claim_cap: int, max_items: int | None = None):
        self.set_name, self.claim_cap = set_name, claim_cap
        self.rows: list[dict[str, Any]] = []
        self.skips: list[dict[str, Any]] = []
        self.passages: list[dict[str, Any]] = []
        self.stats = SetStats(set=set_name, kind=kind)
        self.seen_items: set[str] = set()
        self.max_items = max_items

    def accept(self, item_id: str) -> bool:
        """Register an item; False once ``max_items`` distinct items were read."""
        if item_id not in self.seen_items and self.max_items is not None and len(self.seen_items) >= self.max_items:
            return False
        self.seen_items.add(item_id)
        return True

    def pair(self, item_id: str, sent: int, claim: str, passage: str, pidx: int, label: float,
             group: str = "", split: str = "", marker: str = "", frozen: float = np.nan) -> None:
        sid = f"{item_id}:{sent}"
        self.seen_items.add(item_id)
        self.rows.append(dict(
            set=self.set_name, pair_id=f"{sid}:{pidx}", item_id=item_id, sentence_id=sid,
            claim=claim[: self.claim_cap], passage=passage, passage_index=pidx, label=label,
            group=group, split=split, marker=marker, frozen_score=frozen,
        ))

    def skip(self, item_id: str, sent: int | str, marker: str, reason: str) -> None:
        self.stats.skipped[reason] += 1
        self.seen_items.add(item_id)
        self.skips.append(dict(set=self.set_name, item_id=item_id, sentence_id=f"{item_id}:{sent}",
                               marker=marker, reason=reason))

    def add_extraction(self, item_id: str, ext: Extraction, passages: list[str], group: str) -> None:
        self.seen_items.add(item_id)
        self.stats.n_sentences += ext.n_sentences
        self.stats.n_cited_sentences += ext.n_cited_sentences
        self.passages += [{"item_id": item_id, "passage_index": k, "passage": t}
                          for k, t in enumerate(passages) if not is_blank(t)]
        for p in ext.pairs:
            self.pair(item_id, p.sentence_index, p.claim, passages[p.passage_index], p.passage_index,
                      np.nan, group=group, marker=p.marker)
        for s in ext.skips:
            self.skip(item_id, s.sentence_index, s.marker, s.reason)

    def finish(self) -> PreparedSet:
        pairs = pd.DataFrame(self.rows, columns=PAIR_COLUMNS)
        if pairs["pair_id"].duplicated().any():
            dup = pairs.loc[pairs["pair_id"].duplicated(), "pair_id"].iloc[0]
            raise DataError(f"{self.set_name}: duplicated pair id {dup}")
        pairs["label"] = pairs["label"].astype(float)
        pairs["passage_index"] = pairs["passage_index"].astype(int)
        s = self.stats
        s.n_items = len(self.seen_items)
        s.n_items_with_pairs = int(pairs["item_id"].nunique())
        s.n_pairs = len(pairs)
        s.n_supported = int((pairs["label"] == 1).sum())
        s.n_unsupported = int((pairs["label"] == 0).sum())
        return PreparedSet(pairs, pd.DataFrame(self.skips, columns=SKIP_COLUMNS), s,
                           pd.DataFrame(self.passages, columns=PASSAGE_COLUMNS))


def _text(x: Any) -> str:
    """Passage text; a dict with 'contexts' (PubMedQA gold_ctx defect) is joined."""
    if isinstance(x, Mapping):
        ctx = x.get("contexts")
        return " ".join(str(c) for c in ctx) if isinstance(ctx, list) else ""
    return "" if is_blank(x) else str(x)


def _split_of(item_id: str, seed: int, fit_fraction: float) -> str:
    h = int(hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "fit" if h < fit_fraction else "eval"


def _prepare_claim_gold(path: Path, prefix: str, labels: Mapping[str, float], b: _Builder) -> None:
    """One claim per record with its gold context(s) and a two-way label."""
    for i, rec in enumerate(read_records(path)):
        item = f"{prefix}:{i}"
        if not b.accept(item):
            break
        if not isinstance(rec, dict) or rec.get("answer") not in labels or not rec.get("input"):
            raise DataError(f"{path}:{i + 1}: expected 'input' and answer in {sorted(labels)}")
        b.stats.n_sentences += 1
        b.stats.n_cited_sentences += 1
        text = " ".join(_text(c.get("text")) for c in rec.get("gold_ctx") or []).strip()
        if not text:
            b.skip(item, 0, "gold_ctx", "empty_passage")
            continue
        b.pair(item, 0, rec["input"], text, 0, labels[rec["answer"]], group=prefix)


def prepare_scifact(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """SciFact claims with their gold abstract: 'true' (SUPPORT) -> 1, 'false' (CONTRADICT) -> 0."""
    _prepare_claim_gold(files["claims"], "scifact", {"true": 1.0, "false": 0.0}, b)


def prepare_pubmedqa(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """PubMedQA questions with their abstract contexts: 'yes' -> 1, 'no' -> 0."""
    _prepare_claim_gold(files["qa_items"], "pubmedqa", {"yes": 1.0, "no": 0.0}, b)


def prepare_scifact_corpus(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """SciFact claims x each cited evidence abstract from the corpus (held-out split)."""
    corpus: dict[str, str] = {}
    for rec in read_records(files["corpus"]):
        doc = str(rec.get("doc_id", rec.get("_id", "")))
        body = rec.get("abstract", rec.get("text", ""))
        body = " ".join(body) if isinstance(body, list) else str(body or "")
        corpus[doc] = body.strip()
    path = files["claims"]
    for i, rec in enumerate(read_records(path)):
        if not isinstance(rec, dict) or "claim" not in rec or not isinstance(rec.get("evidence", {}), dict):
            raise DataError(f"{path}:{i + 1}: expected 'claim' and an 'evidence' object")
        item = f"scifact_train:{rec.get('id', i)}"
        if not b.accept(item):
            break
        b.stats.n_sentences += 1
        if not rec["evidence"]:
            b.skip(item, 0, "", "nei_claim")  # no evidence: neither supported nor refuted
            continue
        b.stats.n_cited_sentences += 1
        for j, (doc, sets) in enumerate(sorted(rec["evidence"].items())):
            label = {s.get("label") for s in sets}
            if doc not in corpus or not corpus[doc]:
                b.skip(item, 0, doc, "unknown_id" if doc not in corpus else "empty_passage")
                continue
            if label not in ({"SUPPORT"}, {"CONTRADICT"}):
                b.skip(item, 0, doc, "invalid_record")
                continue
            b.pair(item, 0, rec["claim"], corpus[doc], j, 1.0 if label == {"SUPPORT"} else 0.0, group="scifact_train")


def _ctxs_records(path: Path, key: str, b: _Builder):
    for i, rec in enumerate(read_records(path)):
        item = str(rec.get("id", f"{key}:{i}")) if isinstance(rec, dict) else f"{key}:{i}"
        if not b.accept(item):
            break
        if isinstance(rec, dict) and rec.get("output") is None and rec.get("error"):
            b.skip(item, 0, "", "generation_error")  # recorded by the generate rule
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("output"), str) or not isinstance(rec.get("ctxs"), list):
            raise DataError(f"{path}: record {i}: expected 'output' (str) and 'ctxs' (list)")
        yield i, rec, [_text(c.get("text") if isinstance(c, dict) else c) for c in rec["ctxs"]]


def prepare_ctxs_source(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """Answers with inline [N] over their own ``ctxs`` (expert answers, generations)."""
    base = int(cfg.get("citation_base", 1))
    for key, path in files.items():
        for i, rec, passages in _ctxs_records(path, key, b):
            item = str(rec.get("id", f"{key}:{i}"))
            ext = extract_pairs(rec["output"], len(passages), base=base,
                                passage_blank=[not p.strip() for p in passages], claim_cap=b.claim_cap)
            b.add_extraction(item, ext, passages, group=str(rec.get("subject", key)))


def prepare_attribution_gold(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """Each cited sentence x every provided passage; cited passages are gold (1)."""
    base = int(cfg.get("citation_base", 0))
    seed, frac = int(cfg.get("split_seed", 0)), float(cfg.get("fit_fraction", 0.3))
    for key, path in files.items():
        for i, rec, passages in _ctxs_records(path, key, b):
            item = str(rec.get("id", f"{key}:{i}"))
            blank = [not p.strip() for p in passages]
            ext = extract_pairs(rec["output"], len(passages), base=base, passage_blank=blank,
                                claim_cap=b.claim_cap)
            b.stats.n_sentences += ext.n_sentences
            b.stats.n_cited_sentences += ext.n_cited_sentences
            for s in ext.skips:
                b.skip(item, s.sentence_index, s.marker, s.reason)
            gold: dict[int, set[int]] = {}
            claims: dict[int, str] = {}
            for p in ext.pairs:
                gold.setdefault(p.sentence_index, set()).add(p.passage_index)
                claims[p.sentence_index] = p.claim
            split = _split_of(item, seed, frac)
            for si, cited in gold.items():
                for pidx, text in enumerate(passages):
                    if blank[pidx]:
                        if pidx not in cited:
                            b.skip(item, si, f"[{pidx + base}]", "empty_candidate")
                        continue
                    b.pair(item, si, claims[si], text, pidx, 1.0 if pidx in cited else 0.0,
                           group=str(rec.get("subject", "")), split=split)


def _add_sections(b: _Builder, item: str, sections: list[Any], group: str) -> None:
    ext_all = Extraction()
    all_passages: list[str] = []
    offset = 0
    for sec in sections:
        if not isinstance(sec, dict) or not isinstance(sec.get("text"), str):
            b.skip(item, f"section{offset}", "", "invalid_record")
            continue
        cited, table = citation_passages(sec.get("citations"))
        passages = [c["text"] for c in cited]
        ext = extract_pairs(sec["text"], len(passages), id_table=table,
                            passage_blank=[not p for p in passages], claim_cap=b.claim_cap)
        ext_all.extend(ext, offset, passage_offset=len(all_passages))  # answer-wide passage indices
        offset += ext.n_sentences
        all_passages.extend(passages)
    b.add_extraction(item, ext_all, all_passages, group)


def _prepare_section_answers(files: Mapping[str, Path], b: _Builder, item_of: Callable[[str, int, Any], str],
                             sections_of: Callable[[dict], Any], group_of: Callable[[str], str]) -> None:
    for key, path in files.items():
        for i, rec in enumerate(read_records(path)):
            item = item_of(key, i, rec)
            if not b.accept(item):
                break
            sections = sections_of(rec) if isinstance(rec, dict) else None
            if not isinstance(sections, list):
                b.skip(item, 0, "", "invalid_record")
                continue
            _add_sections(b, item, sections, group=group_of(key))


def prepare_sections(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """Deep-research reports: ``response.sections[].{text, citations[id, snippets]}``."""
    _prepare_section_answers(files, b, lambda key, i, rec: f"{key}:{i}",
                             lambda rec: (rec.get("response") or {}).get("sections"), lambda key: key)


def prepare_nora(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """Ai2 ScholarQA ('Nora') answers in ``qa_metadata_all.jsonl``."""
    _prepare_section_answers(files, b, lambda key, i, rec: f"nora:{rec.get('idx', i) if isinstance(rec, dict) else i}",
                             lambda rec: (rec.get("src_answers") or {}).get("Nora"), lambda key: "nora")


def prepare_frozen_scores(files: Mapping[str, Path], cfg: Mapping[str, Any], b: _Builder) -> None:
    """The released QASA AttrScore scores: one pair row per score (no text)."""
    path = files["scores"]
    obj = read_json_object(path)
    for key, label in (("supported_p_attr_scores", 1.0), ("unsupported_p_attr_scores", 0.0)):
        scores = obj.get(key)
        if not isinstance(scores, list):
            raise DataError(f"{path}: missing list '{key}'")
        for j, s in enumerate(scores):
            item = f"qasa_{int(label)}:{j}"
            b.stats.n_sentences += 1
            b.stats.n_cited_sentences += 1
            if not isinstance(s, (int, float)) or not np.isfinite(s):
                b.skip(item, 0, key, "invalid_record")
                continue
            b.pair(item, 0, "", "", 0, label, group="qasa", frozen=float(s))


PREPARERS: dict[str, Callable[[Mapping[str, Path], Mapping[str, Any], _Builder], None]] = {
    "scifact": prepare_scifact,
    "scifact_corpus": prepare_scifact_corpus,
    "pubmedqa": prepare_pubmedqa,
    "attribution_gold": prepare_attribution_gold,
    "ctxs_answers": prepare_ctxs_source,
    "sections": prepare_sections,
    "nora": prepare_nora,
    "frozen_scores": prepare_frozen_scores,
}


def prepare_set(set_name: str, kind: str, files: Mapping[str, Path], cfg: Mapping[str, Any],
                claim_cap: int = CLAIM_CAP, max_items: int | None = None) -> PreparedSet:
    """Build the pair table of one set from its raw files."""
    if kind not in PREPARERS:
        raise DataError(f"{set_name}: unknown kind {kind!r}; valid: {sorted(PREPARERS)}")
    # (frozen score files are never capped: numbers only, cheap, and both classes must stay; their preparer reads
    # no item through _Builder.accept, and tests/study/test_io_prepare.py pins it)
    b = _Builder(set_name, kind, claim_cap, max_items)
    PREPARERS[kind](files, cfg, b)
    return b.finish()


def write_prepared(prep: PreparedSet, pairs_path: str | Path, skips_path: str | Path,
                   stats_path: str | Path) -> None:
    prep.pairs.to_parquet(pairs_path, index=False)
    prep.skips.to_csv(skips_path, index=False)
    Path(stats_path).write_text(json.dumps(prep.stats.row(), indent=2, sort_keys=True))
