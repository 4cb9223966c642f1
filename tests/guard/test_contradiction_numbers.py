"""The contradiction check's numbers worked out here: the AUC by counting pairs, the paired bootstrap of its gain
drawn again by hand, a pair whose every window is vetoed, the direction cue's claim side, and the verdict at
exactly the threshold on the shipped graph."""
import numpy as np
import pytest

from citebound.training import contradiction as K

pytest.importorskip("onnxruntime")


def counted_auc(pos, neg):
    """P(a positive outscores a negative), ties half, by counting every (positive, negative) pair."""
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_the_auc_counts_every_pair_ties_half():
    # 3 positives, 4 negatives: of 12 pairs, 0.9 beats all 4, 0.5 beats 0.1 and 0.3 and ties 0.5 twice (3),
    # 0.2 beats 0.1 (1): 8 / 12
    pos, neg = np.array([0.9, 0.5, 0.2]), np.array([0.5, 0.1, 0.3, 0.5])
    assert K.auc(pos, neg) == pytest.approx(8 / 12) == pytest.approx(counted_auc(pos, neg))
    assert K.auc(neg, pos) == pytest.approx(4 / 12)
    assert np.isnan(K.auc(pos, np.array([])))


def test_the_auc_of_one_empty_side_is_nan_without_asking_scipy():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy (and a 0 denominator) would warn: neither may be reached
        assert np.isnan(K.auc(np.array([]), np.array([0.1, 0.2]))) and np.isnan(K.auc(np.array([0.3]), np.array([])))


def test_the_gain_and_its_paired_bootstrap_drawn_again_here():
    """Each resample draws as many positives as there are (here 3) and as many negatives (here 5), with
    replacement, positives first; the interval is the 2.5th and 97.5th percentiles of the resampled gains."""
    y = np.array([1, 0, 1, 0, 0, 1, 0, 0])
    s_old = np.array([0.6, 0.5, 0.4, 0.7, 0.2, 0.3, 0.6, 0.1])
    s_new = np.array([0.9, 0.5, 0.4, 0.3, 0.2, 0.8, 0.6, 0.4])
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    a_old, a_new, gain, lo, hi = K.auc_gain(s_new, s_old, y, 200, np.random.default_rng(7))
    assert a_old == pytest.approx(counted_auc(s_old[pos], s_old[neg]))
    assert a_new == pytest.approx(counted_auc(s_new[pos], s_new[neg]))
    assert gain == pytest.approx(a_new - a_old)
    rng, gains = np.random.default_rng(7), []
    for _ in range(200):
        bp, bn = rng.choice(pos, 3), rng.choice(neg, 5)
        gains.append(counted_auc(s_new[bp], s_new[bn]) - counted_auc(s_old[bp], s_old[bn]))
    gains.sort()
    # numpy's default percentile interpolates linearly between order statistics: rank 0.025 * 199 = 4.975
    assert lo == pytest.approx(gains[4] + 0.975 * (gains[5] - gains[4]))
    assert hi == pytest.approx(gains[194] + 0.025 * (gains[195] - gains[194]))


def test_a_pair_whose_every_window_is_vetoed_keeps_its_best_negative_score():
    # pair 0: windows 0.8 and 0.6 both vetoed (-0.2, -0.4); pair 1: one window kept at 0.3; pair 2: no window
    got = K.pair_max(np.array([-0.2, 0.3, -0.4]), np.array([0, 1, 0]), 3)
    assert got[:2].tolist() == pytest.approx([-0.2, 0.3]) and got[2] == -np.inf


@pytest.mark.parametrize("claim,window,want", [
    # the claim denies the change itself: a window saying there was none agrees with it
    ("Aspirin did not increase bleeding.", "No significant difference in bleeding was found.", 0.0),
    ("Aspirin increased bleeding.", "No significant difference in bleeding was found.", 1.0),
])
def test_a_claim_of_no_change_is_not_contradicted_by_no_change(claim, window, want):
    assert K.direction_mismatch(claim, window) == want


@pytest.fixture(scope="module")
def verifier():
    from citebound.verifiers.contradiction import ContradictionVerifier

    return ContradictionVerifier({"name": "embedding+contradiction"}, None)


def test_the_direction_feature_reads_the_claim_as_the_claim(verifier):
    """The cue is one-sided: a claim of a change against a window of none is a mismatch, the reverse is not."""
    from citebound.verifiers.contradiction import FEATURES, unit_features

    claims = ["Aspirin increases bleeding.", "Aspirin did not significantly change bleeding.", "Statins lower LDL."]
    windows = ["Aspirin did not significantly change bleeding.", "Aspirin increases bleeding.", "Statins raise LDL."]
    x = unit_features(verifier.encoder, claims, windows)
    assert x.shape == (3, len(FEATURES)) and x[:, FEATURES.index("direction")].tolist() == [1.0, 0.0, 1.0]


def test_a_score_at_exactly_the_threshold_is_supported(verifier):
    from citebound.verifiers.contradiction import ContradictionVerifier

    claims = ["Statins lower LDL cholesterol.", "Mitochondria produce ATP."]
    windows = ["Statins lower LDL cholesterol in adults.", "Mitochondria produce ATP in cells."]
    s, _ = verifier.judge(claims, windows)
    at = ContradictionVerifier({"name": "embedding+contradiction", "threshold": float(s[1])}, None)
    s2, ok = at.judge(claims, windows)
    assert s2.tolist() == s.tolist()
    assert ok.tolist() == [bool(s[0] >= s[1]), True]
