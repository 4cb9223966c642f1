"""A request refused before any route sees it (past max_request_bytes: 413; a non-finite number in its JSON: 422)
is answered in the shape of the API its path belongs to, so each SDK can read it: OpenAI's for chat completions
and Responses, Anthropic's for Messages, ``{"detail": ...}`` elsewhere. A JSON body that starts with whitespace
is still JSON, and still checked."""
import httpx
import pytest

pytest.importorskip("fastapi")
from service_helpers import running  # noqa: E402

from citebound.serving.state import ServeConfig  # noqa: E402
from citebound.text.limits import Limits  # noqa: E402

NAN = b' \n\t{"model": "m", "temperature": NaN, "citebound": {"passages": ["a"]}}'


def _shape(path: str, body: dict) -> tuple:
    """(status shape, code) read as that API's SDK reads it."""
    if path == "/v1/messages":
        return body["type"], body["error"]["code"]
    if path in ("/v1/chat/completions", "/v1/responses"):
        return "openai", body["error"]["code"]
    return "detail", body.get("limit") or body["detail"][:40]


@pytest.fixture(scope="module")
def url():
    with running(ServeConfig(verifier="lexical", upstream="http://127.0.0.1:9", limits=Limits(max_request_bytes=1000))) as u:
        yield u


@pytest.mark.parametrize("path,want", [("/v1/chat/completions", ("openai", "max_request_bytes")),
                                       ("/v1/responses", ("openai", "max_request_bytes")),
                                       ("/v1/messages", ("error", "max_request_bytes")),
                                       ("/v1/guard", ("detail", "max_request_bytes"))])
def test_a_body_past_the_limit_is_a_413_in_the_apis_shape(url, path, want):
    r = httpx.post(url + path, content=b'{"x": "' + b"a" * 2000 + b'"}', headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert _shape(path, r.json()) == want


@pytest.mark.parametrize("path,want", [("/v1/chat/completions", ("openai", "invalid_json")),
                                       ("/v1/responses", ("openai", "invalid_json")),
                                       ("/v1/messages", ("error", "invalid_json"))])
def test_a_non_finite_number_after_leading_whitespace_is_a_422_naming_its_field(url, path, want):
    r = httpx.post(url + path, content=NAN, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert _shape(path, r.json()) == want
    assert "temperature: a non-finite number" in r.text


def test_a_declared_length_past_the_limit_is_refused_before_the_body_is_sent(url):
    """A client declares 1,000,000 bytes (the limit is 1,000) and sends none of them: the answer, a 413 naming the
    declared size, comes at once, without waiting for a body (a client is not made to upload what is refused)."""
    import json
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(b"POST /v1/guard HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000000\r\n\r\n")
        got = b""
        while b"\r\n\r\n" not in got or not got.rstrip().endswith(b"}"):
            chunk = s.recv(65536)  # a server waiting for the body would time out here
            if not chunk:
                break
            got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413"), got
    assert json.loads(body)["detail"].startswith("the request has 1000000 bytes"), body
