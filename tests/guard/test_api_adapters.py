"""The guarding proxy's Responses (``POST /v1/responses``) and Anthropic Messages (``POST /v1/messages``) faces,
through the official SDK of each API (``openai``, ``anthropic``) against a scripted upstream that speaks it: the
shipped example guarded as the library guards it, streamed equal to unstreamed (the SSE cut at every byte),
mid-stream failures the SDK raises on, block in each API's shape, the credentials that reach the upstream, and
citations carried as data (Anthropic ``cited_text``, Responses ``file_citation`` / ``url_citation``) checked with
hand-worked verdicts."""
import json
import random

import httpx
import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
from fake_apis import FakeAPIs, Turn, _sse, anthropic_message, message_events, response_events  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402

from citebound import Guard  # noqa: E402
from citebound.serving.state import ServeConfig  # noqa: E402

EX = json.loads((__import__("pathlib").Path(__file__).parents[2] / "citebound/examples/answer.json").read_text())
APIS = ["responses", "messages"]


def words(text: str) -> list[str]:
    w = text.split(" ")
    return [x + " " for x in w[:-1]] + w[-1:]


def no_card(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "guarantee_card"}


def ask(url: str, api: str, extra: dict, **kw):
    """(text, report) of one unstreamed request through the API's own SDK."""
    if api == "responses":
        r = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client", max_retries=0).responses.create(
            model="m", input="q", extra_body=extra, **kw)
        return r.output_text, r.model_extra["citebound"]["report"], r
    m = anthropic.Anthropic(base_url=url, api_key="sk-client", max_retries=0).messages.create(
        model="m", max_tokens=50, messages=[{"role": "user", "content": "q"}], extra_body=extra, **kw)
    return "".join(b.text for b in m.content if b.type == "text"), m.model_extra["citebound"]["report"], m


def ask_stream(url: str, api: str, extra: dict):
    """(text, events) of one streamed request: the text through the SDK's stream, the raw events by httpx."""
    if api == "responses":
        c = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client", max_retries=0)
        text = "".join(e.delta for e in c.responses.create(model="m", input="q", extra_body=extra, stream=True)
                       if e.type == "response.output_text.delta")
        body = {"model": "m", "input": "q", "stream": True} | extra
    else:
        c = anthropic.Anthropic(base_url=url, api_key="sk-client", max_retries=0)
        text = "".join(e.delta.text for e in c.messages.create(
            model="m", max_tokens=50, messages=[{"role": "user", "content": "q"}], extra_body=extra, stream=True)
            if e.type == "content_block_delta" and e.delta.type == "text_delta")
        body = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "q"}], "stream": True} | extra
    r = httpx.post(f"{url}/v1/{api}", json=body, timeout=60)
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    return text, events


def stream_report(events: list) -> dict:
    (rep,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
    return rep


@pytest.mark.parametrize("api", APIS)
def test_the_shipped_example_streamed_and_not_is_what_the_library_gives(api):
    text, report = Guard("lexical").guard(EX["answer"], EX["passages"])
    extra = {"citebound": {"passages": EX["passages"]}}
    with FakeAPIs(lambda b: Turn(words(EX["answer"]))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        got, rep, _ = ask(url, api, extra)
        streamed, events = ask_stream(url, api, extra)
    assert got == streamed == text
    assert no_card(rep) == no_card(stream_report(events)) == no_card(json.loads(json.dumps(report.to_dict())))
    acts = [(a["cited"], a["action"], a["new_pointer"]) for a in rep["audit"]]
    assert acts == [(1, "verified", None), (2, "reattributed", 3), (3, "reattributed", 2), (4, "invalid", None)]
    assert "[4 INVALID]" in got and "[3 (was 2)]" in got and "[2 (was 3)]" in got


@pytest.mark.parametrize("api", APIS)
def test_a_stream_cut_at_every_byte_gives_the_same_text_and_report(api):
    answer = "Statins lower LDL cholesterol [2]. Aspirin inhibits cyclooxygenase 😀 [1][9]. Café [0] x. \n"
    turn = Turn(words(answer))
    raw = _sse((response_events if api == "responses" else message_events)(turn, "m"))
    extra = {"citebound": {"passages": EX["passages"]}}
    rng = random.Random(5)
    with FakeAPIs(lambda b: cut) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        cut = Turn(turn.pieces)
        whole, rep, _ = ask(url, api, extra)
        for cuts in (list(range(1, len(raw))), sorted(rng.sample(range(1, len(raw)), 40))):
            cut = Turn(turn.pieces, byte_cuts=cuts)
            text, events = ask_stream(url, api, extra)
            assert text == whole and no_card(stream_report(events)) == no_card(rep)
    assert rep["invalid"] == 2 and rep["n_citations"] == 4  # [9] past the passages, [0] in base 1


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("end", [{"error_after": 3}, {"cut_after": 3}])
def test_a_failure_mid_stream_is_an_error_the_sdk_raises(api, end):
    extra = {"citebound": {"passages": EX["passages"]}}
    with FakeAPIs(lambda b: Turn(words(EX["answer"]), **end)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        with pytest.raises((openai.APIError, anthropic.APIStatusError)) as e:
            ask_stream(url, api, extra)
    why = "scripted mid-stream failure" if "error_after" in end else "cut short"
    assert why in str(e.value) and "unfinished sentence were not sent" in str(e.value)


@pytest.mark.parametrize("api", APIS)
def test_block_is_refused_in_each_apis_shape_with_the_claims_withheld(api):
    extra = {"citebound": {"passages": EX["passages"]}}
    cfg = ServeConfig(verifier="lexical", action="block", block_above=0.1)
    with FakeAPIs(lambda b: Turn(words(EX["answer"]))) as up, \
            running(ServeConfig(**{**cfg.__dict__, "upstream": up.base_url})) as url:
        with pytest.raises((openai.PermissionDeniedError, anthropic.PermissionDeniedError)) as e:
            ask(url, api, extra)
        body = e.value.response.json()
        assert body["citebound"]["report"]["blocked"] and all(a["claim"] is None for a in body["citebound"]["report"]["audit"])
        assert (body["error"]["type"] == "permission_error") if api == "messages" else (body["error"]["code"] == "blocked")
        _, events = ask_stream(url, api, extra)
    # streamed, block stops at the first segment that takes the budget so far past 0.1: the invalid [4]
    rep = stream_report(events)
    assert rep["blocked"] and all(a["claim"] is None for a in rep["audit"])
    ends = [e.get("delta", {}).get("stop_reason") for e in events if e.get("type") == "message_delta"] if api == "messages" \
        else [e["response"]["incomplete_details"]["reason"] for e in events if e.get("type") == "response.incomplete"]
    assert ends == ["refusal"] if api == "messages" else ends == ["content_filter"]


@pytest.mark.parametrize("api,header,sent", [("responses", "authorization", "Bearer sk-own"),
                                             ("messages", "x-api-key", "sk-own")])
def test_the_proxys_own_credentials_reach_the_upstream_in_the_apis_header(api, header, sent, tmp_path):
    with FakeAPIs(lambda b: Turn(["A [1]."])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, upstream_auth="own", upstream_key="sk-own")) as url:
        ask(url, api, {"citebound": {"passages": ["A."]}})
    got = {k.lower(): v for k, v in up.requests[-1]["headers"].items()}
    assert got[header] == sent and "sk-client" not in json.dumps(got)
    assert "citebound" not in up.requests[-1]["body"]


# ---------------------------------------------------------------- citations carried as data, worked by hand

P = ["Aspirin irreversibly inhibits platelet cyclooxygenase.", "Statins lower LDL cholesterol in adults."]


def cite(text: str, index: int = 0) -> dict:
    return {"type": "char_location", "cited_text": text, "document_index": index, "document_title": None,
            "start_char_index": 0, "end_char_index": len(text)}


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_cited_text_supports_fails_or_is_reattributed(stream):
    """Lexical support is the share of the claim's words in the window: "Statins lower LDL cholesterol in adults"
    quoted for itself verifies; quoting P[0] instead fails and moves to passage 2 (P[1], base 1); quoting an
    unrelated text with no passage that supports it is flagged. Each sentence is cited, so none is uncited."""
    answers = {"ok": ("Statins lower LDL cholesterol in adults.", P[1], "verified", None),
               "moved": ("Statins lower LDL cholesterol in adults.", P[0], "reattributed", 2),
               "bad": ("Unicorns sing opera.", "Dolphins sleep with one eye open.", "flagged", None)}
    extra = {"citebound": {"passages": P}}
    def turn(body):
        text, quoted, _, _ = answers[body["messages"][0]["content"]]
        return Turn([text], [cite(quoted)])

    with FakeAPIs(turn) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        for name, (text, quoted, action, moved) in answers.items():
            if stream:
                body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": name}], "stream": True} | extra
                r = httpx.post(f"{url}/v1/messages", json=body, timeout=60)
                rep = stream_report(sse_data(r))
            else:
                m = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0).messages.create(
                    model="m", max_tokens=5, messages=[{"role": "user", "content": name}], extra_body=extra)
                rep = m.model_extra["citebound"]["report"]
                assert m.content[0].text == text  # annotate leaves the text as written
                assert m.content[0].citations[0].model_extra["citebound"]["action"] == action
            (a,) = rep["audit"]
            assert (a["action"], a["new_pointer"], a["cited"]) == (action, moved, 3 if quoted not in P else P.index(quoted) + 1)
            assert rep["n_citations"] == 1 and rep["uncited"] == 0 and rep[action] == 1
            assert rep["review_budget"] == (1.0 if action == "flagged" else 0.0)


def test_remove_takes_out_the_sentence_of_a_failed_cited_text_and_block_refuses():
    extra = {"citebound": {"passages": P}}
    text = "Unicorns sing opera."
    with FakeAPIs(lambda b: Turn([text], [cite("Dolphins sleep.")])) as up:
        with running(ServeConfig(verifier="lexical", upstream=up.base_url, action="remove")) as url:
            got, rep, m = ask(url, "messages", extra)
            assert got == "" and rep["removed_sentences"] == 1 and rep["flagged"] == 1
        with running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.5)) as url:
            with pytest.raises(anthropic.PermissionDeniedError):
                ask(url, "messages", extra)


@pytest.mark.parametrize("stream", [False, True])
def test_responses_annotations_a_url_citation_is_unchecked_and_a_file_citation_is_checked(stream):
    """"Statins lower LDL cholesterol in adults." with a file_citation on file f1, whose search result holds every
    word of it (verified), and "Aspirin is old." with a url_citation (no text: unverified, unreadable). Two
    citations, one failed: budget 1/2. The search result is passage 3 (after the request's two)."""
    text = "Statins lower LDL cholesterol in adults. Aspirin is old."
    notes = [{"type": "file_citation", "file_id": "f1", "filename": "s.txt", "index": 40},
             {"type": "url_citation", "url": "https://example.org", "title": "t", "start_index": 41, "end_index": 56}]
    results = [{"file_id": "f1", "filename": "s.txt", "score": 0.9, "attributes": {},
                "text": "Statins lower LDL cholesterol in adults with diabetes."}]
    extra = {"citebound": {"passages": P}}
    with FakeAPIs(lambda b: Turn(words(text), notes, results)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        if stream:
            got, events = ask_stream(url, "responses", extra)
            rep = stream_report(events)
            done = [e for e in events if e.get("type") == "response.completed"][0]["response"]
            annotations = done["output"][-1]["content"][0]["annotations"]
        else:
            got, rep, r = ask(url, "responses", extra)
            annotations = r.model_dump()["output"][-1]["content"][0]["annotations"]
    assert got == text
    assert [(a["action"], a["cited"]) for a in rep["audit"]] == [("verified", 3), ("unverified", -1)]
    assert rep["audit"][1]["unreadable"] and rep["n_citations"] == 2 and rep["unverified"] == 1 and rep["uncited"] == 0
    assert rep["review_budget"] == 0.5
    assert [a["citebound"]["action"] for a in annotations] == ["verified", "unverified"]
    assert [a.get("index", a.get("end_index")) for a in annotations] == [40, 56]


@pytest.mark.parametrize("bad", [
    {"type": "url_citation", "url": "u", "title": "t", "start_index": -5, "end_index": 10 ** 9},
    {"type": "url_citation", "url": "u", "title": "t", "start_index": 3, "end_index": True},
    {"type": "file_citation", "file_id": "nope", "filename": "x", "index": 2},
    "not an object"])
def test_hostile_annotations_are_counted_unchecked_never_a_500(bad):
    text = "Statins lower LDL cholesterol [2]. Aspirin is old."
    notes = [bad, {"type": "url_citation", "url": "u", "title": "t", "start_index": 0, "end_index": 20}]
    with FakeAPIs(lambda b: Turn(words(text), notes)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": "q", "citebound": {"passages": P}}, timeout=60)
    assert r.status_code == 200, r.text
    rep = r.json()["citebound"]["report"]
    assert rep["n_citations"] == 1 + sum(isinstance(n, dict) for n in notes)  # [2] and each annotation object
    assert rep["unverified"] == sum(isinstance(n, dict) for n in notes)


def test_anthropic_documents_in_the_request_are_passages_and_errors_are_in_anthropics_shape():
    doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": P[1]}, "title": "d"}
    with FakeAPIs(lambda b: Turn(["Statins lower LDL cholesterol in adults [1]."])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        c = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        m = c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": [doc, {"type": "text", "text": "q"}]}])
        assert m.model_extra["citebound"]["report"]["verified"] == 1
        with pytest.raises(anthropic.BadRequestError, match="no passages"):
            c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "q"}])
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "messages": []})  # max_tokens missing
        assert r.status_code == 422 and r.json()["type"] == "error" and "max_tokens" in r.json()["error"]["message"]
        with pytest.raises(openai.BadRequestError, match="no passages"):
            openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0).responses.create(model="m", input="q")


def test_annotation_positions_follow_the_guarded_text():
    """"[9]" points past the two passages, and P[1] (passage 2) holds every word of the claim: it becomes
    "[2 (was 9)]", 8 characters more. The url_citation over the second sentence (35-50) moves to 43-58; the
    file_path before the marker (at 5) stays."""
    text = "Statins lower LDL cholesterol [9]. Aspirin is old."
    notes = [{"type": "file_path", "file_id": "f", "index": 5},
             {"type": "url_citation", "url": "u", "title": "t", "start_index": 35, "end_index": 50}]
    with FakeAPIs(lambda b: Turn(words(text), notes)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        got, rep, r = ask(url, "responses", {"citebound": {"passages": P}})
    ann = r.model_dump()["output"][-1]["content"][0]["annotations"]
    assert got == "Statins lower LDL cholesterol [2 (was 9)]. Aspirin is old."
    assert (ann[0]["index"], ann[1]["start_index"], ann[1]["end_index"]) == (5, 43, 58) and len(got) == 58
    assert rep["n_citations"] == 2 and rep["reattributed"] == 1 and rep["unverified"] == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_block_citation_cites_the_blocks_last_sentence(stream):
    """A text block of two sentences whose citation quotes P[1]: it attaches at the block's end, so it cites
    "Statins lower LDL cholesterol in adults." (verified); "Aspirin is old." cites nothing (uncited, budget 1/2)."""
    with FakeAPIs(lambda b: Turn(["Aspirin is old. Statins lower LDL cholesterol in adults. "], [cite(P[1])])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        if stream:
            rep = stream_report(ask_stream(url, "messages", {"citebound": {"passages": P}})[1])
        else:
            rep = ask(url, "messages", {"citebound": {"passages": P}})[1]
    (a,) = rep["audit"]
    assert (a["action"], a["sentence_index"], a["claim"]) == ("verified", 1, "Statins lower LDL cholesterol in adults.")
    assert rep["uncited"] == 1 and rep["uncited_sentences"] == [[0, 15]] and rep["review_budget"] == 0.5


def test_overlapping_annotations_a_lone_surrogate_and_a_document_past_the_documents():
    """Two url_citations over the same range are two unchecked citations; a citation whose document_index is past
    the request's documents is still checked against its cited_text; a lone surrogate in the upstream's text is a
    502 naming it in Anthropic's shape, never a 500."""
    text = "Statins lower LDL cholesterol in adults. Aspirin is old."
    same = {"type": "url_citation", "url": "u", "title": "t", "start_index": 0, "end_index": 40}
    with FakeAPIs(lambda b: Turn(words(text), [same, dict(same)])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        rep = ask(url, "responses", {"citebound": {"passages": P}})[1]
    assert rep["n_citations"] == 2 and rep["unverified"] == 2 and rep["uncited"] == 1  # "Aspirin is old."
    assert rep["review_budget"] == 1.0
    far = cite(P[1], index=99)
    turns = {"far": Turn(["Statins lower LDL cholesterol in adults."], [far]), "lone": Turn(["Statins \ud800 lower [1]."])}
    with FakeAPIs(lambda b: turns[b["messages"][0]["content"]]) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        c = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0)
        m = c.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "far"}],
                              extra_body={"citebound": {"passages": P}})
        assert [a["action"] for a in m.model_extra["citebound"]["report"]["audit"]] == ["verified"]
        r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 5, "citebound": {"passages": P},
                                                   "messages": [{"role": "user", "content": "lone"}]}, timeout=60)
    assert r.status_code in (422, 502) and r.json()["type"] == "error" and "surrogate" in r.json()["error"]["message"]


def test_remove_under_responses_moves_the_annotations_of_the_kept_sentences():
    """Under remove, "Unicorns sing opera loudly tonight [1]." (flagged: no passage has its words) goes with the
    space after it (40 characters); the file_citation at the end of the kept sentence (80) moves to 40. A citation
    with no text fails closed, so remove would take its sentence too: this one's file text is in the response."""
    text = "Unicorns sing opera loudly tonight [1]. Statins lower LDL cholesterol in adults."
    notes = [{"type": "file_citation", "file_id": "f1", "filename": "s.txt", "index": 80}]
    results = [{"file_id": "f1", "filename": "s.txt", "score": 0.9, "attributes": {},
                "text": "Statins lower LDL cholesterol in adults with diabetes."}]
    with FakeAPIs(lambda b: Turn(words(text), notes, results)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="remove")) as url:
        got, rep, r = ask(url, "responses", {"citebound": {"passages": P}})
    (a,) = r.model_dump()["output"][-1]["content"][0]["annotations"]
    assert got == "Statins lower LDL cholesterol in adults." and a["index"] == 40 and a["citebound"]["action"] == "verified"
    assert rep["removed_sentences"] == 1 and rep["flagged"] == 1 and rep["verified"] == 1


def test_the_audit_page_shows_citations_carried_as_data():
    """The library's face of a structured check: "Statins lower LDL cholesterol in adults." quoting P[1] (verified,
    passage 2) and "Aspirin is old." with a url_citation (unverified, unreadable): the page has a chip for each where
    it attaches, labelled with its kind, and a row for each."""
    from citebound.guarding import structured
    from citebound.guarding.audit_page import AuditEntry, render_audit_page

    text = "Statins lower LDL cholesterol in adults. Aspirin is old."
    cites = [structured.Attached(40, P[1], "content[0].citations[0] (char_location)"),
             structured.Attached(56, None, "annotations[0] (url_citation)")]
    guarded, report = structured.guard_with(Guard("lexical"), text, cites, P)
    page = render_audit_page([AuditEntry("a", text, guarded, report.to_dict())])
    assert page.count('data-outcome="verified"') == 2 and page.count('data-outcome="unverified"') == 2  # chip + row
    assert ">2 char_location<" in page and ">url_citation<" in page
    assert report.n_citations == 2 and report.uncited == 0 and report.review_budget == 0.5


@pytest.mark.parametrize("api,raw,why", [
    ("responses", b'data: [1, 2]\n\n', "not a JSON object"),
    ("responses", b'data: {"type": "response.output_text.delta", "delta": 5}\n\n', "not a string"),
    ("responses", b'data: {"type": "response.failed", "response": {"error": {"message": "boom"}}}\n\n', "boom"),
    ("messages", b'event: x\ndata: "text"\n\n', "not a JSON object"),
    ("messages", b'data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}\n\n'
                 b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}}\n\n',
     "not a string"),
    ("messages", b'data: {"type": "message_start", "message": {}}\n\ndata: {"not json', "cut short"),
])
def test_a_hostile_event_stream_ends_in_an_error_the_sdk_raises(api, raw, why):
    with FakeAPIs(lambda b: Turn([], raw=raw)) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        with pytest.raises((openai.APIError, anthropic.APIStatusError), match=why):
            ask_stream(url, api, {"citebound": {"passages": P}})


MS = b'data: {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}\n\n'


@pytest.mark.parametrize("api,raw", [
    ("messages", MS + b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
                      b'"text": "SECRET unchecked."}}\n\n'),
    ("messages", b'data: {"type": "message_start", "message": {"content": [{"type": "text", "text": "SECRET."}]}}\n\n'),
    ("responses", b'data: {"type": "response.created", "response": {"output": [{"type": "message", "content": '
                  b'[{"type": "output_text", "text": "SECRET in created."}]}]}}\n\n'
                  b'data: {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", '
                  b'"content": [{"type": "output_text", "text": "SECRET in added."}]}}\n\n'
                  b'data: {"type": "response.content_part.added", "output_index": 0, "content_index": 0, '
                  b'"part": {"type": "output_text", "text": "SECRET in part."}}\n\n'
                  b'data: {"type": "response.completed", "response": {"output": [{"type": "message", "content": '
                  b'[{"type": "output_text", "text": "SECRET never streamed."}]}]}}\n\n'),
])
def test_text_outside_the_streamed_deltas_never_reaches_the_client(api, raw):
    """Text an upstream puts where no delta carries it (a delta with no block, a message_start with content, an item
    or part or response that arrives filled) is refused or blanked: none of it reaches the client unchecked."""
    with FakeAPIs(lambda b: Turn([], raw=raw)) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        body = ({"model": "m", "input": "q"} if api == "responses" else
                {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]})
        r = httpx.post(f"{url}/v1/{api}", json=body | {"stream": True, "citebound": {"passages": P}}, timeout=60)
    assert "SECRET" not in r.text, r.text[:500]
    events = sse_data(r)
    assert events[-1]["type"] == ("error" if api == "messages" else "citebound.report")  # refused, or blanked


@pytest.mark.parametrize("api", APIS)
def test_a_served_verifier_that_fails_leaves_every_citation_unverified_streamed_and_not(api):
    """The served verifier answers garbage (not JSON) once the service is up: each API still answers 200, every
    citation unverified (never verified: "could not verify" is not "verified"), streamed as unstreamed, and the
    verifier saw the requests (so it was asked, not skipped)."""
    import citebound
    from tests.fake_classifier import FakeClassifier

    answer = "Topic alpha holds [1]. Topic beta holds [2]. Nothing cited here."
    passages = ["Topic alpha holds.", "Topic beta holds."]
    extra = {"citebound": {"passages": passages}}
    with FakeClassifier() as model:
        scorer = citebound.load_scorer("remote_nli", overrides={"url": model.url, "model": model.model,
                                                                "max_retries": 0})
        with FakeAPIs(lambda b: Turn(words(answer))) as up, \
                running(ServeConfig(verifier="remote_nli", upstream=up.base_url), scorer=scorer) as url:
            ok_text, ok_rep, _ = ask(url, api, extra)  # the model serving: both verified
            model.behaviour = "notjson"
            got, rep, _ = ask(url, api, extra)
            streamed, events = ask_stream(url, api, extra)
        asked = [r for r in model.requests if r["path"] == "/classify"]
    assert (ok_rep["verified"], ok_rep["unverified"]) == (2, 0) and ok_text == answer
    for r in (rep, stream_report(events)):
        assert (r["n_citations"], r["verified"], r["unverified"], r["flagged"], r["uncited"]) == (2, 0, 2, 0, 1)
        assert [a["action"] for a in r["audit"]] == ["unverified", "unverified"]
        assert all("served verifier" in a["reason"] for a in r["audit"])
        assert r["review_budget"] == pytest.approx(1.0)
    assert got == streamed == "Topic alpha holds [1 UNVERIFIED]. Topic beta holds [2 UNVERIFIED]. Nothing cited here."
    assert len(asked) >= 3


@pytest.mark.parametrize("base", [0, 1])
def test_each_citation_objects_verdict_names_its_passage_at_either_base(base):
    """The `citebound` verdict on each citation object, whole, by hand: a quote of P[0] (the first passage: number
    0 under base 0) for an aspirin claim verifies naming that passage; a quote of P[0] for a statin claim moves to
    P[1] (number base + 1); a quote of a text in no passage is flagged naming the new number it was given (the
    quoted texts are numbered after the request's passages: base + 2)."""
    sents = [("Aspirin irreversibly inhibits platelet cyclooxygenase.", P[0]),
             ("Statins lower LDL cholesterol in adults.", P[0]),
             ("Unicorns sing opera.", "Dolphins sleep with one eye open.")]
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
           "content": [{"type": "text", "text": t + " ", "citations": [cite(q)]} for t, q in sents]}
    extra = {"citebound": {"passages": P, "citation_base": base}}
    with FakeAPIs(lambda b: Turn([""], whole=msg)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]} | extra
        got = httpx.post(f"{url}/v1/messages", json=body, timeout=60).json()
    verdicts = [{k: v for k, v in b["citations"][0]["citebound"].items() if k != "reason"} for b in got["content"]]
    assert [(v["action"], v["passage"], v.get("moved_to")) for v in verdicts] == [
        ("verified", base, None), ("reattributed", base, base + 1), ("flagged", base + 2, None)]
    assert verdicts[0]["score"] == pytest.approx(1.0) and verdicts[1]["moved_score"] == pytest.approx(1.0)


def _block_events(msg: dict) -> list[dict]:
    """A Messages stream of ``msg``'s text blocks, each streamed as its citations then its text."""
    ev = [{"type": "message_start", "message": msg | {"content": [], "stop_reason": None}}]
    for i, b in enumerate(msg["content"]):
        ev.append({"type": "content_block_start", "index": i,
                   "content_block": {"type": "text", "text": ""} | ({"citations": []} if "citations" in b else {})})
        ev += [{"type": "content_block_delta", "index": i, "delta": {"type": "citations_delta", "citation": c}}
               for c in b.get("citations", [])]
        ev += [{"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}},
               {"type": "content_block_stop", "index": i}]
    return ev + [{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                  "usage": {"output_tokens": 1}}, {"type": "message_stop"}]


def _three_blocks() -> dict:
    blocks = [("Unicorns sing opera. ", [cite("Dolphins sleep with one eye open.")]),
              ("Nothing cites this sentence. ", []), ("Statins lower LDL cholesterol in adults. ", [cite(P[1])])]
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "text", "text": t} | ({"citations": c} if c else {}) for t, c in blocks]}


@pytest.mark.parametrize("stream", [False, True])
def test_a_block_citation_after_its_blocks_whitespace_cites_that_block_and_only_the_uncited_sentence_is_uncited(stream):
    """Each block ends in a space, so its citation attaches after the whitespace (at 21, 49, 90 by hand): it cites
    the block's sentence, and the one sentence with no citation is the only uncited one, at [21, 49)."""
    msg = _three_blocks()
    extra = {"citebound": {"passages": P}}
    with FakeAPIs(lambda b: Turn([""], whole=msg, raw=_sse(_block_events(msg)))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "stream": stream} | extra
        r = httpx.post(f"{url}/v1/messages", json=body, timeout=60)
    rep = (stream_report(sse_data(r)) if stream
           else r.json()["citebound"]["report"])
    assert [a["action"] for a in rep["audit"]] == ["flagged", "verified"]
    assert [a["sentence_index"] for a in rep["audit"]] == [0, 2]
    assert (rep["uncited"], rep["n_cited_sentences"], rep["uncited_sentences"]) == (1, 2, [[21, 49]])
    assert rep["review_budget"] == pytest.approx(2 / 3)  # (1 flagged + 1 uncited) / (2 citations + 1 uncited)


def test_remove_counts_uncited_in_the_text_that_is_left():
    """remove takes out the flagged first block's sentence (21 characters with its space): the uncited sentence is
    then at [0, 28) of the text returned, and the statin sentence (at [50, 90) of the upstream's text, [29, 69) of
    the text returned) stays cited."""
    with FakeAPIs(lambda b: Turn([""], whole=_three_blocks())) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="remove")) as url:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "citebound": {"passages": P}}
        got = httpx.post(f"{url}/v1/messages", json=body, timeout=60).json()
    rep = got["citebound"]["report"]
    assert "".join(b["text"] for b in got["content"] if b["type"] == "text") == (
        "Nothing cites this sentence. Statins lower LDL cholesterol in adults.")  # remove trims the end, as the library
    assert (rep["removed_sentences"], rep["flagged"], rep["verified"]) == (1, 1, 1)
    assert (rep["uncited"], rep["n_cited_sentences"], rep["uncited_sentences"]) == (1, 1, [[0, 28]])


@pytest.mark.parametrize("api", ["chat", *APIS])
def test_the_count_headers_carry_each_count_under_its_own_name(api):
    """Distinct counts by hand: [1] verified (P[0] holds every word), [9] and [7] invalid (two passages), [2]
    flagged (P[1] shares no word with the unicorn claim, and no passage does), one sentence uncited: 4 citations,
    budget (1 flagged + 2 invalid + 1 uncited) / (4 + 1) = 0.8."""
    answer = ("Aspirin irreversibly inhibits platelet cyclooxygenase [1]. Nothing cites this. Unicorns sing opera [2]. "
              "Whales hum [9][7].")
    extra = {"citebound": {"passages": P}}
    with FakeAPIs(lambda b: Turn([answer])) as up, FakeOpenAI(lambda b: answer) as chat, \
            running(ServeConfig(verifier="lexical", upstream=(chat if api == "chat" else up).base_url)) as url:
        body = ({"model": "m", "messages": [{"role": "user", "content": "q"}]} if api == "chat" else
                {"model": "m", "input": "q"} if api == "responses" else
                {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]})
        r = httpx.post(f"{url}/v1/{'chat/completions' if api == 'chat' else api}", json=body | extra, timeout=60)
    h = {k.lower().removeprefix("x-citebound-"): v for k, v in r.headers.items() if k.lower().startswith("x-citebound-")}
    assert r.status_code == 200
    assert {k: h[k] for k in ("citations", "flagged", "invalid", "unverified", "uncited", "reattributed",
                              "review-budget")} == {"citations": "4", "flagged": "1", "invalid": "2", "unverified": "0",
                                                    "uncited": "1", "reattributed": "0", "review-budget": "0.8000"}


def test_block_decides_on_the_citations_carried_as_data_too():
    """With --uncited ignore, the text's own marker verifies (budget 0 from the markers alone); the second
    sentence's cited_text quotes a text that does not support it: flagged, budget 1/2 > 0.4, so the answer is
    withheld (403) with both audits in the report."""
    text = "Statins lower LDL cholesterol in adults [2]. Unicorns sing opera."
    with FakeAPIs(lambda b: Turn([text], [cite("Dolphins sleep with one eye open.")])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.4,
                                uncited="ignore")) as url:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}],
                "citebound": {"passages": P}}
        r = httpx.post(f"{url}/v1/messages", json=body, timeout=60)
    assert r.status_code == 403
    rep = r.json()["citebound"]["report"] if "citebound" in r.json() else r.json()["error"]["citebound"]["report"]
    assert [a["action"] for a in rep["audit"]] == ["verified", "flagged"] and rep["review_budget"] == 0.5


@pytest.mark.parametrize("stream", [False, True])
def test_text_runs_split_by_tool_blocks_stay_in_place_and_block_decides_on_the_whole_message(stream):
    """Three text runs split by a tool_use and a server_tool_use block. Alone, the unicorn run's only citation is
    flagged (budget 1 > 0.4); the whole message has 1 flagged of 4 citations: budget 1/4 <= 0.4, so it is not
    blocked. Every block keeps its place and both tool blocks count as unchecked tool calls. Unstreamed, the
    flagged run comes first; streamed, last (a stream blocks on the budget so far, which is 1 after a first
    flagged run: docs/PROXY.md)."""
    aspirin = "Aspirin irreversibly inhibits platelet cyclooxygenase [1]. "
    runs = [[{"type": "text", "text": "Unicorns sing opera [2]. "}],
            [{"type": "text", "text": aspirin + "Statins lower LDL cholesterol in adults [2]. "}],
            [{"type": "text", "text": aspirin}]]
    if stream:
        runs = runs[1:] + runs[:1]
    content = [*runs[0], {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "x"}}, *runs[1],
               {"type": "server_tool_use", "id": "st_1", "name": "web_search", "input": {"query": "y"}}, *runs[2]]
    msg = anthropic_message(content)
    events = [{"type": "message_start", "message": msg | {"content": [], "stop_reason": None}}]
    for i, b in enumerate(content):
        if b["type"] != "text":
            events += [{"type": "content_block_start", "index": i, "content_block": b}, {"type": "content_block_stop", "index": i}]
            continue
        events += [{"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                   {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}},
                   {"type": "content_block_stop", "index": i}]
    events += [{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1}}, {"type": "message_stop"}]
    with FakeAPIs(lambda b: Turn([""], whole=msg, raw=_sse(events))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.4,
                                reattributor=None)) as url:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "stream": stream,
                "citebound": {"passages": P}}
        r = httpx.post(f"{url}/v1/messages", json=body, timeout=60)
    assert r.status_code == 200
    if stream:
        got = sse_data(r)
        rep, calls = stream_report(got), [e for e in got if e.get("type") == "citebound.report"][0]["unchecked_tool_calls"]
        types = [e["content_block"]["type"] for e in got if e.get("type") == "content_block_start"]
        texts = "".join(e["delta"]["text"] for e in got if e.get("type") == "content_block_delta"
                        and e["delta"]["type"] == "text_delta")
    else:
        data = r.json()
        rep, calls = data["citebound"]["report"], data["citebound"]["unchecked_tool_calls"]
        types = [b["type"] for b in data["content"]]
        texts = "".join(b["text"] for b in data["content"] if b["type"] == "text")
    assert types == ["text", "tool_use", "text", "server_tool_use", "text"]
    assert calls == 2 and (stream or r.headers["X-Citebound-Unchecked-Tool-Calls"] == "2")
    assert (rep["n_citations"], rep["flagged"], rep["verified"], rep["blocked"]) == (4, 1, 3, False)
    assert rep["review_budget"] == pytest.approx(1 / 4)
    assert texts == "".join(b["text"] for b in content if b["type"] == "text").replace("opera [2]", "opera [2 UNVERIFIED]")


def test_a_reasoning_item_is_an_unchecked_field_and_an_annotation_at_the_texts_end_cites_the_last_sentence():
    """The output_text ends "... cyclooxygenase. Statins lower LDL." with a file_citation at index 95 (the text's
    length, by hand) quoting the statin text: it cites the last sentence (verified), never the one before."""
    text = "Aspirin irreversibly inhibits platelet cyclooxygenase. Statins lower LDL cholesterol in adults."
    assert len(text) == 95
    resp = json.loads(json.dumps(__import__("fake_apis").response(Turn([text]), "m")))
    resp["output"][0]["content"][0]["annotations"] = [{"type": "file_citation", "file_id": "f1", "filename": "a.txt",
                                                      "index": 95}]
    resp["output"] = [{"type": "reasoning", "id": "rs_1", "summary": []},
                      {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"],
                       "results": [{"file_id": "f1", "filename": "a.txt", "score": 1.0, "text": P[1]}]},
                      *resp["output"]]
    with FakeAPIs(lambda b: Turn([""], whole=resp)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/responses", json={"model": "m", "input": "q", "citebound": {"passages": []}}, timeout=60)
    data = r.json()
    assert data["citebound"]["unchecked_fields"] == ["reasoning"]
    assert r.headers["X-Citebound-Unchecked-Fields"] == "reasoning"
    (a,) = data["citebound"]["report"]["audit"]
    assert (a["sentence_index"], a["claim"], a["action"]) == (1, "Statins lower LDL cholesterol in adults.", "verified")


@pytest.mark.parametrize("api", APIS)
def test_a_streamed_answer_that_restyles_itself_stops_there_in_each_api(api):
    """The default action (annotate): the first sentence goes out; the one holding a stylesheet and the rest are
    withheld, through the API's own SDK and raw; the report is blocked and counts the one sentence sent."""
    text = "Statins lower LDL cholesterol [2]. Aspirin <style>p{display:none}</style>works [1]. More [1]."
    extra = {"citebound": {"passages": P}}
    with FakeAPIs(lambda b: Turn(words(text))) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        got, events = ask_stream(url, api, extra)
    assert got == "Statins lower LDL cholesterol [2]."
    rep = stream_report(events)
    assert rep["blocked"] and "the answer holds a stylesheet" in rep["block_reason"]
    assert "(1 sentences were sent)" in rep["block_reason"]
    assert "display:none" not in json.dumps(events) and "More" not in json.dumps(events)
