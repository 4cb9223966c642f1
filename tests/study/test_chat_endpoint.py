"""The in-process chat endpoint (paper-qa reaches a local model through it): a batch never holds more than
max_batch requests, usage counts prompt and completion, and a streamed answer's pieces add up to the answer,
leading whitespace included (each read through the openai SDK where a client meets it)."""
import json

import httpx
import openai

from citebound.scoring.chat_endpoint import LocalChatServer, chat_completion, stream_chunks
from citebound.scoring.llm_backends import Completion


class Reverser:
    """Answers each request with its last message reversed (prompt tokens: its message count); records batches."""

    def __init__(self, text=None):
        self.batches, self.text = [], text

    def chat(self, batch):
        self.batches.append([m[-1]["content"] for m in batch])
        return [Completion(self.text if self.text is not None else m[-1]["content"][::-1], len(m), 4) for m in batch]


def test_a_batch_holds_at_most_max_batch_requests_each_answered_its_own():
    backend = Reverser()
    srv = LocalChatServer(backend, model="m", max_batch=2, max_wait_s=0.5)
    futures = [srv.complete([{"role": "user", "content": f"p{i}"}]) for i in range(5)]  # queued before the loop runs
    with srv:
        answers = [f.result(timeout=10).text for f in futures]
    assert answers == ["0p", "1p", "2p", "3p", "4p"]
    assert backend.batches == [["p0", "p1"], ["p2", "p3"], ["p4"]]
    assert (srv.stats.batches, srv.stats.requests, srv.stats.max_batch) == (3, 5, 2)


def test_usage_counts_the_prompt_and_the_completion():
    body = chat_completion(Completion("ok", 3, 4), "m")
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    with LocalChatServer(Reverser(), model="m") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=20)
        r = client.chat.completions.create(model="m", messages=[{"role": "system", "content": "s"},
                                                                {"role": "user", "content": "abc"}])
    assert r.choices[0].message.content == "cba"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (2, 4, 6)


def test_a_streamed_answer_is_its_words_with_their_whitespace_leading_whitespace_included():
    text = "  leading and  double  spaces\n"
    events = [e.decode() for e in stream_chunks(Completion(text, 1, 1), "m")]
    assert events[-1] == "data: [DONE]\n\n"
    deltas = [json.loads(e[len("data: "):])["choices"][0]["delta"] for e in events[:-1]]
    assert deltas[0] == {"role": "assistant", "content": ""} and deltas[-1] == {}
    assert [d["content"] for d in deltas[1:-1]] == ["  ", "leading ", "and  ", "double  ", "spaces\n"]
    with LocalChatServer(Reverser(text), model="m") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=20)
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}], stream=True)
        got = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert got == text


def test_the_answer_names_the_model_the_client_asked_for_and_the_servers_own_when_none_was_asked():
    """paper-qa's litellm checks the model it asked for: a request for "asked" is answered as "asked" (the server
    serves one model under any name), streamed or not; /v1/models lists the server's own name."""
    with LocalChatServer(Reverser(), model="m") as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=20)
        r = client.chat.completions.create(model="asked", messages=[{"role": "user", "content": "ab"}])
        chunks = list(client.chat.completions.create(model="asked", messages=[{"role": "user", "content": "ab"}],
                                                     stream=True))
        listed = [m.id for m in client.models.list()]
        bare = httpx.post(f"{srv.base_url}/chat/completions", json={"messages": [{"role": "user", "content": "ab"}]},
                          timeout=20).json()
    assert (r.model, r.choices[0].message.content) == ("asked", "ba")
    assert {c.model for c in chunks} == {"asked"} and listed == ["m"]
    assert (bare["model"], bare["choices"][0]["message"]["content"]) == ("m", "ba")
