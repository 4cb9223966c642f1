"""Learn-then-Test's outcome names its data right: 7 unsupported (label 0) and 3 supported (label 1) citations are
counted as such, in the outcome, its dict and the advice it gives when nothing is certified (10 labels certify
nothing at delta 0.1: the smallest p-value of a risk, 0.9 ** 7 = 0.48 for the misses, is far above 0.1 / 201)."""
from citebound.calibration.ltt import calibrate_two_sided


def test_the_outcome_counts_unsupported_and_supported_labels_by_their_class():
    scores = [0.1, 0.2, 0.15, 0.3, 0.05, 0.25, 0.12, 0.9, 0.8, 0.95]
    labels = [0, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    out = calibrate_two_sided(scores, labels, alpha=0.1, beta=0.1, delta=0.1)
    assert (out.n_unsupported, out.n_supported) == (7, 3)
    d = out.to_dict()
    assert (d["n_unsupported"], d["n_supported"], d["n_certified"], d["tau"]) == (7, 3, 0, None)
    assert out.best_beta_at_alpha is None
    assert "with 7 unsupported labels" in out.rule
