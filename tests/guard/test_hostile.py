"""Hostile input inside the documented limits: expansions bounded while they happen, patterns in linear
time, one request unable to hurt another, hidden markup unable to lift a verdict, work that stops when
its request gives up, bounded bodies and upstreams, and one clear error line for every bad CLI input.

Property-based cases come from hypothesis; time and peak memory are measured in a subprocess capped
with RLIMIT_AS, so a bomb fails the test instead of the machine."""
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from conftest import ROOT
from failing_scorer import Failing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback_server import LoopbackServer
from service_helpers import running

from citebound.cli.main import main
from citebound.guarding.guard import Guard
from citebound.text.citations import MARKER_RE, strip_markers
from citebound.text.limits import LimitExceeded, Limits
from citebound.text.visible import blank_hidden, hidden_spans

pytest.importorskip("fastapi")
from citebound.serving import ServeConfig  # noqa: E402

PASSAGES = ["Aspirin irreversibly inhibits cyclooxygenase, which blocks thromboxane A2 production in platelets.",
            "Statins lower LDL cholesterol by inhibiting HMG-CoA reductase."]


def capped(code: str, mem_mb: int = 1500, timeout: float = 60) -> dict:
    """Run ``code`` in a fresh interpreter under an address-space cap; it prints one JSON line last."""
    pre = ("import resource, json, time\n"
           f"resource.setrlimit(resource.RLIMIT_AS, ({mem_mb} << 20, {mem_mb} << 20))\n")
    r = subprocess.run([sys.executable, "-c", pre + code], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


BOMB = """
from citebound.guarding.guard import Guard, GuardInputError
g = Guard("lexical")
g.guard("Warm up [1].", ["p one"])
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
answer = {answer}
t0 = time.perf_counter()
try:
    g.guard(answer, ["p one", "p two", "p three"])
    outcome = "guarded"
except GuardInputError as e:
    outcome = type(e).__name__ + ": " + str(e)
print(json.dumps({{"s": time.perf_counter() - t0, "outcome": outcome,
                  "growth_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss0}}))
"""


@pytest.mark.slow  # five fresh interpreters
@pytest.mark.parametrize("answer,expect", [
    # one marker listing many ranges: refused as the count passes the per-sentence limit, not after
    ("'Claim [' + ','.join(['1-1000'] * 40000) + '].'", "max_citations_per_sentence"),
    # the linked-marker pattern run over and over, unclosed: linear
    ("'x. ' + '[[1]](' * 80000", "max_citations_per_sentence"),
    # a 5,000-digit marker
    ("'Claim [' + '9' * 5000 + '].'", "more than 18 digits"),
    # a long whitespace run before punctuation inside one sentence (claims strip it)
    ("'a' + ' ' * 400000 + 'b [1].'", "guarded"),
    # every sentence cited once: the per-answer limit, well inside the time budget
    ("'. '.join(['Claim [1]'] * 6000)", "max_citations_per_answer"),
])
def test_bombs_are_refused_fast_and_flat_in_a_capped_process(answer, expect):
    out = capped(BOMB.format(answer=answer))
    assert expect in out["outcome"]
    assert out["s"] < 5 and out["growth_mb"] < 150, out  # peak memory past the warmed-up guard's


@pytest.mark.slow  # timing-based: in the slow tier, where nothing else shares its run
def test_marker_and_hidden_scans_stay_linear_as_hostile_input_grows():
    """Time at 4x the size stays well under the 16x of a quadratic scan."""
    cases = {"links": lambda n: "[[1]](" * n, "brackets": lambda n: "[" + "1," * n,
             "author_year": lambda n: "(" + "a" * n, "hidden": lambda n: "<span hidden>" * n,
             "comments": lambda n: "<!-- " * n + "x", "spaces": lambda n: "a" + " " * n + "b."}
    def best_of_3(text: str) -> float:  # the least-disturbed of three runs: robust to a busy machine
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            list(MARKER_RE.finditer(text))
            strip_markers(text, cap=10 ** 7)
            hidden_spans(text)
            runs.append(time.perf_counter() - t0)
        return max(min(runs), 5e-3)

    for name, make in cases.items():
        times = [best_of_3(make(n)) for n in (20_000, 80_000)]
        assert times[1] / times[0] < 11, (name, times)  # linear: ~4x (cache effects up to ~8x); quadratic: 16x


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(0, 1200), limit=st.integers(1, 1000))
def test_a_range_at_the_limit_passes_and_one_past_it_is_refused(n, limit):
    g = Guard("lexical", reattributor=None, limits=Limits(max_range=limit, max_citations_per_sentence=2000))
    answer = f"Aspirin inhibits cyclooxygenase [1-{n}]." if n else "Aspirin inhibits cyclooxygenase [1]."
    if n > limit:
        with pytest.raises(LimitExceeded, match="max_range"):
            g.guard(answer, PASSAGES)
    else:
        _, r = g.guard(answer, PASSAGES)
        assert r.n_citations == max(1, n)  # one audit per distinct target, out-of-range ones invalid


@settings(max_examples=40, deadline=None)
@given(per_sentence=st.integers(1, 60), ranges=st.lists(st.integers(1, 30), min_size=1, max_size=8))
def test_citations_per_sentence_counted_across_a_markers_ranges(per_sentence, ranges):
    body = ", ".join(f"1-{k}" for k in ranges)
    g = Guard("lexical", reattributor=None, limits=Limits(max_citations_per_sentence=per_sentence))
    total = sum(ranges)  # every expanded number counts, repeats included
    if total > per_sentence:
        with pytest.raises(LimitExceeded, match="max_citations_per_sentence"):
            g.guard(f"Claim [{body}].", PASSAGES)
    else:
        g.guard(f"Claim [{body}].", PASSAGES)


def test_limits_have_hard_ceilings_that_no_flag_passes(capsys):
    for name, ceiling in Limits.CEILINGS.items():
        Limits.from_mapping({name: ceiling})  # at the ceiling: fine
        with pytest.raises(ValueError, match=f"{name}.*ceiling {ceiling}"):
            Limits.from_mapping({name: ceiling + 1})
    assert main(["guard", "--input", "-", "--limit", "max_range=100000000", "--verifier", "lexical"]) == 2
    assert "ceiling" in capsys.readouterr().err


# ---------------------------------------------------------------- what a reader sees


@pytest.mark.parametrize("hide,outcome", [
    ("<!-- {w} -->", "hidden"), ("<span hidden>{w}</span>", "hidden"), ('<span style="display: none">{w}</span>', "hidden"),
    ("<script>{w}</script>", "hidden"), ("<span hidden><span>x</span>{w}</span>", "hidden"),
    ("<!-- {w}", "no citation"),  # an unclosed comment hides the marker too: nothing a reader sees is cited
    # rendered, but a reader cannot see it: the sentence's citation fails closed
    ("<span style='font-size:0'>{w}</span>", "obscured"), ('<span style="opacity: 0">{w}</span>', "obscured"),
    ('<span style="color:#fff">{w}</span>', "obscured"), ('<span style="color:transparent">{w}</span>', "obscured"),
    ('<span style="position:absolute;left:-9999px">{w}</span>', "obscured"),
    ('<span style="transform:scale(0)">{w}</span>', "obscured"),
    ("<style>.x{{display:none}}</style><span class=x>{w}</span>", "obscured"),
    # shown to a reader (a word in an attribute hides nothing): checked as part of the claim
    ('<div aria-hidden="true">{w}</div>', "shown"), ('<span style="overflow:hidden">{w}</span>', "shown"),
    ('<span class="hidden-xs" title="a hidden gem">{w}</span>', "shown"),
])
def test_hidden_markup_in_an_answer_cannot_lift_a_verdict(hide, outcome):
    words = "irreversibly inhibits cyclooxygenase which blocks thromboxane production platelets"
    bare = "Aspirin also cures migraine in every patient [1]."
    lifted = "Aspirin also cures migraine in every patient " + hide.format(w=words) + " [1]."
    g = Guard("lexical", reattributor=None)
    _, r_bare = g.guard(bare, PASSAGES)
    text, r = g.guard(lifted, PASSAGES)
    assert r_bare.flagged == 1
    if outcome == "hidden":
        assert r.flagged == 1 and r.verified == 0 and r.hidden_regions >= 1
        assert r.audit[0].claim == r_bare.audit[0].claim  # the claim is the visible sentence
    elif outcome == "no citation":
        assert r.n_citations == 0 and r.hidden_regions == 1
    elif outcome == "obscured":
        assert r.unverified == 1 and r.verified == 0 and "may not see" in r.audit[0].reason
        assert "[1 UNVERIFIED]" in text
    else:  # the words are the reader's too, so they are part of the claim checked
        assert "cyclooxygenase" in r.audit[0].claim and r.unverified == 0


def test_zero_width_characters_are_not_part_of_a_claim():
    g = Guard("lexical", reattributor=None)
    _, r = g.guard("Statins lower LDL chol\u200besterol [2].", PASSAGES)
    assert r.audit[0].claim == "Statins lower LDL cholesterol." and r.verified == 1


@pytest.mark.parametrize("url,kept", [("https://a.org/p", True), ("javascript:alert(1)", False),
                                      ("data:text/html,x", False), ("JaVaScRiPt:x", False)])
def test_link_targets_that_are_not_http_are_dropped(url, kept):
    g = Guard("lexical", reattributor=None)
    text, _ = g.guard(f"Statins lower LDL cholesterol [[2]]({url}).", PASSAGES)
    assert (url in text) is kept and "[2]" in text


def test_blank_hidden_keeps_every_offset():
    text = "A <!-- x --> b <span hidden>y</span> c."
    view = blank_hidden(text)
    assert len(view) == len(text) and view.replace(" ", "") == "Abc."


# ---------------------------------------------------------------- isolation and deadlines


def test_a_lone_surrogate_fails_its_own_request_only():
    bad = {"answer": "Aspirin inhibits cyclooxygenase \\ud800 [1].", "passages": PASSAGES}
    good = {"answer": "Statins lower LDL cholesterol [2].", "passages": PASSAGES}
    with running(ServeConfig(verifier="lexical", max_wait_ms=50)) as url:
        body_bad = json.dumps(bad).replace("\\\\ud800", "\\ud800")

        def post(i: int) -> int:
            if i % 5 == 0:
                return httpx.post(f"{url}/v1/guard", content=body_bad, headers={"content-type": "application/json"},
                                  timeout=30).status_code
            return httpx.post(f"{url}/v1/guard", json=good, timeout=30).status_code

        with ThreadPoolExecutor(16) as ex:
            codes = list(ex.map(post, range(60)))
    assert [c for i, c in enumerate(codes) if i % 5] == [200] * 48  # every valid request answered
    assert {c for i, c in enumerate(codes) if i % 5 == 0} == {422}


def test_a_batch_returns_one_result_or_one_error_per_answer():
    answers = [{"id": "ok", "answer": "Statins lower LDL cholesterol [2].", "passages": PASSAGES},
               {"id": "range", "answer": "Claim [1-5000].", "passages": PASSAGES},
               {"id": "blank", "answer": "Claim [1].", "passages": ["  "]},  # guarded: its citation unverified
               {"answer": "Aspirin inhibits cyclooxygenase [1].", "passages": PASSAGES}]
    with running(ServeConfig(verifier="lexical")) as url:
        r = httpx.post(f"{url}/v1/guard", json={"answers": answers}, timeout=30)
    assert r.status_code == 200
    res = r.json()["results"]
    assert [x.get("id") for x in res] == ["ok", "range", "blank", None]
    assert res[0]["report"]["verified"] == 1 and res[3]["report"]["verified"] == 1
    assert (res[1]["index"], res[1]["limit"]) == (1, "max_range")
    # a blank passage is nothing to check against: its citation fails closed, the answer is still guarded
    assert res[2]["guarded_answer"] == "Claim [1 UNVERIFIED]." and res[2]["report"]["unverified"] == 1
    assert "no text a reader can see" in res[2]["report"]["audit"][0]["reason"]
    c = r.json()["counts"]
    assert (c["answers"], c["failed_answers"], c["n_citations"], c["unverified"]) == (3, 1, 3, 1)


def test_a_scorer_error_fails_only_the_request_whose_units_caused_it():
    with running(ServeConfig(verifier="lexical", max_wait_ms=100), scorer=Failing()) as url:
        def post(i: int) -> tuple[int, dict]:
            claim = "boom claim" if i == 3 else f"Statins lower LDL cholesterol {i}"
            r = httpx.post(f"{url}/v1/score", json={"pairs": [{"claim": claim, "passage": PASSAGES[1]}]}, timeout=30)
            return r.status_code, r.json() if r.status_code == 200 else {}

        with ThreadPoolExecutor(12) as ex:
            out = list(ex.map(post, range(12)))
    assert [c for c, _ in out] == [500 if i == 3 else 200 for i in range(12)]


def _cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow  # timing-based: in the slow tier, where nothing else shares its run
def test_a_timed_out_request_frees_its_cpu_within_a_second():
    """A request far past its timeout: 504, and the server's CPU is idle again a second later."""
    from service_helpers import free_port, wait_ready

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", "lexical", "--port",
                             str(port), "--request-timeout", "1", "--no-reattribute"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_ready(url)
        # 40 passages of distinct words (~200,000 characters, ~660 distinct windows each) and 800 claims, each
        # citing one: ~530,000 distinct (claim, window) units, many seconds of lexical work. (Passages that repeat
        # one stretch have few distinct windows, and a fast machine finished them within the timeout.)
        passages = [" ".join(f"x{j}y{i}" for i in range(25_000)) for j in range(40)]
        big = {"answer": " ".join(f"Claim {i} about x{i % 40}y{i} [{1 + i % 40}]." for i in range(800)),
               "passages": passages}
        t0 = time.perf_counter()
        r = httpx.post(f"{url}/v1/guard", json=big, timeout=60)
        assert r.status_code == 504 and time.perf_counter() - t0 < 5
        time.sleep(1.0)
        c0 = _cpu_seconds(proc.pid)
        time.sleep(1.0)
        assert _cpu_seconds(proc.pid) - c0 < 0.2  # idle: the work stopped, it did not run on after the 504
        assert httpx.get(f"{url}/readyz").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ---------------------------------------------------------------- bounded I/O


def test_a_chunked_body_past_the_limit_is_a_413():
    with running(ServeConfig(verifier="lexical", limits=Limits(max_request_bytes=10_000))) as url:
        def chunks():
            yield b'{"answer": "'
            for _ in range(100):
                yield b"x" * 1000
            yield b'", "passages": ["p"]}'

        r = httpx.post(f"{url}/v1/guard", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.json()["limit"] == "max_request_bytes"
        small = httpx.post(f"{url}/v1/guard", content=iter([json.dumps({"answer": "a [1].", "passages": ["a"]}).encode()]),
                           headers={"content-type": "application/json"})
        assert small.status_code == 200  # a chunked body under the limit is read as usual


class Upstream(LoopbackServer):
    """A scripted OpenAI-compatible upstream on loopback (a real HTTP server). ``body`` and ``content_type``
    may be changed between requests (the generated suites set them per case)."""

    def __init__(self, body: bytes, status: int = 200, delay: float = 0.0, content_type: str = "application/json"):
        from http.server import BaseHTTPRequestHandler

        outer = self
        self.calls = 0
        self.bodies: list[dict] = []
        self.headers: list[dict] = []  # what each request carried, so a test can see what reached the upstream
        self.body, self.content_type = body, content_type

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                outer.calls += 1
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers.get("content-length", 0)))))
                time.sleep(delay)
                self.send_response(status)
                self.send_header("content-type", outer.content_type)
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *a):
                pass

        self.serve(H)
        self.thread.start()
        self.url = f"http://user:s3cret@127.0.0.1:{self.server.server_address[1]}/v1"

    def url_with(self, userinfo: str = "", query: str = "") -> str:
        """This upstream's URL with other credentials (``user:password``, quoted as given) or a query."""
        at = f"{userinfo}@" if userinfo else ""
        return f"http://{at}127.0.0.1:{self.server.server_address[1]}/v1" + (f"?{query}" if query else "")

    def close(self):
        self.server.shutdown()


CHAT = {"model": "m", "messages": [{"role": "user", "content": "q"}], "citebound": {"passages": PASSAGES}}


@pytest.mark.parametrize("body,status,delay,expect,why", [
    (b"x" * 200_000, 200, 0, 502, "over 100000 bytes"),
    (b"{not json", 200, 0, 502, "malformed JSON"),
    (b'{"choices": []}', 200, 0, 502, "malformed JSON"),
    (b'{"error": "nope"}', 401, 0, 401, "answered 401"),  # the client's key refused: kept (test_upstream_status.py)
    (b'{"error": "nope"}', 500, 0, 502, "answered 500"),
    (json.dumps({"choices": [{"message": {"content": "Statins lower LDL [2]."}}]}).encode(), 200, 3, 504,
     "did not answer within 1.5 s (--request-timeout"),
])
def test_the_proxy_bounds_its_upstream_and_never_echoes_credentials(body, status, delay, expect, why):
    up = Upstream(body, status, delay)
    try:
        cfg = ServeConfig(verifier="lexical", upstream=up.url, request_timeout_s=1.5,
                          limits=Limits(max_upstream_bytes=100_000))
        with running(cfg) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30)
    finally:
        up.close()
    # OpenAI's error shape: the openai SDK raises on it
    assert r.status_code == expect and why in r.json()["error"]["message"]
    assert "s3cret" not in r.text and "user:" not in r.text


def test_the_proxy_checks_passages_before_it_pays_for_the_upstream():
    up = Upstream(json.dumps({"choices": [{"message": {"content": "x"}}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, limits=Limits(max_passages=1))) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT)
    finally:
        up.close()
    assert r.status_code == 422 and r.json()["error"]["code"] == "max_passages" and up.calls == 0


# ---------------------------------------------------------------- one clear line for every bad CLI input


@pytest.mark.slow  # ten fresh interpreters
@pytest.mark.parametrize("content,args,message", [
    (b'{"answer": "a \\ud800 [1].", "passages": ["a"]}', [], "lone surrogate"),
    (b'{"answer": "caf\xe9 [1].", "passages": ["a"]}', [], "not UTF-8"),
    (b"[" * 200_000 + b"]" * 200_000, [], "nested too deeply"),
    (b'{"answer": "a [1].", "passages": ["a"], "citation_base": "one"}', [], "citation_base"),
    (b'{"answer": "a [1].", "passages": ["a"], "citation_base": 1.5}', [], "citation_base"),
    (b'{"answer": "a [' + b"7" * 5000 + b'].", "passages": ["a"]}', [], "digits"),
    (b'{"answer": "a", "passages": ["a"], "citation_base": ' + b"1" * 5000 + b"}", [], "not usable JSON"),
    (b'{"answer": "a [1].", "passages": ["a"]}', ["--threads", "-3"], "--threads"),
    (b'{"answer": "a [1].", "passages": ["a"]}', ["--override", "modle=x"], "did you mean 'model'"),
    (b'{"answer": "a [1].", "passages": ["a"]}', ["--limit", "max_range=abc"], "NAME=INTEGER"),
])
def test_bad_cli_input_is_one_error_line_and_exit_2(tmp_path, content, args, message):
    p = tmp_path / "in.json"
    p.write_bytes(content)
    r = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(p), "--verifier", "lexical",
                        *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith("error: ") and message in lines[-1] and "Traceback" not in r.stderr


def test_stdin_is_under_the_same_byte_limit():
    r = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", "-", "--verifier", "lexical",
                        "--limit", "max_request_bytes=1000"], input=b"x" * 5000, capture_output=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and b"stdin has more than 1000 bytes" in r.stderr


@pytest.mark.slow  # two fresh interpreters
def test_a_missing_api_key_and_an_unreachable_endpoint_are_named(tmp_path, monkeypatch):
    p = tmp_path / "in.json"
    p.write_text(json.dumps({"answer": "Aspirin lowers fever [1].", "passages": ["Aspirin lowers fever."]}))
    from citebound import definitions

    var = definitions.load("verifier", "llm_judge").get("api_key_env", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k != var}
    r = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(p), "--verifier", "llm_judge",
                        "--override", "base_url=http://127.0.0.1:9/v1"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=env)
    assert r.returncode == 2 and f"${var}" in r.stderr and "Traceback" not in r.stderr
    env[var] = "k"
    r = subprocess.run([sys.executable, "-m", "citebound.cli.main", "guard", "--input", str(p), "--verifier", "llm_judge",
                        "--override", "base_url=http://127.0.0.1:9/v1", "--override", "max_retries=0"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    # fails closed: the answer is written with its citation unverified, and the command says why and exits 2
    assert r.returncode == 2 and "127.0.0.1:9" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "could not be checked" in r.stderr and json.loads(r.stdout)["report"]["unverified"] == 1


# ---------------------------------------------------------------- calibration files


@pytest.mark.parametrize("tau,why", [(float("-inf"), "not a finite number"), (float("inf"), "not a finite number"),
                                      (None, "has no threshold"), ("0.5", "not a number")])
def test_a_calibration_without_a_finite_tau_is_refused(tmp_path, tau, why):
    from citebound.calibration.files import FORMAT
    cal = {"format": FORMAT, "alpha": 0.1, "tau": tau, "verifier": "lexical", "verifier_hash": "x"}
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(cal))
    with pytest.raises(ValueError, match=why):
        Guard("lexical", calibration=str(p))


@pytest.mark.slow  # a bounded fuzz pass
def test_hostile_strings_never_500_the_service():
    """A bounded fuzz pass: random JSON-ish bodies and random answers; every answer is 2xx or 4xx."""
    rng = np.random.default_rng(7)
    alphabet = list("[]()0123456789-,.| \n<>!-hidden\u200b\u2013abc") + ["[[1]](", "<!--", "-->", "\\ud800", "1-1000"]
    with running(ServeConfig(verifier="lexical")) as url:
        codes = []
        for i in range(150):
            ans = "".join(rng.choice(alphabet, size=int(rng.integers(1, 400))))
            body = {"answer": ans, "passages": PASSAGES[: int(rng.integers(1, 3))]}
            if i % 3 == 0:
                raw = json.dumps(body).replace("\\\\ud800", "\\ud800")
                r = httpx.post(f"{url}/v1/guard", content=raw, headers={"content-type": "application/json"}, timeout=30)
            elif i % 3 == 1:
                r = httpx.post(f"{url}/v1/guard", json={"answers": [body, body]}, timeout=30)
            else:
                junk = bytes(rng.integers(0, 256, size=int(rng.integers(1, 300)), dtype=np.uint8))
                r = httpx.post(f"{url}/v1/guard", content=junk, headers={"content-type": "application/json"}, timeout=30)
            codes.append(r.status_code)
    assert all(c < 500 for c in codes), sorted(set(codes))
    assert codes.count(200) > 40


def _labelling_app(tmp_path, host="127.0.0.1", port=8766):
    from citebound.labelling.app import create_label_app
    from citebound.labelling.store import LabelSession, LabelStore, citation_population, score_items, uniform_sample
    from citebound.scoring.loader import load_scorer

    recs = [{"answer": "Statins lower LDL cholesterol [2]. Aspirin cures migraine [1].", "passages": PASSAGES}]
    items, _ = citation_population(recs, [1], "a.jsonl")
    sample = score_items(uniform_sample(items, None, 0), load_scorer("lexical"))
    meta = {"sample_seed": 0, "sample_size": 2, "input_sha256": "x", "verifier": "lexical", "verifier_hash": "h"}
    return create_label_app(LabelSession(sample, LabelStore(tmp_path / "l.jsonl", meta), "me"), host=host, port=port,
                            token="T0K")


def test_the_labelling_page_refuses_other_sites(tmp_path):
    from fastapi.testclient import TestClient

    client = TestClient(_labelling_app(tmp_path), base_url="http://127.0.0.1:8766")
    page = client.get("/")
    assert page.status_code == 200 and 'content="T0K"' in page.text
    item = client.get("/api/state").json()["item"]["item_id"]
    ok = {"x-citebound-token": "T0K"}
    # another site's page: no token (CSRF), or a wrong Origin, or a rebound Host
    assert client.post("/api/undo").status_code == 403
    assert client.post("/api/undo", headers={**ok, "origin": "http://evil.example"}).status_code == 403
    assert client.get("/api/state", headers={"host": "evil.example:8766"}).status_code == 421
    assert client.post("/api/label", headers={**ok, "host": "evil.example"},
                       json={"item_id": item, "judgement": "supported"}).status_code == 421
    # bounded notes and bodies; a bad judgement names the field
    assert client.post("/api/label", headers=ok, json={"item_id": item, "judgement": "supported",
                                                       "note": "n" * 3000}).status_code == 422
    assert client.post("/api/label", headers=ok, content=b"x" * 20_000).status_code == 413
    assert client.post("/api/label", headers=ok, json={"item_id": item, "judgement": "maybe"}).status_code == 422
    # the page itself, with its token and its own origin, labels
    r = client.post("/api/label", headers={**ok, "origin": "http://127.0.0.1:8766"},
                    json={"item_id": item, "judgement": "supported", "note": "fine"})
    assert r.status_code == 200 and r.json()["position"] == 1
    assert (tmp_path / "l.jsonl").read_text().count("\n") == 1


@pytest.mark.parametrize("line,message", [
    ('{"item_id": "a#s0#c2", "judgement": "supported", "label": 0}', "does not match judgement"),
    ('{"item_id": "a#s0#c2", "judgement": "perhaps", "label": 1}', "'judgement' must be one of"),
    ('{"item_id": 7, "judgement": "supported", "label": 1}', "'item_id' must be a str"),
    ('{"item_id": "a", "judgement": "supported", "label": 1, "score": "high"}', "'score' must be a finite number"),
    ('[1, 2]', "not a label record"),
])
def test_a_hand_edited_labels_file_names_the_line(tmp_path, line, message):
    from citebound.labelling.store import LabelError, LabelStore

    meta = {"sample_seed": 0, "sample_size": 2, "input_sha256": "x", "verifier": "lexical", "verifier_hash": "h"}
    good = json.dumps({"item_id": "z", "judgement": "cant_tell", "label": None, "score": 0.5, **meta})
    p = tmp_path / "l.jsonl"
    p.write_text(good + "\n" + line + "\n")
    with pytest.raises(LabelError, match=re.escape(f"{p}:2: ") + ".*" + re.escape(message)):
        LabelStore(p, meta)


@pytest.mark.parametrize("template", [None, "Use these:\n{passages}"])
def test_the_proxy_puts_the_passages_into_the_upstream_prompt_only_when_asked(template):
    up = Upstream(json.dumps({"choices": [{"message": {"content": "Statins lower LDL cholesterol [2]."}}]}).encode())
    try:
        with running(ServeConfig(verifier="lexical", upstream=up.url, passages_prompt=template)) as url:
            r = httpx.post(f"{url}/v1/chat/completions", json=CHAT)
    finally:
        up.close()
    sent = up.bodies[0]["messages"]
    assert r.status_code == 200 and "citebound" not in up.bodies[0]
    if template is None:
        assert sent == CHAT["messages"]
    else:
        assert sent[0] == {"role": "system", "content": f"Use these:\n[1] {PASSAGES[0]}\n\n[2] {PASSAGES[1]}"}
        assert sent[1:] == CHAT["messages"]


@pytest.mark.parametrize("extra,code", [(0, 200), (1, 413)])
def test_a_label_body_of_exactly_the_bound_is_read_and_one_byte_more_is_not(tmp_path, extra, code):
    """MAX_BODY_BYTES is the largest body taken: a label padded with JSON whitespace to exactly it is recorded."""
    from fastapi.testclient import TestClient

    from citebound.labelling.app import MAX_BODY_BYTES

    client = TestClient(_labelling_app(tmp_path), base_url="http://127.0.0.1:8766")
    item = client.get("/api/state").json()["item"]["item_id"]
    body = json.dumps({"item_id": item, "judgement": "supported"}).encode()
    body = body[:-1] + b" " * (MAX_BODY_BYTES + extra - len(body)) + b"}"
    assert len(body) == MAX_BODY_BYTES + extra
    r = client.post("/api/label", headers={"x-citebound-token": "T0K", "content-type": "application/json"},
                    content=body)
    assert r.status_code == code, r.text
    assert (tmp_path / "l.jsonl").exists() is (code == 200)
