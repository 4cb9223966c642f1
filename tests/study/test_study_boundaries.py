"""Boundaries of the study's generation and of the contradiction check's held-out catch, chosen on purpose:
scores exactly at tau, counts across several records, the last task --max-items keeps, items that fail
before stop_after, every citation word the normaliser knows. Expected values by hand."""
import json

import numpy as np
import pytest

from citebound.scoring.llm_backends import Completion
from citebound.study import contradiction as S
from citebound.study.generation import generate_file, load_tasks, normalise_citations

PIPELINE = {"name": "bare", "final": "answer", "steps": [{"name": "answer", "kind": "single", "prompt": "{question}"}]}


@pytest.mark.parametrize("written,read", [
    ("[Passage 2]", "[2]"), ("[passages 3]", "[3]"), ("[Reference 1]", "[1]"), ("[Ref #4]", "[4]"),
    ("[Doc 5]", "[5]"), ("[Document 6]", "[6]"), ("[Source 7]", "[7]"), ("[Sources 8]", "[8]"),
    ("[Excerpt 4]", "[4]"), ("[excerpts 10]", "[10]"), ("[Table 2]", "[Table 2]"), ("[2]", "[2]")])
def test_every_citation_word_the_normaliser_knows(written, read):
    assert normalise_citations(f"A claim {written}.") == f"A claim {read}."


def test_blank_passages_are_counted_over_every_record_and_max_items_keeps_that_many(tmp_path, caplog):
    f = tmp_path / "tasks.jsonl"
    recs = [{"id": "a", "input": "q1?", "ctxs": [{"text": "p"}, {"text": ""}]},
            {"id": "b", "input": "q2?", "ctxs": [{"text": "  "}, {"text": "p"}, {"text": None}]},
            {"id": "c", "input": "q3?", "ctxs": [{"text": "p"}]}]
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with caplog.at_level("WARNING"):
        tasks = load_tasks(f)
    assert [len(t["passages"]) for t in tasks] == [1, 1, 1]
    assert "3 passages with blank text" in caplog.text  # 1 in a, 2 in b
    assert [t["id"] for t in load_tasks(f, max_items=1)] == ["a"]
    assert [t["id"] for t in load_tasks(f, max_items=2)] == ["a", "b"]


def test_failed_items_count_toward_stop_after(tmp_path):
    class Failing:
        name = "fake"

        def chat(self, batch):
            raise RuntimeError("out of memory")

    tasks = [{"id": f"t{i}", "question": f"q{i}?", "passages": []} for i in range(4)]
    out = tmp_path / "g.jsonl"
    stats = generate_file(Failing(), PIPELINE, tasks, out, {"model": "m"}, batch_size=1, stop_after=2)
    assert stats == {"skipped_done": 0, "generated": 0, "errors": 2}
    assert not out.exists()  # stopped as a killed run would: the partial file holds the two
    assert len((tmp_path / "g.jsonl.partial").read_text().splitlines()) == 2

    class Echo:
        name = "fake"

        def chat(self, batch):
            return [Completion("an answer [1].", 3, 4) for _ in batch]

    stats = generate_file(Echo(), PIPELINE, tasks, out, {"model": "m"}, batch_size=1)
    assert stats == {"skipped_done": 2, "generated": 2, "errors": 0} and out.exists()


def test_held_out_scores_exactly_at_tau_are_caught_and_not_kept():
    """Ten answers, each one unsupported citation scored 0.5 and two supported ones, 0.5 and 0.7. Any half of
    five answers calibrates on five 0.5s: k = ceil(6 * 0.8) = 5, tau = 0.5. Held out: every unsupported 0.5
    is caught (0.5 <= tau), and of the supported only the 0.7s are kept (0.5 is flagged): 1.0 and 0.5.
    SciFact: unsupported 0.5 and 0.3 caught, supported 0.5 flagged and 0.9 kept."""
    items = np.repeat(np.arange(10), 3)
    y = np.tile([0, 1, 1], 10)
    s = np.tile([0.5, 0.5, 0.7], 10)
    sf, sf_y = np.array([0.5, 0.3, 0.5, 0.9]), np.array([0, 0, 1, 1])
    scored = {"attribution_gold_eval": (s, s.copy(), y), "scifact_dev": (sf, sf.copy(), sf_y)}
    out = S.catch_rows(scored, items, alpha=0.2, seed=1, splits=3).set_index("verifier")
    for name in ("embedding", "embedding+contradiction"):
        row = out.loc[name]
        assert row.held_out_catch == 1.0 and row.held_out_supported_kept == 0.5
        assert row.scifact_contradictions_caught == 1.0 and row.scifact_supported_kept == 0.5
        assert row.catch_ci_high == 1.0 and bool(row.keeps_guarantee)
