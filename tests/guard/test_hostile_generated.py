"""Generated hostile input, face by face: hypothesis draws the cases, the properties are what a user
relies on whatever the draw.

- every CLI reader of JSON/JSONL (guard, calibrate, monitor, label, score, train, convert) meets files
  that are broken on purpose: not UTF-8, truncated, nested deep, a non-finite or 5,000-digit number, a BOM,
  a NUL, a scalar where a record belongs; it answers with one line naming the file, never a traceback
  (convert reads released files as upstream wrote them, NaN included, and writes NaN as null);
- the service and the proxy meet a non-finite number at any path of a body and answer 422 naming that path
  (the proxy in OpenAI's error shape);
- the proxy meets upstream responses with one to three choices and tool calls, streamed and not: a second
  choice never passes (refused, its text never sent), tool calls pass through unchanged and are counted as
  unchecked, and every citation of the one choice is counted in the report;
- MCP meets lines with the same hostile values and always replies, with the request's id.

The expected counts come from how each case was built (markers and sentences written by the generator)."""
import contextlib
import io
import json
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
from citebound.cli.main import main  # noqa: E402
from citebound.serving import ServeConfig  # noqa: E402
from tests.service_helpers import running  # noqa: E402

P = ["Aspirin reduces the risk of heart attacks in adults.", "Mitochondria produce ATP in cells."]
# derandomized: CI runs the same draws every time (other seeds were run while writing these: --hypothesis-seed)
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- hostile files for every CLI reader

# one record every reader would accept: an answer with passages, a labelled pair, a score, a report
GOOD = {"answer": "Aspirin reduces heart attacks [1].", "passages": [P[0]], "claim": "Aspirin reduces heart attacks.",
        "passage": P[0], "label": 1, "score": 0.5, "output": "Aspirin reduces heart attacks [1].",
        "ctxs": [{"text": P[0]}], "report": {"audit": [{"score": 0.5}]}}
NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e999"]


def _with(field: str, literal: str) -> bytes:
    body = json.dumps(GOOD | {field: "__HOSTILE__"})
    return body.replace('"__HOSTILE__"', literal).encode()


# (class, must the reader refuse it?) -> the bytes of one line
hostile_line = st.one_of(
    st.tuples(st.just("not utf-8"), st.binary(min_size=1, max_size=20).map(lambda b: b'{"answer": "' + b"\xff" + b)),
    st.tuples(st.just("truncated"), st.integers(1, len(json.dumps(GOOD)) - 1).map(lambda k: json.dumps(GOOD)[:k].encode())),
    st.tuples(st.just("deep"), st.integers(5_000, 120_000).map(lambda n: b"[" * n + b"]" * n)),
    st.tuples(st.just("non-finite"), st.tuples(st.sampled_from(["label", "score", "id", "citation_base"]),
                                               st.sampled_from(NON_FINITE)).map(lambda fv: _with(*fv))),
    st.tuples(st.just("huge int"), st.sampled_from(["label", "score", "citation_base"]).map(lambda f: _with(f, "9" * 5000))),
    st.tuples(st.just("bom"), st.just(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())),
    st.tuples(st.just("nul"), st.just(b'{"answer": "a\x00 [1].", "passages": ["a"]}')),
    st.tuples(st.just("scalar"), st.sampled_from([b"42", b'"x"', b"null", b"true", b"[1, 2]"])),
)
STRICT = {"not utf-8", "truncated", "deep", "non-finite", "huge int", "bom", "nul"}  # invalid JSON text for every reader

READERS = {
    "guard jsonl": lambda f, d: ["guard", "--input", f, "--verifier", "lexical", "--out", f"{d}/o.jsonl"],
    "guard json": lambda f, d: ["guard", "--input", f, "--verifier", "lexical", "--out", f"{d}/o.json"],
    "calibrate labels": lambda f, d: ["calibrate", "--labels", f, "--verifier", "lexical", "--out", f"{d}/c.json"],
    "calibrate scores": lambda f, d: ["calibrate", "--scores", f, "--verifier", "lexical", "--out", f"{d}/c.json"],
    "monitor reports": lambda f, d: ["monitor", "--reports", f, "--calibration", f"{d}/cal.json"],
    "monitor labels": lambda f, d: ["monitor", "--reports", f"{d}/good.jsonl", "--calibration", f"{d}/cal.json",
                                    "--labels", f],
    "label": lambda f, d: ["label", "--input", f, "--out", f"{d}/l.jsonl", "--sample", "3", "--verifier", "lexical"],
    "score": lambda f, d: ["score", "--input", f, "--verifier", "lexical", "--out", f"{d}/s.jsonl"],
    "train": lambda f, d: ["train", "--input", f, "--out", f"{d}/head"],
    "convert": lambda f, d: ["convert", "--format", "ctxs", f, "--out", f"{d}/v.jsonl"],
}


class _OwnThread(io.StringIO):
    """What the calling thread writes; another thread's writes (a server thread an earlier test left behind,
    reporting a client that went away) go to the real stderr, not into this CLI run's output."""

    def __init__(self) -> None:
        super().__init__()
        self.owner = threading.get_ident()

    def write(self, s: str) -> int:
        if threading.get_ident() != self.owner:
            return sys.__stderr__.write(s)
        return super().write(s)


def _run_cli(argv: list[str]) -> tuple[int, str]:
    err, out = _OwnThread(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse
            rc = e.code if isinstance(e.code, int) else 2
    return rc, err.getvalue()


@pytest.mark.parametrize("reader", sorted(READERS))
@SETTINGS
@given(line=hostile_line, before=st.booleans())
def test_every_cli_reader_answers_a_hostile_file_with_one_line(reader, line, before):
    """A reader refuses a file holding hostile text with exit 2 and one ``error:`` line naming the file
    (a raised exception fails this test with its traceback). ``before``: a good line precedes the bad one."""
    kind, data = line
    before = before and reader != "label"  # with a good answer, label would sample it and open its page
    with tempfile.TemporaryDirectory() as d:
        shutil_cal = Path(__file__).resolve().parents[2] / "citebound" / "calibrations" / "lexical.json"
        Path(d, "cal.json").write_bytes(shutil_cal.read_bytes())
        from citebound.guarding.card import calibration_hash

        card = {"calibration_hash": calibration_hash(json.loads(shutil_cal.read_text()))}  # guarded under cal.json
        Path(d, "good.jsonl").write_text(json.dumps({"report": {"audit": [{"score": 0.5}], "guarantee_card": card}})
                                         + "\n")
        suffix = ".json" if reader == "guard json" else ".jsonl"
        f = Path(d, "in" + suffix)
        f.write_bytes((json.dumps(GOOD).encode() + b"\n" if before and suffix == ".jsonl" else b"") + data + b"\n")
        rc, err = _run_cli(READERS[reader](str(f), d))
        out_text = Path(d, "v.jsonl").read_text() if Path(d, "v.jsonl").exists() else ""
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.startswith("error:")]
    if reader == "convert" and kind == "non-finite":
        # a released file is read as upstream wrote it (they hold NaN); what convert writes is JSON, NaN as null
        # (counted, where the NaN sits in a field it writes; one in a field it does not copy is not written at all)
        assert rc == 0 and ("written as null" in err or "NaN" not in out_text), err[-500:]
        from citebound.scoring.io import strict_json

        assert [strict_json(x) for x in out_text.splitlines()]
    elif kind in STRICT:
        assert rc == 2 and len(lines) == 1 and f.name in lines[0], (kind, rc, err[-500:])
    else:  # wrong-typed records: refused, skipped and reported, or (a surrogate in a field nobody reads) accepted
        assert rc in (0, 1, 2), (kind, rc, err[-500:])
        if rc == 2:
            assert len(lines) == 1, err[-500:]


# ---------------------------------------------------------------- the service and the proxy: non-finite numbers

@pytest.fixture(scope="module")
def upstream():
    from tests.guard.test_hostile import Upstream

    up = Upstream(b"{}")  # each case sets up.body and up.content_type
    yield up
    up.close()


@pytest.fixture(scope="module")
def url(upstream):
    with running(ServeConfig(verifier="lexical", upstream=upstream.url, reattributor=None, max_wait_ms=1)) as u:
        yield u


def _path_name(path: list) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def _set(body: dict, path: list, value: object) -> dict:
    body = json.loads(json.dumps(body))  # a copy: the module's passages are never changed
    cur = body
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return body


ROUTE_BODIES = {
    "/v1/guard": (lambda: {"answer": "Aspirin reduces heart attacks [1].", "passages": [P[0], {"text": P[1], "title": "t"}]},
                  [["id"], ["citation_base"], ["group"], ["passages", 1, "title"], ["extra"], ["extra", 0]]),
    "/v1/guard ": (lambda: {"answers": [{"answer": "A [1].", "passages": [P[0]]}, {"answer": "B [1].", "passages": [P[1]]}]},
                   [["answers", 0, "id"], ["answers", 1, "citation_base"], ["answers", 1, "passages", 0]]),
    "/v1/score": (lambda: {"pairs": [{"claim": "a", "passage": "a"}, {"claim": "b", "passage": "b"}]},
                  [["pairs", 1, "claim"], ["pairs", 0, "weight"], ["k"]]),
    "/v1/chat/completions": (lambda: {"model": "m", "messages": [{"role": "user", "content": "q"}],
                                      "citebound": {"passages": P}},
                             [["temperature"], ["messages", 0, "content"], ["citebound", "passages", 1], ["top_p"]]),
}


@SETTINGS
@given(route=st.sampled_from(sorted(ROUTE_BODIES)), data=st.data(), literal=st.sampled_from(NON_FINITE))
def test_a_non_finite_number_anywhere_is_a_422_naming_its_path(url, route, data, literal):
    make, paths = ROUTE_BODIES[route]
    path = data.draw(st.sampled_from(paths))
    base = make() | ({"extra": ["x"]} if path == ["extra", 0] else {})
    body = json.dumps(_set(base, path, "__HOSTILE__")).replace('"__HOSTILE__"', literal)
    r = httpx.post(url + route.strip(), content=body.encode(), headers={"content-type": "application/json"}, timeout=30)
    assert r.status_code == 422, r.text[:300]
    msg = r.json()["error"]["message"] if route.strip() == "/v1/chat/completions" else r.json()["detail"]
    assert msg.startswith(f"{_path_name(path)}: a non-finite number"), msg


# ---------------------------------------------------------------- the proxy: choices and tool calls

WORDS = ["Aspirin", "reduces", "heart", "attacks", "Mitochondria", "produce", "cells", "risk", "adults", "energy"]

# a sentence: 3-6 words, then 0-3 distinct citation numbers (0 to 3: valid, invalid and index 0) in one marker
sentence = st.tuples(st.lists(st.sampled_from(WORDS), min_size=3, max_size=6),
                     st.lists(st.integers(0, 3), max_size=3, unique=True))
tool_call = st.builds(lambda k, name: {"id": f"call_{k}", "type": "function",
                                       "function": {"name": name, "arguments": json.dumps({"k": k})}},
                      st.integers(0, 10**6), st.sampled_from(["search", "lookup"]))
choice = st.tuples(st.one_of(st.none(), st.lists(sentence, min_size=1, max_size=4)), st.lists(tool_call, max_size=2,
                                                                                               unique_by=lambda c: c["id"]))


def _text(sentences, k: int) -> tuple[str, int, int]:
    """The choice's text (its words, a sentinel word naming the choice, the markers), its citations, its uncited sentences."""
    parts, n, uncited = [], 0, 0
    for words, cites in sentences:
        marker = f" [{', '.join(map(str, cites))}]" if cites else ""
        parts.append(" ".join([words[0].capitalize(), *words[1:], f"choice{k}sentinel"]) + marker + ".")
        n += len(cites)
        uncited += not cites
    return " ".join(parts), n, uncited


@SETTINGS
@given(choices=st.lists(choice, min_size=1, max_size=3))
def test_no_second_choice_passes_and_tool_calls_pass_unchecked(url, upstream, choices):
    msgs = []
    for k, (sentences, calls) in enumerate(choices):
        text = _text(sentences, k)[0] if sentences else None
        msgs.append({"index": k, "finish_reason": "tool_calls" if calls else "stop",
                     "message": {"role": "assistant", "content": text} | ({"tool_calls": calls} if calls else {})})
    upstream.content_type, upstream.body = "application/json", json.dumps({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": msgs}).encode()
    r = httpx.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "q"}],
                                                        "citebound": {"passages": P}}, timeout=30)
    for k in range(1, len(choices)):
        assert f"choice{k}sentinel" not in r.text  # never sent, not even in an error
    if len(choices) > 1:
        assert r.status_code == 502 and f"{len(choices)} choices" in r.json()["error"]["message"]
        return
    sentences, calls = choices[0]
    assert r.status_code == 200, r.text[:300]
    got = r.json()
    extra = got["citebound"]
    assert got["choices"][0]["message"].get("tool_calls", []) == calls
    assert extra["unchecked_tool_calls"] == len(calls) and r.headers["x-citebound-unchecked-tool-calls"] == str(len(calls))
    assert "original_content" not in extra
    _, n, uncited = _text(sentences, 0) if sentences else ("", 0, 0)
    rep = extra["report"]
    assert rep["n_citations"] == n
    assert sum(rep[k] for k in ("verified", "reattributed", "flagged", "invalid", "unverified")) == n
    assert rep["uncited"] == uncited and r.headers["x-citebound-uncited"] == str(uncited)


def _sse(events: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


@SETTINGS
@given(choices=st.lists(choice, min_size=1, max_size=2), cut=st.integers(1, 7), interleave=st.booleans())
def test_a_stream_never_passes_a_second_choice_and_passes_tool_calls(url, upstream, choices, cut, interleave):
    per_choice = []
    for k, (sentences, calls) in enumerate(choices):
        text = _text(sentences, k)[0] if sentences else ""
        evs = [{"choices": [{"index": k, "delta": {"role": "assistant", "content": ""}}]}]
        evs += [{"choices": [{"index": k, "delta": {"content": text[i:i + cut]}}]} for i in range(0, len(text), cut)]
        evs += [{"choices": [{"index": k, "delta": {"tool_calls": [dict(c, index=j)]}}]} for j, c in enumerate(calls)]
        evs.append({"choices": [{"index": k, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]})
        per_choice.append(evs)
    events = per_choice[0] + (per_choice[1] if len(per_choice) > 1 else [])
    if interleave and len(per_choice) > 1:  # the second choice's chunks between the first's
        events = [e for pair in zip(per_choice[0], per_choice[1]) for e in pair]
    for e in events:
        e.update({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"})
    upstream.content_type, upstream.body = "text/event-stream", _sse(events)
    with httpx.stream("POST", f"{url}/v1/chat/completions", json={"model": "m", "stream": True, "messages": [
            {"role": "user", "content": "q"}], "citebound": {"passages": P}}, timeout=30) as r:
        raw = r.read().decode()
    out = [json.loads(x[6:]) for x in raw.split("\n\n") if x.startswith("data: {")]
    assert "choice1sentinel" not in raw
    errors = [o for o in out if "error" in o]
    if len(choices) > 1:
        assert errors and "more than one choice" in errors[-1]["error"]["message"]
        return
    assert not errors, errors
    sentences, calls = choices[0]
    sent_calls = [c for o in out for ch in o.get("choices", []) for c in ch["delta"].get("tool_calls", [])]
    assert [{k: v for k, v in c.items() if k != "index"} for c in sent_calls] == calls
    last = out[-1]
    assert last["citebound"]["unchecked_tool_calls"] == len(calls)
    _, n, uncited = _text(sentences, 0) if sentences else ("", 0, 0)
    rep = last["citebound"]["report"]
    assert rep["n_citations"] == n and rep["uncited"] == uncited
    text = "".join(ch["delta"].get("content") or "" for o in out for ch in o.get("choices", []))
    assert len(re.findall(r"\[[^\]]*\d[^\]]*\]", text)) == sum(1 for _, c in (sentences or []) if c)


# ---------------------------------------------------------------- MCP: a reply to every hostile line

@pytest.fixture(scope="module")
def mcp():
    p = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "mcp", "--verifier", "lexical"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def ask(line: bytes) -> dict:
        p.stdin.write(line + b"\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode())
    p.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    yield ask
    p.stdin.close()
    p.wait(20)


TYPED = {"guard_answer": ("answer", "passages", "citation_base"), "verify_citation": ("claim", "passage")}


@settings(max_examples=40, deadline=None, derandomize=True)
@given(tool=st.sampled_from(["guard_answer", "verify_citation"]), field=st.sampled_from(
    ["citation_base", "answer", "passages", "claim", "passage", "group", "detail", "extra"]),
    literal=st.sampled_from(NON_FINITE + ['"\\ud800"', "[" * 50 + "]" * 50, "9" * 5000, "true", "{}"]),
    rid=st.integers(1, 10**9))
def test_mcp_replies_to_every_hostile_call_with_its_id(mcp, tool, field, literal, rid):
    args = {"answer": "Aspirin reduces heart attacks [1].", "passages": P} if tool == "guard_answer" else \
        {"claim": "Aspirin reduces heart attacks.", "passage": P[0]}
    args[field] = "__HOSTILE__"
    line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}})
    reply = mcp(line.replace('"__HOSTILE__"', literal).encode())
    assert reply["id"] == rid and ("error" in reply or "result" in reply)
    refused = "error" in reply or reply["result"].get("isError")
    if literal in NON_FINITE or literal in ('"\\ud800"', "9" * 5000):  # never valid, whatever the field
        assert refused, reply
    elif field in TYPED[tool]:  # a list, a bool or an object where a text, a list of texts or 0/1 belongs
        assert refused, reply
