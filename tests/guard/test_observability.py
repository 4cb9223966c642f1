"""#53 item 6: logs as JSON lines and OTLP export of the spans, through the real CLI process: a loopback OTLP/HTTP
receiver decodes what the exporter sent with OpenTelemetry's own protobuf classes."""
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest
from hidden_imports import hide_imports

from citebound.serving.observability import JsonFormatter, otlp_wanted
from tests.service_helpers import free_port, wait_ready

BODY = {"answer": "Mitochondria produce ATP [1][2]. The sky is green [2].",
        "passages": ["Mitochondria produce ATP in cells.", "Bananas are yellow when ripe."]}


@pytest.mark.parametrize("env,want", [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "console, otlp"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
    ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
    ({"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
])
def test_when_spans_are_exported(env, want):
    assert otlp_wanted(env) is want


def test_an_access_record_is_one_json_line_with_its_fields():
    import logging

    rec = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                            ("10.0.0.1:5", "POST", "/v1/guard", "1.1", 200), None)
    rec.created, rec.msecs = 0.0, 7.0
    out = json.loads(JsonFormatter().format(rec))
    assert out == {"ts": "1970-01-01T00:00:00.007Z", "level": "info", "logger": "uvicorn.access", "client": "10.0.0.1:5",
                   "method": "POST", "path": "/v1/guard", "status": 200, "message": "POST /v1/guard 200"}
    rec = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %s',
                            ("10.0.0.1:5", "GET", "/readyz", "1.1", "503"), None)  # a status as text: a number still
    assert json.loads(JsonFormatter().format(rec))["status"] == 503
    rec = logging.LogRecord("citebound", logging.WARNING, __file__, 1, "two\nlines %s", ("x",), None)
    line = JsonFormatter().format(rec)
    assert "\n" not in line and json.loads(line)["message"] == "two\nlines x"


def test_only_uvicorns_access_records_of_five_arguments_are_read_as_access():
    """A citebound record whose message has five arguments is its message; an access record with four (another
    uvicorn's format) is its message too, never an error; every line is ASCII (U+2028 or an accent escaped),
    so no log reader splits it."""
    import logging

    rec = logging.LogRecord("citebound", logging.INFO, __file__, 1, "%s %s %s %s %s", ("a", "b", "c", "d", 5), None)
    out = json.loads(JsonFormatter().format(rec))
    assert out["message"] == "a b c d 5" and "client" not in out and "status" not in out
    rec = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s" %d',
                            ("10.0.0.1:5", "GET", "/livez", 200), None)
    out = json.loads(JsonFormatter().format(rec))
    assert out["message"] == '10.0.0.1:5 - "GET /livez" 200' and "client" not in out
    rec = logging.LogRecord("citebound", logging.INFO, __file__, 1, "caf\u00e9\u2028next", None, None)
    line = JsonFormatter().format(rec)
    assert line.isascii() and "\\u2028" in line and json.loads(line)["message"] == "caf\u00e9\u2028next"


def _no_otel_variables(monkeypatch) -> None:
    for var in ("OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


def test_tracing_not_asked_for_needs_no_exporter(monkeypatch):
    """With no OpenTelemetry variable set, a missing exporter is no problem (nothing to export); asked for, it
    is the one line that says what to install."""
    from citebound.serving.observability import check_tracing

    hide_imports(monkeypatch, "opentelemetry.exporter")
    _no_otel_variables(monkeypatch)
    assert check_tracing() is None
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    assert "pip install 'citebound[otlp]'" in check_tracing()


def test_tracing_is_installed_only_when_asked_for_and_only_once(monkeypatch):
    """No OpenTelemetry variable: nothing is installed (no exporter sending spans to a default address nobody
    named). Asked for: one tracer provider, and a second call installs no other."""
    pytest.importorskip("opentelemetry.sdk", reason="the [otlp] extra")
    from opentelemetry import trace

    from citebound.serving import observability

    installed = []
    monkeypatch.setattr(trace, "set_tracer_provider", installed.append)
    monkeypatch.setattr(observability, "_INSTALLED", False)
    _no_otel_variables(monkeypatch)
    assert observability.setup_tracing() is False and installed == []
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    assert observability.setup_tracing() is True and observability.setup_tracing() is True
    assert len(installed) == 1
    installed[0].shutdown()


class _Receiver(BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        n = int(self.headers["Content-Length"])
        type(self).bodies.append((self.path, self.headers["Content-Type"], self.rfile.read(n)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


def _serve(tmp_path, *extra, env=None):
    port = free_port()
    err = open(tmp_path / "stderr.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "citebound", "serve", "--verifier", "lexical", "--port", str(port), *extra],
                         stdout=subprocess.DEVNULL, stderr=err, env=env)
    assert wait_ready(f"http://127.0.0.1:{port}"), (tmp_path / "stderr.log").read_text()
    return p, f"http://127.0.0.1:{port}"


def test_json_logs_from_the_running_service(tmp_path):
    p, url = _serve(tmp_path, "--log-format", "json")
    try:
        assert httpx.post(f"{url}/v1/guard", json=BODY, timeout=30).status_code == 200
        assert httpx.post(f"{url}/v1/guard", json={"answer": 3}, timeout=30).status_code == 422
    finally:
        p.terminate()
        p.wait(30)
    lines = [ln for ln in (tmp_path / "stderr.log").read_text().splitlines() if ln.strip()]
    recs = [json.loads(ln) for ln in lines]  # every line is one JSON object
    access = [(r["method"], r["path"], r["status"]) for r in recs if r["logger"] == "uvicorn.access"]
    assert ("POST", "/v1/guard", 200) in access and ("POST", "/v1/guard", 422) in access
    assert any(r["logger"] == "uvicorn.error" and "startup complete" in r["message"] for r in recs)
    # citebound's own records too (the drain's line at SIGTERM, an INFO one: without its logger's handler it is lost)
    assert any(r["logger"] == "citebound.serving" and r["level"] == "info" and r["message"].startswith("drained (0 still")
               for r in recs)


def test_spans_reach_an_otlp_receiver(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the [otlp] extra")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    _Receiver.bodies = []
    srv = HTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    import os

    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{srv.server_port}",
           "OTEL_SERVICE_NAME": "citebound-test", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    p, url = _serve(tmp_path, env=env)
    try:
        assert httpx.post(f"{url}/v1/guard", json=BODY, timeout=30).status_code == 200
        import time

        t = time.monotonic()
        while not _Receiver.bodies and time.monotonic() - t < 15:
            time.sleep(0.1)
    finally:
        p.terminate()
        p.wait(30)
        srv.shutdown()
    assert _Receiver.bodies, (tmp_path / "stderr.log").read_text()[-2000:]
    spans, names = [], set()
    for path, ctype, raw in _Receiver.bodies:
        assert path == "/v1/traces" and ctype == "application/x-protobuf"
        req = ExportTraceServiceRequest.FromString(raw)
        for rs in req.resource_spans:
            names |= {a.value.string_value for a in rs.resource.attributes if a.key == "service.name"}
            spans += [s for ss in rs.scope_spans for s in ss.spans]
    assert names == {"citebound-test"}
    (g,) = [s for s in spans if s.name == "citebound.guard"]
    attrs = {a.key: a.value for a in g.attributes}
    assert attrs["citebound.verifier"].string_value == "lexical" and attrs["citebound.answers"].int_value == 1
    events = [e for e in g.events if e.name == "citation"]
    assert len(events) == 3  # [1][2] in the first sentence, [2] in the second
    cited = sorted(next(a.value.int_value for a in e.attributes if a.key == "citebound.cited") for e in events)
    assert cited == [1, 2, 2]


def test_otlp_asked_for_without_the_exporter_is_one_line(tmp_path):
    """The exporter missing (hidden by a module stub that fails to import): one error line, status 2."""
    stub = tmp_path / "stub"
    stub.mkdir()
    import os

    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
           "PYTHONPATH": f"{stub}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    (stub / "sitecustomize.py").write_text(
        "import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('opentelemetry.exporter'):\n            raise ImportError('hidden')\n"
        "sys.meta_path.insert(0, _Block())\n")
    r = subprocess.run([sys.executable, "-m", "citebound", "serve", "--verifier", "lexical"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "pip install 'citebound[otlp]'" in r.stderr, r.stderr
