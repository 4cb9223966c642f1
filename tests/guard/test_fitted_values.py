"""The stacked verifier (verifiers/fitted.py) by its definition: a class-balanced logistic regression on
the labelled pairs, P(support) = sigmoid(coef . x + intercept), supported at or above the threshold.
Expected values by hand, or from scikit-learn fitted here with the balanced weights written out."""
import math

import numpy as np
import pytest

from citebound.verifiers.fitted import apply_stacked, fit_stacked, stacked_verdicts


def _data():
    # 12 supported, 4 unsupported (unequal classes: balancing matters), two features that overlap
    rng = np.random.default_rng(4)
    y = np.array([1] * 12 + [0] * 4, float)
    x = np.column_stack([y * 0.6 + rng.normal(0, 0.4, 16), rng.normal(0, 1, 16)])
    return x, y


def test_fit_is_the_class_balanced_logistic_regression_on_the_labelled_pairs():
    from sklearn.linear_model import LogisticRegression

    x, y = _data()
    # one pair without a label and one with a NaN feature: neither is fitted
    xs = np.vstack([x, [[0.3, 0.1]], [[np.nan, 0.2]]])
    ys = np.concatenate([y, [np.nan, 1.0]])
    m = fit_stacked(xs, ys, ["a", "b"], C=0.7)
    assert (m["n_train"], m["n_train_supported"], m["features"]) == (16, 12, ["a", "b"])
    # balanced: each class weighs n / (2 n_class): supported 16 / 24, unsupported 16 / 8
    w = np.where(y == 1, 16 / 24, 16 / 8)
    ref = LogisticRegression(C=0.7, max_iter=1000).fit(x, y.astype(int), sample_weight=w)
    assert m["coef"] == pytest.approx(ref.coef_[0].tolist(), abs=1e-4)
    assert m["intercept"] == pytest.approx(float(ref.intercept_[0]), abs=1e-4)
    plain = LogisticRegression(C=0.7, max_iter=1000).fit(x, y.astype(int))
    assert abs(m["intercept"] - float(plain.intercept_[0])) > 0.1  # the unbalanced fit is another model


def test_ten_labelled_pairs_are_enough_nine_are_not():
    x, y = _data()
    keep = [0, 1, 2, 3, 4, 5, 12, 13, 14, 15]  # 6 supported, 4 unsupported
    m = fit_stacked(x[keep], y[keep], ["a", "b"])
    assert (m["n_train"], m["n_train_supported"]) == (10, 6)
    with pytest.raises(ValueError, match="got 9"):
        fit_stacked(x[keep[1:]], y[keep[1:]], ["a", "b"])
    with pytest.raises(ValueError, match="both classes"):
        fit_stacked(x[:12], y[:12], ["a", "b"])  # twelve pairs, one class


def test_apply_is_p_support_and_a_score_at_the_threshold_is_supported():
    model = {"coef": [2.0, -1.0], "intercept": 0.5}
    feats = np.array([[1.0, 1.0], [0.0, 0.5], [np.nan, 0.0]])
    # z = 1.5 and 0.0: P = 1 / (1 + e^-1.5) = 0.8175744761936437 and exactly 0.5
    s = apply_stacked(model, feats)
    assert s[0] == pytest.approx(0.8175744761936437, rel=1e-12) and s[1] == 0.5 and math.isnan(s[2])
    score, verdict = stacked_verdicts(model, feats[:2], {"threshold": 0.5})
    assert verdict.tolist() == [True, True]  # 0.5 at a threshold of 0.5: supported
    assert stacked_verdicts(model, feats[:2], {"threshold": 0.9})[1].tolist() == [False, False]
