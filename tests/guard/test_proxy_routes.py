"""The proxy's other routes, through the openai SDK: GET /v1/models passes the upstream's list through (chat front
ends ask for it first), a failing upstream is a 502 in OpenAI's shape, and every /v1 route the proxy does not
serve is a 404 in the shape of its API (OpenAI's, Anthropic's for /v1/messages), never FastAPI's."""
from __future__ import annotations

import httpx
import pytest

openai = pytest.importorskip("openai")
from fake_openai import FakeOpenAI  # noqa: E402
from service_helpers import free_port, running  # noqa: E402

from citebound.serving import ServeConfig  # noqa: E402


@pytest.fixture
def proxy():
    with FakeOpenAI(lambda req: "Statins lower LDL [1].") as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        yield up, url


def test_the_model_list_passes_through_with_the_clients_credentials(proxy):
    up, url = proxy
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="client-key", max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]
    (got,) = up.gets
    assert got["path"] == "/v1/models" and got["headers"]["Authorization"] == "Bearer client-key"


def test_a_model_list_from_an_upstream_that_is_down_is_a_502_in_openais_shape():
    with running(ServeConfig(verifier="lexical", upstream=f"http://127.0.0.1:{free_port()}/v1")) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.APIStatusError) as e:
            client.models.list()
    assert e.value.status_code == 502 and "upstream http://127.0.0.1:" in str(e.value)


def test_a_route_the_proxy_does_not_serve_is_a_404_in_its_apis_shape(proxy):
    up, url = proxy
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError) as e:
        client.embeddings.create(model="m", input="hi")
    assert "does not serve POST /v1/embeddings" in str(e.value) and "POST /v1/responses" in str(e.value)
    r = httpx.post(f"{url}/v1/completions", json={"model": "m", "prompt": "hi"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = httpx.post(f"{url}/v1/messages/count_tokens", json={"model": "m", "messages": []})
    assert r.status_code == 404
    assert r.json()["type"] == "error" and r.json()["error"]["type"] == "not_found_error"  # Anthropic's shape
    assert "POST /v1/messages/count_tokens" in r.json()["error"]["message"]
    assert not up.requests  # nothing unserved reached the upstream


def test_the_routes_it_serves_are_not_shadowed(proxy):
    _, url = proxy
    assert httpx.get(f"{url}/v1/calibrations").status_code == 200
    r = httpx.post(f"{url}/v1/guard", json={"answer": "Statins lower LDL [1].", "passages": ["Statins lower LDL."]})
    assert r.status_code == 200 and r.json()["report"]["verified"] == 1
    assert httpx.get(f"{url}/readyz").status_code == 200


@pytest.mark.parametrize("upstream,proxied", [
    (None, []),
    ("http://127.0.0.1:9/v1", [("/v1/chat/completions", "post"), ("/v1/messages", "post"), ("/v1/models", "get"),
                               ("/v1/responses", "post")]),
])
def test_the_schema_lists_the_served_routes_and_not_the_catch_all(upstream, proxied):
    """GET /openapi.json (and /docs) lists what the service serves: its own routes, and the proxy's where an
    upstream is set; the route that answers every other /v1 path with a 404 is not an endpoint a client can use.
    The proxy's 404 names the same /v1 routes."""
    from citebound.serving.app import create_app
    from citebound.serving.proxy import SERVED

    own = [("/healthz", "get"), ("/livez", "get"), ("/metrics", "get"), ("/readyz", "get"), ("/v1/calibrations", "get"),
           ("/v1/guard", "post"), ("/v1/monitor", "get"), ("/v1/monitor/labels", "post"), ("/v1/monitor/reset", "post"),
           ("/v1/score", "post")]
    paths = create_app(ServeConfig(verifier="lexical", upstream=upstream)).openapi()["paths"]
    assert sorted((p, m) for p, ms in paths.items() for m in ms) == sorted(own + proxied)
    if proxied:  # the 404's list: the proxy's routes, and the two of the service's own that answer a request
        served = {(path, method.lower()) for method, path in (s.split(" ") for s in SERVED.split(", "))}
        assert served == set(proxied) | {("/v1/guard", "post"), ("/v1/score", "post")}


def test_the_admin_routes_document_a_required_json_body_with_their_fields():
    """The admin routes read their body themselves (after the token check), so their schema is written out for
    /docs: a body is required, with these fields (and which of them are required)."""
    from citebound.serving.app import create_app

    paths = create_app(ServeConfig(verifier="lexical")).openapi()["paths"]
    for path, fields, required in (("/v1/monitor/labels", {"profile", "missed", "unsupported", "group"},
                                    ["missed", "unsupported"]),
                                   ("/v1/monitor/reset", {"profile", "group", "by"}, None)):
        body = paths[path]["post"]["requestBody"]
        assert body["required"] is True, path
        schema = body["content"]["application/json"]["schema"]
        assert set(schema["properties"]) == fields and schema.get("required") == required, path
