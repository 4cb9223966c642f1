"""The head's held-out evaluation keeps its held-out pairs out of the fit (#56, round 91), and claim folds follow
their seed. The in-distribution case is built so that the answer is 0 or 1: on the training pairs a feature leans
slightly the wrong way; on the held-out pairs (the seeded fifth that ``holdout_mask`` draws) it is large and points
the right way. A head fitted without them ranks the held-out pairs exactly backwards (AUC 0); one fitted with them
too would learn the large points and rank them right (AUC 1)."""
import numpy as np
import pandas as pd
import pytest

from citebound.training.evaluation import claim_folds, evaluate, holdout_mask
from citebound.training.head import FEATURES


def test_the_in_distribution_head_never_sees_its_hold_out():
    n, seed, col = 40, 3, FEATURES.index("term_recall")
    train = pd.DataFrame({"source": ["a"] * n, "label": [1, 0] * (n // 2)})
    test = holdout_mask(train["source"], ["a"], np.random.default_rng(seed))
    y = train["label"].to_numpy()
    assert test.sum() == 8 and 0 < y[test].sum() < 8  # held-out pairs of both labels
    x = np.zeros((n, len(FEATURES)))
    x[:, col] = np.where(test, np.where(y == 1, 10.0, -10.0), np.where(y == 1, -0.1, 0.1))
    x[:, FEATURES.index("cos_l6")] = np.linspace(0, 1, n)  # the baseline: any ranking
    gold = pd.DataFrame({"label": y, "cluster": [str(i) for i in range(n)]})
    units = (x, np.arange(n))
    table, _ = evaluate(train, units, {"gold": (gold, units)}, {"all": ["a"]}, [1.0], n_boot=5, seed=seed)
    row = table[table["evaluation"] == "in_distribution"].iloc[0]
    assert row["n"] == 8 and row["auc"] == 0.0


def test_claim_folds_follow_their_seed_and_keep_a_claims_copies_together():
    claims = [f"Claim number {i}." for i in range(30)] + ["claim NUMBER 0"]  # the last is a copy of the first
    a, b = claim_folds(claims, 5, seed=0), claim_folds(claims, 5, seed=1)
    assert a[-1] == a[0] and b[-1] == b[0]
    assert sorted(pd.Series(a[:30]).value_counts().tolist()) == [6] * 5  # 30 distinct claims, 6 a fold
    assert a != b  # another seed deals the claims to other folds
    first_seen = [f"fold{i % 5 + 1}" for i in range(30)]
    assert a[:30] != first_seen and b[:30] != first_seen  # a seeded order, not the order the claims came in


def test_every_held_out_row_reports_its_pairs_embedding_auc_and_the_difference():
    """Two sources of 20 pairs, labels alternating, a noisy feature for the head and a noisy baseline column. For
    each left-out source and the in-distribution hold-out (the seeded draw ``holdout_mask`` makes, with both
    labels): ``n`` is the row's pairs, ``embedding_auc`` scikit-learn's AUC of the baseline column on them, and
    ``delta`` the head's AUC minus it."""
    from sklearn.metrics import roc_auc_score

    n, seed = 40, 2
    rng = np.random.default_rng(11)
    train = pd.DataFrame({"source": ["a"] * 20 + ["b"] * 20, "label": [1, 0] * 20})
    y = train["label"].to_numpy()
    x = np.zeros((n, len(FEATURES)))
    x[:, FEATURES.index("term_recall")] = y + rng.normal(0, 1.0, n)
    base = rng.uniform(0, 1, n)
    x[:, FEATURES.index("cos_l6")] = base
    gold = pd.DataFrame({"label": y, "cluster": [str(i) for i in range(n)]})
    units = (x, np.arange(n))
    table, _ = evaluate(train, units, {"gold": (gold, units)}, {"all": ["a", "b"]}, [1.0], n_boot=5, seed=seed)
    held = holdout_mask(train["source"], ["a", "b"], np.random.default_rng(seed))
    masks = {"loso:a": np.arange(n) < 20, "loso:b": np.arange(n) >= 20, "in_distribution": held}
    assert 0 < y[held].sum() < held.sum()
    for name, mask in masks.items():
        (row,) = table[table["evaluation"] == name].to_dict("records")
        emb = roc_auc_score(y[mask], base[mask])
        assert row["n"] == mask.sum() and abs(row["embedding_auc"] - emb) < 1e-12, name
        assert emb > 0.05 and abs(row["delta"] - (row["auc"] - emb)) < 1e-12, name


def test_an_auc_needs_both_labels_and_the_bootstrap_skips_resamples_of_one():
    """AUC of one label only is nan (all 0s, all 1s), of both labels scikit-learn's. Two clusters, one of each
    label: about half the cluster resamples hold one label only; they are skipped, so the interval is of the
    resamples holding both (each the full data's difference) and finite."""
    from sklearn.metrics import roc_auc_score

    from citebound.training.evaluation import auc, paired_auc_difference

    assert np.isnan(auc([0, 0, 0], [0.1, 0.5, 0.9])) and np.isnan(auc([1, 1], [0.2, 0.4]))
    assert auc([0, 1, 1], [0.3, 0.2, 0.9]) == roc_auc_score([0, 1, 1], [0.3, 0.2, 0.9])
    y, new, base = np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.8, 0.9]), np.array([0.5, 0.1, 0.2, 0.9])
    d, lo, hi = paired_auc_difference(y, new, base, np.array(["a", "a", "b", "b"]), n_boot=40, seed=0)
    full = roc_auc_score(y, new) - roc_auc_score(y, base)
    assert d == pytest.approx(full) and lo == pytest.approx(full) and hi == pytest.approx(full)
