"""One case table (tests/guard_cases.py, worked out by hand) run by every face: the library (one answer at a
time, and every answer of a config in one mixed batch), the CLI (JSONL, all answers in one file, and JSON,
one file per answer), the service (one batch per group, and each answer as its own concurrent request), the
proxy (the openai SDK, streamed and not, against a scripted upstream), MCP (the official SDK's client over
stdio) and a served verifier (kind remote: lexical's twin behind a scripted model server, with the same
calibration re-stamped for it). Every face must give the case's text, counts and review budget: a rule that holds in one face and
not in another fails here by construction."""
from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from guard_cases import CASES, CONFIGS, COUNTS, Case, by_config, write_calibration

from citebound import Guard
from citebound.cli.main import main

FACES = ["library", "library-batch", "library-stream", "cli-jsonl", "cli-json", "service-batch", "service-concurrent",
         "proxy", "proxy-stream", "responses", "responses-stream", "messages", "messages-stream", "mcp", "library-remote"]


@pytest.fixture(scope="module")
def cal(tmp_path_factory):
    return write_calibration(tmp_path_factory.mktemp("cal"))


def flags(config: str) -> list[str]:
    out = []
    for k, v in CONFIGS[config].items():
        out += [f"--{k.replace('_', '-')}", str(v)]
    return out


def check(face: str, case: Case, text: str | None, report: dict) -> None:
    got = {k: int(report[k]) for k in COUNTS}
    assert (text, got) == (case.text, case.expected_counts()), (face, case.name)
    assert report["review_budget"] == pytest.approx(case.budget, abs=1e-12), (face, case.name)


# ---------------------------------------------------------------- the faces: each returns [(text, report)]

def library(cal, config, cases):
    g = Guard("lexical", calibration=str(cal), **CONFIGS[config])
    out = []
    for c in cases:
        text, rep = g.guard(c.answer, c.passages, base=c.base, group=c.group)
        out.append((None if rep.blocked else text, rep.to_dict()))
    return out


def library_batch(cal, config, cases):
    """Every answer of a group in one guard_each call (mixed bases, unequal lengths), in order."""
    g = Guard("lexical", calibration=str(cal), **CONFIGS[config])
    out: list = [None] * len(cases)
    for group in {c.group for c in cases}:
        idx = [i for i, c in enumerate(cases) if c.group == group]
        done = g.guard_each([(cases[i].answer, cases[i].passages, cases[i].base) for i in idx], group=group)
        for i, (text, rep) in zip(idx, done):
            out[i] = (None if rep.blocked else text, rep.to_dict())
    return out


def library_stream(cal, config, cases):
    """Each answer through ``Guard.stream`` in word pieces: the text it yields joined, then its report; a blocked
    stream's text is what went out before the budget passed (the case's ``stream_sent``)."""
    import re

    g = Guard("lexical", calibration=str(cal), **CONFIGS[config])
    out = []
    for c in cases:
        *texts, rep = g.stream(re.findall(r"\S+\s*", c.answer), c.passages, base=c.base, group=c.group)
        if rep.blocked:
            assert "".join(texts).strip() == c.stream_sent, (c.name, texts)
        out.append((None if rep.blocked else "".join(texts), rep.to_dict()))
    return out


def record(c: Case, i: int) -> dict:
    r = {"id": f"{i}-{c.name}", "answer": c.answer, "passages": c.passages, "citation_base": c.base}
    return r | ({"group": c.group} if c.group else {})


def cli_jsonl(cal, config, cases, tmp_path):
    src, dst = tmp_path / f"{config}.jsonl", tmp_path / f"{config}.out.jsonl"
    src.write_text("".join(json.dumps(record(c, i)) + "\n" for i, c in enumerate(cases)))
    assert main(["guard", "--input", str(src), "--out", str(dst), "--verifier", "lexical", "--calibration", str(cal),
                 "--quiet", *flags(config)]) == 0
    rows = [json.loads(line) for line in dst.read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"{i}-{c.name}" for i, c in enumerate(cases)]
    return [(r["guarded_answer"], r["report"]) for r in rows]


def cli_json(cal, config, cases, tmp_path):
    out = []
    for i, c in enumerate(cases):
        src, dst = tmp_path / f"{config}-{i}.json", tmp_path / f"{config}-{i}.out.json"
        src.write_text(json.dumps(record(c, i), indent=1))
        assert main(["guard", "--input", str(src), "--out", str(dst), "--verifier", "lexical", "--calibration",
                     str(cal), "--quiet", *flags(config)]) == 0
        r = json.loads(dst.read_text())
        out.append((r["guarded_answer"], r["report"]))
    return out


def _service_cfg(cal, config, upstream=None):
    from citebound.serving.state import ServeConfig

    return ServeConfig(verifier="lexical", calibrations=str(cal.parent), upstream=upstream, **CONFIGS[config])


def _one(body: dict) -> dict:
    return {"answer": body["answer"], "passages": body["passages"], "citation_base": body["citation_base"]}


def service(cal, config, cases, concurrent: bool):
    import httpx
    from service_helpers import running

    out: list = [None] * len(cases)
    with running(_service_cfg(cal, config)) as url, httpx.Client(timeout=60) as http:
        def post(body):
            r = http.post(f"{url}/v1/guard", json=body)
            assert r.status_code in (200, 403), r.text  # 403: blocked, with its report
            return r.json()

        if concurrent:  # each answer its own request, all at once: the batcher must not mix them
            bodies = [_one(record(c, i)) | {"calibration": "lab", "group": c.group} for i, c in enumerate(cases)]
            with ThreadPoolExecutor(len(bodies)) as pool:
                for i, r in enumerate(pool.map(post, bodies)):
                    out[i] = (None, r["report"]) if r.get("blocked") else (r["guarded_answer"], r["report"])
            return out
        for group in {c.group for c in cases}:
            idx = [i for i, c in enumerate(cases) if c.group == group]
            r = post({"answers": [_one(record(cases[i], i)) for i in idx], "calibration": "lab", "group": group})
            for i, res in zip(idx, r["results"]):
                out[i] = (res["guarded_answer"], res["report"])
    return out


def proxy(cal, config, cases, stream: bool):
    import openai
    from fake_stream import FakeStreamingOpenAI, Script
    from service_helpers import running

    scripts = {f"q{i}": Script([w + " " for w in c.answer.split(" ")[:-1]] + c.answer.split(" ")[-1:])
               for i, c in enumerate(cases)}
    out = []
    with FakeStreamingOpenAI(lambda body: scripts[body["messages"][0]["content"]]) as up, \
            running(_service_cfg(cal, config, up.base_url)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0, timeout=60)
        for i, c in enumerate(cases):
            extra = {"citebound": {"passages": c.passages, "citation_base": c.base, "calibration": "lab",
                                   "group": c.group}}
            kw = {"model": "fake", "messages": [{"role": "user", "content": f"q{i}"}], "extra_body": extra}
            if not stream:
                try:
                    resp = client.chat.completions.create(**kw)
                except openai.PermissionDeniedError as e:  # blocked: OpenAI's error shape, with the report
                    assert e.body["code"] == "blocked"
                    out.append((None, e.response.json()["citebound"]["report"]))
                    continue
                out.append((resp.choices[0].message.content, resp.model_extra["citebound"]["report"]))
                continue
            sent, report, finish = [], None, None
            for chunk in client.chat.completions.create(stream=True, **kw):
                if chunk.choices:
                    sent.append(chunk.choices[0].delta.content or "")
                    finish = chunk.choices[0].finish_reason or finish
                report = ((chunk.model_extra or {}).get("citebound") or {}).get("report") or report
            text = "".join(sent)
            if finish == "content_filter":  # blocked mid-stream: what went out before is the case's prefix
                assert report["blocked"] and text.strip() == c.stream_sent, (c.name, text)
                out.append((None, None))
                continue
            assert finish == "stop"
            out.append((text, report))
    return out


def api_face(cal, config, cases, api: str, stream: bool):
    """The Responses or Messages API through its own SDK (openai, anthropic) against a scripted upstream of that API;
    a blocked answer is the API's 403, or, streamed, a stream that ends in refusal (Messages) or response.incomplete
    (Responses) after the case's prefix."""
    import anthropic
    import httpx
    import openai
    from fake_apis import FakeAPIs, Turn
    from service_helpers import running, sse_data

    turns = {f"q{i}": Turn([w + " " for w in c.answer.split(" ")[:-1]] + c.answer.split(" ")[-1:]) for i, c in enumerate(cases)}
    out = []
    with FakeAPIs(lambda body: turns[body["input"] if api == "responses" else body["messages"][0]["content"]]) as up, \
            running(_service_cfg(cal, config, up.base_url)) as url:
        for i, c in enumerate(cases):
            extra = {"citebound": {"passages": c.passages, "citation_base": c.base, "calibration": "lab", "group": c.group}}
            if api == "responses":
                kw = {"model": "fake", "input": f"q{i}"}
            else:
                kw = {"model": "fake", "max_tokens": 9, "messages": [{"role": "user", "content": f"q{i}"}]}
            if stream:
                r = httpx.post(f"{url}/v1/{api}", json=kw | extra | {"stream": True}, timeout=60)
                events = sse_data(r)
                text = "".join(e["delta"] if api == "responses" else e["delta"]["text"] for e in events
                               if e.get("type") in ("response.output_text.delta", "content_block_delta"))
                (report,) = [e["report"] for e in events if e.get("type") == "citebound.report"]
                if report["blocked"]:
                    assert text.strip() == (c.stream_sent or ""), (c.name, text)
                    out.append((None, None) if c.stream_sent is not None else (None, report))
                    continue
                out.append((text, report))
                continue
            try:
                if api == "responses":
                    r = openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0).responses.create(**kw, extra_body=extra)
                    out.append((r.output_text, r.model_extra["citebound"]["report"]))
                else:
                    m = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0).messages.create(**kw, extra_body=extra)
                    out.append(("".join(b.text for b in m.content), m.model_extra["citebound"]["report"]))
            except (openai.PermissionDeniedError, anthropic.PermissionDeniedError) as e:
                out.append((None, e.response.json()["citebound"]["report"]))
    return out


def mcp_face(cal, config, cases):
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run():
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "citebound.cli.main", "mcp", "--verifier", "lexical", "--calibration", str(cal), *flags(config)])
        got = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for c in cases:
                args = {"answer": c.answer, "passages": c.passages, "citation_base": c.base, "detail": "full"}
                r = await session.call_tool("guard_answer", args | ({"group": c.group} if c.group else {}))
                assert not r.is_error, r.content
                body = r.structured_content or json.loads(r.content[0].text)
                got.append((body["guarded_answer"], body["report"]))
        return got

    return asyncio.run(run())


def restamp(node, name: str, vhash: str):
    """A calibration (and each of its groups) stamped for another verifier: the same numbers, another id."""
    if isinstance(node, dict):
        return {k: (name if k == "verifier" else vhash if k == "verifier_hash" else restamp(v, name, vhash))
                for k, v in node.items()}
    return [restamp(v, name, vhash) for v in node] if isinstance(node, list) else node


def library_remote(cal, config, cases, tmp_path):
    """lexical's served twin: a scripted model server whose class 0 is lexical's score of the (window, claim) it
    is sent, so every hand-worked result must come out again through HTTP, batching and the remote reading."""
    import citebound
    from tests.fake_classifier import FakeClassifier

    lexical = citebound.load_scorer("lexical").verifier
    out = []
    with FakeClassifier() as server:
        server.sep = "\x1f"

        def probs(window, claim):
            s = float(lexical.judge([claim], [window])[0][0])
            return [s, 1.0 - s]

        server.probs = probs
        s = citebound.load_scorer("remote_nli", overrides={"url": server.url, "model": server.model, "num_classes": 2,
                                                           "positive_label": None, "batch_size": 3,
                                                           "input_template": "{passage}\x1f{claim}"})
        twin = tmp_path / "remote-cal.json"
        twin.write_text(json.dumps(restamp(json.loads(cal.read_text()), "remote_nli", s.hash)))
        g = Guard(s, calibration=str(twin), **CONFIGS[config])
        for c in cases:
            text, rep = g.guard(c.answer, c.passages, base=c.base, group=c.group)
            out.append((None if rep.blocked else text, rep.to_dict()))
        assert any(r["path"] == "/classify" for r in server.requests)
    return out


def run_face(face, cal, config, cases, tmp_path):
    if face == "library-remote":
        return library_remote(cal, config, cases, tmp_path)
    if face == "library":
        return library(cal, config, cases)
    if face == "library-batch":
        return library_batch(cal, config, cases)
    if face == "library-stream":
        return library_stream(cal, config, cases)
    if face == "cli-jsonl":
        return cli_jsonl(cal, config, cases, tmp_path)
    if face == "cli-json":
        return cli_json(cal, config, cases, tmp_path)
    if face.startswith("service"):
        pytest.importorskip("fastapi")
        return service(cal, config, cases, face == "service-concurrent")
    if face.startswith(("responses", "messages")):
        pytest.importorskip("fastapi")
        pytest.importorskip("anthropic" if face.startswith("messages") else "openai")
        return api_face(cal, config, cases, face.split("-")[0], face.endswith("-stream"))
    if face.startswith("proxy"):
        pytest.importorskip("fastapi")
        pytest.importorskip("openai")
        return proxy(cal, config, cases, face == "proxy-stream")
    return mcp_face(cal, config, cases)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("face", FACES)
def test_every_face_gives_each_case_its_hand_worked_result(face, config, cal, tmp_path):
    cases = by_config()[config]
    results = run_face(face, cal, config, cases, tmp_path)
    assert len(results) == len(cases)
    for c, (text, report) in zip(cases, results):
        if face.endswith("-stream") and c.stream_sent is not None:
            continue  # checked in the face: the stream blocks on its prefix
        check(face, c, text, report)


def test_the_table_covers_what_bugs_hide_behind():
    """Several citations per sentence, index 0, a tau tie, several groups, every config, blocked and not."""
    assert any(c.base == 0 for c in CASES) and any(c.group for c in CASES) and {c.config for c in CASES} == set(CONFIGS)
    assert any(c.counts.get("n_citations", 0) > c.answer.count(".") for c in CASES)
    assert any(c.text is None for c in CASES) and any(c.config == "block" and c.text for c in CASES)
    assert len(CASES) * len(FACES) >= 150


def test_each_failed_citation_records_what_re_attribution_tried(cal):
    """MIXED by hand: "Unicorns [2]" (flagged) was tried against passages 1 and 3 (2 is the one it cites), both
    score 0; "Mitochondria [1]" (re-attributed) against 2 and 3, and 2 scores 1; the verified one tried none."""
    from guard_cases import MIXED, PASSAGES

    _, rep = Guard("lexical", calibration=str(cal)).guard(MIXED, PASSAGES)
    got = [(a.action, a.candidates, a.best_candidate) for a in rep.audit]
    assert got[0] == ("verified", 0, None)
    assert got[1][:2] == ("flagged", 2) and got[1][2]["score"] == 0.0
    assert got[2] == ("reattributed", 2, {"passage": 2, "score": 1.0})


def test_the_cli_counts_line_pools_the_budget_by_each_answers_denominator(tmp_path, capsys):
    """A: 1 verified citation + 1 uncited sentence (budget 1/2 over 2); B: 1 flagged citation (1 over 1). Pooled:
    (1 + 1) / (2 + 1) = 2/3, not the mean of the budgets (3/4) nor the citations-only weighting (3/4)."""
    from guard_cases import P1, P2

    rows = [{"id": "a", "answer": "Statins lower LDL cholesterol [1]. Aspirin is very old.", "passages": [P1, P2]},
            {"id": "b", "answer": "Unicorns sing opera loudly [2].", "passages": [P1, P2]}]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["guard", "--input", str(src), "--verifier", "lexical", "--quiet", "--out", str(tmp_path / "o.jsonl")]) == 0
    counts = json.loads(capsys.readouterr().err.split("counts: ", 1)[1].splitlines()[0])
    assert counts["review_budget"] == round(2 / 3, 4) and counts["uncited"] == 1 and counts["flagged"] == 1
