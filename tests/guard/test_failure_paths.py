"""How each proxy API fails, as its client sees it (#56): an unknown group refused before the upstream is asked,
an upstream answer without its list, a slow upstream (504 naming the option), the guard's own work past the
request timeout (504, or a stream's error event with code ``timeout``), a stream's held text past its limit (an
error event, the held text never sent), citations carried as data past their limit (422 naming the limit).

Each status, code and message is the one the module's rules give, worked out here from the request; the fake
upstream records what it was asked, so "never asked" is observed, not assumed."""
from __future__ import annotations

import time

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn, anthropic_message  # noqa: E402
from fake_stream import FakeStreamingOpenAI, Script  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402
from test_behaviours import Slow  # noqa: E402
from test_structured_effects import Q_ASPIRIN, Q_STATINS  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from citebound.text.limits import Limits  # noqa: E402

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
ANSWER = "Aspirin irreversibly inhibits platelet cyclooxygenase [1]."
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


def body(api: str, stream: bool, **citebound) -> dict:
    extra = {"citebound": {"passages": [ASPIRIN]} | citebound}
    if api == "chat":
        return {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": stream} | extra
    if api == "messages":
        return {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "stream": stream} | extra
    return {"model": "m", "input": "q", "stream": stream} | extra


def error_of(api: str, r: httpx.Response) -> tuple[str, str]:
    """(code, message) of a refusal, read as that API's SDK reads it."""
    e = r.json()["error"]
    if api == "messages":
        assert r.json()["type"] == "error"
    return e["code"], e["message"]


def stream_error(api: str, evs: list[dict]) -> tuple[str, str]:
    """(code, message) of the error event that ended a stream (the last event)."""
    last = evs[-1]
    if api == "responses":
        assert last["type"] == "error"
        return last["code"], last["message"]
    if api == "messages":
        assert last["type"] == "error"
    return last["error"]["code"], last["error"]["message"]


def sent_text(api: str, evs: list[dict]) -> str:
    if api == "chat":
        return "".join((c.get("choices") or [{}])[0].get("delta", {}).get("content") or "" for c in evs if c.get("choices"))
    if api == "messages":
        return "".join(e["delta"].get("text", "") for e in evs if e.get("type") == "content_block_delta")
    return "".join(e["delta"] for e in evs if e.get("type") == "response.output_text.delta")


class Upstream:
    """The right fake for the API: the chat one, or the one that speaks Messages and Responses."""

    def __init__(self, api: str, pieces: list[str], **turn):
        self.api = api
        self.fake = (FakeStreamingOpenAI(lambda b: Script(pieces)) if api == "chat"
                     else FakeAPIs(lambda b: Turn(pieces, **turn)))

    def __enter__(self):
        self.fake.__enter__()
        return self

    def __exit__(self, *exc):
        return self.fake.__exit__(*exc)

    @property
    def base(self) -> str:
        return self.fake.base_url + ("/v1" if self.api == "chat" else "")

    @property
    def asked(self) -> int:
        return len(self.fake.requests)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_an_unknown_group_is_a_422_before_the_upstream_is_asked(api, stream):
    with Upstream(api, [ANSWER]) as up, running(ServeConfig(verifier="lexical", upstream=up.base)) as url:
        r = httpx.post(url + PATHS[api], json=body(api, stream, group="no-such-group"), timeout=30)
        assert up.asked == 0
    assert r.status_code == 422
    code, message = error_of(api, r)
    assert code == "unknown_group" and "no-such-group" in message


@pytest.mark.parametrize("api,listed", [("messages", "content"), ("responses", "output")])
def test_an_upstream_answer_without_its_list_is_a_502_saying_so(api, listed):
    with Upstream(api, [ANSWER], whole={"id": "x", "type": "message"}) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base)) as url:
        r = httpx.post(url + PATHS[api], json=body(api, False), timeout=30)
        assert up.asked == 1
    assert r.status_code == 502
    code, message = error_of(api, r)
    assert code == "upstream_error" and f"answered with no {listed} list" in message


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api", ["messages", "responses"])
def test_a_slow_upstream_is_a_504_naming_the_option(api, stream):
    with Upstream(api, [ANSWER], delay_s=3.0) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base, request_timeout_s=0.5)) as url:
        t0 = time.perf_counter()
        r = httpx.post(url + PATHS[api], json=body(api, stream), timeout=30)
        took = time.perf_counter() - t0
    assert r.status_code == 504 and took < 2.5
    code, message = error_of(api, r)
    assert code == "upstream_timeout" and "did not answer within 0.5 s (--request-timeout" in message


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_guard_work_past_the_request_timeout_is_a_504(api):
    with Upstream(api, [ANSWER]) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base, request_timeout_s=0.5, reattributor=None),
                    scorer=Slow(3)) as url:
        t0 = time.perf_counter()
        r = httpx.post(url + PATHS[api], json=body(api, False), timeout=30)
        took = time.perf_counter() - t0
    assert r.status_code == 504 and took < 2.5, r.text
    code, message = error_of(api, r)
    assert code == "timeout" and "took longer than 0.5 s (--request-timeout)" in message
    assert "Aspirin" not in r.text  # nothing of the unchecked answer


def stream_report(api: str, evs: list[dict]) -> dict:
    if api == "chat":
        return next(c["citebound"]["report"] for c in evs if "citebound" in c)
    (rep,) = [e["report"] for e in evs if e.get("type") == "citebound.report"]
    return rep


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_guard_work_past_the_request_timeout_sends_a_streamed_sentence_unverified(api):
    """A stream has begun, so it cannot become a 504: the sentence whose check ran past 0.5 s goes out with its
    citation marked [1 UNVERIFIED] (fail closed, never passed as verified), and the report says why."""
    with Upstream(api, [ANSWER]) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base, request_timeout_s=0.5, reattributor=None),
                    scorer=Slow(3)) as url:
        r = httpx.post(url + PATHS[api], json=body(api, True), timeout=30)
    assert r.status_code == 200
    evs = sse_data(r)
    assert sent_text(api, evs) == "Aspirin irreversibly inhibits platelet cyclooxygenase [1 UNVERIFIED]."
    rep = stream_report(api, evs)
    assert (rep["n_citations"], rep["verified"], rep["unverified"], rep["review_budget"]) == (1, 0, 1, 1.0)
    (a,) = rep["audit"]
    assert (a["cited"], a["action"], a["score"], a["reason"]) == (1, "unverified", None, "the guard ran past 0.5 s")


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_a_stream_holding_past_its_limit_ends_with_code_limit_and_sends_none_of_it(api):
    """100 pieces of "word " and no sentence end: the hold passes 200 characters at the 41st piece (205), so
    the stream ends with an error event naming max_stream_held_chars; no word was ever checked, none is sent."""
    with Upstream(api, ["word "] * 100) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base, limits=Limits(max_stream_held_chars=200))) as url:
        r = httpx.post(url + PATHS[api], json=body(api, True), timeout=30)
    assert r.status_code == 200
    evs = sse_data(r)
    code, message = stream_error(api, evs)
    assert code == "limit" and "max_stream_held_chars" in message
    assert "word" not in sent_text(api, evs)


def _char(text: str) -> dict:
    return {"type": "char_location", "cited_text": text, "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": len(text)}


@pytest.mark.parametrize("n,status", [(2, 200), (3, 422)])
def test_citations_carried_as_data_past_their_limit_are_a_422_naming_it(n, status):
    """max_citations_per_answer 2: two char_location citations on the one text block are checked; a third is
    refused (the answer carries 3 citations as data), never dropped."""
    msg = anthropic_message([{"type": "text", "text": "Aspirin inhibits cyclooxygenase.", "citations": [_char(ASPIRIN)] * n}])
    with Upstream("messages", [""], whole=msg) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base,
                                limits=Limits(max_citations_per_answer=2))) as url:
        r = httpx.post(url + "/v1/messages", json=body("messages", False), timeout=30)
    assert r.status_code == status, r.text
    if status == 422:
        code, message = error_of("messages", r)
        assert code == "max_citations_per_answer" and "3 citations as data" in message
    else:
        assert r.json()["citebound"]["report"]["n_citations"] == 2


@pytest.mark.parametrize("n,refused", [(2, False), (3, True)])
def test_streamed_citations_past_their_limit_end_the_stream_naming_it(n, refused):
    """The same limit in a stream: the third citations_delta makes 3 citations carried as data, so the block's
    end is an error event naming max_citations_per_answer, and no message_stop. (The run's text went out as it
    streamed, guarded as text; its citations carried as data are checked when the run ends.)"""
    with Upstream("messages", ["Aspirin inhibits cyclooxygenase."], citations=[_char(ASPIRIN)] * n) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base,
                                limits=Limits(max_citations_per_answer=2))) as url:
        r = httpx.post(url + "/v1/messages", json=body("messages", True), timeout=30)
    evs = sse_data(r)
    if refused:
        code, message = stream_error("messages", evs)
        assert code == "max_citations_per_answer" and "3 citations as data" in message
        assert not any(e.get("type") == "message_stop" for e in evs)
    else:
        assert evs[-1]["type"] == "message_stop" and stream_report("messages", evs)["n_citations"] == 2


@pytest.mark.parametrize("fail_open,kept", [
    # failing open, a citation the verifier could not score stands as written: its sentence stays beside a flagged one
    (True, ["Mitochondria make ATP [0][1 UNVERIFIED].", "Aspirin thins blood [1]. Mitochondria make ATP [0]."]),
    # failing closed it stands for nothing: the sentence goes with its flagged citation
    (False, ["", "Aspirin thins blood [1]."]),
])
def test_remove_keeps_a_sentence_a_verifier_failure_stands_for_only_when_failing_open(fail_open, kept):
    """Two answers in one batch (unequal lengths, base 0, two citations in a sentence). The scorer raises for the
    pair ("Mitochondria make ATP.", passage 0) only, so that citation is unverified by a verifier failure, not
    unreadable; [1] of the same sentence is flagged (score 0). Remove drops a sentence none of whose citations stands."""
    import numpy as np

    from citebound.guarding.core import guard_answers

    passages = ["Mitochondria produce ATP in cells.", "Aspirin thins blood."]

    def scorer(claims, texts):
        if any(c.startswith("Mitochondria") and t == passages[0] for c, t in zip(claims, texts)):
            raise RuntimeError("the verifier fell over")
        s = np.array([1.0 if c.split()[0] in t else 0.0 for c, t in zip(claims, texts)])
        return s, s > 0.5

    items = [("Mitochondria make ATP [0][1].", passages, 0),
             ("Aspirin thins blood [1]. Mitochondria make ATP [0].", passages, 0)]
    out = guard_answers(items, scorer, reattribute=None, remove=True, fail_open=fail_open)
    assert [t for t, _ in out] == kept
    first, second = out[0][1], out[1][1]
    assert [(a.cited, a.action, a.unreadable) for a in first.audit] == [(0, "unverified", False), (1, "flagged", False)]
    assert [(a.cited, a.action) for a in second.audit] == [(1, "verified"), (0, "unverified")]
    assert first.audit[0].reason.startswith("the verifier failed: RuntimeError: the verifier fell over")
    assert [r.removed_sentences for _, r in out] == ([0, 0] if fail_open else [1, 1])


@pytest.mark.parametrize("n,status", [(2, 200), (3, 422)])
@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_an_answers_text_past_its_citation_limit_is_a_422_naming_the_limit(api, n, status):
    """max_citations_per_answer 2: an unstreamed answer whose text cites [1] in 2 sentences is guarded; in 3 it is
    refused while the guard reads it, and the error's code names the limit (not a generic bad_input)."""
    answer = " ".join(["Aspirin irreversibly inhibits platelet cyclooxygenase [1]."] * n)
    with Upstream(api, [answer]) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base, limits=Limits(max_citations_per_answer=2))) as url:
        r = httpx.post(url + PATHS[api], json=body(api, False), timeout=30)
    assert r.status_code == status, r.text
    if status == 422:
        code, message = error_of(api, r)
        assert code == "max_citations_per_answer" and "max_citations_per_answer" in message


@pytest.mark.parametrize("on_error", ["closed", "open"])
def test_a_verifier_failure_on_a_citation_carried_as_data_is_removed_only_failing_closed(on_error):
    """--action remove through Messages: two text blocks, "Statins lower LDL boom." and " Aspirin inhibits platelet
    aggregation.", each with a char_location citation quoting its support. The verifier fails on the first claim
    only (it holds 'boom'): that citation is unverified, by a verifier failure. Closed, it fails: its sentence is
    removed and the budget is 1 of 2. Open, it passes: nothing removed, budget 0."""
    from failing_scorer import Failing

    first, second = "Statins lower LDL boom.", " Aspirin inhibits platelet aggregation."
    msg = anthropic_message([{"type": "text", "text": first, "citations": [_char(Q_STATINS)]},
                             {"type": "text", "text": second, "citations": [_char(Q_ASPIRIN)]}])
    cfg = ServeConfig(verifier="lexical", action="remove", on_error=on_error)
    with Upstream("messages", [""], whole=msg) as up, running(ServeConfig(**{**cfg.__dict__, "upstream": up.base}),
                                                              Failing()) as url:
        r = httpx.post(url + "/v1/messages", json=body("messages", False), timeout=30)
    assert r.status_code == 200, r.text
    rep = r.json()["citebound"]["report"]
    assert [a["action"] for a in rep["audit"]] == ["unverified", "verified"]
    text = "".join(b["text"] for b in r.json()["content"] if b["type"] == "text")
    if on_error == "closed":
        assert text == second.strip() and rep["removed_sentences"] == 1 and rep["review_budget"] == 0.5
    else:
        assert text == first + second and rep["removed_sentences"] == 0 and rep["review_budget"] == 0.0


@pytest.mark.parametrize("on_error,budget", [("closed", 1.0), ("open", 0.0)])
def test_a_streamed_citation_carried_as_data_that_the_verifier_failed_on_counts_only_failing_closed(on_error, budget):
    """A streamed Messages block, "Statins lower LDL boom.", with one char_location citation: the verifier fails
    on its claim, so it is unverified by a verifier failure. The stream's report: budget 1 of 1 closed, 0 open."""
    from failing_scorer import Failing

    cfg = ServeConfig(verifier="lexical", on_error=on_error)
    with Upstream("messages", ["Statins lower LDL boom."], citations=[_char(Q_STATINS)]) as up, \
            running(ServeConfig(**{**cfg.__dict__, "upstream": up.base}), Failing()) as url:
        r = httpx.post(url + "/v1/messages", json=body("messages", True), timeout=30)
    rep = stream_report("messages", sse_data(r))
    assert [(a["action"], a["unreadable"]) for a in rep["audit"]] == [("unverified", False)]
    assert (rep["n_citations"], rep["unverified"], rep["review_budget"]) == (1, 1, budget)
