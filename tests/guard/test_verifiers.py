import math

import numpy as np
import pytest
import torch
from conftest import verifier_cfg

from citebound.verifiers import ScoreCache, build_verifier, make_windows, score_pairs
from citebound.verifiers.lexical import LexicalVerifier, term_recall


class CountingVerifier(LexicalVerifier):
    def __init__(self):
        super().__init__({"threshold": 0.99})
        self.seen = 0

    def judge(self, claims, windows):
        self.seen += len(claims)
        return super().judge(claims, windows)


def test_windows_cover_the_passage():
    w = make_windows("a" * 1250, 600, 300)
    assert [len(x) for x in w] == [600, 600, 600, 600]
    assert "".join(x[:300] for x in w[:-1]) + w[-1][-(1250 - 900):] == "a" * 1250


def test_support_beyond_char_600_is_found():
    filler = "Unrelated filler about weather patterns and rivers. " * 20  # ~1040 chars
    passage = filler + "Mitochondria produce ATP through oxidative phosphorylation."
    claim = "Mitochondria produce ATP through oxidative phosphorylation."
    assert passage.index("Mitochondria") > 600
    ps = score_pairs(LexicalVerifier({"threshold": 0.9}), [claim], [passage], progress=False)
    assert ps.verdict[0] and ps.score[0] == 1.0 and ps.best_window[0] == ps.n_windows[0] - 1
    # a protocol that only looked at the first 600 characters would miss it
    assert term_recall(claim, passage[:600]) < 0.5


def test_empty_and_missing_text_do_not_stop_the_batch():
    ps = score_pairs(LexicalVerifier({}), ["cells make atp", "x", None, float("nan")],
                     ["cells make atp", "", "p", "p"], progress=False)
    assert ps.reason == ["", "empty_passage", "missing_claim", "missing_claim"]
    assert ps.score[0] == 1.0 and ps.score[1] == 0.0 and math.isnan(ps.score[2])


def test_cache_prevents_recomputation_and_resumes(tmp_path):
    claims = [f"claim {i} cells atp" for i in range(10)]
    passages = ["cells make atp " * 60] * 10
    v = CountingVerifier()
    cache = ScoreCache(tmp_path / "c.sqlite")
    first = score_pairs(v, claims[:4], passages[:4], cache=cache, progress=False)  # "interrupted" run
    n_first = v.seen
    full = score_pairs(v, claims, passages, cache=cache, progress=False)
    assert n_first == first.n_units
    assert full.n_cached == first.n_units  # resumed: only the 6 new claims' units were scored
    assert v.seen == full.n_units
    seen_before = v.seen
    again = score_pairs(v, claims, passages, cache=ScoreCache(tmp_path / "c.sqlite"), progress=False)
    assert v.seen == seen_before and again.n_cached == again.n_units
    np.testing.assert_array_equal(again.score, full.score)
    np.testing.assert_array_equal(first.score, full.score[:4])


def test_embedding_verifier_real_minilm_ranks_paraphrase_above_unrelated():
    v = build_verifier(verifier_cfg("embedding"))
    s, _ = v.judge(["The cat sat on the mat."] * 2, ["A cat was sitting on a mat.", "Stock markets fell sharply."])
    assert s[0] > s[1] + 0.2
    # score = (cos + 1) / 2 of L2-normalised mean-pooled embeddings
    e = v.embed(["The cat sat on the mat.", "A cat was sitting on a mat."])
    assert s[0] == pytest.approx((float(e[0] @ e[1]) + 1) / 2, abs=1e-6)


def test_embedding_verifier_pools_claims_and_windows_yet_scores_each_unit_as_alone():
    """Claims and windows of different lengths go through one length-sorted pool in batches of 2;
    every unit's score must still be (cos + 1) / 2 of its own two texts embedded one at a time."""
    v = build_verifier({**verifier_cfg("embedding"), "batch_size": 2, "runtime": "torch"})  # the exact torch path
    claims = ["Aspirin lowers fever.", "The protein binds zinc in two places of its catalytic domain.", "Aspirin lowers fever."]
    windows = ["Fever falls after aspirin in most patients.", "Zinc.", "Markets fell sharply on Monday after the report."]

    def alone(text):
        enc = v.tokenizer(text, return_tensors="pt")
        with torch.no_grad():
            h = v.model(**enc).last_hidden_state[0]
        e = h.mean(0)
        return (e / e.norm()).numpy()

    want = [(float(alone(c) @ alone(w)) + 1) / 2 for c, w in zip(claims, windows)]
    s, verdict = v.judge(claims, windows)
    np.testing.assert_allclose(s, want, atol=1e-5)
    np.testing.assert_array_equal(verdict, np.array(want) >= v.threshold)


def test_the_shipped_graph_pools_claims_and_windows_yet_scores_each_unit_as_alone():
    """The same on the graph inside the wheel: batches of 2 mix texts of unequal lengths (padding), yet
    each unit scores as its two texts embedded one at a time."""
    from citebound.verifiers.graph import mean_pool

    v = build_verifier({**verifier_cfg("embedding"), "batch_size": 2})
    assert v.graph is not None
    claims = ["Aspirin lowers fever.", "The protein binds zinc in two places of its catalytic domain.", "Aspirin lowers fever."]
    windows = ["Fever falls after aspirin in most patients.", "Zinc.", "Markets fell sharply on Monday after the report."]

    def alone(text):
        (_, h, m, _), = v.graph.batches([text])
        return mean_pool(h[:, -1], m)[0]

    want = [(float(alone(c) @ alone(w)) + 1) / 2 for c, w in zip(claims, windows)]
    s, verdict = v.judge(claims, windows)
    np.testing.assert_allclose(s, want, atol=1e-5)
    assert s[0] > s[2]  # the fever window supports the fever claim better than the markets one


def test_attrscore_batched_label_likelihoods_equal_unbatched(tiny_t5):
    v = build_verifier(verifier_cfg("attrscore", model=str(tiny_t5), revision=None, device="cpu", batch_size=3))
    claims = ["mitochondria produce atp", "the gene increases cancer risk", "x", "protein binds"]
    wins = ["mitochondria produce atp in cells", "serum proteins " * 30, "z", "the receptor"]
    ll = v.label_loglik(claims, wins)
    for i, (c, w) in enumerate(zip(claims, wins)):
        enc = v.tokenizer(v.prompt(c, w), return_tensors="pt")
        for j, ids in enumerate(v.label_ids):
            with torch.no_grad():
                loss = v.model(**enc, labels=ids[None]).loss.item()
            assert ll[i, j] == pytest.approx(-loss * len(ids), abs=1e-5)
    s, verdict = v.judge(claims, wins)
    p = np.exp(ll - ll.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(s, p[:, 0], atol=1e-6)
    np.testing.assert_array_equal(verdict, p.argmax(1) == 0)


def test_attrscore_prompts_selectable(tiny_t5):
    canon = build_verifier(verifier_cfg("attrscore", model=str(tiny_t5), revision=None, device="cpu", prompt="canon"))
    ours = build_verifier(verifier_cfg("attrscore", model=str(tiny_t5), revision=None, device="cpu", prompt="ours"))
    assert canon.prompt("c", "r").startswith("As an Attribution Validator")
    assert ours.prompt("c", "r") != canon.prompt("c", "r")
    with pytest.raises(ValueError, match="not in"):
        build_verifier(verifier_cfg("attrscore", model=str(tiny_t5), revision=None, device="cpu", prompt="nope"))


def test_nli_entailment_probability(tiny_nli):
    v = build_verifier(verifier_cfg("deberta_nli", model=str(tiny_nli), revision=None, device="cpu", batch_size=2))
    claims, wins = ["protein binds", "cells make atp", "gene"], ["the receptor", "atp", "cancer risk"]
    s, verdict = v.judge(claims, wins)
    entail = v.model.config.label2id["entailment"]
    want = []
    for c, w in zip(claims, wins):  # one pair at a time: premise the window, hypothesis the claim
        with torch.no_grad():
            want.append(torch.softmax(v.model(**v.tokenizer(w, c, return_tensors="pt")).logits, -1)[0].numpy())
    want = np.array(want)
    assert np.ptp(want[:, entail]) > 0.05  # the pairs' scores differ, so a mixed-up order would show
    assert s == pytest.approx(want[:, entail], abs=1e-5)
    assert verdict.tolist() == (want.argmax(1) == entail).tolist()


def test_threshold_change_reuses_cached_scores(tmp_path):
    from citebound.verifiers import verifier_hash
    assert verifier_hash({"name": "lexical", "threshold": 0.6}) == verifier_hash({"name": "lexical", "threshold": 0.9})
    cache = ScoreCache(tmp_path / "c.sqlite")
    v = CountingVerifier()
    v.threshold = 0.6
    a = score_pairs(v, ["cells make atp now"], ["cells make atp"], cache=cache, progress=False)
    v.threshold = 0.9
    b = score_pairs(v, ["cells make atp now"], ["cells make atp"], cache=cache, progress=False)
    assert v.seen == 1 and b.n_cached == 1  # scored once
    assert a.score[0] == b.score[0] == 0.75 and a.verdict[0] and not b.verdict[0]


def test_each_config_of_a_verifier_name_has_its_own_score_cache(tmp_path):
    from citebound.verifiers import cache_for, verifier_hash

    a = {"name": "lex", "kind": "lexical", "window_chars": 600, "stride": 300}
    b = dict(a, window_chars=400)  # the same name, another window: other scores
    paths = [cache_for(c, tmp_path).path for c in (a, b, dict(a))]
    assert paths[0] == tmp_path / "scores" / f"lex-{verifier_hash(a)}.sqlite"
    assert paths[1] != paths[0] and paths[2] == paths[0] and verifier_hash(a) != verifier_hash(b)


def test_a_locked_score_cache_retries_after_pauses_doubling_from_10_ms_to_half_a_second(tmp_path, monkeypatch):
    """A cache file whose switch to WAL answers "locked" eight times (another score job creating it): the cache
    waits 10, 20, 40, 80, 160, 320 ms, then 500 ms a try (the cap), and opens on the ninth try."""
    import sqlite3
    import time
    from types import SimpleNamespace

    import citebound.verifiers.base as base

    slept, real_connect = [], sqlite3.connect

    class LockedEightTimes:
        def __init__(self, *a, **kw):
            self.db, self.locks = real_connect(*a, **kw), 8

        def execute(self, sql, *args):
            if sql.startswith("PRAGMA journal_mode") and self.locks:
                self.locks -= 1
                raise sqlite3.OperationalError("database is locked")
            return self.db.execute(sql, *args)

        def commit(self):
            self.db.commit()

    # the module's own names only: sqlite3.connect and time.sleep patched for everyone would reach pytest's plugins
    # (coverage's data file is sqlite)
    monkeypatch.setattr(base, "sqlite3", SimpleNamespace(connect=LockedEightTimes, OperationalError=sqlite3.OperationalError))
    monkeypatch.setattr(base, "time", SimpleNamespace(monotonic=time.monotonic, sleep=slept.append))
    cache = ScoreCache(tmp_path / "c.sqlite")
    assert cache.db.locks == 0
    assert slept == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5])
