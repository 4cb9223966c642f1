"""An upstream's refusal reaches the client with the upstream's own status (#56, round 85): a status that is the
client's to act on (its request, its key, its rate) is kept, so the client's SDK raises the error it raises
without the proxy (an invalid key is an authentication error at once, never a 502 it would retry); any other
failure is the proxy's 502. Each API, streamed and not, through its own SDK (no retries) and as raw HTTP."""
from __future__ import annotations

import json
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
    """An upstream that answers every request with ``status`` and an error body; records each request's path."""

    def __init__(self, status: int):
        self.status, self.paths = status, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.paths.append(self.path)
                data = json.dumps({"error": {"message": f"scripted {outer.status}", "type": "scripted"}}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
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
