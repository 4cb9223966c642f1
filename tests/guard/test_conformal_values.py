"""Split conformal, the groups' fallback and the re-attributor's proposals at their boundaries (#56 round 67),
each expected value worked out by hand in the comments: the rank counts unsupported labels only, a PAC rank
equal to the calibration size is a real threshold, the supported flag rate is measured at the conformal tau, a
group's tau leaves out its non-finite scores, alpha = 0 and a split with nothing left to test are refused, a tau
of exactly 0 stands, citations with no group form no group, ties are proposed lowest index first."""
from __future__ import annotations

import math

import numpy as np
import pytest

from citebound.calibration.conformal import ConformalGuard, conformal_rank, split_coverage
from citebound.calibration.groups import check_group_name, group_calibrations
from citebound.guarding.reattributors import Reattributor


def test_the_rank_counts_the_unsupported_labels_only():
    # 3 unsupported of 7 labels; alpha 0.5: k = ceil(4 * 0.5) = 2 (with all 7: ceil(8 * 0.5) = 4)
    g = ConformalGuard(alpha=0.5).calibrate([0.3, 0.9, 0.1, 0.8, 0.2, 0.7, 0.95], [0, 1, 0, 1, 0, 1, 1])
    assert (g.n_unsupported, g.k, g.tau) == (3, 2, 0.2)


def test_a_groups_tau_leaves_out_its_non_finite_unsupported_scores():
    # group a: unsupported 0.2, 0.5 and NaN; alpha 0.4 over the 2 finite ones: k = ceil(3 * 0.6) = 2 -> 0.5
    # (counting the NaN: n = 3, k = ceil(4 * 0.6) = 3 -> the NaN); group b: 0.1, 0.3, 0.6 -> k = ceil(2.4) = 3 -> 0.6
    s = [0.2, 0.5, math.nan, 0.9, 0.1, 0.3, 0.6]
    y = [0, 0, 0, 1, 0, 0, 0]
    g = ConformalGuard(alpha=0.4).calibrate(s, y, groups=["a", "a", "a", "a", "b", "b", "b"])
    assert g.group_tau == {"a": 0.5, "b": 0.6}
    assert g.predict([0.5, 0.51, 0.6, 0.61], groups=["a", "a", "b", "b"]).tolist() == [True, False, True, False]


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1])
def test_alpha_outside_the_open_interval_is_refused(alpha):
    with pytest.raises(ValueError, match="alpha must be in"):
        ConformalGuard(alpha=alpha)
    with pytest.raises(ValueError, match="alpha must be in"):
        conformal_rank(10, alpha)


@pytest.mark.parametrize("n_cal,ok", [(0, False), (1, True), (19, True), (20, False)])
def test_a_split_leaves_something_to_calibrate_and_something_to_test(n_cal, ok):
    neg, pos = np.arange(20, dtype=float), np.array([0.5])
    if ok:
        out = split_coverage(neg, pos, n_cal, [0.5], 3, np.random.default_rng(0))
        assert out["conformal"].shape == (1, 3)
    else:
        with pytest.raises(ValueError, match="n_cal"):
            split_coverage(neg, pos, n_cal, [0.5], 3, np.random.default_rng(0))


def test_a_pac_rank_equal_to_the_calibration_size_is_a_threshold_and_flags_are_counted_at_the_conformal_tau():
    # n_cal 10, alpha 0.1, delta 0.5: P(Binom(10, 0.9) <= 8) = 0.264 < 0.5 <= P(<= 9) = 0.651, so the PAC rank is
    # 10 = n_cal: tau is the largest calibration score, as the conformal rank ceil(11 * 0.9) = 10 gives; the naive
    # rank ceil(10 * 0.9) = 9 is the second largest. Scores 0..19, distinct: the 10 left out are the test.
    neg = np.arange(20, dtype=float)
    pos = np.arange(20, dtype=float) + 0.5  # between the negatives: every rank flags a different share
    out = split_coverage(neg, pos, 10, [0.1], 40, np.random.default_rng(3), delta=0.5)
    tau = out["tau"][0]
    test_share = [(np.sum(neg <= t) - 10) / 10 for t in tau]  # the 10 calibration scores are all <= their maximum
    assert out["conformal"][0].tolist() == pytest.approx(test_share)
    assert out["pac"][0].tolist() == pytest.approx(test_share)
    assert min(test_share) < 1.0  # some split's maximum is not 19: an infinite PAC tau would read 1.0 there
    assert out["flag_supported"][0].tolist() == pytest.approx([np.mean(pos <= t) for t in tau])
    # the naive tau is one calibration score lower: it catches fewer held-out negatives in some split
    assert np.any(out["naive"][0] < out["conformal"][0])


def entry(tau, pac_tau):
    return {"tau": tau, "alpha": 0.1, "n_unsupported": 5, "pac": {"tau": pac_tau, "delta": 0.1, "k": 5}}


def test_a_group_whose_tau_is_exactly_zero_keeps_its_own_calibration():
    out = group_calibrations([0.0, 0.1, 0.2], [0, 0, 1], ["g", "g", "g"], lambda s, y: entry(0.0, 0.0))
    assert out == {"g": {**entry(0.0, 0.0), "group": "g"}}
    out = group_calibrations([0.0, 0.1, 0.2], [0, 0, 1], ["g", "g", "g"], lambda s, y: entry(0.0, None))
    assert out["g"]["fallback"] == "pooled" and out["g"]["n_unsupported"] == 2 and out["g"]["n_supported"] == 1


def test_citations_with_no_group_form_no_group():
    seen = []

    def calibrate(s, y):
        seen.append(sorted(s.tolist()))
        return entry(0.3, 0.2)

    out = group_calibrations([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], [None, "a", None, "a"], calibrate)
    assert list(out) == ["a"] and seen == [[0.2, 0.4]]


@pytest.mark.parametrize("name,ok", [("a", True), ("x" * 200, True), ("x" * 201, False), ("   ", False), ("", False),
                                     (3, False), (None, True)])
def test_a_group_name_is_a_non_empty_string_of_at_most_200_characters(name, ok):
    if ok:
        assert check_group_name(name, "f:1") == name
    else:
        with pytest.raises(ValueError, match="f:1"):
            check_group_name(name, "f:1")


def test_passages_tied_on_bm25_are_proposed_lowest_index_first():
    # passages 0 and 2 are the same text (tied, best: each term is in 2 of 5 passages, idf log(3.5 / 2.5) > 0;
    # in 2 of 4 rank-bm25's idf would be log(1) = 0 and every score 0); 1, 3, 4 share nothing with the claim
    passages = ["alpha beta", "gamma delta", "alpha beta", "epsilon zeta", "eta theta"]
    r = Reattributor("bm25", "bm25", proposals=3)
    assert r.propose("alpha beta", passages, set()) == [0, 2, 1]
    assert r.propose("alpha beta", passages, {0}) == [2, 1, 3]
    assert Reattributor("v", "verifier").propose("alpha", passages, {1}) == [0, 2, 3, 4]


def test_proposals_below_one_are_refused_and_passages_with_no_content_terms_are_still_indexed():
    with pytest.raises(ValueError, match="proposals must be >= 1"):
        Reattributor("bm25", "bm25", proposals=0)
    assert Reattributor("bm25", "bm25", proposals=1).proposals == 1
    # no passage has a content term (a stop word, punctuation): every score is 0, proposed in index order
    assert Reattributor("bm25", "bm25", proposals=3).propose("alpha beta", ["the of", "!!!", ""], {1}) == [0, 2]
