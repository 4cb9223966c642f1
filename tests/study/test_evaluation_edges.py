"""The head's held-out evaluation at its edges, by hand: the in-distribution hold-out takes a fifth of each source
and at least one pair of a small one, the adoption rule reads the left-out sources of the chosen C only, and an
evaluation claim with no letters or digits matches no training claim."""
import numpy as np
import pandas as pd

from citebound.training.evaluation import choose_and_adopt, dedupe_against, holdout_mask


def test_the_hold_out_takes_a_fifth_of_each_source_and_at_least_one():
    source = pd.Series(["a"] * 3 + ["b"] * 10 + ["c"] * 4)
    test = holdout_mask(source, ["a", "b", "c", "absent"], np.random.default_rng(0))
    # a: max(1, 3 // 5) = 1; b: 10 // 5 = 2; c: max(1, 4 // 5) = 1; a source with no rows adds nothing
    assert [int(test[(source == s).to_numpy()].sum()) for s in "abc"] == [1, 2, 1] and test.sum() == 4


def _table(rows):
    cols = ["variant", "C", "evaluation", "n", "auc", "embedding_auc", "delta", "delta_ci_low", "delta_ci_high"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows], columns=cols)


def test_adoption_reads_the_left_out_sources_of_the_chosen_c_only():
    """C = 0.1 was chosen: its left-out sources are above embedding and the gold gain clears the margin with its CI
    above 0, so it is adopted, though C = 1.0's left-out source a is below embedding."""
    table = _table([
        ("all", 0.1, "loso:a", 10, 0.80, 0.70, 0.10, np.nan, np.nan),
        ("all", 0.1, "loso:b", 10, 0.75, 0.70, 0.05, np.nan, np.nan),
        ("all", 1.0, "loso:a", 10, 0.60, 0.70, -0.10, np.nan, np.nan),
        ("all", 1.0, "loso:b", 10, 0.72, 0.70, 0.02, np.nan, np.nan),
        ("all", 0.1, "gold", 40, 0.85, 0.75, 0.10, 0.02, 0.18),
    ])
    d = choose_and_adopt(table, {"all": {"C": 0.1}}, ["gold"], 0.05)
    assert d == {"variant": "all", "C": 0.1, "adopted": True, "reasons": []}
    d = choose_and_adopt(table, {"all": {"C": 1.0}}, ["gold"], 0.05)
    assert not d["adopted"] and d["reasons"] == ["loso:a: AUC 0.600 below embedding's 0.700"]


def test_an_evaluation_claim_without_letters_or_digits_matches_nothing():
    pairs = pd.DataFrame({"claim": ["???", "—", "Aspirin lowers fever.", "aspirin LOWERS fever!"],
                          "source": ["a", "a", "b", "b"], "label": [1, 0, 1, 0]})
    kept, removed = dedupe_against(pairs, {"gold": ["!!!", "Aspirin lowers fever"]})
    assert kept["claim"].tolist() == ["???", "—"]
    assert removed.to_dict("records") == [{"eval_set": "gold", "source": "a", "removed": 0},
                                          {"eval_set": "gold", "source": "b", "removed": 2}]
