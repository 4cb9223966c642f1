"""What the proxy's API adapters must do, observed where the client (or the upstream) sees it: passages the
request carries in its own API's form and their numbering, where citations carried as data attach in later blocks,
tool calls counted, the withheld text absent from a blocked stream, a stream cut short refused, the headers the
upstream gets. Each expected value is worked out by hand in the test (the lexical verifier: the share of a claim's
content terms found in the passage)."""
import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn, _sse, anthropic_message, content_events  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
STATINS = "Statins lower LDL cholesterol in adults."
ATP = "Mitochondria produce ATP in cells."


def _messages_body(content: list, stream: bool, **extra) -> dict:
    return {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": content}], "stream": stream} | extra


def _report(events: list[dict]) -> dict:
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    return rep


@pytest.mark.parametrize("stream", [False, True])
def test_search_result_and_document_blocks_are_passages_numbered_in_order(stream):
    """The request carries a search_result block (the ATP text) then a text document (the statin text): they
    are passages 1 and 2, in that order, after none in citebound.passages. [1] on the ATP claim and [2] on the
    statin claim are both verified (all their terms in the passage: score 1); swapped, both would fail."""
    answer = "Mitochondria produce ATP in cells [1]. Statins lower LDL cholesterol in adults [2]."
    search = {"type": "search_result", "source": "https://example.org/atp", "title": "atp",
              "content": [{"type": "text", "text": ATP}]}
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": STATINS}, "title": "d"}
    msg = anthropic_message([{"type": "text", "text": answer}])
    with FakeAPIs(lambda b: Turn([""], whole=msg, raw=_sse(content_events(msg)))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/messages", json=_messages_body([search, doc, {"type": "text", "text": "q"}], stream),
                       timeout=60)
    assert r.status_code == 200, r.text
    rep = _report(sse_data(r)) if stream else r.json()["citebound"]["report"]
    assert (rep["n_citations"], rep["verified"], rep["invalid"], rep["flagged"]) == (2, 2, 0, 0)
    assert [(a["cited"], a["action"]) for a in rep["audit"]] == [(1, "verified"), (2, "verified")]


def _cite(text: str) -> dict:
    return {"type": "char_location", "cited_text": text, "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": len(text)}


@pytest.mark.parametrize("stream", [False, True])
def test_a_later_blocks_citation_attaches_at_that_blocks_end_past_every_earlier_blocks_whitespace(stream):
    """Ten list items, each a block ending in a blank line (20 characters of whitespace in all), then a short
    block "Statins lower LDL." (18 characters) citing the statin text. Its citation attaches at the end of the text
    (10 * 31 + 18 = 328), so it cites that sentence (verified: statin, lower, ldl are all in the quote). Counted
    without the earlier blocks' whitespace it would land 20 characters early, in the last item's blank line, and
    cite the unicorn item instead. The ten items are uncited."""
    items = [{"type": "text", "text": "- Unicorns sing opera loudly.\n\n"} for _ in range(10)]
    cited = {"type": "text", "text": "Statins lower LDL.", "citations": [_cite(STATINS)]}
    assert sum(len(b["text"]) for b in items) + len(cited["text"]) == 328
    msg = anthropic_message(items + [cited])
    with FakeAPIs(lambda b: Turn([""], whole=msg, raw=_sse(content_events(msg)))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/messages", json=_messages_body("q", stream, citebound={"passages": [STATINS]}),
                       timeout=60)
    assert r.status_code == 200, r.text
    rep = _report(sse_data(r)) if stream else r.json()["citebound"]["report"]
    (a,) = rep["audit"]
    assert (a["claim"], a["action"], a["sentence_index"]) == ("Statins lower LDL.", "verified", 10)
    assert (rep["n_citations"], rep["uncited"], rep["n_sentences"]) == (1, 10, 11)


def test_anthropic_version_beta_and_the_clients_key_reach_the_upstream_as_sent():
    """upstream_auth client (the default): the client's x-api-key goes on as x-api-key (never as a Bearer token),
    with anthropic-version and anthropic-beta as the client sent them; the citebound field does not."""
    msg = anthropic_message([{"type": "text", "text": "Statins lower LDL cholesterol in adults [1]."}])
    with FakeAPIs(lambda b: Turn([""], whole=msg)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/messages", json=_messages_body("q", False, citebound={"passages": [STATINS]}),
                       headers={"x-api-key": "sk-client-7", "anthropic-version": "2023-06-01",
                                "anthropic-beta": "citations-2024-11-01,files-api-2025-04-14"}, timeout=60)
    assert r.status_code == 200, r.text
    got = {k.lower(): v for k, v in up.requests[-1]["headers"].items()}
    assert got["x-api-key"] == "sk-client-7" and "authorization" not in got
    assert got["anthropic-version"] == "2023-06-01"
    assert got["anthropic-beta"] == "citations-2024-11-01,files-api-2025-04-14"
    assert "citebound" not in up.requests[-1]["body"]


@pytest.mark.parametrize("kind", ["file_citation", "container_file_citation"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_file_citation_is_checked_against_all_of_its_files_search_results(stream, kind):
    """File f1 has two search results, the statin text then the aspirin text; f2 one, the ATP text. The answer's
    statin sentence carries a file_citation of f1: checked against f1's results joined, it is verified (every
    term of the claim is in the first result); against the last result alone it would fail. The ATP sentence's
    citation of f2 (a file_citation, or a container_file_citation with start and end) is verified too: never
    left unchecked. Passages: the three results, numbered 1-3 after none in the request, streamed or not: the
    marker [3] on the ATP sentence is the ATP result (verified; without the results as passages, invalid). The
    file_search_call is not an unchecked tool call (the guard reads its results)."""
    from fake_apis import response, response_events

    text = "Statins lower LDL cholesterol in adults. Mitochondria produce ATP in cells [3]."
    notes = [{"type": "file_citation", "file_id": "f1", "filename": "a.txt", "index": 40},
             {"type": kind, "file_id": "f2", "filename": "b.txt"}
             | ({"index": len(text)} if kind == "file_citation" else {"container_id": "c1", "start_index": 41,
                                                                      "end_index": len(text)})]
    results = [{"file_id": "f1", "filename": "a.txt", "score": 1.0, "text": STATINS},
               {"file_id": "f1", "filename": "a.txt", "score": 0.9, "text": ASPIRIN},
               {"file_id": "f2", "filename": "b.txt", "score": 0.8, "text": ATP}]
    turn = Turn([text], citations=notes, results=results)
    with FakeAPIs(lambda b: Turn([""], whole=response(turn, "m"), raw=_sse(response_events(turn, "m")))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": "q", "stream": stream,
                                                    "citebound": {"passages": []}}, timeout=60)
    assert r.status_code == 200, r.text
    rep = _report(sse_data(r)) if stream else r.json()["citebound"]["report"]
    # each audit names the passage it was checked against: the marker [3] and f2's quote (the ATP result, passage
    # 3); f1's quote is its two results joined, which no passage is: it comes after the three, as 4
    assert sorted((a["claim"], a["cited"], a["action"]) for a in rep["audit"]) == [
        ("Mitochondria produce ATP in cells.", 3, "verified"), ("Mitochondria produce ATP in cells.", 3, "verified"),
        ("Statins lower LDL cholesterol in adults.", 4, "verified")]
    assert (rep["n_citations"], rep["verified"], rep["unverified"], rep["invalid"], rep["uncited"]) == (3, 3, 0, 0, 0)
    if stream:
        sent = sse_data(r)
        assert [e for e in sent if e.get("type") == "citebound.report"][0]["unchecked_tool_calls"] == 0
        # every event the client gets is numbered anew, 0, 1, 2, ... (held text merges deltas: no gaps, no repeats)
        assert [e["sequence_number"] for e in sent] == list(range(len(sent)))
    else:
        assert r.json()["citebound"]["unchecked_tool_calls"] == 0
        assert r.headers["X-Citebound-Unchecked-Tool-Calls"] == "0"


@pytest.mark.parametrize("show", [False, True])
@pytest.mark.parametrize("api", ["responses", "messages"])
def test_a_blocked_streams_report_counts_the_whole_answer_and_withholds_its_claims(api, show):
    """--action block above 0.3, no re-attribution. The answer streams in one delta: "Statins lower LDL cholesterol
    [1]." (verified: every term in passage 1) goes out when the next sentence starts; "Unicorns sing opera loudly
    [2]." (flagged: no term in passage 2) is guarded when the part ends, and takes the budget to 1/2: blocked. The
    report counts both citations (2, 1 verified, 1 flagged, budget 1/2), and withholds every claim (null, the
    unicorn text nowhere in the events) unless the request asked for the original."""
    from fake_apis import message_events, response_events

    answer = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [2]."
    turn = Turn([answer])
    raw = _sse(response_events(turn, "m") if api == "responses" else message_events(turn, "m"))
    extra = {"citebound": {"passages": [STATINS, ATP], "return_original": show}}
    with FakeAPIs(lambda b: Turn([""], raw=raw)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.3,
                                reattributor=None)) as url:
        body = ({"model": "m", "input": "q", "stream": True} if api == "responses"
                else _messages_body("q", True)) | extra
        r = httpx.post(f"{url}/v1/{api}", json=body, timeout=60)
    assert r.status_code == 200, r.text
    sent = sse_data(r)
    rep = _report(sent)
    assert rep["blocked"] is True
    assert (rep["n_citations"], rep["verified"], rep["flagged"]) == (2, 1, 1)
    assert rep["review_budget"] == pytest.approx(0.5)
    deltas = [e["delta"] for e in sent if e.get("type") == "response.output_text.delta"] if api == "responses" else \
        [e["delta"]["text"] for e in sent if e.get("type") == "content_block_delta"]
    assert "".join(deltas) == "Statins lower LDL cholesterol [1]."
    claims = [a["claim"] for a in rep["audit"]]
    if show:
        assert claims == ["Statins lower LDL cholesterol.", "Unicorns sing opera loudly."]
    else:
        assert claims == [None, None]
        assert "Unicorns" not in r.text


def test_the_documents_a_messages_request_carries_in_order():
    """Text documents (a text source, or a content source of text blocks joined by a newline) and search results
    (their text blocks joined likewise) are passages in the order they come, across messages; a PDF or image
    document, an image block, a block that is not an object and a message whose content is a string are not."""
    from citebound.serving.api_messages import documents

    messages = [
        {"role": "user", "content": "a string: no blocks"},
        {"role": "user", "content": [
            "not an object",
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "D0"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
            {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "D1a"},
                                                                         {"type": "image", "source": {}},
                                                                         {"type": "text", "text": "D1b"}]}},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "not a document"}]},
        {"role": "user", "content": [
            {"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": "S0a"},
                                                                               {"type": "text", "text": "S0b"}]},
            {"type": "search_result", "source": "s", "title": "t", "content": []},
            {"type": "document", "source": {"type": "text", "data": 5}},
        ]},
    ]
    assert documents(messages) == ["D0", "D1a\nD1b", "S0a\nS0b"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_part_whose_citations_as_data_fail_blocks_the_answer_at_its_end(stream):
    """uncited "ignore": the statin sentence has no marker, so its text alone passes (budget 0) and, streamed,
    goes out as it completes. Its file_citation of f1 (whose only result is the aspirin text) is checked when the
    part ends: flagged, the budget becomes 1/1 = 1.0 > 0.5, so the answer is blocked then: a 403 unstreamed;
    streamed, no output_text.done (the part's annotations never go out) and the response ends incomplete."""
    from fake_apis import response, response_events

    text = "Statins lower LDL cholesterol in adults."
    notes = [{"type": "file_citation", "file_id": "f1", "filename": "a.txt", "index": len(text)}]
    results = [{"file_id": "f1", "filename": "a.txt", "score": 1.0, "text": ASPIRIN}]
    turn = Turn([text], citations=notes, results=results)
    with FakeAPIs(lambda b: Turn([""], whole=response(turn, "m"), raw=_sse(response_events(turn, "m")))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None, action="block",
                                block_above=0.5, uncited="ignore")) as url:
        r = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": "q", "stream": stream,
                                                    "citebound": {"passages": []}}, timeout=60)
    if not stream:
        assert r.status_code == 403 and r.json()["error"]["code"] == "blocked"
        rep = r.json()["citebound"]["report"]
    else:
        sent = sse_data(r)
        types = [e.get("type") for e in sent]
        assert "response.output_text.done" not in types and "response.completed" not in types
        assert types[-2:] == ["response.incomplete", "citebound.report"]
        assert sent[-2]["response"]["incomplete_details"] == {"reason": "content_filter"}
        rep = _report(sent)
    assert rep["blocked"] is True and (rep["n_citations"], rep["flagged"], rep["review_budget"]) == (1, 1, 1.0)
