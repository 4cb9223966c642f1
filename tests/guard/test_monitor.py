"""The drift monitor: conformal p-values and the mixture martingale against hand computation and
scipy, Ville's bound on exchangeable streams, detection on a shifted one, and the label test."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from citebound.calibration.monitor import DriftMonitor, conformal_p, miss_rate_p


def test_conformal_p_by_hand_with_ties_and_the_first_index():
    assert conformal_p([0.1, 0.5, 0.9], 0.95, 0.5) == 0.125      # (0 + 0.5 * 1) / 4
    assert conformal_p([0.1, 0.5, 0.9], 0.05, 0.0) == 0.75       # all three higher: 3 / 4
    assert conformal_p([0.1, 0.5, 0.5, 0.9], 0.5, 1.0) == 0.8    # (1 + 1 * 3) / 5
    assert conformal_p([0.1, 0.5, 0.5, 0.9], 0.5, 0.0) == 0.2    # (1 + 0) / 5


def test_the_martingale_against_a_hand_computed_sequence():
    m = DriftMonitor([0.1, 0.5, 0.9], delta=0.1)
    m.update([0.95], thetas=[0.5])
    # p1 = 0.125; M1 = int_0^1 eps * 0.125 ** (eps - 1) d eps = 8 (1 - e^-k (1 + k)) / k^2, k = ln 8
    k = math.log(8)
    assert m.value == pytest.approx(8 * (1 - (1 + k) / 8) / k**2, rel=1e-3)
    assert m.value == pytest.approx(1.13795, rel=1e-3)
    m.update([0.2], thetas=[0.5])
    # the 0.95 joined the history: p2 = (3 higher + 0.5) / 5 = 0.7; M2 = int eps^2 (0.125 * 0.7) ** (eps - 1)
    want, _ = integrate.quad(lambda e: e * e * (0.125 * 0.7) ** (e - 1), 0, 1)
    assert m.value == pytest.approx(want, rel=1e-3)
    assert m.n_seen == 2 and m.state == "ok"
    m.update([float("nan")], thetas=[0.5])  # not scored: skipped, not counted
    assert m.n_seen == 2


def test_suspect_when_the_martingale_reaches_one_over_delta_and_it_stays():
    m = DriftMonitor([0.1, 0.2, 0.3, 0.4], delta=0.1)
    seen = []
    for i in range(40):
        m.update([0.5 + i / 100], thetas=[0.5])  # each the highest yet: p = 0.5 / (5 + i)
        seen.append(m.value)
    first = next(i for i, v in enumerate(seen) if v >= 10)
    assert m.alarm_at == first + 1 and m.state == "suspect"
    assert all(v < 10 for v in seen[:first])
    m.update([0.0] * 50)  # back to ordinary scores: the alarm is not withdrawn
    assert m.state == "suspect"


def test_false_alarms_on_exchangeable_streams_stay_within_delta():
    rng = np.random.default_rng(1)
    delta, trials, alarms = 0.1, 400, 0
    for t in range(trials):
        m = DriftMonitor(rng.beta(2, 5, 100), delta=delta, seed=t)
        m.update(rng.beta(2, 5, 150))
        alarms += m.state == "suspect"
    # Ville: P(alarm) <= delta; the one-sided 99% binomial upper bound of the observed rate must reach it
    upper = stats.beta.ppf(0.99, alarms + 1, trials - alarms)
    assert alarms / trials <= delta or upper >= delta
    assert alarms / trials < 0.15


def test_a_shift_to_higher_scores_is_detected():
    rng = np.random.default_rng(2)
    m = DriftMonitor(rng.beta(2, 5, 200), delta=0.1, seed=0)
    m.update(rng.beta(5, 2, 60))  # the deployed scores now look like supported ones
    assert m.state == "suspect" and m.alarm_at is not None and m.alarm_at < 30


def test_the_label_test_against_scipy_and_void():
    assert miss_rate_p(5, 10, 0.1) == pytest.approx(stats.binom.sf(4, 10, 0.1), rel=1e-12)
    assert miss_rate_p(0, 10, 0.1) == 1.0
    m = DriftMonitor([0.2, 0.4], delta=0.1, alpha=0.1)
    fs = [(j + 0.5) / 20 * 0.98 for j in range(20)]  # the betting e-process by hand: bets lam = f / alpha

    def e(k, n):
        return sum((1 + 9 * f) ** k * (1 - f) ** (n - k) for f in fs) / 20

    assert m.labels(1, 10) == "ok" and m.label_test.value == pytest.approx(e(1, 10), rel=1e-9)
    # 5 of 20: a fixed-n binomial test would reject (P(Bin(20, .1) >= 5) = 0.043 < 0.1), but it is not valid
    # at every look; the e-process, valid at every look, is not yet past 1/delta
    assert m.labels(4, 10) == "ok" and e(5, 20) < 10 and stats.binom.sf(4, 20, 0.1) < 0.1
    assert m.label_p == pytest.approx(stats.binom.sf(4, 20, 0.1), rel=1e-12)
    assert m.labels(5, 10) == "void" and e(10, 30) >= 10 and m.label_test.void_after == 30
    with pytest.raises(ValueError):
        m.labels(3, 2)
    with pytest.raises(ValueError, match="finite"):
        DriftMonitor([float("nan")])


def test_the_stored_state_keeps_the_last_50_resets_and_the_card_the_last_10():
    """The state is of fixed size whatever the history: 60 resets are stored as the last 50 (10..59)."""
    from citebound.calibration.state import MemoryStore
    from citebound.guarding.card import GuaranteeKeeper

    m = DriftMonitor([0.1, 0.2, 0.3])
    m.history = [{"i": i} for i in range(60)]
    assert [h["i"] for h in m.dump()["history"]] == list(range(10, 60))
    assert [h["i"] for h in m.card()["history"]] == list(range(50, 60))
    cal = {"alpha": 0.1, "tau": 0.2, "monitor_scores": [0.1, 0.2, 0.3], "pac": {"tau": None, "delta": 0.1}}
    store = MemoryStore()
    keeper = GuaranteeKeeper(cal, store=store)
    for i in range(55):
        keeper.reset(f"r{i}")
    stored = store.get(keeper.key)["history"]
    assert len(stored) == 50 and (stored[0]["by"], stored[-1]["by"]) == ("r5", "r54")


def test_the_label_test_reads_alpha_as_the_miss_rate_and_delta_as_the_level():
    """alpha 0.05, delta 0.2 (unequal, so swapping them shows): 3 of 10 unsupported citations passed is far more
    than 5% (the likelihood ratio of a 30% rate against 5% is (0.3/0.05)^3 (0.7/0.95)^7 ~ 25.5), and the
    e-process passes 1/delta = 5: void. Read the other way (a 20% rate at level 0.05: 3 of 10 is what 20% gives,
    and 1/0.05 = 20 is far off) it would stay ok."""
    from citebound.calibration.eprocess import MissRateTest

    m = DriftMonitor([0.2, 0.4], delta=0.2, alpha=0.05)
    assert m.labels(3, 10) == "void"
    want = MissRateTest(0.05, 0.2)
    want.add(3, 10)
    assert m.label_test.value == want.value >= 5
    other = MissRateTest(0.2, 0.05)
    other.add(3, 10)
    assert not other.void
    # the same after a round trip through the shared store's state (a replica that loads it)
    again = DriftMonitor([0.2, 0.4], delta=0.2, alpha=0.05).load(m.dump())
    assert (again.label_test.value, again.label_test.void, again.label_test.void_after) == (want.value, True, 10)
