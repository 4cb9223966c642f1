"""What the chat-completions proxy must do, observed on the wire (raw upstream bytes in, the client's events out):
one choice and only the first, tool calls counted once each, how a stream may end, the finish_reason the client
gets, the withheld text absent from a blocked stream's report, the passages prompt in the request's base, a null
content kept null. Expected values are worked out by hand (lexical verifier)."""
import json

import httpx
import pytest

pytest.importorskip("fastapi")
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from tests.guard.test_hostile import Upstream  # noqa: E402

P = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]
GOOD = "Statins lower LDL cholesterol [1]. "
BAD = "Unicorns sing opera loudly [2]. "


def _chunk(delta, finish=None, index=0):
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def _raw(events, done: bool = True) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + (b"data: [DONE]\n\n" if done else b"")


def _stream(events, done: bool = True, extra: dict | None = None, **cfg):
    """The client's events (JSON, with [DONE] as the string) for an upstream that sends ``events``."""
    up = Upstream(_raw(events, done), content_type="text/event-stream")
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, **cfg)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
                "model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True,
                "citebound": {"passages": P} | (extra or {})})
    finally:
        up.close()
    assert r.status_code == 200, r.text
    return [x[6:] if x[6:] == "[DONE]" else json.loads(x[6:]) for x in r.text.splitlines() if x.startswith("data: ")]


def _whole(message: dict, extra: dict | None = None, **cfg):
    """(the client's response, the upstream) for one unstreamed request whose upstream answers ``message``."""
    up = Upstream(json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, **cfg)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
                "model": "m", "messages": [{"role": "user", "content": "q"}],
                "citebound": {"passages": P} | (extra or {})})
    finally:
        up.close()
    return r, up


def _text(events) -> str:
    return "".join((e["choices"][0]["delta"].get("content") or "") for e in events
                   if isinstance(e, dict) and e.get("choices"))


def _finish(events):
    ends = [e["choices"][0]["finish_reason"] for e in events if isinstance(e, dict) and e.get("choices")
            and e["choices"][0]["finish_reason"]]
    return ends


def test_a_stream_whose_only_choice_is_not_the_first_is_an_error_never_passed():
    """A chunk with one choice of index 1 (the client asked n=1; the second choice alone came): the guard checks
    exactly the first choice, so the stream ends in an error and none of that text goes out."""
    got = _stream([_chunk({"content": BAD}, index=1), _chunk({}, "stop", index=1)])
    assert "Unicorns" not in _text(got)
    (err,) = [e for e in got if isinstance(e, dict) and "error" in e]
    assert "more than one choice" in err["error"]["message"]


def test_each_tool_call_counts_once_however_many_deltas_carry_it():
    """Two tool calls streamed as OpenAI streams them: a delta with the id and name, then argument pieces with
    no id (three for the first, one for the second). Two calls, not six; every delta passes through."""
    first = [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "search", "arguments": ""}}]
    second = [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "fetch", "arguments": ""}}]
    pieces = [[{"index": 0, "function": {"arguments": a}}] for a in ('{"q"', ': "ld', 'l"}')]
    events = [_chunk({"role": "assistant", "content": GOOD}), _chunk({"tool_calls": first}),
              *[_chunk({"tool_calls": p}) for p in pieces], _chunk({"tool_calls": second}),
              _chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}), _chunk({}, "tool_calls")]
    got = _stream(events)
    passed = [c for e in got if isinstance(e, dict) and e.get("choices") for c in e["choices"][0]["delta"].get("tool_calls") or []]
    assert len(passed) == 6 and [c.get("id") for c in passed if c.get("id")] == ["call_a", "call_b"]
    last = [e for e in got if isinstance(e, dict) and e.get("citebound")][-1]["citebound"]
    assert last["unchecked_tool_calls"] == 2
    assert _finish(got) == ["tool_calls"] and _text(got) == GOOD  # ended: its trailing space goes out too


@pytest.mark.parametrize("finish,done,ok", [("stop", True, True), ("stop", False, True), (None, True, True),
                                            (None, False, False)])
def test_a_stream_ends_with_done_or_a_finish_reason_and_is_cut_short_without_both(finish, done, ok):
    """[DONE] or a finish_reason says the answer ended (either alone will do: some servers send no [DONE]);
    with neither, the connection simply closed: cut short, an error event, and the held sentence not sent."""
    events = [_chunk({"content": GOOD}), _chunk({"content": "Mitochondria produce ATP [2]."})]
    if finish:
        events.append(_chunk({}, finish))
    got = _stream(events, done=done)
    errors = [e for e in got if isinstance(e, dict) and "error" in e]
    if ok:
        assert not errors and _text(got) == GOOD + "Mitochondria produce ATP [2]."
        assert _finish(got) == ["stop"]
        assert got[-1] == "[DONE]"
    else:
        (err,) = errors
        assert "cut short" in err["error"]["message"]
        assert _text(got) == GOOD.rstrip()  # the last sentence never ended with the stream: held, not sent
        assert "[DONE]" not in got


def test_a_usage_chunk_after_the_finish_reason_does_not_erase_it():
    """finish_reason "length", then a usage-only chunk (no choices, as stream_options include_usage sends): the
    client's last chunk says "length", not "stop"."""
    events = [_chunk({"content": GOOD}), _chunk({}, "length"),
              {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
               "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}]
    got = _stream(events)
    assert _finish(got) == ["length"]


@pytest.mark.parametrize("return_original", [False, True])
def test_a_blocked_streams_report_withholds_the_claims_unless_the_original_was_asked_for(return_original):
    """--action block above 0.3: the unicorn sentence (flagged, budget 1/2 after two citations) stops the stream.
    Its claim is withheld from the report (every audit's claim null, the text nowhere in the events), unless the
    request asked for the original text."""
    got = _stream([_chunk({"content": GOOD}), _chunk({"content": BAD}), _chunk({"content": GOOD}), _chunk({}, "stop")],
                  extra={"return_original": return_original}, action="block", block_above=0.3, reattributor=None)
    assert _finish(got) == ["content_filter"]
    assert _text(got) == GOOD.rstrip()
    last = [e for e in got if isinstance(e, dict) and e.get("citebound")][-1]["citebound"]
    assert last["report"]["blocked"] is True
    # the report counts the answer so far, the withheld sentence included: 2 citations, 1 flagged, budget 1/2
    assert (last["report"]["n_citations"], last["report"]["flagged"], last["report"]["verified"]) == (2, 1, 1)
    assert last["report"]["review_budget"] == pytest.approx(0.5)
    claims = [a["claim"] for a in last["report"]["audit"]]
    if return_original:
        assert "Unicorns sing opera loudly." in claims
    else:
        assert claims and all(c is None for c in claims)
        assert "Unicorns" not in json.dumps(got)


@pytest.mark.parametrize("base,listed", [(None, "[1] " + P[0] + "\n\n[2] " + P[1]),
                                         (0, "[0] " + P[0] + "\n\n[1] " + P[1])])
def test_the_passages_prompt_numbers_the_passages_in_the_requests_base(base, listed):
    r, up = _whole({"role": "assistant", "content": "x"}, {"citation_base": base} if base is not None else None,
                   passages_prompt="Sources:\n{passages}")
    assert r.status_code == 200, r.text
    first = up.bodies[-1]["messages"][0]
    assert first == {"role": "system", "content": "Sources:\n" + listed}
    assert up.bodies[-1]["messages"][1] == {"role": "user", "content": "q"}


def test_the_upstream_gets_the_clients_request_less_the_citebound_field():
    """The client sent model, messages and citebound: the upstream gets model and messages, nothing added (no
    ``"stream": null`` for a field the client left out, no passages prompt unless configured)."""
    r, up = _whole({"role": "assistant", "content": "x"})
    assert r.status_code == 200, r.text
    assert up.bodies == [{"model": "m", "messages": [{"role": "user", "content": "q"}]}]


def test_a_tool_call_answers_null_content_stays_null():
    r, _ = _whole({"role": "assistant", "content": None,
                   "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["choices"][0]["message"]["content"] is None
    assert got["citebound"]["unchecked_tool_calls"] == 1 and r.headers["X-Citebound-Unchecked-Tool-Calls"] == "1"


def test_a_segment_past_the_timeout_fails_closed_and_remove_keeps_the_joining_space():
    """--action remove, a 0.5 s request timeout, and a verifier that holds any claim with "hog" for 30 s. The first
    segment, "Aspirin is old. The hog study shows statins lower LDL [1]. ", runs past the timeout: its citation is
    unverified (fail closed), so its sentence is removed; the uncited first sentence stays. The answer goes on, so
    the removed sentence takes its own trailing space and the kept one keeps the space that joins it to the next
    segment, "Mitochondria produce ATP [2]." (verified: every term in passage 2): the text reads as if the
    sentence had never been there."""
    from tests.guard.test_behaviours import Hog

    events = [_chunk({"content": "Aspirin is old. The hog study shows statins lower LDL [1]. Mito"}),
              _chunk({"content": "chondria produce ATP [2]."}), _chunk({}, "stop")]
    up = Upstream(_raw(events), content_type="text/event-stream")
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, action="remove", request_timeout_s=0.5),
                     scorer=Hog()) as url:
            r = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
                "model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True,
                "citebound": {"passages": P}})
    finally:
        up.close()
    got = [json.loads(x[6:]) for x in r.text.splitlines() if x.startswith("data: ") and x[6:] != "[DONE]"]
    assert _text(got) == "Aspirin is old. Mitochondria produce ATP [2]."
    rep = [e for e in got if e.get("citebound")][-1]["citebound"]["report"]
    assert (rep["n_citations"], rep["unverified"], rep["verified"], rep["removed_sentences"]) == (2, 1, 1, 1)
    (late,) = [a for a in rep["audit"] if a["action"] == "unverified"]
    assert "ran past 0.5 s" in late["reason"]


def test_empty_unchecked_fields_are_not_reported_and_filled_ones_are():
    """A refusal of "" and reasoning_content of null carry nothing: not unchecked fields (the header says none).
    A filled refusal is one, streamed too."""
    r, _ = _whole({"role": "assistant", "content": "Statins lower LDL cholesterol [1].", "refusal": "",
                   "reasoning_content": None, "audio": {}})
    assert r.json()["citebound"]["unchecked_fields"] == [] and r.headers["X-Citebound-Unchecked-Fields"] == "none"
    got = _stream([_chunk({"content": GOOD, "refusal": ""}), _chunk({"refusal": "I will not."}), _chunk({}, "stop")])
    last = [e for e in got if isinstance(e, dict) and e.get("citebound")][-1]["citebound"]
    assert last["unchecked_fields"] == ["refusal"]


@pytest.mark.parametrize("return_original", [None, False, True])
def test_a_blocked_answers_403_withholds_the_claims_unless_the_original_was_asked_for(return_original):
    """Unstreamed, --action block above 0.3: "... [1]. Unicorns sing opera loudly [2]." has 1 of 2 citations
    flagged (budget 1/2): a 403 in OpenAI's shape with the report, whose claims are null and whose text is nowhere
    in the body, unless the request asked for the original (None: the request does not say; withheld)."""
    extra = {} if return_original is None else {"return_original": return_original}
    r, _ = _whole({"role": "assistant", "content": GOOD + BAD.rstrip()}, extra,
                  action="block", block_above=0.3, reattributor=None)
    assert r.status_code == 403 and r.json()["error"]["code"] == "blocked"
    rep = r.json()["citebound"]["report"]
    assert (rep["n_citations"], rep["flagged"], rep["blocked"]) == (2, 1, True)
    claims = [a["claim"] for a in rep["audit"]]
    if return_original:
        assert claims == ["Statins lower LDL cholesterol.", "Unicorns sing opera loudly."]
    else:
        assert claims == [None, None] and "Unicorns" not in r.text


def test_a_message_content_of_parts_is_a_502_that_says_why_and_n_0_is_refused_before_the_upstream():
    """An upstream whose message content is a list of parts (not the string the guard checks) is a 502 naming it,
    never a 500 or a pass; n = 0 is refused as n = 2 is (the guard checks exactly one choice), and the upstream is
    never called."""
    r, up = _whole({"role": "assistant", "content": [{"type": "text", "text": GOOD}]})
    assert r.status_code == 502 and "non-string message content" in r.json()["error"]["message"]
    assert len(up.bodies) == 1
    for n in (0, 2):
        up = Upstream(json.dumps({"choices": [{"index": 0, "message": {"content": GOOD}}]}).encode())
        try:
            with running(ServeConfig(verifier="lexical", upstream=up.url)) as url:
                r = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
                    "model": "m", "n": n, "messages": [{"role": "user", "content": "q"}], "citebound": {"passages": P}})
        finally:
            up.close()
        assert r.status_code == 400 and r.json()["error"]["code"] == "n_not_supported", (n, r.text)
        assert up.bodies == []


@pytest.mark.parametrize("return_original", [False, True])
def test_the_unguarded_text_of_a_passed_answer_comes_back_only_when_asked_for(return_original):
    r, _ = _whole({"role": "assistant", "content": GOOD + BAD}, {"return_original": True} if return_original else None,
                  action="remove")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["choices"][0]["message"]["content"] == GOOD.strip()  # remove dropped the unsupported sentence
    assert ("original_content" in body["citebound"]) is return_original
    if return_original:
        assert body["citebound"]["original_content"] == GOOD + BAD
