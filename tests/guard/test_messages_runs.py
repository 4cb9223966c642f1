"""An unstreamed Anthropic message of several runs of text (citebound/serving/api_messages.py's guard_content): the
blocks between runs kept in place, each structured citation given its own verdict (not a marker's), the runs'
reports merged at their offsets, a run the guard removed whole leaving no empty block, and the merged budget
failing open as the service is told to. Hand-worked with the lexical verifier (the share of a claim's content terms
found in the passage)."""
import json

import httpx
import pytest

pytest.importorskip("fastapi")
from failing_scorer import Failing  # noqa: E402
from fake_apis import FakeAPIs, Turn, _sse, anthropic_message, content_events  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

STATINS = "Statins lower LDL cholesterol in adults."
RUN1 = "Statins lower LDL cholesterol in adults [1]. "
RUN2 = "Unicorns sing opera loudly [1]."
TOOL = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "ldl"}}


def _stream(events):
    """The guarded stream of these upstream Messages events (the lexical verifier, the statin passage): the
    response and its events' data."""
    with FakeAPIs(lambda b: Turn([""], raw=_sse(events))) as up, \
            running(ServeConfig(upstream=up.base_url, verifier="lexical", reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "stream": True,
                                                   "citebound": {"passages": [STATINS]},
                                                   "messages": [{"role": "user", "content": "q"}]}, timeout=60)
    return r, sse_data(r)


def _ask(content, cfg, scorer=None):
    msg = anthropic_message(content)
    with FakeAPIs(lambda b: Turn([""], whole=msg)) as up, \
            running(ServeConfig(upstream=up.base_url, reattributor=None, **cfg), scorer) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "citebound": {"passages": [STATINS]},
                                                   "messages": [{"role": "user", "content": "q"}]}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_runs_around_a_tool_call_keep_their_places_their_verdicts_and_their_offsets():
    """Run 1 (block 0) cites [1], verified (every term of its claim is in the statin passage), and carries a citation
    quoting a text no passage holds; block 1 is a tool call; run 2 (block 2) cites [1] for unicorns: flagged. The
    quoting citation's verdict is its own (not run 1's marker's); run 2's marker sits at len(RUN1) + 27 in the whole
    answer ("Unicorns sing opera loudly " is 27 characters), in its second sentence."""
    quote = "Mitochondria produce ATP in cells."
    cite = {"type": "char_location", "cited_text": quote, "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": len(quote)}
    body = _ask([{"type": "text", "text": RUN1, "citations": [cite]}, TOOL, {"type": "text", "text": RUN2}],
                {"verifier": "lexical"})
    content, rep = body["content"], body["citebound"]["report"]
    assert [b["type"] for b in content] == ["text", "tool_use", "text"] and content[1] == TOOL
    assert content[0]["text"] == RUN1 and content[2]["text"] == "Unicorns sing opera loudly [1 UNVERIFIED]."
    verdict = content[0]["citations"][0]["citebound"]
    # the quote is no passage's text: it joins as passage 2 (after the request's one), and the statin claim fails it
    assert (verdict["action"], verdict["passage"]) == ("flagged", 2)
    marker, quoted, unicorn = rep["audit"]
    assert (marker["action"], marker["spans"]) == ("verified", [[40, 43]])  # "Statins ... adults " is 40 characters
    assert quoted["action"] == verdict["action"]
    assert (unicorn["action"], unicorn["sentence_index"]) == ("flagged", 1)
    assert unicorn["spans"] == [[len(RUN1) + 27, len(RUN1) + 30]]


def test_a_run_the_guard_removes_whole_leaves_no_empty_block():
    body = _ask([{"type": "text", "text": RUN1}, TOOL, {"type": "text", "text": RUN2}],
                {"verifier": "lexical", "action": "remove"})
    assert [b["type"] for b in body["content"]] == ["text", "tool_use"]
    assert body["content"][0]["text"] == RUN1 and body["citebound"]["report"]["removed_sentences"] == 1


@pytest.mark.parametrize("on_error,budget", [("open", 0.0), ("closed", 0.5)])
def test_the_messages_merged_budget_fails_open_as_the_service_is_told(on_error, budget):
    """Run 1's citation is verified, run 2's claim makes the verifier fail (unverified): failing open, an unverified
    citation is not sent to review (0 of 2); failing closed it is (1 of 2)."""
    body = _ask([{"type": "text", "text": RUN1}, TOOL, {"type": "text", "text": "The boom claim [1]."}],
                {"verifier": "lexical", "on_error": on_error}, Failing("boom"))
    rep = body["citebound"]["report"]
    assert (rep["verified"], rep["unverified"], rep["review_budget"]) == (1, 1, budget)


@pytest.mark.parametrize("status,kind", [(502, "api_error"), (504, "timeout_error"), (403, "permission_error")])
def test_a_messages_error_never_echoes_a_urls_credentials(status, kind):
    from citebound.serving.api_messages import anthropic_error

    r = anthropic_error(status, "upstream http://me:s3cret@127.0.0.1:9/v1?api_key=K2 failed", "upstream_error")
    body = json.loads(r.body)
    assert r.status_code == status and "s3cret" not in r.body.decode() and "K2" not in r.body.decode()
    assert body == {"type": "error", "error": {"type": kind, "code": "upstream_error",
                                               "message": "upstream http://***@127.0.0.1:9/v1?api_key=*** failed"}}


@pytest.mark.parametrize("status,kind", [(400, "invalid_request_error"), (499, "invalid_request_error"),
                                         (500, "upstream_error"), (502, "upstream_error")])
def test_a_chat_error_is_the_clients_below_500_and_the_upstreams_from_500(status, kind):
    """The chat-completions face's errors in OpenAI's shape: a 4xx is the request's fault (invalid_request_error),
    a 5xx, 500 itself included, is not (upstream_error); credentials in the message are redacted there too."""
    from citebound.serving.proxy import proxy_error

    r = proxy_error(status, "upstream http://me:s3cret@127.0.0.1:9/v1 failed", "upstream_error")
    assert r.status_code == status and json.loads(r.body) == {"error": {
        "message": "upstream http://***@127.0.0.1:9/v1 failed", "code": "upstream_error", "param": None, "type": kind}}


@pytest.mark.parametrize("on_error,blocked", [("open", False), ("closed", True)])
def test_a_streamed_messages_block_decides_on_the_whole_answer_failing_open_as_told(on_error, blocked):
    """Streamed, with --action block at 0.3: run 1's citation verified, then a tool call, then run 2's claim makes
    the verifier fail (unverified). Block decides on the whole answer so far (run 1's report and run 2's): failing
    open the unverified citation is not for review, 0 of 2 (0 <= 0.3: the stream ends as the upstream's, run 2's
    text sent); failing closed it is, 1 of 2 (0.5 > 0.3: run 2 is withheld and the stream ends with a refusal)."""
    msg = anthropic_message([{"type": "text", "text": RUN1}, TOOL, {"type": "text", "text": "The boom claim [1]."}])
    policy = {"on_error": on_error, "action": "block", "block_above": 0.3}
    with FakeAPIs(lambda b: Turn([""], whole=msg, raw=_sse(content_events(msg)))) as up, \
            running(ServeConfig(upstream=up.base_url, reattributor=None, verifier="lexical", **policy), Failing("boom")) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "stream": True,
                                                   "citebound": {"passages": [STATINS]},
                                                   "messages": [{"role": "user", "content": "q"}]}, timeout=60)
    assert r.status_code == 200, r.text
    events = sse_data(r)
    sent = "".join(e["delta"]["text"] for e in events if e.get("type") == "content_block_delta"
                   and e["delta"].get("type") == "text_delta")
    stop = [e["delta"]["stop_reason"] for e in events if e.get("type") == "message_delta"]
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    assert (rep["verified"], rep["unverified"], rep["blocked"]) == (1, 1, blocked)
    assert stop == (["refusal"] if blocked else ["end_turn"])
    assert sent == (RUN1 if blocked else RUN1 + "The boom claim [1].")


def test_the_upstream_gets_the_clients_message_request_less_the_citebound_field():
    """The client sent model, max_tokens, messages and citebound: the upstream gets the first three as sent,
    nothing added (no null for a field the client left out)."""
    with FakeAPIs(lambda b: Turn([""], whole=anthropic_message([{"type": "text", "text": RUN1}]))) as up, \
            running(ServeConfig(upstream=up.base_url, verifier="lexical", reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "citebound": {"passages": [STATINS]},
                                                   "messages": [{"role": "user", "content": "q"}]}, timeout=60)
    assert r.status_code == 200, r.text
    assert [q["body"] for q in up.requests] == [{"model": "m", "max_tokens": 5,
                                                 "messages": [{"role": "user", "content": "q"}]}]


THINKING = {"type": "thinking", "thinking": "Unicorns sing opera [1].", "signature": "sig"}
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "ldl"}}


def test_the_blocks_the_guard_does_not_check_are_named_unstreamed_and_streamed():
    """A text run, a thinking block, a tool call and a server tool call. Checked: the text. Named as unchecked
    fields: the thinking and the server tool call (sorted); the client's own tool call is counted as a tool call
    (two calls: tool_use and server_tool_use), not as a field."""
    got = _ask([{"type": "text", "text": RUN1}, THINKING, TOOL, SEARCH], {"verifier": "lexical"})
    assert (got["citebound"]["unchecked_fields"], got["citebound"]["unchecked_tool_calls"]) == (
        ["server_tool_use", "thinking"], 2)
    ev = content_events(anthropic_message([{"type": "text", "text": RUN1}, {"type": "thinking", "thinking": "",
                                                                            "signature": ""},
                                           TOOL | {"input": {}}, SEARCH | {"input": {}}]))
    r, events = _stream(ev)
    (rep,) = [e for e in events if e.get("type") == "citebound.report"]
    assert (rep["unchecked_fields"], rep["unchecked_tool_calls"], rep["report"]["verified"]) == (
        ["server_tool_use", "thinking"], 2, 1)


def test_a_runs_citations_are_attached_at_their_blocks_ends_and_one_that_is_no_object_quotes_nothing():
    """Blocks 0 and 2 of a run (a tool call between them is not in the run): "Aspirin works. " ends at 14 (its
    trailing space left out), "B." at 15 + 2 = 17. A citation that is a string, or whose cited_text is a number,
    quotes nothing (checked as unverified, never skipped); each is named by its block's place in the content."""
    from citebound.guarding.structured import Attached
    from citebound.serving.api_messages import attached

    blocks = [{"type": "text", "text": "Aspirin works. ",
               "citations": ["oops", {"type": "char_location", "cited_text": 5}, {"type": "char_location", "cited_text": "Q"}]},
              {"type": "text", "text": "B.", "citations": [{"cited_text": "R"}]}]
    assert attached(blocks, [0, 2]) == [Attached(14, None, "content[0].citations[0] (citation)"),
                                        Attached(14, None, "content[0].citations[1] (char_location)"),
                                        Attached(14, "Q", "content[0].citations[2] (char_location)"),
                                        Attached(17, "R", "content[2].citations[0] (citation)")]


@pytest.mark.parametrize("cfg", [{}, {"action": "block", "block_above": 0.4}])
def test_a_streamed_messages_blocks_each_start_and_stop_in_order(cfg):
    """Two text blocks (one run), a tool call, a text block: the client gets each block's start, then its stop,
    before the next one starts (a text block's stop waits for the next block, as held text may still go into it,
    but it always comes, at a run's end too). Every sentence verifies, so block withholds nothing."""
    text = {"type": "text", "text": RUN1}
    ev = content_events(anthropic_message([text, text, TOOL | {"input": {}}, text]))
    with FakeAPIs(lambda b: Turn([""], raw=_sse(ev))) as up, \
            running(ServeConfig(upstream=up.base_url, verifier="lexical", reattributor=None, **cfg)) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "stream": True,
                                                   "citebound": {"passages": [STATINS]},
                                                   "messages": [{"role": "user", "content": "q"}]}, timeout=60)
    events = sse_data(r)
    assert [(e["type"], e["index"]) for e in events if e["type"] in ("content_block_start", "content_block_stop")] == [
        (kind, i) for i in range(4) for kind in ("content_block_start", "content_block_stop")]
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    assert (rep["blocked"], rep["verified"]) == (False, 3)


@pytest.mark.parametrize("block,expected", [
    ({"type": "text", "text": "A."}, (0, set())),
    ({"type": "text", "text": "A.", "citations": None}, (0, set())),
    ({"type": "text", "text": "A.", "citations": []}, (0, set())),
    ({"type": "text", "text": "A.", "citations": "x"}, (0, {"text.citations"})),
    ({"type": "text", "text": 5}, (0, {"text.text"})),
    ({"type": "text"}, (0, {"text.text"})),
    ({"type": "tool_use", "id": "t", "name": "f", "input": {}}, (1, set())),
    ({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}, (1, {"server_tool_use"})),
    ({"type": "thinking", "thinking": "", "signature": ""}, (0, {"thinking"})),
    ("junk", (0, {"block"})),
    (None, (0, {"block"})),
    ({"text": "A."}, (0, {"block.type"})),
    ({"type": "", "text": "A."}, (0, {"block.type"})),
    ({"type": 7}, (0, {"block.type"})),
])
def test_what_of_a_content_block_the_guard_does_not_check(block, expected):
    """Each block: the tool calls it is and what of it passes unchecked, by hand. Checked: a text block whose text
    is a string, its citations when they are a list (or none)."""
    from citebound.serving.api_messages import unchecked

    assert unchecked(block) == expected


MALFORMED = ["junk", {"notype": 1}, {"type": "text", "text": 5}]


def test_malformed_blocks_pass_through_named_and_the_text_beside_them_is_still_guarded():
    """Block 0: the statin text [1] (verified) whose citations field is the string "x": checked as one citation
    that quotes nothing (unverified), the field passed through as sent. Then a string, a block with no type and a
    text block whose text is a number: passed through as sent, none of them in a run. Unstreamed and streamed the
    report names the four fields (sorted) and counts 2 citations, 1 verified, 1 unverified, no tool call."""
    names = ["block", "block.type", "text.citations", "text.text"]
    first = {"type": "text", "text": RUN1, "citations": "x"}
    got = _ask([first, *MALFORMED], {"verifier": "lexical"})
    assert got["content"] == [first, *MALFORMED]
    rep = got["citebound"]
    assert (rep["unchecked_fields"], rep["unchecked_tool_calls"]) == (names, 0)
    assert (rep["report"]["n_citations"], rep["report"]["verified"], rep["report"]["unverified"]) == (2, 1, 1)
    ev = content_events(anthropic_message([{"type": "text", "text": RUN1}, *MALFORMED]))
    ev[1]["content_block"]["citations"] = "x"
    r, events = _stream(ev)
    assert [e["content_block"] for e in events if e.get("type") == "content_block_start"][1:] == MALFORMED
    (rep,) = [e for e in events if e.get("type") == "citebound.report"]
    assert (rep["unchecked_fields"], rep["unchecked_tool_calls"]) == (names, 0)
    assert (rep["report"]["n_citations"], rep["report"]["verified"], rep["report"]["unverified"]) == (2, 1, 1)


def test_a_text_delta_into_a_text_block_whose_text_is_no_string_is_refused():
    """A text block whose start holds a number is passed through as unchecked; a text delta into it would reach the
    client unchecked, so the stream ends in an error event that says so."""
    ev = content_events(anthropic_message([{"type": "text", "text": 5}]))
    ev.insert(2, {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Unicorns [1]."}})
    r, events = _stream(ev)
    assert "Unicorns" not in r.text
    assert events[-1]["type"] == "error" and "outside a text block" in events[-1]["error"]["message"]
