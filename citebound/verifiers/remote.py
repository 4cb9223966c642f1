"""A verifier served over HTTP: a sequence classifier or cross-encoder behind a model server (vLLM's pooling
routes with ``--runner pooling``), so a guard pod needs no torch and no weights.

``api`` chooses the route:

- ``classify`` (``POST /classify``): each (claim, window) unit as one text, ``input_template`` filled in
  (``{passage} [SEP] {claim}`` by default: a BERT-style pair as one text); P(support) is the probability of
  class ``positive_class`` (of ``num_classes``), the verdict that class being the most probable (or, with
  ``threshold``, P(support) at or above it). ``positive_label`` names that class: the server's label for it is
  checked whenever it is the top class.
- ``pooling`` (``POST /pooling``): the same inputs and reading, for a server that offers only that route.
- ``score`` (``POST /score``): a one-logit cross-encoder on the (passage, claim) pair, tokenised as a pair by
  the server (``pair_order: claim_first`` for rerankers trained query-first); P(support) is its score,
  supported at or above ``threshold`` (0.5).

Each call is bounded (:mod:`citebound.scoring.bounded_http`): ``timeout_seconds`` in all, ``max_response_bytes``
of answer, no redirect followed; ``batch_size`` units a request, at most ``max_concurrency`` requests in
flight; connection failures and 429/502/503/504 are retried with backoff (``max_retries``,
``backoff_seconds``) while the request's deadline allows. **It fails closed**: a request that fails, times out
or answers something malformed (not JSON, NaN, a probability outside [0, 1], the wrong number of classes or
items, another model) leaves its units without a score, so their citations are ``unverified``, with one log
line saying why; the rest of the batch is scored. A request whose client left stops its calls within a read
slice (0.2 s) and starts no more.

The served model's identity (its id, root and max_model_len from ``GET /v1/models``) is part of the verifier's
hash, so a calibration made with one served model is refused for another; it is checked again every
``identity_check_seconds`` (and after any failure), and a changed identity fails every call until restart.
Credentials only by file (``api_key_file``: its first line is sent as a Bearer token).
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from citebound.scoring import deadline
from citebound.scoring.bounded_http import HTTPFailure, request_json
from citebound.scoring.llm_backends import read_secret, redact_url

log = logging.getLogger(__name__)

APIS = {"classify": "/classify", "pooling": "/pooling", "score": "/score"}
DEFAULT_TEMPLATE = "{passage} [SEP] {claim}"
LOG_EVERY_S = 10.0  # a failure that repeats is logged again at most this often


class RemoteError(RuntimeError):
    """A served model that cannot be used: the message names the endpoint (redacted) and what to do."""


def auth_headers(cfg: Mapping[str, Any], name: str) -> dict[str, str]:
    """``Authorization: Bearer`` with the first line of ``api_key_file`` (never the key itself in a config), or
    no header without one."""
    path = cfg.get("api_key_file")
    if not path:
        return {}
    try:
        key = read_secret(path)
    except ValueError as e:
        raise RemoteError(f"verifier {name!r}: api_key_file {path}: {e}") from None
    if not key.isprintable() or not key.isascii():
        raise RemoteError(f"verifier {name!r}: api_key_file {path}: its first line is not a printable ASCII key")
    return {"Authorization": f"Bearer {key}"}


def _number(cfg: Mapping[str, Any], key: str, default: float, lo: float, hi: float, kind: type = float) -> Any:
    v = cfg.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo <= v <= hi) or (kind is int and v != int(v)):
        raise RemoteError(f"verifier {cfg.get('name')!r}: {key} must be {'an integer' if kind is int else 'a number'} "
                          f"in [{lo:g}, {hi:g}], got {v!r}")
    return kind(v)


def served_identity(url: str, model: str, headers: Mapping[str, str], timeout_s: float, name: str) -> dict[str, Any]:
    """The served model's identity from ``GET {url}/v1/models``: its id, root and max_model_len."""
    where = redact_url(url)
    try:
        listing = request_json(f"{url}/v1/models", headers=headers, timeout_s=timeout_s, max_bytes=1 << 20)
    except HTTPFailure as e:
        raise RemoteError(f"verifier {name!r}: the model server {where} could not list its models ({e}); check "
                          "that it is up and that url points at it (--override url=...)") from None
    rows = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(rows, list):
        raise RemoteError(f"verifier {name!r}: {where}/v1/models is not an OpenAI-style model list")
    ids = [r.get("id") for r in rows if isinstance(r, dict)]
    for r in rows:
        if isinstance(r, dict) and r.get("id") == model:
            return {"id": model, "root": r.get("root"), "max_model_len": r.get("max_model_len")}
    raise RemoteError(f"verifier {name!r}: {where} serves {ids[:10]}, not {model!r}: set model to one it serves "
                      "(--override model=...)")


def identity_of(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The identity a :class:`RemoteVerifier` of this config would pin, asked of its server."""
    name = str(cfg.get("name", "remote"))
    return served_identity(str(cfg.get("url") or "").rstrip("/"), str(cfg.get("model") or ""), auth_headers(cfg, name),
                           min(float(cfg.get("timeout_seconds", 30)), 10.0), name)


class RemoteVerifier:
    """A served classifier behind the verifier interface (see the module's docstring)."""

    binary = False

    def __init__(self, cfg: Mapping[str, Any]):
        self.name = str(cfg.get("name", "remote"))
        self.api = str(cfg.get("api", "classify"))
        if self.api not in APIS:
            raise RemoteError(f"verifier {self.name!r}: api {self.api!r} is not one of {', '.join(APIS)}")
        url = str(cfg.get("url") or "").rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise RemoteError(f"verifier {self.name!r}: url {redact_url(url)!r} is not an http:// or https:// URL")
        if "@" in url.split("/")[2]:
            raise RemoteError(f"verifier {self.name!r}: url {redact_url(url)!r} carries credentials: give the key "
                              "by file (api_key_file)")
        self.url, self.model = url, str(cfg.get("model") or "")
        if not self.model:
            raise RemoteError(f"verifier {self.name!r}: model (the served model's name) is required")
        self.batch_size = _number(cfg, "batch_size", 32, 1, 1024, int)
        self.max_concurrency = _number(cfg, "max_concurrency", 4, 1, 64, int)
        self.chunk_units = self.batch_size * self.max_concurrency  # units per judge call: every request in flight
        self.timeout = _number(cfg, "timeout_seconds", 30.0, 0.1, 3600)
        self.max_retries = _number(cfg, "max_retries", 2, 0, 10, int)
        self.backoff = _number(cfg, "backoff_seconds", 0.25, 0, 60)
        self.max_bytes = _number(cfg, "max_response_bytes", 4 << 20, 1024, 1 << 30, int)
        self.identity_every = _number(cfg, "identity_check_seconds", 30.0, 0, 86400)
        self.positive = _number(cfg, "positive_class", 0, 0, 1 << 16, int)
        nc = cfg.get("num_classes", 1 if self.api == "score" else None)
        self.num_classes = None if nc is None else _number(cfg, "num_classes", 1, 1, 1 << 16, int)
        if self.api != "score" and (self.num_classes is None or self.positive >= self.num_classes):
            raise RemoteError(f"verifier {self.name!r}: api {self.api} needs num_classes (the served model's class "
                              f"count) above positive_class ({self.positive})")
        self.positive_label = cfg.get("positive_label")
        self.template = str(cfg.get("input_template", DEFAULT_TEMPLATE))
        try:
            self.template.format(claim="", passage="")
        except (KeyError, IndexError, ValueError) as e:
            raise RemoteError(f"verifier {self.name!r}: input_template may hold only {{claim}} and {{passage}} "
                              f"({type(e).__name__}: {e})") from None
        order = str(cfg.get("pair_order", "passage_first"))
        if order not in ("passage_first", "claim_first"):
            raise RemoteError(f"verifier {self.name!r}: pair_order {order!r} is not passage_first or claim_first")
        self.claim_first = order == "claim_first"
        thr = cfg.get("threshold", 0.5 if self.api == "score" else None)
        self.threshold = None if thr is None else _number(cfg, "threshold", 0.5, 0, 1)
        if self.api == "score" and self.threshold is None:  # one number per pair: no class to be on top
            raise RemoteError(f"verifier {self.name!r}: api score needs a threshold in [0, 1] (a pair is supported at "
                              "or above it), got null")
        self.truncate = cfg.get("truncate_prompt_tokens")
        self.headers = auth_headers(cfg, self.name)
        self.identity = served_identity(self.url, self.model, self.headers, min(self.timeout, 10.0), self.name)
        self._checked_at, self._changed, self._suspect = time.monotonic(), "", False
        self._lock = threading.Lock()
        self._logged: dict[str, tuple[float, int]] = {}  # failure -> (when last logged, units unscored since)
        self.pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix=f"remote-{self.name}")

    # -- identity ---------------------------------------------------------------------------------------------

    def _identity_problem(self) -> str:
        """'' while the served model is the one this verifier was loaded with; else why not (sticky)."""
        with self._lock:
            if self._changed:
                return self._changed
            due = self._suspect or time.monotonic() - self._checked_at >= self.identity_every
            if not due:
                return ""
            self._checked_at, self._suspect = time.monotonic(), False
        try:
            now = served_identity(self.url, self.model, self.headers, min(self.timeout, 5.0), self.name)
        except RemoteError as e:
            with self._lock:
                self._suspect = True
            return str(e)
        if now != self.identity:
            msg = (f"verifier {self.name!r}: the model served at {redact_url(self.url)} changed (loaded {self.identity}, "
                   f"now {now}): its calibration does not hold for it; restart the guard (and recalibrate)")
            with self._lock:
                self._changed = msg
            log.error("%s", msg)
            return msg
        return ""

    # -- one request ------------------------------------------------------------------------------------------

    def _body(self, claims: Sequence[str], windows: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model}
        if self.api == "score":
            first, second = (claims, windows) if self.claim_first else (windows, claims)
            body.update(text_1=list(first), text_2=list(second))
        else:
            body["input"] = [self.template.format(claim=c, passage=w) for c, w in zip(claims, windows)]
        if self.truncate is not None:
            body["truncate_prompt_tokens"] = int(self.truncate)
        return body

    def _read(self, answer: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(P(support), verdict) per unit from one answer, every field checked."""
        if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
            raise RemoteError("the answer has no 'data' list")
        if answer.get("model") not in (None, self.model):
            raise RemoteError(f"the answer is from model {str(answer.get('model'))[:80]!r}, not {self.model!r}")
        rows = answer["data"]
        if len(rows) != n:
            raise RemoteError(f"the answer has {len(rows)} items for {n} inputs")
        score, top = np.full(n, np.nan), np.zeros(n, dtype=bool)
        seen = set()
        for pos, row in enumerate(rows):
            if not isinstance(row, dict):
                raise RemoteError(f"item {pos} is not an object")
            i = row.get("index", pos)
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n or i in seen:
                raise RemoteError(f"item {pos} has index {str(i)[:20]}, not a new one in 0..{n - 1}")
            seen.add(i)
            if self.api == "score":
                probs = [row.get("score")]
            else:
                probs = row.get("probs") if self.api == "classify" else row.get("data")
            if not isinstance(probs, list) or len(probs) != (self.num_classes or 1):
                got = len(probs) if isinstance(probs, list) else type(probs).__name__
                raise RemoteError(f"item {i} has {got} class scores, not {self.num_classes or 1} (num_classes)")
            if not all(isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p)
                       and -1e-6 <= p <= 1 + 1e-6 for p in probs):
                raise RemoteError(f"item {i}'s scores are not probabilities in [0, 1]: {str(probs)[:80]}")
            if len(probs) > 1 and abs(sum(probs) - 1.0) > 1e-3:
                raise RemoteError(f"item {i}'s class probabilities sum to {sum(probs):.4f}, not 1")
            best = int(np.argmax(probs))
            if (self.positive_label is not None and best == self.positive and row.get("label") is not None
                    and str(row["label"]) != str(self.positive_label)):
                raise RemoteError(f"the served model calls class {self.positive} {str(row['label'])[:40]!r}, not "
                                  f"{self.positive_label!r} (positive_label): set positive_class to its index")
            score[i] = min(1.0, max(0.0, float(probs[self.positive if self.api != "score" else 0])))
            top[i] = best == self.positive and self.api != "score"  # the score API's verdict is its threshold's
        verdict = score >= self.threshold if self.threshold is not None else top
        return score, verdict

    def _call(self, claims: Sequence[str], windows: Sequence[str], end: float, token: Any,
              stop: threading.Event) -> tuple[np.ndarray, np.ndarray]:
        """One batch, retried while safe and while time is left; a RemoteError says why it failed."""
        def check() -> None:
            if stop.is_set():
                raise deadline.Cancelled("the request was cancelled")
            if token is not None:
                token.check()

        url, body = self.url + APIS[self.api], self._body(claims, windows)
        end = min(end, time.monotonic() + self.timeout)  # timeout_seconds is each request's, tries included
        for attempt in range(self.max_retries + 1):
            check()
            left = end - time.monotonic()
            if left <= 0:
                raise RemoteError(f"no answer within timeout_seconds ({self.timeout:g} s)")
            try:
                answer = request_json(url, "POST", body, headers=self.headers, timeout_s=left,
                                      max_bytes=self.max_bytes, stop=check)
                return self._read(answer, len(claims))
            except HTTPFailure as e:
                pause = self.backoff * 2 ** attempt
                if not e.retryable or attempt == self.max_retries or time.monotonic() + pause >= end:
                    why = str(e).replace("the time left", f"timeout_seconds ({self.timeout:g} s) or the request's "
                                                          "deadline")
                    raise RemoteError(why) from None
                log.warning("verifier %s: %s %s (%s); retry %d/%d in %.2f s", self.name, redact_url(url), "failed",
                            e, attempt + 1, self.max_retries, pause)
                wake = min(end, time.monotonic() + pause)
                while (left := wake - time.monotonic()) > 0:
                    check()
                    time.sleep(min(0.05, left))
        raise RemoteError("no attempt was made")  # pragma: no cover - the loop always returns or raises

    # -- the verifier interface ---------------------------------------------------------------------------------

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """P(support), verdict and, per unit, '' or why it has no score (a failed request: NaN, never a pass)."""
        n = len(claims)
        score, verdict, notes = np.full(n, np.nan), np.zeros(n, dtype=bool), [""] * n
        if not n:
            return score, verdict, notes
        where = f"{redact_url(self.url)}{APIS[self.api]}"
        problem = self._identity_problem()
        if problem:
            return score, verdict, [f"the served verifier could not be used: {problem}"] * n
        token = deadline.current()  # the pool's threads do not see the context: the token travels by hand
        end = getattr(token, "deadline", None) or math.inf  # the request's own; each call adds timeout_seconds
        stop = threading.Event()
        spans = [(i, min(i + self.batch_size, n)) for i in range(0, n, self.batch_size)]
        futures = [self.pool.submit(self._call, claims[a:b], windows[a:b], end, token, stop) for a, b in spans]
        try:
            while wait(futures, timeout=0.05).not_done:
                deadline.check()  # a request that gave up releases the verifier now
        except deadline.Cancelled:
            stop.set()
            for f in futures:
                f.cancel()
            raise
        failures: dict[str, int] = {}
        for (a, b), f in zip(spans, futures):
            try:
                score[a:b], verdict[a:b] = f.result()
            except deadline.Cancelled:
                raise
            except RemoteError as e:
                note = f"the served verifier at {where} failed: {e}"
                notes[a:b] = [note] * (b - a)
                failures[str(e)] = failures.get(str(e), 0) + (b - a)
                with self._lock:
                    self._suspect = True  # ask who is serving before the next call
        for why, units in failures.items():
            self._log_failure(why, units, n, where)
        return score, verdict, notes

    def _log_failure(self, why: str, units: int, n: int, where: str) -> None:
        """One ERROR line per kind of failure, then at most one every LOG_EVERY_S seconds with what it hid, so a
        server that is down writes a line, not one per request."""
        now = time.monotonic()
        with self._lock:
            last, hidden = self._logged.get(why, (-math.inf, 0))
            if now - last < LOG_EVERY_S:
                self._logged[why] = (last, hidden + units)
                return
            self._logged[why] = (now, 0)
        more = f" (and {hidden} more units since the last line)" if hidden else ""
        log.error("verifier %s: %d of %d units unscored (their citations are unverified): %s at %s%s",
                  self.name, units, n, why, where, more)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
