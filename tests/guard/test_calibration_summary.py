"""``calibration_summary`` worked out by hand on a small set with ties at tau: the threshold, the PAC threshold,
both flag rates (a score equal to tau is flagged, as the guard flags it), the monitors' references by class,
and the group name's length limit at its boundary."""
import math

import pytest
from scipy.stats import binom

from citebound.calibration.files import calibration_summary
from citebound.calibration.groups import check_group_name

NEG = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
POS = [0.8, 0.85, 0.95, 0.5]


def test_the_summary_by_hand_with_supported_scores_at_tau():
    cal = calibration_summary(NEG + POS, [0] * 9 + [1] * 4, alpha=0.2, delta=0.1, verifier="v", verifier_hash="h")
    # 9 unsupported, alpha 0.2: rank ceil((9 + 1) * 0.8) = 8 -> tau = 0.8
    assert (cal["k"], cal["tau"], cal["n_unsupported"], cal["n_supported"]) == (8, 0.8, 9, 4)
    # flagged: score <= 0.8; supported 0.8 (at tau) and 0.5 -> 2 of 4
    assert cal["flag_rate_supported"] == 0.5
    # all 13: 8 unsupported (0.1 .. 0.8) and the same 2 supported
    assert cal["expected_flag_rate"]["estimate"] == pytest.approx(10 / 13)
    assert cal["monitor_scores_unsupported"] == NEG
    assert cal["monitor_scores_supported"] == [0.5, 0.8, 0.85, 0.95]
    assert cal["monitor_scores"] == sorted(NEG + POS)
    # PAC: the smallest k with P(Binomial(9, 0.8) <= k - 1) >= 0.9, from scipy
    k = next(k for k in range(1, 10) if binom.cdf(k - 1, 9, 0.8) >= 0.9) if binom.cdf(8, 9, 0.8) >= 0.9 else 10
    assert cal["pac"]["k"] == k and (cal["pac"]["tau"] is None) == (k > 9)


def test_the_pac_tau_is_the_score_at_the_pac_rank():
    neg = [i / 100 for i in range(1, 101)]  # 100 unsupported scores 0.01 .. 1.00
    cal = calibration_summary(neg, [0] * 100, alpha=0.1, delta=0.1, verifier="v", verifier_hash="h")
    k = next(k for k in range(1, 101) if binom.cdf(k - 1, 100, 0.9) >= 0.9)
    assert cal["pac"]["k"] == k and cal["pac"]["tau"] == pytest.approx(neg[k - 1])
    assert cal["k"] == math.ceil(101 * 0.9) and cal["tau"] == pytest.approx(neg[cal["k"] - 1])
    # no supported citation among the labels: no rate on them (None, not the NaN of an empty mean)
    assert cal["flag_rate_supported"] is None and cal["n_supported"] == 0


def test_a_group_name_of_200_characters_is_the_longest():
    assert check_group_name("g" * 200, "line 1") == "g" * 200
    assert check_group_name(None, "line 1") is None
    for bad in ("g" * 201, "", "  ", 7):
        with pytest.raises(ValueError, match="line 1: 'group' must be a non-empty string of at most 200"):
            check_group_name(bad, "line 1")
