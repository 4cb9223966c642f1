"""LLM verifiers over any OpenAI-compatible endpoint (binary verdicts).

Used for the GPT-4o judge and the OpenScholar post-hoc check (each a prompt
in config). Every raw response is frozen in a sqlite store keyed by the
prompt hash, so reruns cost nothing and can be audited; the API key is read
from an environment variable and never logged or written.
"""
from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import numpy as np

from citebound.scoring import deadline
from citebound.scoring.llm_backends import api_key

log = logging.getLogger(__name__)


class ResponseStore:
    """prompt hash -> raw response, on disk (thread-safe)."""

    def __init__(self, path: str | Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), timeout=120, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS response (prompt_hash TEXT PRIMARY KEY, model TEXT, "
                        "prompt TEXT, response TEXT)")
        self.db.commit()
        self.lock = threading.Lock()

    @staticmethod
    def hash(model: str, prompt: str) -> str:
        return hashlib.sha256(f"{model}\x1f{prompt}".encode()).hexdigest()

    def get(self, h: str) -> str | None:
        with self.lock:
            row = self.db.execute("SELECT response FROM response WHERE prompt_hash = ?", (h,)).fetchone()
        return row[0] if row else None

    def put(self, h: str, model: str, prompt: str, response: str) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO response VALUES (?, ?, ?, ?)", (h, model, prompt, response))
            self.db.commit()


def parse_verdict(text: str, positive: str, negative: str) -> bool | None:
    """The judge's verdict, read strictly: True when the reply says ``positive`` and nothing negative, False
    when it says ``negative`` or a negated ``positive`` ("not supported", "is not fully supported",
    "un-supported") and nothing positive, None (unparsed: the citation is 'unverified') when it says neither
    or both. Markdown emphasis is ignored.

    >>> parse_verdict("UNSUPPORTED.", "SUPPORTED", "UNSUPPORTED")
    False
    >>> parse_verdict("**NOT SUPPORTED**", "SUPPORTED", "UNSUPPORTED")
    False
    >>> parse_verdict("Supported? No: UNSUPPORTED", "SUPPORTED", "UNSUPPORTED") is None
    True
    >>> parse_verdict("Yes, it does", "Yes", "No")
    True
    >>> parse_verdict("It is not, on balance, supported.", "SUPPORTED", "UNSUPPORTED")
    False
    """
    t = " ".join(re.sub(r"[*_`#>]", " ", text or "").split()).lower()
    p, n = re.escape(positive.lower()), re.escape(negative.lower())
    # a negation cue, then up to two words (commas and colons between them too: "not, on balance, supported")
    negated = re.compile(rf"\b(?:not|never|no|hardly|cannot|isn't|aren't|wasn't|doesn't)[\s,;:]+(?:[\w'-]+[\s,;:]+){{0,2}}?{p}\b"
                         rf"|\b(?:un|non|not)-{p}\b")
    said_negative = re.search(rf"\b{n}\b", t) is not None or negated.search(t) is not None
    said_positive = re.search(rf"\b{p}\b", negated.sub(" ", t)) is not None
    if said_positive == said_negative:
        return None
    return said_positive


def call_with_retries(fn: Callable[[], str], max_retries: int, backoff: float, token: Any = None) -> str:
    """Retry transient failures (5xx, 429, timeouts, connection errors) with exponential backoff; with a
    request's work ``token``, no retry starts and no backoff waits once the request is gone."""
    import openai

    for attempt in range(max_retries + 1):
        if token is not None:
            token.check()
        try:
            return fn()
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as e:
            err = e  # any other status (a 4xx: the request itself is wrong) is raised as it is, untried again
        if attempt < max_retries:
            wait = backoff * (2 ** attempt)
            log.warning("LLM call failed (%s); retry %d/%d in %.1fs", type(err).__name__, attempt + 1, max_retries, wait)
            _sleep(wait, token)
    raise RuntimeError(f"LLM call failed after {max_retries + 1} attempts: {err}") from err


def _sleep(seconds: float, token: Any) -> None:
    """Sleep, waking every 0.05 s to stop (Cancelled) when the request is gone."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if token is not None:
            token.check()
        time.sleep(min(left, 0.05))


def _time_left(token: Any, cap: float) -> float:
    """A call's timeout: the verifier's own, cut to what is left of the request's deadline (at least 0.1 s)."""
    end = getattr(token, "deadline", None)
    if end is None and token is not None:  # a merged batch: the latest deadline of its requests
        ends = [getattr(t, "deadline", None) for t in getattr(token, "tokens", [])]
        end = None if not ends or None in ends else max(ends)
    return cap if end is None else max(0.1, min(cap, end - time.monotonic()))


class LLMVerifier:
    binary = True

    def __init__(self, cfg: Mapping[str, Any], store_path: str | Path):
        import openai

        from citebound.scoring.llm_backends import install_log_redaction

        install_log_redaction()  # httpx logs each request's URL, credentials included

        self.name = cfg.get("name", "llm_judge")
        self.cfg = dict(cfg)
        self.batch_size = int(cfg.get("max_concurrency", 8)) * 4
        self.model = str(cfg["model"])
        self.template = str(cfg["prompt"])
        self.positive, self.negative = str(cfg["positive"]), str(cfg["negative"])
        self.store = ResponseStore(store_path)
        self.client = openai.OpenAI(base_url=cfg["base_url"], api_key=api_key(cfg), max_retries=0,
                                    timeout=float(cfg.get("timeout_seconds", 60)))
        self.n_unparsed = 0

    def _ask(self, prompt: str, token: Any = None) -> str:
        h = ResponseStore.hash(self.model, prompt)
        cached = self.store.get(h)
        if cached is not None:
            return cached
        cap = float(self.cfg.get("timeout_seconds", 60))

        def once() -> str:  # each call gets its own deadline: the request's, or the verifier's timeout
            r = self.client.with_options(timeout=_time_left(token, cap)).chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": prompt}],
                temperature=float(self.cfg.get("temperature", 0)), max_tokens=int(self.cfg.get("max_tokens", 8)))
            return r.choices[0].message.content or ""

        try:
            text = call_with_retries(once, int(self.cfg.get("max_retries", 5)), float(self.cfg.get("backoff_seconds", 1.0)),
                                     token)
        except RuntimeError as e:
            from citebound.scoring.llm_backends import EndpointError, redact_url
            raise EndpointError(f"verifier {self.cfg.get('name')}: the LLM endpoint {redact_url(str(self.cfg['base_url']))} "
                                f"failed ({e}); check --override base_url=... and that the server is up") from None
        self.store.put(h, self.model, prompt, text)
        return text

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        prompts = [self.template.format(claim=c, passage=w) for c, w in zip(claims, windows)]
        token = deadline.current()  # the pool's threads do not see the context: the token travels by hand
        pool = ThreadPoolExecutor(max_workers=int(self.cfg.get("max_concurrency", 8)))
        try:
            futures = [pool.submit(self._ask, p, token) for p in prompts]
            while wait(futures, timeout=0.05).not_done:
                # a request that gave up (or ran out of time) releases the verifier now, not when a hung
                # endpoint's calls time out: the calls in flight end on their own deadline, unwaited
                deadline.check()
            answers = [f.result() for f in futures]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        verdicts = [parse_verdict(a, self.positive, self.negative) for a in answers]
        self.n_unparsed += sum(v is None for v in verdicts)
        scores = np.array([np.nan if v is None else float(v) for v in verdicts])
        return scores, np.array([bool(v) for v in verdicts])
