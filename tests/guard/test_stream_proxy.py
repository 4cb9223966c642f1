"""stream: true through the guarding proxy, with the official openai SDK's streaming client against a
scripted streaming upstream: the streamed content equals the unstreamed guarded content (with and without
removal), upstream failures end the stream with an error the SDK raises, a client that goes away stops
the upstream read, every bound holds, block acts on what is not yet sent, and unchecked citations fail
closed."""
import json
import random
import time

import httpx
import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
from failing_scorer import Failing  # noqa: E402
from fake_stream import FakeStreamingOpenAI, Script, sse_bytes  # noqa: E402
from service_helpers import running  # noqa: E402
from stream_cases import PASSAGES, answer, code_point_pieces, pieces  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from citebound.text.limits import Limits  # noqa: E402

PASS = {"citebound": {"passages": PASSAGES, "return_original": True}}


def client(url: str):
    return openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0, timeout=60)


def no_card(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "guarantee_card"}


@pytest.mark.parametrize("action", ["annotate", "remove"])
def test_streamed_content_equals_the_unstreamed_guarded_content(action):
    rng = random.Random(11 if action == "remove" else 12)
    scripts: dict[str, Script] = {}

    def script(body):
        return scripts[body["messages"][0]["content"]]

    with FakeStreamingOpenAI(script) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action=action)) as url:
        c = client(url)
        for i in range(40):
            text = answer(rng)
            ascii_json = i % 2 == 0  # \\uXXXX escapes, pieces may split a surrogate pair; else raw UTF-8 bytes
            parts = pieces(text, rng) if ascii_json else code_point_pieces(text, rng)
            s = Script(parts, ascii_json=ascii_json)
            raw = sse_bytes(s, "fake")
            s.byte_cuts = rng.sample(range(1, len(raw)), min(len(raw) - 1, 25))  # mid-line, mid-character
            scripts[f"q{i}"] = s
            whole = c.chat.completions.create(model="fake", messages=[{"role": "user", "content": f"q{i}"}],
                                              extra_body=PASS)
            got, extra, finish = _stream(c, f"q{i}")
            assert got == whole.choices[0].message.content, (text, parts)
            assert finish == "stop" and extra["original_content"] == text
            assert no_card(extra["report"]) == no_card(whole.model_extra["citebound"]["report"])


def _stream(c, q):
    text, extra, finish = [], None, None
    for chunk in c.chat.completions.create(model="fake", messages=[{"role": "user", "content": q}], stream=True,
                                           extra_body=PASS):
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        extra = (chunk.model_extra or {}).get("citebound") or extra
    return "".join(text), extra, finish


ANSWER = ("Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2]. The reef lost half its coral [3]. "
          "Measles fell after vaccination [4].")


def sentences_as_pieces(text: str) -> list[str]:
    return [w + " " for w in text.split(" ")[:-1]] + [text.split(" ")[-1]]


@pytest.mark.parametrize("end,message", [({"error_after": 10}, "scripted mid-stream failure"),
                                         ({"cut_after": 10}, r"ended without \[DONE\]")])
def test_an_upstream_failure_mid_stream_is_an_error_the_sdk_raises(end, message):
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(ANSWER), **end)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        got = []
        with pytest.raises(openai.APIError, match=message) as e:
            for chunk in client(url).chat.completions.create(model="fake", messages=[], stream=True, extra_body=PASS):
                got.append(chunk.choices[0].delta.content or "")
        # 10 words: "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2]. The " -- the first two
        # sentences went out guarded (the second once "The" began the third); the unfinished third is held
        # and said so, never sent unchecked
        assert "".join(got) == "Statins lower LDL cholesterol [1]. Mitochondria produce ATP [2]."
        assert "characters of an unfinished sentence were not sent" in str(e.value)
        assert e.value.body["code"] == "upstream_error"


@pytest.mark.parametrize("end", [{"error_after": 10}, {"cut_after": 10}])
def test_the_error_that_ends_a_stream_carries_the_report_of_what_went_out(end):
    """The same failure, read as raw events: the error event carries the report of the answer so far, the two
    sentences that went out, each with its one citation checked (the third's words are held, not counted)."""
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(ANSWER), **end)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [], "stream": True, **PASS},
                       timeout=30)
    last = json.loads([x for x in r.text.splitlines() if x.startswith("data: ")][-1][6:])
    assert last["error"]["code"] == "upstream_error"
    rep = last["citebound"]["report"]
    assert (rep["n_sentences"], rep["n_citations"]) == (2, 2)
    assert [a["cited"] for a in rep["audit"]] == [1, 2]


@pytest.mark.slow  # timing-based: in the slow tier, where nothing else shares its run
def test_a_client_that_goes_away_stops_the_upstream_read():
    words = sentences_as_pieces(" ".join(["Statins lower LDL cholesterol [1]."] * 200))
    with FakeStreamingOpenAI(lambda body: Script(words, byte_cuts=list(range(100, 200_000, 100)), pause_s=0.01)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        with httpx.stream("POST", f"{url}/v1/chat/completions", timeout=30,
                          json={"model": "m", "messages": [], "stream": True, **PASS}) as r:
            for _ in r.iter_raw():
                break
        time.sleep(1.5)
        assert up.broken  # the proxy closed the upstream connection: its writes began to fail
        writes = up.writes
        time.sleep(0.5)
        assert up.writes == writes and writes < 1000  # and nothing more was read


@pytest.mark.slow  # the read timeout waits a second
@pytest.mark.parametrize("limits,script,code", [
    (Limits(max_stream_held_chars=200), Script(["word "] * 100), "max_stream_held_chars"),
    (Limits(max_upstream_bytes=2000), Script(sentences_as_pieces(ANSWER * 10)), "max_upstream_bytes"),
    (Limits(upstream_read_timeout_s=1), Script(sentences_as_pieces(ANSWER), byte_cuts=[300], pause_s=3), "ReadTimeout"),
])
def test_the_stream_bounds(limits, script, code):
    with FakeStreamingOpenAI(lambda body: script) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, limits=limits)) as url:
        t0 = time.perf_counter()
        with pytest.raises(openai.APIError, match=code):
            for _ in client(url).chat.completions.create(model="fake", messages=[], stream=True, extra_body=PASS):
                pass
        assert time.perf_counter() - t0 < 10


def test_a_failing_upstream_before_the_stream_starts_is_a_status():
    # nothing listens on port 9: the connection is refused before any event, so the answer is a 502
    with running(ServeConfig(verifier="lexical", upstream="http://127.0.0.1:9/v1")) as url:
        with pytest.raises(openai.APIStatusError) as e:
            client(url).chat.completions.create(model="fake", messages=[], stream=True, extra_body=PASS)
        assert e.value.status_code == 502


def test_block_in_a_stream_withholds_only_what_is_not_yet_sent():
    text = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [1]. Mitochondria produce ATP [2]."
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(text))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.4)) as url:
        got, extra, finish = _stream(client(url), "q")
        assert got == "Statins lower LDL cholesterol [1]." and finish == "content_filter"
        rep = extra["report"]
        assert rep["blocked"] and (rep["n_citations"], rep["flagged"]) == (2, 1) and "not yet sent" in rep["block_reason"]
        # unstreamed, the whole answer (1 of 3 failed: 0.33 <= 0.4) passes; at 0.3 it is a 403 with its report
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(text))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.3)) as url:
        with pytest.raises(openai.PermissionDeniedError, match="citebound blocked the answer") as e:
            client(url).chat.completions.create(model="fake", messages=[], extra_body=PASS)
        assert e.value.response.json()["citebound"]["report"]["n_citations"] == 3
        r = httpx.post(f"{url}/v1/guard", json={"answer": text, "passages": PASSAGES})
        assert r.status_code == 403 and r.json()["report"]["blocked"] and "review budget 0.333" in r.json()["detail"]


@pytest.mark.parametrize("on_error,marker", [("closed", "[1 UNVERIFIED]"), ("open", "[1]")])
def test_a_citation_the_verifier_could_not_check_fails_closed(on_error, marker):
    text = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [1]."
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(text))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, on_error=on_error), scorer=Failing("Unicorns")) as url:
        got, extra, _ = _stream(client(url), "q")
        assert got == f"Statins lower LDL cholesterol [1]. Unicorns sing opera loudly {marker}."
        rep = extra["report"]
        assert (rep["verified"], rep["unverified"], rep["flagged"]) == (1, 1, 0)
        assert rep["review_budget"] == (0.5 if on_error == "closed" else 0.0)
        assert "verifier failed" in rep["audit"][1]["reason"]
        r = httpx.post(f"{url}/v1/guard", json={"answer": text, "passages": PASSAGES}).json()
        assert r["guarded_answer"] == got and r["report"]["unverified"] == 1
        metrics = httpx.get(f"{url}/metrics").text
        assert 'citebound_citations_total{outcome="unverified"} 2.0' in metrics


def _sse(events) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _chunk(delta, finish=None, index=0):
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def test_a_stream_passes_tool_calls_through_and_counts_them_unchecked():
    from tests.guard.test_hostile import Upstream

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    up = Upstream(_sse([_chunk({"role": "assistant", "content": "Statins lower LDL cholesterol [1]. "}),
                        _chunk({"tool_calls": [call]}), _chunk({}, "tool_calls")]))
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url)) as url:
            calls, extra, finish = [], None, None
            for ch in client(url).chat.completions.create(model="m", messages=[], stream=True,
                                                          extra_body={"citebound": {"passages": PASSAGES}}):
                if ch.choices:
                    calls += ch.choices[0].delta.tool_calls or []
                    finish = ch.choices[0].finish_reason or finish
                extra = (ch.model_extra or {}).get("citebound") or extra
    finally:
        up.close()
    assert [c.id for c in calls] == ["call_1"] and finish == "tool_calls"
    assert extra["unchecked_tool_calls"] == 1 and "original_content" not in extra  # only on request


def test_a_stream_with_a_second_choice_ends_in_an_error_and_n_is_refused():
    from tests.guard.test_hostile import Upstream

    up = Upstream(_sse([_chunk({"content": "Statins lower LDL cholesterol [1]. "}),
                        _chunk({"content": "The moon is cheese [1]. "}, index=1), _chunk({}, "stop")]))
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url)) as url:
            with pytest.raises(openai.APIError, match="more than one choice"):
                for _ in client(url).chat.completions.create(model="m", messages=[], stream=True,
                                                             extra_body={"citebound": {"passages": PASSAGES}}):
                    pass
            with pytest.raises(openai.BadRequestError, match="n=2"):
                client(url).chat.completions.create(model="m", messages=[], stream=True, n=2,
                                                    extra_body={"citebound": {"passages": PASSAGES}})
    finally:
        up.close()


def test_a_blocked_stream_leaks_no_withheld_text():
    text = "Statins lower LDL cholesterol [1]. Unicorns sing opera loudly [1]. Mitochondria produce ATP [2]."
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(text))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, action="block", block_above=0.4)) as url:
        raw = httpx.post(f"{url}/v1/chat/completions", timeout=30,
                         json={"model": "m", "messages": [], "stream": True, "citebound": {"passages": PASSAGES}}).text
    assert "Unicorns" not in raw and "opera" not in raw and "Mitochondria" not in raw


@pytest.mark.slow  # waits for the deadline
def test_a_trickling_stream_is_cut_at_its_total_deadline():
    script = Script(sentences_as_pieces(ANSWER * 5), event_pause_s=0.3)
    with FakeStreamingOpenAI(lambda body: script) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, limits=Limits(max_stream_s=2))) as url:
        t0 = time.perf_counter()
        with pytest.raises(openai.APIError, match="max_stream_s"):
            for _ in client(url).chat.completions.create(model="fake", messages=[], stream=True, extra_body=PASS):
                pass
        assert time.perf_counter() - t0 < 6


def test_a_stream_that_restyles_itself_stops_there_through_the_proxy():
    """The default action (annotate) too: the sentence holding a stylesheet, and the rest, are withheld, raw or
    through the SDK; the report is blocked and counts the one sentence sent."""
    text = "Statins lower LDL cholesterol [1]. Unicorns <style>p{display:none}</style>sing [1]. Mitochondria [2]."
    with FakeStreamingOpenAI(lambda body: Script(sentences_as_pieces(text))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        got, extra, finish = _stream(client(url), "q")
        raw = httpx.post(f"{url}/v1/chat/completions", timeout=30,
                         json={"model": "m", "messages": [], "stream": True, "citebound": {"passages": PASSAGES}}).text
    assert got == "Statins lower LDL cholesterol [1]." and finish == "content_filter"
    rep = extra["report"]
    assert rep["blocked"] and "the answer holds a stylesheet" in rep["block_reason"]
    assert "(1 sentences were sent)" in rep["block_reason"]
    assert "Unicorns" not in raw and "display:none" not in raw and "Mitochondria" not in raw
