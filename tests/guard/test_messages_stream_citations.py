"""A streamed Anthropic message's citations carried as data (#56, round 82), where a stream differs from a whole
message: citations a text block brings in its own ``content_block_start``, and the place of a later block's
citations in a run of several blocks (the end of *that* block, not of the run so far). The lexical verifier scores
a claim by the share of its content terms found in the quoted text; each expected verdict is worked out by hand in
the test."""
import json

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn, _sse, anthropic_message  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

STATINS = "Statins lower LDL cholesterol in adults."
DOLPHINS = "Dolphins sleep with one eye open."


def cite(text: str) -> dict:
    return {"type": "char_location", "cited_text": text, "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": len(text)}


def stream_of(blocks: list[tuple[str, list[dict], list[dict]]]) -> list[dict]:
    """A Messages stream of text blocks, each (text, citations in its content_block_start, citations sent as
    citations_delta events after its text)."""
    ev = [{"type": "message_start", "message": anthropic_message([]) | {"stop_reason": None}}]
    for i, (text, at_start, later) in enumerate(blocks):
        ev.append({"type": "content_block_start", "index": i,
                   "content_block": {"type": "text", "text": "", "citations": at_start}})
        ev.append({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": text}})
        ev += [{"type": "content_block_delta", "index": i, "delta": {"type": "citations_delta", "citation": c}}
               for c in later]
        ev.append({"type": "content_block_stop", "index": i})
    return ev + [{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                  "usage": {"output_tokens": 1}}, {"type": "message_stop"}]


def post_stream(blocks, events=None, **cfg) -> httpx.Response:
    """The proxy's answer to a streamed request whose upstream streams ``blocks`` (or ``events``, where given: a
    stream written out; passages: the statin text; ``cfg``: the service's settings)."""
    whole = anthropic_message([{"type": "text", "text": t} for t, _, _ in blocks])
    raw = _sse(stream_of(blocks) if events is None else events)
    with FakeAPIs(lambda b: Turn([""], whole=whole, raw=raw)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None, **cfg)) as url:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "stream": True,
                "citebound": {"passages": [STATINS]}}
        return httpx.post(f"{url}/v1/messages", json=body, timeout=60)


def guarded_stream(blocks) -> dict:
    """The citebound report of the stream of ``blocks`` through the proxy."""
    r = post_stream(blocks)
    assert r.status_code == 200, r.text
    (rep,) = [e["report"] for e in sse_data(r) if e.get("type") == "citebound.report"]
    return rep


@pytest.mark.parametrize("where", ["content_block_start", "citations_delta"])
def test_a_citation_a_block_brings_in_its_start_is_checked_like_one_sent_later(where):
    """"Unicorns sing opera." quoting the dolphin text: none of unicorns, sing, opera is in it (score 0), so the
    citation is flagged, wherever the block carried it. A citation left out would leave the sentence uncited and
    the report with no citation at all."""
    c, at_start = cite(DOLPHINS), where == "content_block_start"
    blocks = [("Unicorns sing opera.", [c] if at_start else [], [] if at_start else [c])]
    rep = guarded_stream(blocks)
    assert (rep["n_citations"], rep["flagged"], rep["verified"], rep["uncited"]) == (1, 1, 0, 0)
    (a,) = rep["audit"]
    assert (a["claim"], a["action"], a["score"]) == ("Unicorns sing opera.", "flagged", 0.0)


def test_a_later_blocks_citation_attaches_at_the_end_of_its_own_block():
    """Three blocks in one run: "Unicorns sing opera. " (21 characters) quoting the dolphin text, "Statins lower LDL
    cholesterol in adults. " (41) quoting the statin text, and "Nothing cites this sentence." (28), uncited. The
    second block's citation attaches at 21 + 40 = 61 (its block's end, trailing space left out), on the statin
    sentence: verified (every term quoted). Placed at the end of the run so far instead (21 + 61 = 82) it would land in
    the third sentence, which would be flagged while the statin sentence went uncited."""
    blocks = [("Unicorns sing opera. ", [], [cite(DOLPHINS)]), ("Statins lower LDL cholesterol in adults. ", [], [cite(STATINS)]),
              ("Nothing cites this sentence.", [], [])]
    rep = guarded_stream(blocks)
    assert [(a["sentence_index"], a["action"]) for a in rep["audit"]] == [(0, "flagged"), (1, "verified")]
    assert [a["claim"] for a in rep["audit"]] == ["Unicorns sing opera.", "Statins lower LDL cholesterol in adults."]
    assert (rep["uncited"], rep["uncited_sentences"]) == (1, [[62, 90]])


@pytest.mark.parametrize("blocks,blocked,reason", [
    # one block citing the statin text as data: 1 of 1 verified, budget 0: the text goes out
    ([(f"{STATINS} ", [], [cite(STATINS)])], False, ""),
    # two blocks, one run: "Unicorns sing opera." quoting the dolphin text (flagged), then the statin sentence
    # (verified): 1 of 2, budget 0.5, past 0.4: blocked, and none of the text was sent
    ([("Unicorns sing opera. ", [], [cite(DOLPHINS)]), (f"{STATINS} ", [], [cite(STATINS)])], True,
     "review budget 0.5 is past --block-above 0.4: 1 of 2 citations failed or could not be checked"),
    # a sentence citing nothing, in text or as data: 1 sentence of 1 cites nothing, budget 1: blocked, nothing sent
    ([("Unicorns sing opera. ", [], [])], True,
     "review budget 1 is past --block-above 0.4: 0 of 0 citations failed or could not be checked, and 1 sentences "
     "cite nothing"),
])
def test_block_waits_for_a_runs_citations_before_sending_a_sentence_that_cites_nothing_in_its_text(
        blocks, blocked, reason):
    """--action block above 0.4. A text block's citations come after its text: a sentence that cites nothing in
    its text is held until its run's citations are in, and the decision counts them. Decided on the text alone,
    every sentence cited only as data would count as citing nothing (budget 1), and every such answer would be
    withheld, its verified citations notwithstanding."""
    r = post_stream(blocks, action="block", block_above=0.4)
    assert r.status_code == 200, r.text
    events = sse_data(r)
    text = "".join(e["delta"].get("text", "") for e in events if e.get("type") == "content_block_delta")
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    assert text == ("" if blocked else "".join(t for t, _, _ in blocks))
    assert (rep["blocked"], rep["block_reason"].split("; in a stream")[0]) == (blocked, reason)
    assert rep["uncited"] == (1 if not blocks[0][2] else 0)
    if blocked:
        assert all(a["claim"] is None for a in rep["audit"])  # the withheld text is not in the report either
    # every block the client saw start is stopped, in order, before the message ends (refused when blocked)
    assert [(e["type"], e["index"]) for e in events if e["type"] in ("content_block_start", "content_block_stop")] == [
        (kind, i) for i in range(len(blocks)) for kind in ("content_block_start", "content_block_stop")]
    assert [e["delta"]["stop_reason"] for e in events if e["type"] == "message_delta"] == [
        "refusal" if blocked else "end_turn"]
    lines = r.text.splitlines()  # the report is a data line with no event: name, blocked or not (the SDK skips it)
    (at,) = [k for k, x in enumerate(lines) if x.startswith('data: {"type": "citebound.report"')]
    assert not lines[at - 1].startswith("event:")


def test_without_block_a_sentence_citing_nothing_goes_out_as_soon_as_it_is_complete():
    """No --action block: nothing waits for a run's citations. Three text blocks in one run, none citing
    anything: "Unicorns sing opera." is complete once the second block's text starts, and goes out then, before
    the third block starts (not held to the run's end)."""
    blocks = [("Unicorns sing opera. ", [], []), ("Dolphins sleep. ", [], []), ("Statins work. ", [], [])]
    r = post_stream(blocks)
    events = sse_data(r)
    first = next(k for k, e in enumerate(events) if e.get("type") == "content_block_delta" and e["delta"].get("text"))
    third = [k for k, e in enumerate(events) if e.get("type") == "content_block_start"][2]
    assert events[first]["delta"]["text"].startswith("Unicorns sing opera.") and first < third


def test_a_streamed_citation_that_is_no_object_quotes_nothing_and_its_report_event_is_unnamed():
    """A citations_delta whose citation is a string: the citation quotes nothing, so it is checked as unverified
    (never skipped, never a crash): 1 citation, 1 unverified. The report goes out as a data line with no ``event:``
    name (the anthropic SDK skips an event it has no name for)."""
    blocks = [(f"{STATINS} ", [], ["oops"])]
    r = post_stream(blocks)
    lines = r.text.splitlines()
    (at,) = [k for k, x in enumerate(lines) if x.startswith('data: {"type": "citebound.report"')]
    assert not lines[at - 1].startswith("event:")
    rep = json.loads(lines[at][6:])["report"]
    assert (rep["n_citations"], rep["unverified"], rep["audit"][0]["marker"]) == (1, 1, "content[0].citations[0] (citation)")


def test_a_block_mid_run_stops_the_open_text_block_and_sends_nothing_of_the_failed_sentence():
    """--action block above 0.4; one text block: "Unicorns sing opera loudly [1]." (flagged: none of its terms is
    in the statin passage) then the statin sentence [1]. Once the second sentence starts, the first is complete:
    1 of 1 citations failed, budget 1: the stream stops there. The open block is stopped, then the refusal."""
    blocks = [(f"Unicorns sing opera loudly [1]. {STATINS[:-1]} [1]. ", [], [])]
    r = post_stream(blocks, action="block", block_above=0.4)
    events = sse_data(r)
    assert [(e["type"], e.get("index")) for e in events if e["type"] != "content_block_delta"] == [
        ("message_start", None), ("content_block_start", 0), ("content_block_stop", 0), ("message_delta", None),
        ("citebound.report", None), ("message_stop", None)]
    assert "Unicorns" not in r.text
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    assert (rep["blocked"], rep["flagged"], rep["n_citations"]) == (True, 1, 1)


def test_a_stream_that_fails_while_sentences_wait_for_their_citations_says_so_and_sends_none_of_them():
    """--action block above 0.4: "Statins lower LDL cholesterol in adults. " cites nothing in its text, so it waits
    for the run's citations; then "More words" (10 characters, an unfinished sentence) is held, and the upstream
    sends an error. The error names both: 10 characters of an unfinished sentence, 40 waiting (the statin
    sentence; the space between them goes with neither); none of the text was sent."""
    blocks = [(f"{STATINS} More words", [], [])]
    ev = stream_of(blocks)[:3] + [{"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}]
    r = post_stream(blocks, ev, action="block", block_above=0.4)
    events = sse_data(r)
    assert not [e for e in events if e["type"] == "content_block_delta" and e["delta"].get("text")]
    msg = events[-1]["error"]["message"]
    assert msg.endswith("overloaded; 10 characters of an unfinished sentence were not sent (they cannot be checked); "
                        "40 characters of sentences waiting for their citations as data were not sent"), msg
