"""The verifier interface and the shared full-passage protocol.

Every verifier judges (claim, window) units: ``judge(claims, windows)``
returns P(support) in [0, 1] and a boolean verdict per unit. Windowing,
de-duplication, on-disk caching and aggregation (max over windows; supported
if any window is) live once, in :func:`score_pairs`, not in each verifier.
"""
from __future__ import annotations

import hashlib
import logging
import math
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from citebound.scoring import deadline
from citebound.scoring.hashing import EXACT_DEFAULTS, RUNTIME_KEYS, verifier_hash  # noqa: F401 (re-exported)
from citebound.text.citations import is_blank

log = logging.getLogger(__name__)


class Verifier(Protocol):
    name: str
    binary: bool  # True: verdicts only (scores are 0/1)
    batch_size: int

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """P(support) and verdict for each (claim, window) unit. A verifier that can fail for some units and
        not others (a served model) returns a third item: per unit '' or why it has no score (NaN); such a
        unit is not cached, and its pair has no score (unverified), whatever its other windows say."""
        ...


def window_spans(n_chars: int, window_chars: int = 600, stride: int = 300) -> list[tuple[int, int]]:
    """(start, end) of each window over a text of ``n_chars`` characters: ``window_chars``
    wide at ``stride``; the last window always reaches the end.

    >>> window_spans(1000)
    [(0, 600), (300, 900), (400, 1000)]
    >>> window_spans(5)
    [(0, 5)]
    """
    if n_chars <= window_chars:
        return [(0, n_chars)]
    starts = list(range(0, n_chars - window_chars + 1, stride))
    if starts[-1] != n_chars - window_chars:
        starts.append(n_chars - window_chars)
    return [(s, s + window_chars) for s in starts]


def verifier_windowing(cfg: Mapping[str, Any], windowing: Mapping[str, int]) -> dict[str, int]:
    """The protocol's windowing with a verifier's own ``windowing`` keys on top (e.g. the kit's
    AttrScore reads only each passage's first 600 characters: ``{stride: 600, max_windows: 1}``).

    >>> verifier_windowing({"windowing": {"max_windows": 1}}, {"window_chars": 600, "stride": 300, "claim_cap": 600})
    {'window_chars': 600, 'stride': 300, 'claim_cap': 600, 'max_windows': 1}
    """
    return {**windowing, **dict(cfg.get("windowing") or {})}


def make_windows(passage: str, window_chars: int = 600, stride: int = 300) -> list[str]:
    """The windows of a passage (see :func:`window_spans`).

    >>> [len(w) for w in make_windows("x" * 1000)]
    [600, 600, 600]
    >>> make_windows("short")
    ['short']
    """
    return [passage[s:e] for s, e in window_spans(len(passage), window_chars, stride)]


class ScoreCache:
    """On-disk (sqlite) cache of unit judgements keyed by (verifier hash, claim, window).

    Written after every batch, so an interrupted run resumes where it stopped.
    """

    def __init__(self, path: str | Path, timeout: float = 120.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=timeout)
        deadline, pause = time.monotonic() + timeout, 0.01
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("CREATE TABLE IF NOT EXISTS unit (key TEXT PRIMARY KEY, score REAL, verdict INTEGER)")
                self.db.commit()
                return
            except sqlite3.OperationalError as e:
                # SQLite answers "locked" at once, without waiting out the timeout, when another job
                # holds the write lock this switch to WAL needs: score jobs that open the same cache
                # side by side retry here until it is free
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(pause)
                pause = min(2 * pause, 0.5)

    @staticmethod
    def key(claim: str, window: str) -> str:
        return hashlib.sha256(f"{claim}\x1f{window}".encode()).hexdigest()[:40]

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[float, bool]]:
        out: dict[str, tuple[float, bool]] = {}
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            q = f"SELECT key, score, verdict FROM unit WHERE key IN ({','.join('?' * len(chunk))})"
            for k, s, v in self.db.execute(q, chunk):
                out[k] = (math.nan if s is None else s, bool(v))
        return out

    def put_many(self, items: Sequence[tuple[str, float, bool]]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO unit VALUES (?, ?, ?)",
                            [(k, None if np.isnan(s) else float(s), int(v)) for k, s, v in items])
        self.db.commit()

    def close(self) -> None:
        self.db.close()


@dataclass
class PairScores:
    """Pair-level outcome of the full-passage protocol."""

    score: np.ndarray  # max P(support) over windows (NaN when not scorable)
    verdict: np.ndarray  # True if any window is supported
    best_window: np.ndarray  # index of the best window, -1 if none
    n_windows: np.ndarray
    reason: list[str]  # '' or why a pair was not scored normally
    n_units: int = 0
    n_cached: int = 0


def judge_chunk(verifier: Verifier, chunk_units: int | None = None) -> int:
    """Units per ``verifier.judge`` call: ``chunk_units`` if given, else the verifier's own
    ``chunk_units`` (the embedding verifier wants a whole score job), else 256."""
    return int(chunk_units or getattr(verifier, "chunk_units", 256))


def score_pairs(
    verifier: Verifier,
    claims: Sequence[Any],
    passages: Sequence[Any],
    *,
    window_chars: int = 600,
    stride: int = 300,
    claim_cap: int = 600,
    cache: ScoreCache | None = None,
    chunk_units: int | None = None,
    progress: bool = True,
    max_windows: int | None = None,
) -> PairScores:
    """Score claim--passage pairs with ``verifier`` under the full-passage protocol.

    Empty/NaN passages get score 0 with reason ``empty_passage``; missing
    claims get NaN with reason ``missing_claim``; neither stops the batch.
    ``max_windows`` keeps only a passage's first windows (None: all).
    Units go to ``verifier.judge`` :func:`judge_chunk` at a time (and into the cache after each call).
    """
    n = len(claims)
    reason, units, pair_units = _pair_units(claims, passages, window_chars, stride, claim_cap, max_windows)
    u_score, u_verdict, u_note, n_cached = _judge_units(verifier, units, cache, judge_chunk(verifier, chunk_units),
                                                        progress, n)
    score = np.full(n, np.nan)
    verdict = np.zeros(n, dtype=bool)
    best = np.full(n, -1, dtype=int)
    n_win = np.zeros(n, dtype=int)
    for i, ids in enumerate(pair_units):
        if reason[i] == "empty_passage":
            score[i] = 0.0
            continue
        if not ids:
            continue
        s = u_score[ids]
        n_win[i] = len(ids)
        failed = next((u_note[j] for j in ids if u_note[j]), "")
        if failed:  # a window that could not be judged may be the one that supports: the pair is not judged
            reason[i] = f"unscored: {failed}"
            continue
        if np.all(np.isnan(s)):
            reason[i] = "unscored"
            continue
        best[i] = int(np.nanargmax(s))
        score[i] = float(s[best[i]])
        verdict[i] = bool(u_verdict[ids].any())
    return PairScores(score, verdict, best, n_win, reason, len(units), n_cached)


def _pair_units(claims: Sequence[Any], passages: Sequence[Any], window_chars: int, stride: int, claim_cap: int,
                max_windows: int | None) -> tuple[list[str], list[tuple[str, str]], list[list[int]]]:
    """Per pair its reason ('' or why it has no units) and its (claim, window) unit ids; the distinct units."""
    reason = [""] * len(claims)
    unit_index: dict[tuple[str, str], int] = {}
    units: list[tuple[str, str]] = []
    pair_units: list[list[int]] = []
    windows_of: dict[str, list[str]] = {}  # one copy of a passage's windows, however many pairs cite it
    for i, (c, p) in enumerate(zip(claims, passages)):
        if i % 64 == 0:
            deadline.check()  # a cancelled request stops here too: windowing a large batch takes seconds
        if is_blank(c) or is_blank(p):
            reason[i] = "missing_claim" if is_blank(c) else "empty_passage"
            pair_units.append([])
            continue
        claim = str(c)[:claim_cap]
        ids = []
        text = str(p)
        if text not in windows_of:
            windows_of[text] = make_windows(text, window_chars, stride)[:max_windows]
        for w in windows_of[text]:
            u = (claim, w)
            if u not in unit_index:
                unit_index[u] = len(units)
                units.append(u)
            ids.append(unit_index[u])
        pair_units.append(ids)
    return reason, units, pair_units


def _judge_units(verifier: Verifier, units: list[tuple[str, str]], cache: ScoreCache | None, chunk_units: int,
                 progress: bool, n_pairs: int) -> tuple[np.ndarray, np.ndarray, list[str], int]:
    """Unit scores, verdicts and failure notes ('' or why a unit has no score): from the cache where it has
    them, else ``chunk_units`` at a time from the verifier. A unit that failed is not cached."""
    u_score = np.full(len(units), np.nan)
    u_verdict = np.zeros(len(units), dtype=bool)
    u_note = [""] * len(units)
    keys = []
    for j, (c, w) in enumerate(units if cache is not None else ()):  # the content hashes only a cache needs
        if j % 4096 == 0:
            deadline.check()
        keys.append(ScoreCache.key(c, w))
    todo = list(range(len(units)))
    n_cached = 0
    if cache is not None and units:
        hit = cache.get_many(keys)
        for j, k in enumerate(keys):
            if k in hit:
                u_score[j], u_verdict[j] = hit[k]
        todo = [j for j, k in enumerate(keys) if k not in hit]
        n_cached = len(units) - len(todo)
    threshold = getattr(verifier, "threshold", None)
    if threshold is not None:  # verdict = score >= threshold, whatever threshold the cache was made with
        u_verdict = u_score >= float(threshold)  # NaN compares False, quietly
    log.info("%s: %d pairs, %d unique (claim, window) units, %d cached, %d to score",
             verifier.name, n_pairs, len(units), n_cached, len(todo))
    bar = tqdm(total=len(todo), desc=f"score[{verifier.name}]", unit="win", disable=not progress)
    for start in range(0, len(todo), chunk_units):
        deadline.check()  # a cancelled request stops here, between verifier calls
        idx = todo[start:start + chunk_units]
        out = verifier.judge([units[j][0] for j in idx], [units[j][1] for j in idx])
        s = np.asarray(out[0], dtype=float)
        v = np.asarray(out[1], dtype=bool)
        notes = list(out[2]) if len(out) > 2 else [""] * len(idx)
        u_score[idx], u_verdict[idx] = s, v
        for t, j in enumerate(idx):
            u_note[j] = notes[t]
        if cache is not None:
            cache.put_many([(keys[j], s[t], v[t]) for t, j in enumerate(idx) if not notes[t]])
        bar.update(len(idx))
    bar.close()
    return u_score, u_verdict, u_note, n_cached
