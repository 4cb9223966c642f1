"""#56 item 2: effects that must happen, observed where they land: the upstream records what it was sent, the
service's metrics record the status a client that left was answered, a batch's members are seen stopping,
and a withheld answer's text is absent from every report that describes it."""
import base64
import json
import time

import httpx
import pytest
from service_helpers import running
from test_hostile import CHAT, Upstream

from citebound.serving import ServeConfig


@pytest.mark.parametrize("user,password", [("me", "s3cret"), ("me", "p@ss:w0rd"), ("", "tok-only")])
def test_upstream_credentials_arrive_as_basic_auth(user, password):
    """The credentials in --upstream reach the upstream (as HTTP basic auth), an '@' or ':' in the password
    too, and nothing else carries them."""
    from urllib.parse import quote

    up = Upstream(json.dumps({"choices": [{"message": {"content": "Statins lower LDL cholesterol [2]."}}]}).encode())
    try:
        upstream = up.url_with(f"{quote(user, safe='')}:{quote(password, safe='')}")
        with running(ServeConfig(verifier="lexical", upstream=upstream, reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    finally:
        up.close()
    assert r.status_code == 200 and password not in r.text
    sent = up.headers[0]["authorization"]
    assert sent == "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    assert password not in json.dumps(up.bodies[0])


def test_a_client_that_leaves_is_answered_499_as_the_metrics_record():
    from test_behaviours import Hog, _hog_body

    with running(ServeConfig(verifier="lexical", request_timeout_s=60, reattributor=None), scorer=Hog()) as url:
        with pytest.raises(httpx.TimeoutException):
            httpx.post(f"{url}/v1/guard", json=_hog_body("/v1/guard", "Aspirin hog cyclooxygenase."), timeout=0.5)
        metric = 'citebound_requests_total{endpoint="/v1/guard",status="499"} 1.0'
        for _ in range(60):
            if metric in httpx.get(f"{url}/metrics").text:
                break
            time.sleep(0.05)
        assert metric in httpx.get(f"{url}/metrics").text


@pytest.mark.parametrize("stream", [False, True])
def test_a_blocked_answers_text_is_in_no_report_the_client_gets(stream):
    """--action block through the proxy: the report describes the withheld answer, but no claim (the upstream's
    text, which the caller never saw) is in it, streamed or not."""
    content = "Unicorns sing opera loudly [2]. Dragons breathe fire daily [1]."
    if stream:
        events = [{"choices": [{"index": 0, "delta": {"content": content}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        raw = ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()
        up = Upstream(raw, content_type="text/event-stream")
    else:
        up = Upstream(json.dumps({"choices": [{"message": {"content": content}}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, action="block", block_above=0.3,
                                 reattributor=None)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT | {"stream": stream}, timeout=30)
    finally:
        up.close()
    assert "Unicorns" not in r.text and "Dragons" not in r.text
    if not stream:
        body = r.json()
        assert r.status_code == 403 and body["citebound"]["report"]["blocked"]
        assert [a["claim"] for a in body["citebound"]["report"]["audit"]] == [None, None]


@pytest.mark.parametrize("auth,client_sends,want", [
    ("client", "Bearer client-tok", "Bearer client-tok"),
    ("client", None, None),
    ("own", "Bearer client-tok", "Bearer sk-own-123"),
    ("own", None, "Bearer sk-own-123"),
    ("client-else-own", "Bearer client-tok", "Bearer client-tok"),
    ("client-else-own", None, "Bearer sk-own-123"),
])
def test_the_upstream_gets_the_credentials_the_config_chose(auth, client_sends, want):
    """What the upstream receives, recorded there: the client's header as sent, the proxy's own key, or the
    client's else the proxy's; with own, the client's token reaches the upstream nowhere."""
    up = Upstream(json.dumps({"choices": [{"message": {"content": "Statins lower LDL cholesterol [2]."}}]}).encode())
    key = None if auth == "client" else "sk-own-123"
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url_with(""), reattributor=None, upstream_auth=auth,
                                 upstream_key=key)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30,
                           headers={"Authorization": client_sends} if client_sends else {})
    finally:
        up.close()
    assert r.status_code == 200 and "sk-own-123" not in r.text
    assert up.headers[0].get("authorization") == want
    if auth == "own":
        assert "client-tok" not in json.dumps(up.headers[0]) + json.dumps(up.bodies[0])


@pytest.mark.parametrize("args,message", [
    (["--upstream-auth", "own"], "needs --upstream-key-file"),
    (["--upstream-auth", "client", "--upstream-key-file", "KEY"], "never sent with --upstream-auth client"),
    (["--upstream-key-file", "KEY", "--upstream", "http://u:p@127.0.0.1:9/v1"], "keep one"),
])
def test_upstream_credential_options_that_conflict_are_one_line(tmp_path, capsys, args, message):
    from citebound.cli.main import main

    key = tmp_path / "key"
    key.write_text("sk-own-123\n")
    key.chmod(0o600)
    args = [str(key) if a == "KEY" else a for a in args]
    if "--upstream" not in args:
        args += ["--upstream", "http://127.0.0.1:9/v1"]
    assert main(["serve", "--verifier", "lexical", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
