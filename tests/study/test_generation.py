import json

import pytest
import yaml
from conftest import ROOT

from citebound.scoring.llm_backends import TransformersBackend, resolved_revision
from citebound.study.generation import format_passages, generate_file, load_tasks, normalise_citations, run_pipeline

TASKS = [{"id": f"q{i}", "question": f"what do mitochondria produce {i}?",
          "passages": [{"text": "mitochondria produce atp", "title": "A"}, {"text": "cells", "title": ""}]}
         for i in range(7)]


def pipeline(name):
    return yaml.safe_load((ROOT / "config" / "pipeline" / f"{name}.yaml").read_text())


class CountingBackend:
    """Wraps a real backend and counts the prompts it is asked to complete."""

    name = "transformers"

    def __init__(self, inner):
        self.inner, self.prompts = inner, []

    def chat(self, batch):
        self.prompts += [m[-1]["content"] for m in batch]
        return self.inner.chat(batch)


@pytest.fixture(scope="module")
def backend(tiny_llama):
    return TransformersBackend({"model": str(tiny_llama), "device": "cpu", "max_new_tokens": 8,
                                "chat_template_kwargs": {"enable_thinking": False}})


def test_transformers_backend_greedy_and_batch_invariant(backend):
    msgs = [[{"role": "user", "content": "mitochondria produce atp"}],
            [{"role": "system", "content": "be brief"}, {"role": "user", "content": "cells [1] protein"}]]
    batched = backend.chat(msgs)
    single = [backend.chat([m])[0] for m in msgs]
    assert [c.text for c in batched] == [c.text for c in single]  # left padding does not change greedy output
    assert all(0 < c.completion_tokens <= 8 and c.prompt_tokens > 3 for c in batched)


def test_pipelines_structure(backend):
    cb = CountingBackend(backend)
    res = run_pipeline(cb, pipeline("openscholar"), TASKS[:2])
    assert len(cb.prompts) == 2 * 4 and set(res[0]["steps"]) == {"draft", "feedback", "revision", "posthoc"}
    assert res[0]["output"] == normalise_citations(res[0]["steps"]["posthoc"])
    cb = CountingBackend(backend)
    res = run_pipeline(cb, pipeline("paperqa2_prompts"), TASKS[:2])
    assert len(cb.prompts) == 2 * 2 + 2  # one summary per passage, then one answer per question
    assert "Excerpt [2]: cells" in cb.prompts[1]
    assert "[1] " in res[0]["steps"]["summaries"] and "[2] " in res[0]["steps"]["summaries"]
    assert format_passages(TASKS[0]["passages"]).startswith("[1] A\nmitochondria produce atp\n\n[2]")


def test_resume_after_kill_does_no_duplicate_work(backend, tmp_path):
    out = tmp_path / "g.jsonl"
    cb = CountingBackend(backend)
    first = generate_file(cb, pipeline("bare"), TASKS, out, {"model": "tiny"}, batch_size=2, stop_after=3)
    assert first["generated"] == 4 and not out.exists()  # killed mid-run: only the partial file exists
    n_first = len(cb.prompts)
    second = generate_file(cb, pipeline("bare"), TASKS, out, {"model": "tiny"}, batch_size=2)
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert second == {"skipped_done": 4, "generated": 3, "errors": 0}
    assert sorted(r["id"] for r in recs) == sorted(t["id"] for t in TASKS)  # exactly n unique ids
    assert len(cb.prompts) - n_first == 3  # no item generated twice
    assert all(r["completion_tokens"] > 0 and r["model"] == "tiny" for r in recs)
    assert not out.with_name("g.jsonl.partial").exists()


def test_item_errors_are_recorded_not_blank(tmp_path):
    class Flaky:
        name = "fake"

        def chat(self, batch):
            if any("boom" in m[-1]["content"] for m in batch):
                raise RuntimeError("context too long")
            from citebound.scoring.llm_backends import Completion
            return [Completion("ok [1].", 5, 2) for _ in batch]

    tasks = [dict(TASKS[0], id="a"), dict(TASKS[1], id="b", question="boom")]
    stats = generate_file(Flaky(), pipeline("bare"), tasks, tmp_path / "e.jsonl", {"model": "x"}, batch_size=2)
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "e.jsonl").read_text().splitlines())}
    assert stats == {"skipped_done": 0, "generated": 1, "errors": 1}
    assert recs["a"]["output"] == "ok [1]." and recs["b"]["output"] is None
    assert "context too long" in recs["b"]["error"]


def test_tasks_bad_input_is_named_and_blank_passages_counted(tmp_path, caplog):
    from citebound.scoring.io import DataError
    good = {"id": "a", "input": "q?", "ctxs": [{"text": "p1"}, {"text": " "}, {"text": None}, {"text": "p4"}]}
    f = tmp_path / "tasks.jsonl"
    f.write_text(json.dumps(good) + "\n")
    with caplog.at_level("WARNING"):
        tasks = load_tasks(f)
    assert [p["text"] for p in tasks[0]["passages"]] == ["p1", "p4"]
    assert "2 passages with blank text" in caplog.text
    f.write_text(json.dumps(good) + "\n" + json.dumps({"id": "b", "ctxs": []}) + "\n")
    with pytest.raises(DataError, match=r"tasks.jsonl: record 1 \(id 'b'\) has no 'input' or 'question'"):
        load_tasks(f)


def test_tasks_from_mirror(mirror):
    tasks = load_tasks(mirror / "scholarqabench/scholarqa_multi/human_answers.json")
    assert len(tasks) == 108 and all(t["passages"] and t["question"] for t in tasks)


def test_yes_probability_matches_next_token_logits(backend):
    import torch
    msgs = [[{"role": "user", "content": "Passage: mitochondria produce atp\n\nSentence: cells\n\nYes or No."}]]
    p = backend.yes_probability(msgs)[0]
    text = backend.tok.apply_chat_template(msgs[0], add_generation_prompt=True, tokenize=False)
    enc = backend.tok(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        logits = backend.model(**enc).logits[0, -1]
    y, n = (backend.tok.encode(w, add_special_tokens=False)[0] for w in ("Yes", "No"))
    expected = torch.softmax(logits[[y, n]], -1)[0].item()
    assert 0 < p < 1 and p == pytest.approx(expected, abs=1e-5)


def test_resolved_revision_reads_the_commit_from_the_hub_cache(tmp_path, monkeypatch, tiny_llama):
    # a Hugging Face cache laid out as a download leaves it: refs/main -> snapshots/<commit>/
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--org--some-model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / "config.json").write_text("{}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as c
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolved_revision("org/some-model", "main") == sha
    assert resolved_revision("org/not-downloaded", "main") == "main"  # not cached: what was asked for
    assert resolved_revision(str(tiny_llama), None) is None  # a local directory has no hub revision


def test_token_counts_leave_out_padding_and_the_end_of_sequence(tiny_llama):
    """A short and a long prompt in one batch: each prompt's count is its own tokens (the tokenizer on it alone, no
    padding of the other), and a completion that ends with the end-of-sequence token does not count it. The random
    model's greedy continuation is read first; its first new token after the first one that it had not produced before
    is then made the end-of-sequence token (of the tokenizer and of generation), so the completion must be exactly the
    tokens before it."""
    import torch

    b = TransformersBackend({"model": str(tiny_llama), "device": "cpu", "max_new_tokens": 6})
    short = [{"role": "user", "content": "cells"}]
    long = [{"role": "system", "content": "be brief and cite passages"},
            {"role": "user", "content": "mitochondria produce atp in cells [1]"}]
    alone = [len(b.tok(b.tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False),
                       add_special_tokens=False)["input_ids"]) for m in (short, long)]
    assert alone[0] < alone[1]
    assert [c.prompt_tokens for c in b.chat([short, long])] == alone
    padded = b._encode([short, long])["input_ids"][0].tolist()  # the short prompt's padding comes before it
    assert padded[: alone[1] - alone[0]] == [b.tok.pad_token_id] * (alone[1] - alone[0]) and padded[-1] != b.tok.pad_token_id
    enc = b.tok(b.tok.apply_chat_template(short, add_generation_prompt=True, tokenize=False), return_tensors="pt",
                add_special_tokens=False)
    with torch.inference_mode():
        new = b.model.generate(**enc, do_sample=False, max_new_tokens=6, pad_token_id=b.tok.pad_token_id)[0, alone[0]:].tolist()
    j = next(i for i in range(1, len(new)) if new[i] not in new[:i] and new[i] != b.tok.pad_token_id)
    b.tok.eos_token = b.tok.convert_ids_to_tokens(new[j])
    b.model.generation_config.eos_token_id = new[j]
    got = b.chat([short, long])[0]
    assert got.completion_tokens == j and got.text == b.tok.decode(new[:j], skip_special_tokens=True).strip()


def test_a_batch_is_one_backend_call_per_step_when_nothing_fails(tmp_path):
    """Five items, batches of 2, the one-step bare pipeline: three calls of 2, 2 and 1 conversations (the batch
    is generated together; it is retried item by item only when the batched call fails)."""
    from citebound.scoring.llm_backends import Completion

    class Recording:
        name = "fake"
        sizes: list = []

        def chat(self, batch):
            self.sizes.append(len(batch))
            return [Completion("ok [1].", 5, 2) for _ in batch]

    be = Recording()
    tasks = [dict(TASKS[i % len(TASKS)], id=f"t{i}") for i in range(5)]
    stats = generate_file(be, pipeline("bare"), tasks, tmp_path / "b.jsonl", {"model": "x"}, batch_size=2)
    assert stats == {"skipped_done": 0, "generated": 5, "errors": 0} and be.sizes == [2, 2, 1]
