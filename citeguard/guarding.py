"""The deployable guard: verify -> re-attribute -> flag, for one cited answer.

For each citation of each cited sentence:

1. **verify** the sentence (markers removed) against the cited passage;
2. if it fails, **re-attribute**: the re-attributor (BM25 by default)
   proposes the best other provided passages and the verifier must accept
   one before the pointer moves (the sentence is kept, only the pointer
   changes; the best-scoring accepted proposal wins);
3. otherwise **flag** it in place as ``[N UNVERIFIED]`` (or, with
   ``remove=True``, drop the sentence).

With a calibration (``tau``) a citation passes iff ``score > tau`` (the
split-conformal rule); without, the verifier's own verdict decides.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .citations import MARKER_RE, _SENTENCE_SPLIT, _expand_numeric, strip_markers

Scorer = Callable[[Sequence[str], Sequence[str]], tuple[np.ndarray, np.ndarray]]


class GuardInputError(ValueError):
    """Bad guard input; the message says what is wrong."""


@dataclass
class CitationAudit:
    sentence_index: int
    claim: str
    cited: int  # citation number as written (in the answer's base)
    score: float | None
    action: str  # verified | reattributed | flagged | invalid
    new_pointer: int | None = None
    new_score: float | None = None
    reason: str = ""


@dataclass
class GuardReport:
    n_sentences: int = 0
    n_cited_sentences: int = 0
    n_citations: int = 0
    verified: int = 0
    reattributed: int = 0
    flagged: int = 0
    invalid: int = 0
    removed_sentences: int = 0
    review_budget: float = 0.0  # share of citations needing human review (flagged)
    rule: str = ""
    guarantee: str = ""
    audit: list[CitationAudit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    cuts = [m.end() for m in _SENTENCE_SPLIT.finditer(text)]
    starts = [0] + cuts
    ends = [m.start() for m in _SENTENCE_SPLIT.finditer(text)] + [len(text)]
    return [(s, e) for s, e in zip(starts, ends)]


def _only_markers(s: str) -> bool:
    return not MARKER_RE.sub("", s).strip(" ,;")


def normalise_passages(passages: Any) -> list[str]:
    """Accept a list of strings or of objects with ``text`` (and optional ``title``)."""
    if not isinstance(passages, list):
        raise GuardInputError("'passages' (or 'ctxs') must be a list")
    out = []
    for i, p in enumerate(passages):
        text = p.get("text") if isinstance(p, Mapping) else p
        if not isinstance(text, str) or not text.strip():
            raise GuardInputError(f"passage {i} has empty or missing text")
        out.append(text)
    return out


def bm25_proposals(claim: str, passages: Sequence[str], exclude: set[int], top: int) -> list[int]:
    from .analysis import bm25_scores

    s = bm25_scores(claim, passages)
    order = [int(i) for i in np.argsort(-s, kind="stable") if int(i) not in exclude]
    return order[:top]


def guard_answer(answer: str, passages: Sequence[str], scorer: Scorer, *, tau: float | None = None,
          base: int = 1, reattribute: str | None = "bm25", proposals: int = 3, remove: bool = False,
          guarantee: str = "") -> tuple[str, GuardReport]:
    """Guard one answer; returns the guarded answer and its report."""
    if not isinstance(answer, str):
        raise GuardInputError("'answer' must be a string")
    passages = list(passages)
    spans = _sentence_spans(answer)
    starts = [s for s, _ in spans]
    markers = [m for m in MARKER_RE.finditer(answer) if m.group("num") is not None or m.group("link") is not None]
    # sentence of each marker; markers right after a sentence end belong to that sentence
    msent = []
    for m in markers:
        si = bisect.bisect_right(starts, m.start()) - 1
        if si > 0 and _only_markers(answer[spans[si][0]:m.start()]):
            si -= 1
        msent.append(si)
    claims = {si: strip_markers(answer[spans[si][0]:spans[si][1]]) for si in set(msent)}
    report = GuardReport(n_sentences=len([1 for s, e in spans if answer[s:e].strip()]),
                         n_cited_sentences=len(claims), guarantee=guarantee,
                         rule=f"pass iff score > tau = {tau:.6g}" if tau is not None else "pass iff verifier verdict")

    # 1. verify every valid citation in one batch
    cites: list[tuple[int, int, int]] = []  # (marker index, number, passage index or -1)
    for mi, m in enumerate(markers):
        body = m.group("num") if m.group("num") is not None else m.group("link")
        for n in _expand_numeric(body):
            idx = n - base
            cites.append((mi, n, idx if 0 <= idx < len(passages) else -1))
    report.n_citations = len(cites)
    valid = [c for c in cites if c[2] >= 0]
    s, v = scorer([claims[msent[mi]] for mi, _, _ in valid], [passages[i] for _, _, i in valid]) if valid else ([], [])
    ok = (np.asarray(s) > tau) if tau is not None else np.asarray(v, bool)
    result: dict[tuple[int, int], CitationAudit] = {}
    failed = []
    for (mi, n, idx), sc, passed in zip(valid, s, ok):
        a = CitationAudit(msent[mi], claims[msent[mi]], n, float(sc), "verified" if passed else "flagged")
        result[(mi, n)] = a
        if not passed:
            failed.append((mi, n, idx))
    for mi, n, idx in cites:
        if idx < 0:
            result[(mi, n)] = CitationAudit(msent[mi], claims[msent[mi]], n, None, "invalid",
                                            reason=f"citation [{n}] out of range (have {len(passages)} passages, base {base})")

    # 2. re-attribute failures: proposals scored by the verifier, best accepted one wins
    if reattribute and failed:
        props: list[tuple[int, int, int]] = []  # (failed index, proposed passage, -)
        for fi, (mi, n, idx) in enumerate(failed):
            cited_here = {c[2] for c in cites if msent[c[0]] == msent[mi] and c[2] >= 0}
            cands = (bm25_proposals(claims[msent[mi]], passages, cited_here, proposals) if reattribute == "bm25"
                     else [j for j in range(len(passages)) if j not in cited_here])
            props += [(fi, j, 0) for j in cands]
        if props:
            ps, pv = scorer([claims[msent[failed[fi][0]]] for fi, _, _ in props], [passages[j] for _, j, _ in props])
            pok = (np.asarray(ps) > tau) if tau is not None else np.asarray(pv, bool)
            best: dict[int, tuple[float, int]] = {}
            for (fi, j, _), sc, passed in zip(props, ps, pok):
                if passed and (fi not in best or sc > best[fi][0]):
                    best[fi] = (float(sc), j)
            for fi, (sc, j) in best.items():
                mi, n, _ = failed[fi]
                a = result[(mi, n)]
                a.action, a.new_pointer, a.new_score = "reattributed", j + base, sc

    # 3. rewrite markers; flag or remove
    audits = [result[(mi, n)] for mi, n, _ in cites]
    report.audit = audits
    for a in audits:
        setattr(report, a.action, getattr(report, a.action) + 1)
    report.review_budget = report.flagged / report.n_citations if report.n_citations else 0.0
    drop = {a.sentence_index for a in audits if a.action == "flagged"} if remove else set()
    report.removed_sentences = len(drop)
    out, pos = [], 0
    for mi, m in enumerate(markers):
        out.append(answer[pos:m.start()])
        body = m.group("num") if m.group("num") is not None else m.group("link")
        parts = []
        for n in _expand_numeric(body):
            a = result[(mi, n)]
            parts.append(f"{a.new_pointer}" if a.action == "reattributed" else
                         f"{n} UNVERIFIED" if a.action == "flagged" else f"{n}")
        out.append("[" + ", ".join(parts) + "]")
        pos = m.end()
    out.append(answer[pos:])
    text = "".join(out)
    if drop:
        text = _remove_sentences(text, drop)
    return text, report


def _remove_sentences(text: str, drop: set[int]) -> str:
    spans = _sentence_spans(text)
    # a marker-only "sentence" after a dropped one goes with it
    keep = []
    for si, (s, e) in enumerate(spans):
        owner = si - 1 if si > 0 and _only_markers(text[s:e]) else si
        if owner in drop or si in drop:
            continue
        keep.append(text[s:e])
    return re.sub(r"[ \t]{2,}", " ", " ".join(k for k in keep if k.strip())).strip()
