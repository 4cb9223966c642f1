"""The streaming guard's cost on loopback: ``citebound serve --upstream`` in front of a scripted upstream
that streams real released answers at a fixed token rate, next to the same stream read raw.

Each answer (the released expert answers of ScholarQA-Multi and Nora's, with their passages, from the
data mirror) is cut into tokens of 4 characters (about a BPE token) and streamed at ``--rate`` tokens/s,
to two clients at once: one reads the upstream directly (raw), one through the guarding proxy (the
``openai`` SDK's streaming client). Per answer it records the time to the first content byte of each,
the time each sentence is complete in each (raw: its last character has arrived; guarded: the chunk
that carries it has), and when each stream ends. It prints, over all sentences and answers:

- time to first guarded byte (p50), beside the raw stream's;
- the delay a sentence gains over the raw stream, p50 and p95 (the guard holds a sentence until the next
  one starts, then verifies it);
- the total-time overhead against the raw stream (median over answers).

    python benchmarks/stream_guard.py --answers 12 --rate 50 --verifier embedding --api all

``--api`` chat (chat completions), responses (OpenAI Responses), messages (Anthropic Messages), or all: each API
through its own SDK, against a scripted upstream that speaks it.

Targets (embedding verifier, 2 cores): median added delay per sentence <= 150 ms, total overhead <= 10%.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def tokens(text: str, size: int = 4) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def deltas(api: str, base_url: str, q: str, extra: dict | None = None):
    """The text deltas of one streamed answer, read through the API's own SDK."""
    import anthropic
    import openai

    kw = {"extra_body": extra} if extra else {}
    if api == "messages":
        c = anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="x", max_retries=0, timeout=120)
        for e in c.messages.create(model="m", max_tokens=9, messages=[{"role": "user", "content": q}], stream=True, **kw):
            if e.type == "content_block_delta" and e.delta.type == "text_delta" and e.delta.text:
                yield e.delta.text
        return
    c = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=120)
    if api == "responses":
        for e in c.responses.create(model="m", input=q, stream=True, **kw):
            if e.type == "response.output_text.delta" and e.delta:
                yield e.delta
        return
    for chunk in c.chat.completions.create(model="m", messages=[{"role": "user", "content": q}], stream=True, **kw):
        if chunk.choices and chunk.choices[0].delta.content:
            yield chunk.choices[0].delta.content


def read_raw(api: str, base_url: str, q: str, t0: float, out: dict) -> None:
    got, marks = "", []
    for d in deltas(api, base_url, q):
        if not got:
            out["first"] = time.perf_counter() - t0
        got += d
        marks.append((len(got), time.perf_counter() - t0))
    out["end"], out["marks"], out["text"] = time.perf_counter() - t0, marks, got


def read_guarded(api: str, url: str, q: str, passages: list[str], base: int | None, t0: float, out: dict) -> None:
    from citebound.text.citations import sentences

    got, done = "", []  # done[k]: when sentence k had arrived
    for d in deltas(api, f"{url}/v1", q, {"citebound": {"passages": passages, "citation_base": base}}):
        now = time.perf_counter() - t0
        if not got:
            out["first"] = now
        got += d
        done += [now] * (len(sentences(got)) - len(done))
    out["end"], out["done"], out["text"] = time.perf_counter() - t0, done, got


def raw_sentence_times(text: str, marks: list[tuple[int, float]]) -> list[float]:
    """When each sentence of the raw text had fully arrived."""
    from citebound.text.citations import sentences

    out = []
    for s in sentences(text):
        out.append(next(t for n, t in marks if n >= s.end))
    return out


def run(api: str, answers: list[dict], rate: float, verifier: str) -> str:
    """One API's run; returns its table row."""
    from fake_apis import FakeAPIs, Turn
    from fake_stream import FakeStreamingOpenAI, Script
    from service_helpers import free_port, wait_ready

    if api == "chat":
        scripts = {f"q{i}": Script(tokens(x["answer"]), event_pause_s=1.0 / rate) for i, x in enumerate(answers)}
        upstream = FakeStreamingOpenAI(lambda body: scripts[body["messages"][-1]["content"]])
    else:
        turns = {f"q{i}": Turn(tokens(x["answer"]), event_pause_s=1.0 / rate) for i, x in enumerate(answers)}
        upstream = FakeAPIs(lambda body: turns[body["input"] if api == "responses" else body["messages"][-1]["content"]])
    with upstream as up:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", verifier, "--port",
                                 str(port), "--upstream", up.base_url], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            assert wait_ready(url, attempts=1200), "the server did not come up"
            delays, first_raw, first_guarded, overhead, n_sent = [], [], [], [], 0
            for i, x in enumerate(answers):
                q, raw, guarded = f"q{i}", {}, {}
                t0 = time.perf_counter()
                th = [threading.Thread(target=read_raw, args=(api, up.base_url, q, t0, raw)),
                      threading.Thread(target=read_guarded, args=(api, url, q, x["passages"], x.get("citation_base"), t0,
                                                                  guarded))]
                for t in th:
                    t.start()
                for t in th:
                    t.join()
                rt = raw_sentence_times(raw["text"], raw["marks"])
                k = min(len(rt), len(guarded["done"]))
                n_sent += k
                first_raw.append(raw["first"])
                first_guarded.append(guarded["first"])
                overhead.append(guarded["end"] / raw["end"] - 1)
                mine = [g - r for g, r in zip(guarded["done"][:k], rt[:k])]
                delays += mine
                print(f"{api} answer {i}: {len(x['answer'])} chars, {k} sentences, raw {raw['end']:.2f} s, guarded "
                      f"{guarded['end']:.2f} s, added delay p50 {1000 * np.median(mine):.0f} ms", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    d = np.asarray(delays) * 1000
    p50, p95 = float(np.percentile(d, 50)), float(np.percentile(d, 95))
    ov = float(np.median(overhead))
    met = "met" if p50 <= 150 and ov <= 0.10 else "MISSED"
    return (f"| {api} | {n_sent} | {1000 * np.median(first_raw):.0f} / {1000 * np.median(first_guarded):.0f} ms | "
            f"{p50:.0f} / {p95:.0f} ms | {100 * ov:+.1f}% | {met} |")


def main() -> int:
    from guard_service import load_answers

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=12)
    ap.add_argument("--rate", type=float, default=50.0, help="upstream tokens per second (4 characters a token)")
    ap.add_argument("--verifier", default="embedding")
    ap.add_argument("--api", choices=["chat", "responses", "messages", "all"], default="chat")
    ap.add_argument("--mirror", default=os.environ.get("CITEBOUND_DATA_MIRROR", str(ROOT.parent / "shared" / "data")))
    a = ap.parse_args()
    answers, _ = load_answers(Path(a.mirror))
    answers = answers[:a.answers]
    rows = [run(api, answers, a.rate, a.verifier)
            for api in (["chat", "responses", "messages"] if a.api == "all" else [a.api])]
    print(f"\n{len(answers)} answers, {a.rate:g} tokens/s, verifier {a.verifier}, {os.cpu_count()} cores")
    print("| API | sentences | first content byte, raw / guarded (p50) | delay a sentence gains, p50 / p95 | "
          "total time, median overhead | targets (p50 <= 150 ms, total <= 10%) |\n|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
