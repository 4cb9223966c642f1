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


class LabelError(ValueError):
    """A labels file or request that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Item:
    """One sampled citation."""

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
    score: float


def citation_population(records: Sequence[Mapping[str, Any]], guard: Any) -> tuple[list[Item], dict[str, int]]:
    """Every citation that points at a passage, with its score and best window: from guard output that
    carries ``answer`` and ``passages`` (``citebound guard --echo-input``), or by guarding raw answers.
    Invalid citations (no passage) cannot be labelled against a passage and are counted, not sampled."""
    from citebound.guarding.guard import normalise_passages
    from citebound.text.citations import sentences

    items: list[Item] = []
    counts = {"answers": 0, "citations": 0, "invalid_not_sampled": 0}
    texts = [normalise_passages(r.get("passages", r.get("ctxs"))) for r in records]
    todo = [(r["answer"], p, r.get("citation_base")) for r, p in zip(records, texts) if "report" not in r]
    fresh = iter(guard.guard_many(todo)) if todo else iter(())  # raw answers, guarded together, in input order
    for rec, passages in zip(records, texts):
        report = rec["report"] if "report" in rec else next(fresh)[1].to_dict()
        answer = rec["answer"]
        base = rec.get("citation_base")
        base = guard.base if base is None else int(base)
        sents = sentences(answer)
        counts["answers"] += 1
        aid = str(rec.get("id", counts["answers"]))
        for a in report["audit"]:
            counts["citations"] += 1
            if a["action"] == "invalid" or a.get("evidence") is None or a.get("score") is None:
                counts["invalid_not_sampled"] += 1
                continue
            s = sents[a["sentence_index"]]
            ev = a["evidence"]
            items.append(Item(f"{aid}#s{a['sentence_index']}#c{a['cited']}", -1, aid, answer, s.start, s.end,
                              a["claim"], int(a["cited"]), passages[int(a["cited"]) - base], int(ev["start"]),
                              int(ev["end"]), float(a["score"])))
    return items, counts


def uniform_sample(items: Sequence[Item], n: int | None, seed: int) -> list[Item]:
    """A seeded uniform random sample without replacement (all items, shuffled, when n is None or larger)."""
    order = np.random.default_rng(seed).permutation(len(items))
    take = order if n is None else order[:n]
    return [Item(**{**asdict(items[int(i)]), "position": k}) for k, i in enumerate(take)]


def input_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


class LabelStore:
    """The labels file: one JSON record per labelled item, appended and fsynced on each click; undo
    rewrites the file atomically without its last record. Opening an existing file resumes it, after
    checking it belongs to the same sample (seed, size, input, verifier)."""

    def __init__(self, path: str | Path, meta: Mapping[str, Any]):
        self.path = Path(path)
        self.meta = dict(meta)
        self.records: list[dict[str, Any]] = []
        if self.path.exists():
            for lineno, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise LabelError(f"{self.path}:{lineno}: not valid JSON ({e.msg}); a crash mid-write leaves at "
                                     "most a partial last line: delete that line to resume") from None
                for key in ("sample_seed", "sample_size", "input_sha256", "verifier_hash"):
                    if rec.get(key) != self.meta.get(key):
                        raise LabelError(f"{self.path}:{lineno}: made with {key}={rec.get(key)!r}, this session has "
                                         f"{self.meta.get(key)!r}; resume with the same --input, --sample, --seed and "
                                         "--verifier, or label into a new --out file")
                self.records.append(rec)
        seen = [r["item_id"] for r in self.records]
        if len(seen) != len(set(seen)):
            raise LabelError(f"{self.path}: an item is labelled twice; the file was edited by hand")

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
        return last


def panel(records: Sequence[Mapping[str, Any]], alpha: float, sample_size: int) -> dict[str, Any]:
    """What calibrating on these labels gives now."""
    from citebound.calibration.files import CalibrationError, calibration_summary, guarantee_line

    scores = [float(r["score"]) for r in records if r["label"] is not None]
    labels = [int(r["label"]) for r in records if r["label"] is not None]
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
    out["tau"] = s["tau"]  # None until there are enough unsupported labels
    out["guarantee"] = (guarantee_line(s) if out["tau"] is not None
                        else "none yet: with tau = +inf every citation would be flagged")
    fr = s["expected_flag_rate"]
    out["flag_rate"] = {"estimate": fr["estimate"], "ci_low": fr["ci_low"], "ci_high": fr["ci_high"]}
    return out


class LabelSession:
    """A sample, its labels file and who labels; what the page's API calls act on."""

    def __init__(self, sample: Sequence[Item], store: LabelStore, labeller: str, alpha: float = 0.1):
        self.sample, self.store, self.labeller, self.alpha = list(sample), store, labeller, alpha
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
            item = {k: v for k, v in asdict(it).items() if k != "score"}  # the score only on request
        return {"item": item, "position": len(self.store.records), "sample_size": len(self.sample),
                "labeller": self.labeller, "panel": panel(self.store.records, self.alpha, len(self.sample)),
                "done": it is None}

    def label(self, item_id: str, judgement: str, note: str = "") -> dict[str, Any]:
        it = self.current()
        if it is None:
            raise LabelError("every item of the sample is labelled")
        if item_id != it.item_id:
            raise LabelError(f"item {item_id!r} is not the one to label now ({it.item_id!r}): the sample's order "
                             "is fixed, so that the labelled citations stay a uniform random sample")
        if judgement not in JUDGEMENTS:
            raise LabelError(f"judgement must be one of {sorted(JUDGEMENTS)}, got {judgement!r}")
        self.store.append({
            "item_id": it.item_id, "judgement": judgement, "label": JUDGEMENTS[judgement], "note": note,
            "labeller": self.labeller, "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "position": it.position, **self.store.meta, "answer_id": it.answer_id, "cited": it.cited,
            "claim": it.claim, "passage": it.passage, "score": it.score})
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
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise LabelError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
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
