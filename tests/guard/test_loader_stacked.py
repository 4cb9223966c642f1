"""A stacked verifier's identity and its empty batch (citebound/scoring/loader.py): its hash covers its fitted model
(so another model's cached scores or calibration never pass for its own), and a batch of no pairs is no pairs."""
import json

import numpy as np
import pytest

from citebound import definitions
from citebound.scoring.loader import PairScorer, configured_hash
from citebound.verifiers import PairScores


def stacked(tmp_path, coef, name="fitted.json"):
    mp = tmp_path / name
    mp.write_text(json.dumps({"features": ["lexical", "embedding"], "coef": coef, "intercept": 0.5}))
    return PairScorer(definitions.load("verifier", "fitted"), {}, definitions.windowing(), model_path=mp), mp


def test_a_stacked_verifiers_hash_covers_its_fitted_model(tmp_path):
    a, pa = stacked(tmp_path, [2.0, -1.0], "a.json")
    b, pb = stacked(tmp_path, [2.0, -0.5], "b.json")
    same, _ = stacked(tmp_path, [2.0, -1.0], "c.json")  # the same model in another file: the same verifier
    assert a.hash != b.hash and a.hash == same.hash
    cfg = definitions.load("verifier", "fitted")
    assert (configured_hash(cfg, pa), configured_hash(cfg, pb)) == (a.hash, b.hash)  # what a calibration is checked by


def test_a_stacked_verifier_asked_about_no_pairs_answers_no_pairs(tmp_path):
    scorer, _ = stacked(tmp_path, [2.0, -1.0])
    empty = PairScores(np.zeros(0), np.zeros(0, bool), np.zeros(0, int), np.zeros(0, int), [])
    ps = scorer.combine([empty, empty])
    assert (ps.score.shape, ps.verdict.shape, ps.best_window.shape, ps.reason) == ((0,), (0,), (0,), [])


def test_a_stacked_verifier_scores_each_pair_with_its_bases_in_claim_passage_order(tmp_path):
    """One base, lexical (the share of the claim's content terms found in the passage): "Aspirin inhibits COX."
    against "Aspirin inhibits COX in platelets." finds all 3 (1.0; the other way round it would be 3 of 4);
    "Aspirin cures colds and flu." against "Aspirin inhibits COX." finds 1 of 4 (0.25; the other way, 1 of 3).
    With coef 2 and intercept 0.5: sigmoid(2.5) and sigmoid(1.0)."""
    import math

    mp = tmp_path / "fitted.json"
    mp.write_text(json.dumps({"features": ["lexical"], "coef": [2.0], "intercept": 0.5}))
    scorer = PairScorer(definitions.load("verifier", "fitted"), {"lexical": definitions.load("verifier", "lexical")},
                        definitions.windowing(), model_path=mp)
    ps = scorer.score(["Aspirin inhibits COX.", "Aspirin cures colds and flu."],
                      ["Aspirin inhibits COX in platelets.", "Aspirin inhibits COX."])
    assert ps.score.tolist() == pytest.approx([1 / (1 + math.exp(-2.5)), 1 / (1 + math.exp(-1.0))], rel=1e-12)

