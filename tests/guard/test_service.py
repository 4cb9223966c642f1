"""citebound serve on loopback, through real HTTP: the guard and score endpoints against the library and
the CLI, calibration profiles, limits, metrics, micro-batching, OpenTelemetry spans, the guarding proxy
with the official openai SDK as the client, and SIGHUP / SIGTERM on a real server process."""
import json
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

import httpx
import numpy as np
import pytest
from conftest import ROOT
from fake_openai import FakeOpenAI
from service_helpers import free_port, running, wait_ready

pytest.importorskip("fastapi")
from citebound import examples  # noqa: E402
from citebound.calibration.files import calibration_summary  # noqa: E402
from citebound.cli.main import main  # noqa: E402
from citebound.scoring.loader import load_scorer  # noqa: E402
from citebound.serving import ServeConfig  # noqa: E402
from citebound.text.limits import Limits  # noqa: E402

EXAMPLE = json.loads(examples.path().read_text())


@pytest.fixture(scope="module")
def lexical_url():
    with running(ServeConfig(verifier="lexical", max_wait_ms=2)) as url:
        yield url


def cli_json(path: Path, *extra: str) -> dict:
    from contextlib import redirect_stdout
    buf = StringIO()
    with redirect_stdout(buf):
        assert main(["guard", "--input", str(path), "--verifier", "lexical", *extra]) == 0
    return json.loads(buf.getvalue())


def test_guard_endpoint_returns_what_the_cli_returns():
    """On a server of its own: the report's guarantee card carries the drift monitor's running state (its
    scores seen, its martingale), which every earlier request to a shared server would have moved on."""
    with running(ServeConfig(verifier="lexical", max_wait_ms=2)) as url:
        r = httpx.post(f"{url}/v1/guard", json=EXAMPLE)
        html = httpx.post(f"{url}/v1/guard?format=html", json=EXAMPLE)
    assert r.status_code == 200
    assert r.json() == cli_json(examples.path())
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert html.text.count('<a class="cite ') == 4 and 'data-outcome="invalid"' in html.text


def test_batch_guard_counts_and_order(lexical_url):
    batch = {"answers": [dict(EXAMPLE, id="a"), {"id": "b", "answer": "Nothing cited here.", "passages": ["x"]},
                         dict(EXAMPLE, id="c", citation_base=0)]}
    r = httpx.post(f"{lexical_url}/v1/guard", json=batch).json()
    assert [x["id"] for x in r["results"]] == ["a", "b", "c"]
    reports = [x["report"] for x in r["results"]]
    assert r["counts"]["n_citations"] == sum(x["n_citations"] for x in reports)
    flagged = sum(x["flagged"] + x["invalid"] + x["unverified"] + x["uncited"] for x in reports)
    assert reports[1]["uncited"] == 1 and r["counts"]["uncited"] == sum(x["uncited"] for x in reports)
    assert r["counts"]["review_budget"] == pytest.approx(flagged / (r["counts"]["n_citations"] + r["counts"]["uncited"]))
    # base 0: [4] of four markers now points at passage index 4, still out of range; [1] is passage 2
    assert reports[2]["audit"][0]["cited"] == 1


def test_score_endpoint_equals_the_library(lexical_url):
    pairs = [{"claim": "Aspirin inhibits cyclooxygenase.", "passage": EXAMPLE["passages"][0]["text"]},
             {"claim": "Statins lower LDL.", "passage": EXAMPLE["passages"][2]["text"]}]
    got = httpx.post(f"{lexical_url}/v1/score", json={"pairs": pairs}).json()
    s, v = load_scorer("lexical")([p["claim"] for p in pairs], [p["passage"] for p in pairs])
    assert got["verifier"] == "lexical"
    assert [x["score"] for x in got["scores"]] == pytest.approx(list(s))
    assert [x["verdict"] for x in got["scores"]] == list(v)


@pytest.mark.parametrize("body,status,text", [
    ({"answer": "Aspirin lowers fever [1-1000000000].", "passages": ["Aspirin lowers fever."]}, 422, "max_range"),
    ({"answer": "No passages [1]."}, 422, "missing context is never a pass"),
    ({"answer": "x", "passages": ["y"], "answers": []}, 422, "not both"),
    ({"answer": "x [1].", "passages": [{"title": "no text"}]}, 422, "text"),
    ({"answer": "x [1].", "passages": ["y"], "calibration": "nope"}, 422, "unknown calibration profile 'nope'"),
    ({"answer": "x [1].", "passages": ["y"], "bogus": 1}, 422, "bogus"),
])
def test_bad_and_hostile_input_is_refused_with_a_named_reason(lexical_url, body, status, text):
    t0 = time.perf_counter()
    r = httpx.post(f"{lexical_url}/v1/guard", json=body)
    assert r.status_code == status and text in r.text
    assert time.perf_counter() - t0 < 1.0


def test_a_batch_past_max_answers_per_request_is_refused_by_name():
    with running(ServeConfig(verifier="lexical", limits=Limits(max_answers_per_request=2))) as url:
        two = {"answers": [{"answer": "x [1].", "passages": ["y"]}] * 2}
        assert httpx.post(f"{url}/v1/guard", json=two).status_code == 200
        r = httpx.post(f"{url}/v1/guard", json={"answers": two["answers"] * 2})
        assert r.status_code == 422 and r.json()["limit"] == "max_answers_per_request"


def test_a_body_past_max_request_bytes_is_a_413():
    with running(ServeConfig(verifier="lexical", limits=Limits(max_request_bytes=1000))) as url:
        r = httpx.post(f"{url}/v1/guard", json={"answer": "x " * 600 + "[1].", "passages": ["y"]})
        assert r.status_code == 413 and "max_request_bytes" in r.text
        assert httpx.post(f"{url}/v1/guard", json={"answer": "x [1].", "passages": ["y"]}).status_code == 200


def test_calibration_profiles_are_checked_against_the_served_verifier(tmp_path):
    lex = load_scorer("lexical")
    emb_hash = "0123456789abcdef"
    scores, labels = list(np.linspace(0.05, 0.95, 40)), [0] * 20 + [1] * 20
    (tmp_path / "biomed.json").write_text(json.dumps(calibration_summary(scores, labels, 0.1, 0.1, "lexical", lex.hash)))
    (tmp_path / "other.json").write_text(json.dumps(calibration_summary(scores, labels, 0.1, 0.1, "embedding", emb_hash)))
    with running(ServeConfig(verifier="lexical", calibrations=str(tmp_path))) as url:
        c = httpx.get(f"{url}/v1/calibrations").json()
        assert list(c["profiles"]) == ["biomed"] and "not 'lexical'" in c["refused"]["other"]
        tau = c["profiles"]["biomed"]["tau"]
        r = httpx.post(f"{url}/v1/guard", json=dict(EXAMPLE, calibration="biomed")).json()
        assert r["report"]["rule"] == f"pass iff score > tau = {tau:.6g}" and r["report"]["guarantee"]
        bad = httpx.post(f"{url}/v1/guard", json=dict(EXAMPLE, calibration="other"))
        assert bad.status_code == 422 and "refused at load" in bad.text


def test_metrics_count_requests_outcomes_and_batches(lexical_url):
    before = httpx.get(f"{lexical_url}/metrics").text
    httpx.post(f"{lexical_url}/v1/guard", json=EXAMPLE)
    text = httpx.get(f"{lexical_url}/metrics").text

    def value(t, name):
        return sum(float(line.split()[-1]) for line in t.splitlines() if line.startswith(name))

    assert value(text, 'citebound_requests_total{endpoint="/v1/guard",status="200"}') == \
        value(before, 'citebound_requests_total{endpoint="/v1/guard",status="200"}') + 1
    assert value(text, 'citebound_citations_total{outcome="reattributed"}') == \
        value(before, 'citebound_citations_total{outcome="reattributed"}') + 2
    assert value(text, "citebound_batch_units_count") >= value(before, "citebound_batch_units_count") + 2
    for name in ("citebound_request_seconds_bucket", "citebound_queue_depth", "citebound_in_flight"):
        assert name in text


def test_concurrent_requests_share_forward_passes_and_get_the_unbatched_scores():
    """16 concurrent guard requests with a 50 ms batching window: the batch-size metric shows merged
    calls, and every answer's report equals the one guarded alone."""
    answers = [dict(EXAMPLE, id=i, answer=EXAMPLE["answer"].replace("[1]", f"[{1 + i % 3}]")) for i in range(16)]
    alone = {}
    with running(ServeConfig(verifier="lexical", max_wait_ms=0, max_batch_units=1)) as url:
        for a in answers:
            alone[a["id"]] = httpx.post(f"{url}/v1/guard", json=a).json()
    with running(ServeConfig(verifier="lexical", max_wait_ms=50, max_batch_units=4096)) as url:
        with ThreadPoolExecutor(16) as pool:
            together = list(pool.map(lambda a: httpx.post(f"{url}/v1/guard", json=a, timeout=30).json(), answers))
        metrics = httpx.get(f"{url}/metrics").text
    def outcome(response):  # the card's monitor counts the server's citations so far, so it depends on order
        report = {k: v for k, v in response["report"].items() if k != "guarantee_card"}
        return {**response, "report": report}

    for got in together:
        assert outcome(got) == outcome(alone[got["id"]])
    assert max(g["report"]["guarantee_card"]["monitor"]["deployed_scores"] for g in together) == 16 * 3
    count = next(float(x.split()[-1]) for x in metrics.splitlines() if x.startswith("citebound_batch_requests_count"))
    single = next(float(x.split()[-1]) for x in metrics.splitlines()
                  if x.startswith('citebound_batch_requests_bucket{le="1.0"}'))
    assert count < 32 and single < count  # 32 verifier calls (verify + re-attribute per request) merged


def test_batched_and_unbatched_embedding_scores_are_equal_on_float32():
    emb = load_scorer("embedding")
    claims = [f"Claim {i} about aspirin and fever." * (1 + i % 4) for i in range(24)]
    passages = [p["text"] * (1 + i % 5) for i, p in zip(range(24), EXAMPLE["passages"] * 8)]
    alone = np.concatenate([emb.score([c], [p]).score for c, p in zip(claims, passages)])
    with running(ServeConfig(verifier="embedding", max_wait_ms=50), scorer=emb) as url:
        with ThreadPoolExecutor(12) as pool:
            got = list(pool.map(lambda cp: httpx.post(f"{url}/v1/score", json={"pairs": [
                {"claim": cp[0], "passage": cp[1]}]}).json()["scores"][0]["score"], zip(claims, passages)))
    assert np.allclose(got, alone, rtol=0, atol=1e-6)


def test_every_guard_request_is_an_opentelemetry_span_with_each_citation():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.skip("another test set the global tracer provider first")
    with running(ServeConfig(verifier="lexical")) as url:
        httpx.post(f"{url}/v1/guard", json=EXAMPLE)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "citebound.guard"]
    assert span.attributes["citebound.verifier"] == "lexical"
    events = [dict(e.attributes) for e in span.events if e.name == "citation"]
    assert [(e["citebound.cited"], e["citebound.outcome"]) for e in events] == \
        [(1, "verified"), (2, "reattributed"), (3, "reattributed"), (4, "invalid")]
    assert events[3]["citebound.score"] == -1.0 and 0 <= events[0]["citebound.score"] <= 1


# ---------------------------------------------------------------- the guarding proxy, with the openai SDK

CITED = ("Low-dose aspirin reduces the risk of a first heart attack in men [2]. "
         "Aspirin irreversibly inhibits cyclooxygenase, which blocks thromboxane A2 production in platelets [1].")


def test_proxy_returns_the_guarded_answer_to_the_openai_sdk():
    import openai

    with FakeOpenAI(lambda body: CITED) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
        passages = [p["text"] for p in EXAMPLE["passages"]]
        raw = client.chat.completions.with_raw_response.create(
            model="fake", messages=[{"role": "user", "content": "Aspirin?"}],
            extra_body={"citebound": {"passages": passages, "return_original": True}})
        resp = raw.parse()
        assert resp.choices[0].message.content == CITED.replace("[2]", "[3 (was 2)]")  # re-attributed to the trial
        extra = resp.model_extra["citebound"]
        assert extra["original_content"] == CITED and extra["report"]["reattributed"] == 1
        assert raw.headers["x-citebound-review-budget"] == "0.0000" and raw.headers["x-citebound-citations"] == "2"
        # the upstream never saw the citebound field
        assert "citebound" not in up.requests[-1] and up.requests[-1]["messages"][0]["content"] == "Aspirin?"
        with pytest.raises(openai.BadRequestError, match="no passages"):
            client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}])


def test_proxy_reports_an_upstream_failure_as_502():
    with FakeOpenAI(lambda body: "x", fail_first=5) as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [],
                                                           "citebound": {"passages": ["p"]}})
        assert r.status_code == 502 and "answered 500" in r.text


# ---------------------------------------------------------------- signals, on a real server process

# a request of ~15 s of work on 2 cores under --reattributor verifier: every passage is proposed for 1,200 failing
# citations (the drain tests need one surely still in flight when they signal)
SLOW_PASSAGES = [f"passage {i} about " + " ".join(f"w{i}x{k}" for k in range(60)) for i in range(800)]
SLOW_ANSWER = " ".join(f"Claim number {i} about nothing [{1 + i % 800}]." for i in range(1200))
SLOW_ANSWER_300 = " ".join(f"Claim number {i} about nothing [{1 + i % 800}]." for i in range(300))


@contextmanager
def server_process(*args):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", "lexical", "--port", str(port),
                             *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def test_sighup_reloads_calibration_profiles(tmp_path):
    lex = load_scorer("lexical")
    with server_process("--calibrations", str(tmp_path)) as (proc, url):
        assert httpx.get(f"{url}/v1/calibrations").json()["profiles"] == {}
        scores, labels = list(np.linspace(0.05, 0.95, 40)), [0] * 20 + [1] * 20
        (tmp_path / "new.json").write_text(json.dumps(calibration_summary(scores, labels, 0.1, 0.1, "lexical", lex.hash)))
        proc.send_signal(signal.SIGHUP)
        for _ in range(100):
            if "new" in httpx.get(f"{url}/v1/calibrations").json()["profiles"]:
                break
            time.sleep(0.05)
        assert "new" in httpx.get(f"{url}/v1/calibrations").json()["profiles"]


def test_sigterm_finishes_in_flight_requests_and_refuses_new_ones():
    # a slow request (~4 s of work on 2 cores, so it is surely in flight when the late request comes)
    answer, passages = SLOW_ANSWER_300, SLOW_PASSAGES
    # --request-timeout past the slow request's worst case on a loaded machine: a 504 is not what this test is about
    with server_process("--reattributor", "verifier", "--drain-grace", "0.5", "--request-timeout", "600") as (proc, url):
        t0 = time.perf_counter()
        httpx.post(f"{url}/v1/guard", json={"answer": "Warm up [1].", "passages": ["x"]})
        out = {}
        slow = threading.Thread(target=lambda: out.update(
            r=httpx.post(f"{url}/v1/guard", json={"answer": answer, "passages": passages}, timeout=600)))
        slow.start()
        time.sleep(0.5)
        # #52: requests sent just before SIGTERM (accepted, maybe not yet dispatched) are served, not refused
        just_before = []
        sent = [threading.Thread(target=lambda: just_before.append(httpx.post(
            f"{url}/v1/guard", json={"answer": "Claim [1].", "passages": ["Claim."]}, timeout=60).status_code))
            for _ in range(6)]
        for t in sent:
            t.start()
        proc.send_signal(signal.SIGTERM)
        assert httpx.get(f"{url}/readyz").status_code == 503  # the load balancer is told at once
        time.sleep(0.6)  # past the drain grace: a new request is refused
        # sent before waiting for the six: they may finish with the slow request, and once nothing is in flight the
        # drain ends and the server is gone (a late request would then find no server, not the 503 checked here)
        try:
            late = httpx.post(f"{url}/v1/guard", json={"answer": "x [1].", "passages": ["y"]}, timeout=10).status_code
        except httpx.TransportError:
            late = "refused"
        for t in sent:
            t.join(60)
        slow.join(timeout=600)
        assert proc.wait(timeout=60) == 0
    assert out["r"].status_code == 200 and out["r"].json()["report"]["n_citations"] == 300
    assert time.perf_counter() - t0 > 0.7  # the slow request was still in flight when the late one came
    assert late == 503 and just_before == [200] * 6


@pytest.mark.parametrize("base,first", [(0, "[0] Statins"), (1, "[1] Statins"), (None, "[1] Statins")])
def test_passages_prompt_numbers_the_passages_in_the_requests_base(base, first):
    """--passages-prompt lists the passages as the answer will cite them: [0] first for a 0-based request."""
    from citebound.serving.state import DEFAULT_PASSAGES_PROMPT, ServeConfig

    passages = ["Statins lower LDL cholesterol.", "Mitochondria produce ATP."]
    with FakeOpenAI(lambda body: "Statins lower LDL cholesterol [0].") as up, \
            running(ServeConfig(verifier="lexical", upstream=up.base_url, passages_prompt=DEFAULT_PASSAGES_PROMPT)) as url:
        extra = {"passages": passages} | ({"citation_base": base} if base is not None else {})
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "q"}],
                                                            "citebound": extra}, timeout=60)
        assert r.status_code == 200, r.text
        system = up.requests[-1]["messages"][0]
        assert system["role"] == "system" and first in system["content"]
        second = f"[{(base if base is not None else 1) + 1}] Mitochondria"
        assert second in system["content"] and system["content"].index(first) < system["content"].index(second)
