"""The paperqa2 pipeline through the real paper-qa package, and the in-process OpenAI-compatible endpoint."""
import json
import re
import threading

import openai
import yaml
from conftest import ROOT
from fake_openai import FakeOpenAI

from citebound.scoring.chat_endpoint import Endpoint, LocalChatServer
from citebound.scoring.llm_backends import Completion, OpenAIBackend, TransformersBackend
from citebound.study.generation import generate_file, run_pipeline
from citebound.study.paperqa_engine import markers_from_citation_keys, paperqa_settings

PASSAGES = [{"text": "Mitochondria produce ATP by oxidative phosphorylation.", "title": "Cell energy"},
            {"text": "The sky is blue because of Rayleigh scattering.", "title": ""},
            {"text": "ATP synthase in mitochondria makes most cellular ATP.", "title": "ATP synthase"}]
TASKS = [{"id": f"q{i}", "question": f"What do mitochondria produce ({i})?", "passages": PASSAGES} for i in range(3)]


def pipeline(name):
    return yaml.safe_load((ROOT / "config" / "pipeline" / f"{name}.yaml").read_text())


def test_markers_from_citation_keys_hand_cases():
    keys = {"pqac-aaaaaaaa": [3], "pqac-bbbbbbbb": [1]}
    assert markers_from_citation_keys("A (pqac-aaaaaaaa). B (pqac-bbbbbbbb, pqac-aaaaaaaa).", keys) == "A [3]. B [1, 3]."
    # hallucinated keys go (alone, or from a group), duplicates collapse, bare keys are mapped too
    assert markers_from_citation_keys("C (pqac-zzzzzzzz). D (pqac-zzzzzzzz, pqac-bbbbbbbb, pqac-bbbbbbbb).",
                                      keys) == "C. D [1]."
    assert markers_from_citation_keys("E pqac-aaaaaaaa and (see Smith 2020).", keys) == "E [3] and (see Smith 2020)."
    # one key shared by passages whose summaries were identical cites all of them
    assert markers_from_citation_keys("F (pqac-cccccccc, pqac-aaaaaaaa).", {**keys, "pqac-cccccccc": [2, 4]}) \
        == "F [2, 4, 3]."


def test_paperqa_settings_from_config_keep_retrieval_off_and_point_at_the_endpoint():
    ep = Endpoint("http://127.0.0.1:9/v1", "m", "k", {"chat_template_kwargs": {"enable_thinking": False}})
    s = paperqa_settings(ep, {**pipeline("paperqa2")["settings"], "llm": "openai/gpt-4o", "answer": {
        "evidence_retrieval": False, "answer_max_sources": 3}})
    assert s.answer.evidence_retrieval is False and s.parsing.defer_embedding is True
    assert s.answer.answer_max_sources == 3 and s.answer.evidence_summary_length == "about 100 words"  # default kept
    assert s.llm == s.summary_llm == "openai/m" and s.temperature == 0.0  # the generator always wins
    params = s.llm_config["model_list"][0]["litellm_params"]
    assert params == {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1", "api_key": "k", "temperature": 0.0, "timeout": 600,
                      "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    assert s.summary_llm_config == s.llm_config


class Recorder:
    """A backend that answers with the last user message reversed and records its batch sizes."""

    name = "recorder"

    def __init__(self, gate=None):
        self.batches, self.gate = [], gate

    def chat(self, batch):
        if self.gate is not None:
            self.gate.wait(5)
        self.batches.append(len(batch))
        if any("boom" in m[-1]["content"] for m in batch):
            raise RuntimeError("out of memory")
        return [Completion(m[-1]["content"][::-1], len(m), 1) for m in batch]


def test_local_server_batches_concurrent_requests_and_keeps_order():
    gate = threading.Event()
    backend = Recorder(gate)
    with LocalChatServer(backend, model="m", max_batch=16, max_wait_s=0.5) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=20)
        assert [m.id for m in client.models.list()] == ["m"]
        prompts = [f"prompt number {i}" for i in range(6)]
        results = {}

        def ask(p):
            r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": p}])
            results[p] = (r.choices[0].message.content, r.usage.prompt_tokens)

        threads = [threading.Thread(target=ask, args=(p,)) for p in prompts]
        for t in threads:
            t.start()
        gate.set()
        for t in threads:
            t.join(10)
        assert results == {p: (p[::-1], 1) for p in prompts}  # each caller gets its own answer
        assert sum(backend.batches) == 6 and len(backend.batches) < 6 and srv.stats.requests == 6
        # a request that breaks its batch fails alone, as an HTTP 500 to its caller (not a hang or an empty
        # answer); the requests batched with it are answered one by one
        results.clear()
        errors = []

        def ask_or_fail(p):
            try:
                ask(p)
            except openai.InternalServerError as e:
                errors.append((p, str(e)))

        threads = [threading.Thread(target=ask_or_fail, args=(p,)) for p in ("ok one", "boom", "ok two")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert results == {"ok one": ("eno ko", 1), "ok two": ("owt ko", 1)}
        assert len(errors) == 1 and errors[0][0] == "boom" and "out of memory" in errors[0][1]
        assert backend.batches[-4:] == [3, 1, 1, 1]  # the failed batch of 3, then each request alone


def scripted_paperqa(body):
    """Summaries: relevance 9 for ATP synthase, 8 for other ATP passages, else 0; answer: cite the keys in the
    order paper-qa listed them (best first), then a made-up key."""
    user = body["messages"][-1]["content"]
    if "Excerpt from" in user:
        excerpt = user.split("---")[1].strip()
        relevant = "ATP" in excerpt
        score = (9 if "synthase" in excerpt else 8) if relevant else 0
        return json.dumps({"summary": f"Evidence: {excerpt}" if relevant else "", "relevance_score": score})
    keys = list(dict.fromkeys(re.findall(r"pqac-[0-9a-z]{8}", user.split("Valid Keys:")[0])))
    return f"Mitochondria produce ATP ({', '.join(keys)}). It is made by ATP synthase (pqac-00000000)."


def test_paperqa_package_over_fixed_passages_via_served_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("CITEBOUND_SERVED_KEY", "sk-test")
    gen = yaml.safe_load((ROOT / "config" / "generator" / "served.yaml").read_text())
    with FakeOpenAI(scripted_paperqa, usage=(5, 2)) as srv:
        backend = OpenAIBackend({**gen, "base_url": srv.base_url})
        out = tmp_path / "paperqa2.jsonl"
        stats = generate_file(backend, pipeline("paperqa2"), TASKS, out, {"model": "served"}, batch_size=2)
        reqs = list(srv.requests)
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert stats == {"skipped_done": 0, "generated": 3, "errors": 0}
    # retrieval off: all 3 passages summarised per question, then one answer call: 4 requests per question
    summaries = [r for r in reqs if "Excerpt from" in r["messages"][-1]["content"]]
    assert len(reqs) == 12 and len(summaries) == 9
    # paper-qa's own prompts are what the model saw (JSON summary system prompt, its answer prompt)
    assert all("relevance_score" in r["messages"][0]["content"] for r in summaries)
    assert any(r["messages"][-1]["content"].startswith("Answer the question below with the context") for r in reqs)
    assert all(r["model"] == "my-served-model" and r["temperature"] == 0.0 for r in reqs)
    assert all(r["chat_template_kwargs"] == {"enable_thinking": False} for r in reqs)  # Qwen thinking off
    for r in recs:  # passages 1 and 3 are relevant; the made-up key is dropped
        assert r["output"] == "Mitochondria produce ATP [3, 1]. It is made by ATP synthase."
        assert r["steps"]["evidence"].startswith("[1] (relevance 8) Evidence: Mitochondria produce ATP by")
        assert "[3] (relevance 9) Evidence: ATP synthase" in r["steps"]["evidence"]
        assert "[2]" not in r["steps"]["evidence"]  # relevance 0: paper-qa discards it
        assert r["engine"].startswith("paper-qa ") and r["pipeline"] == "paperqa2"
        assert (r["prompt_tokens"], r["completion_tokens"]) == (4 * 5, 4 * 2)  # 4 calls, each 5 in and 2 out


def test_paperqa_through_in_process_endpoint_on_tiny_llama(tiny_llama):
    backend = TransformersBackend({"name": "tiny", "model": str(tiny_llama), "device": "cpu", "max_new_tokens": 8,
                                   "batch_size": 2})
    try:
        res = run_pipeline(backend, pipeline("paperqa2"), TASKS[:2])
        stats = backend._server.stats
    finally:
        backend.close()
    # every passage is summarised (paper-qa retries an unparsable summary once), at most one answer call each
    assert 2 * 3 <= stats.requests <= 2 * (3 * 2 + 1) and stats.batches < stats.requests
    for r in res:
        assert r["engine"].startswith("paper-qa ") and r["prompt_tokens"] > 0
        # whatever random weights wrote, every citation left in the answer points at one of the 3 passages
        assert set(re.findall(r"\d+", " ".join(re.findall(r"\[[\d, ]+\]", r["output"])))) <= {"1", "2", "3"}
    assert backend._server is None


def test_a_nested_settings_override_keeps_its_own_keys_beside_the_endpoint():
    """A pipeline may set a key inside a mapping the endpoint also fills (llm_config's rate limit): the two are
    merged, key by key; where both set one, the endpoint's wins."""
    ep = Endpoint("http://127.0.0.1:9/v1", "m", "k", None)
    s = paperqa_settings(ep, {"llm_config": {"rate_limit": {"openai/m": "30 per 1 minute"},
                                             "model_list": [{"model_name": "openai/other"}]},
                              "summary_llm_config": {"rate_limit": {"openai/m": "10 per 1 minute"}}})
    assert s.llm_config["rate_limit"] == {"openai/m": "30 per 1 minute"}
    assert s.summary_llm_config["rate_limit"] == {"openai/m": "10 per 1 minute"}
    for cfg in (s.llm_config, s.summary_llm_config):
        assert [m["model_name"] for m in cfg["model_list"]] == ["openai/m"]
        assert cfg["model_list"][0]["litellm_params"]["api_base"] == "http://127.0.0.1:9/v1"
