"""The guarantees analysis (rule guarantees): hand-computed risks and intervals, and the properties the
certificate and the monitor must show on populations whose truth is known."""
import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta as beta_dist

from citebound.study.analysis import guarantees as G


def scipy_cp(k, n):
    """The two-sided 95% Clopper-Pearson interval for k events in n, from scipy's beta quantiles."""
    return (0.0 if k == 0 else beta_dist.ppf(0.025, k, n - k + 1), 1.0 if k == n else beta_dist.ppf(0.975, k + 1, n - k))


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


@pytest.mark.parametrize("k,n", [(0, 10), (1, 10), (5, 10), (10, 10), (1, 200), (3, 200)])
def test_clopper_pearson_against_scipy(k, n):
    lo, hi = G.cp_interval(k, n)
    want_lo, want_hi = scipy_cp(k, n)
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
    # each rate over the draws, with scipy's Clopper-Pearson interval; 40 labels give counts strictly between 0 and
    # the draws, where k of n and n of k differ (the power row voids in every draw of 1,000 labels)
    short = G.label_test(0.1, 0.1, [(40, 1)], 200, seed=2)
    for table, draws in ((t, 600), (short, 200)):
        for r in table.itertuples():
            lo, hi = scipy_cp(r.voids, draws)
            assert r.void_rate == r.voids / draws and (r.ci_low, r.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    assert ((short.voids > 0) & (short.voids < 200)).all()
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
    shares = t[t.setting == "supported share"]
    assert ((shares.alarms > 0) & (shares.alarms < 30)).any()  # a count where k of n and n of k differ
    for r in shares.itertuples():  # each rate over the 30 streams, with scipy's Clopper-Pearson interval
        lo, hi = scipy_cp(r.alarms, 30)
        assert r.alarm_rate == r.alarms / 30 and (r.ci_low, r.ci_high) == (pytest.approx(lo), pytest.approx(hi))
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
    s = np.concatenate([rng.beta(2, 5, 800), rng.beta(5, 2, 800)])
    y = np.r_[np.zeros(800, int), np.ones(800, int)]
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
    t = G.shift_alarm({"v": pd.DataFrame({"score_v": s, "label": y})}, {}, 0.1, [0.2, 0.9], 5, 50, 0, mixture=False)
    assert len(seen) == 2
    assert t.calibration_share.tolist() == [67 / 200] * 2  # the reference's supported share: 67 of its 200
    for ref, stream in seen:
        assert stream and not (ref & stream) and len(ref) == 200  # half of each class: 67 of 134 and 133 of 266


def _certifying_every_other_draw(monkeypatch, certified, bad_tau):
    """calibrate_two_sided replaced by one that certifies only in odd draws (``bad_tau``, a tau whose population
    rates break the bound, and ``certified`` of them in all): the analysis's counting alone decides the table."""
    from types import SimpleNamespace

    calls = []

    def alternate(*args, **kw):
        calls.append(1)
        if len(calls) % 2 == 0 or len(calls) // 2 >= certified:
            return SimpleNamespace(certified=[], tau=None)
        return SimpleNamespace(certified=[bad_tau], tau=bad_tau)

    monkeypatch.setattr(G, "calibrate_two_sided", alternate)


def test_the_ltt_violation_rate_is_over_every_draw_and_within_delta_reads_the_interval_low(monkeypatch):
    """20 draws, 3 of them certify a tau that breaks the miss bound: the violation rate is 3/20 (a draw that
    certifies nothing keeps the promise), not 3/3; its CP 95% interval is scipy's (0.032, 0.379), whose low end
    is below delta = 0.1, so the rate is called within delta though the point estimate is above it."""
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.9, 0.95] * 20)
    y = np.array([0, 0, 1, 0, 1, 1] * 20)
    grid = G.grid_for(s)
    _certifying_every_other_draw(monkeypatch, 3, float(grid[0]))  # tau 0 passes every unsupported one: miss 1
    t = G.ltt_violations({"v": pd.DataFrame({"score_v": s, "label": y})}, 0.1, [0.5], 0.1, 20, 0.5, 0).iloc[0]
    assert (t.violations, t.certified_share, t.violation_rate) == (3, 3 / 20, 3 / 20)
    assert t.ci_low == pytest.approx(beta_dist.ppf(0.025, 3, 18)) and t.ci_high == pytest.approx(beta_dist.ppf(0.975, 4, 17))
    assert t.ci_low < 0.1 < t.violation_rate and t.within_delta
    _certifying_every_other_draw(monkeypatch, 10, float(grid[0]))
    t = G.ltt_violations({"v": pd.DataFrame({"score_v": s, "label": y})}, 0.1, [0.5], 0.1, 20, 0.5, 0).iloc[0]
    assert t.violation_rate == 0.5 and t.ci_low > 0.1 and not t.within_delta  # beta.ppf(0.025, 10, 11) = 0.27


def test_the_exchangeable_check_streams_the_half_the_reference_did_not_see(monkeypatch):
    seen = []

    class Recording(G.DriftMonitor):
        def __init__(self, reference, **kw):
            seen.append([set(np.asarray(reference).tolist())])
            super().__init__(reference, **kw)

        def update(self, stream, *a, **kw):
            seen[-1].append(set(np.asarray(stream).tolist()))
            return super().update(stream, *a, **kw)

    monkeypatch.setattr(G, "DriftMonitor", Recording)
    s = np.random.default_rng(2).random(41)  # distinct scores; an odd count: the stream takes 21
    G.monitor_alarms({"v": frame(s, (np.arange(41) % 2).astype(int))}, {}, 0.1, 0.1, 3, seed=0)
    assert len(seen) == 3
    for ref, stream in seen:
        assert len(ref) == 20 and len(stream) == 21 and not ref & stream and ref | stream == set(s.tolist())


def alarming_at(step):
    """A drift monitor that alarms at ``step`` of every stream (None: never), whatever it is fed."""
    class Fixed:
        alarm_at = step

        def __init__(self, *a, **kw):
            pass

        def update(self, *a, **kw):
            return "ok" if step is None else "alarm"

    return Fixed


def test_the_catch_rate_before_the_alarm_counts_a_hard_negative_at_exactly_tau(monkeypatch):
    """A monitor that never alarms sees the whole stream: the catch rate before the alarm is then the share of the
    hard set's unsupported scores <= tau, where tau = 0.19 (k = ceil(21 * 0.9) = 19 of 0.01..0.20); 0.19 itself is
    caught (score <= tau is flagged): 2 of 4."""
    monkeypatch.setattr(G, "DriftMonitor", alarming_at(None))
    cal = frame(np.r_[np.round(np.arange(1, 21) * 0.01, 2), np.full(10, 0.9)], np.r_[np.zeros(20), np.ones(10)])
    hard = frame([0.19, 0.1, 0.5, 0.7, 0.95], [0, 0, 0, 0, 1])
    out = G.monitor_alarms({"v": cal}, {"v": hard}, 0.1, 0.1, 5, seed=3).set_index("setting")
    assert out.loc["transfer", "catch_rate_at_tau"] == 0.5 and out.loc["transfer", "catch_rate_before_alarm"] == 0.5
    assert out.loc["transfer", "alarms"] == 0 and out.loc["exchangeable", "alarms"] == 0


def test_the_catch_rate_before_the_alarm_reads_only_the_scores_before_it(monkeypatch):
    """Every stream alarms at its second score: each stream's catch rate is that of its first two scores (tau =
    0.19 as above; a hard set of four unsupported scores, only 0.1 caught: 1 of 4 over the whole stream), drawn
    here with the same generator (five calibration permutations, then five of the hard set)."""
    monkeypatch.setattr(G, "DriftMonitor", alarming_at(2))
    cal = frame(np.r_[np.round(np.arange(1, 21) * 0.01, 2), np.full(10, 0.9)], np.r_[np.zeros(20), np.ones(10)])
    hs = np.array([0.1, 0.5, 0.6, 0.7])
    out = G.monitor_alarms({"v": cal}, {"v": frame(hs, [0, 0, 0, 0])}, 0.1, 0.1, 5, seed=3).set_index("setting")
    rng = np.random.default_rng(3)
    for _ in range(5):
        rng.permutation(30)
    firsts = [rng.permutation(4)[:2] for _ in range(5)]
    want = float(np.median([np.mean(hs[f] <= 0.19) for f in firsts]))
    assert out.loc["transfer", "catch_rate_before_alarm"] == want != 0.25
    # with no supported citation in the hard set, the catch rate at tau is still its unsupported share caught
    assert out.loc["transfer", "catch_rate_at_tau"] == 0.25 and out.loc["transfer", "alarms"] == 5


def test_a_group_of_exactly_min_group_is_kept_and_a_supported_score_at_tau_is_flagged(monkeypatch):
    """Every calibration of over 12 citations deploys tau = 0.5 (the pooled half; the big group's too), a smaller one
    certifies nothing (the group of 10 falls back to the pooled tau);
    every supported score is exactly 0.5, every unsupported one 0.2: each half's false-flag rate is 1 (a supported
    score <= tau is flagged) and its miss rate 0, in the group of exactly min_group = 10 citations too."""
    from types import SimpleNamespace

    def pooled_then_none(*args, **kw):
        return SimpleNamespace(tau=0.5 if len(args[0]) > 12 else None, certified=[])

    monkeypatch.setattr(G, "calibrate_two_sided", pooled_then_none)
    big = frame([0.2] * 20 + [0.5] * 20, [0] * 20 + [1] * 20, "big")
    ten = frame([0.2] * 5 + [0.5] * 5, [0] * 5 + [1] * 5, "ten")
    out = G.group_vs_pooled({"v": pd.concat([big, ten])}, "group", 0.1, 0.2, 0.1, 6, seed=1,
                            min_group=10).set_index("group")
    assert sorted(out.index) == ["big", "ten"] and out.loc["ten", "n"] == 10
    assert (out.pooled_false_flag == 1.0).all() and (out.group_false_flag == 1.0).all()
    assert (out.pooled_miss == 0.0).all() and out.loc["ten", "fallback_share"] == 1.0


def test_the_catch_rate_pac_tau_flags_a_supported_score_at_exactly_tau(monkeypatch):
    """Every unsupported score is 0.3, so the PAC tau is 0.3 in every draw that certifies; half the supported
    scores are exactly 0.3 (flagged: score <= tau) and half 0.9: the share kept is 0.5. The rank is pinned to the
    number of unsupported citations drawn (the largest rank that still certifies), which must still certify."""
    from citebound.calibration import conformal

    monkeypatch.setattr(conformal, "pac_rank", lambda n, alpha, delta: n)
    s = np.r_[np.full(100, 0.3), np.full(50, 0.3), np.full(50, 0.9)]
    y = np.r_[np.zeros(100, int), np.ones(100, int)]
    t = G.precision_guarantee({"v": pd.DataFrame({"score_v": s, "label": y})}, 0.1, 0.5, 0.2, 0.1, 10, 0.5, 0).iloc[0]
    assert t.supported_kept_catch_pac == 0.5


def test_the_realised_miss_on_transfer_passes_a_score_at_exactly_tau():
    """tau = 0.19 (as above); the hard set's unsupported 0.19, 0.19, 0.5, 0.5: a score equal to tau is flagged,
    so the realised miss is 2 of 4."""
    cal = frame(np.r_[np.round(np.arange(1, 21) * 0.01, 2), np.full(10, 0.9)], np.r_[np.zeros(20), np.ones(10)])
    hard = frame([0.19, 0.19, 0.5, 0.5, 0.95, 0.95], [0, 0, 0, 0, 1, 1])
    t = G.shift_alarm({"v": cal}, {"v": hard}, 0.1, [0.5], streams=4, length=10, seed=0, mixture=False)
    labels = t[(t.setting == "transfer") & t.alarm.str.startswith("labels")].iloc[0]
    assert labels.realised_miss == 0.5


def test_label_test_counts_match_the_library_class_and_scipy_post_by_post():
    """The table's draws regenerated from its seed: per post, the e-process is MissRateTest after the post's labels
    (all of them, not its first), and the fixed-n test is scipy's one-sided binomial test P(X >= k) at every post;
    the power row's median is over the streams that voided."""
    from scipy.stats import binomtest

    from citebound.calibration.eprocess import MissRateTest

    alpha, delta, draws, batchings = 0.1, 0.1, 60, [(8, 5), (25, 1)]
    t = G.label_test(alpha, delta, batchings, draws, seed=11)
    rng = G.seeded_rng(11)
    for posts, size in batchings:
        paths = (rng.random((draws, posts * size)) < alpha).astype(int)
        e = naive = 0
        for p in paths:
            m = MissRateTest(alpha, delta)
            rejected = False
            for j in range(posts):
                m.add(int(p[j * size:(j + 1) * size].sum()), size)
                k, n = int(p[:(j + 1) * size].sum()), (j + 1) * size
                rejected |= binomtest(k, n, alpha, alternative="greater").pvalue < delta
            e += m.void
            naive += rejected
        rows = t[(t.posts == posts) & (t.labels_per_post == size) & (t.true_miss_rate == alpha)].set_index("test")
        assert rows.loc["e-process (anytime-valid)", "voids"] == e
        assert rows.loc["fixed-n binomial at every post", "voids"] == naive and naive > e
    total = max(p * s for p, s in batchings)
    at = []
    for p in (rng.random((draws, total)) < 2 * alpha).astype(int):
        m = MissRateTest(alpha, delta)
        for x in p:
            m.add(int(x), 1)
        at.append(m.void_after or 0)
    at = np.asarray(at)
    power = t[t.true_miss_rate == 2 * alpha].iloc[0]
    assert 0 < (at > 0).sum() < draws  # some streams never void in 40 labels: the median must leave them out
    assert power.voids == (at > 0).sum() and power.median_labels_to_void == np.median(at[at > 0])


def test_certified_betas_empirical_rates_are_the_populations_at_its_tau():
    """Classes that overlap (unsupported scores uniform on 0..0.6, supported on 0.4..1, 300 each): at the row's
    tau both rates are above 0, and each is the share counted here: unsupported above tau, supported at or under."""
    rng = np.random.default_rng(4)
    neg, pos = rng.uniform(0, 0.6, 300), rng.uniform(0.4, 1.0, 300)
    s, y = np.r_[neg, pos], np.r_[np.zeros(300, int), np.ones(300, int)]
    row = G.certified_beta({"v": frame(s, y)}, [0.1], 0.1).iloc[0]
    assert row.tau is not None and (row.n_unsupported, row.n_supported) == (300, 300)
    miss, flag = (neg > row.tau).mean(), (pos <= row.tau).mean()
    assert 0 < miss <= 0.1 and flag > 0
    assert (row.empirical_miss_at_tau, row.empirical_false_flag_at_tau) == (miss, flag)


def test_the_tables_count_each_class_by_its_own_label():
    """3 unsupported and 5 supported labels (unequal, so a swapped class counts 5 and 3); too few to certify."""
    s, y = np.array([0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 0.95]), np.array([0, 0, 0, 1, 1, 1, 1, 1])
    row = G.certified_beta({"v": frame(s, y)}, [0.1], 0.1).iloc[0]
    assert (row.n_unsupported, row.n_supported, row.certified_beta) == (3, 5, None)
    t = G.ltt_violations({"v": frame(s, y)}, 0.1, [0.1], 0.1, 3, 0.5, seed=0).iloc[0]
    assert (t.n_unsupported, t.n_population, t.n_cal) == (3, 8, 4)


@pytest.mark.parametrize("scores,lo,hi", [([0.2, 0.7], 0.0, 1.0), ([-2.3, 0.5], -3.0, 1.0), ([0.2, 3.4], 0.0, 4.0),
                                          ([-0.5, 1.5], -1.0, 2.0), ([0.0, 1.0], 0.0, 1.0)])
def test_the_grid_is_0_to_1_widened_to_whole_numbers_around_a_scale_outside_it(scores, lo, hi):
    g = G.grid_for(np.array(scores))
    assert (g[0], g[-1], len(g)) == (lo, hi, 201) and g[100] == pytest.approx((lo + hi) / 2)


def test_the_alarm_rows_count_the_streams_that_alarmed_and_their_delays(monkeypatch):
    """A monitor that alarms on the streams of odd seed b, at step b + 1: of 5 streams, 2 alarm (b = 1, 3) in each
    setting, a rate of 2 / 5 with scipy's Clopper-Pearson interval; the transfer delays are 2 and 4 (median 3, 90th
    percentile 2 + 0.9 * 2 = 3.8). 41 calibration scores: the exchangeable reference is 20 of them, the stream 21."""
    class OddAlarms:
        def __init__(self, reference, delta, seed):
            self.alarm_at = seed + 1 if seed % 2 else None

        def update(self, stream):
            return "alarm" if self.alarm_at else "ok"

    monkeypatch.setattr(G, "DriftMonitor", OddAlarms)
    s = np.random.default_rng(3).random(41)
    cal = frame(s, (np.arange(41) % 2).astype(int))
    hard = frame([0.1, 0.5, 0.6, 0.7, 0.95], [0, 0, 0, 0, 1])
    out = G.monitor_alarms({"v": cal}, {"v": hard}, 0.1, 0.1, 5, seed=3).set_index("setting")
    lo, hi = beta_dist.ppf(0.025, 2, 4), beta_dist.ppf(0.975, 3, 3)
    for setting in ("exchangeable", "transfer"):
        row = out.loc[setting]
        assert (row["alarms"], row["alarm_rate"]) == (2, 0.4), setting
        assert row["ci_low"] == pytest.approx(lo, abs=1e-9) and row["ci_high"] == pytest.approx(hi, abs=1e-9)
    ex, tr = out.loc["exchangeable"], out.loc["transfer"]
    assert (ex["reference"], ex["stream_length"], tr["reference"], tr["stream_length"]) == (20, 21, 41, 5)
    assert isinstance(ex["reference"], (int, np.integer)) and isinstance(ex["stream_length"], (int, np.integer))
    assert (tr["median_delay"], tr["p90_delay"]) == (3.0, pytest.approx(3.8))


def test_the_precision_rows_rate_and_interval_are_over_every_draw(monkeypatch):
    """A tau whose population FDR is above q is certified in every third draw (10 of 30) and nothing in the rest:
    10 violations, a rate of 10 / 30, scipy's Clopper-Pearson interval for 10 of 30, a certified share of 1 / 3 and
    the mean FDR at the deployed tau that tau's."""
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.9, 0.95] * 20)
    y = np.array([0, 0, 1, 0, 1, 1] * 20)
    grid = G.grid_for(s)
    fdr = G.population_fdr(*G.population_risks(s, y, grid), 0.8)
    high = int(np.flatnonzero(fdr > 0.1)[0])
    calls = []

    def every_third(cs, cy, g, delta, share_min):
        calls.append(1)
        out = np.ones(len(g))
        if len(calls) % 3 == 0:
            out[high] = 0.0
        return out

    monkeypatch.setattr(G, "fdr_bounds", every_third)
    t = G.precision_guarantee({"v": pd.DataFrame({"score_v": s, "label": y})}, 0.1, 0.8, 0.1, 0.1, 30, 0.5, 0).iloc[0]
    assert (t.draws, t.violations, t.certified_share) == (30, 10, pytest.approx(1 / 3))
    assert t.violation_rate == pytest.approx(1 / 3)
    assert t.ci_low == pytest.approx(beta_dist.ppf(0.025, 10, 21), abs=1e-9)
    assert t.ci_high == pytest.approx(beta_dist.ppf(0.975, 11, 20), abs=1e-9)
    assert t.mean_fdr_at_tau == pytest.approx(fdr[high]) and not t.within_delta


@pytest.mark.parametrize("alpha,beta,which", [(0.1, 0.9, "miss"), (0.9, 0.1, "flag")])
def test_a_certified_tau_whose_rate_is_exactly_its_bound_keeps_the_promise(monkeypatch, alpha, beta, which):
    """Ten unsupported citations (nine at 0.1, one at 0.8) and ten supported (one at 0.1, nine at 0.9): at tau
    0.1 the population's miss rate is 1/10 (the 0.8) and its false-flag rate 1/10 (the supported 0.1). Certified in
    every draw with that rate's bound at exactly 0.1, tau keeps the promise (a rate above the bound breaks it, not
    one equal to it): no violation."""
    from types import SimpleNamespace

    s = np.array([0.1] * 9 + [0.8] + [0.1] + [0.9] * 9)
    y = np.array([0] * 10 + [1] * 10)
    grid = G.grid_for(s)
    miss, flag = G.population_risks(s, y, grid)
    (at,) = np.flatnonzero(np.isclose(grid, 0.1))
    assert (miss[at], flag[at]) == (0.1, 0.1)
    monkeypatch.setattr(G, "calibrate_two_sided",
                        lambda *a, **kw: SimpleNamespace(certified=[float(grid[at])], tau=float(grid[at])))
    t = G.ltt_violations({"v": pd.DataFrame({"score_v": s, "label": y})}, alpha, [beta], 0.1, 10, 0.5, 0).iloc[0]
    assert (t.certified_share, t.violations) == (1.0, 0), which


def test_an_unsupported_score_at_exactly_a_groups_tau_is_caught_not_missed(monkeypatch):
    """Every calibration deploys tau = 0.5 (the pooled one and the group's own); every unsupported score is exactly
    0.5 (flagged: score <= tau), every supported one 0.9: each half's miss rate is 0, pooled and per group, so no
    split's miss is above alpha = 0 (a miss equal to alpha is not above it); nothing is falsely flagged."""
    from types import SimpleNamespace

    monkeypatch.setattr(G, "calibrate_two_sided", lambda *a, **kw: SimpleNamespace(tau=0.5, certified=[0.5]))
    big = frame([0.5] * 20 + [0.9] * 20, [0] * 20 + [1] * 20, "big")
    out = G.group_vs_pooled({"v": big}, "group", 0.0, 0.2, 0.1, 6, seed=1, min_group=10).set_index("group")
    row = out.loc["big"]
    assert (row.pooled_miss, row.group_miss, row.pooled_false_flag, row.group_false_flag) == (0.0, 0.0, 0.0, 0.0)
    assert (row.pooled_share_miss_above_alpha, row.group_share_miss_above_alpha) == (0.0, 0.0)


def test_a_group_with_one_class_only_has_that_classs_rate_and_no_other(monkeypatch):
    """tau = 0.5 everywhere; group "neg" holds 12 unsupported citations only (0.2 and 0.7 alternating: half missed,
    above tau), group "pos" 12 supported only (0.3 and 0.9: half falsely flagged). Each test half reads the rate its
    class gives and NaN for the class it lacks (never the other class's rate in its place)."""
    from types import SimpleNamespace

    monkeypatch.setattr(G, "calibrate_two_sided", lambda *a, **kw: SimpleNamespace(tau=0.5, certified=[0.5]))
    neg = frame([0.2, 0.7] * 6, [0] * 12, "neg")
    pos = frame([0.3, 0.9] * 6, [1] * 12, "pos")
    out = G.group_vs_pooled({"v": pd.concat([neg, pos])}, "group", 0.1, 0.2, 0.1, 8, seed=2,
                            min_group=10).set_index("group")
    rng = np.random.default_rng(2)
    halves = [rng.random(24) < 0.5 for _ in range(8)]
    miss = np.mean([np.mean(np.array([0.2, 0.7] * 6)[~h[:12]] > 0.5) for h in halves if (~h[:12]).any()])
    flag = np.mean([np.mean(np.array([0.3, 0.9] * 6)[~h[12:]] <= 0.5) for h in halves if (~h[12:]).any()])
    assert out.loc["neg", "pooled_miss"] == pytest.approx(miss) and np.isnan(out.loc["neg", "pooled_false_flag"])
    assert out.loc["pos", "group_false_flag"] == pytest.approx(flag) and np.isnan(out.loc["pos", "group_miss"])
    assert (out.loc["neg", "n_unsupported"], out.loc["pos", "n_unsupported"]) == (12, 0)


@pytest.mark.parametrize("hard_class", [0, 1])
def test_the_robust_alarm_on_the_transfer_set_is_referred_to_each_class_apart(hard_class):
    """200 unsupported calibration scores on 0..0.5 and 200 supported on 0.5..1; a hard set of 400 drawn like one
    class only is a mixture of the reference (share 0 or 1), so the robust alarm stays quiet in (nearly) every
    stream; referred to one class twice it fires in all ten. The realised miss of a hard set of unsupported
    citations only is its share above the conformal tau (k = ceil(201 * 0.8) = 161st of the 200)."""
    rng = np.random.default_rng(0)
    neg, pos = rng.uniform(0, 0.5, 200), rng.uniform(0.5, 1, 200)
    cal = frame(np.r_[neg, pos], [0] * 200 + [1] * 200)
    hs = rng.uniform(0, 0.5, 400) if hard_class == 0 else rng.uniform(0.5, 1, 400)
    t = G.shift_alarm({"v": cal}, {"v": frame(hs, [hard_class] * 400)}, 0.1, [0.5], streams=10, length=20, seed=0,
                      mixture=False, alpha=0.2).set_index(["setting", "alarm"])
    robust = t.loc[("transfer", "label-shift robust")]
    assert robust.alarms <= 2
    if hard_class == 0:
        assert robust.realised_miss == np.mean(hs > np.sort(neg)[160])
    else:
        assert np.isnan(robust.realised_miss)


@pytest.mark.parametrize("n0,n1", [(3, 5), (5, 3)])
def test_a_calibration_without_four_of_each_class_has_no_shift_rows(n0, n1):
    cal = frame(np.r_[np.linspace(0.1, 0.4, n0), np.linspace(0.6, 0.9, n1)], [0] * n0 + [1] * n1)
    t = G.shift_alarm({"v": cal}, {"v": cal}, 0.1, [0.5], streams=3, length=5, seed=0, mixture=False)
    assert t.empty


def test_with_no_finite_tau_the_realised_miss_is_unknown_and_the_labels_never_void():
    """Four unsupported calibration scores at alpha 0.1: k = ceil(5 * 0.9) = 5 > 4, so no finite tau (everything
    flagged): the realised miss is not 0 of the hard set but unknown, and the label test has nothing to void."""
    cal = frame([0.1, 0.2, 0.3, 0.4, 0.8, 0.85, 0.9, 0.95], [0, 0, 0, 0, 1, 1, 1, 1])
    hard = frame([0.3] * 10 + [0.9] * 5, [0] * 10 + [1] * 5)
    t = G.shift_alarm({"v": cal}, {"v": hard}, 0.1, [0.5], streams=4, length=10, seed=0, mixture=False, alpha=0.1)
    tr = t[t.setting == "transfer"].set_index("alarm")
    assert tr.realised_miss.isna().all()
    assert tr.loc["labels (anytime-valid e-process)", "alarms"] == 0


def test_four_of_each_class_are_enough_and_a_hard_score_at_exactly_tau_is_never_a_miss():
    """Four unsupported (0.1 to 0.4) and four supported calibration scores: enough (four of each) for the shift
    alarm. At alpha 0.2 the deployed tau is the 4th of 4 (k = ceil(5 * 0.8) = 4): 0.4. Every hard unsupported score
    is exactly 0.4, flagged (score <= tau): no labelled miss, so the label e-process never voids (0 of 6 streams),
    and the realised miss is 0."""
    cal = frame([0.1, 0.2, 0.3, 0.4, 0.8, 0.85, 0.9, 0.95], [0, 0, 0, 0, 1, 1, 1, 1])
    hard = frame([0.4] * 30 + [0.9] * 5, [0] * 30 + [1] * 5)
    t = G.shift_alarm({"v": cal}, {"v": hard}, 0.1, [0.5], streams=6, length=20, seed=0, mixture=False, alpha=0.2)
    assert set(t.setting) == {"supported share", "transfer"}
    labels = t[t.alarm.str.startswith("labels")].iloc[0]
    assert (labels.alarms, labels.alarm_rate, labels.realised_miss) == (0, 0.0, 0.0)


def test_a_certified_tau_whose_population_fdr_is_exactly_q_keeps_the_precision_promise(monkeypatch):
    """q set to the population FDR of one tau (strictly between 0 and 1), that tau certified in every draw: an
    FDR equal to q keeps the promise (above q breaks it), so no draw is a violation."""
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.9, 0.95] * 20)
    y = np.array([0, 0, 1, 0, 1, 1] * 20)
    grid = G.grid_for(s)
    fdr = G.population_fdr(*G.population_risks(s, y, grid), 0.8)
    t = int(np.flatnonzero((fdr > 0) & (fdr < 1))[0])

    def only_t(cs, cy, g, delta, share_min):
        out = np.ones(len(g))
        out[t] = 0.0
        return out

    monkeypatch.setattr(G, "fdr_bounds", only_t)
    row = G.precision_guarantee({"v": pd.DataFrame({"score_v": s, "label": y})}, float(fdr[t]), 0.8, 0.1, 0.1, 12,
                                0.5, 0).iloc[0]
    assert (row.certified_share, row.violations) == (1.0, 0)
