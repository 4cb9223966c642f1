"""Real interruptions: a scoring or generation process killed with SIGKILL mid-run resumes on rerun
without recomputing what was finished, and ends with exactly what an uninterrupted run gives."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow  # kills and reruns scoring and generation processes

SCORE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {root!r})
    from citebound.verifiers import score_pairs
    from citebound.verifiers.base import ScoreCache
    from citebound.verifiers.lexical import LexicalVerifier

    class Logged(LexicalVerifier):
        # the real lexical verifier; each judged chunk is logged, and takes a moment, so a kill lands mid-run
        def judge(self, claims, windows):
            with open({log!r}, "a") as fh:
                fh.write(json.dumps(len(claims)) + "\\n")
            time.sleep(0.4)
            return super().judge(claims, windows)

    claims = [f"protein {{i}} binds receptor {{i % 7}} in cells" for i in range(40)]
    passages = [f"In cells, protein {{i}} binds receptor {{(i * 3) % 7}} and kinase {{i}}." for i in range(40)]
    ps = score_pairs(Logged({{"threshold": 0.6}}), claims, passages, cache=ScoreCache({cache!r}),
                     chunk_units=5, progress=False)
    print(json.dumps({{"score": ps.score.tolist(), "cached": ps.n_cached}}))
""")


def _run(script: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 120) -> None:
    t0 = time.time()
    while not ready():
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() - t0 < timeout, "the process never reached the kill point"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as c:
            return c.execute("SELECT COUNT(*) FROM unit").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_scoring_killed_mid_run_resumes_from_the_cache(tmp_path):
    cache, log = tmp_path / "cache.sqlite", tmp_path / "judged.log"
    script = SCORE_SCRIPT.format(root=str(ROOT), cache=str(cache), log=str(log))
    p = _run(script)
    _kill_when(p, lambda: _rows(cache) >= 10)  # at least two chunks of 5 committed
    done = _rows(cache)
    assert 10 <= done < 40 and done % 5 == 0  # whole chunks only: written after every chunk
    log.write_text("")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    resumed = json.loads(out.stdout)
    judged = sum(int(x) for x in log.read_text().split())
    assert resumed["cached"] == done and judged == 40 - done  # finished chunks are not recomputed
    # the same scores as an uninterrupted run in a fresh cache
    fresh = SCORE_SCRIPT.format(root=str(ROOT), cache=str(tmp_path / "fresh.sqlite"), log=str(tmp_path / "f.log"))
    full = json.loads(subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True,
                                     check=True).stdout)
    assert full["cached"] == 0 and resumed["score"] == full["score"]


GEN_SCRIPT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {root!r})
    from citebound.scoring.llm_backends import TransformersBackend
    from citebound.study.generation import generate_file

    class Logged(TransformersBackend):
        def chat(self, batch):
            with open({log!r}, "a") as fh:
                fh.write(json.dumps(len(batch)) + "\\n")
            time.sleep(0.3)
            return super().chat(batch)

    backend = Logged({{"model": {model!r}, "max_new_tokens": 12, "device": "cpu"}})
    tasks = [{{"id": f"q{{i}}", "question": f"what does protein {{i}} bind", "passages": [{{"text": f"protein {{i}} binds"}}]}}
             for i in range(8)]
    pipe = {{"name": "bare", "steps": [{{"name": "a", "kind": "generate", "prompt": "{{passages}} {{question}}"}}],
            "final": "a"}}
    print(json.dumps(generate_file(backend, pipe, tasks, {out!r}, {{"model": "tiny"}}, batch_size=2)))
""")


def test_generation_killed_mid_run_resumes_without_regenerating(tmp_path, tiny_llama):
    out, log = tmp_path / "gen.jsonl", tmp_path / "calls.log"
    partial = tmp_path / "gen.jsonl.partial"
    script = GEN_SCRIPT.format(root=str(ROOT), model=str(tiny_llama), out=str(out), log=str(log))
    p = _run(script)
    _kill_when(p, lambda: partial.exists() and len(partial.read_text().splitlines()) >= 4)
    done = len(partial.read_text().splitlines())
    assert 4 <= done < 8 and done % 2 == 0 and not out.exists()
    log.write_text("")
    stats = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                      check=True).stdout)
    assert stats == {"skipped_done": done, "generated": 8 - done, "errors": 0}
    assert sum(int(x) for x in log.read_text().split()) == 8 - done  # only the unfinished items were generated
    resumed = [json.loads(x) for x in out.read_text().splitlines()]
    fresh_out = tmp_path / "fresh.jsonl"
    subprocess.run([sys.executable, "-c", GEN_SCRIPT.format(root=str(ROOT), model=str(tiny_llama), out=str(fresh_out),
                                                             log=str(tmp_path / "f.log"))], check=True,
                   capture_output=True)
    fresh = [json.loads(x) for x in fresh_out.read_text().splitlines()]
    assert [r["id"] for r in resumed] == [f"q{i}" for i in range(8)]
    assert [(r["id"], r["output"]) for r in resumed] == [(r["id"], r["output"]) for r in fresh]


@pytest.mark.parametrize("key,value", [
    ("model", "other/model"), ("revision", "abc123"), ("prompt", "Is it supported? {claim} {passage}"),
    ("positive", "YES"), ("negative", "NOPE"), ("max_length", 128), ("label_words", ["a", "b"]),
])
def test_every_output_relevant_key_changes_the_cache_and_calibration_id(key, value, tmp_path):
    from citebound.verifiers import cache_for, verifier_hash
    base = {"name": "v", "kind": "llm", "model": "m", "revision": "r", "prompt": "p", "positive": "Y",
            "negative": "N", "max_length": 512, "threshold": 0.5, "batch_size": 8, "device": "cpu"}
    changed = {**base, key: value}
    assert verifier_hash(changed) != verifier_hash(base)
    assert cache_for(changed, tmp_path).path != cache_for(base, tmp_path).path
    # runtime-only keys share the cache (the scores cannot differ)
    for k, v in (("batch_size", 64), ("device", "cuda"), ("threshold", 0.9)):
        assert verifier_hash({**base, k: v}) == verifier_hash(base)
