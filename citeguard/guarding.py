"""The deployable guard: verify -> re-attribute -> flag, for one cited answer.

For each citation of each cited sentence (what counts as a citation is
:func:`citeguard.citations.sentence_citations`, shared with extraction):

1. **verify** the sentence (markers removed) against the cited passage; a
   citation that points at no passage (out of range) is **invalid**, the
   clearest unsupported citation there is;
2. if it fails or is invalid, **re-attribute**: the re-attributor (BM25 by
   default) proposes other provided passages and the verifier must accept one
   before the pointer moves (the sentence is kept, only the pointer changes;
   the best-scoring accepted proposal wins);
3. otherwise **flag** it in place as ``[N UNVERIFIED]`` or ``[N INVALID]`` (or,
   with ``remove=True``, drop the sentence).

With a calibration (``tau``) a citation passes iff ``score > tau`` (the
split-conformal rule); without, the verifier's own verdict decides. Each
audit entry carries the evidence: the best window's character span in the
passage and its text.

This module is the guard alone: it imports no study code (analysis,
statistics), only citation parsing, re-attribution and the verifier windows.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .citations import Citation, sentence_citations, sentences, strip_markers
from .reattribution import Reattributor, load_reattributor
from .verifiers.base import window_spans

Scorer = Callable[[Sequence[str], Sequence[str]], tuple[np.ndarray, np.ndarray]]
ACTIONS = ("verified", "reattributed", "flagged", "invalid")


class GuardInputError(ValueError):
    """Bad guard input; the message says what is wrong."""


@dataclass
class Evidence:
    """Where in a passage the verifier found its best support."""

    passage: int  # citation number of the passage (in the answer's base)
    start: int  # character span of the best window in the passage
    end: int
    text: str
    score: float | None


@dataclass
class CitationAudit:
    sentence_index: int
    claim: str
    cited: int  # citation number as written (in the answer's base)
    marker: str  # the marker as written, e.g. "[1-3]" or "[[2]](https://...)"
    spans: list[tuple[int, int]]  # where the marker(s) citing this target stand in the answer
    score: float | None
    action: str  # verified | reattributed | flagged | invalid
    new_pointer: int | None = None
    new_score: float | None = None
    reason: str = ""
    evidence: Evidence | None = None  # best window of the cited passage (None when invalid)
    new_evidence: Evidence | None = None  # best window of the accepted passage, after re-attribution


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
    review_budget: float = 0.0  # share of citations a person must review: flagged + invalid
    rule: str = ""
    guarantee: str = ""
    audit: list[CitationAudit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


@dataclass
class _Judged:
    score: np.ndarray
    passed: np.ndarray
    evidence: list[Evidence]


def _judge(scorer: Any, claims: list[str], passages: Sequence[str], idx: list[int], tau: float | None,
           base: int) -> _Judged:
    """Score (claim, passage idx) pairs; pass/fail by tau or verdict; the best window of each."""
    texts = [passages[i] for i in idx]
    windowing = None
    if hasattr(scorer, "score"):  # a PairScorer: the full-passage protocol, with its windows
        ps = scorer.score(claims, texts)
        s, v, best, windowing = np.asarray(ps.score, float), ps.verdict, ps.best_window, scorer.windowing
    else:  # a plain callable: no windows, so the evidence is the whole passage
        res = scorer(claims, texts)
        s, v, best = np.asarray(res[0], float), res[1], None
    passed = s > tau if tau is not None else np.asarray(v, bool)
    ev = []
    for t, (i, text) in enumerate(zip(idx, texts)):
        lo, hi = 0, len(text)
        if windowing is not None and best[t] >= 0:
            lo, hi = window_spans(len(text), int(windowing["window_chars"]), int(windowing["stride"]))[int(best[t])]
        ev.append(Evidence(i + base, lo, hi, text[lo:hi], None if np.isnan(s[t]) else float(s[t])))
    return _Judged(s, np.asarray(passed, bool), ev)


def guard_answer(answer: str, passages: Sequence[str], scorer: Scorer, *, tau: float | None = None,
                 base: int = 1, reattribute: Reattributor | str | None = "bm25", proposals: int = 3,
                 remove: bool = False, guarantee: str = "") -> tuple[str, GuardReport]:
    """Guard one answer; returns the guarded answer and its report.

    ``reattribute``: a :class:`Reattributor`, a re-attributor config name
    (``bm25``, ``verifier``) or None for no re-attribution.
    """
    if not isinstance(answer, str):
        raise GuardInputError("'answer' must be a string")
    if base not in (0, 1):
        raise GuardInputError(f"citation base must be 0 or 1, got {base!r}")
    if isinstance(reattribute, str):
        reattribute = load_reattributor(reattribute, proposals)
    passages = list(passages)
    sents = sentences(answer)
    cites = {s.index: sentence_citations(answer, s, len(passages), base=base) for s in sents}
    claims = {si: strip_markers(sents[si].text) for si, cs in cites.items() if cs}
    report = GuardReport(n_sentences=len(sents), n_cited_sentences=len(claims), guarantee=guarantee,
                         rule=f"pass iff score > tau = {tau:.6g}" if tau is not None else "pass iff verifier verdict")

    # one audit per distinct target of a sentence; repeats ([1][1]) share it
    audits: list[CitationAudit] = []
    audit_of: dict[tuple[int, Any], CitationAudit] = {}
    for si, cs in cites.items():
        for c in cs:
            target = _target(c)
            if (si, target) in audit_of:
                audit_of[(si, target)].spans.append((c.start, c.end))
                continue
            a = CitationAudit(si, claims[si], int(c.key), c.marker, [(c.start, c.end)], None,
                              "invalid" if c.passage_index < 0 else "verified")
            if c.passage_index < 0:
                a.reason = f"citation [{c.key}] points at no passage (have {len(passages)}, numbered from {base})"
            audit_of[(si, target)] = a
            audits.append(a)
    report.n_citations = len(audits)

    # 1. verify every valid citation in one batch
    valid = [a for a in audits if a.action == "verified"]
    if valid:
        j = _judge(scorer, [a.claim for a in valid], passages, [a.cited - base for a in valid], tau, base)
        for a, ok, ev in zip(valid, j.passed, j.evidence):
            a.score, a.evidence = ev.score, ev
            if not ok:
                a.action = "flagged"

    # 2. re-attribute failed and invalid citations: proposals scored by the verifier, best accepted wins
    failed = [a for a in audits if a.action in ("flagged", "invalid")]
    if reattribute is not None and failed:
        props: list[tuple[CitationAudit, int]] = []
        for a in failed:
            cited_here = {c.passage_index for c in cites[a.sentence_index] if c.passage_index >= 0}
            props += [(a, p) for p in reattribute.propose(a.claim, passages, cited_here)]
        if props:
            j = _judge(scorer, [a.claim for a, _ in props], passages, [p for _, p in props], tau, base)
            best: dict[int, tuple[float, Evidence]] = {}
            for (a, _), sc, ok, ev in zip(props, j.score, j.passed, j.evidence):
                if ok and (id(a) not in best or sc > best[id(a)][0]):
                    best[id(a)] = (float(sc), ev)
            for a in failed:
                if id(a) in best:
                    sc, ev = best[id(a)]
                    a.action, a.new_pointer, a.new_score, a.new_evidence = "reattributed", ev.passage, sc, ev

    report.audit = audits
    for a in audits:
        setattr(report, a.action, getattr(report, a.action) + 1)
    report.review_budget = (report.flagged + report.invalid) / report.n_citations if report.n_citations else 0.0

    # 3. rewrite markers; flag or remove
    drop = {a.sentence_index for a in audits if a.action in ("flagged", "invalid")} if remove else set()
    report.removed_sentences = len(drop)
    edits = {}
    for si, cs in cites.items():
        for (start, end), group in _by_marker(cs).items():
            edits[start] = (end, _rewrite(answer[start:end], [audit_of[(si, _target(c))] for c in group],
                                          [int(c.key) for c in group]))
    text = _apply(answer, edits, [(s.start, s.end) for s in sents if s.index in drop])
    return text, report


def _target(c: Citation) -> Any:
    return c.passage_index if c.passage_index >= 0 else f"invalid:{c.key}"


def _by_marker(cs: list[Citation]) -> dict[tuple[int, int], list[Citation]]:
    out: dict[tuple[int, int], list[Citation]] = {}
    for c in cs:
        out.setdefault((c.start, c.end), []).append(c)
    return out


_LINK_TAIL = re.compile(r"^\[\[\d+\]\](\(.*\))$")


def _rewrite(marker: str, audits: list[CitationAudit], numbers: list[int]) -> str:
    """A marker as the guard leaves it: unchanged when every citation in it is verified."""
    if all(a.action == "verified" for a in audits):
        return marker
    parts = [f"{a.new_pointer}" if a.action == "reattributed" else f"{n} UNVERIFIED" if a.action == "flagged"
             else f"{n} INVALID" if a.action == "invalid" else f"{n}" for a, n in zip(audits, numbers)]
    link = _LINK_TAIL.match(marker)
    if link and audits[0].action != "reattributed":  # the URL still belongs to this citation
        return f"[[{parts[0]}]]{link.group(1)}"
    return "[" + ", ".join(parts) + "]"


def _apply(text: str, edits: Mapping[int, tuple[int, str]], dropped: list[tuple[int, int]]) -> str:
    """Replace marker spans (start -> (end, new)) and delete dropped sentence spans."""
    cut = set()
    for lo, hi in dropped:  # a dropped sentence takes the whitespace after it (or before it, at the end)
        while hi < len(text) and text[hi].isspace():
            hi += 1
        if hi == len(text):
            while lo > 0 and text[lo - 1].isspace():
                lo -= 1
        cut.update(range(lo, hi))
    out, pos = [], 0
    for start in sorted(edits):
        end, new = edits[start]
        out.append("".join(ch for k, ch in enumerate(text[pos:start], pos) if k not in cut))
        if start not in cut:
            out.append(new)
        pos = end
    out.append("".join(ch for k, ch in enumerate(text[pos:], pos) if k not in cut))
    return "".join(out).rstrip() if dropped else "".join(out)
