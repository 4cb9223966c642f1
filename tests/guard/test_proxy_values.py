"""The chat proxy and the request models, what the client and the upstream see: an answer with two choices refused
(neither passes unchecked), credentials in the upstream's URL never in an error, the passages prompt as the first
message, the request's other fields passed on (chat and Responses), tool calls counted in the body, GET /v1/models
bounded by the request timeout, a route not served echoed at most 200 characters, a blocked answer's text withheld
unless asked for; a lone surrogate in a scored pair and a citation base of 2 refused (422)."""
import json
import socket
import time

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn  # noqa: E402
from service_helpers import free_port, running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
GOOD = "Aspirin irreversibly inhibits platelet cyclooxygenase [1]."


def _chat(*messages: dict, tool_calls: int = 0) -> dict:
    choices = []
    for i, m in enumerate(messages):
        msg = {"role": "assistant"} | m
        if tool_calls:
            msg["tool_calls"] = [{"id": f"call_{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                                 for k in range(tool_calls)]
        choices.append({"index": i, "message": msg, "finish_reason": "stop"})
    return {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "m", "choices": choices}


def _ask(upstream_answer: dict, body: dict, **cfg) -> tuple[httpx.Response, list]:
    settings = {"verifier": "lexical", "reattributor": None} | cfg
    with FakeAPIs(lambda b: Turn([""], whole=upstream_answer)) as up, \
            running(ServeConfig(upstream=up.base_url, **settings)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m"} | body, timeout=60)
    return r, up.requests


def test_an_answer_with_two_choices_is_refused_and_neither_passes():
    r, _ = _ask(_chat({"content": GOOD}, {"content": "Unicorns sing opera [1]."}),
                {"messages": [{"role": "user", "content": "q"}], "citebound": {"passages": [ASPIRIN]}})
    assert r.status_code == 502, r.text
    assert "2 choices" in r.json()["error"]["message"]
    assert "Unicorns" not in r.text and "platelet" not in r.text


def test_a_url_with_credentials_in_a_refused_request_is_redacted_in_the_error():
    """n is echoed in the refusal (n must be 1): a URL with credentials there comes back without them, as in
    every error the proxy writes."""
    r, sent = _ask(_chat({"content": GOOD}), {"messages": [{"role": "user", "content": "q"}],
                                              "n": "https://bob:hunter2-pw@example.org/x",
                                              "citebound": {"passages": [ASPIRIN]}})
    assert r.status_code == 400, r.text
    assert "example.org" in r.json()["error"]["message"]
    assert "hunter2-pw" not in r.text and sent == []


def test_credentials_in_the_upstream_url_never_reach_an_error():
    port = free_port()  # nothing listens there: the call fails, and its error names the upstream
    with running(ServeConfig(verifier="lexical", upstream=f"http://alice:s3cr3t-pw@127.0.0.1:{port}/v1",
                             reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
            "model": "m", "messages": [{"role": "user", "content": "q"}], "citebound": {"passages": [ASPIRIN]}})
    assert r.status_code == 502, r.text
    assert "127.0.0.1" in r.json()["error"]["message"]
    assert "s3cr3t-pw" not in r.text and "alice" not in r.text


def test_the_passages_prompt_is_the_first_message_and_other_fields_reach_the_upstream():
    """--passages-prompt "Sources:\\n{passages}": the upstream gets a system message listing the passages, numbered
    from 0 (the request's citation_base), before the request's own messages; temperature, tools and the user's
    metadata go through as sent; citebound does not."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    r, sent = _ask(_chat({"content": "Aspirin irreversibly inhibits platelet cyclooxygenase [0]."}),
                   {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}],
                    "temperature": 0.25, "tools": tools, "metadata": {"k": "v"},
                    "citebound": {"passages": [ASPIRIN, "Statins lower LDL."], "citation_base": 0}},
                   passages_prompt="Sources:\n{passages}")
    assert r.status_code == 200, r.text
    (req,) = sent
    body = req["body"]
    assert body["messages"] == [{"role": "system", "content": f"Sources:\n[0] {ASPIRIN}\n\n[1] Statins lower LDL."},
                                {"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}]
    assert (body["temperature"], body["tools"], body["metadata"]) == (0.25, tools, {"k": "v"})
    assert "citebound" not in body
    assert r.json()["choices"][0]["message"]["content"] == "Aspirin irreversibly inhibits platelet cyclooxygenase [0]."


def test_a_responses_requests_other_fields_reach_the_upstream():
    from fake_apis import Turn as T

    with FakeAPIs(lambda b: T([GOOD])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/responses", timeout=60, json={
            "model": "m", "input": "q", "instructions": "cite", "tools": [{"type": "file_search"}],
            "citebound": {"passages": [ASPIRIN]}})
    assert r.status_code == 200, r.text
    body = up.requests[-1]["body"]
    assert (body["instructions"], body["tools"]) == ("cite", [{"type": "file_search"}])


def test_tool_calls_are_counted_in_the_body_and_the_header():
    r, _ = _ask(_chat({"content": GOOD}, tool_calls=2),
                {"messages": [{"role": "user", "content": "q"}], "citebound": {"passages": [ASPIRIN]}})
    assert r.status_code == 200, r.text
    assert r.json()["citebound"]["unchecked_tool_calls"] == 2
    assert r.headers["X-Citebound-Unchecked-Tool-Calls"] == "2"


def test_the_model_list_is_bounded_by_the_request_timeout():
    """An upstream that takes the connection and never answers: GET /v1/models is a 504 after the 1 s request
    timeout, not after the 60 s read timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with running(ServeConfig(verifier="lexical", upstream=f"http://127.0.0.1:{port}/v1", request_timeout_s=1.0,
                                 reattributor=None)) as url:
            t0 = time.perf_counter()
            r = httpx.get(f"{url}/v1/models", timeout=120)
            took = time.perf_counter() - t0
    assert r.status_code == 504, r.text
    assert took < 10


def test_a_route_not_served_is_echoed_at_most_200_characters():
    with FakeAPIs(lambda b: Turn([""])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.get(f"{url}/v1/" + "a" * 3000, timeout=60)
    assert r.status_code == 404
    message = r.json()["error"]["message"]
    assert "a" * 200 in message and "a" * 201 not in message


@pytest.mark.parametrize("show", [False, True])
def test_a_blocked_answers_text_comes_back_only_when_asked_for(show):
    r, _ = _ask(_chat({"content": "Unicorns sing opera loudly [1]."}),
                {"messages": [{"role": "user", "content": "q"}],
                 "citebound": {"passages": [ASPIRIN], "return_original": show}}, action="block", block_above=0.3)
    assert r.status_code == 403, r.text
    assert r.json()["citebound"]["report"]["blocked"] is True
    assert ("Unicorns" in r.text) is show


def test_a_scored_pairs_lone_surrogate_and_a_citation_base_of_2_are_refused():
    with running(ServeConfig(verifier="lexical")) as url:
        bad = '{"pairs": [{"claim": "a \\ud800 b", "passage": "p"}]}'
        r = httpx.post(f"{url}/v1/score", content=bad, headers={"content-type": "application/json"}, timeout=30)
        assert r.status_code == 422, r.text
        bad = '{"pairs": [{"claim": "a", "passage": "p \\udc00"}]}'
        r = httpx.post(f"{url}/v1/score", content=bad, headers={"content-type": "application/json"}, timeout=30)
        assert r.status_code == 422, r.text
        for base, ok in ((0, True), (1, True), (2, False), (-1, False)):
            r = httpx.post(f"{url}/v1/guard", timeout=30, json={"answer": GOOD, "passages": [ASPIRIN],
                                                                "citation_base": base})
            assert (r.status_code == 200) is ok, (base, r.text)
        r = httpx.post(f"{url}/v1/guard", content=json.dumps({"answer": GOOD, "passages": [ASPIRIN], "citation_base": 2}),
                       headers={"content-type": "application/json"}, timeout=30)
        assert r.status_code == 422 and "citation_base" in r.text
