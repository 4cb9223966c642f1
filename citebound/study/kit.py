"""The paper authors' reproduction kit as an experiment (GooTec/citation-guard, ``reproduce/``).

The kit rebuilds a BioASQ n=200 slice from ``rag-datasets/rag-mini-bioasq`` with a structural
manifest (row indices, PubMed ids, 16-hex question hashes, an md5 of the rebuilt slice), generates
cited answers in four cells and reports per cell: citation precision / recall / F1, the unsupported
share of cited sentences, and how much reference coverage (ROUGE-L recall against the dataset's
answer) the guard keeps compared with removing as many random cited sentences.

Everything here is written from the kit's description, not copied: the sentence cue pattern and the
prompts are our own wording (see ``config/experiment/kit.yaml``), so the kit-style citation recall is
computed "kit-style", not with the kit's own cue list.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.calibration.conformal import conformal_threshold
from citebound.study.analysis._common import ci_cols
from citebound.text.citations import KIT_SENTENCE_SPLIT, SINGLE_NUMERIC_MARKER, sentences

# our generation pipelines -> the kit's cell names
CELL_OF = {"bare": "cond_b2", "lit": "cond_lit", "openscholar": "cond_os", "paperqa2": "cond_pqa"}
_WORD = re.compile(r"[a-z0-9]+")


class KitDataError(ValueError):
    """The rebuilt slice does not match the manifest; the message names the row."""


# ---------------------------------------------------------------- data through HF datasets

def load_rows(source: Mapping[str, Any], cache_dir: str | Path | None = None) -> list[dict[str, Any]]:
    """Rows of one table through ``datasets.load_dataset``.

    ``source`` is either a hub dataset (``repo``, ``config``, ``split``, ``revision``) or local
    files (``format``: parquet/csv/json, ``data_files``): the same loader either way.
    """
    from datasets import load_dataset

    kw = {"cache_dir": str(cache_dir)} if cache_dir else {}
    if source.get("data_files"):
        ds = load_dataset(str(source["format"]), data_files=str(source["data_files"]), split="train", **kw)
    else:
        ds = load_dataset(str(source["repo"]), str(source["config"]), split=str(source["split"]),
                          revision=source.get("revision") or None, **kw)
    return ds.to_list()


def hub_tables(qa: Mapping[str, Any], corpus: Mapping[str, Any], qa_csv: str, cache_dir: str | Path | None,
               log: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(QA rows, corpus rows) from the hub; offline, the QA rows from the mirror's CSV copy.

    The passage corpus is not mirrored: without the hub it cannot be loaded, and the error says how
    to run instead (online, or the local test dataset of ``experiment=kit_smoke``).
    """
    from citebound.scoring.io import data_mirror

    try:
        qa_rows = load_rows(qa, cache_dir)
    except Exception as e:  # noqa: BLE001 - any hub failure: fall back to the mirror
        mirror = data_mirror()
        path = Path(mirror or ".") / qa_csv
        if not mirror or not path.is_file():
            raise KitDataError(f"cannot load {qa['repo']} {qa['config']}/{qa['split']} ({type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}) and no mirror copy at {path}") from None
        log.warning("hub unreachable (%s): QA rows from the mirror copy %s", type(e).__name__, path)
        qa_rows = load_rows({"format": "csv", "data_files": str(path)}, cache_dir)
    try:
        corpus_rows = load_rows(corpus, cache_dir)
    except Exception as e:  # noqa: BLE001
        raise KitDataError(f"cannot load the passage corpus {corpus['repo']} {corpus['config']}/{corpus['split']} "
                           f"({type(e).__name__}); it is not mirrored, so the slice needs the hub. Offline, run "
                           "the smoke-sized kit on the local test dataset: --config experiment=kit_smoke") from None
    return qa_rows, corpus_rows


def pmid_list(value: Any) -> list[int]:
    """``relevant_passage_ids`` as ints: a list on the hub, a list's repr in CSV copies."""
    if isinstance(value, str):
        value = ast.literal_eval(value)
    return [int(v) for v in value]


def passage_table(rows: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """PubMed id -> passage text of the text-corpus rows (``id``, ``passage``)."""
    return {int(r["id"]): str(r["passage"]) for r in rows}


def question_hash(question: str) -> str:
    return hashlib.sha256(question.encode()).hexdigest()[:16]


def slice_text(records: Sequence[Mapping[str, Any]]) -> str:
    """The serialisation the manifest's md5 is taken over (its ``build`` field)."""
    return json.dumps(list(records), ensure_ascii=False, indent=2)


def slice_records(entries: Sequence[Mapping[str, Any]], qa_rows: Sequence[Mapping[str, Any]],
                  passages: Mapping[int, str]) -> list[dict[str, Any]]:
    """The slice's records, each manifest entry checked against the upstream rows.

    Raises :class:`KitDataError` naming the first entry whose row is missing, whose question hash
    differs, whose PubMed ids are not the row's, or whose passage is absent from the corpus.
    """
    records = []
    for i, m in enumerate(entries):
        row = int(m["qa_row"])
        where = f"manifest entry {i} ({m['id']}, qa row {row})"
        if row >= len(qa_rows):
            raise KitDataError(f"{where}: the QA split has only {len(qa_rows)} rows")
        q = qa_rows[row]
        got = question_hash(str(q["question"]))
        if got != m["q_sha16"]:
            raise KitDataError(f"{where}: question hash {got} != {m['q_sha16']} (upstream row order changed?)")
        rel = set(pmid_list(q["relevant_passage_ids"]))
        stray = [int(p) for p in m["pmids"] if int(p) not in rel]
        if stray:
            raise KitDataError(f"{where}: PubMed ids {stray} are not among the row's relevant_passage_ids")
        missing = [int(p) for p in m["pmids"] if int(p) not in passages]
        if missing:
            raise KitDataError(f"{where}: PubMed ids {missing} are not in the passage corpus")
        records.append({"input": q["question"],
                        "ctxs": [{"title": f"PMID:{p}", "text": passages[int(p)]} for p in m["pmids"]],
                        "id": m["id"], "subject": "bio", "output": str(q["answer"]).strip()})
    return records


def slice_md5(records: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.md5(slice_text(records).encode()).hexdigest()


def rebuild_slice(manifest: Mapping[str, Any], qa_rows: Sequence[Mapping[str, Any]],
                  passages: Mapping[int, str]) -> tuple[list[dict[str, Any]], str]:
    """The slice's records and their md5, checked entry by entry (:func:`slice_records`) and then
    as a whole against the manifest's ``expected_md5``."""
    records = slice_records(manifest["entries"], qa_rows, passages)
    md5 = slice_md5(records)
    if md5 != manifest["expected_md5"]:
        first = _first_changed(records, manifest)
        raise KitDataError(f"rebuilt slice md5 {md5} != manifest {manifest['expected_md5']}: every entry's row, "
                           f"question hash and PubMed ids matched, so passage or answer text differs{first}")
    return records, md5


def _first_changed(records: Sequence[Mapping[str, Any]], manifest: Mapping[str, Any]) -> str:
    """Where the manifest carries per-record md5s (our local test manifests do), the first record
    whose text differs; the authors' manifest has only the whole-slice md5."""
    for i, (r, m) in enumerate(zip(records, manifest["entries"])):
        want = m.get("record_md5")
        if want and hashlib.md5(json.dumps(r, ensure_ascii=False).encode()).hexdigest() != want:
            return f" (first differing record: entry {i}, {m['id']}, qa row {m['qa_row']})"
    return ""


def stand_in_dataset(manifest: Mapping[str, Any], qa_rows: Sequence[Mapping[str, Any]],
                     n: int, max_answers: int = 2) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """A small dataset of the hub's schema for offline CPU runs: (qa, corpus, manifest).

    The QA rows are kept as they are (all of them, so row indices hold), the manifest keeps its
    first ``n`` entries, and since the passage corpus is not mirrored each cited PubMed id gets a
    stand-in passage: the answers of the first ``max_answers`` QA rows that list it (rag-mini-bioasq's
    answers are written from those abstracts; two keep CPU prompts short). The manifest's md5 is
    that of this slice, and each entry carries its record's md5, so a changed record is named.
    """
    entries = [dict(m) for m in manifest["entries"][:n]]
    wanted = {int(p) for m in entries for p in m["pmids"]}
    texts: dict[int, list[str]] = {}
    for r in qa_rows:
        for p in pmid_list(r["relevant_passage_ids"]):
            if p in wanted and len(texts.setdefault(p, [])) < max_answers:
                texts[p].append(str(r["answer"]).strip())
    corpus = pd.DataFrame({"id": sorted(texts), "passage": [" ".join(texts[p]) for p in sorted(texts)]})
    records = slice_records(entries, qa_rows, passage_table(corpus.to_dict("records")))
    for m, r in zip(entries, records):
        m["record_md5"] = hashlib.md5(json.dumps(r, ensure_ascii=False).encode()).hexdigest()
    qa = pd.DataFrame([{"question": r["question"], "answer": r["answer"],
                        "relevant_passage_ids": pmid_list(r["relevant_passage_ids"]), "id": i}
                       for i, r in enumerate(qa_rows)])
    small = {**{k: v for k, v in manifest.items() if k != "entries"}, "n": len(entries),
             "expected_md5": slice_md5(records), "entries": entries,
             "_README": f"stand-in test dataset: the first {len(entries)} entries of the kit manifest; "
                        "passages are the dataset's answers that cite each PubMed id, not the abstracts"}
    return qa, corpus, small


# ---------------------------------------------------------------- per-answer metrics

def kit_sentences(text: str, min_chars: int = 20) -> list[str]:
    """Sentences as the kit's citation-F1 splits them: at end punctuation + space, longer than ``min_chars``."""
    return [s.strip() for s in KIT_SENTENCE_SPLIT.split(text) if len(s.strip()) > min_chars]


def citation_prf(answer: str, n_passages: int, cue: str | re.Pattern[str], min_chars: int = 20) -> dict[str, float]:
    """Kit-style citation precision, recall and F1 of one answer.

    precision: distinct in-range ``[N]`` ids (1-based) / distinct ids cited (1 when none is cited);
    recall: sentences matching the cue pattern that carry a ``[N]`` / sentences matching it
    (0 when none does); F1: their harmonic mean (0 when both are 0).
    """
    ids = {int(m) for m in SINGLE_NUMERIC_MARKER.findall(answer)}
    prec = len({i for i in ids if 1 <= i <= n_passages}) / len(ids) if ids else 1.0
    pat = re.compile(cue, re.I) if isinstance(cue, str) else cue
    cued = [s for s in kit_sentences(answer, min_chars) if pat.search(s)]
    rec = sum(bool(SINGLE_NUMERIC_MARKER.search(s)) for s in cued) / len(cued) if cued else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0
    return {"citation_precision": prec, "citation_recall": rec, "citation_f1": f1}


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def rouge_l_recall(candidate: str, reference: str, max_candidate: int = 3500, max_reference: int = 400) -> float:
    """LCS(candidate words, reference words) / reference words (lower-cased alphanumeric words,
    each side cut to its first ``max_*`` words); 0 for an empty reference."""
    a, b = words(candidate)[:max_candidate], words(reference)[:max_reference]
    if not b:
        return 0.0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    return prev[-1] / len(b)


def sentence_support(pairs: pd.DataFrame, verdict: pd.Series) -> dict[str, dict[int, bool]]:
    """item id -> {sentence index: supported} over the sentences that have a scorable citation.

    A sentence is supported when any of its citations is (the kit judges a sentence against its
    cited passages together; the closest per-pair reading is 'some cited passage supports it').
    """
    df = pd.DataFrame({"item_id": pairs["item_id"].astype(str).to_numpy(),
                       # sentence ids are '<item id>:<sentence index>' (citebound.study.prepare)
                       "sentence_id": [int(str(s).rsplit(":", 1)[1]) for s in pairs["sentence_id"]],
                       "verdict": np.asarray(verdict, bool)})
    out: dict[str, dict[int, bool]] = {}
    for (item, sent), v in df.groupby(["item_id", "sentence_id"])["verdict"].any().items():
        out.setdefault(str(item), {})[int(sent)] = bool(v)
    return out


def item_row(answer: str, reference: str, n_passages: int, support: Mapping[int, bool], cue: str,
             rng: np.random.Generator, rouge_caps: tuple[int, int] = (3500, 400)) -> dict[str, float]:
    """One answer's kit metrics: citation P/R/F1, cited and unsupported sentences, and ROUGE-L
    recall of the answer as written, with the unsupported sentences removed (the guard), and with as
    many random cited sentences removed (the control)."""
    sents = [s.text for s in sentences(answer)]
    cited = sorted(support)
    unsup = [k for k in cited if not support[k]]
    keep_guard = [s for k, s in enumerate(sents) if k not in set(unsup)]
    removed = set(rng.choice(cited, size=len(unsup), replace=False).tolist()) if unsup else set()
    keep_rand = [s for k, s in enumerate(sents) if k not in removed]
    return {**citation_prf(answer, n_passages, cue),
            "n_sentences": len(sents), "n_cited": len(cited), "n_unsupported": len(unsup),
            "coverage_answer": rouge_l_recall(answer, reference, *rouge_caps),
            "coverage_guard": rouge_l_recall(" ".join(keep_guard), reference, *rouge_caps),
            "coverage_random": rouge_l_recall(" ".join(keep_rand), reference, *rouge_caps)}


def cell_items(generations: Sequence[Mapping[str, Any]], references: Mapping[str, str],
               support: Mapping[str, Mapping[int, bool]], cue: str, seed: int,
               rouge_caps: tuple[int, int] = (3500, 400)) -> pd.DataFrame:
    """Per-item kit metrics of one cell. Items whose generation failed count as empty answers
    (the kit scores a failed call as the empty answer too) and are marked ``error``."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in generations:
        item = str(g["id"])
        answer = g.get("output") or ""
        row = item_row(answer, references[item], len(g.get("ctxs") or []), support.get(item, {}), cue, rng, rouge_caps)
        rows.append({"item_id": item, "error": bool(g.get("output") is None), **row})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- cell summaries with item-bootstrap CIs

def cell_summary(items: pd.DataFrame, n_boot: int, rng: np.random.Generator) -> dict[str, float]:
    """Means over items (F1, precision, recall, coverages) and the unsupported % as a ratio of sums
    (unsupported / cited sentences), each with a 95% item-bootstrap interval from one set of resamples."""
    n = len(items)
    idx = st.bootstrap_indices(n, n_boot, rng)
    out: dict[str, float] = {"n_items": n, "n_cited": int(items["n_cited"].sum()),
                             "n_unsupported": int(items["n_unsupported"].sum()), "n_errors": int(items["error"].sum())}
    for col in ("citation_precision", "citation_recall", "citation_f1", "coverage_answer", "coverage_guard",
                "coverage_random"):
        x = items[col].to_numpy(float)
        out.update(ci_cols(col, float(x.mean()) if n else math.nan, x[idx].mean(1)))
    d = (items["coverage_guard"] - items["coverage_random"]).to_numpy(float)
    out.update(ci_cols("coverage_guard_minus_random", float(d.mean()) if n else math.nan, d[idx].mean(1)))
    u, c = items["n_unsupported"].to_numpy(float), items["n_cited"].to_numpy(float)
    point = 100 * u.sum() / c.sum() if c.sum() else math.nan
    out.update(ci_cols("unsupported_pct", point, 100 * st.boot_ratio(u[idx].sum(1), c[idx].sum(1))))
    return out


def paired_difference(a: pd.DataFrame, b: pd.DataFrame, n_boot: int, rng: np.random.Generator) -> dict[str, float]:
    """Unsupported % of cell ``a`` minus cell ``b`` (pp) over the items both answered, resampling items."""
    m = a.merge(b, on="item_id", suffixes=("_a", "_b"))
    cols = [m[f"{k}_{s}"].to_numpy(float) for s in ("a", "b") for k in ("n_unsupported", "n_cited")]
    ua, ca, ub, cb = cols

    def diff(ix: np.ndarray) -> np.ndarray:
        return 100 * (st.boot_ratio(ua[ix].sum(-1), ca[ix].sum(-1)) - st.boot_ratio(ub[ix].sum(-1), cb[ix].sum(-1)))

    point = float(diff(np.arange(len(m)))) if len(m) else math.nan
    out = {"n_items": len(m), **ci_cols("difference_pp", point, diff(st.bootstrap_indices(len(m), n_boot, rng)))}
    out["significant_positive"] = bool(out["difference_pp_ci_low"] > 0)
    return out


# ---------------------------------------------------------------- cross-domain conformal and the comparison

def cross_domain(unsupported_scores: Sequence[float], alphas: Sequence[float], released_curve: Mapping[str, Any],
                 cell_scores: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """tau(alpha) from the released QASA unsupported scores (split-conformal, flag score <= tau), next to
    the authors' own tau, and the share of each cell's cited pairs that tau flags."""
    curve = dict(zip((round(a, 6) for a in released_curve["alphas"]), released_curve["tau"]))
    rows = []
    for a in alphas:
        tau = conformal_threshold(unsupported_scores, a)
        for cell, s in cell_scores.items():
            s = np.asarray(s, float)
            s = s[np.isfinite(s)]
            rows.append({"alpha": a, "guaranteed_catch": 1 - a, "tau": tau, "tau_authors": curve.get(round(a, 6), math.nan),
                         "cell": cell, "n_pairs": len(s),
                         "flag_rate": float((s <= tau).mean()) if len(s) else math.nan})
    return pd.DataFrame(rows)


def vs_authors(ours: Mapping[str, Mapping[str, float]], paired: Mapping[str, float] | None,
               expected: Mapping[str, Any], bands: Mapping[str, float]) -> pd.DataFrame:
    """For each cell and metric: the authors' value, ours, the difference and whether it is inside
    their tolerance band (``bands``: metric -> half-width; 0 = must be equal)."""
    metrics = [("citation_f1_mean", "citation_f1"), ("unsupported_pct", "unsupported_pct"),
               ("unsupported_ci95_low", "unsupported_pct_ci_low"), ("unsupported_ci95_high", "unsupported_pct_ci_high"),
               ("n_cited", "n_cited")]
    rows = []
    for cell, exp in expected["cells"].items():
        got = ours.get(cell, {})
        ref = {**exp, "unsupported_ci95_low": exp["unsupported_ci95"][0], "unsupported_ci95_high": exp["unsupported_ci95"][1]}
        for metric, col in metrics:
            rows.append(_compare(cell, metric, ref[metric], got.get(col, math.nan), bands[metric]))
    if "paired_lit_minus_bare_pp" in expected:
        p = expected["paired_lit_minus_bare_pp"]
        rows.append(_compare("lit_minus_bare", "paired_difference_pp", p["point"],
                             (paired or {}).get("difference_pp", math.nan), bands["paired_difference_pp"]))
    return pd.DataFrame(rows)


def _compare(cell: str, metric: str, authors: float, ours: float, band: float) -> dict[str, Any]:
    diff = ours - authors
    within = bool(abs(diff) <= band + 1e-9) if np.isfinite(diff) else False
    return {"cell": cell, "metric": metric, "authors": authors, "ours": ours, "difference": diff,
            "band": band, "within_band": within}


def summaries(items: Mapping[tuple[str, str], pd.DataFrame], n_boot: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per model x pipeline from :func:`cell_summary`, one row per model with lit - bare),
    each from its own seeded generator so adding a cell changes no other row."""
    cells = pd.DataFrame([{"model": m, "pipeline": p, "cell": CELL_OF.get(p, p),
                           **cell_summary(df, n_boot, np.random.default_rng([seed, i]))}
                          for i, ((m, p), df) in enumerate(items.items())])
    models = list(dict.fromkeys(m for m, _ in items))
    paired = pd.DataFrame([{"model": m, "cell": "lit_minus_bare",
                            **paired_difference(items[(m, "lit")], items[(m, "bare")], n_boot,
                                                np.random.default_rng([seed, 10_000 + j]))}
                           for j, m in enumerate(models) if (m, "lit") in items and (m, "bare") in items],
                          columns=["model", "cell", "n_items", "difference_pp", "difference_pp_ci_low",
                                   "difference_pp_ci_high", "significant_positive"])
    return cells, paired


def authors_table(cells: pd.DataFrame, paired: pd.DataFrame, expected: Mapping[str, Any], model: str,
                  bands: Mapping[str, float]) -> pd.DataFrame:
    """:func:`vs_authors` for one model's rows of the cell and paired tables."""
    ours = {r["cell"]: r for r in cells[cells.model == model].to_dict("records")}
    pr = paired[paired.model == model].to_dict("records")
    out = vs_authors(ours, pr[0] if pr else None, expected, bands)
    out.insert(0, "model", model)
    out.insert(1, "authors_model", expected.get("model", ""))
    return out
