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
