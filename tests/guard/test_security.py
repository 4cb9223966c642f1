"""Security properties as a matrix: each property over every place it must hold, the places enumerated
from the code where they can be (the apps' routes), so a new route or error path that forgets one fails.

- credentials in an upstream or endpoint URL never leave: not in a proxy error (streamed or not), not in an
  MCP result, not in a report, not in the service's logs;
- every page escapes what it shows: the audit page (library, CLI, service) with markup in every field,
  and the labelling page's script, whose every HTML insertion goes through its escaper;
- every state-changing route of the service but the three guarding ones needs the admin token; every one
  of the labelling page needs its token, its Host and (where sent) its Origin;
- every file of the shipped models is checked against the pinned digest, not against a digest it carries.
"""
import json
import logging
import re
import subprocess
import sys

import httpx
import pytest

pytest.importorskip("fastapi")
from citebound.serving import ServeConfig  # noqa: E402
from tests.service_helpers import free_port, running  # noqa: E402

P = ["Aspirin reduces the risk of heart attacks in adults.", "Mitochondria produce ATP in cells."]
SECRETS = ["s3cr3t-PASSWORD", "p@ss-with-at", "T" * 700]
CHAT = {"model": "m", "messages": [{"role": "user", "content": "q"}], "citebound": {"passages": P}}


def _creds_url(secret: str, port: int) -> str:
    return f"http://admin:{secret}@127.0.0.1:{port}/v1"


def _leaks(text: str, secret: str) -> bool:
    return secret in text or secret[:12] in text


# ---------------------------------------------------------------- redaction on every error path

@pytest.mark.parametrize("secret", SECRETS, ids=["plain", "with-@", "700-chars"])
def test_credentials_never_leave_by_any_proxy_path_or_log(secret, caplog):
    """A closed port (transport error) and a server that answers 500 with the URL it was called at in
    its body, streamed and not: the client sees none of the credentials, and neither do the logs."""
    from tests.guard.test_hostile import Upstream

    caplog.set_level(logging.DEBUG)
    dead = _creds_url(secret, free_port())
    seen = []
    with running(ServeConfig(verifier="lexical", upstream=dead, request_timeout_s=5)) as url:
        seen.append(httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30).text)
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=CHAT | {"stream": True}, timeout=30) as r:
            seen.append(r.read().decode())
        seen += [httpx.get(f"{url}{p}", timeout=10).text for p in ("/readyz", "/healthz", "/metrics", "/v1/monitor")]
    up = Upstream(json.dumps({"error": {"message": f"bad key for {dead}"}}).encode(), status=500)
    try:
        live = up.url.replace("user:s3cret", f"admin:{secret}")
        with running(ServeConfig(verifier="lexical", upstream=live, request_timeout_s=5)) as url:
            seen.append(httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30).text)
            with httpx.stream("POST", f"{url}/v1/chat/completions", json=CHAT | {"stream": True}, timeout=30) as r:
                seen.append(r.read().decode())
    finally:
        up.close()
    assert all(s for s in seen[:2])  # the errors were answered
    for s in seen:
        assert not _leaks(s, secret), s[:400]
    logs = "\n".join(r.getMessage() + (str(r.exc_info[1]) if r.exc_info else "") for r in caplog.records)
    assert not _leaks(logs, secret)


@pytest.mark.parametrize("face", ["library", "cli", "mcp"])
def test_an_endpoints_credentials_never_reach_a_report_or_an_error(face, tmp_path):
    """The LLM judge at an unreachable endpoint with credentials: every citation is unverified, and the
    reason given (report, stderr, MCP result) names the failure without the secret."""
    secret = "judge-S3CRET-value"
    endpoint = _creds_url(secret, free_port())
    override = [f"endpoint={endpoint}", "api_key_env=", "max_retries=0", "timeout_s=2"]
    if face == "library":
        from citebound import Guard

        try:
            g = Guard(verifier="llm_judge", overrides=dict(o.split("=", 1) for o in override), reattributor=None)
        except Exception as e:  # noqa: BLE001 - a refusal at load must not leak either
            text = str(e)
        else:
            _, rep = g.guard("Aspirin reduces heart attacks [1].", P)
            text = json.dumps(rep.to_dict())
            assert rep.unverified == 1
    elif face == "cli":
        src = tmp_path / "a.json"
        src.write_text(json.dumps({"answer": "Aspirin reduces heart attacks [1].", "passages": P}))
        args = [sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(src), "--verifier", "llm_judge"]
        for o in override:
            args += ["--override", o]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
        text = r.stdout + r.stderr
    else:
        args = [sys.executable, "-m", "citebound.cli.main", "mcp", "--verifier", "llm_judge"]
        for o in override:
            args += ["--override", o]
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                     "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "guard_answer", "arguments": {
                     "answer": "Aspirin reduces heart attacks [1].", "passages": P, "detail": "full"}}}]
        out, err = p.communicate("".join(json.dumps(x) + "\n" for x in lines).encode(), timeout=120)
        text = out.decode() + err.decode()
    assert text and not _leaks(text, secret), text[-600:]


# ---------------------------------------------------------------- escaping on every page

XSS = ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', "</td></tr><iframe src=javascript:alert(1)>"]


def _unescaped(html: str) -> list[str]:
    """What of the hostile payloads became live markup in ``html``: an img or iframe element, an ``on*``
    attribute, or a script element whose code holds the payload's call."""
    from html.parser import HTMLParser

    found: list[str] = []

    class P(HTMLParser):
        in_script = False

        def handle_starttag(self, tag, attrs):
            if tag in ("img", "iframe"):
                found.append(f"<{tag}>")
            found.extend(f"{tag} {k}=" for k, _ in attrs if k.lower().startswith("on"))
            self.in_script = tag == "script"

        def handle_endtag(self, tag):
            self.in_script = False

        def handle_data(self, data):
            if self.in_script and 'alert("x")' in data:
                found.append("script alert")

    P().feed(html)
    return found


def test_the_audit_page_escapes_every_field_in_every_face(tmp_path):
    from citebound import Guard
    from citebound.guarding.audit_page import AuditEntry, render_audit_page

    answer = f"Aspirin reduces heart attacks {XSS[0]} [1]. Mitochondria {XSS[1]} produce ATP [2]. Nothing [7]."
    passages = [{"text": P[0] + XSS[2], "title": XSS[1]}, P[1] + XSS[0]]
    g = Guard(verifier="lexical")
    guarded, rep = g.guard(answer, passages)
    pages = {"library": render_audit_page([AuditEntry(XSS[1], answer, guarded, rep.to_dict())], verifier=XSS[0],
                                          rule=XSS[1], guarantee=XSS[2], failed=[(XSS[0], XSS[2])])}
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": XSS[1], "answer": answer, "passages": passages}) + "\n"
                   + json.dumps({"id": XSS[0], "answer": XSS[2] + " [1].", "passages": []}) + "\n")
    subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(src), "--verifier", "lexical",
                    "--out", str(tmp_path / "o.jsonl"), "--html", str(tmp_path / "a.html")], capture_output=True)
    pages["cli"] = (tmp_path / "a.html").read_text()
    with running(ServeConfig(verifier="lexical")) as url:
        pages["service"] = httpx.post(f"{url}/v1/guard?format=html", json={"answers": [
            {"id": XSS[1], "answer": answer, "passages": passages}, {"id": XSS[0], "answer": "x [1].", "passages": []}]},
            timeout=30).text
    for face, html in pages.items():
        assert "&lt;script&gt;" in html, face  # the payload is shown, as text
        assert _unescaped(html) == [], (face, _unescaped(html))


def test_the_labelling_page_inserts_html_only_through_its_escaper():
    """Every ``innerHTML`` assignment of the labelling page's script builds its markup from literals, the
    escaper ``esc(...)``, and the panel's numbers; any other value (a claim, a passage, a note, a
    guarantee text) inserted raw fails here."""
    from citebound.labelling.app import PAGE

    numbers = {"pn.labelled", "pn.sample_size", "pn.unsupported", "pn.supported", "pn.cant_tell", "pn.alpha", "tau", "fr"}
    assignments = re.findall(r"\.innerHTML\s*=\s*(.*?);\n", PAGE, re.S)
    assert len(assignments) >= 3
    for rhs in assignments:
        exprs = re.findall(r"\$\{([^}]*)\}", rhs)  # template interpolations
        exprs += [x.strip() for x in re.split(r"'[^']*'|\"[^\"]*\"|`[^`]*`|\+", rhs) if x.strip()]  # concatenated terms
        for x in exprs:
            assert x.startswith("esc(") or x in numbers, f"raw value {x!r} inserted as HTML in: {rhs[:120]}"
    assert 'function esc(s){return s.replace(/[&<>"]/g' in PAGE


# ---------------------------------------------------------------- control routes: token, Host, Origin

# guarding stays open (README, "Serve the guard")
OPEN = {"/v1/guard", "/v1/score", "/v1/chat/completions", "/v1/responses", "/v1/messages"}
NOT_SERVED = "/v1/{rest:path}"  # the proxy's 404 for routes it does not serve: it changes nothing
WRITES = {"POST", "PUT", "PATCH", "DELETE"}


def _write_routes(app) -> list[tuple[str, str]]:
    """(method, path) of every state-changing route, included routers walked (FastAPI includes them lazily)."""
    out, todo = set(), list(app.routes)
    while todo:
        r = todo.pop()
        if hasattr(r, "original_router"):
            todo += list(r.original_router.routes)
            continue
        out |= {(m, r.path) for m in (getattr(r, "methods", None) or ()) if m in WRITES}
    return sorted(out)


def test_every_state_changing_service_route_needs_the_admin_token(tmp_path):
    from citebound.serving import create_app

    every = _write_routes(create_app(ServeConfig(verifier="lexical", upstream="http://127.0.0.1:9/v1")))
    assert {p for _, p in every} >= OPEN  # the walk sees the guarding routes too
    routes = [(m, p) for m, p in every if p not in OPEN | {NOT_SERVED}]
    assert {m for m, p in every if p == NOT_SERVED} == WRITES  # every write method of it answers 404, below
    assert ("POST", "/v1/monitor/labels") in routes and ("POST", "/v1/monitor/reset") in routes
    # without the token the body does not matter (401 before it is read); with it, a valid body passes
    bodies = {"/v1/monitor/labels": {"missed": 0, "unsupported": 1}, "/v1/monitor/reset": {"by": "tester"}}
    with running(ServeConfig(verifier="lexical", admin_token="right-token-123")) as url:
        for method, path in routes:
            for headers, body, want in (({}, {"junk": 1}, 401), ({"authorization": "Bearer wrong"}, None, 401),
                                        ({"authorization": "right-token-123"}, bodies.get(path), 401),  # not Bearer
                                        ({"authorization": "Bearer right-token-123"}, bodies.get(path), 200)):
                r = httpx.request(method, url + path, json=body, headers=headers, timeout=30)
                assert r.status_code == want, (method, path, headers, r.status_code, r.text[:200])
    with running(ServeConfig(verifier="lexical", upstream="http://127.0.0.1:9/v1")) as url:
        for method in sorted(WRITES):  # the not-served catch-all: a 404 in OpenAI's shape, whatever is sent
            r = httpx.request(method, f"{url}/v1/monitor/labels/x", json={"missed": 1}, timeout=30)
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (method, r.text[:200])
    with running(ServeConfig(verifier="lexical")) as url:  # no admin token configured: no control at all
        for method, path in routes:
            r = httpx.request(method, url + path, json={"junk": 1}, headers={"authorization": "Bearer x"}, timeout=30)
            assert r.status_code == 403, (method, path)


def test_every_state_changing_labelling_route_checks_token_host_and_origin(tmp_path):
    """The labelling app's write routes, enumerated: a foreign Host (DNS rebinding), a foreign Origin, no
    token and a wrong token are each refused (403) and leave the label file as it was; the page's own
    request passes."""
    import threading

    import uvicorn

    from citebound.cli.label import make_label_session
    from citebound.cli.main import parse
    from citebound.labelling.app import create_label_app
    from tests.guard.test_labelling import answers_file

    port = free_port()
    session = make_label_session(parse(["label", "--input", str(answers_file(tmp_path / "a.jsonl")), "--out",
                                        str(tmp_path / "labels.jsonl"), "--sample", "5", "--seed", "3",
                                        "--verifier", "lexical", "--labeller", "t"]))
    app = create_label_app(session, port=port, token="tok-123")
    routes = _write_routes(app)
    assert ("POST", "/api/label") in routes and ("POST", "/api/undo") in routes
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    base = f"http://127.0.0.1:{port}"
    try:
        import time

        for _ in range(100):
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        item = httpx.get(base + "/api/state", headers={"x-citebound-token": "tok-123"}).json()["item"]["item_id"]
        good = {"x-citebound-token": "tok-123", "origin": base}
        bodies = {"/api/label": {"item_id": item, "judgement": "supported", "note": ""}, "/api/undo": None}
        for method, path in routes:
            for bad in ({"host": "evil.example:80"}, {"origin": "http://evil.example"}, {"x-citebound-token": ""},
                        {"x-citebound-token": "wrong"}):
                before = (tmp_path / "labels.jsonl").read_bytes() if (tmp_path / "labels.jsonl").exists() else b""
                r = httpx.request(method, base + path, json=bodies.get(path), headers=good | bad, timeout=10)
                after = (tmp_path / "labels.jsonl").read_bytes() if (tmp_path / "labels.jsonl").exists() else b""
                # 421 (Misdirected Request) for a Host that is not this server's, 403 for the rest
                assert r.status_code == (421 if "host" in bad else 403) and before == after, (path, bad, r.status_code)
        r = httpx.post(base + "/api/label", json=bodies["/api/label"], headers=good, timeout=10)
        assert r.status_code == 200 and (tmp_path / "labels.jsonl").read_text().count("supported") >= 1
    finally:
        server.should_exit = True
        t.join(10)


# ---------------------------------------------------------------- model files against the pins

def test_every_shipped_model_file_matches_its_pin():
    from citebound import models
    from citebound.models import CONTRADICTION, GRAPHS, SHIPPED, SKELETON_SHA, TOKENIZER, file_sha256

    model, tok, record = models.shipped_graph()
    assert file_sha256(model) == GRAPHS[SHIPPED] and file_sha256(tok) == TOKENIZER and record["sha256"] == GRAPHS[SHIPPED]
    assert file_sha256(models.CONTRADICTION_DIR / "head.onnx") == CONTRADICTION
    assert file_sha256(models.SKELETON) == SKELETON_SHA
    # the pins are the values written in the source, not read from any file beside the model
    src = (models.HERE / "__init__.py").read_text()
    for pin in (GRAPHS[SHIPPED], TOKENIZER, CONTRADICTION, SKELETON_SHA):
        assert src.count(pin) == 1


@pytest.mark.parametrize("what", ["model.onnx", "tokenizer.json", "graph.json digest", "graph.json precision"])
def test_a_file_that_claims_its_own_digest_is_still_refused(what, tmp_path):
    """graph.json saying the tampered model's own sha256 (or another precision) does not make it pass."""
    import shutil

    from citebound.models import GraphTampered, file_sha256, shipped_graph

    model, tok, record = shipped_graph()
    for f in model.parent.iterdir():
        if f.is_file():
            shutil.copy(f, tmp_path / f.name)
    meta = json.loads((tmp_path / "graph.json").read_text())
    if what in ("model.onnx", "tokenizer.json"):
        data = bytearray((tmp_path / what).read_bytes())
        data[len(data) // 3] ^= 1
        (tmp_path / what).write_bytes(bytes(data))
        if what == "model.onnx":
            meta["sha256"] = file_sha256(tmp_path / what)  # the tampered file's own digest
    elif what == "graph.json digest":
        meta["sha256"] = "0" * 64
    else:
        meta["precision"] = "fp32"  # a pinned precision whose pin is not this file's
    (tmp_path / "graph.json").write_text(json.dumps(meta))
    with pytest.raises(GraphTampered):
        shipped_graph(tmp_path)


def test_each_redaction_layer_holds_alone(monkeypatch, caplog):
    """Two layers keep upstream credentials out of logs: the proxy never puts them in a URL (basic auth), and
    the HTTP libraries' log records are redacted. Each is tested with the other off."""
    import logging

    from citebound.scoring import llm_backends
    from tests.guard.test_hostile import Upstream

    secret = "only-the-auth-layer"
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.INFO, logger="httpx")  # importing litellm (other tests do) sets httpx's to WARNING
    # layer 2 alone: a record that names a URL with credentials is redacted once the filter is installed
    llm_backends.install_log_redaction()
    logging.getLogger("httpx").info("HTTP Request: POST %s", f"http://u:{secret}@127.0.0.1:1/v1/chat/completions")
    assert caplog.records and not any(_leaks(r.getMessage(), secret) for r in caplog.records)
    caplog.clear()
    # layer 1 alone: no filter on the HTTP libraries' loggers, and still no credentials in what httpx logs
    for name in ("httpx", "httpcore", "openai"):
        lg = logging.getLogger(name)
        for f in [f for f in lg.filters if isinstance(f, llm_backends._RedactingFilter)]:
            monkeypatch.setattr(lg, "filters", [x for x in lg.filters if x is not f])
    monkeypatch.setattr(llm_backends, "install_log_redaction", lambda: None)
    up = Upstream(json.dumps({"choices": [{"message": {"content": "Aspirin reduces heart attacks [1]."}}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url.replace("user:s3cret", f"u:{secret}"))) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    finally:
        up.close()
    assert r.status_code == 200
    logged = [rec.getMessage() for rec in caplog.records if rec.name.startswith("httpx")]
    assert any("HTTP Request: POST" in m for m in logged)  # httpx did log the upstream call
    assert not any(_leaks(m, secret) for m in logged), logged


def test_the_labelling_page_and_its_api_refuse_to_be_framed(tmp_path):
    """Every answer of the labelling server, the page and the API alike, forbids framing by any site (one click in a
    frame would write a label) and content sniffing."""
    from starlette.testclient import TestClient

    from citebound.cli.label import make_label_session
    from citebound.cli.main import parse
    from citebound.labelling.app import create_label_app
    from tests.guard.test_labelling import answers_file

    session = make_label_session(parse(["label", "--input", str(answers_file(tmp_path / "a.jsonl")), "--out",
                                        str(tmp_path / "labels.jsonl"), "--sample", "2", "--verifier", "lexical"]))
    with TestClient(create_label_app(session, port=8766, token="tok-1"), base_url="http://127.0.0.1:8766") as c:
        for r in (c.get("/"), c.get("/api/state"), c.post("/api/undo", headers={"x-citebound-token": "tok-1"})):
            assert r.status_code == 200, r.text
            assert r.headers["x-frame-options"] == "DENY"
            assert r.headers["content-security-policy"] == "frame-ancestors 'none'"
            assert r.headers["x-content-type-options"] == "nosniff"
