"""#56 item 3: Learn-then-Test's procedures against independent definitions, outside the golden DAG.

- Holm's step-down is closed testing with Bonferroni local tests: a hypothesis is rejected iff every subset of
  hypotheses that contains it has a p-value <= delta / |subset|. Checked by enumerating every subset (m <= 8),
  with ties and p-values exactly at a boundary.
- The fixed sequence rejects in its order until the first p-value above delta.
- calibrate_two_sided deploys the smallest tau that the method certifies, where each tau's p-value is
  max(BinomCDF(misses; n_unsupported, alpha), BinomCDF(false flags; n_supported, beta)) from scipy, and the
  counts are made by a plain loop over the citations.
"""
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import binom

from citebound.calibration.ltt import calibrate_two_sided, certify


def holm_closed_testing(p, delta):
    m = len(p)
    out = []
    for i in range(m):
        others = [j for j in range(m) if j != i]
        ok = True
        for r in range(m):
            for rest in combinations(others, r):
                s = (i, *rest)
                if min(p[j] for j in s) > delta / len(s):
                    ok = False
                    break
            if not ok:
                break
        out.append(ok)
    return out


def fixed_sequence_by_hand(p, delta, order):
    out = [False] * len(p)
    for j in order:
        if p[j] > delta:
            break
        out[j] = True
    return out


@pytest.mark.parametrize("seed", range(40))
def test_holm_is_closed_testing_with_bonferroni(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 9))
    delta = 0.1
    # p-values on a coarse lattice, so ties and exact boundaries (delta / k) occur
    lattice = np.array([delta / k for k in range(1, 9)] + [0.0, 0.001, 0.2, 0.5, 1.0])
    p = rng.choice(lattice, size=m)
    assert certify(p, "holm", delta).tolist() == holm_closed_testing(p.tolist(), delta), p


def test_holm_by_hand():
    # m = 4, delta = 0.1: sorted 0.01 <= 0.1/4, 0.03 <= 0.1/3, 0.05 <= 0.1/2, then 0.2 > 0.1 stops
    p = np.array([0.05, 0.01, 0.2, 0.03])
    assert certify(p, "holm", 0.1).tolist() == [True, True, False, True]
    # the second step is 0.1 / 3 = 0.0333...: just under it all four pass, just over it only the first
    assert certify(np.array([0.05, 0.033, 0.001, 0.04]), "holm", 0.1).tolist() == [True, True, True, True]
    assert certify(np.array([0.05, 0.034, 0.001, 0.04]), "holm", 0.1).tolist() == [False, False, True, False]


def test_a_p_value_exactly_at_the_level_is_rejected():
    """p <= delta / m rejects: 0.1 / 4 is exactly 0.025 in binary (a division by a power of two)."""
    assert 0.1 / 4 == 0.025
    p = np.array([0.025, 0.025 + 1e-12, 0.0, 1.0])
    assert certify(p, "bonferroni", 0.1).tolist() == [True, False, True, False]
    assert certify(np.array([0.1, 0.1 + 1e-12]), "fixed_sequence", 0.1, np.array([0, 1])).tolist() == [True, False]


@pytest.mark.parametrize("seed", range(20))
def test_fixed_sequence_stops_at_the_first_failure(seed):
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(1, 12))
    p = rng.choice([0.0, 0.05, 0.1, 0.1000001, 0.3], size=m)
    order = rng.permutation(m)
    assert certify(p, "fixed_sequence", 0.1, order).tolist() == fixed_sequence_by_hand(p.tolist(), 0.1, order.tolist())


def _p_by_hand(scores, labels, tau, alpha, beta):
    missed = sum(1 for s, y in zip(scores, labels) if y == 0 and s > tau)
    n0 = sum(1 for y in labels if y == 0)
    flagged = sum(1 for s, y in zip(scores, labels) if y == 1 and s <= tau)
    n1 = sum(1 for y in labels if y == 1)
    p0 = binom.cdf(missed, n0, alpha) if n0 else 1.0
    p1 = binom.cdf(flagged, n1, beta) if n1 else 1.0
    return max(p0, p1)


@pytest.mark.parametrize("method", ["bonferroni", "holm"])
@pytest.mark.parametrize("seed", range(6))
def test_the_deployed_tau_is_the_smallest_certified_one(method, seed):
    rng = np.random.default_rng(seed)
    n0, n1 = int(rng.integers(150, 400)), int(rng.integers(150, 400))
    scores = np.round(np.concatenate([rng.beta(2, 5, n0), rng.beta(5, 2, n1)]), 2)  # rounded: ties at grid points
    labels = np.array([0] * n0 + [1] * n1)
    grid = np.round(np.arange(0, 101) / 100, 2)
    alpha, beta, delta = 0.15, 0.4, 0.1
    p = np.array([_p_by_hand(scores, labels, t, alpha, beta) for t in grid])
    if method == "bonferroni":
        passed = p <= delta / len(grid)
    else:
        passed = np.array(holm_closed_testing_fast(p, delta))
    out = calibrate_two_sided(scores, labels, alpha, beta, delta, grid=grid, method=method)
    assert out.certified == pytest.approx(grid[passed].tolist())
    assert out.tau == (pytest.approx(float(grid[passed].min())) if passed.any() else None)


def holm_closed_testing_fast(p, delta):
    """Holm by its step-down definition (the closed-testing enumeration above is too slow for 101 hypotheses;
    test_holm_is_closed_testing_with_bonferroni ties the two together on small families)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    out = [False] * m
    for rank, i in enumerate(order):
        if p[i] > delta / (m - rank):
            break
        out[i] = True
    return out


def test_holm_step_down_equals_closed_testing_on_small_families():
    rng = np.random.default_rng(7)
    for _ in range(200):
        m = int(rng.integers(1, 8))
        p = rng.choice([0.0, 0.01, 0.0125, 0.02, 0.025, 0.05, 0.1, 0.5], size=m).tolist()
        assert holm_closed_testing_fast(p, 0.1) == holm_closed_testing(p, 0.1), p


def split_fixed_sequence_by_hand(scores, labels, grid, alpha, beta, delta, seed=0):
    """The split fixed sequence from its definition: numpy's default_rng(seed) permutes class 0's indices, then
    class 1's; the first round(0.3 n_c) of each order the grid (by their union p-value, then the grid's order);
    only the rest test it, each tau at delta, until the first that fails."""
    rng = np.random.default_rng(seed)
    learn = set()
    for c in (0, 1):
        idx = [i for i in range(len(labels)) if labels[i] == c]
        learn |= {int(i) for i in rng.permutation(idx)[: int(round(0.3 * len(idx)))]}
    lo = [i for i in range(len(labels)) if i in learn]
    hi = [i for i in range(len(labels)) if i not in learn]
    p_learn = [_p_by_hand(scores[lo], labels[lo], t, alpha, beta) for t in grid]
    p_test = [_p_by_hand(scores[hi], labels[hi], t, alpha, beta) for t in grid]
    passed = []
    for j in sorted(range(len(grid)), key=lambda j: (p_learn[j], j)):
        if p_test[j] > delta:
            break
        passed.append(float(grid[j]))
    return sorted(passed)


@pytest.mark.parametrize("seed", range(4))
def test_the_split_fixed_sequence_orders_on_its_share_and_tests_on_the_rest(seed):
    """Class sizes whose 0.3 share is not whole (29 -> 8.7 -> 9, 19 -> 5.7 -> 6 on top of a random size) and
    scores rounded to the grid (ties): the certified set is the definition's, seed by seed."""
    rng = np.random.default_rng(100 + seed)
    n0, n1 = 29 + 10 * int(rng.integers(5, 15)), 19 + 10 * int(rng.integers(5, 15))
    scores = np.round(np.concatenate([rng.beta(2, 5, n0), rng.beta(5, 2, n1)]), 2)
    labels = np.array([0] * n0 + [1] * n1)
    perm = rng.permutation(n0 + n1)  # the classes interleaved: the split must find each class's indices
    scores, labels = scores[perm], labels[perm]
    grid = np.round(np.arange(0, 101) / 100, 2)
    alpha, beta, delta = 0.2, 0.45, 0.1
    want = split_fixed_sequence_by_hand(scores, labels, grid, alpha, beta, delta)
    out = calibrate_two_sided(scores, labels, alpha, beta, delta, grid=grid, method="fixed_sequence")
    assert want, "the case must certify something"
    assert out.certified == pytest.approx(want)
    assert out.tau == pytest.approx(min(want))


@pytest.mark.parametrize("method", ["bonferroni", "holm", "fixed_sequence"])
@pytest.mark.parametrize("missing", [0, 1])
def test_a_class_with_no_labels_certifies_no_threshold(method, missing):
    """No label of a class: its rate cannot be bounded (its p-value is 1 at every tau), so nothing is certified,
    however clean the other class looks."""
    scores = np.round(np.linspace(0.01, 0.99, 300), 2)
    labels = np.full(300, 1 - missing)
    out = calibrate_two_sided(scores, labels, 0.1, 0.1, 0.1, method=method, best_bounds=False)
    assert (out.certified, out.tau) == ([], None)
