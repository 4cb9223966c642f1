"""Load benchmark of ``citebound serve`` on loopback, next to the same answers guarded in-process.

The load is real: the released expert answers (ScholarQA-Multi, ``--format ctxs``) and Nora's answers
(ScholarQA-CS, ``--format nora``) with their passages, from the data mirror. A server process is
started on 127.0.0.1; at each concurrency level, that many client threads send the same fixed set of
answers (``--answers``) until all are answered or the level's time is up (the script stops by
itself). Each level gets a fresh server, so no level is served from the embeddings an earlier one
memoised. It prints latency percentiles, answers/s, errors and the server's RSS per level, the
in-process latency of the same answers through the library (one ``Guard``, one answer at a time), a
soak line (RSS every 30 s after a warm-up; the memo is bounded by ``--memo-texts``), and the targets.

    python benchmarks/guard_service.py                       # levels 1, 4, 16, 64 (60 s each) + 5-minute soak
    python benchmarks/guard_service.py --answers 24 --seconds 20 --levels 1,4,16 --soak 0   # the CI smoke: 60 s of load
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def load_answers(mirror: Path) -> tuple[list[dict], int]:
    """Real answers with their passages; those the guard would refuse (blank passages) are counted."""
    from citebound.guarding.convert import convert_records

    out, skipped = [], 0
    for path, fmt in ((mirror / "scholarqabench/scholarqa_multi/human_answers.json", "ctxs"),
                      (mirror / "scholarqabench/scholarqa_cs/qa_metadata_all.jsonl", "nora")):
        for rec in convert_records(path, fmt):
            passages = rec.get("passages") or rec.get("ctxs") or []
            texts = [p.get("text") if isinstance(p, dict) else p for p in passages]
            if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
                skipped += 1
                continue
            out.append({"id": rec.get("id"), "answer": rec["answer"], "passages": texts,
                        "citation_base": rec.get("citation_base")})
    return out, skipped


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentiles(xs: list[float]) -> tuple[float, float, float]:
    a = np.asarray(xs) * 1000
    return tuple(float(np.percentile(a, q)) for q in (50, 95, 99)) if len(a) else (float("nan"),) * 3


def sequential(url: str, answers: list[dict]) -> list[float]:
    """Each answer once, one at a time, in order: the HTTP twin of the in-process run."""
    import httpx

    out = []
    with httpx.Client(timeout=120) as client:
        for a in answers:
            t0 = time.perf_counter()
            r = client.post(f"{url}/v1/guard", json=a)
            out.append(time.perf_counter() - t0)
            if r.status_code != 200:
                raise SystemExit(f"answer {a['id']}: HTTP {r.status_code}: {r.text[:300]}")
    return out


def level(url: str, answers: list[dict], conc: int, seconds: float, pid: int) -> dict:
    """``conc`` client threads send the given answers (each once) until all are answered or ``seconds``
    are up. Every level gets the same answers, so answers/s compares like with like."""
    import httpx

    lat: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    counter = iter(range(len(answers)))

    def worker(k: int) -> None:
        nonlocal errors
        with httpx.Client(timeout=120) as client:
            while time.monotonic() < stop:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                t0 = time.perf_counter()
                try:
                    r = client.post(f"{url}/v1/guard", json=answers[i])
                    ok = r.status_code == 200
                except Exception:  # noqa: BLE001 - any failure is an error of this run
                    ok = False
                dt = time.perf_counter() - t0
                with lock:
                    if ok:
                        lat.append(dt)
                    else:
                        errors += 1

    t0 = time.monotonic()
    with ThreadPoolExecutor(conc) as pool:
        list(pool.map(worker, range(conc)))
    wall = time.monotonic() - t0
    p50, p95, p99 = percentiles(lat)
    return {"concurrency": conc, "requests": len(lat) + errors, "errors": errors, "complete": len(lat) + errors == len(answers),
            "p50_ms": p50, "p95_ms": p95, "p99_ms": p99, "answers_per_s": len(lat) / wall, "rss_mb": rss_mb(pid)}


def cycle(answers: list[dict], n: int, start: int = 0) -> list[dict]:
    return [answers[(start + i) % len(answers)] for i in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verifier", default="embedding")
    ap.add_argument("--runtime", choices=["torch", "onnx", "openvino"],
                    help="the verifier's runtime (default: its definition's; torch = the exact float32 path)")
    ap.add_argument("--levels", default="1,4,16,64")
    ap.add_argument("--seconds", type=float, default=60.0, help="per concurrency level")
    ap.add_argument("--answers", type=int, default=120,
                    help="answers each level sends (the same ones at every level; default 120)")
    ap.add_argument("--soak-warmup", type=float, default=120.0,
                    help="seconds at concurrency 16 before the soak's first RSS reading (allocator and, with "
                         "--memo-texts, the memo warm; default 120)")
    ap.add_argument("--soak", type=float, default=300.0, help="seconds of soak at concurrency 16 (0: none)")
    ap.add_argument("--soak-memo-texts", type=int, default=2000,
                    help="the soak server's memo bound (default 2000: smaller than the texts of the answers it cycles "
                         "through, so the soak keeps running the model rather than serving repeats from the memo)")
    ap.add_argument("--max-wait-ms", type=float, default=5.0)
    ap.add_argument("--memo-texts", type=int, default=20000,
                    help="embeddings the served verifier keeps for reuse (bounds its memory; default 20000)")
    ap.add_argument("--mirror", default=os.environ.get("CITEBOUND_DATA_MIRROR", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--out", help="also write the results as JSON here")
    args = ap.parse_args()

    from service_helpers import free_port, wait_ready

    answers, skipped = load_answers(Path(args.mirror))
    print(f"{len(answers)} real answers ({skipped} skipped: blank passages the guard refuses)", flush=True)

    # in-process: the library, one Guard, one answer at a time (the same answers, a warm model)
    from citebound.guarding.guard import Guard
    rt = {"runtime": args.runtime} if args.runtime else {}
    guard = Guard(args.verifier, overrides={"memo_texts": args.memo_texts, **rt})  # as served
    guard.guard(answers[0]["answer"], answers[0]["passages"])
    inproc = []
    n_in = min(len(answers), 60)
    for a in answers[:n_in]:
        t0 = time.perf_counter()
        guard.guard(a["answer"], a["passages"], base=a["citation_base"])
        inproc.append(time.perf_counter() - t0)
    ip50, ip95, ip99 = percentiles(inproc)
    print(f"in-process: {n_in} answers, p50 {ip50:.1f} ms, p95 {ip95:.1f} ms, p99 {ip99:.1f} ms, "
          f"{n_in / sum(inproc):.2f} answers/s", flush=True)
    del guard

    def server(memo_texts: int = args.memo_texts):
        """A fresh server (an empty memo): started for each measurement, so none is served from another's."""
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", args.verifier,
                                 "--port", str(port), "--max-wait-ms", str(args.max_wait_ms),
                                 "--override", f"memo_texts={memo_texts}",
                                 *(["--runtime", args.runtime] if args.runtime else [])],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        if not wait_ready(url, attempts=1200, pause=0.1):
            proc.kill()
            raise SystemExit(f"the server on {url} did not become ready")
        level(url, answers[-3:], 1, 30, proc.pid)  # warm-up (answers no measurement sends), not reported
        return proc, url

    def stop(proc) -> None:
        proc.terminate()
        proc.wait(timeout=60)

    results = []
    proc, url = server()
    try:
        http_seq = sequential(url, answers[:n_in])  # the in-process answers, over HTTP, one at a time
    finally:
        stop(proc)
    hp50, hp95, hp99 = percentiles(http_seq)
    paired = float(np.median((np.asarray(http_seq) - np.asarray(inproc)) * 1000))
    print(f"HTTP, the same {n_in} answers one at a time: p50 {hp50:.1f} ms, p95 {hp95:.1f} ms; median paired "
          f"overhead {paired:+.1f} ms", flush=True)
    level_answers = cycle(answers, min(args.answers, len(answers) - 3))
    for conc in [int(x) for x in args.levels.split(",") if x.strip()]:
        proc, url = server()
        try:
            r = level(url, level_answers, conc, args.seconds, proc.pid)
        finally:
            stop(proc)
        results.append(r)
        print(json.dumps(r), flush=True)
    soak = None
    if args.soak > 0:
        proc, url = server(args.soak_memo_texts)
        try:
            offset = 0
            t_warm = time.monotonic() + args.soak_warmup
            while time.monotonic() < t_warm:
                r = level(url, cycle(answers, 400, offset), 16, t_warm - time.monotonic(), proc.pid)
                offset += r["requests"]
            start_rss = rss_mb(proc.pid)
            samples = []
            t_end = time.monotonic() + args.soak
            while time.monotonic() < t_end:
                r = level(url, cycle(answers, 400, offset), 16, min(30.0, t_end - time.monotonic()), proc.pid)
                offset += r["requests"]
                samples.append((r["rss_mb"], r["errors"], r["requests"]))
        finally:
            stop(proc)
        half = samples[(len(samples) - 1) // 2][0]
        soak = {"seconds": args.soak, "warmup_seconds": args.soak_warmup, "memo_texts": args.soak_memo_texts,
                "rss_start_mb": start_rss,
                "rss_mid_mb": half, "rss_end_mb": samples[-1][0], "rss_max_mb": max(x[0] for x in samples),
                "rss_series_mb": [round(x[0]) for x in samples], "errors": sum(x[1] for x in samples),
                "requests": sum(x[2] for x in samples)}
        print("soak: " + json.dumps(soak), flush=True)

    print("\n| concurrency | requests | errors | p50 ms | p95 ms | p99 ms | answers/s | server RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| in-process (library), {n_in} answers | {n_in} | 0 | {ip50:.1f} | {ip95:.1f} | {ip99:.1f} | "
          f"{n_in / sum(inproc):.2f} | - |")
    print(f"| HTTP, the same {n_in} answers one at a time | {n_in} | 0 | {hp50:.1f} | {hp95:.1f} | {hp99:.1f} | "
          f"{n_in / sum(http_seq):.2f} | - |")
    for r in results:
        print(f"| {r['concurrency']} | {r['requests']} | {r['errors']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | "
              f"{r['p99_ms']:.1f} | {r['answers_per_s']:.2f} | {r['rss_mb']:.0f} |")
    by = {r["concurrency"]: r for r in results}
    errors = sum(r["errors"] for r in results) + (soak["errors"] if soak else 0)
    print("\ntargets:")
    gap = hp50 - ip50
    print(f"  HTTP p50 at concurrency 1 vs in-process, same answers: {gap:+.1f} ms ({100 * gap / ip50:+.1f}%; median "
          f"paired {paired:+.1f} ms); target within 10% or 5 ms: {'met' if gap <= max(0.1 * ip50, 5.0) else 'NOT met'}")
    if 1 in by and 16 in by:
        ratio = by[16]["answers_per_s"] / by[1]["answers_per_s"]
        same = by[16]["complete"] and by[1]["complete"]
        print(f"  answers/s at 16 / at 1: {ratio:.2f}x; target >= 1.5x: {'met' if ratio >= 1.5 else 'NOT met'}"
              + ("" if same else " (a level ran out of time before its answers were done: raise --seconds to "
                                 "compare the same answers)"))
    print(f"  errors: {errors}; target 0: {'met' if errors == 0 else 'NOT met'}")
    if soak:
        growth = soak["rss_end_mb"] - soak["rss_start_mb"]
        late = soak["rss_end_mb"] - soak["rss_mid_mb"]
        print(f"  RSS over the {soak['seconds']:.0f}-s soak: {soak['rss_start_mb']:.0f} -> {soak['rss_end_mb']:.0f} MB "
              f"({100 * growth / soak['rss_start_mb']:+.1f}%; {soak['requests']} requests; "
              f"every 30 s: {soak['rss_series_mb']}); second half "
              f"{100 * late / soak['rss_mid_mb']:+.1f}%; flat (< 5% growth over the soak): "
              f"{'met' if growth < 0.05 * soak['rss_start_mb'] else 'NOT met'}")
    if args.out:
        Path(args.out).write_text(json.dumps({"in_process": {"p50_ms": ip50, "p95_ms": ip95, "p99_ms": ip99},
                                              "levels": results, "soak": soak}, indent=2))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
