"""The calibration code's edges no earlier test chose (#56): the mixture martingale's state through a store (its
log parts, not just its value, carried: the next update shows it), a fresh state from nothing, and every refusal
of a parameter at its boundary (0 and 1 refused, the values beside them accepted). Expected values are worked out
here from the definitions in the modules' docstrings."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from citebound.calibration.eprocess import MissRateTest, ShiftRobustAlarm
from citebound.calibration.ltt import binomial_p, calibrate_two_sided, certify
from citebound.calibration.monitor import EPS_GRID, DriftMonitor

CAL = [0.1, 0.2, 0.3, 0.4]


def mixture_after(ps: list[float]) -> tuple[np.ndarray, float]:
    """The log of each power martingale prod eps * p ** (eps - 1), and their mean (the mixture), by definition."""
    parts = np.zeros(len(EPS_GRID))
    for p in ps:
        parts += np.log(EPS_GRID) + (EPS_GRID - 1) * math.log(p)
    return parts, float(np.mean(np.exp(parts)))


def test_the_mixture_martingale_goes_through_a_store_with_its_log_parts():
    """Three scores each above all seen: p = 0.5/5, 0.5/6, 0.5/7 (theta 0.5). Dumped as JSON and loaded into a
    fresh monitor, the value is the same; the next score (0.9, above the 4 calibration scores the new process
    knows: its deployed scores stayed in the old one) has p = 0.5/5, and the mixture moves from the loaded log
    parts, which a restored value alone could not give."""
    a = DriftMonitor(CAL, delta=0.1)
    a.update([0.5, 0.6, 0.7], thetas=[0.5] * 3)
    _, want = mixture_after([0.1, 0.5 / 6, 0.5 / 7])
    assert a.value == pytest.approx(want, rel=1e-9)
    st = json.loads(json.dumps(a.dump()))
    assert "mixture" in st and "robust" not in st and st["n_seen"] == 3
    b = DriftMonitor(CAL, delta=0.1).load(st)
    assert b.value == pytest.approx(a.value, rel=1e-9) and b.n_seen == 3 and b.state == "ok"
    b.update([0.9], thetas=[0.5])
    _, want = mixture_after([0.1, 0.5 / 6, 0.5 / 7, 0.1])
    assert b.value == pytest.approx(want, rel=1e-9) and b.n_seen == 4


def test_loading_nothing_is_a_fresh_monitor():
    m = DriftMonitor(CAL, delta=0.1)
    m.update([0.5, 0.6], thetas=[0.5, 0.5])
    m.labels(1, 3)
    m.load(None)
    assert (m.value, m.n_seen, m.state, m.alarm_at, m.labels_seen, m.label_p) == (1.0, 0, "ok", None, (0, 0), None)


@pytest.mark.parametrize("delta,ok", [(0.0, False), (1e-9, True), (0.999, True), (1.0, False), (-0.1, False)])
def test_a_monitor_needs_delta_strictly_between_0_and_1(delta, ok):
    for make in (lambda: DriftMonitor(CAL, delta=delta), lambda: ShiftRobustAlarm([0.1], [0.9], delta=delta),
                 lambda: MissRateTest(0.1, delta), lambda: MissRateTest(delta, 0.1)):
        if ok:
            make()
        else:
            with pytest.raises(ValueError, match=r"must be in \(0, 1\)"):
                make()


@pytest.mark.parametrize("unsupported,supported", [([], [0.9]), ([0.1], []), ([float("nan")], [0.9]),
                                                   ([0.1], [None, float("inf")])])
def test_the_robust_alarm_needs_finite_scores_of_both_classes(unsupported, supported):
    with pytest.raises(ValueError, match="needs the calibration's scores of both classes"):
        ShiftRobustAlarm(unsupported, supported)


@pytest.mark.parametrize("missed,n,why", [
    (-1, 3, "missed must be a non-negative integer, got -1"), (0, -1, "unsupported must be a non-negative integer"),
    (True, 3, "missed must be a non-negative integer, got True"), (1.0, 3, "missed must be a non-negative integer"),
    (4, 3, "missed (4) must be between 0 and unsupported (3)"),
    (0, 1_000_001, "1000001 labels in one post; the limit is 1000000"),
])
def test_a_label_post_the_test_cannot_take_changes_nothing(missed, n, why):
    t = MissRateTest(0.1, 0.1)
    t.add(1, 5)
    with pytest.raises(ValueError) as e:
        t.add(missed, n)
    assert why in str(e.value) and (t.missed, t.n) == (1, 5)


@pytest.mark.parametrize("missed,n", [(0, 0), (3, 3), (0, 1_000_000), (np.int64(2), np.int64(4))])
def test_the_posts_beside_each_refusal_are_taken(missed, n):
    t = MissRateTest(0.1, 0.1)
    t.add(missed, n)
    assert (t.missed, t.n) == (int(missed), int(n))


@pytest.mark.parametrize("kw,why", [
    ({"alpha": 0.0}, "alpha must be in (0, 1), got 0.0"), ({"beta": 1.0}, "beta must be in (0, 1), got 1.0"),
    ({"delta": 1.0}, "delta must be in (0, 1), got 1.0"), ({"method": "hochberg"}, "method must be one of"),
    ({"scores": [0.1, float("nan"), 0.9, 0.5]}, "every score must be finite"),
])
def test_learn_then_test_refuses_what_it_cannot_certify_with(kw, why):
    args = {"scores": [0.1, 0.2, 0.9, 0.8], "labels": [0, 0, 1, 1], "alpha": 0.2, "beta": 0.2, "delta": 0.1} | kw
    with pytest.raises(ValueError) as e:
        calibrate_two_sided(**args)
    assert why in str(e.value)


@pytest.mark.parametrize("alpha,delta,why", [
    (0.0, 0.1, "alpha must be in (0, 1), got 0.0"), (1.0, 0.1, "alpha must be in (0, 1), got 1.0"),
    (0.1, 0.0, "delta must be in (0, 1), got 0.0"), (0.1, 1.0, "delta must be in (0, 1), got 1.0"),
])
def test_a_calibration_summary_refuses_alpha_or_delta_at_either_end(alpha, delta, why):
    """The library's own check (the CLI refuses these before it): at 0 or 1 nothing is promised."""
    from citebound.calibration.files import CalibrationError, calibration_summary

    with pytest.raises(CalibrationError) as e:
        calibration_summary([0.1, 0.2, 0.9], [0, 0, 1], alpha, delta, "lexical", "h")
    assert str(e.value) == why


def test_certify_needs_a_known_method_and_an_order_for_the_fixed_sequence():
    p = np.array([0.01, 0.5])
    with pytest.raises(ValueError, match="fixed_sequence needs its order"):
        certify(p, "fixed_sequence", 0.1)
    with pytest.raises(ValueError, match="method must be one of"):
        certify(p, "sidak", 0.1)
    # the order decides: the second first (0.5 > 0.1) stops at once; the first first certifies it alone
    assert certify(p, "fixed_sequence", 0.1, np.array([1, 0])).tolist() == [False, False]
    assert certify(p, "fixed_sequence", 0.1, np.array([0, 1])).tolist() == [True, False]


@pytest.mark.parametrize("k,n,rate,want", [(0, 0, 0.3, 1.0), (0, 1, 0.3, 0.7), (1, 1, 0.3, 1.0), (0, 2, 0.5, 0.25)])
def test_binomial_p_from_its_definition(k, n, rate, want):
    assert binomial_p(k, n, rate) == pytest.approx(want, rel=1e-12)


GOOD = {"format": "citebound-calibration/1", "alpha": 0.1, "tau": 0.5, "verifier": "lexical", "verifier_hash": "h"}


@pytest.mark.parametrize("change,why", [
    ({"alpha": 0}, "'alpha' must be a number in (0, 1), got 0"),
    ({"alpha": 1.0}, "'alpha' must be a number in (0, 1), got 1.0"),
    ({"alpha": "0.1"}, "'alpha' must be a number in (0, 1), got '0.1'"),
    ({"format": None}, "made before citebound 0.2 (no 'format'"),
    ({"tau": None, "no_tau_reason": "too few"}, "has no threshold (too few)"),
    ({"tau": True}, "'tau' is not a number (True)"),
    ({"tau": float("inf")}, "'tau' is inf, not a finite number"),
    ({"verifier_hash": None}, None),  # present (null): the key is there; its check is check_verifier's
])
def test_a_calibration_file_the_guard_cannot_use_is_refused_by_what_is_wrong(change, why):
    from citebound.calibration.files import CalibrationError, read_calibration

    cal = {k: v for k, v in (GOOD | change).items() if v is not None or k in ("tau", "verifier_hash")}
    if why is None:
        assert read_calibration(cal)["tau"] == 0.5
        return
    with pytest.raises(CalibrationError) as e:
        read_calibration(cal)
    assert why in str(e.value)


@pytest.mark.parametrize("alpha", [1e-9, 0.5, 0.999])
def test_alpha_beside_its_bounds_is_taken(alpha):
    from citebound.calibration.files import read_calibration

    assert read_calibration(GOOD | {"alpha": alpha})["alpha"] == alpha


@pytest.mark.parametrize("text,why", [("[1, 2]", "not a citebound calibration (expected a JSON object)"),
                                      ('{"alpha": 0.1,\n  "tau": }', ":2: not valid JSON"),
                                      ('{"alpha": 0.1}', "not a citebound calibration (missing 'tau')")])
def test_a_calibration_file_that_is_not_one_names_the_file(tmp_path, text, why):
    from citebound.calibration.files import CalibrationError, read_calibration

    f = tmp_path / "c.json"
    f.write_text(text)
    with pytest.raises(CalibrationError) as e:
        read_calibration(f)
    assert str(e.value).startswith(str(f)) and why in str(e.value)
    with pytest.raises(CalibrationError, match="is a directory"):
        read_calibration(tmp_path)


@pytest.mark.parametrize("kw,why", [({"alpha": 0.0}, "alpha must be in (0, 1), got 0.0"),
                                    ({"delta": 1.0}, "delta must be in (0, 1), got 1.0"),
                                    ({"scores": [0.1, float("nan"), float("inf")]}, "2 scores are not finite")])
def test_calibration_summary_refuses_its_bounds(kw, why):
    from citebound.calibration.files import CalibrationError, calibration_summary

    args = {"scores": [0.1, 0.2, 0.9], "labels": [0, 0, 1], "alpha": 0.1, "delta": 0.1, "verifier": "v",
            "verifier_hash": "h"} | kw
    with pytest.raises(CalibrationError) as e:
        calibration_summary(**args)
    assert why in str(e.value)


@pytest.mark.parametrize("k,n,p,sf", [(-1, 5, 0.3, 1.0), (5, 5, 0.3, 0.0), (0, 5, 0.0, 0.0), (0, 5, 1.0, 1.0),
                                      (0, 2, 0.5, 0.75), (1, 3, 0.5, 0.5)])
def test_the_binomial_tail_at_its_edges(k, n, p, sf):
    """P(Bin(n, p) > k) by hand: k = -1 is everything; k >= n nothing; P(Bin(2, .5) > 0) = 3/4; P(Bin(3, .5) > 1) = 1/2."""
    from citebound.calibration.binomial import binom_sf

    assert binom_sf(k, n, p) == pytest.approx(sf, abs=1e-12)


@pytest.mark.parametrize("k,n,level,want", [(-1, 5, 0.1, 0.0), (5, 5, 0.1, 1.0), (0, 0, 0.1, 1.0),
                                            (0, 10, 0.05, 1 - 0.05 ** 0.1)])
def test_the_clopper_pearson_bound_at_its_edges(k, n, level, want):
    """k = 0 of n: (1 - r) ** n = level, so r = 1 - level ** (1 / n)."""
    from citebound.calibration.binomial import upper_bound

    assert upper_bound(k, n, level) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("kw", [{"q": 0.0}, {"delta": 1.0}, {"supported_share_min": 0.0}, {"supported_share_min": 1.0}])
def test_precision_calibration_refuses_its_bounds(kw):
    from citebound.calibration.precision import calibrate_precision

    args = {"scores": [0.1, 0.9], "labels": [0, 1], "q": 0.1, "delta": 0.1, "supported_share_min": 0.5} | kw
    (name, v), = kw.items()
    with pytest.raises(ValueError, match=rf"{name} must be in \(0, 1\), got {v}"):
        calibrate_precision(**args)
