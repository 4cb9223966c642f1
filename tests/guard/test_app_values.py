"""The service app's values, worked out by hand (citebound/serving/app.py): which field a refused JSON body names
(the first bad one, a top-level one bare), the nesting depth of siblings, the error shapes at the 4xx/5xx edge, a
request that raised (counted as the 500 it became, and no longer in flight), and a validation error's field and
shape on each API face."""
from __future__ import annotations

import httpx
import pytest

from citebound.serving.app import error_body, json_depth, json_problem

NF = "a non-finite number (NaN, Infinity or out of range) is not valid JSON here"


@pytest.mark.parametrize("body,where", [
    (b'{"x": NaN}', "x"), (b'{"b": NaN, "c": Infinity}', "b"), (b'{"a": [1, NaN, Infinity]}', "a[1]"),
    (b'[{"k": 1}, {"k": -Infinity}]', "[1].k"), (b'{"a": {"b": [0, {"c": 1e999}]}}', "a.b[1].c"), (b"NaN", "body"),
])
def test_a_refused_body_names_its_first_bad_field(body, where):
    assert json_problem(body) == f"{where}: {NF}"


@pytest.mark.parametrize("body,depth", [(b"[[1], [2], [3]]", 2), (b'{"a": {}, "b": {}, "c": [[]]}', 3), (b"[[], []]", 2)])
def test_siblings_do_not_add_to_the_depth(body, depth):
    assert json_depth(body) == depth


@pytest.mark.parametrize("status,kind", [(499, "invalid_request_error"), (500, "api_error"), (504, "api_error")])
def test_messages_errors_are_typed_by_status(status, kind):
    assert error_body("/v1/messages", status, "m", "c") == {"type": "error", "error": {"type": kind, "message": "m", "code": "c"}}


def test_openai_errors_carry_param_and_other_routes_do_not():
    assert error_body("/v1/responses", 500, "m", "c", param="model") == {
        "error": {"message": "m", "type": "citebound_error", "code": "c", "param": "model"}}
    assert error_body("/v1/guard", 422, "m", "c", param="answer", limit="max_answer_chars") == {
        "detail": "m", "limit": "max_answer_chars"}


def test_a_request_that_raised_is_a_counted_500_and_leaves_no_request_in_flight():
    from citebound.serving import create_app
    from citebound.serving.state import ServeConfig
    from tests.service_helpers import serving

    app = create_app(ServeConfig(verifier="lexical", reattributor=None))

    @app.get("/boom")
    async def boom():
        raise RuntimeError("a bug")

    with serving(app) as url:
        for _ in range(3):
            assert httpx.get(url + "/boom", timeout=10).status_code == 500
        state = app.state.citebound
        assert state.in_flight == 0
        metrics = httpx.get(url + "/metrics", timeout=10).text
    assert 'citebound_requests_total{endpoint="other",status="500"} 3.0' in metrics
    assert "citebound_in_flight 1.0" in metrics  # the /metrics request itself


def test_a_validation_error_names_its_field_in_each_faces_shape():
    from citebound.serving import create_app
    from citebound.serving.state import ServeConfig
    from tests.service_helpers import serving

    # the upstream is never reached: every body here fails validation first
    with serving(create_app(ServeConfig(verifier="lexical", reattributor=None, upstream="http://127.0.0.1:9"))) as url:
        chat = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": "x"}, timeout=10)
        resp = httpx.post(url + "/v1/responses", json={"model": 5}, timeout=10)
        msgs = httpx.post(url + "/v1/messages", json={"model": "m", "max_tokens": 5}, timeout=10)
        guard = httpx.post(url + "/v1/guard", json={"answer": 5}, timeout=10)
    assert (chat.status_code, resp.status_code, msgs.status_code, guard.status_code) == (422, 422, 422, 422)
    assert chat.json() == {"error": {"message": "messages: Input should be a valid list", "type": "invalid_request_error",
                                     "code": "invalid_request", "param": "messages"}}
    assert resp.json()["error"]["param"] == "model"
    assert msgs.json() == {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: Field required",
                                                      "code": "invalid_request"}}
    assert guard.json()["detail"][0]["loc"] == ["body", "answer"]
