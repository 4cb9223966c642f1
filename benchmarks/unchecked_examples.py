"""The examples of the "nothing passes unchecked" review (#43), measured: each library or CLI case in a fresh
interpreter under a 4 GB address-space cap (wall time, peak RSS), each service case against a real
``citebound serve`` on loopback (latencies). Prints one Markdown row per case: what happened, seconds, MB.

    python benchmarks/unchecked_examples.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
P = ["Aspirin reduces the risk of heart attacks in adults.", "Mitochondria produce ATP in cells."]

LIBRARY = {
    "passages: [] in a batch of 3 (guard_each)": """
from citebound import Guard
g = Guard("lexical")
out = g.guard_each([("Aspirin reduces heart attacks [1].", P), ("Aspirin works [1].", []), ("Mitochondria produce ATP [2].", P)])
result = [type(o).__name__ if isinstance(o, Exception) else o[1].invalid for o in out]""",
    "[1-3-1000000000]": """
from citebound import Guard
_, r = Guard("lexical").guard("Aspirin reduces heart attacks [1-3-1000000000].", P)
result = {"n_citations": r.n_citations, "unverified": r.unverified}""",
    "full-width ［１］, 【1】, [1; 2], [ 1 ], [1—2]": """
from citebound import Guard
g = Guard("lexical")
result = [g.guard(f"Aspirin reduces heart attacks {m}.", P)[1].n_citations
          for m in ("\\uff3b\\uff11\\uff3d", "\\u30101\\u3011", "[1; 2]", "[ 1 ]", "[1\\u20142]")]""",
    "an answer with no marker, --action block": """
from citebound import Guard
_, r = Guard("lexical", action="block", block_above=0.5).guard("Aspirin cures cancer. The moon is cheese.", P)
result = {"uncited": r.uncited, "blocked": r.blocked}""",
    "a passage that is only an HTML comment": """
from citebound import Guard
_, r = Guard("lexical").guard("Aspirin reduces heart attacks [1].", ["<!-- Aspirin reduces heart attacks -->"])
result = {"verified": r.verified, "unverified": r.unverified, "hidden_regions": r.to_dict().get("hidden_regions")}""",
    "the judge's 'NOT SUPPORTED' / 'not supported by the passage'": """
from citebound.verifiers.llm_judge import parse_verdict
result = [parse_verdict(t, "SUPPORTED", "UNSUPPORTED") for t in ("NOT SUPPORTED", "It is not supported by the passage.")]""",
}
CODE = """
import json, resource, time
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
P = {P!r}
t0 = time.perf_counter()
{body}
print(json.dumps({{"s": time.perf_counter() - t0, "result": result,
                  "mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}, default=str))
"""


def library_cases() -> list[tuple[str, str, float, float]]:
    rows = []
    for name, body in LIBRARY.items():
        r = subprocess.run([sys.executable, "-c", CODE.format(P=P, body=body)], capture_output=True, text=True,
                           cwd=ROOT)
        out = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {"result": r.stderr[-200:],
                                                                                         "s": float("nan"), "mb": 0}
        rows.append((name, json.dumps(out["result"]), out["s"], out["mb"]))
    return rows


def cli_cases(tmp: Path) -> list[tuple[str, str, float, float]]:
    rows = []
    jsonl = tmp / "a.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in (
        {"answer": "Aspirin reduces heart attacks [1].", "passages": P},
        {"answer": "Aspirin works [1].", "passages": []},
        {"answer": "Mitochondria produce ATP [2].", "passages": P})) + "\n")
    big = tmp / "big.jsonl"
    big.write_bytes(b'{"answer": "' + b"a" * (24 << 20))  # a 24 MB line with no newline
    for name, args in (("CLI: a JSONL with passages: [] among good answers", ["guard", "--input", str(jsonl),
                                                                               "--out", str(tmp / "o.jsonl")]),
                       ("CLI: a 24 MB line with no newline", ["guard", "--input", str(big), "--out", str(tmp / "b.jsonl")])):
        code = ("import resource, subprocess, sys, time, json\n"
                "t0 = time.perf_counter()\n"
                f"r = subprocess.run([sys.executable, '-m', 'citebound.cli.main', *{args!r}, '--verifier', 'lexical'],"
                " capture_output=True, text=True)\n"
                "err = [x for x in r.stderr.splitlines() if x.startswith('error') or x.startswith('skipped')]\n"
                "print(json.dumps({'s': time.perf_counter() - t0, 'rc': r.returncode, 'err': ' '.join(err)[:160],"
                " 'mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))")
        out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout)
        lines = len((tmp / "o.jsonl").read_text().splitlines()) if "passages" in name and (tmp / "o.jsonl").exists() else None
        what = f"exit {out['rc']}" + (f", {lines} answers written" if lines is not None else "") + f": {out['err'][-110:]}"
        rows.append((name, what, out["s"], out["mb"]))
    return rows


def service_cases() -> list[tuple[str, str, float, float]]:
    import httpx
    import uvicorn

    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from citebound.serving import ServeConfig, create_app
    from citebound.text.limits import Limits
    from tests.fake_stream import FakeStreamingOpenAI, Script
    from tests.service_helpers import free_port, wait_ready

    rows = []
    trickle = FakeStreamingOpenAI(lambda req: Script(["Aspirin reduces heart attacks [1]. "] * 200, event_pause_s=0.5))
    trickle.__enter__()
    cfg = ServeConfig(verifier="lexical", admin_token="t0k", upstream=trickle.base_url,
                      limits=Limits(max_stream_s=5, upstream_read_timeout_s=3))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(cfg), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    wait_ready(url)
    try:
        t0 = time.perf_counter()
        r = httpx.post(f"{url}/v1/guard", json={"answers": [{"answer": "Aspirin works [1].", "passages": []},
                                                             {"answer": "Aspirin reduces heart attacks [1].", "passages": P}]})
        rows.append(("service: passages: [] in a batch", f"{r.status_code}: "
                     + ", ".join(f"invalid {x['report']['invalid']}" for x in r.json()["results"]), time.perf_counter() - t0, 0))
        t0 = time.perf_counter()
        r = httpx.post(f"{url}/v1/guard", content=b'{"answer": "A [1].", "passages": ["a"], "citation_base": NaN}',
                       headers={"content-type": "application/json"})
        rows.append(("service: NaN in a field", f"{r.status_code}: {r.json()['detail'][:60]}", time.perf_counter() - t0, 0))
        for missed, n, what in ((1, 10_000_000, "past the per-post bound"), (100_000, 1_000_000, "the bound")):
            posts, t0 = [], time.perf_counter()
            with httpx.Client() as c:
                for _ in range(100):
                    t = time.perf_counter()
                    r = c.post(f"{url}/v1/monitor/labels", json={"missed": missed, "unsupported": n},
                               headers={"authorization": "Bearer t0k"})
                    posts.append(time.perf_counter() - t)
            rows.append((f"service: 100 posts of {{missed: {missed:,}, unsupported: {n:,}}} ({what})",
                         f"{r.status_code}, slowest post {1e3 * max(posts):.1f} ms", time.perf_counter() - t0, 0))
        r = httpx.post(f"{url}/v1/monitor/labels", json={"missed": 1, "unsupported": 1})
        rows.append(("service: labels without the admin token", str(r.status_code), 0.0, 0))
        t0 = time.perf_counter()
        with httpx.stream("POST", f"{url}/v1/chat/completions", json={"model": "m", "stream": True, "messages": [
                {"role": "user", "content": "q"}], "citebound": {"passages": P}}, timeout=60) as s:
            body = s.read().decode()
        rows.append(("proxy: an upstream sending an event every 0.5 s, max_stream_s 5",
                     "cut: " + ("max_stream_s" if "max_stream_s" in body else body[-80:]), time.perf_counter() - t0, 0))
    finally:
        server.should_exit = True
        trickle.__exit__(None, None, None)
    return rows


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as d:
        rows = library_cases() + cli_cases(Path(d)) + service_cases()
    print("| example | outcome | s | peak MB |\n|---|---|---|---|")
    for name, what, s, mb in rows:
        print(f"| {name} | {what} | {s:.2f} | {mb:.0f} |" if mb else f"| {name} | {what} | {s:.2f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
