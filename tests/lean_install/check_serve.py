"""Run inside a venv with only the wheel's [serve] extra: start `citebound serve` and `citebound label` as a
user would (their console script, on free loopback ports), guard the shipped example through the service,
open the labelling page, and check that no study package, torch or the MCP SDK came with the extra.
Exit status 1 names what is wrong."""
import importlib.metadata as md
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from citebound import examples

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(url: str, proc: subprocess.Popen, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"{proc.args} exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    sys.exit(f"{url} did not answer within {seconds} s")


def main() -> None:
    problems = [d for d in ("torch", "transformers", "mcp", "snakemake", "scipy", "pandas") if _installed(d)]
    if problems:
        sys.exit(f"[serve] brought {problems}")
    example = json.loads(examples.path().read_text())
    port = free_port()
    serve = subprocess.Popen([str(BIN / "citebound"), "serve", "--verifier", "lexical", "--port", str(port)],
                             stderr=subprocess.PIPE, text=True)
    try:
        wait(f"http://127.0.0.1:{port}/readyz", serve)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/guard", json=example, timeout=60)
        if r.status_code != 200 or r.json()["report"]["n_citations"] < 1:
            sys.exit(f"/v1/guard answered {r.status_code}: {r.text[:500]}")
    finally:
        serve.terminate()
        serve.wait(10)
    with tempfile.TemporaryDirectory(prefix="citebound-label-") as d:
        work = Path(d)
        (work / "a.json").write_text(json.dumps(example))
        port = free_port()
        label = subprocess.Popen([str(BIN / "citebound"), "label", "--input", str(work / "a.json"), "--out",
                                  str(work / "labels.jsonl"), "--verifier", "lexical", "--port", str(port)],
                                 stderr=subprocess.PIPE, text=True)
        try:
            wait(f"http://127.0.0.1:{port}/", label)
        finally:
            label.terminate()
            label.wait(10)
    print("[serve] alone: citebound serve guarded the example; citebound label served its page")


def _installed(dist: str) -> bool:
    try:
        md.version(dist)
        return True
    except md.PackageNotFoundError:
        return False


if __name__ == "__main__":
    main()
