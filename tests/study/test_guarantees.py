"""The guarantees analysis (rule guarantees): hand-computed risks and intervals, and the properties the
certificate and the monitor must show on populations whose truth is known."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta as beta_dist

from citebound.study.analysis import guarantees as G


def frame(scores, labels, groups=None):
    d = pd.DataFrame({"score_v": scores, "label": labels})
    d["group"] = groups if groups is not None else "g"
    return d


def test_population_risks_by_hand():
    s, y = np.array([0.1, 0.4, 0.6, 0.9]), np.array([0, 0, 1, 1])
    miss, flag = G.population_risks(s, y, np.array([0.0, 0.1, 0.4, 0.6]))
    # miss: unsupported with score > tau; flag: supported with score <= tau (a tie is flagged)
    assert miss.tolist() == [1.0, 0.5, 0.0, 0.0]
    assert flag.tolist() == [0.0, 0.0, 0.0, 0.5]


@pytest.mark.parametrize("k,n", [(0, 10), (5, 10), (10, 10), (3, 200)])
def test_clopper_pearson_against_scipy(k, n):
    lo, hi = G.cp_interval(k, n)
    want_lo = 0.0 if k == 0 else beta_dist.ppf(0.025, k, n - k + 1)
    want_hi = 1.0 if k == n else beta_dist.ppf(0.975, k + 1, n - k)
    assert lo == pytest.approx(want_lo, abs=1e-9) and hi == pytest.approx(want_hi, abs=1e-9)


def test_no_feasible_threshold_means_every_certificate_is_a_violation_and_they_stay_rare():
    # supported and unsupported scores from one distribution: miss(t) + flag(t) ~ 1, so no tau has both
    # <= 0.3; a valid certificate then certifies anything in at most delta of the draws
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < 0.5).astype(int)
    out = G.ltt_violations({"v": frame(s, y)}, 0.3, [0.3], 0.2, 300, 0.5, seed=1,
                           methods=["bonferroni", "fixed_sequence"])
    assert not out.population_tau_feasible.any()
    assert (out.violation_rate == out.certified_share).all()
    assert (out.ci_low <= 0.2).all() and out.within_delta.all()


def test_an_easy_population_is_certified_in_nearly_every_draw_and_never_violated():
    s = np.r_[np.linspace(0.0, 0.3, 200), np.linspace(0.7, 1.0, 200)]
    y = np.r_[np.zeros(200, int), np.ones(200, int)]
    out = G.ltt_violations({"v": frame(s, y)}, 0.1, [0.1], 0.1, 50, 0.5, seed=2)
    row = out.iloc[0]
    assert row.certified_share == 1.0 and row.violations == 0 and row.n_cal == 200
    assert 0.3 <= row.median_tau < 0.7  # the smallest certified tau sits in the gap between the classes


def test_certified_beta_is_the_smallest_step_that_certifies():
    s = np.r_[np.linspace(0.0, 0.3, 200), np.linspace(0.7, 1.0, 200)]
    y = np.r_[np.zeros(200, int), np.ones(200, int)]
    row = G.certified_beta({"v": frame(s, y)}, [0.1], 0.1).iloc[0]
    # the false-flag test at a tau that flags no supported citation has p = (1 - beta) ** 200, against
    # delta / |grid| = 0.1 / 201 = 4.98e-4: 0.97 ** 200 = 2.3e-3 fails, 0.96 ** 200 = 2.8e-4 passes
    assert row.certified_beta == 0.04 and row.empirical_false_flag_at_tau == 0.0
    assert row.empirical_miss_at_tau <= 0.1


def test_the_transfer_row_reports_the_catch_rate_at_the_easy_threshold():
    # 20 unsupported at 0.01..0.20, 10 supported at 0.9: k = ceil(21 * 0.9) = 19, tau = 0.19
    cal = frame(np.r_[np.round(np.arange(1, 21) * 0.01, 2), np.full(10, 0.9)], np.r_[np.zeros(20), np.ones(10)])
    hard = frame([0.15, 0.5, 0.6, 0.7, 0.95], [0, 0, 0, 0, 1])
    out = G.monitor_alarms({"v": cal}, {"v": hard}, 0.1, 0.1, 20, seed=3).set_index("setting")
    assert out.loc["transfer", "catch_rate_at_tau"] == 0.25  # only 0.15 <= 0.19
    assert out.loc["exchangeable", "reference"] == 15 and out.loc["exchangeable", "stream_length"] == 15
    assert out.loc["transfer", "reference"] == 30 and out.loc["transfer", "stream_length"] == 5


def test_exchangeable_streams_rarely_alarm():
    rng = np.random.default_rng(4)
    cal = frame(rng.random(400), (rng.random(400) < 0.5).astype(int))
    row = G.monitor_alarms({"v": cal}, {}, 0.1, 0.1, 100, seed=5).iloc[0]
    assert row.setting == "exchangeable" and row.ci_low <= 0.1


def test_a_group_too_small_falls_back_and_a_tiny_one_is_left_out():
    rng = np.random.default_rng(6)
    big = frame(np.r_[rng.random(300) * 0.4, 0.6 + rng.random(100) * 0.4], np.r_[np.zeros(300), np.ones(100)], "big")
    small = frame(np.r_[rng.random(12) * 0.4, [0.9] * 3], np.r_[np.zeros(12), np.ones(3)], "small")
    tiny = frame([0.1, 0.9], [0, 1], "tiny")
    out = G.group_vs_pooled({"v": pd.concat([big, small, tiny])}, "group", 0.1, 0.2, 0.1, 20, seed=7,
                            min_group=10).set_index("group")
    assert "tiny" not in out.index
    # 12 unsupported, ~6 per half: a binomial test at alpha 0.1 cannot reject with so few, so small always falls back
    assert out.loc["small", "fallback_share"] == 1.0
    assert out.loc["small", "pooled_miss"] == out.loc["small", "group_miss"]
    assert out.loc["big", "fallback_share"] == 0.0


def test_label_test_table_e_process_within_delta_and_fixed_n_not():
    t = G.label_test(0.1, 0.1, [(10, 100), (1000, 1)], 600, seed=1)
    e = t[(t.test.str.startswith("e-process")) & (t.true_miss_rate == 0.1)]
    naive = t[t.test.str.startswith("fixed-n")]
    assert e.within_delta.all() and (e.ci_high <= 0.1).all()
    assert (naive.void_rate > 0.2).all() and not naive.within_delta.any()  # the shortcut the issue measured
    power = t[t.true_miss_rate == 0.2].iloc[0]
    assert power.void_rate > 0.95 and 10 < power.median_labels_to_void < 300
    # the e-process's void counts equal the library class on the same label sequences (one label per post)
    from citebound.calibration.eprocess import MissRateTest

    rng = np.random.default_rng(5)
    paths = (rng.random((50, 300)) < 0.2).astype(int)
    for p in paths[:10]:
        m = MissRateTest(0.1, 0.1)
        for x in p:
            m.add(int(x), 1)
        k = np.cumsum(p)
        fs = (np.arange(20) + 0.5) / 20 * 0.98
        e_by_hand = [np.mean((1 + 9 * fs) ** k[i] * (1 - fs) ** (i + 1 - k[i])) for i in range(len(p))]
        first = next((i + 1 for i, v in enumerate(e_by_hand) if v >= 10), None)
        assert m.void_after == first


def _two_class(n0, n1, rng, neg=(2, 8)):
    return pd.DataFrame({"score_lexical": np.r_[rng.beta(*neg, n0), rng.beta(8, 2, n1)],
                         "label": np.r_[np.zeros(n0), np.ones(n1)]})


def test_shift_alarm_ignores_a_changed_share_and_catches_hard_negatives():
    rng = np.random.default_rng(0)
    cal = {"lexical": _two_class(800, 200, rng)}
    hard = {"lexical": _two_class(600, 600, rng, neg=(50, 1))}  # hard negatives score above the supported
    t = G.shift_alarm(cal, hard, 0.1, [0.2, 0.9], streams=30, length=300, seed=3, mixture=True)
    robust = t[(t.alarm == "label-shift robust") & (t.setting == "supported share")]
    assert robust.within_delta.all() and (robust.alarms <= 5).all()
    old = t[t.alarm.str.startswith("mixture")].set_index("supported_share")
    assert old.loc[0.9, "alarm_rate"] > 0.5  # the older monitor fires on the share alone: the reason for the new one
    transfer = t[(t.setting == "transfer") & (t.alarm == "label-shift robust")].iloc[0]
    assert transfer.alarm_rate > 0.8 and transfer.median_delay < 600 and transfer.calibration_share == pytest.approx(0.2)
    # the label test on the same streams: the hard negatives score ~0.98, above any tau of the beta(2, 8) ones, so
    # nearly every labelled unsupported citation is a miss; half the stream is unsupported, so about twice the
    # unsupported labels it needs (2 misses: mean((1 + 9f)^2) >= 10, by hand below) are labelled
    labels = t[(t.setting == "transfer") & (t.alarm.str.startswith("labels"))].iloc[0]
    assert labels.realised_miss > 0.95 and labels.alarm_rate == 1.0 and 2 <= labels.median_delay <= 8


def test_labels_to_void_by_hand():
    """Void once the average of the bets' wealth reaches 1/delta, counting only unsupported labels: all-miss
    labels need m with mean((1 + 9 f)^m) >= 10 over the 20 bet fractions (by hand: m = 2); supported labels
    between them only move the position; no miss, no void."""
    fs = (np.arange(20) + 0.5) / 20 * 0.98
    m = next(k for k in range(1, 50) if np.mean((1 + 9 * fs) ** k) >= 10)
    assert m == 2  # one miss: 1 + 9 E[f] = 5.41; two: 1 + 18 E[f] + 81 E[f^2] = 35.7
    unsup = np.array([[True] * 10, [False, True, False, True, True, False, True, True, True, True], [True] * 10])
    missed = np.array([[True] * 10, [True] * 10, [False] * 10])
    got = G.labels_to_void(unsup, missed, 0.1, 0.1)
    assert got.tolist() == [2, 4, 0]  # the second unsupported label is the 4th label in row 2


def test_population_fdr_by_hand():
    # miss 0.2, flag 0.5 at share 0.8: (0.2 * 0.2) / (0.2 * 0.2 + 0.8 * 0.5) = 0.04 / 0.44
    assert G.population_fdr(np.array([0.2, 0.0]), np.array([0.5, 1.0]), 0.8).tolist() == pytest.approx([0.04 / 0.44, 0.0])


def test_a_precision_draw_violates_when_any_certified_tau_does(monkeypatch):
    """Two taus certified in every draw: one whose population FDR is above q, one below. Counting 'all' would
    give 0 violations; the guarantee is about every certified tau, so each draw is a violation."""
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.9, 0.95] * 20)
    y = np.array([0, 0, 1, 0, 1, 1] * 20)
    df = pd.DataFrame({"score_v": s, "label": y})
    grid = G.grid_for(s)
    miss, flag = G.population_risks(s, y, grid)
    fdr = G.population_fdr(miss, flag, 0.8)
    high = int(np.flatnonzero(fdr > 0.1)[0])  # a tau that lets an unsupported 0.6 through among few supported
    low = int(np.flatnonzero(fdr <= 0.1)[-1])
    assert high < low

    def two_taus(cs, cy, g, delta, share_min):
        out = np.ones(len(g))
        out[[high, low]] = 0.0
        return out

    monkeypatch.setattr(G, "fdr_bounds", two_taus)
    t = G.precision_guarantee({"v": df}, 0.1, 0.8, 0.1, 0.1, 30, 0.5, 0).iloc[0]
    assert t.violations == 30 and t.certified_share == 1.0
    # the deployed tau is the smallest certified one: the supported share kept is the population's above it
    assert t.supported_kept_precision == pytest.approx(1 - flag[high])


def test_the_precision_guarantee_holds_over_draws_on_a_real_shaped_population():
    rng = np.random.default_rng(4)
    s = np.concatenate([rng.beta(2, 5, 1500), rng.beta(5, 2, 1500)])
    y = np.r_[np.zeros(1500, int), np.ones(1500, int)]
    t = G.precision_guarantee({"v": pd.DataFrame({"score_v": s, "label": y})}, 0.1, 0.8, 0.1, 0.1, 30, 0.5, 1).iloc[0]
    assert t.certified_share > 0.9 and t.violations <= 3 and 0 < t.supported_kept_precision <= 1


def test_an_ltt_draw_violates_when_any_certified_tau_does(monkeypatch):
    """As for precision: two taus certified in every draw, one breaking the miss-rate bound and one not."""
    from types import SimpleNamespace

    s = np.array([0.1, 0.2, 0.3, 0.6, 0.9, 0.95] * 20)
    y = np.array([0, 0, 1, 0, 1, 1] * 20)
    grid = G.grid_for(s)
    miss, flag = G.population_risks(s, y, grid)
    bad = (miss > 0.1) | (flag > 0.9)
    high, low = int(np.flatnonzero(bad)[0]), int(np.flatnonzero(~bad)[0])

    def two(*args, **kw):
        return SimpleNamespace(certified=[float(grid[high]), float(grid[low])], tau=float(grid[low]))

    monkeypatch.setattr(G, "calibrate_two_sided", two)
    t = G.ltt_violations({"v": pd.DataFrame({"score_v": s, "label": y})}, 0.1, [0.9], 0.1, 25, 0.5, 0).iloc[0]
    assert t.violations == 25 and t.certified_share == 1.0


def test_the_alarm_streams_never_draw_from_the_reference_half(monkeypatch):
    """The false-suspect check holds out: every deployed score comes from the half the reference did not see."""
    rng = np.random.default_rng(5)
    s = rng.random(400)  # distinct scores: a shared value can only be the same citation
    y = (np.arange(400) % 3 == 0).astype(int)
    seen = []
    real = G.alarm_times

    def spy(s0, s1, streams, thetas, delta):
        seen.append((set(np.asarray(s0)) | set(np.asarray(s1)), set(np.asarray(streams).ravel())))
        return real(s0, s1, streams, thetas, delta)

    monkeypatch.setattr(G, "alarm_times", spy)
    G.shift_alarm({"v": pd.DataFrame({"score_v": s, "label": y})}, {}, 0.1, [0.2, 0.9], 5, 50, 0, mixture=False)
    assert len(seen) == 2
    for ref, stream in seen:
        assert stream and not (ref & stream) and len(ref) == 200  # half of each class: 67 of 134 and 133 of 266
