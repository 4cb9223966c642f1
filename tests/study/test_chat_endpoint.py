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


def test_a_batch_waits_max_wait_s_from_its_first_request_not_from_its_latest():
    """max_wait_s 1 s: requests at 0, 0.6 and 1.2 s. The first batch closes 1 s after the first request, so the
    third (0.2 s later) is never in it; a wait restarted by each request would still be open at 1.2 s (0.6 + 1).
    The second, 0.6 s in, is in it: a batch that did not wait at all would hold the first alone."""
    import time

    backend = Reverser()
    with LocalChatServer(backend, model="m", max_batch=10, max_wait_s=1.0) as srv:
        futures = []
        for i in range(3):
            futures.append(srv.complete([{"role": "user", "content": f"p{i}"}]))
            if i < 2:
                time.sleep(0.6)
        assert [f.result(timeout=10).text for f in futures] == ["0p", "1p", "2p"]
    first = next(b for b in backend.batches if "p0" in b)
    assert first == ["p0", "p1"], backend.batches  # the second came within the wait, the third after it


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


def test_closing_while_a_batch_gathers_ends_the_batch_thread():
    """A request starts a batch that waits 5 s for company; close() comes first: the request is still answered, and
    the batch thread ends (the close is passed on to the next gather) instead of waiting for ever."""
    backend = Reverser()
    srv = LocalChatServer(backend, model="m", max_batch=4, max_wait_s=5.0).start()
    fut = srv.complete([{"role": "user", "content": "ab"}])
    srv.close()
    assert fut.result(timeout=10).text == "ba"
    loop = srv._threads[1]
    loop.join(timeout=10)
    assert not loop.is_alive()


def test_a_messages_text_is_its_text_parts_only_and_nothing_for_no_content():
    from citebound.scoring.chat_endpoint import message_text

    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "data:,x"}},
             {"type": "text", "text": "b"}, "stray"]
    assert message_text(parts) == "a\nb"
    assert (message_text(None), message_text(""), message_text("plain")) == ("", "", "plain")


def test_a_bad_request_gets_one_response_and_nothing_after_it():
    """A body that is not JSON is answered 400 once; the handler stops there (a second response on the same
    connection would be read by the next request)."""
    import socket

    with LocalChatServer(Reverser(), model="m") as srv:
        host, port = "127.0.0.1", int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection((host, port), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n"
                      b"{nope")
            raw = b""
            while chunk := s.recv(65536):
                raw += chunk
    assert raw.startswith(b"HTTP/1.0 400 ") and raw.count(b"HTTP/1.") == 1, raw
    assert json.loads(raw.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "invalid_request_error"
