"""An upstream's refusal reaches the client with the upstream's own status (#56, round 85): a status that is the
client's to act on (its request, its key, its rate) is kept, so the client's SDK raises the error it raises
without the proxy (an invalid key is an authentication error at once, never a 502 it would retry); any other
failure is the proxy's 502. Each API, streamed and not, through its own SDK (no retries) and as raw HTTP."""
from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
from loopback_server import LoopbackServer  # noqa: E402
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402

EXTRA = {"citebound": {"passages": ["Statins lower LDL cholesterol in adults."]}}


class Refusing(LoopbackServer):
    """An upstream that answers every request with ``status``, ``sent`` headers and an error body; records each
    request's path and when it came."""

    def __init__(self, status: int):
        self.status, self.paths, self.sent, self.times = status, [], {}, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.paths.append(self.path)
                outer.times.append(time.monotonic())
                data = json.dumps({"error": {"message": f"scripted {outer.status}", "type": "scripted"}}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in outer.sent.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.serve(Handler)


def ask(url: str, api: str, stream: bool) -> httpx.Response:
    body = ({"model": "m", "messages": [{"role": "user", "content": "q"}]} if api == "chat/completions" else
            {"model": "m", "input": "q"} if api == "responses" else
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]})
    return httpx.post(f"{url}/v1/{api}", json=body | EXTRA | {"stream": stream}, timeout=60)


def test_the_upstreams_status_is_kept_for_the_clients_refusals_and_502_for_the_rest():
    with Refusing(200) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        for upstream_status, want in [(400, 400), (401, 401), (404, 404), (429, 429), (500, 502), (503, 502)]:
            up.status = upstream_status
            for api in ("chat/completions", "responses", "messages"):
                for stream in (False, True):
                    up.paths.clear()
                    r = ask(url, api, stream)
                    assert up.paths == [f"/v1/{api}"], (api, stream, upstream_status)
                    assert r.status_code == want, (api, stream, upstream_status, r.text)
                    err = r.json()["error"]
                    assert f"answered {upstream_status}" in err["message"]  # the upstream's status is named
                    assert (r.json().get("type") == "error") is (api == "messages")  # each API's own shape


def test_each_sdk_raises_what_it_raises_without_the_proxy():
    cases = [(401, openai.AuthenticationError, anthropic.AuthenticationError),
             (429, openai.RateLimitError, anthropic.RateLimitError),
             (500, openai.InternalServerError, anthropic.InternalServerError)]
    with Refusing(200) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client", max_retries=0)
        messages = anthropic.Anthropic(base_url=url, api_key="sk-client", max_retries=0).messages
        for status, oa, an in cases:
            up.status = status
            for stream in (False, True):
                up.paths.clear()
                with pytest.raises(oa):
                    chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}],
                                                 extra_body=EXTRA, stream=stream)
                with pytest.raises(oa):
                    chat.responses.create(model="m", input="q", extra_body=EXTRA, stream=stream)
                with pytest.raises(an):
                    messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "q"}],
                                    extra_body=EXTRA, stream=stream)
                assert len(up.paths) == 3, (status, stream)  # no retry reached the upstream


def test_a_refusals_wait_headers_reach_the_client_and_nothing_else_does():
    """Retry-After and retry-after-ms come through on every API, streamed and not, with the status kept or made a
    502; a value over 64 characters or not printable ASCII, and any other header of the refusal, does not."""
    with Refusing(200) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        for status, want in [(429, 429), (503, 502)]:
            up.status = status
            for sent, kept in [({"Retry-After": "7", "retry-after-ms": "7000", "X-Upstream-Secret": "s3"},
                                {"retry-after": "7", "retry-after-ms": "7000"}),
                               ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT", "retry-after-ms": "1" * 65},
                                {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}),
                               # not printable ASCII: a control character, a Latin-1 letter
                               ({"Retry-After": "7\x01", "retry-after-ms": "70\u00e9"}, {}),
                               ({}, {})]:
                up.sent = sent
                for api in ("chat/completions", "responses", "messages"):
                    for stream in (False, True):
                        r = ask(url, api, stream)
                        assert r.status_code == want, (api, stream, status, r.text)
                        got = {k: r.headers[k] for k in ("retry-after", "retry-after-ms") if k in r.headers}
                        assert got == kept, (api, stream, status, sent)
                        assert "x-upstream-secret" not in r.headers


def test_each_sdk_waits_as_long_as_the_upstreams_refusal_says():
    """With one retry allowed, each SDK waits the upstream's Retry-After (2 s) before it tries again: without the
    header reaching it, its own back-off is under a second."""
    with Refusing(429) as up, running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        up.sent = {"Retry-After": "2"}
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client", max_retries=1)
        messages = anthropic.Anthropic(base_url=url, api_key="sk-client", max_retries=1).messages
        calls = [lambda: chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}],
                                                      extra_body=EXTRA),
                 lambda: chat.responses.create(model="m", input="q", extra_body=EXTRA),
                 lambda: messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "q"}],
                                         extra_body=EXTRA)]
        for call, raised in zip(calls, (openai.RateLimitError, openai.RateLimitError, anthropic.RateLimitError)):
            up.times.clear()
            with pytest.raises(raised):
                call()
            assert len(up.times) == 2  # the first try and the one retry
            assert up.times[1] - up.times[0] >= 1.9, up.times


@pytest.mark.parametrize("value, passes", [
    ("", False),  # an empty value says nothing to wait for: dropped, as a header with no value
    ("7", True),  # the shortest
    ("9" * 64, True),  # 64 characters: the longest taken
    ("9" * 65, False),  # one more: dropped
    ("Wed, 21 Oct 2026 07:28:00 GMT", True),  # an HTTP date
])
def test_a_wait_header_is_kept_from_one_to_64_characters(value, passes):
    from citebound.serving.upstream import wait_headers

    got = wait_headers({"retry-after": value, "retry-after-ms": value})
    assert got == ({"retry-after": value, "retry-after-ms": value} if passes else {})
