"""The proxy's upstream client at its boundaries (#56 round 65): which credential header the upstream gets for
each ``upstream_auth`` and API (observed on a recording upstream too: Messages and Responses), an answer of
exactly ``max_upstream_bytes`` taken and one byte more refused, a JSON answer that is not an object refused, a
stream's reads bounded by ``upstream_read_timeout_s`` (not the request timeout), and the server-sent-event reader
on CRLF line ends, a line or a character split across reads, and ``data:`` without its space."""
from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import httpx
import pytest

pytest.importorskip("fastapi")
from fake_apis import FakeAPIs, Turn  # noqa: E402
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from citebound.serving.upstream import (  # noqa: E402
    DONE,
    StreamFailure,
    UpstreamError,
    open_upstream,
    sse_events,
    upstream_headers,
    upstream_json,
)
from citebound.text.limits import Limits  # noqa: E402

OWN = "sk-own-0123456789"


@pytest.mark.parametrize("auth,sent,header,want", [
    ("own", None, "authorization", {"Authorization": f"Bearer {OWN}"}),
    ("own", "Bearer sk-client", "authorization", {"Authorization": f"Bearer {OWN}"}),
    ("own", None, "x-api-key", {"x-api-key": OWN}),
    ("own", "sk-client", "x-api-key", {"x-api-key": OWN}),
    ("client", "Bearer sk-client", "authorization", {"Authorization": "Bearer sk-client"}),
    ("client", None, "authorization", {}),
    ("client", "sk-client", "x-api-key", {"x-api-key": "sk-client"}),
    ("client", "", "x-api-key", {}),
    ("client-else-own", "Bearer sk-client", "authorization", {"Authorization": "Bearer sk-client"}),
    ("client-else-own", None, "authorization", {"Authorization": f"Bearer {OWN}"}),
    ("client-else-own", "", "x-api-key", {"x-api-key": OWN}),
    ("client-else-own", "sk-client", "x-api-key", {"x-api-key": "sk-client"}),
])
def test_the_credential_header_for_each_mode_and_api(auth, sent, header, want):
    cfg = SimpleNamespace(upstream_auth=auth, upstream_key=OWN)
    assert upstream_headers(cfg, sent, header) == want


def _headers(request: dict) -> dict:
    return {k.lower(): v for k, v in request["headers"].items()}


@pytest.mark.parametrize("auth", ["own", "client-else-own"])
def test_anthropic_gets_the_proxys_own_key_as_x_api_key_and_never_the_clients_under_own(auth):
    body = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "q"}],
            "citebound": {"passages": ["Aspirin inhibits COX-1."]}}
    with FakeAPIs(lambda b: Turn(["Aspirin inhibits COX-1 [1]."])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, upstream_auth=auth, upstream_key=OWN)) as url:
        r = httpx.post(f"{url}/v1/messages", json=body, headers={"x-api-key": "sk-client"}, timeout=60)
        assert r.status_code == 200, r.text
        r = httpx.post(f"{url}/v1/messages", json=body, timeout=60)  # no key of the client's
        assert r.status_code == 200, r.text
    first, second = (_headers(q) for q in up.requests)
    assert "authorization" not in first and "authorization" not in second
    assert first["x-api-key"] == (OWN if auth == "own" else "sk-client")
    assert second["x-api-key"] == OWN


def test_the_responses_upstream_gets_the_proxys_key_under_own_whatever_the_client_sends():
    body = {"model": "m", "input": "q", "citebound": {"passages": ["Aspirin inhibits COX-1."]}}
    with FakeAPIs(lambda b: Turn(["Aspirin inhibits COX-1 [1]."])) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, upstream_auth="own", upstream_key=OWN)) as url:
        r = httpx.post(f"{url}/v1/responses", json=body, headers={"Authorization": "Bearer sk-client"}, timeout=60)
        assert r.status_code == 200, r.text
    assert [_headers(q)["authorization"] for q in up.requests] == [f"Bearer {OWN}"]


def _state(cap: int = 8 * 1024 * 1024, read_s: int = 60, request_s: float = 60.0):
    limits = Limits(max_upstream_bytes=cap, upstream_read_timeout_s=read_s)
    return SimpleNamespace(cfg=SimpleNamespace(limits=limits, request_timeout_s=request_s), http=httpx.AsyncClient())


async def _json(state, url):
    try:
        return await upstream_json(state, "POST", url, {}, {"model": "m"})
    finally:
        await state.http.aclose()


def test_an_answer_of_exactly_max_upstream_bytes_is_taken_and_one_byte_more_is_not():
    answer = {"id": "x", "pad": "y" * 300}
    size = len(json.dumps(answer).encode())  # what the fake writes, byte for byte
    with FakeAPIs(lambda b: Turn([], whole=answer)) as up:
        url = up.base_url + "/responses"
        assert asyncio.run(_json(_state(cap=size), url)) == answer
        with pytest.raises(UpstreamError, match=f"over {size - 1} bytes"):
            asyncio.run(_json(_state(cap=size - 1), url))


@pytest.mark.parametrize("whole", [[1, 2], "text", 3])
def test_a_json_answer_that_is_not_an_object_is_the_upstreams_error(whole):
    with FakeAPIs(lambda b: Turn([], whole=whole)) as up:
        with pytest.raises(UpstreamError, match="not an object"):
            asyncio.run(_json(_state(), up.base_url + "/responses"))


def test_a_streams_reads_are_bounded_by_the_read_timeout_not_the_request_timeout():
    async def read(url):
        state = _state(read_s=1, request_s=60.0)
        try:
            resp = await open_upstream(state, url, {"model": "m"}, {})
            try:
                return [e async for e in sse_events(resp, 10**6)]
            finally:
                await resp.aclose()
        finally:
            await state.http.aclose()

    # each event waits 2.5 s before the next: past the 1 s read timeout, far inside the 60 s request timeout
    with FakeAPIs(lambda b: Turn(["a", "b"], event_pause_s=2.5)) as up:
        t = time.perf_counter()
        with pytest.raises(httpx.ReadTimeout):
            asyncio.run(read(up.base_url + "/responses"))
        assert time.perf_counter() - t < 10


def _events(chunks: list[bytes]) -> list:
    async def go():
        async def body():
            for c in chunks:
                yield c

        resp = httpx.Response(200, content=body())
        return [e async for e in sse_events(resp, 10**6)]

    return asyncio.run(go())


def test_crlf_line_ends_dispatch_every_event():
    raw = b'data: {"a": 1}\r\n\r\ndata: {"a": 2}\r\n\r\ndata: [DONE]\r\n\r\n'
    assert _events([raw]) == [{"a": 1}, {"a": 2}, DONE]


def test_a_line_split_across_reads_is_read_whole():
    raw = b'event: x\ndata: {"text": "Aspirin inhibits COX-1"}\n\ndata: {"n": 22}\n\n'
    for cut in range(1, len(raw)):
        assert _events([raw[:cut], raw[cut:]]) == [{"text": "Aspirin inhibits COX-1"}, {"n": 22}], cut
    assert _events([raw[:5], raw[5:9], raw[9:30], raw[30:]]) == [{"text": "Aspirin inhibits COX-1"}, {"n": 22}]


def test_data_without_a_space_after_the_colon_keeps_its_first_character():
    assert _events([b'data:{"a": 1}\n\ndata:  {"b": 2}\n\n']) == [{"a": 1}, {"b": 2}]


def test_a_character_split_across_reads_is_decoded_and_bad_utf8_is_refused():
    raw = 'data: {"t": "β-lactam µg"}\n\n'.encode()
    beta = raw.index("β".encode())
    assert _events([raw[:beta + 1], raw[beta + 1:]]) == [{"t": "β-lactam µg"}]
    with pytest.raises(StreamFailure, match="not valid UTF-8"):
        _events([b'data: {"t": "\xff"}\n\n'])


def test_a_key_in_the_upstreams_query_never_reaches_a_client_of_any_api():
    """An upstream configured with ``?api_key=...`` in its URL, at a closed port: each API's 502 names the upstream
    with the key's value as ``***`` (the credentials in userinfo are split off before; a query key is not)."""
    from service_helpers import free_port

    passages = ["Aspirin reduces the risk of heart attacks in adults."]
    ask = {"role": "user", "content": "q"}
    bodies = {"/v1/chat/completions": {"model": "m", "messages": [ask]},
              "/v1/responses": {"model": "m", "input": "q"},
              "/v1/messages": {"model": "m", "max_tokens": 5, "messages": [ask]}}
    port = free_port()
    dead = f"http://127.0.0.1:{port}/v1?api_key=QSECRET-123456789"
    with running(ServeConfig(verifier="lexical", upstream=dead, request_timeout_s=5)) as url:
        for path, body in bodies.items():
            r = httpx.post(url + path, json=body | {"citebound": {"passages": passages}}, timeout=30)
            assert r.status_code == 502, (path, r.text)
            assert "QSECRET" not in r.text and f"upstream http://127.0.0.1:{port}/v1?api_key=*** failed" in r.text, path
