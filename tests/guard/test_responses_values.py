"""The Responses API face's values, worked out by hand: which passage each ``[N]`` and each annotation is checked
against, which sentence an annotation attaches to, each annotation's own verdict and its moved positions, the
report's marker spans across parts, the unguarded output kept apart, a message of two parts and two file searches
streamed, a failed or blocked stream's last events. The lexical verifier: a claim's score is the share of its
content terms found in the passage, so a claim copied from a passage scores 1 (verified) and "Unicorns sing opera
loudly" scores 0 against every passage here (flagged). A flagged marker is written ``[N UNVERIFIED]`` (no
re-attribution)."""
import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn, _sse, response  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
STATINS = "Statins lower LDL cholesterol in adults."
ATP = "Mitochondria produce ATP in cells."
UNICORNS = "Unicorns sing opera loudly"


def _whole(output: list[dict]) -> dict:
    return response(Turn([""]), "m") | {"output": output}


def _message(*parts: dict, mid: str = "msg_1") -> dict:
    return {"type": "message", "id": mid, "status": "completed", "role": "assistant", "content": list(parts)}


def _part(text: str, annotations: list | None = None, pieces: list[str] | None = None) -> dict:
    """An output_text part; ``pieces``: how it streams (one delta each; default the whole text)."""
    return {"type": "output_text", "text": text, "annotations": annotations or [], "_pieces": pieces or [text]}


def _search(fs_id: str, *results: tuple[str, str]) -> dict:
    return {"type": "file_search_call", "id": fs_id, "status": "completed", "queries": ["q"],
            "results": [{"file_id": f, "filename": f"{f}.txt", "score": 1.0, "text": t} for f, t in results]}


def _clean(item: dict) -> dict:
    if item["type"] != "message":
        return item
    return item | {"content": [{k: v for k, v in p.items() if k != "_pieces"} for p in item["content"]]}


def _events(output: list[dict], error: str | None = None) -> bytes:
    """The stream of a response whose output is ``output`` (:func:`_event_list`), as the upstream sends it."""
    return _sse(_event_list(output, error))


def _event_list(output: list[dict], error: str | None = None) -> list[dict]:
    """The events of a response whose output is ``output``: each item added and done in order, each output_text
    part's pieces as deltas, its annotations after its text; ``error``: an error event (and nothing more) after
    the first part's deltas."""
    done = _whole([_clean(i) for i in output])
    shell = done | {"status": "in_progress", "output": [], "usage": None}
    ev = [{"type": "response.created", "response": shell}, {"type": "response.in_progress", "response": shell}]
    for n, item in enumerate(output):
        if item["type"] != "message":
            ev += [{"type": "response.output_item.added", "output_index": n, "item": item | {"results": None}},
                   {"type": "response.output_item.done", "output_index": n, "item": item}]
            continue
        ev.append({"type": "response.output_item.added", "output_index": n,
                   "item": _clean(item) | {"content": [], "status": "in_progress"}})
        for k, part in enumerate(item["content"]):
            ref = {"item_id": item["id"], "output_index": n, "content_index": k}
            ev.append({"type": "response.content_part.added", **ref,
                       "part": {"type": "output_text", "text": "", "annotations": []}})
            ev += [{"type": "response.output_text.delta", **ref, "delta": p, "logprobs": []} for p in part["_pieces"]]
            if error is not None:
                ev.append({"type": "error", "code": "server_error", "message": error, "param": None})
                return [e | {"sequence_number": s} for s, e in enumerate(ev)]
            ev += [{"type": "response.output_text.annotation.added", **ref, "annotation_index": j, "annotation": a}
                   for j, a in enumerate(part["annotations"])]
            clean = {k2: v for k2, v in part.items() if k2 != "_pieces"}
            ev += [{"type": "response.output_text.done", **ref, "text": part["text"], "logprobs": []},
                   {"type": "response.content_part.done", **ref, "part": clean}]
        ev.append({"type": "response.output_item.done", "output_index": n, "item": _clean(item)})
    ev.append({"type": "response.completed", "response": done})
    return [e | {"sequence_number": s} for s, e in enumerate(ev)]


def _post(output: list[dict], passages: list[str], stream: bool, error: str | None = None,
          events: list[dict] | None = None, **cfg) -> httpx.Response:
    """The proxy's answer to a request whose upstream answers ``output`` (streamed: ``events`` where given, else
    :func:`_event_list`'s)."""
    raw = _sse(events) if events is not None else _events(output, error)
    turn = Turn([""], whole=_whole([_clean(i) for i in output]), raw=raw)
    settings = {"verifier": "lexical", "reattributor": None} | cfg
    with FakeAPIs(lambda b: turn) as up, running(ServeConfig(upstream=up.base_url, **settings)) as url:
        return httpx.post(f"{url}/v1/responses", timeout=60, json={
            "model": "m", "input": "q", "stream": stream,
            "citebound": {"passages": passages, "return_original": True}})


def _report(r: httpx.Response, stream: bool) -> dict:
    if not stream:
        return r.json()["citebound"]["report"]
    (rep,) = [e["report"] for e in sse_data(r) if e.get("type") == "citebound.report"]
    return rep


@pytest.mark.parametrize("stream", [False, True])
def test_markers_number_the_requests_passages_then_each_nonblank_result_of_a_search_after_any_item(stream):
    """A reasoning item comes first, then a file search whose results are the statin text, a blank one and the
    ATP text. The request's passage (aspirin) is [1]; the results follow without the blank one: [2] statins,
    [3] ATP. Each sentence copies its passage: all three verified (score 1), each against that text."""
    text = f"{ASPIRIN[:-1]} [1]. {STATINS[:-1]} [2]. {ATP[:-1]} [3]."
    output = [{"type": "reasoning", "id": "rs_1", "summary": []},
              _search("fs_1", ("f1", STATINS), ("f1", "  \n\t "), ("f2", ATP)), _message(_part(text))]
    r = _post(output, [ASPIRIN], stream)
    assert r.status_code == 200, r.text
    rep = _report(r, stream)
    assert [(a["cited"], a["action"], a["score"], a["evidence"]["text"]) for a in rep["audit"]] == [
        (1, "verified", 1.0, ASPIRIN), (2, "verified", 1.0, STATINS), (3, "verified", 1.0, ATP)]


def test_each_annotation_gets_its_own_verdict_at_its_own_sentence_and_its_positions_follow_the_guarded_text():
    """Sentences: 0 "Unicorns ... [1]." (the marker: flagged against the aspirin passage, rewritten
    "[1 UNVERIFIED]", 11 characters longer), 1 the statin text, 2 the ATP text. Passages: aspirin [1], then the
    search's statins [2] and ATP [3]. Annotations: a file_path (a made file: no citation, left as it is); f1 (statins)
    ending at sentence 1's end: verified; f2 (ATP) with no position: attached at the text's end, sentence 2, verified
    (at its start it would be the unicorn sentence, flagged); a url_citation whose end_index is true (not a
    position: the text's end): sentence 2, unchecked; f1 ending at sentence 0's end: flagged (no unicorn term in
    the statin text). Citations: the marker and four annotations, 5. The f1 annotation's index moves by 11 (after
    the rewritten marker); the one ending at sentence 0 stays where the sentence's "." stands in the guarded text."""
    text = f"{UNICORNS} [1]. {STATINS} {ATP}"
    end1 = text.index(STATINS) + len(STATINS)
    notes = [{"type": "file_path", "file_id": "f9", "index": 3},
             {"type": "file_citation", "file_id": "f1", "filename": "f1.txt", "index": end1},
             {"type": "file_citation", "file_id": "f2", "filename": "f2.txt"},
             {"type": "url_citation", "url": "https://example.org", "title": "t", "start_index": 0, "end_index": True},
             {"type": "file_citation", "file_id": "f1", "filename": "f1.txt", "index": len(f"{UNICORNS} [1].")}]
    output = [_search("fs_1", ("f1", STATINS), ("f2", ATP)), _message(_part(text, notes))]
    r = _post(output, [ASPIRIN], False)
    assert r.status_code == 200, r.text
    (part,) = r.json()["output"][1]["content"]
    guarded = part["text"]
    assert guarded == f"{UNICORNS} [1 UNVERIFIED]. {STATINS} {ATP}"
    got = part["annotations"]
    assert got[0] == notes[0]
    assert [g["citebound"]["action"] for g in got[1:]] == ["verified", "verified", "unverified", "flagged"]
    assert [g["citebound"]["passage"] for g in got[1:]] == [2, 3, None, 2]
    assert got[1]["index"] == end1 + 11 == guarded.index(STATINS) + len(STATINS)
    assert got[4]["index"] == len(f"{UNICORNS} [1 UNVERIFIED].")
    assert got[3]["start_index"] == 0 and got[3]["end_index"] is True  # true is no position: left as sent
    rep = r.json()["citebound"]["report"]
    assert rep["n_citations"] == 5
    # the audit: the marker first, then the annotations in order, each at its sentence
    assert [(a["sentence_index"], a["cited"], a["action"]) for a in rep["audit"]] == [
        (0, 1, "flagged"), (1, 2, "verified"), (2, 3, "verified"), (2, -1, "unverified"), (0, 2, "flagged")]


def test_an_annotation_after_a_flagged_superscript_keeps_its_words_in_the_guarded_text():
    """"Aspirin² irreversibly inhibits ... [1]. Statins ...": the '²' is a form the guard cannot read beside '[1]',
    left unverified and written "² [UNVERIFIED]", 13 characters inserted inside the sentence. A url_citation on
    "irreversibly inhibits" (after the '²', in the same sentence) must span the same words in the guarded text
    (9 -> 22, 30 -> 43), not the sentence's end."""
    text = f"Aspirin² {ASPIRIN[8:-1]} [1]. {STATINS}"
    start, end = text.index("irreversibly"), text.index(" platelet")
    notes = [{"type": "url_citation", "url": "https://example.org", "title": "t", "start_index": start,
              "end_index": end}]
    r = _post([_message(_part(text, notes))], [ASPIRIN, STATINS], False)
    assert r.status_code == 200, r.text
    (part,) = r.json()["output"][0]["content"]
    assert part["text"] == f"Aspirin² [UNVERIFIED] {ASPIRIN[8:-1]} [1]. {STATINS}"
    (got,) = part["annotations"]
    assert (start, end) == (9, 30) and (got["start_index"], got["end_index"]) == (22, 43)
    assert part["text"][22:43] == "irreversibly inhibits"


def test_two_parts_marker_spans_count_the_earlier_parts_text_and_the_original_output_is_the_upstreams():
    """Part 0 "Unicorns sing opera loudly [1]." (31 characters; guarded 42, its marker flagged), part 1
    " Statins ... adults [2]." (its "[2]" at 41 within it). The whole report's spans are positions in the answer
    as the upstream wrote it: [1] at 27-30, [2] at 31 + 41 = 72-75 (not 42 + 41). original_output is the
    upstream's output unchanged, not the guarded one."""
    t0, t1 = f"{UNICORNS} [1].", f" {STATINS[:-1]} [2]."
    assert (len(t0), t1.index("[2]")) == (31, 41)
    output = [_message(_part(t0), _part(t1))]
    r = _post(output, [ASPIRIN, STATINS], False)
    assert r.status_code == 200, r.text
    body = r.json()
    assert [p["text"] for p in body["output"][0]["content"]] == [f"{UNICORNS} [1 UNVERIFIED].", t1]
    assert [p["text"] for p in body["citebound"]["original_output"][0]["content"]] == [t0, t1]
    assert [(a["sentence_index"], a["spans"]) for a in body["citebound"]["report"]["audit"]] == [
        (0, [[27, 30]]), (1, [[72, 75]])]


def test_a_streamed_message_of_two_parts_after_two_searches_comes_back_whole_and_guarded():
    """Output 0 and 1: file searches (f1's statin text, then f2's ATP text); output 2: a message of two parts,
    each streamed in two pieces. Part 0: "[1 ...]" on the unicorn sentence (flagged), and an annotation of f1 (the
    first search's file) on the statin sentence: verified. Part 1: the ATP sentence with [2] (the ATP result:
    passages are the request's none, then statins [1], ATP [2]): verified. The completed response, each
    output_text.done and content_part.done carry each part's own guarded text; the searches are no unchecked tool
    calls."""
    t0 = f"{UNICORNS} [1]. {STATINS}"
    t1 = f" {ATP[:-1]} [2]."
    note = {"type": "file_citation", "file_id": "f1", "filename": "f1.txt", "index": len(t0)}
    output = [_search("fs_1", ("f1", STATINS)), _search("fs_2", ("f2", ATP)),
              _message(_part(t0, [note], pieces=[t0[:20], t0[20:]]), _part(t1, pieces=[t1[:9], t1[9:]]))]
    r = _post(output, [], True)
    assert r.status_code == 200, r.text
    sent = sse_data(r)
    g0, g1 = f"{UNICORNS} [1 UNVERIFIED]. {STATINS}", t1
    assert [e["text"] for e in sent if e["type"] == "response.output_text.done"] == [g0, g1]
    assert [e["part"]["text"] for e in sent if e["type"] == "response.content_part.done"] == [g0, g1]
    (done,) = [e["response"] for e in sent if e["type"] == "response.completed"]
    assert [p["text"] for p in done["output"][2]["content"]] == [g0, g1]
    assert done["output"][2]["content"][0]["annotations"][0]["citebound"]["action"] == "verified"
    rep = _report(r, True)
    assert [(a["cited"], a["action"]) for a in rep["audit"]] == [(1, "flagged"), (1, "verified"), (2, "verified")]
    # the guard read both searches' results: they are no unchecked tool calls
    assert [e["unchecked_tool_calls"] for e in sent if e["type"] == "citebound.report"] == [0]
    assert [e["sequence_number"] for e in sent] == list(range(len(sent)))


def test_a_stream_that_fails_mid_part_says_what_it_withheld_bounds_the_message_and_counts_what_it_checked():
    """The part streams "Statins ... adults [1]. Mitochondria produce" and then the upstream's error event, whose
    message is 5,000 characters. The first sentence went out (verified); "Mitochondria produce" (20 characters;
    the space before it is between sentences) was held and is not sent. The error event says so, carries at most
    500 of the upstream's characters, and its report counts the verified citation of the part being held."""
    text = f"{STATINS[:-1]} [1]. Mitochondria produce"
    output = [_message(_part(text))]
    r = _post(output, [STATINS], True, error="x" * 5000)
    assert r.status_code == 200, r.text
    sent = sse_data(r)
    assert "".join(e["delta"] for e in sent if e["type"] == "response.output_text.delta") == f"{STATINS[:-1]} [1]."
    err = sent[-1]
    assert err["type"] == "error"
    assert "x" * 500 in err["message"] and "x" * 501 not in err["message"]
    assert "20 characters of an unfinished sentence were not sent" in err["message"]
    rep = err["citebound"]["report"]
    assert (rep["n_citations"], rep["verified"]) == (1, 1)


def test_a_part_blocked_mid_stream_ends_the_stream_at_once_even_if_the_upstream_then_fails():
    """--action block above 0.3: the unicorn sentence's [1] is flagged when "Statins" starts the next one (budget
    1/1): the stream ends there with response.incomplete (content_filter) and the blocked report, before the
    upstream's error event that follows is read."""
    text = f"{UNICORNS} [1]. Statins lower"
    output = [_message(_part(text, pieces=[f"{UNICORNS} [1]. Statins", " lower"]))]
    r = _post(output, [ASPIRIN], True, error="scripted failure", action="block", block_above=0.3)
    assert r.status_code == 200, r.text
    sent = sse_data(r)
    assert [e["type"] for e in sent[-2:]] == ["response.incomplete", "citebound.report"]
    assert sent[-2]["response"]["incomplete_details"] == {"reason": "content_filter"}
    assert sent[-1]["report"]["blocked"] is True
    assert not any(e["type"] == "error" for e in sent)
    assert not any(e["type"] == "response.output_text.delta" for e in sent)


def test_the_block_decides_on_the_whole_answer_so_far_not_on_the_part_alone():
    """--action block above 0.3. Part 0: three sentences, each copying its passage: 3 verified. Part 1: the
    unicorn sentence [1] (flagged), then the statin sentence [1] (verified). After part 1's first sentence the
    answer so far has 1 of 4 citations to review (0.25: not above 0.3), though that part alone has 1 of 1; at the
    end 1 of 5 (0.2). Nothing is blocked, every text is sent."""
    t0 = f"{STATINS[:-1]} [1]. {ATP[:-1]} [2]. {ASPIRIN[:-1]} [3]."
    t1 = f" {UNICORNS} [1]. {STATINS[:-1]} [1]."
    first = f" {UNICORNS} [1]. Statins"
    output = [_message(_part(t0), _part(t1, pieces=[first, t1[len(first):]]))]
    r = _post(output, [STATINS, ATP, ASPIRIN], True, action="block", block_above=0.3)
    assert r.status_code == 200, r.text
    sent = sse_data(r)
    assert not any(e["type"] == "response.incomplete" for e in sent)
    rep = _report(r, True)
    assert (rep["blocked"], rep["n_citations"], rep["flagged"], rep["verified"]) == (False, 5, 1, 4)
    assert rep["review_budget"] == pytest.approx(0.2)
    assert [e["text"] for e in sent if e["type"] == "response.output_text.done"] == [
        t0, f" {UNICORNS} [1 UNVERIFIED]. {STATINS[:-1]} [1]."]


@pytest.mark.parametrize("first,blocked", [(STATINS, False), (f"{UNICORNS}.", True)])
def test_block_waits_for_a_parts_annotations_before_sending_a_sentence_that_cites_nothing_in_its_text(first, blocked):
    """--action block above 0.4; one part, two sentences, each cited only by a file_citation annotation of f1 (the
    statin text), which streams after the text. A sentence that cites nothing in its text is held until the part's
    annotations are in, and the decision counts them: two statin sentences are 2 of 2 verified (budget 0), and
    the text goes out; the unicorn sentence's annotation fails (no unicorn term in the statin text), 1 of 2
    (0.5): blocked, and none of the text was sent. Decided on the text alone, each sentence would count as citing
    nothing (budget 1) and every answer cited this way would be withheld."""
    text = f"{first} {STATINS}"
    notes = [{"type": "file_citation", "file_id": "f1", "filename": "f1.txt", "index": len(first)},
             {"type": "file_citation", "file_id": "f1", "filename": "f1.txt", "index": len(text)}]
    output = [_search("fs_1", ("f1", STATINS)), _message(_part(text, notes, pieces=[first + " ", STATINS]))]
    r = _post(output, [], True, action="block", block_above=0.4)
    assert r.status_code == 200, r.text
    sent = sse_data(r)
    rep = _report(r, True)
    assert (rep["blocked"], rep["n_citations"], rep["verified"], rep["flagged"], rep["uncited"]) == (
        blocked, 2, 1 if blocked else 2, 1 if blocked else 0, 0)
    deltas = "".join(e["delta"] for e in sent if e["type"] == "response.output_text.delta")
    assert deltas == ("" if blocked else text)
    assert any(e["type"] == "response.incomplete" for e in sent) is blocked
    if blocked:
        assert rep["block_reason"] == ("review budget 0.5 is past --block-above 0.4: 1 of 2 citations failed or could "
                                       "not be checked")
        assert "Unicorns" not in r.text.split("citebound.report")[0]  # nothing of the withheld text went out


def test_search_results_are_read_from_file_search_items_only_and_a_file_joins_its_results():
    """Output items: a string (no item), a file search with f1's two results, a blank result, a result that is no
    object and f2's one, then a message: passages A, B, C in order; f1's text "A\\nB", f2's "C"."""
    from citebound.serving.api_responses import search_texts

    output = ["junk", {"type": "file_search_call", "results": [
        {"file_id": "f1", "text": "A"}, {"file_id": "f1", "text": "B"}, {"file_id": "f3", "text": "  "}, "x",
        {"file_id": "f2", "text": "C"}]}, {"type": "message", "content": []}]
    assert search_texts(output) == (["A", "B", "C"], {"f1": "A\nB", "f2": "C"})


def test_an_unstreamed_output_skips_what_is_no_message_or_no_text_part_and_guards_the_rest():
    """Output: a string, a message whose content is no list, a message with a part that is a string, a refusal
    part and the statin text [1]: only that text is guarded (1 citation, verified); the rest comes back as it was."""
    msg = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
           "content": ["junk", {"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": f"{STATINS[:-1]} [1].",
                                                                       "annotations": []}]}
    output = ["junk", {"type": "message", "id": "msg_0", "content": "not a list"}, msg]
    with FakeAPIs(lambda b: Turn([""], whole=_whole(output))) as up, \
            running(ServeConfig(upstream=up.base_url, verifier="lexical", reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/responses", timeout=60, json={"model": "m", "input": "q",
                                                                "citebound": {"passages": [STATINS]}})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["output"][:2] == output[:2] and got["output"][2]["content"][:2] == msg["content"][:2]
    assert (got["citebound"]["report"]["n_citations"], got["citebound"]["report"]["verified"]) == (1, 1)
    # what passed unchecked is named: the string item, the content that is no list, the string part, the refusal
    assert got["citebound"]["unchecked_fields"] == ["item", "message.content", "part", "refusal"]
    assert r.headers["X-Citebound-Unchecked-Fields"] == "item,message.content,part,refusal"


@pytest.mark.parametrize("item,expected", [
    ({"type": "reasoning", "summary": []}, (0, {"reasoning"})),
    ({"type": "mcp_list_tools", "tools": []}, (0, {"mcp_list_tools"})),
    ({"type": "function_call", "name": "f", "arguments": "{}"}, (1, set())),
    ({"type": "web_search_call"}, (1, set())),
    ({"type": "file_search_call", "results": []}, (0, set())),
    ("junk", (0, {"item"})),
    ({"summary": []}, (0, {"item.type"})),
    ({"type": 5}, (0, {"item.type"})),
    ({"type": ""}, (0, {"item.type"})),
    ({"type": "message", "content": [{"text": "A."}, {"type": "", "text": "B."}]}, (0, {"part.type"})),
    ({"type": "message", "content": None}, (0, {"message.content"})),
    ({"type": "message", "content": [{"type": "refusal", "refusal": ""}]}, (0, set())),
    ({"type": "message", "content": [{"type": "refusal", "refusal": "no"}]}, (0, {"refusal"})),
    ({"type": "message", "content": [{"type": "output_text", "text": "A."}, {"type": "output_text", "text": None},
                                     {"type": "audio"}, 7]}, (0, {"output_text.text", "audio", "part"})),
])
def test_what_of_an_output_item_the_guard_does_not_check(item, expected):
    """Each item: the tool calls it is (a call other than a file search, whose results are passages) and what
    else it carries unchecked, by hand: a refusal that says nothing carries nothing, an output_text with a string
    text is checked."""
    from citebound.serving.api_responses import unchecked

    assert unchecked(item) == expected


@pytest.mark.parametrize("stream", [False, True])
def test_a_reasoning_item_and_a_tool_call_are_named_streamed_and_not(stream):
    """A reasoning item, a web search call and the statin text [1]: the text checked (verified), the reasoning
    named as an unchecked field, the call counted as an unchecked tool call, on both faces."""
    output = [{"type": "reasoning", "id": "rs_1", "summary": []}, {"type": "web_search_call", "id": "ws_1",
                                                                   "status": "completed"},
              _message(_part(f"{STATINS[:-1]} [1]."))]
    r = _post(output, [STATINS], stream)
    assert r.status_code == 200, r.text
    got = r.json()["citebound"] if not stream else [e for e in sse_data(r) if e.get("type") == "citebound.report"][0]
    assert (got["unchecked_fields"], got["unchecked_tool_calls"], got["report"]["verified"]) == (["reasoning"], 1, 1)


def test_a_stream_that_fails_while_sentences_wait_for_their_annotations_says_so_and_sends_none_of_them():
    """--action block above 0.4: the statin sentence (40 characters) cites nothing in its text, so it waits for the
    part's annotations; "Mitochondria produce" (20) is held; then the upstream's error. Neither is sent, and the
    error names both."""
    output = [_message(_part(f"{STATINS} Mitochondria produce"))]
    r = _post(output, [STATINS], True, error="overloaded", action="block", block_above=0.4)
    sent = sse_data(r)
    assert not any(e["type"] == "response.output_text.delta" and e["delta"] for e in sent)
    assert sent[-1]["message"].endswith(
        "overloaded; 20 characters of an unfinished sentence were not sent (they cannot be checked); 40 characters "
        "of sentences waiting for their citations as data were not sent"), sent[-1]["message"]


def test_the_upstream_gets_the_clients_responses_request_less_the_citebound_field():
    """The client sent model, input, instructions and citebound: the upstream gets the first three as sent, nothing
    added (no null for a field the client left out)."""
    output = [_message(_part(f"{STATINS[:-1]} [1]."))]
    with FakeAPIs(lambda b: Turn([""], whole=_whole([_clean(i) for i in output]))) as up, \
            running(ServeConfig(upstream=up.base_url, verifier="lexical", reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/responses", timeout=60, json={"model": "m", "input": "q", "instructions": "be brief",
                                                                "citebound": {"passages": [STATINS]}})
    assert r.status_code == 200, r.text
    assert [q["body"] for q in up.requests] == [{"model": "m", "input": "q", "instructions": "be brief"}]


@pytest.mark.parametrize("content,named", [("not a list", ["message.content"]),
                                           (["junk", {"type": "refusal", "refusal": "no"}], ["part", "refusal"])])
def test_a_streamed_message_with_nothing_to_guard_comes_through_as_sent_and_is_named(content, named):
    """A streamed response whose one item is a message with content "not a list", or with a part that is a string
    and a refusal: nothing in it to guard, so output_item.done and response.completed carry it as sent (not taken
    apart character by character, the refusal not given an empty text), and the report names what it holds."""
    bad = {"type": "message", "id": "msg_0", "status": "completed", "role": "assistant", "content": content}
    done = _whole([bad])
    shell = done | {"status": "in_progress", "output": [], "usage": None}
    ev = [{"type": "response.created", "response": shell},
          {"type": "response.output_item.added", "output_index": 0, "item": bad},
          {"type": "response.output_item.done", "output_index": 0, "item": bad},
          {"type": "response.completed", "response": done}]
    turn = Turn([""], whole=done, raw=_sse([e | {"sequence_number": s} for s, e in enumerate(ev)]))
    with FakeAPIs(lambda b: turn) as up, \
            running(ServeConfig(upstream=up.base_url, verifier="lexical", reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/responses", timeout=60, json={"model": "m", "input": "q", "stream": True,
                                                                "citebound": {"passages": [STATINS]}})
    sent = sse_data(r)
    assert [e["item"] for e in sent if e["type"].startswith("response.output_item.")] == [bad, bad]
    assert [e["response"]["output"] for e in sent if e["type"] == "response.completed"] == [[bad]]
    (rep,) = [e for e in sent if e["type"] == "citebound.report"]
    assert (rep["unchecked_fields"], rep["report"]["n_citations"]) == (named, 0)


def test_every_event_that_carries_a_parts_text_carries_its_guarded_text():
    """The unicorn sentence [1] against the statin text: flagged, so its guarded text is "... [1 UNVERIFIED].".
    output_text.done, content_part.done (a whole output_text part), output_item.done and response.completed each
    carry that text, none the upstream's."""
    guarded = f"{UNICORNS} [1 UNVERIFIED]."
    part = {"type": "output_text", "text": guarded, "annotations": []}
    r = _post([_message(_part(f"{UNICORNS} [1]."))], [STATINS], True)
    sent = sse_data(r)
    assert [e["text"] for e in sent if e["type"] == "response.output_text.done"] == [guarded]
    assert [e["part"] for e in sent if e["type"] == "response.content_part.done"] == [part]
    assert [e["item"]["content"] for e in sent if e["type"] == "response.output_item.done"] == [[part]]
    assert [e["response"]["output"][0]["content"] for e in sent if e["type"] == "response.completed"] == [[part]]


def test_an_in_progress_response_carrying_output_keeps_its_items_with_their_text_blank():
    """An upstream whose response.in_progress already carries a reasoning item and a message with text: the client
    gets both items, the message's output_text blank (not yet guarded), the reasoning item as sent."""
    output = [_message(_part(f"{STATINS[:-1]} [1]."))]
    events = _event_list(output)
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    (k,) = [i for i, e in enumerate(events) if e["type"] == "response.in_progress"]
    events[k] = events[k] | {"response": events[k]["response"] | {"output": [reasoning, _clean(output[0])]}}
    sent = sse_data(_post(output, [STATINS], True, events=events))
    (got,) = [e["response"]["output"] for e in sent if e["type"] == "response.in_progress"]
    assert got == [reasoning, _clean(output[0]) | {"content": [{"type": "output_text", "text": "", "annotations": []}]}]


def test_a_blocked_streams_incomplete_response_is_the_created_one():
    """--action block above 0.3, the unicorn sentence [1] flagged (1 of 1), and no response.in_progress event: the
    response.incomplete the client gets is the response.created one (its id and model), now incomplete."""
    output = [_message(_part(f"{UNICORNS} [1]. Statins lower"))]
    events = [e for e in _event_list(output) if e["type"] != "response.in_progress"]
    sent = sse_data(_post(output, [STATINS], True, events=events, action="block", block_above=0.3))
    created = events[0]["response"]
    (inc,) = [e["response"] for e in sent if e["type"] == "response.incomplete"]
    assert (inc["id"], inc["model"], inc["status"], inc["incomplete_details"]) == (
        created["id"], created["model"], "incomplete", {"reason": "content_filter"})
