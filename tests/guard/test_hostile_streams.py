"""Streams an upstream gets wrong, byte by byte (#56): each ends in the API's error event naming what was wrong,
and nothing the guard did not check reaches the client. Also text that arrives where a delta is not expected (a
Messages block that starts with its text) is guarded like a delta, and an unstreamed answer of the wrong shape is
a 502 saying which."""
from __future__ import annotations

import json
import time

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn, _sse  # noqa: E402
from service_helpers import running, sse_data  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from citebound.text.limits import Limits  # noqa: E402

ASPIRIN = "Aspirin irreversibly inhibits platelet cyclooxygenase."
STATINS = "Statins lower LDL cholesterol in adults."
PASS = {"citebound": {"passages": [ASPIRIN, STATINS]}}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "q"}], "stream": True} | PASS
FIRST = (b'data: {"choices": [{"index": 0, "delta": {"content": '
         b'"Aspirin irreversibly inhibits platelet cyclooxygenase [1]. "}}]}\n\n')
# the first sentence is complete only once the next begins: "Secret" starts it, so the first goes out checked
SECOND = b'data: {"choices": [{"index": 0, "delta": {"content": "Secret words"}}]}\n\n'


def chunk(content) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}).encode() + b"\n\n"


@pytest.mark.parametrize("bad,why", [
    (b"data: [1, 2]\n\n", "the upstream sent an event that is not a JSON object"),
    (b'data: {"choices": "many"}\n\n', "the upstream sent a chunk with malformed choices"),
    (b'data: {"choices": [1]}\n\n', "the upstream sent a chunk with malformed choices"),
    (b'data: {"choices": [{"index": 0, "delta": {}}, "x"]}\n\n', "the upstream sent a chunk with malformed choices"),
    (chunk(5), "the upstream sent a non-string delta content"),
    (chunk(["a"]), "the upstream sent a non-string delta content"),
    (b"data: {not json\n\n", "the upstream sent an event that is not JSON: '{not json'"),
    (b"data: NaN\n\n", "the upstream sent an event that is not JSON"),
    (b'data: {"choices": [{"index": 0, "delta": {"content": "caf\xff"}}]}\n\n', "the upstream's stream is not valid UTF-8"),
    (b'data: {"error": {"message": "overloaded"}}\n\n', "the upstream sent an error event: overloaded"),
    (b'data: {"choices": [{"index": 1, "delta": {"content": "x"}}]}\n\n', "more than one choice"),
])
def test_a_chat_stream_gone_wrong_ends_in_an_error_after_only_checked_text(bad, why):
    """The first sentence went out checked; the second was held when the bad event came: it is never sent."""
    raw = FIRST + SECOND + bad + chunk(" more.") + b"data: [DONE]\n\n"
    with FakeAPIs(lambda b: Turn([], raw=raw, event_pause_s=0.02)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    evs = sse_data(r)
    sent = "".join(e["choices"][0]["delta"].get("content") or "" for e in evs if e.get("choices"))
    assert sent == "Aspirin irreversibly inhibits platelet cyclooxygenase [1]."
    err = evs[-1]["error"]
    assert why in err["message"] and err["code"] == "upstream_error", err
    assert "12 characters of an unfinished sentence were not sent" in err["message"]  # " Secret words"
    assert "Secret" not in r.text.replace(err["message"], "")


def test_a_chat_stream_past_max_stream_s_ends_with_code_limit():
    raw = b"".join(chunk("word ") for _ in range(20)) + b"data: [DONE]\n\n"
    with FakeAPIs(lambda b: Turn([], raw=raw, event_pause_s=0.15)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url,
                                limits=Limits(max_stream_s=1))) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    err = sse_data(r)[-1]["error"]
    assert err["code"] == "limit" and "the upstream's stream took longer than 1 s in all (max_stream_s)" in err["message"]


@pytest.mark.parametrize("body,why", [
    (b"[1, 2]", "answered with JSON that is not an object"),
    (json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": 5}}]}).encode(),
     "answered with a non-string message content"),
])
def test_an_unstreamed_chat_answer_of_the_wrong_shape_is_a_502(body, why):
    with FakeAPIs(lambda b: Turn([], whole=None)) as up:
        up.script = lambda b: Turn([], raw=None, whole=json.loads(body))
        with running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT | {"stream": False}, timeout=30)
    assert r.status_code == 502 and why in r.json()["error"]["message"]


def test_a_messages_block_that_starts_with_its_text_is_guarded_like_a_delta():
    """Anthropic may put a block's text in its content_block_start. [2] on the aspirin claim points at the statin
    passage (1 of 5 content terms there... none: score 0), so it is flagged; the client sees only the guarded text,
    in a delta after an empty block start, never the upstream's text as it came."""
    answer = "Aspirin irreversibly inhibits platelet cyclooxygenase [2]."
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    evs = [{"type": "message_start", "message": msg},
           {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": answer}},
           {"type": "content_block_stop", "index": 0},
           {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}},
           {"type": "message_stop"}]
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "stream": True} | PASS
    with FakeAPIs(lambda b: Turn([], raw=_sse(evs))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/messages", json=body, timeout=30)
    out = sse_data(r)
    starts = [e for e in out if e.get("type") == "content_block_start"]
    assert [s["content_block"]["text"] for s in starts] == [""]
    sent = "".join(e["delta"]["text"] for e in out if e.get("type") == "content_block_delta")
    assert sent == "Aspirin irreversibly inhibits platelet cyclooxygenase [2 UNVERIFIED]."
    assert "[2]." not in r.text.split('"original', 1)[0].replace(sent, "")
    (rep,) = [e["report"] for e in out if e.get("type") == "citebound.report"]
    assert (rep["n_citations"], rep["flagged"], rep["verified"]) == (1, 1, 0)
    assert out[-1]["type"] == "message_stop"


def test_a_refused_stream_reads_at_most_4096_bytes_of_the_upstreams_body():
    """A non-200 answer to a stream request: 502, with the first part of the upstream's body (read up to 4096
    bytes, shown up to 2000). The upstream would send 64 MiB: the proxy stops reading, so its writes fail long
    before the end (socket buffers hold a few MiB at most)."""
    import threading
    from http.server import BaseHTTPRequestHandler

    from loopback_server import QuietServer

    written = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(500)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            n = 0
            try:
                for _ in range(1024):
                    self.wfile.write(b"E" * 65536)
                    n += 65536
            except OSError:
                pass
            written.append(n)

        def log_message(self, *a):
            pass

    srv = QuietServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with running(ServeConfig(verifier="lexical", upstream=f"http://127.0.0.1:{srv.server_address[1]}/v1")) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
        for _ in range(100):
            if written:
                break
            time.sleep(0.05)
    finally:
        srv.shutdown()
    assert written and written[0] < 16 << 20, written
    assert r.status_code == 502
    shown = r.json()["error"]
    assert "answered 500" in shown["message"]
    assert r.text.count("E") - shown["message"].count("E") <= 2000 + 5  # the body shown is cut at 2000 characters


@pytest.mark.parametrize("message", ["a string", ["a", "list"], {"content": [{"type": "text", "text": "Secret."}]}])
def test_a_messages_start_that_is_no_empty_message_ends_the_stream_before_any_text(message):
    """message_start must carry a message object with no content (text there would reach the client unchecked):
    a string, a list or a message with content ends the stream with an error, and nothing else is sent."""
    evs = [{"type": "message_start", "message": message},
           {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
           {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Secret words."}},
           {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}], "stream": True} | PASS
    with FakeAPIs(lambda b: Turn([], raw=_sse(evs))) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/messages", json=body, timeout=30)
    out = sse_data(r)
    assert [e["type"] for e in out] == ["error"]
    assert "message_start carries content" in out[0]["error"]["message"] and "Secret" not in r.text


@pytest.mark.parametrize("raw", [FIRST + chunk(" More.") + b"data: [DONE]\n\n", b"data: [DONE]\n\n"])
def test_a_chat_stream_gives_the_role_once_in_its_first_chunk(raw):
    """The role chunk waits for the upstream's first event (it carries its id), and comes once: with two content
    chunks, and with none at all (an upstream that sends only [DONE])."""
    with FakeAPIs(lambda b: Turn([], raw=raw)) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, reattributor=None)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    roles = [k for k, e in enumerate(sse_data(r)) if e.get("choices") and "role" in e["choices"][0]["delta"]]
    assert roles == [0]
