"""Every scan and parser that reads a request's text, timed at two sizes: the time at 4x the input must
stay under 11x (linear is ~4x, with cache effects up to ~8x; a quadratic scan is 16x). Each input is the
shape that would make that scan quadratic if it rescanned, backtracked or copied what it had already
read (an unanchored pattern, a buffer re-sliced per line, a held text re-read per piece).

Timing-based, so in the slow tier, where nothing else shares the run; each size is the best of three runs
(the least disturbed), floored at 5 ms."""
import asyncio
import json
import time

import pytest

pytestmark = pytest.mark.slow

SIZES = (20_000, 80_000)
LIMIT = 11


def best_of_3(fn, arg) -> float:
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn(arg)
        runs.append(time.perf_counter() - t0)
    return max(min(runs), 5e-3)


def _sse(data: bytes, read: int = 65_536) -> int:
    """Every event of ``data`` through the proxy's SSE reader, in reads of ``read`` bytes (64 KiB, as a
    socket gives them; 0: the whole input in one read, where a reader that re-slices its buffer per line
    is quadratic)."""
    from citebound.serving.upstream import sse_events

    step = read or len(data)

    class Resp:
        async def aiter_raw(self):
            for i in range(0, len(data), step):
                yield data[i:i + step]

    async def run():
        return [e async for e in sse_events(Resp(), cap=1 << 30)]

    return len(asyncio.run(run()))


def _hold(pieces: list[str]) -> str:
    """A stream's pieces through the sentence hold (what the proxy does per delta)."""
    from citebound.guarding.stream import SentenceHold
    from citebound.text.limits import Limits

    h = SentenceHold(Limits(max_answer_chars=5_000_000, max_stream_held_chars=1_000_000))
    out = [h.feed(p) for p in pieces]
    return "".join(out) + h.finish()


def _guard(answer: str) -> int:
    """The guard's whole plan over an answer (markers, sentences, claims), with a verifier that costs nothing."""
    import numpy as np

    from citebound.guarding.guard import guard_answer
    from citebound.text.limits import Limits

    def scorer(claims, passages):
        s = np.ones(len(claims))
        return s, s > 0.5

    lim = Limits(max_answer_chars=5_000_000, max_sentences=100_000, max_citations_per_answer=50_000,
                 max_citations_per_sentence=2000)
    _, rep = guard_answer(answer, ["Aspirin works.", "Statins work."], scorer, reattribute=None, limits=lim)
    return rep.n_citations


def _windows(passage: str) -> int:
    from citebound.verifiers.base import make_windows

    return len(make_windows(passage))


def _markers(text: str) -> int:
    from citebound.text.citations import MARKER_RE, strip_markers

    return len(list(MARKER_RE.finditer(text))) + len(strip_markers(text, cap=10 ** 8))


def _sentences(text: str) -> int:
    from citebound.text.citations import sentences

    return len(sentences(text))


def _visible(text: str) -> int:
    from citebound.text.forms import fold_markers
    from citebound.text.visible import blank_hidden, hidden_spans

    return len(hidden_spans(text)) + len(blank_hidden(text)) + len(fold_markers(text))


def _forms(text: str) -> int:
    from citebound.text.citations import sentences
    from citebound.text.forms import other_forms, sentences_touching

    return len(sentences_touching(sentences(text), other_forms(text, text)))


def _json_checks(body: bytes) -> object:
    from citebound.serving.app import json_depth, json_problem

    return json_depth(body), json_problem(body)


def _redact(text: str) -> int:
    from citebound.scoring.llm_backends import redact_url

    return len(redact_url(text))


def _verdict(text: str) -> object:
    from citebound.verifiers.llm_judge import parse_verdict

    return parse_verdict(text, "SUPPORTED", "UNSUPPORTED")


def _mcp_line(line: str) -> object:
    from citebound.serving.mcp_server import rpc_problem

    return rpc_problem(line)


def _structured_plan(text: str) -> int:
    from citebound.guarding.structured import Attached, plan
    from citebound.text.limits import Limits

    ends = [i + 1 for i, ch in enumerate(text) if ch == "."]
    cites = [Attached(e, "Aspirin works.", "c") for e in ends]
    return len(plan(text, cites, ["P"], 1, Limits(max_citations_per_answer=50_000)).items)


def _positions(text: str) -> int:
    from citebound.guarding.structured import position_map

    f = position_map(text, text.replace("[9]", "[9 INVALID]"))
    return sum(f(p) for p in range(0, len(text), 7))


CASES = {
    "structured: a citation as data on every sentence": (_structured_plan, lambda n: "Aspirin works. " * (n // 15)),
    "structured: positions after every marker was rewritten": (_positions, lambda n: "x [9]. " * (n // 7)),
    "structured: positions, one unclosed bracket": (_positions, lambda n: "[9]. x [" + "a" * n + "."),
    # the marker scan: linked markers unclosed, a bracket list that never closes, author-year never closing
    "markers: [[1]]( repeated": (_markers, lambda n: "[[1]](" * (n // 6)),
    "markers: an unclosed list": (_markers, lambda n: "[" + "1," * (n // 2)),
    "markers: ( then letters": (_markers, lambda n: "(" + "a" * n),
    "markers: full-width brackets": (_markers, lambda n: "\uff3b\uff11" * (n // 2)),
    "sentences: no sentence end": (_sentences, lambda n: "word " * (n // 5)),
    "sentences: many short ones": (_sentences, lambda n: "A b. " * (n // 5)),
    "visible: unclosed hidden spans": (_visible, lambda n: "<span hidden>" * (n // 13)),
    "visible: unclosed comments": (_visible, lambda n: "<!-- " * (n // 5) + "x"),
    "visible: comments closed by --!>": (_visible, lambda n: "<!--a--!>" * (n // 9)),
    "visible: empty comments <!-->": (_visible, lambda n: "<!-->x" * (n // 6)),
    "visible: double-escaped scripts": (_visible, lambda n: "<script><!--<script></script>x</script>" * (n // 39)),
    "visible: a double-escaped script never closed": (_visible, lambda n: "<script><!--<script>" + "</script>x" * (n // 10)),
    "visible: a < with no >": (_visible, lambda n: "<a" * (n // 2)),
    # end tags and list items under a deep stack: each answered from the stack's index lists, never a walk down it
    "visible: end tags matching nothing under deep spans": (_visible, lambda n: "<span>" * (n // 20) + "</x>" * (n // 8)),
    "visible: formatting end tags under a div under deep spans": (
        _visible, lambda n: "<span>" * (n // 20) + "<div>" + "</b>" * (n // 8)),
    "visible: list items under deep spans": (_visible, lambda n: "<span>" * (n // 20) + "<li>x" * (n // 10)),
    # forms the guard cannot read: each <sup> looks back three characters for an exponent's unit, and each form
    # finds its sentence by bisection, never from the text's start
    "forms: a superscript tag and a bracketed number in every sentence": (
        _forms, lambda n: "Cells grow<sup>4</sup> (3). " * (n // 28)),
    "stream hold: no sentence end, 1-char pieces": (_hold, lambda n: ["w"] * (n // 4)),
    "stream hold: a cited sentence per piece": (_hold, lambda n: ["Aspirin works [1]. "] * (n // 76)),
    "stream hold: an open [ per piece": (_hold, lambda n: ["x [1"] * (n // 16)),
    "sse: blank lines in one read": (lambda d: _sse(d, 0), lambda n: b"\n" * (n * 4)),
    "sse: short events in one read": (lambda d: _sse(d, 0), lambda n: b'data: {"a": 1}\n\n' * (n // 4)),
    "sse: blank lines in 64 KiB reads": (_sse, lambda n: b"\n" * (n * 4)),
    "sse: one line with no newline": (_sse, lambda n: b"data: " + b"x" * (n * 4)),
    "json: deep nesting": (_json_checks, lambda n: b"[" * n + b"]" * n),
    "json: a long flat list": (_json_checks, lambda n: b"[" + b"1," * (n // 2) + b"1]"),
    "json: an unclosed string of escapes": (_json_checks, lambda n: b'{"a": "' + b"\\\"" * (n // 2)),
    "redact: schemes with no @": (_redact, lambda n: "ab://" + "c" * n),
    "redact: many userinfo-looking runs": (_redact, lambda n: "a://b:c" * (n // 7)),
    "redact: one long credential parameter": (_redact, lambda n: "http://h/?api_key=" + "k" * n),
    "redact: many credential parameters": (_redact, lambda n: "http://h/?x=1" + "&token=t" * (n // 8)),
    "judge verdict: a long reply": (_verdict, lambda n: "not " * (n // 4) + "SUPPORTED"),
    "mcp: wide params": (_mcp_line, lambda n: json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                          "params": {"a": ["x"] * (n // 5)}})),
    "windows: a long passage": (_windows, lambda n: "w" * (n * 4)),
    "guard: many cited sentences": (_guard, lambda n: "Aspirin works [1]. " * (n // 38)),
    "guard: one sentence, many markers": (_guard, lambda n: "Aspirin works" + " [1]" * (n // 41) + "."),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_scan_stays_linear(name):
    fn, make = CASES[name]
    small, large = (make(n) for n in SIZES)
    fn(small)  # warm: imports and compiled patterns are not the scan's cost
    t = [best_of_3(fn, small), best_of_3(fn, large)]
    assert t[1] / t[0] < LIMIT, f"{name}: {t[0] * 1e3:.1f} ms at {SIZES[0]}, {t[1] * 1e3:.1f} ms at {SIZES[1]}"
