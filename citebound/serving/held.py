"""What every API the proxy speaks shares, once: the request's passages and guard checked before the upstream is
called, a whole answer guarded, and the hold-verify-release loop of a streamed answer (:class:`HeldAnswer`: text
in as it streams, guarded text out a run of complete sentences at a time, the report at the end). Each API module
(:mod:`~citebound.serving.proxy` for chat completions, :mod:`~citebound.serving.api_responses`,
:mod:`~citebound.serving.api_messages`) only translates its own requests, events and errors."""
from __future__ import annotations

import asyncio
from typing import Any

from citebound.guarding.report import GuardReport
from citebound.guarding.stream import StreamAssembler
from citebound.scoring.llm_backends import redact_url
from citebound.serving.state import GuardInputError, ServiceState, texts, without_claims
from citebound.serving.upstream import StreamFailure
from citebound.text.limits import LimitExceeded


class GuardFailure(Exception):
    """The request cannot be guarded: ``status`` and ``code`` to answer with, in the API's own error shape."""

    def __init__(self, status: int, message: str, code: str, extra: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.extra, self.headers = status, code, extra or {}, headers or {}


NO_PASSAGES = ("no passages: send them in the request's 'citebound' field, e.g. extra_body={'citebound': {'passages': "
               "[...]}}; an answer without its passages cannot be checked and is never passed")


def prepare(state: ServiceState, extra: Any, more: list[str] | None = None) -> tuple[Any, list[str]]:
    """The guard and the passages of a request's ``citebound`` field (``more``: passages the request carries in its
    own API's form, after them); GuardFailure when there are none (400), or on bad input or an unknown group (422)."""
    if (extra is None or extra.passages is None) and not more:  # [] is an answer with no passages: each citation is invalid
        raise GuardFailure(400, NO_PASSAGES, "no_passages")
    try:
        guard = state.guard_for(extra.calibration if extra else None)
        passages = (texts(extra.passages) if extra and extra.passages else []) + list(more or [])
        state.cfg.limits.check_passages(passages)
        guard.calibrations.resolve(extra.group if extra else None)
    except GuardInputError as e:
        raise GuardFailure(422, str(e), getattr(e, "limit", None) or "bad_input") from None
    except ValueError as e:  # an unknown group
        raise GuardFailure(422, str(e), "unknown_group") from None
    return guard, passages


async def guard_whole(state: ServiceState, guard: Any, items: list[tuple[str, list[str], int | None]],
                      group: str | None, block: bool = True) -> list[tuple[str, GuardReport]]:
    """Whole answers guarded in one request's work; GuardFailure on bad input (422) or past the timeout (504)."""
    try:
        return await state.run_guard(guard, items, group, block=block)
    except GuardInputError as e:
        raise GuardFailure(422, str(e), getattr(e, "limit", None) or "bad_input") from None
    except TimeoutError:
        raise GuardFailure(504, f"the request took longer than {state.cfg.request_timeout_s} s (--request-timeout)",
                           "timeout") from None


async def ask_upstream(state: ServiceState, shown: str, url: str, headers: dict[str, str], body: dict[str, Any],
                       stream: bool, listed: str | None = None) -> Any:
    """The upstream's opened stream, or its JSON answer (holding a list under ``listed``) within the request
    timeout; GuardFailure saying why not (502 with the upstream's body, 504 naming the option)."""
    from citebound.serving.upstream import UpstreamError, open_upstream, upstream_failure, upstream_json

    timeout = state.cfg.request_timeout_s
    try:
        if stream:
            return await asyncio.wait_for(open_upstream(state, url, body, headers), timeout)
        data = await asyncio.wait_for(upstream_json(state, "POST", url, headers, body), timeout)
        if listed and not isinstance(data.get(listed), list):
            raise UpstreamError(f"answered with no {listed} list")
        return data
    except Exception as e:  # noqa: BLE001 - any failure to get the upstream's answer is the upstream's
        status, message, code, more, headers = upstream_failure(shown, e, timeout)
        raise GuardFailure(status, message, code, more, headers) from None


def guarded_json(state: ServiceState, data: dict[str, Any], report: GuardReport, calls: int, fields: list[str],
                 original: dict[str, Any] | None = None) -> Any:
    """An unstreamed answer, guarded: the upstream's JSON with the report in ``citebound`` (and the original text
    when the request asked for it), the counts in ``X-Citebound-*`` headers."""
    import json

    from fastapi.responses import JSONResponse

    data["citebound"] = {"report": report_body(report), "verifier": state.scorer.name, "unchecked_tool_calls": calls,
                         "unchecked_fields": fields} | (original or {})
    return JSONResponse(json.loads(json.dumps(data)), headers=report_headers(report, calls, fields))


def report_body(report: GuardReport, show_claims: bool = True) -> dict[str, Any]:
    body = report.to_dict()
    return body if show_claims else without_claims(body)


def report_headers(report: GuardReport, calls: int = 0, fields: list[str] | None = None) -> dict[str, str]:
    """The report's counts as ``X-Citebound-*`` headers (a caller that reads no body still sees them)."""
    return {"X-Citebound-Citations": str(report.n_citations), "X-Citebound-Flagged": str(report.flagged),
            "X-Citebound-Invalid": str(report.invalid), "X-Citebound-Unverified": str(report.unverified),
            "X-Citebound-Uncited": str(report.uncited), "X-Citebound-Reattributed": str(report.reattributed),
            "X-Citebound-Review-Budget": f"{report.review_budget:.4f}",
            "X-Citebound-Unchecked-Tool-Calls": str(calls),
            "X-Citebound-Unchecked-Fields": ",".join(fields or []) or "none",
            "X-Citebound-Guarantee": str((report.guarantee_card.get("monitor") or {}).get("state", "off"))}


class HeldAnswer:
    """One streamed answer: :meth:`feed` holds its text until sentences are complete, guards them through the
    service's batcher like a ``/v1/guard`` request and returns the guarded text to send; :meth:`finish` guards the
    rest. A segment whose guard runs past the request timeout goes out with its citations ``[N UNVERIFIED]``
    (fail closed). With ``--action block``, :attr:`block_report` is set once the review budget so far passes
    ``--block-above``: that segment and the rest are withheld."""

    def __init__(self, state: ServiceState, guard: Any, passages: list[str], base: int | None, group: str | None,
                 prior: Any = None, uncited_later: bool = False):
        self.state, self.guard, self.passages, self.base, self.group = state, guard, passages, base, group
        self.prior = prior  # () -> the reports of the answer's earlier parts (block decides on the whole answer)
        # citations as data may follow the text they cite (an API's): under --action block, a sentence citing
        # nothing in its text counts at the part's end, and from it on the text waits for that decision
        self.uncited_later = uncited_later and guard.action == "block"
        self.deferred: list[str] = []  # guarded text held back until the caller's decision at the part's end
        self.asm = StreamAssembler(state.cfg.limits, guard.on_error == "open")
        self.original: list[str] = []
        self.block_report: GuardReport | None = None
        self.final: GuardReport | None = None
        self.sent: list[str] = []  # what an adapter sent of it (the guarded text so far)

    async def _guard(self, seg: str, final: bool) -> str:
        try:
            ((text, rep),) = await self.state.run_guard(self.guard, [(seg, self.passages, self.base)], self.group,
                                                        open_end=not final, block=False)
        except TimeoutError:  # fail closed: this segment's citations go out unverified
            text, rep = self.guard.unchecked(seg, self.passages, f"the guard ran past {self.state.cfg.request_timeout_s} s",
                                             base=self.base, group=self.group, open_end=not final)
            self.state.metrics.record(self.state.scorer.name, [(text, rep)])
        out = self.asm.add(seg, text, rep)
        self.block_report = self.asm.blocked(self.guard, self.prior() if self.prior is not None else (),
                                             self.uncited_later)
        return "" if self.block_report is not None else self._send(out, rep.uncited > 0)

    def _send(self, out: str, uncited: bool) -> str:
        """``out`` to send now, or '' with it deferred: from the first sentence citing nothing in its text on, where
        its citations as data may come later (see :meth:`release`)."""
        if self.uncited_later and (self.deferred or uncited):
            self.deferred.append(out)
            return ""
        return out

    def release(self) -> str:
        """The deferred text, once the caller has decided at the part's end (with its citations as data) not to
        block: to send now, after whatever :meth:`finish` returned."""
        out, self.deferred = "".join(self.deferred), []
        return out

    async def feed(self, delta: str) -> str:
        """A piece of the answer in; the guarded text to send now out ('' when no sentence completed)."""
        if not delta or self.block_report is not None:
            return ""
        self.original.append(delta)
        seg = self.asm.feed(delta)
        return await self._guard(seg, False) if seg else ""

    async def finish(self) -> str:
        """The end of the answer: the guarded rest to send (nothing once blocked)."""
        if self.block_report is not None:
            return ""
        out = await self._guard(self.asm.finish(), True)
        if self.block_report is not None:
            return ""
        tail, self.final = self.asm.end()
        return out + self._send(tail, False)

    def report(self) -> GuardReport:
        """The whole answer's report once finished; the report so far (blocked, or cut short) before."""
        return self.block_report or self.final or self.asm.report()

    @property
    def held_chars(self) -> int:
        return len(self.asm.hold.held)

    @property
    def waiting_chars(self) -> int:
        """Characters of complete sentences waiting for their part's citations as data (see :meth:`release`)."""
        return sum(map(len, self.deferred))

    def text(self) -> str:
        return "".join(self.original)


def failure(e: BaseException) -> StreamFailure:
    """What ended a stream, as the StreamFailure its error event says."""
    if isinstance(e, StreamFailure):
        return e
    if isinstance(e, GuardFailure):  # the guard's own (a limit, past the timeout), never the upstream's
        return StreamFailure(str(e), e.code)
    if isinstance(e, LimitExceeded):
        return StreamFailure(str(e), "limit")
    if isinstance(e, GuardInputError):
        return StreamFailure(str(e), "bad_input")
    return StreamFailure(redact_url(f"the upstream's stream failed: {type(e).__name__}: {e}"))


def failure_message(e: StreamFailure, shown: str, held: int, waiting: int = 0) -> str:
    msg = redact_url(f"upstream {shown}: {e}" if e.code == "upstream_error" else str(e))
    if held:
        msg += f"; {held} characters of an unfinished sentence were not sent (they cannot be checked)"
    if waiting:
        msg += f"; {waiting} characters of sentences waiting for their citations as data were not sent"
    return msg


async def check_structured(state: ServiceState, guard: Any, text: str, cites: list[Any], passages: list[str],
                           base: int | None, group: str | None) -> tuple[Any, list[Any]]:
    """The plan of an answer's citations carried as data (:func:`citebound.guarding.structured.plan`) and their
    audits, judged through the service's batcher; GuardFailure past a limit (422) or the request timeout (504)."""
    from citebound.guarding import structured

    try:
        p = structured.plan(text, cites, passages, guard.base if base is None else base, guard.limits)
    except GuardInputError as e:
        raise GuardFailure(422, str(e), getattr(e, "limit", None) or "bad_input") from None
    results = await guard_whole(state, guard, p.items, group, block=False) if p.items else []
    return p, structured.audits(p, cites, results)


async def add_structured(state: ServiceState, guard: Any, report: GuardReport, text: str, cites: list[Any],
                         passages: list[str], base: int | None, group: str | None) -> None:
    """A streamed answer's citations carried as data, checked (:func:`check_structured`) and added to ``report``,
    the report of that same text (nothing was removed from it)."""
    from citebound.guarding import structured

    p, found = await check_structured(state, guard, text, cites, passages, base, group)
    structured.add(report, found, structured.sentence_starts(p), guard.on_error == "open")


async def guard_structured(state: ServiceState, guard: Any, text: str, cites: list[Any], passages: list[str],
                           base: int | None, group: str | None) -> tuple[str, GuardReport]:
    """One answer's text guarded with the citations it carries as data (:mod:`citebound.guarding.structured`):
    those are checked first; with ``--action remove`` the sentences of the ones that failed are removed before the
    text is guarded; their audits join the report (``--action block`` is the caller's to decide, on the whole
    answer's report)."""
    from citebound.guarding import structured

    fail_open = guard.on_error == "open"
    p, found = await check_structured(state, guard, text, cites, passages, base, group)
    drop = sorted({(p.sentence[i][1], p.sentence[i][2]) for i, a in enumerate(found)
                   if guard.remove and structured.failed(a, fail_open) and p.sentence[i][0] >= 0})
    answer = structured.remove_sentences(text, drop)
    ((out, report),) = await guard_whole(state, guard, [(answer, passages, base)], group, block=False)
    report.removed_sentences += len(drop)
    where = structured.position_map(text, answer) if drop else None  # the kept sentences moved up
    gone = set(drop)
    cited_at = [None if (p.sentence[i][1], p.sentence[i][2]) in gone else at
                for i, at in enumerate(structured.sentence_starts(p, where))]  # a removed sentence cites nothing now
    structured.add(report, found, cited_at, fail_open)
    return out, report
