"""What a client of the compose deployment sees (tests/deploy/run.sh brings it up): two guard replicas from the
image sharing one monitor in Redis, behind HAProxy. Every request is recorded with its status; no status is
ever 500. Prints one line per check and a JSON summary of what was measured.

    python tests/deploy/check_compose.py --lb http://127.0.0.1:8080 --replica http://127.0.0.1:18081 \
        --replica http://127.0.0.1:18082 --token-file SECRETS/admin_token --container guard-1=NAME \
        --container redis=NAME [--upstream-port PORT] --out summary.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]

BODY = {"answer": "Mitochondria produce ATP [1]. The sky is green [2].",
        "passages": ["Mitochondria produce ATP in cells.", "Bananas are yellow when ripe."]}
STATUSES: Counter = Counter()
LOCK = threading.Lock()


def call(client: httpx.Client, method: str, url: str, **kw) -> httpx.Response | None:
    """One request; its status (or 'conn' when no answer came) is recorded."""
    try:
        r = client.request(method, url, **kw)
    except httpx.HTTPError:
        with LOCK:
            STATUSES["conn"] += 1
        return None
    with LOCK:
        STATUSES[r.status_code] += 1
    return r


def until(fn, limit_s: float, what: str) -> float:
    t = time.perf_counter()
    while not fn():
        if time.perf_counter() - t > limit_s:
            raise SystemExit(f"FAIL: {what}: not within {limit_s} s")
        time.sleep(0.1)
    return time.perf_counter() - t


def monitor(client: httpx.Client, base: str) -> dict:
    r = call(client, "GET", f"{base}/v1/monitor")
    return r.json()["default"]["monitor"] if r is not None and r.status_code == 200 else {}


def requests_served(client: httpx.Client, base: str) -> float:
    """The replica's count of answered /v1/guard requests, from its own /metrics."""
    text = client.get(f"{base}/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("citebound_requests_total{") and 'endpoint="/v1/guard"' in line)


def load(lb: str, n: int, threads: int, labels: bool, auth: dict) -> dict:
    """n guard requests through the load balancer from `threads` clients; with labels, every fourth request is a
    label post of one unsupported citation that passed no check ({"missed": 0, "unsupported": 1})."""
    out: Counter = Counter()

    def one(i: int) -> None:
        with httpx.Client(timeout=60) as c:
            if labels and i % 4 == 0:
                r = call(c, "POST", f"{lb}/v1/monitor/labels", json={"missed": 0, "unsupported": 1}, headers=auth)
                out["label_ok" if r is not None and r.status_code == 200 else "label_failed"] += 1
            else:
                r = call(c, "POST", f"{lb}/v1/guard", json=BODY)
                ok = r is not None and r.status_code == 200 and r.json()["report"]["n_citations"] == 2
                out["guard_ok" if ok else "guard_failed"] += 1
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(n)))
    return dict(out)


def stream_report(lb: str, api: str, body: dict) -> dict | None:
    """The guard's report event of one streamed request (raw SSE: the SDKs do not surface citebound's own event)."""
    from service_helpers import sse_data

    r = call(httpx.Client(timeout=60), "POST", f"{lb}/v1/{api}", json=body | {"stream": True})
    assert r is not None and r.status_code == 200, r
    found = [e["report"] for e in sse_data(r) if e.get("type") == "citebound.report"]
    return found[0] if len(found) == 1 else None


def agent_apis(lb: str, port: int) -> dict:
    """The guarding proxy's Responses and Messages faces through the load balancer, each driven by its own SDK
    (openai, anthropic), streamed and not. The replicas' upstream is the scripted one the in-process tests use
    (tests/fake_apis.py), here on this host at ``port``, reached from the containers as host.containers.internal.
    Every face must give the report /v1/guard gives for the same answer and passages."""
    import anthropic
    import openai

    sys.path.insert(0, str(ROOT / "tests"))
    from fake_apis import FakeAPIs, Turn

    ex = json.loads((ROOT / "citebound/examples/answer.json").read_text())
    words = ex["answer"].split(" ")
    pieces = [w + " " for w in words[:-1]] + words[-1:]
    extra = {"citebound": {"passages": ex["passages"]}}
    msgs = [{"role": "user", "content": "q"}]

    def no_card(report: dict) -> dict:
        return {k: v for k, v in report.items() if k != "guarantee_card"}

    with FakeAPIs(lambda body: Turn(pieces), host="0.0.0.0", port=port) as up:
        r = call(httpx.Client(timeout=60), "POST", f"{lb}/v1/guard", json={"answer": ex["answer"], "passages": ex["passages"]})
        assert r is not None and r.status_code == 200, r
        want_text, want = r.json()["guarded_answer"], no_card(r.json()["report"])
        oa = openai.OpenAI(base_url=f"{lb}/v1", api_key="sk-client", max_retries=0)
        an = anthropic.Anthropic(base_url=lb, api_key="sk-client", max_retries=0)
        got = {}
        resp = oa.responses.create(model="m", input="q", extra_body=extra)
        got["responses"] = (resp.output_text, resp.model_extra["citebound"]["report"])
        msg = an.messages.create(model="m", max_tokens=50, messages=msgs, extra_body=extra)
        got["messages"] = ("".join(b.text for b in msg.content if b.type == "text"), msg.model_extra["citebound"]["report"])
        # streamed: the text through each SDK's stream, the report (an event of citebound's own) from the raw SSE
        text = "".join(e.delta for e in oa.responses.create(model="m", input="q", extra_body=extra, stream=True)
                       if e.type == "response.output_text.delta")
        got["responses streamed"] = (text, stream_report(lb, "responses", {"model": "m", "input": "q"} | extra))
        text = "".join(e.delta.text for e in an.messages.create(model="m", max_tokens=50, messages=msgs,
                                                                  extra_body=extra, stream=True)
                       if e.type == "content_block_delta" and e.delta.type == "text_delta")
        body = {"model": "m", "max_tokens": 50, "messages": msgs} | extra
        got["messages streamed"] = (text, stream_report(lb, "messages", body))
        paths = Counter(q["path"] for q in up.requests)
    for face, (text, report) in got.items():
        assert text == want_text, (face, text, want_text)
        assert report is not None and no_card(report) == want, (face, report, want)
    assert paths == {"/v1/responses": 3, "/v1/messages": 3}, paths  # one unstreamed, two streamed, per API
    # the README's quickstart result: two citations moved to the passage that supports them, one pointing at none
    actions = [(a["cited"], a["action"], a["new_pointer"]) for a in want["audit"]]
    assert actions == [(1, "verified", None), (2, "reattributed", 3), (3, "reattributed", 2), (4, "invalid", None)], actions
    assert "[3 (was 2)]" in want_text and "[2 (was 3)]" in want_text and "[4 INVALID]" in want_text, want_text
    return {"faces": sorted(got), "upstream_requests": dict(paths), "actions": actions}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lb", required=True)
    ap.add_argument("--replica", action="append", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--container", action="append", default=[], help="SERVICE=CONTAINER_NAME")
    ap.add_argument("--ready-bound", type=float, default=6.0, help="seconds for /readyz to follow the store")
    ap.add_argument("--upstream-port", type=int,
                    help="the port of the replicas' upstream on this host (the scripted Responses and Messages API)")
    ap.add_argument("--out")
    a = ap.parse_args()
    names = dict(kv.split("=", 1) for kv in a.container)
    auth = {"Authorization": "Bearer " + open(a.token_file).read().strip()}
    lb, reps = a.lb, a.replica
    summary: dict = {}
    c = httpx.Client(timeout=30)

    until(lambda: all((r := call(c, "GET", f"{b}/readyz")) is not None and r.status_code == 200 for b in reps + [lb]),
          120, "every replica ready")
    before = [requests_served(c, b) for b in reps]
    t = time.perf_counter()
    res = load(lb, 200, 8, False, auth)
    summary["200_requests"] = {**res, "seconds": round(time.perf_counter() - t, 2),
                               "per_replica": [requests_served(c, b) - x for b, x in zip(reps, before)]}
    assert res == {"guard_ok": 200}, res
    assert all(n >= 20 for n in summary["200_requests"]["per_replica"]), summary["200_requests"]
    print(f"ok: 200 guard requests through the load balancer, 0 errors, per replica {summary['200_requests']['per_replica']}")
    if a.upstream_port:
        summary["agent_apis"] = agent_apis(lb, a.upstream_port)
        print(f"ok: Responses and Messages through the load balancer (the openai and anthropic SDKs, streamed and not): "
              f"the /v1/guard report and text on every face; {summary['agent_apis']}")

    # kill -9 of one replica under load (guard requests and label posts); the load balancer routes around it
    start_labels = monitor(c, reps[1])["labels"]["unsupported"]
    holder: dict = {}
    th = threading.Thread(target=lambda: holder.update(load(lb, 240, 6, True, auth)))
    th.start()
    time.sleep(2.0)
    # kill -9 of the replica's process from the host, as a crash or the OOM killer would (`podman kill` counts as
    # a stop by the user, after which no restart policy restarts it)
    pid = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", names["guard-1"]], check=True,
                         capture_output=True, text=True).stdout.strip()
    subprocess.run(["kill", "-9", pid], check=True)
    t_kill = time.perf_counter()
    th.join()
    res = holder
    stored = monitor(c, reps[1])["labels"]["unsupported"] - start_labels
    back = until(lambda: (r := call(c, "GET", f"{reps[0]}/readyz")) is not None and r.status_code == 200, 120,
                 "the killed replica back (restart: always)")
    summary["kill_9"] = {**res, "labels_stored": stored, "replica_back_s": round(time.perf_counter() - t_kill, 1)}
    # an acknowledged label is never lost; a label whose answer was lost with the replica may have been stored
    assert res.get("label_ok", 0) <= stored <= res.get("label_ok", 0) + res.get("label_failed", 0), summary["kill_9"]
    assert res.get("guard_failed", 0) == 0, summary["kill_9"]
    same = [monitor(c, b)["labels"]["unsupported"] for b in reps]
    assert same[0] == same[1], same  # the restarted replica reads the shared state
    print(f"ok: kill -9 of guard-1 under load: {summary['kill_9']}; it came back ({back:.1f} s after the load) "
          f"with the shared state ({same[0]} labels)")

    # labels posted through the load balancer void the monitor; every replica then says void
    # (after the 60 clean labels above, a few posts of 10 misses in 10 reject the certified miss rate)
    posts = 0
    while posts < 10:
        posts += 1
        r = call(c, "POST", f"{lb}/v1/monitor/labels", json={"missed": 10, "unsupported": 10}, headers=auth)
        assert r is not None and r.status_code == 200, r
        if monitor(c, reps[1])["state"] == "void":
            break
    states = [monitor(c, b)["state"] for b in reps]
    assert states == ["void", "void"], states
    cards = [c.post(f"{b}/v1/guard", json=BODY).json()["report"]["guarantee_card"]["monitor"]["state"] for b in reps]
    assert cards == ["void", "void"], cards
    print(f"ok: labels posted through the load balancer ({posts} posts of 10 misses) voided the monitor; every replica "
          "reports void, in /v1/monitor and on its guarantee card")

    # Redis stopped, then started: readiness follows within the bound, nothing is a 500, no restart
    subprocess.run(["podman", "stop", "--time", "2", names["redis"]], check=True, capture_output=True)
    t_down = until(lambda: all((r := call(c, "GET", f"{b}/readyz")) is not None and r.status_code == 503
                               for b in reps), a.ready_bound + 3, "/readyz 503 on every replica with Redis stopped")
    # haproxy sees it within its check's fall (2 x 1 s): labels then get its 503; verdicts go on
    until(lambda: (r := call(c, "POST", f"{lb}/v1/monitor/labels", json={"missed": 0, "unsupported": 1},
                             headers=auth)) is not None and r.status_code == 503 and "error" in r.json(), 5,
          "the load balancer refuses label posts with Redis down")
    verdicts = [call(c, "POST", f"{lb}/v1/guard", json=BODY) for _ in range(10)]
    assert all(r is not None and r.status_code == 200 for r in verdicts), [r and r.status_code for r in verdicts]
    assert {r.json()["report"]["guarantee_card"]["monitor"]["state"] for r in verdicts} == {"unavailable"}
    assert all(c.get(f"{b}/readyz?scope=verdicts").status_code == 200 for b in reps)
    direct = call(c, "POST", f"{reps[0]}/v1/monitor/labels", json={"missed": 0, "unsupported": 1}, headers=auth)
    assert direct is not None and direct.status_code == 503 and "nothing was recorded" in direct.json()["detail"]
    subprocess.run(["podman", "start", names["redis"]], check=True, capture_output=True)
    t_up = until(lambda: all((r := call(c, "GET", f"{b}/readyz")) is not None and r.status_code == 200
                             for b in reps), a.ready_bound + 10, "/readyz 200 again on every replica")
    until(lambda: (r := call(c, "POST", f"{lb}/v1/guard", json=BODY)) is not None and r.status_code == 200, 10,
          "the load balancer routes again")
    after = [monitor(c, b) for b in reps]
    assert [m["state"] for m in after] == ["void", "void"] and after[0]["labels"] == after[1]["labels"], after
    summary["redis_stop_start"] = {"readyz_503_after_s": round(t_down, 1), "readyz_200_after_start_s": round(t_up, 1),
                                   "labels_while_down": 503, "guard_while_down": 200}
    print(f"ok: Redis stopped: every /readyz 503 in {t_down:.1f} s; through the load balancer guard requests go on "
          f"(cards: monitor unavailable) and label posts are 503 in JSON; Redis started: ready in {t_up:.1f} s, "
          "no restart, the void state and every label kept")

    summary["statuses"] = {str(k): v for k, v in sorted(STATUSES.items(), key=str)}
    assert STATUSES[500] == 0, summary["statuses"]
    print(f"ok: statuses seen by the clients: {summary['statuses']} (no 500)")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(summary, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
