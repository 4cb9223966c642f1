"""Nothing passes unchecked, and one bad input fails itself only: marker look-alikes, unreadable brackets,
uncited sentences, hidden passages, empty passage lists, strict judge verdicts, pinned model files, and the
service's, proxy's, MCP's and CLI's answers to hostile input. Expected values are worked out by hand."""
import json
import shutil
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citebound.guarding.guard import Guard, guard_answer
from citebound.serving import ServeConfig
from citebound.verifiers.llm_judge import parse_verdict
from tests.service_helpers import running

P = ["Aspirin reduces the risk of heart attacks in adults.", "Mitochondria produce ATP in cells."]


def accept_all(claims, passages):
    s = np.ones(len(claims))
    return s, s > 0.5


def topic(claims, passages):
    """1.0 iff the passage shares the claim's first word (lower case), else 0.0."""
    s = np.array([1.0 if c.split()[0].lower() in p.lower() else 0.0 for c, p in zip(claims, passages)])
    return s, s > 0.5


# ---------------------------------------------------------------- every marker a reader sees is checked

@pytest.mark.parametrize("marker,cited", [
    ("\uff3b\uff11\uff3d", [1]),           # full-width [1]
    ("\u30101\u3011", [1]),                 # lenticular
    ("[1; 2]", [1, 2]),
    ("[ 1 ]", [1]),
    ("[1\u20142]", [1, 2]),                 # em dash range
    ("[2\u2212 1]", [2, 1]),                # minus sign, reversed range: its two ends
    ("\uff3b\uff12\uff0c\uff11\uff3d", [2, 1]),  # full-width list
])
def test_marker_look_alikes_are_parsed(marker, cited):
    _, r = guard_answer(f"Aspirin reduces heart attacks {marker}.", P, accept_all, reattribute=None)
    assert [a.cited for a in r.audit] == cited and r.verified == len(cited) and r.uncited == 0


@pytest.mark.parametrize("marker", ["[1-3-1000000000]", "[1a]", "[ref. 2]", "[#1]", "[1 2]"])
def test_a_bracket_the_guard_cannot_read_is_unverified_never_dropped(marker):
    g = Guard(accept_all, reattributor=None, action="block", block_above=0.0)
    text, r = g.guard(f"Aspirin reduces heart attacks {marker}.", P)
    assert (r.n_citations, r.unverified, r.verified) == (1, 1, 0)
    a = r.audit[0]
    assert (a.cited, a.marker, a.action) == (-1, marker, "unverified") and "not one the guard can read" in a.reason
    assert r.review_budget == 1.0 and r.blocked and text == ""  # block withholds it


def test_an_unreadable_bracket_right_after_a_marker_is_not_swallowed():
    # [2a] starts where [1] ends, at index 0 of a second answer too, and beside a later good marker
    out = [guard_answer(a, P, accept_all, reattribute=None)[1] for a in
                               ("Aspirin reduces heart attacks [1][2a] and more [2].", "[1a][1] Aspirin works.")]
    r0, r1 = out
    assert [(a.cited, a.marker, a.action) for a in r0.audit] == [(1, "[1]", "verified"), (2, "[2]", "verified"),
                                                                  (-1, "[2a]", "unverified")]
    assert [(a.cited, a.marker, a.action) for a in r1.audit] == [(1, "[1]", "verified"), (-1, "[1a]", "unverified")]


def test_a_markdown_link_with_a_digit_is_no_citation():
    _, r = guard_answer("See [figure 2](https://x.org) for aspirin [1].", P, accept_all, reattribute=None)
    assert [a.cited for a in r.audit] == [1]


def test_uncited_sentences_count_by_policy():
    answer = "Aspirin reduces heart attacks [1]. The moon is made of cheese. 42. X. - [2]"
    # sentences: cited, uncited (words), "42." and "X." (no word of two letters: not a statement), "- [2]" (cited)
    _, r = guard_answer(answer, P, topic, reattribute=None)
    assert (r.n_sentences, r.uncited, r.n_citations, r.flagged) == (5, 1, 2, 1)
    assert r.uncited_sentences == [[35, 62]] and answer[35:62] == "The moon is made of cheese."
    assert r.review_budget == pytest.approx((1 + 1) / (2 + 1))
    _, r = guard_answer(answer, P, topic, reattribute=None, uncited="ignore")
    assert (r.uncited, r.review_budget) == (1, pytest.approx(1 / 2))


def test_an_answer_with_no_marker_is_blocked_by_default():
    g = Guard(accept_all, reattributor=None, action="block", block_above=0.5)
    text, r = g.guard("The moon is made of cheese. Aspirin cures cancer.", P)
    assert (r.n_citations, r.uncited, r.review_budget, r.blocked, text) == (0, 2, 1.0, True, "")
    assert "2 sentences cite nothing" in r.block_reason
    text, r = Guard(accept_all, reattributor=None, action="block", block_above=0.5, uncited="ignore").guard(
        "The moon is made of cheese.", P)
    assert (r.review_budget, r.blocked) == (0.0, False)


def test_remove_keeps_a_sentence_one_of_whose_citations_stands():
    # [1] supports the sentence, [2] does not: the sentence stays (annotated), not removed
    text, r = guard_answer("Aspirin reduces heart attacks [1][2]. Mitochondria make ATP [1].", P, topic,
                           reattribute=None, remove=True)
    assert text == "Aspirin reduces heart attacks [1][2 UNVERIFIED]." and r.removed_sentences == 1


@pytest.mark.parametrize("hidden", ["<!-- Aspirin reduces the risk of heart attacks -->",
                                    '<span style="display:none">Aspirin reduces the risk of heart attacks</span>',
                                    "<div hidden>Aspirin reduces heart attacks</div>"])
def test_a_passage_that_is_only_hidden_markup_supports_nothing(hidden):
    _, r = guard_answer("Aspirin reduces heart attacks [1].", [hidden], topic, reattribute=None)
    assert (r.verified, r.unverified) == (0, 1) and "empty" in r.audit[0].reason


def test_no_passages_fails_itself_only():
    g = Guard(topic)
    out = g.guard_each([("Aspirin works [1].", []), ("Aspirin reduces heart attacks [1].", P)])
    (t0, r0), (t1, r1) = out
    assert (t0, r0.invalid) == ("Aspirin works [1 INVALID].", 1) and (r1.verified, r1.invalid) == (1, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["[", "]", "\uff3b", "\uff3d", "\u3010", "\u3011", "1", "2", "\uff11", "-", "\u2014",
                                 ";", ",", " ", "a", ".", "[1]", "(2020)", "\n"]), max_size=60))
def test_every_bracket_with_a_digit_is_a_citation_or_unverified(parts):
    """Generated marker shapes: no bracket a reader may take for a citation (square, full-width or
    lenticular, with a digit) leaves the answer unchecked."""
    from citebound.text.forms import fold_markers

    answer = "Aspirin " + "".join(parts)
    text, r = guard_answer(answer, P, accept_all, reattribute=None)
    view = fold_markers(answer)
    assert r.verified + r.flagged + r.invalid + r.unverified + r.reattributed == r.n_citations
    import re
    for m in re.finditer(r"\[[^\[\]\n]*\d[^\[\]\n]*\]", view):
        if len(m.group()) <= 160 and not view.startswith("(", m.end()):
            covered = any(lo < m.end() and m.start() < hi for a in r.audit for lo, hi in a.spans)
            assert covered, (answer, m.group())


# ---------------------------------------------------------------- the LLM judge reads verdicts strictly

@pytest.mark.parametrize("reply,verdict", [
    ("SUPPORTED", True), ("Supported.", True), ("**SUPPORTED**", True),
    ("NOT SUPPORTED", False), ("not supported by the passage", False), ("The claim is not fully supported.", False),
    ("UNSUPPORTED", False), ("un-supported", False), ("It isn't supported.", False),
    ("Supported? No: UNSUPPORTED", None), ("I cannot tell.", None), ("", None),
])
def test_judge_verdicts_with_negations(reply, verdict):
    assert parse_verdict(reply, "SUPPORTED", "UNSUPPORTED") is verdict


# ---------------------------------------------------------------- every shipped model file is pinned

@pytest.mark.parametrize("name,damage", [("tokenizer.json", b' '), ("tokenizer.json", None), ("model.onnx", b"\0"),
                                         ("graph.json", None)])
def test_a_changed_model_file_is_refused_naming_it(tmp_path, name, damage):
    from citebound.models import GRAPHS, SHIPPED, TOKENIZER, GraphTampered, file_sha256, graph_dir, shipped_graph
    from citebound.verifiers.graph import ensure_graph

    ensure_graph()
    d = tmp_path / "minilm"
    shutil.copytree(graph_dir(), d)
    assert file_sha256(d / "tokenizer.json") == TOKENIZER and file_sha256(d / "model.onnx") == GRAPHS[SHIPPED]
    f = d / name
    data = f.read_bytes()
    f.write_bytes(data + damage if damage is not None else data[: len(data) // 2])  # appended, or truncated
    with pytest.raises(GraphTampered, match=name.replace(".", r"\.")):
        shipped_graph(d)


# ---------------------------------------------------------------- the service: one bad input fails itself

@pytest.fixture(scope="module")
def lexical_url():
    with running(ServeConfig(verifier="lexical")) as url:
        yield url


@pytest.mark.parametrize("raw,field", [
    (b'{"answer": "A [1].", "passages": ["a"], "citation_base": NaN}', "citation_base"),
    (b'{"answer": "A [1].", "passages": ["a"], "id": Infinity}', "id"),
    (b'{"answers": [{"answer": "A [1].", "passages": ["a"], "id": 1e400}]}', "answers[0].id"),
])
def test_non_finite_json_is_a_422_naming_the_field(lexical_url, raw, field):
    r = httpx.post(f"{lexical_url}/v1/guard", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"].startswith(f"{field}: a non-finite number")
    metrics = httpx.get(f"{lexical_url}/metrics").text
    assert 'citebound_requests_total{endpoint="/v1/guard",status="422"}' in metrics


def test_deep_json_is_refused_linearly(lexical_url):
    raw = b'{"answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    t0 = time.perf_counter()
    r = httpx.post(f"{lexical_url}/v1/guard", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and "nests" in r.json()["detail"] and time.perf_counter() - t0 < 5


def test_a_batch_with_empty_passages_and_ctxs_fails_only_itself(lexical_url):
    batch = {"answers": [{"id": "a", "answer": "Aspirin works [1].", "passages": []},
                         {"id": "b", "answer": "Aspirin reduces heart attacks [1].", "ctxs": [{"text": P[0]}]},
                         {"id": "c", "answer": "x [1].", "passages": ["a"], "ctxs": ["b"]}]}
    r = httpx.post(f"{lexical_url}/v1/guard", json=batch)
    assert r.status_code == 422 and "not both" in r.text  # both names in one record: refused, naming it
    batch["answers"].pop()
    r = httpx.post(f"{lexical_url}/v1/guard", json=batch).json()
    a, b = r["results"]
    assert a["report"]["invalid"] == 1 and b["report"]["verified"] == 1


# ---------------------------------------------------------------- the proxy: every choice checked

CHAT = {"model": "m", "messages": [{"role": "user", "content": "q"}], "citebound": {"passages": P}}


def test_the_proxy_refuses_n_and_extra_choices_and_passes_tool_calls_unchecked():
    import openai

    from tests.guard.test_hostile import Upstream

    reply = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "Aspirin reduces heart attacks [1].",
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}
    up = Upstream(json.dumps(reply).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url)) as url:
            c = openai.OpenAI(base_url=f"{url}/v1", api_key="sk", max_retries=0)
            with pytest.raises(openai.BadRequestError, match="n=2"):
                c.chat.completions.create(model="m", messages=[], n=2, extra_body={"citebound": {"passages": P}})
            raw = c.chat.completions.with_raw_response.create(model="m", messages=[],
                                                               extra_body={"citebound": {"passages": P}})
            resp = raw.parse()
    finally:
        up.close()
    assert resp.choices[0].message.tool_calls[0].id == "call_1"
    extra = resp.model_extra["citebound"]
    assert extra["unchecked_tool_calls"] == 1 and raw.headers["x-citebound-unchecked-tool-calls"] == "1"
    assert "original_content" not in extra  # the unguarded text only on request
    assert raw.headers["x-citebound-uncited"] == "0"
    assert raw.headers["x-citebound-guarantee"] == extra["report"]["guarantee_card"]["monitor"]["state"]
    two = {"choices": [{"index": 0, "message": {"content": "Aspirin reduces heart attacks [1]."}},
                       {"index": 1, "message": {"content": "The moon is made of cheese [1]."}}]}
    up = Upstream(json.dumps(two).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT)
    finally:
        up.close()
    assert r.status_code == 502 and "2 choices" in r.json()["error"]["message"] and "cheese" not in r.text


@pytest.mark.parametrize("upstream", ["http://user:p@ss@{host}/v1", "http://user:" + "t" * 2000 + "@{host}/v1"])
def test_credentials_never_reach_an_error(upstream):
    from tests.service_helpers import free_port

    host = f"127.0.0.1:{free_port()}"  # nothing listens there: a transport error
    with running(ServeConfig(verifier="lexical", upstream=upstream.format(host=host), request_timeout_s=5)) as url:
        r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    # the upstream is named by its host (its credentials travel as basic auth, never in a shown URL)
    assert r.status_code in (502, 504) and "p@ss" not in r.text and "tttt" not in r.text and host in r.text


def test_the_audit_page_and_labelling_page_refuse_framing(lexical_url):
    r = httpx.post(f"{lexical_url}/v1/guard?format=html", json={"answer": "Aspirin works [1].", "passages": P})
    assert r.headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in r.headers["content-security-policy"]


# ---------------------------------------------------------------- MCP: every line gets a reply

def test_mcp_answers_every_line():
    p = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "mcp", "--verifier", "lexical"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def ask(line):
        p.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    try:
        init = ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        from citebound import __version__

        assert init["result"]["serverInfo"] == {"name": "citebound", "version": __version__}
        p.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        assert ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [1]})["error"]["code"] == -32602
        bad = ask('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "guard_answer", '
                  '"arguments": {"answer": "x \\ud800 [1].", "passages": ["a"]}}}')
        assert bad["id"] == 3 and "params.arguments.answer is not well-formed unicode" in bad["error"]["message"]
        assert ask("{not json")["error"]["code"] == -32700
        empty = ask({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "guard_answer", "arguments": {"answer": "Aspirin works [1].", "passages": []}}})
        assert empty["id"] == 5 and "[1 INVALID]" in empty["result"]["content"][0]["text"]
        # #52: a request of another JSON-RPC version, or of none, is answered with its id (the SDK dropped it)
        old = ask({"jsonrpc": "1.0", "id": 6, "method": "tools/list"})
        assert old["id"] == 6 and old["error"]["code"] == -32600 and "'jsonrpc' must be" in old["error"]["message"]
        none = ask({"id": 7, "method": "tools/list"})
        assert none["id"] == 7 and none["error"]["code"] == -32600
        assert ask({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})["id"] == 8  # and the session goes on
    finally:
        p.stdin.close()
        p.wait(20)


# ---------------------------------------------------------------- the CLI: strict readers

def test_cli_readers_are_strict(tmp_path):
    from citebound.cli.main import main

    arr = tmp_path / "a.json"
    arr.write_text(json.dumps([{"answer": "A [1].", "passages": ["a"]}]))
    res = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(arr), "--verifier",
                          "lexical"], capture_output=True, text=True)
    assert res.returncode == 2 and "holds one object, not a list" in res.stderr and "Traceback" not in res.stderr
    cal = tmp_path / "cal.json"
    shutil.copy(__import__("citebound.calibrations", fromlist=["x"]).__path__[0] + "/lexical.json", cal)
    reports = tmp_path / "r.jsonl"
    for line, why in [(b'{"report": {"audit": [{"score": "0.99"}]}}', "finite number"),
                      (b'{"report": {"audit": [{"score": ' + b"9" * 5000 + b"}]}}", "not usable JSON"),
                      (b"\xff\xfe not utf-8", "UTF-8"), (b"[" * 100_000, "JSON")]:
        reports.write_bytes(line + b"\n")
        res = subprocess.run([sys.executable, "-m", "citebound.cli.main", "monitor", "--reports", str(reports),
                              "--calibration", str(cal)], capture_output=True, text=True)
        assert res.returncode == 2 and why in res.stderr and "Traceback" not in res.stderr, res.stderr
    from citebound.guarding.card import calibration_hash

    card = {"calibration_hash": calibration_hash(json.loads(cal.read_text()))}  # guarded under cal.json
    reports.write_text(json.dumps({"report": {"audit": [{"score": 0.5}], "guarantee_card": card}}) + "\n")
    labels = tmp_path / "l.jsonl"
    for bad in ('{"label": false, "passed": true}', '{"label": 0.0, "passed": true}'):
        labels.write_text(bad + "\n")
        res = subprocess.run([sys.executable, "-m", "citebound.cli.main", "monitor", "--reports", str(reports),
                              "--calibration", str(cal), "--labels", str(labels)], capture_output=True, text=True)
        assert res.returncode == 2 and "label" in res.stderr
    del main


@pytest.mark.parametrize("grid", ["0,1,0", "0,1,100000000", "nan,1,5", "1,0,5", "0,1"])
def test_calibrate_refuses_a_bad_grid(tmp_path, grid):
    labels = tmp_path / "l.jsonl"
    labels.write_text("".join(json.dumps({"claim": f"c{i}", "passage": "c", "label": i % 2, "score": i / 50}) + "\n"
                              for i in range(50)))
    res = subprocess.run([sys.executable, "-m", "citebound.cli.main", "calibrate", "--labels", str(labels),
                          "--verifier", "lexical", "--beta", "0.5", "--grid", grid, "--out", str(tmp_path / "c.json")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "--grid" in res.stderr and "Traceback" not in res.stderr, res.stderr
