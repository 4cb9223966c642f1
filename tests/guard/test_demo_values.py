"""The demo upstream's promises in the fast tier, on a tiny random Llama loaded through the same
``from_pretrained`` path as SmolLM2 (tests/guard/test_demo_upstream.py runs SmolLM2 itself, in the slow tier):
max_tokens capped by the server's limit, a cut at exactly the limit reported as ``length`` in both faces,
generated tokens counted without the prompt, one generation at a time, and a client that leaves stops its
generation at the next token."""
from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("transformers")
httpx = pytest.importorskip("httpx")

MSGS = [{"role": "user", "content": "what do mitochondria produce?"}]


@pytest.fixture(scope="module")
def demo(tiny_llama):
    from citebound.serving.demo_upstream import DemoModel

    model = DemoModel(max_new_tokens=5, path=str(tiny_llama))  # the session's tiny Llama (tests/conftest.py)
    # greedy on these weights never reaches the end-of-sequence token in 300 (checked here, so that "length"
    # below is the cap's doing)
    assert model.tok.eos_token_id == 2
    return model


def test_max_tokens_is_capped_and_counted_without_the_prompt(demo):
    for asked, want in ((3, 3), (5, 5), (12, 5), (None, 5)):
        outcome: dict = {}
        text = "".join(demo.pieces(MSGS, asked, outcome=outcome))
        assert text.strip(), asked
        assert (outcome["tokens"], outcome["finish_reason"]) == (want, "length"), asked


class Recording:
    """The demo model, keeping each request's stop event and outcome."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def pieces(self, messages, max_tokens, stop=None, outcome=None):
        self.calls.append((stop, outcome))
        return self.inner.pieces(messages, max_tokens, stop, outcome)


@pytest.fixture
def served(demo, monkeypatch):
    from citebound.serving.demo_upstream import start_demo_upstream

    model = Recording(demo)
    url, server = start_demo_upstream(model)
    yield url, model
    server.should_exit = True


def test_both_faces_report_a_cut_at_max_tokens_as_length(served):
    url, _ = served
    whole = httpx.post(f"{url}/chat/completions", json={"messages": MSGS, "max_tokens": 4}, timeout=60).json()
    assert whole["choices"][0]["finish_reason"] == "length" and whole["choices"][0]["message"]["content"]
    finish = []
    with httpx.stream("POST", f"{url}/chat/completions", json={"messages": MSGS, "max_tokens": 4, "stream": True},
                      timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                finish.append(json.loads(line[6:])["choices"][0]["finish_reason"])
    assert finish[-1] == "length" and set(finish[:-1]) == {None}


class OneWord(Recording):
    """A model whose answer is one long word: nothing reaches the client before the generation ends."""

    def pieces(self, messages, max_tokens, stop=None, outcome=None):
        yield "".join(super().pieces(messages, max_tokens, stop, outcome))


@pytest.mark.parametrize("words", [True, False], ids=["words", "one-long-word"])
def test_a_client_that_leaves_stops_its_generation(served, demo, monkeypatch, words):
    """Each token takes at least 20 ms (300 take 6 s or more); an unstreamed client that gives up after 0.5 s,
    and a streamed one that reads its first words and goes, each end their generation well before 150 tokens,
    whether or not the model has produced a piece since (a word without a space ends no piece)."""
    url, model = served
    if not words:
        model.__class__ = OneWord
    real = demo.model.forward

    def slow(*a, **kw):
        time.sleep(0.02)
        return real(*a, **kw)

    monkeypatch.setattr(demo.model, "forward", slow)
    monkeypatch.setattr(demo, "max_new_tokens", 300)
    body = {"messages": MSGS, "max_tokens": 300}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{url}/chat/completions", json=body, timeout=0.5)
    if words:
        with httpx.stream("POST", f"{url}/chat/completions", json=body | {"stream": True}, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: ") and '"content": ""' not in line and '"content"' in line:
                    break
    assert len(model.calls) == 1 + words
    for stop, _ in model.calls:
        assert stop.wait(30)
    end = time.monotonic() + 60
    while not demo.lock.acquire(timeout=0.1):  # the last generation has ended
        assert time.monotonic() < end
    demo.lock.release()
    assert all(0 < outcome["tokens"] < 150 for _, outcome in model.calls), [o for _, o in model.calls]


def test_one_generation_at_a_time(demo, monkeypatch):
    spans, real = [], demo.model.generate

    def timed(**kw):
        t0 = time.monotonic()
        try:
            return real(**kw)
        finally:
            spans.append((t0, time.monotonic()))

    monkeypatch.setattr(demo.model, "generate", timed)
    monkeypatch.setattr(demo, "max_new_tokens", 20)
    threads = [threading.Thread(target=lambda: "".join(demo.pieces(MSGS, 20))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    end = time.monotonic() + 60
    while len(spans) < 3 and time.monotonic() < end:  # a reader ends at the streamer's end, before generate returns
        time.sleep(0.01)
    spans.sort()
    assert len(spans) == 3
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans  # no two overlap


class FailingAfterOne(Recording):
    """The demo model whose reading fails after its first piece (as TextIteratorStreamer does when it times out)."""

    def pieces(self, messages, max_tokens, stop=None, outcome=None):
        inner = super().pieces(messages, max_tokens, stop, outcome)

        def gen():
            yield next(inner)
            raise RuntimeError("the streamer timed out")

        return gen()


@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_read_stops_the_generation_in_both_faces(demo, monkeypatch, stream):
    from citebound.serving.demo_upstream import start_demo_upstream

    monkeypatch.setattr(demo, "max_new_tokens", 300)
    model = FailingAfterOne(demo)
    url, server = start_demo_upstream(model)
    try:
        body = {"messages": MSGS, "max_tokens": 300, "stream": stream}
        try:
            with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=30) as r:
                for _ in r.iter_lines():
                    pass
        except httpx.HTTPError:
            pass  # the stream is cut short: what a client sees when the server fails mid-answer
        ((stop, outcome),) = model.calls
        assert stop.wait(10)
        end = time.monotonic() + 60
        while not demo.lock.acquire(timeout=0.1):
            assert time.monotonic() < end
        demo.lock.release()
        assert 0 < outcome["tokens"] < 150, outcome
    finally:
        server.should_exit = True
