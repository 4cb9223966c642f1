"""What every proxy face shares (citebound/serving/held.py), at its edges (#56 round 64): a Messages request's
passages are its ``citebound`` passages first, then its documents, numbered in that order; a failed stream's
message counts every held character, one included; a streamed segment past the request timeout goes out
unverified and is counted in the metrics; a citation carried as data is numbered in the request's base (0 too);
a sentence removed for its failed citation as data leaves the next one uncited; a streamed citation as data the
verifier failed on counts as ``on_error`` says."""
from __future__ import annotations

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn  # noqa: E402
from service_helpers import running  # noqa: E402
from test_behaviours import Slow  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

STATINS = "Statins lower LDL cholesterol in adults."
MITO = "Mitochondria produce ATP in cells."


def _messages(answer: str, body: dict, **cfg) -> tuple[httpx.Response, list]:
    with FakeAPIs(lambda b: Turn([answer])) as up, \
            running(ServeConfig(verifier="lexical", reattributor=None, upstream=up.base_url, **cfg)) as url:
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 64} | body, timeout=60)
    return r, up.requests


def test_citebound_passages_come_first_then_the_documents():
    # [1] is the citebound passage (statins), [2] the document (mitochondria): each claim's terms are all in its
    # own passage (verified) and none in the other (flagged, were the two numbered the other way round)
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": MITO}}
    body = {"messages": [{"role": "user", "content": [doc, {"type": "text", "text": "q"}]}],
            "citebound": {"passages": [STATINS]}}
    r, sent = _messages("Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2].", body)
    assert r.status_code == 200, r.text
    rep = r.json()["citebound"]["report"]
    assert (rep["verified"], rep["flagged"]) == (2, 0)
    assert [(a["cited"], a["evidence"]["text"]) for a in rep["audit"]] == [(1, STATINS), (2, MITO)]
    assert "citebound" not in sent[0]["body"]


@pytest.mark.parametrize("held,said", [(0, False), (1, True), (7, True)])
def test_a_failed_streams_message_counts_every_held_character(held, said):
    from citebound.serving.held import failure_message
    from citebound.serving.upstream import StreamFailure

    msg = failure_message(StreamFailure("the upstream's stream failed: boom"), "http://u", held)
    assert msg.startswith("upstream http://u: the upstream's stream failed: boom")
    assert (f"; {held} characters of an unfinished sentence were not sent" in msg) is said
    assert failure_message(StreamFailure("over the limit", "limit"), "http://u", held).startswith("over the limit")


def test_a_streamed_segment_past_the_timeout_goes_out_unverified_and_is_counted():
    """Each verifier call takes 1.5 s, the request timeout is 0.5 s: both sentences go out with [N UNVERIFIED]
    (fail closed), and the metrics count those 2 citations as unverified, as they count any guarded citation."""
    import re

    from fake_stream import FakeStreamingOpenAI, Script

    pieces = ["Statins lower LDL cholesterol [1]. ", "Mitochondria produce ATP [2]."]
    with FakeStreamingOpenAI(lambda b: Script(pieces)) as up, \
            running(ServeConfig(verifier="lexical", reattributor=None, upstream=up.base_url, request_timeout_s=0.5),
                    scorer=Slow(1.5)) as url:
        text = []
        with httpx.stream("POST", f"{url}/v1/chat/completions", timeout=60,
                          json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "q"}],
                                "citebound": {"passages": [STATINS, MITO]}}) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    import json

                    text += [(c.get("delta") or {}).get("content") or "" for c in json.loads(line[6:]).get("choices") or []]
        metrics = httpx.get(f"{url}/metrics", timeout=30).text
    assert "".join(text) == "Statins lower LDL cholesterol [1 UNVERIFIED]. Mitochondria produce ATP [2 UNVERIFIED]."
    counted = dict(re.findall(r'^citebound_citations_total\{outcome="(\w+)"\} (\S+)$', metrics, re.M))
    assert {k: float(v) for k, v in counted.items() if float(v)} == {"unverified": 2.0}


@pytest.mark.parametrize("base,number", [(0, 1), (1, 2)])
def test_a_citation_as_data_is_numbered_in_the_requests_base(base, number):
    """One citebound passage (statins), then one document (mitochondria); the answer's citation quotes the
    document (Anthropic's document_index 0 of the documents): it is the second passage, 1 counted from 0 and 2
    from 1, in the report and on the citation itself."""
    cit = {"type": "char_location", "cited_text": MITO, "document_index": 0, "document_title": None,
           "start_char_index": 0, "end_char_index": len(MITO)}
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": MITO}}
    with FakeAPIs(lambda b: Turn(["Mitochondria produce ATP."], citations=[cit])) as up, \
            running(ServeConfig(verifier="lexical", reattributor=None, upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/messages", timeout=60, json={
            "model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": [doc, {"type": "text", "text": "q"}]}],
            "citebound": {"passages": [STATINS], "citation_base": base}})
    assert r.status_code == 200, r.text
    (a,) = r.json()["citebound"]["report"]["audit"]
    assert (a["cited"], a["action"]) == (number, "verified")
    assert r.json()["content"][0]["citations"][0]["citebound"]["passage"] == number


def test_a_sentence_removed_for_its_failed_citation_as_data_leaves_the_next_one_uncited():
    """--action remove. Two text blocks: the first sentence carries a citation quoting the statins document (no
    term of it: flagged, reattributor off), so it is removed; the second cites nothing. What is left is the second
    sentence alone, still citing nothing: 1 uncited sentence, 1 removed (were the removed sentence's citation
    placed where it stood, the sentence now there would count as cited)."""
    from fake_apis import anthropic_message

    cit = {"type": "char_location", "cited_text": STATINS, "document_index": 0, "document_title": None,
           "start_char_index": 0, "end_char_index": len(STATINS)}
    whole = anthropic_message([{"type": "text", "text": "Unicorns sing opera loudly. ", "citations": [cit]},
                               {"type": "text", "text": "Mitochondria produce ATP."}])
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": STATINS}}
    with FakeAPIs(lambda b: Turn([], whole=whole)) as up, \
            running(ServeConfig(verifier="lexical", reattributor=None, upstream=up.base_url, action="remove")) as url:
        r = httpx.post(f"{url}/v1/messages", timeout=60, json={
            "model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": [doc, {"type": "text", "text": "q"}]}]})
    assert r.status_code == 200, r.text
    rep = r.json()["citebound"]["report"]
    assert "".join(b["text"] for b in r.json()["content"] if b["type"] == "text") == "Mitochondria produce ATP."
    assert (rep["flagged"], rep["removed_sentences"], rep["uncited"], rep["n_citations"]) == (1, 1, 1, 1)
    assert rep["review_budget"] == pytest.approx(2 / 2)  # the flagged citation and the uncited sentence, of 1 + 1


@pytest.mark.parametrize("on_error,budget", [("open", 0.0), ("closed", 1.0)])
def test_a_streamed_citation_as_data_the_verifier_failed_on_counts_as_on_error_says(on_error, budget):
    """A streamed Messages answer of one sentence whose one citation as data quotes the statins passage; the
    verifier fails on that claim ('boom'): unverified. Failing open it is not to review (budget 0 of 1), failing
    closed it is (1 of 1)."""
    import json

    from failing_scorer import Failing

    cit = {"type": "char_location", "cited_text": STATINS, "document_index": 0, "document_title": None,
           "start_char_index": 0, "end_char_index": len(STATINS)}
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": STATINS}}
    with FakeAPIs(lambda b: Turn(["Statins lower LDL boom."], citations=[cit])) as up, \
            running(ServeConfig(verifier="lexical", reattributor=None, upstream=up.base_url, on_error=on_error),
                    scorer=Failing("boom")) as url:
        events = []
        with httpx.stream("POST", f"{url}/v1/messages", timeout=60, json={
                "model": "m", "max_tokens": 64, "stream": True,
                "messages": [{"role": "user", "content": [doc, {"type": "text", "text": "q"}]}]}) as r:
            events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    assert (rep["n_citations"], rep["unverified"], rep["review_budget"]) == (1, 1, budget)
