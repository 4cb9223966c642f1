"""The anytime-valid label test and the label-shift robust alarm, by simulation: many draws, the realised
rate, and its Clopper-Pearson bound against delta; a planted shortcut (a fixed-n binomial test re-run after
every look) must fail the same simulation."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from citebound.calibration.eprocess import EPS, KAPPA, MissRateTest, ShiftRobustAlarm, log_bets, log_wealth

ALPHA, DELTA = 0.1, 0.1


def cp_upper(k, n, level=0.95):
    return 1.0 if k == n else float(stats.beta.ppf(level, k + 1, n - k))


def ever_void(paths, batch):
    """Whether each path of 0/1 misses turns void when labels are posted ``batch`` at a time."""
    k = np.cumsum(paths, axis=1)[:, batch - 1::batch]
    n = np.arange(batch, paths.shape[1] + 1, batch)
    lw = k[..., None] * np.log1p(np.asarray(np.arange(20) + 0.5) / 20 * 0.98 / ALPHA * (1 - ALPHA))[None, None, :] \
        + (n[None, :, None] - k[..., None]) * np.log1p(-(np.arange(20) + 0.5) / 20 * 0.98)[None, None, :]
    e = np.exp(lw).mean(axis=2)
    return (e >= 1 / DELTA).any(axis=1)


def test_the_betting_formula_matches_the_class():
    t = MissRateTest(ALPHA, DELTA)
    t.add(3, 7)
    t.add(0, 5)
    fs = [(j + 0.5) / 20 * 0.98 for j in range(20)]
    assert t.value == pytest.approx(sum((1 + 9 * f) ** 3 * (1 - f) ** 9 for f in fs) / 20, rel=1e-12)
    assert np.exp(log_wealth(3, 12, ALPHA)).mean() == pytest.approx(t.value, rel=1e-12)
    with pytest.raises(ValueError):
        t.add(2, 1)
    with pytest.raises(ValueError):
        t.add(0, MissRateTest.MAX_POST + 1)


@pytest.mark.parametrize("batch", [1000, 100, 10, 1])
def test_false_void_stays_under_delta_however_labels_are_batched(batch):
    rng = np.random.default_rng(batch)
    paths = (rng.random((2000, 1000)) < ALPHA).astype(int)  # the true miss rate is exactly alpha
    voids = int(ever_void(paths, batch).sum())
    assert cp_upper(voids, 2000) <= DELTA, (batch, voids)
    # the class agrees with the vectorised formula on the first paths
    for p in paths[:20]:
        t = MissRateTest(ALPHA, DELTA)
        for i in range(0, 1000, batch):
            t.add(int(p[i:i + batch].sum()), batch)
        assert t.void == bool(ever_void(p[None], batch)[0])


def test_a_fixed_n_binomial_test_at_every_look_fails_the_same_simulation():
    rng = np.random.default_rng(7)
    paths = (rng.random((2000, 1000)) < ALPHA).astype(int)
    k = np.cumsum(paths, axis=1)[:, 9::10]
    n = np.arange(10, 1001, 10)
    p = stats.binom.sf(k - 1, n[None, :], ALPHA)
    naive = int((p < DELTA).any(axis=1).sum())
    assert naive / 2000 > 2 * DELTA  # the shortcut voids valid calibrations far more often than delta


def test_power_at_twice_alpha():
    rng = np.random.default_rng(3)
    paths = (rng.random((500, 1000)) < 2 * ALPHA).astype(int)
    assert ever_void(paths, 1).mean() > 0.95  # nearly always void within 1,000 labels


def test_every_betting_function_integrates_to_one():
    for j in range(2 * len(EPS) + len(KAPPA)):
        val, _ = integrate.quad(lambda p, j=j: float(np.exp(log_bets(np.array(p))[j])), 0, 1, limit=200)
        assert val == pytest.approx(1.0, abs=1e-3), j


def _stream(rng, n, pi, neg=(2, 8)):
    sup = rng.random(n) < pi
    return np.where(sup, rng.beta(8, 2, n), rng.beta(*neg, n))


@pytest.mark.parametrize("pi", [0.1, 0.5, 0.95])
def test_the_alarm_ignores_a_change_of_the_supported_share(pi):
    """Calibrated at a supported share of 0.2; deployed at another share, the unsupported class unchanged."""
    rng = np.random.default_rng(int(pi * 100))
    alarms = 0
    for r in range(40):
        a = ShiftRobustAlarm(_stream(rng, 1000, 0.0), _stream(rng, 250, 1.0), DELTA, seed=r)
        alarms += a.update(_stream(rng, 500, pi))
    assert cp_upper(alarms, 40) <= 0.2  # 40 draws: the CI's upper end (<= delta needs the DAG's 200 x 1000)
    assert alarms <= 4


def test_the_alarm_fires_when_unsupported_citations_score_higher_than_any_calibration_citation():
    """Unsupported citations that now score above every calibration score (no mix of the two classes puts
    them there): every stream turns suspect, within a few hundred citations."""
    rng = np.random.default_rng(11)
    at = []
    for r in range(10):
        a = ShiftRobustAlarm(rng.uniform(0, 0.4, 1000), rng.uniform(0.3, 0.7, 250), DELTA, seed=r)
        sup = rng.random(1000) < 0.5
        a.update(np.where(sup, rng.uniform(0.3, 0.7, 1000), rng.uniform(0.8, 1.0, 1000)))
        at.append(a.alarm_at)
    assert None not in at and max(at) < 300, at


def test_each_share_allows_for_its_own_mix_of_the_two_references_errors():
    from citebound.calibration.eprocess import PI_GRID, pi_error, reference_error

    # DKW at delta/4 plus the smoothing, by hand: sqrt(log(8 / 0.1) / (2 n)) + 1 / (n + 1)
    for n in (100, 400):
        assert reference_error(n, 0.1) == pytest.approx(math.sqrt(math.log(80) / (2 * n)) + 1 / (n + 1))
    e = pi_error(100, 400, 0.1)  # 100 unsupported, 400 supported
    assert e[0] == pytest.approx(reference_error(100, 0.1)) and e[-1] == pytest.approx(reference_error(400, 0.1))
    i = int(np.argmin(np.abs(PI_GRID - 0.3)))
    assert e[i] == pytest.approx(0.3 * reference_error(400, 0.1) + 0.7 * reference_error(100, 0.1))


def test_the_alarm_costs_the_same_per_update_however_long_the_stream():
    a = ShiftRobustAlarm([0.1, 0.2], [0.8, 0.9], DELTA)
    size = a._log.nbytes
    a.update(np.linspace(0, 1, 5000))
    assert a._log.nbytes == size and a.n_seen == 5000 and math.isfinite(math.log(max(a.value, 1e-300)))


def test_the_alarm_level_is_two_over_delta_not_one_over_delta():
    """#56: pinned from the definition (delta/2 for Ville's inequality, delta/2 for the references' error): a
    stream whose smallest martingale passes 1/delta and stays below 2/delta does not fire; it fires at the first
    citation where it reaches 2/delta, and never before."""
    rng = np.random.default_rng(11)
    a = ShiftRobustAlarm(rng.uniform(0, 0.4, 1000), rng.uniform(0.3, 0.7, 250), DELTA, seed=0)
    between = 0
    for n, s in enumerate(rng.uniform(0.8, 1.0, 400), start=1):
        a.update([s])
        m = float(a.log_martingales().min())
        if math.log(1 / DELTA) <= m < math.log(2 / DELTA):
            between += 1
            assert not a.suspect  # a 1/delta alarm would have fired here
        if m >= math.log(2 / DELTA):
            assert a.suspect and a.alarm_at == n
            break
        assert not a.suspect
    assert between >= 1 and a.suspect


def test_the_mixture_p_value_weighs_the_supported_references_p_value_by_the_supported_share():
    """By hand: unsupported scores [0.1, 0.2], supported [0.8, 0.9], a score of 0.85 with theta 0.5.
    Against the unsupported: none equal, none higher -> (0 + 0.5 * 1) / 3 = 1/6; against the supported: one higher
    -> (1 + 0.5 * 1) / 3 = 1/2. At a supported share pi: pi * 1/2 + (1 - pi) * 1/6."""
    from citebound.calibration.eprocess import PI_GRID, mixture_p

    p = mixture_p(np.array([0.1, 0.2]), np.array([0.8, 0.9]), np.array([0.85]), np.array([0.5]))[0]
    np.testing.assert_allclose(p, PI_GRID * 0.5 + (1 - PI_GRID) / 6, atol=1e-12)
    assert p[0] == pytest.approx(1 / 6) and p[-1] == pytest.approx(1 / 2)


def test_void_after_is_the_label_count_once_the_post_that_voided_is_in():
    """By the formula: one miss leaves the average wealth at 1 + 9 * mean(f) = 1 + 9 * 0.49 = 5.41 < 10; a second
    gives 1 + 18 * 0.49 + 81 * mean(f^2) = 35.73 >= 10 (mean(f^2) = 0.98^2 * 133.25 / 400 = 0.31993)."""
    t = MissRateTest(ALPHA, DELTA)
    assert t.add(1, 1) is False and t.void_after is None
    assert t.value == pytest.approx(5.41)
    assert t.add(1, 1) is True and t.void_after == 2
    assert t.value == pytest.approx(1 + 18 * 0.49 + 81 * 0.98 ** 2 * 133.25 / 400)
    t.add(0, 5)
    assert t.void and t.void_after == 2  # void stays, and so does when it turned
    batched = MissRateTest(ALPHA, DELTA)
    assert batched.add(2, 2) is True and batched.void_after == 2  # one post: the count after it


@pytest.mark.parametrize("missed,n", [(True, 1), (1, True), (1.0, 2), (-1, 2)])
def test_a_post_counts_only_non_negative_integers(missed, n):
    t = MissRateTest(ALPHA, DELTA)
    with pytest.raises(ValueError, match="must be a non-negative integer"):
        t.add(missed, n)
    assert (t.missed, t.n) == (0, 0)


def test_the_simulations_alarm_times_are_the_class_alarm_at_stream_by_stream():
    """alarm_times is ShiftRobustAlarm's arithmetic on many streams at once: each row's time is the class's alarm_at
    for the same thetas (1-based; 0 for never). Rows: unsupported citations now scoring above every calibration
    score (fires), the same mixed with supported-like ones, and a stream of supported-like scores (a change of
    share: the null for pi near 1, so the smallest martingale never fires though pi = 0's grows)."""
    from citebound.calibration.eprocess import alarm_times

    rng = np.random.default_rng(5)
    s0, s1 = rng.uniform(0, 0.4, 300), rng.uniform(0.3, 0.7, 100)
    rows = np.array([rng.uniform(0.8, 1.0, 200),
                     np.where(rng.random(200) < 0.2, rng.uniform(0.3, 0.7, 200), rng.uniform(0.8, 1.0, 200)),
                     rng.uniform(0.3, 0.7, 200)])
    thetas = rng.random(rows.shape)
    got = alarm_times(s0, s1, rows, thetas, DELTA)
    want = []
    for row, th in zip(rows, thetas):
        a = ShiftRobustAlarm(s0, s1, DELTA)
        a.update(row, th)
        want.append(a.alarm_at or 0)
    assert got.tolist() == want
    assert 0 < want[0] < want[1] and want[2] == 0
    a = ShiftRobustAlarm(s0, s1, DELTA)
    a.update(rows[2], thetas[2])
    assert float(a.log_martingales().max()) >= math.log(2 / DELTA)  # some share's martingale is past the level


def test_the_alarms_references_leave_out_scores_that_are_not_numbers():
    a = ShiftRobustAlarm([0.1, float("nan"), 0.2, None, float("inf")], [0.8, float("nan"), 0.9], DELTA)
    b = ShiftRobustAlarm([0.1, 0.2], [0.8, 0.9], DELTA)
    assert a.p_values(0.15, 0.5).tolist() == b.p_values(0.15, 0.5).tolist()
    with pytest.raises(ValueError, match="needs the calibration's scores of both classes"):
        ShiftRobustAlarm([float("nan")], [0.8], DELTA)


def test_the_alarm_skips_a_deployed_score_that_is_not_a_number_and_its_draw():
    # a score the verifier could not give (None) or gave as nan or inf is not a p-value: it is skipped, and not
    # counted, but its theta is still drawn, so the scores after it get the same thetas as if it were there
    a = ShiftRobustAlarm([0.1, 0.2, 0.3], [0.7, 0.8, 0.9], DELTA)
    b = ShiftRobustAlarm([0.1, 0.2, 0.3], [0.7, 0.8, 0.9], DELTA)
    a.update([0.25, None, float("nan"), float("inf"), 0.05], [0.1, 0.2, 0.3, 0.4, 0.9])
    b.update([0.25, 0.05], [0.1, 0.9])
    assert a.n_seen == b.n_seen == 2
    assert a.log_martingales().tolist() == b.log_martingales().tolist()


def test_each_bet_is_read_where_it_pays_least_within_eps():
    """p = 0.3, eps = 0.1. A decreasing bet e * q ** (e - 1) pays least at the top of [0.2, 0.4], q = 0.4; an
    increasing one e * (1 - q) ** (e - 1) at the bottom, q = 0.2 (so 1 - q = 0.8); each tent is the smaller of its
    values at 0.4 and 0.2. By hand, for each e of EPS and kappa of KAPPA."""
    got = np.exp(log_bets(np.array(0.3), 0.1))

    def tent(q, k):
        return 0.5 + 0.5 * (k + 1) * max(1 - abs(2 * q - 1), 0.0) ** k

    want = [e * 0.4 ** (e - 1) for e in EPS] + [e * 0.8 ** (e - 1) for e in EPS] + [
        min(tent(0.4, k), tent(0.2, k)) for k in KAPPA]
    assert got.shape == (2 * len(EPS) + len(KAPPA),)
    assert got.tolist() == pytest.approx(want, rel=1e-12)
