"""Answers per second of the compose deployment (deploy/compose) on this machine: 1 and 2 guard replicas behind
HAProxy, beside one ``citebound serve --workers 2`` process on the host, in one run, on the same real answers.

The answers are the released expert answers with their passages (as in benchmarks/guard_service.py), from the data
mirror. Every setup starts fresh (no embedding memoised by an earlier one): the compose replicas are restarted
before the 1-replica run, and the host process is started anew. ``--concurrency`` clients send the answers (each
once) until all are answered or ``--seconds`` are up. Needs the images (bash tests/deploy/run.sh builds them),
podman-compose, and root.

    python benchmarks/deploy_replicas.py                  # 48 answers, 8 clients, 90 s at most per setup
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from guard_service import cycle, level, load_answers  # noqa: E402


def ready(url: str, limit_s: float = 120) -> None:
    from service_helpers import wait_ready

    if not wait_ready(url, attempts=int(limit_s / 0.25), pause=0.25):
        raise SystemExit(f"{url} is not ready within {limit_s} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=90)
    a = ap.parse_args()
    mirror = Path(os.environ.get("CITEBOUND_DATA_MIRROR", ROOT.parent / "shared" / "data"))
    answers, _ = load_answers(mirror)
    work = cycle(answers, min(a.answers, len(answers)))
    env = {**os.environ, "CONTAINERS_CONF": str(ROOT / "tests/deploy/containers.conf")}
    wd = Path(tempfile.mkdtemp(prefix="citebound-bench-"))
    (wd / "secrets").mkdir()
    for name in ("redis_password", "admin_token"):
        p = wd / "secrets" / name
        p.write_text(f"{name}-{os.urandom(8).hex()}\n")
        os.chown(p, 10001, 10001)
        p.chmod(0o400)
    port = 20000 + os.getpid() % 9000
    env.update(CITEBOUND_SECRETS=str(wd / "secrets"), LB_PORT=str(port), GUARD1_PORT=str(port + 1),
               GUARD2_PORT=str(port + 2))
    proj = f"citebound-bench-{os.getpid()}"
    compose = ["podman-compose", "-p", proj, "-f", str(ROOT / "deploy/compose/compose.yaml")]
    lb = f"http://127.0.0.1:{port}"
    rows = []
    try:
        up = subprocess.run([*compose, "up", "-d"], env=env, capture_output=True, text=True)
        if up.returncode != 0:
            raise SystemExit(f"podman-compose up failed:\n{up.stdout[-2000:]}\n{up.stderr[-2000:]}")
        for u in (lb, f"http://127.0.0.1:{port + 1}", f"http://127.0.0.1:{port + 2}"):
            try:
                ready(u)
            except SystemExit:
                ps = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}} {{.Status}}"], env=env,
                                    capture_output=True, text=True).stdout
                raise SystemExit(f"{u} is not ready within 120 s; containers:\n{ps}") from None
        time.sleep(3)  # HAProxy's checks see both replicas up
        rows.append(("2 replicas behind HAProxy", level(lb, work, a.concurrency, a.seconds, os.getpid())))
        subprocess.run(["podman", "restart", f"{proj}_guard-1_1"], env=env, check=True, capture_output=True)
        subprocess.run(["podman", "stop", f"{proj}_guard-2_1"], env=env, check=True, capture_output=True)
        ready(f"http://127.0.0.1:{port + 1}")
        time.sleep(3)  # HAProxy marks guard-2 down
        rows.append(("1 replica behind HAProxy", level(lb, work, a.concurrency, a.seconds, os.getpid())))
    finally:
        subprocess.run([*compose, "down", "-v"], env=env, capture_output=True)
    hport = port + 3
    proc = subprocess.Popen([sys.executable, "-m", "citebound.cli.main", "serve", "--verifier", "embedding",
                             "--workers", "2", "--port", str(hport), "--state", str(wd / "monitor.sqlite")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ready(f"http://127.0.0.1:{hport}")
        rows.append(("1 process, 2 workers (host)", level(f"http://127.0.0.1:{hport}", work, a.concurrency, a.seconds,
                                                          proc.pid)))
    finally:
        proc.terminate()
        proc.wait(60)
    print(f"{len(work)} real answers, {a.concurrency} clients, {os.cpu_count()} CPU cores")
    print(f"{'setup':<30} {'answers/s':>10} {'p50 ms':>8} {'p95 ms':>8} {'errors':>7} {'complete':>9}")
    for name, r in rows:
        print(f"{name:<30} {r['answers_per_s']:>10.2f} {r['p50_ms']:>8.0f} {r['p95_ms']:>8.0f} {r['errors']:>7} "
              f"{str(r['complete']):>9}")
    one, two, host = (rows[i][1]["answers_per_s"] for i in (1, 0, 2))
    if one > 0 and host > 0:
        print(f"2 replicas / 1 replica: {two / one:.2f}x; 2 replicas / 2 workers in one process: {two / host:.2f}x")
    return 0 if all(r["errors"] == 0 for _, r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
