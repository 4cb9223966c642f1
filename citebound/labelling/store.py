"""``citebound label``: label a uniform random sample of citations, for a calibration that keeps its promise.

The catch-rate guarantee of ``citebound calibrate`` holds when the labelled unsupported citations are
exchangeable with deployment's. Labelling only the flagged ones (low scores) breaks that: tau comes out
too low. So the page presents a **seeded, uniform random sample** of the citations, one at a time, in
an order the labeller cannot change; each is labelled supported, unsupported or can't tell (counted and
reported: they can bias the guarantee too). Each click is appended to the labels file and fsynced at
once (undo rewrites the file atomically), so a crash loses at most the click in flight and a restart
resumes where labelling stopped. The verifier's score is hidden unless asked for, to avoid anchoring.

The live panel shows what ``citebound calibrate --labels`` would give now: tau with its guarantee line,
the expected flag rate with a Wilson interval, and until there are enough unsupported labels for alpha
(tau is finite only when n_unsupported >= 1/alpha - 1), how many more are needed.

Only uniform sampling is offered: a sample stratified by score would need importance weights carried into
a weighted conformal quantile (Tibshirani et al., 2019) to keep the guarantee, and is not implemented.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

JUDGEMENTS = {"supported": 1, "unsupported": 0, "cant_tell": None}
MAX_NOTE_CHARS = 2000  # a labeller's note; the page refuses a longer one


class LabelError(ValueError):
    """A labels file or request that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Item:
    """One sampled citation. ``score`` and the best window are None / -1 until it is scored."""

    item_id: str
    position: int  # place in the sample (the order the page shows)
    answer_id: str
    answer: str
    sentence_start: int
    sentence_end: int
    claim: str
    cited: int
    passage: str
    window_start: int
    window_end: int
    score: float | None
    guard_action: str | None = None  # what the guard did with it (guarded reports only): verified, flagged, ...


def answer_ids(records: Sequence[Mapping[str, Any]], lines: Sequence[int]) -> list[str]:
    """Each answer's id in item ids: its own ``id`` where every answer has a distinct one, else
    ``line<N>`` (its input line), so that id-less or duplicate-id answers never share items."""
    ids = [r.get("id") for r in records]
    own = [str(i) for i in ids if i is not None]
    if len(own) == len(ids) and len(set(own)) == len(own):
        return own
    return [f"line{n}" for n in lines]


def _report_items(rec: Mapping[str, Any], where: str, aid: str, passages: list[str], base: int,
                  counts: dict[str, int]) -> list[Item]:
    """Items of a record that carries its guard report (``citebound guard --echo-input``), each checked."""
    from citebound.text.citations import sentences

    answer, sents, out = rec["answer"], sentences(rec["answer"]), []
    audit = rec["report"].get("audit") if isinstance(rec.get("report"), dict) else None
    if not isinstance(audit, list):
        raise LabelError(f"{where}: 'report' has no 'audit' list: give citebound guard --echo-input output")
    for k, a in enumerate(audit):
        counts["citations"] += 1
        if not isinstance(a, dict) or a.get("action") == "invalid" or a.get("evidence") is None or a.get("score") is None:
            counts["invalid_not_sampled"] += 1
            continue
        try:
            si, cited, ev = int(a["sentence_index"]), int(a["cited"]), a["evidence"]
            lo, hi, score = int(ev["start"]), int(ev["end"]), float(a["score"])
        except (KeyError, TypeError, ValueError):
            raise LabelError(f"{where}: audit entry {k} lacks sentence_index, cited, score or evidence") from None
        if not 0 <= si < len(sents):
            raise LabelError(f"{where}: audit entry {k} names sentence {si}; the answer has {len(sents)} sentences")
        if not 0 <= cited - base < len(passages):
            raise LabelError(f"{where}: audit entry {k} cites [{cited}], which is no passage of its {len(passages)} "
                             f"(numbered from {base}): the passages are not the ones it was guarded with")
        p = passages[cited - base]
        if not 0 <= lo <= hi <= len(p):
            raise LabelError(f"{where}: audit entry {k}'s evidence span {lo}-{hi} is outside its passage "
                             f"({len(p)} characters)")
        out.append(Item(f"{aid}#s{si}#c{cited}", -1, aid, answer, sents[si].start, sents[si].end, str(a["claim"]),
                        cited, p, lo, hi, score, str(a.get("action"))))
    return out


def citation_population(records: Sequence[Mapping[str, Any]], lines: Sequence[int], where: str, base: int = 1,
                        limits: Any = None) -> tuple[list[Item], dict[str, Any]]:
    """Every citation that points at a passage, unscored (raw answers: parsed as the guard parses them) or
    scored (``citebound guard --echo-input`` output carries its report). Invalid citations (no passage)
    cannot be labelled against a passage and are counted, not sampled. ``where`` names the input file."""
    from citebound.guarding.guard import GuardInputError, normalise_passages, plan_citations

    items: list[Item] = []
    counts: dict[str, Any] = {"answers": 0, "citations": 0, "invalid_not_sampled": 0, "answers_skipped": 0, "skipped": []}
    for rec, line, aid in zip(records, lines, answer_ids(records, lines)):
        here = f"{where}:{line}"
        passages = normalise_passages(rec.get("passages", rec.get("ctxs")))
        b = base if rec.get("citation_base") is None else int(rec["citation_base"])
        counts["answers"] += 1
        if "report" in rec:
            items += _report_items(rec, here, aid, passages, b, counts)
            continue
        try:
            sents, audits = plan_citations(rec["answer"], passages, b, limits)
        except GuardInputError as e:  # this answer only: skipped and counted, the rest are sampled from
            counts["answers_skipped"] += 1
            counts["skipped"].append(f"{here}: {e}")
            continue
        for a in audits:
            counts["citations"] += 1
            if a.action == "invalid" or a.cited < 0:  # no passage, or a bracket the guard could not read
                counts["invalid_not_sampled"] += 1
                continue
            s = sents[a.sentence_index]
            items.append(Item(f"{aid}#s{a.sentence_index}#c{a.cited}", -1, aid, rec["answer"], s.start, s.end, a.claim,
                              a.cited, passages[a.cited - b], -1, -1, None))
    return items, counts


def score_items(items: Sequence[Item], scorer: Any) -> list[Item]:
    """The items with their verifier score and best window (those already scored are kept as they are):
    only what is passed in is scored, so sample first and score the sample."""
    from citebound.verifiers.base import window_spans

    todo = [i for i, it in enumerate(items) if it.score is None]
    out = list(items)
    if not todo:
        return out
    claims, passages = [items[i].claim for i in todo], [items[i].passage for i in todo]
    if hasattr(scorer, "score"):
        ps = scorer.score(claims, passages)
        scores, best, win = ps.score, ps.best_window, scorer.windowing
    else:
        scores, best, win = scorer(claims, passages)[0], None, None
    for k, i in enumerate(todo):
        p = items[i].passage
        lo, hi = 0, len(p)
        if win is not None and best[k] >= 0:
            lo, hi = window_spans(len(p), int(win["window_chars"]), int(win["stride"]))[int(best[k])]
        sc = float(scores[k])
        out[i] = Item(**{**asdict(items[i]), "window_start": lo, "window_end": hi,
                         "score": None if math.isnan(sc) else sc})
    return out


def uniform_sample(items: Sequence[Item], n: int | None, seed: int) -> list[Item]:
    """A seeded uniform random sample without replacement (all items, shuffled, when n is None or larger)."""
    order = np.random.default_rng(seed).permutation(len(items))
    take = order if n is None else order[:n]
    return [Item(**{**asdict(items[int(i)]), "position": k}) for k, i in enumerate(take)]


def input_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


RECORD_TYPES = {"item_id": str, "judgement": str, "labeller": str, "position": int, "note": str}


def check_record(rec: Any, where: str) -> dict[str, Any]:
    """A labels-file record, checked field by field; a bad one is a LabelError naming ``where``."""
    if not isinstance(rec, dict):
        raise LabelError(f"{where}: not a label record (expected a JSON object)")
    for key, typ in RECORD_TYPES.items():
        if key in rec and not (isinstance(rec[key], typ) and not isinstance(rec[key], bool)):
            raise LabelError(f"{where}: {key!r} must be a {typ.__name__}, got {rec[key]!r}")
    if not isinstance(rec.get("item_id"), str):
        raise LabelError(f"{where}: no 'item_id'")
    if rec.get("judgement") not in JUDGEMENTS:
        raise LabelError(f"{where}: 'judgement' must be one of {sorted(JUDGEMENTS)}, got {rec.get('judgement')!r}")
    if rec.get("label", "missing") != JUDGEMENTS[rec["judgement"]] or isinstance(rec.get("label"), bool):
        raise LabelError(f"{where}: 'label' {rec.get('label')!r} does not match judgement {rec['judgement']!r} "
                         f"(expected {JUDGEMENTS[rec['judgement']]!r})")
    if "score" not in rec:  # citebound label writes one with each label: a record edited by hand lost it
        raise LabelError(f"{where}: no 'score' (the verifier's score, or null): put it back")
    score = rec.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)):
        raise LabelError(f"{where}: 'score' must be a finite number or null, got {score!r}")
    return rec


class LabelStore:
    """The labels file: one JSON record per labelled item, appended and fsynced on each click; undo
    rewrites the file atomically without its last record. Opening an existing file resumes it, after
    checking it belongs to the same sample (seed, size, input, verifier)."""

    def __init__(self, path: str | Path, meta: Mapping[str, Any], repair_truncated: bool = False):
        self.path = Path(path)
        self.meta = dict(meta)
        self.records: list[dict[str, Any]] = []
        self.repaired = False
        if self.path.exists():
            self._read(repair_truncated)
        seen = [r["item_id"] for r in self.records]
        if len(seen) != len(set(seen)):
            dup = next(i for i in seen if seen.count(i) > 1)
            raise LabelError(f"{self.path}: item {dup!r} is labelled twice; the file was edited by hand")

    def _read(self, repair_truncated: bool) -> None:
        raw = self.path.read_text(encoding="utf-8", errors="strict")
        lines = raw.splitlines()
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{self.path}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                last = lineno == len(lines) and not raw.endswith("\n")
                if last and repair_truncated:  # a crash mid-write: drop the partial click, keep the rest
                    self._rewrite()
                    self.repaired = True
                    return
                hint = ("it is the last line and has no newline: a crash mid-write; resume with --repair-truncated "
                        "to drop it" if last else "the file was edited by hand: fix or delete that line")
                raise LabelError(f"{where}: not valid JSON ({e.msg}); {hint}") from None
            check_record(rec, where)
            for key in ("sample_seed", "sample_size", "input_sha256", "verifier_hash"):
                if rec.get(key) != self.meta.get(key):
                    raise LabelError(f"{where}: made with {key}={rec.get(key)!r}, this session has "
                                     f"{self.meta.get(key)!r}; resume with the same --input, --sample, --seed and "
                                     "--verifier, or label into a new --out file")
            self.records.append(rec)

    @property
    def labelled(self) -> dict[str, dict[str, Any]]:
        return {r["item_id"]: r for r in self.records}

    def append(self, rec: Mapping[str, Any]) -> None:
        line = json.dumps(dict(rec), ensure_ascii=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.records.append(dict(rec))

    def undo(self) -> dict[str, Any] | None:
        if not self.records:
            return None
        last = self.records.pop()
        self._rewrite()
        return last

    def _rewrite(self) -> None:
        """The file as ``self.records``, replaced atomically (and the folder fsynced)."""
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".labels-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def panel(records: Sequence[Mapping[str, Any]], alpha: float, sample_size: int) -> dict[str, Any]:
    """What calibrating on these labels gives now."""
    from citebound.calibration.files import CalibrationError, calibration_summary, guarantee_line, in_force

    scored = [r for r in records if r["label"] is not None and r.get("score") is not None]  # a null score: no tau
    scores = [float(r["score"]) for r in scored]
    labels = [int(r["label"]) for r in scored]
    n_uns = labels.count(0)
    need = math.ceil(1 / alpha - 1)
    out: dict[str, Any] = {
        "labelled": len(records), "sample_size": sample_size, "supported": labels.count(1), "unsupported": n_uns,
        "cant_tell": sum(1 for r in records if r["label"] is None), "alpha": alpha, "tau": None, "guarantee": "",
        "flag_rate": None, "warning": ""}
    if n_uns < need:
        out["warning"] = (f"{need - n_uns} more unsupported labels needed before tau is finite at alpha={alpha} "
                          f"(n_unsupported >= 1/alpha - 1 = {need}); label about 200 citations from the target "
                          "system for a stable tau")
    try:
        s = calibration_summary(scores, labels, alpha, 0.1, "labels", "-")
    except CalibrationError:
        return out
    # the tau the guard would deploy (the conformal one only with too few unsupported labels for the PAC one)
    out["conformal_tau"] = s["tau"]
    out["in_force"], out["tau"] = in_force(s)[:2] if s["tau"] is not None else (None, None)
    out["guarantee"] = (guarantee_line(s) if out["tau"] is not None
                        else "none yet: with tau = +inf every citation would be flagged")
    fr = s["expected_flag_rate"]
    out["flag_rate"] = {"estimate": fr["estimate"], "ci_low": fr["ci_low"], "ci_high": fr["ci_high"]}
    return out


class LabelSession:
    """A sample, its labels file and who labels; what the page's API calls act on."""

    def __init__(self, sample: Sequence[Item], store: LabelStore, labeller: str, alpha: float = 0.1):
        self.sample, self.store, self.labeller, self.alpha = list(sample), store, labeller, alpha
        self.next_steps: list[str] = []  # the exact commands that use the labels (shown once the sample is done)
        known = {it.item_id for it in self.sample}
        stray = [r["item_id"] for r in store.records if r["item_id"] not in known]
        if stray:
            raise LabelError(f"{store.path}: labels for items outside this sample ({stray[:3]}...)")

    def current(self) -> Item | None:
        done = self.store.labelled
        return next((it for it in self.sample if it.item_id not in done), None)

    def state(self) -> dict[str, Any]:
        it = self.current()
        item = None
        if it is not None:
            item = {k: v for k, v in asdict(it).items() if k not in ("score", "guard_action")}  # no anchoring
        return {"item": item, "position": len(self.store.records), "sample_size": len(self.sample),
                "labeller": self.labeller, "panel": panel(self.store.records, self.alpha, len(self.sample)),
                "done": it is None, "next_steps": self.next_steps if it is None else []}

    def label(self, item_id: str, judgement: str, note: str = "") -> dict[str, Any]:
        it = self.current()
        if it is None:
            raise LabelError("every item of the sample is labelled")
        if item_id != it.item_id:
            raise LabelError(f"item {item_id!r} is not the one to label now ({it.item_id!r}): the sample's order "
                             "is fixed, so that the labelled citations stay a uniform random sample")
        if judgement not in JUDGEMENTS:
            raise LabelError(f"judgement must be one of {sorted(JUDGEMENTS)}, got {judgement!r}")
        if len(note) > MAX_NOTE_CHARS:
            raise LabelError(f"the note has {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
        self.store.append({
            "item_id": it.item_id, "judgement": judgement, "label": JUDGEMENTS[judgement], "note": note,
            "labeller": self.labeller, "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "position": it.position, **self.store.meta, "answer_id": it.answer_id, "cited": it.cited,
            "claim": it.claim, "passage": it.passage, "score": it.score}
            | ({"guard_action": it.guard_action} if it.guard_action else {}))
        return self.state()

    def undo(self) -> dict[str, Any]:
        self.store.undo()
        return self.state()

    def score(self, item_id: str) -> float:
        for it in self.sample:
            if it.item_id == item_id:
                return it.score
        raise LabelError(f"no item {item_id!r} in the sample")


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """Records of a labels file (``citebound label``'s), each line checked."""
    out = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise LabelError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
            out.append(check_record(rec, f"{path}:{lineno}"))  # an object with item_id, judgement, label, score
    return out


def agreement(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], n_boot: int = 2000,
              seed: int = 0) -> dict[str, Any]:
    """Two labellers on the same sample: Cohen's kappa, Gwet's AC1 and observed agreement with 95%
    item-bootstrap intervals, over the items both labelled supported or unsupported."""
    from citebound.calibration import stats as st
    la = {r["item_id"]: r["label"] for r in a}
    lb = {r["item_id"]: r["label"] for r in b}
    both = sorted(set(la) & set(lb))
    pairs = [(la[i], lb[i]) for i in both if la[i] is not None and lb[i] is not None]
    out: dict[str, Any] = {"items_both": len(both), "items_only_one": len(set(la) ^ set(lb)),
                           "cant_tell_either": len(both) - len(pairs), "n": len(pairs)}
    if not pairs:
        return out
    x = np.array([p[0] == 1 for p in pairs])
    y = np.array([p[1] == 1 for p in pairs])
    ta, tb, tc, td = st.table2x2(x, y)
    idx = st.bootstrap_indices(len(pairs), n_boot, np.random.default_rng(seed))
    ba, bb, bc, bd = st.boot_tables(x, y, idx)
    n = len(pairs)
    for name, point, boot in (("kappa", st.kappa_from_table(ta, tb, tc, td), st.boot_kappa(ba, bb, bc, bd)),
                              ("ac1", st.gwet_ac1(ta, tb, tc, td), st.boot_ac1(ba, bb, bc, bd)),
                              ("observed_agreement", (ta + td) / n, (ba + bd) / n)):
        lo, hi = st.percentile_ci(boot)
        out[name] = {"estimate": float(point), "ci_low": lo, "ci_high": hi}
    out["table"] = {"both_supported": int(ta), "a_supported_b_unsupported": int(tb),
                    "a_unsupported_b_supported": int(tc), "both_unsupported": int(td)}
    return out
