"""The LLM judge's effects, observed at a local OpenAI-compatible server: how many calls a failing endpoint
gets, that an answer frozen for one model is never replayed for another, that the unparsed count adds up
over a run, and a negated verdict with words between."""
import hashlib

import numpy as np
import pytest
from conftest import verifier_cfg
from fake_openai import FakeOpenAI
from test_llm_verifiers import KEY, key  # noqa: F401 (key: the API-key fixture those tests use)

from citebound.scoring.llm_backends import EndpointError
from citebound.verifiers import build_verifier
from citebound.verifiers.llm_judge import ResponseStore, parse_verdict

pytestmark = pytest.mark.usefixtures("key")  # the API key in KEY, for every judge these tests build


@pytest.mark.parametrize("reply, verdict", [
    ("The claim is not supported.", False),
    ("The claim is not fully supported.", False),       # one word between
    ("The claim is not at all supported.", False),      # two words between
    ("It is not, on balance, supported.", False),       # commas between are still a negation
    ("Not supported; no.", False),
    ("Supported.", True),
    ("I cannot tell.", None),
])
def test_a_negated_verdict_with_up_to_two_words_between(reply, verdict):
    assert parse_verdict(reply, "SUPPORTED", "UNSUPPORTED") is verdict


def test_a_failing_endpoint_gets_max_retries_plus_one_calls(tmp_path):
    with FakeOpenAI(lambda body: "SUPPORTED", fail_first=100) as srv:
        v = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, backoff_seconds=0.001,
                                        max_retries=2, max_concurrency=1), tmp_path)
        with pytest.raises(EndpointError, match="failed after 3 attempts"):
            v.judge(["a claim"], ["a passage"])
        assert len(srv.requests) == 3
    with FakeOpenAI(lambda body: "SUPPORTED", fail_first=2) as srv:  # the third attempt succeeds
        v = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, backoff_seconds=0.001,
                                        max_retries=2, max_concurrency=1), tmp_path / "b")
        s, verdict = v.judge(["a claim"], ["a passage"])
        assert s.tolist() == [1.0] and verdict.tolist() == [True] and len(srv.requests) == 3


def test_an_answer_frozen_for_one_model_is_not_replayed_for_another(tmp_path):
    """Both judges share one store; the second names another model, so it asks the endpoint itself."""
    def by_model(body):
        return "SUPPORTED" if body["model"] == "model-a" else "UNSUPPORTED"
    with FakeOpenAI(by_model) as srv:
        a = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, model="model-a",
                                        max_concurrency=1), tmp_path)
        assert a.judge(["c"], ["p"])[0].tolist() == [1.0]
        b = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, model="model-b",
                                        max_concurrency=1), tmp_path)
        assert b.judge(["c"], ["p"])[0].tolist() == [0.0]
        assert [r["model"] for r in srv.requests] == ["model-a", "model-b"]
        assert a.judge(["c"], ["p"])[0].tolist() == [1.0] and len(srv.requests) == 2  # each replayed for its own
    assert ResponseStore.hash("m", "p") == hashlib.sha256(b"m\x1fp").hexdigest()


def test_a_frozen_reply_is_filed_under_its_models_and_prompts_hash(tmp_path):
    """The store's key is sha256(model, 0x1f, prompt), worked out here from each row's own model and prompt: a
    store frozen by one version is found by the next (the order is the file format)."""
    import sqlite3

    with FakeOpenAI(lambda body: "SUPPORTED") as srv:
        v = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, model="model-a",
                                        max_concurrency=1), tmp_path)
        v.judge(["c1", "c2"], ["p1", "p2"])
    (db,) = [f for f in tmp_path.rglob("*") if f.is_file() and f.read_bytes()[:15] == b"SQLite format 3"]
    rows = sqlite3.connect(db).execute("SELECT prompt_hash, model, prompt FROM response").fetchall()
    assert len(rows) == 2 and {m for _, m, _ in rows} == {"model-a"}
    for h, m, prompt in rows:
        assert h == hashlib.sha256(f"{m}\x1f{prompt}".encode()).hexdigest()


def test_the_unparsed_count_adds_up_over_calls(tmp_path):
    answers = iter(["Maybe", "SUPPORTED", "no idea", "perhaps"])
    with FakeOpenAI(lambda body: next(answers)) as srv:
        v = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, max_concurrency=1),
                           tmp_path)
        v.judge(["a", "b"], ["p", "q"])
        assert v.n_unparsed == 1
        v.judge(["c", "d"], ["r", "s"])
        assert v.n_unparsed == 3
        assert len(srv.requests) == 4


@pytest.mark.parametrize("reply, verdict", [
    ("It doesn't look supported.", False), ("The claim isn't really supported.", False),
    ("The claim is non-supported.", False), ("Un-supported.", False), ("Not-supported", False),
    ("It does look supported.", True),
])
def test_every_negation_cue_reads_as_a_negative_verdict(reply, verdict):
    assert parse_verdict(reply, "SUPPORTED", "UNSUPPORTED") is verdict


def test_retries_double_their_pause_and_none_follows_the_last_attempt(tmp_path, caplog):
    """Three failing attempts with a 0.2 s backoff: they come at 0, 0.2 and 0.6 s (0.2 then 0.4 between), and the
    error follows the third at once (no fourth pause). Each pause is logged with the retry it leads to: 1/2, 2/2."""
    import logging
    import time

    caplog.set_level(logging.WARNING, logger="citebound.verifiers.llm_judge")

    class Timed(list):  # the server's request log, with when each request came
        def append(self, body):
            super().append(dict(body, at=time.monotonic()))

    with FakeOpenAI(lambda body: "SUPPORTED", fail_first=100) as srv:
        srv.requests = Timed()
        v = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, backoff_seconds=0.2,
                                        max_retries=2, max_concurrency=1), tmp_path)
        with pytest.raises(EndpointError, match="failed after 3 attempts"):
            v.judge(["a claim"], ["a passage"])
        done = time.monotonic()
        at = [r["at"] for r in srv.requests]
    assert len(at) == 3
    first, second = at[1] - at[0], at[2] - at[1]
    assert 0.18 <= first < 0.38 and 0.38 <= second < 0.7, (first, second)
    assert done - at[2] < 0.3
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert [m.split("; ")[1] for m in retries] == ["retry 1/2 in 0.2s", "retry 2/2 in 0.4s"]


def test_an_empty_frozen_reply_is_replayed_not_asked_again(tmp_path):
    with FakeOpenAI(lambda body: "") as srv:
        v = build_verifier(verifier_cfg("llm_judge", base_url=srv.base_url, api_key_env=KEY, max_concurrency=1), tmp_path)
        for _ in range(2):
            s, verdict = v.judge(["a claim"], ["a passage"])
            assert np.isnan(s[0]) and not verdict[0]  # an empty reply says nothing: unparsed, no score
        assert len(srv.requests) == 1 and v.n_unparsed == 2
