"""#52 item 9, the proxy: an upstream answer holding NaN is a 502 (not a 500); a legacy function_call, reasoning
and a refusal pass through and are counted, streamed or not; a credential in the upstream URL's query is not
shown in an error."""
import json

import httpx
import pytest
from service_helpers import running
from test_hostile import CHAT, Upstream

from citebound.serving import ServeConfig


@pytest.mark.parametrize("raw", [b'{"choices": [{"message": {"content": "x [1]."}}], "usage": {"x": NaN}}',
                                 b'{"choices": [{"message": {"content": "x [1]."}}], "t": -Infinity}'])
def test_an_upstream_answer_holding_nan_is_a_502(raw):
    up = Upstream(raw)
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    finally:
        up.close()
    assert r.status_code == 502 and "not JSON" in r.json()["error"]["message"]


def test_legacy_and_reasoning_fields_pass_through_and_are_counted():
    msg = {"role": "assistant", "content": "Statins lower LDL cholesterol [2].", "refusal": "I cannot say [3].",
           "reasoning_content": "think [1]", "function_call": {"name": "f", "arguments": "{}"}}
    up = Upstream(json.dumps({"choices": [{"message": msg}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    finally:
        up.close()
    assert r.status_code == 200
    body = r.json()
    assert body["choices"][0]["message"]["refusal"] == "I cannot say [3]."  # passed through as written
    assert body["citebound"]["unchecked_tool_calls"] == 1  # the legacy function_call is a tool call
    assert body["citebound"]["unchecked_fields"] == ["function_call", "reasoning_content", "refusal"]
    assert r.headers["x-citebound-unchecked-fields"] == "function_call,reasoning_content,refusal"
    assert r.headers["x-citebound-unchecked-tool-calls"] == "1"


def test_streamed_legacy_fields_pass_through_and_are_counted():
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "think"}}]},
              {"choices": [{"index": 0, "delta": {"function_call": {"name": "f", "arguments": ""}}}]},
              {"choices": [{"index": 0, "delta": {"content": "Statins lower LDL cholesterol [2]."}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    raw = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    up = Upstream(raw.encode(), content_type="text/event-stream")
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT | {"stream": True}, timeout=30)
    finally:
        up.close()
    chunks = [json.loads(x[6:]) for x in r.text.split("\n\n") if x.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks if c.get("choices")]
    assert {"reasoning_content": "think"} in deltas and {"function_call": {"name": "f", "arguments": ""}} in deltas
    last = next(c["citebound"] for c in reversed(chunks) if "citebound" in c)
    assert last["unchecked_fields"] == ["function_call", "reasoning_content"] and last["unchecked_tool_calls"] == 1


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_that_is_no_list_passes_through_named_and_not_counted(stream):
    """An upstream whose tool_calls is the string "oops": not a list of calls, so none is counted, but it is not
    dropped either: the client gets it as sent, and it is named as an unchecked field, streamed or not."""
    if stream:
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": "oops"}}]},
                  {"choices": [{"index": 0, "delta": {"content": "Statins lower LDL cholesterol [2]."}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        raw = ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()
    else:
        msg = {"role": "assistant", "content": "Statins lower LDL cholesterol [2].", "tool_calls": "oops"}
        raw = json.dumps({"choices": [{"message": msg}]}).encode()
    up = Upstream(raw, content_type="text/event-stream" if stream else "application/json")
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT | {"stream": stream}, timeout=30)
    finally:
        up.close()
    assert r.status_code == 200, r.text
    if stream:
        chunks = [json.loads(x[6:]) for x in r.text.split("\n\n") if x.startswith("data: {")]
        assert {"tool_calls": "oops"} in [c["choices"][0]["delta"] for c in chunks if c.get("choices")]
        got = next(c["citebound"] for c in reversed(chunks) if "citebound" in c)
    else:
        assert r.json()["choices"][0]["message"]["tool_calls"] == "oops"
        got = r.json()["citebound"]
    assert (got["unchecked_fields"], got["unchecked_tool_calls"]) == (["tool_calls"], 0)


def test_a_credential_in_the_upstream_query_is_not_shown_in_an_error():
    up = Upstream(b"not json", status=500)
    try:
        upstream = up.url_with(query="api_key=SECRET-123&model=m")
        with running(ServeConfig(verifier="lexical", upstream=upstream, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    finally:
        up.close()
    assert r.status_code == 502 and "SECRET-123" not in r.text and "api_key=***" in r.text
