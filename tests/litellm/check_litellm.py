"""citebound's guardrail inside a real LiteLLM proxy process (tests/litellm/run.sh, in its own venv), in front of
a scripted OpenAI-compatible upstream that streams: the shipped example's answer through LiteLLM, streamed and
not, with the openai SDK, must be what the library gives (text and counts), streamed equal to unstreamed; a
request without passages is refused; --action block is a 403 with the claims withheld, or a stream that ends
content_filter. Exits non-zero, naming the check, on any difference."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from fake_stream import FakeStreamingOpenAI, Script  # noqa: E402
from service_helpers import free_port  # noqa: E402

from citebound import Guard  # noqa: E402

EX = json.loads((ROOT / "citebound/examples/answer.json").read_text())
COUNTS = ("n_citations", "verified", "reattributed", "flagged", "invalid", "unverified", "uncited")


def proxy(upstream: str, settings: dict, work: Path):
    """A LiteLLM proxy from deploy/litellm/'s config, pointed at ``upstream``, with these guard settings."""
    work.mkdir()
    shutil.copy(ROOT / "deploy/litellm/citebound_guardrail.py", work)
    text = (ROOT / "deploy/litellm/config.yaml").read_text()
    text = text.replace("citebound_verifier: embedding ", "citebound_verifier: lexical ")
    text = text.replace("      citebound_action: annotate ", "".join(f"      citebound_{k}: {v}\n" for k, v in settings.items())
                        + "      # ")
    (work / "config.yaml").write_text(text)
    port = free_port()
    env = os.environ | {"UPSTREAM_BASE": upstream, "UPSTREAM_KEY": "sk-up", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    p = subprocess.Popen([str(Path(sys.executable).parent / "litellm"), "--config", str(work / "config.yaml"),
                          "--port", str(port), "--host", "127.0.0.1"], env=env, cwd=work,
                         stdout=open(work / "litellm.log", "w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                return p, url
        except httpx.TransportError:
            pass
        if p.poll() is not None:
            break
        time.sleep(0.5)
    p.kill()
    sys.exit(f"LiteLLM did not start:\n{(work / 'litellm.log').read_text()[-3000:]}")


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if not ok else ""), flush=True)
    if not ok:
        sys.exit(1)


def stream(client, extra):
    text, report, finish = [], None, None
    for chunk in client.chat.completions.create(model="my-model", messages=[{"role": "user", "content": "q"}],
                                                stream=True, extra_body=extra):
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        report = (chunk.model_extra or {}).get("citebound", {}).get("report") or report
    return "".join(text), report, finish


def case_table(up, tmp: Path) -> None:
    """Every case of tests/guard_cases.py, each config on a LiteLLM proxy of its own, streamed and not: the case's
    hand-worked text, counts and budget (a blocked one: a 403; streamed, the text sent before the budget passed)."""
    from guard_cases import CONFIGS, by_config, calibration_records

    from citebound.cli.main import main as cli

    src, cal = tmp / "scores.jsonl", tmp / "lab.json"
    src.write_text("".join(json.dumps(r) + "\n" for r in calibration_records()))
    check("the case table's calibration", cli(["calibrate", "--scores", str(src), "--verifier", "lexical",
                                                "--out", str(cal)]) == 0)
    for config, cases in by_config().items():
        for i, c in enumerate(cases):
            up.scripts[f"{config}-{i}"] = Script([w + " " for w in c.answer.split(" ")[:-1]] + c.answer.split(" ")[-1:])
        p, url = proxy(up.base_url, {"calibration": cal} | CONFIGS[config], tmp / f"cases-{config}")
        try:
            client = openai.OpenAI(base_url=url, api_key="sk-anything", max_retries=0, timeout=120)
            for i, c in enumerate(cases):
                extra = {"citebound": {"passages": c.passages, "citation_base": c.base, "group": c.group}}
                kw = {"model": "my-model", "messages": [{"role": "user", "content": f"{config}-{i}"}], "extra_body": extra}
                try:
                    r = client.chat.completions.create(**kw)
                    text, report = r.choices[0].message.content, r.model_extra["citebound"]["report"]
                except openai.APIStatusError as e:
                    check(f"case {c.name} ({config}) is blocked", c.text is None and e.status_code == 403, e)
                    text, report = None, None
                sent, s_report, finish = [], None, None
                for chunk in client.chat.completions.create(stream=True, **kw):
                    if chunk.choices:
                        sent.append(chunk.choices[0].delta.content or "")
                        finish = chunk.choices[0].finish_reason or finish
                    s_report = (chunk.model_extra or {}).get("citebound", {}).get("report") or s_report
                if finish == "content_filter":
                    check(f"case {c.name} ({config}) streamed blocks on its prefix",
                          "".join(sent).strip() == (c.stream_sent or "") and s_report["blocked"], "".join(sent))
                else:
                    check(f"case {c.name} ({config}) streamed equals unstreamed", "".join(sent) == c.text, "".join(sent))
                for got in ([report] if report else []) + ([s_report] if finish != "content_filter" else []):
                    counts = {k: int(got[k]) for k in c.expected_counts()}
                    check(f"case {c.name} ({config}) counts and budget",
                          (text if got is report else c.text, counts) == (c.text, c.expected_counts())
                          and abs(got["review_budget"] - c.budget) < 1e-12, (counts, got["review_budget"]))
        finally:
            p.kill()
            p.wait()


def main() -> int:
    words = EX["answer"].split(" ")
    pieces = [w + " " for w in words[:-1]] + words[-1:]
    text, rep = Guard("lexical").guard(EX["answer"], EX["passages"])
    want = {k: getattr(rep, k) for k in COUNTS}
    extra = {"citebound": {"passages": EX["passages"]}}
    scripts = {"q": Script(pieces)}
    with tempfile.TemporaryDirectory() as tmp, \
            FakeStreamingOpenAI(lambda body: scripts.get(body["messages"][0]["content"], scripts["q"])) as up:
        up.scripts = scripts
        p, url = proxy(up.base_url, {}, Path(tmp) / "annotate")
        try:
            c = openai.OpenAI(base_url=url, api_key="sk-anything", max_retries=0, timeout=120)
            r = c.chat.completions.create(model="my-model", messages=[{"role": "user", "content": "q"}], extra_body=extra)
            got = r.choices[0].message.content
            check("unstreamed text through LiteLLM is the library's", got == text, got)
            report = (r.model_extra or {}).get("citebound", {}).get("report")
            check("unstreamed report rides on the response", report is not None and {k: report[k] for k in COUNTS} == want,
                  report and {k: report[k] for k in COUNTS})
            check("the planted [4] is INVALID and two citations moved", "[4 INVALID]" in got and report["reattributed"] == 2)
            s_text, s_report, finish = stream(c, extra)
            check("streamed text equals the unstreamed", s_text == text and finish == "stop", (s_text, finish))
            check("the streamed report rides on the last chunk",
                  s_report is not None and {k: s_report[k] for k in COUNTS} == want, s_report)
            try:
                c.chat.completions.create(model="my-model", messages=[{"role": "user", "content": "q"}])
                check("a request without passages is refused", False, "it was answered")
            except openai.APIStatusError as e:
                check("a request without passages is refused", e.status_code == 400 and "no passages" in str(e), e)
        finally:
            p.kill()
            p.wait()
        p, url = proxy(up.base_url, {"action": "block", "block_above": 0.1}, Path(tmp) / "block")
        try:
            c = openai.OpenAI(base_url=url, api_key="sk-anything", max_retries=0, timeout=120)
            try:
                c.chat.completions.create(model="my-model", messages=[{"role": "user", "content": "q"}], extra_body=extra)
                check("block refuses the answer", False, "it was answered")
            except openai.APIStatusError as e:
                body = str(e)
                check("block refuses the answer with a 403", e.status_code == 403 and "citebound blocked" in body, e)
                check("the refused answer's claims are withheld", "Aspirin also cures migraine" not in body, body[:300])
            s_text, s_report, finish = stream(c, extra)
            check("a blocked stream ends content_filter with the report", finish == "content_filter" and s_report["blocked"],
                  (finish, s_report and s_report["blocked"]))
            # re-attributed citations pass: the budget passes 0.1 only at the invalid [4], whose sentence is withheld
            check("a blocked stream withholds the sentence that passed the budget",
                  s_text == text.rsplit(" Aspirin also", 1)[0], s_text)
        finally:
            p.kill()
            p.wait()
        case_table(up, Path(tmp))
    print("litellm guardrail: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
