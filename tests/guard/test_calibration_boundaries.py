"""The calibration's statistics at their boundaries, each against an independent computation: binomial tails
against scipy, the conformal and naive ranks' order statistics, the coverage simulation's ranks at exactly n_cal,
on tied scores and with alpha and delta apart, the plain drift alarm at exactly 1/delta (Ville's level for one
martingale, recomputed here from the definition), the robust one at exactly 2/delta and the label test at exactly
1/delta, and the precision and calibration-file bounds on their parameters (the PAC rank's exhaustive search,
Wilson against statsmodels and the bootstrap kappa against scikit-learn are tests/guard/test_conformal_stats.py's
and test_pinned.py's, the robust alarm's simulation against its class test_eprocess.py's); on the guard's side, the
stream's hold at its last '<', an answer of exactly max_answer_chars, a structured citation of passage 0, an
unreadable bracketed marker's rewrite, the lexical verdict at its threshold and a label file from two samples."""
from __future__ import annotations

import math

import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")


# --- binomial tails ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k,n,p", [(0, 1, 0.5), (0, 5, 0.1), (2, 5, 0.3), (4, 5, 0.9), (3, 40, 0.1), (30, 40, 0.7)])
def test_the_upper_tail_is_strictly_above_k(k, n, p):
    from citebound.calibration.binomial import binom_sf

    assert binom_sf(k, n, p) == pytest.approx(scipy_stats.binom.sf(k, n, p), rel=1e-9, abs=1e-15)


def test_past_the_exact_range_the_cdf_is_right_at_the_windows_first_k():
    """n = 200,000 is past EXACT_MAX_N: P(X <= k) sums a window around the mean. At p = 1e-4 (mean 20) the
    window starts at k = 0, where P(X <= 0) = (1 - p)^n, about 2e-9; it and the next k are scipy's."""
    from citebound.calibration.binomial import EXACT_MAX_N, _span, binom_cdf

    n, p = 200_000, 1e-4
    assert n > EXACT_MAX_N and _span(n, p)[0] == 0
    assert binom_cdf(0, n, p) == pytest.approx((1 - p) ** n, rel=1e-6)
    for k in (0, 1, 20):
        assert binom_cdf(k, n, p) == pytest.approx(scipy_stats.binom.cdf(k, n, p), rel=1e-6), k
    np.testing.assert_allclose(binom_cdf(np.array([0, 1]), n, p), scipy_stats.binom.cdf([0, 1], n, p), rtol=1e-6)


# --- ranks ----------------------------------------------------------------------------------------------------------

def brute_pac_rank(n, alpha, delta):
    """The smallest k in 1..n with P(Bin(n, 1 - alpha) <= k - 1) >= 1 - delta (scipy), else n + 1."""
    for k in range(1, n + 1):
        if scipy_stats.binom.cdf(k - 1, n, 1 - alpha) >= 1 - delta:
            return k
    return n + 1


def test_conformal_and_naive_thresholds_are_their_ranks_order_statistics():
    """Ten scores 0.1..1.0, alpha 0.2: conformal k = ceil(11 * 0.8) = 9, tau 0.9; naive k = ceil(10 * 0.8) = 8,
    0.8; alpha 0.05: conformal k = ceil(10.45) = 11 > 10 (+inf), naive k = 10, 1.0."""
    from citebound.calibration.conformal import conformal_threshold, naive_threshold, tau_warnings_silenced

    s = [round(0.1 * i, 1) for i in range(10, 0, -1)]  # unsorted on purpose
    assert conformal_threshold(s, 0.2) == 0.9
    assert naive_threshold(s, 0.2) == 0.8
    with tau_warnings_silenced():
        assert conformal_threshold(s, 0.05) == math.inf
    assert naive_threshold(s, 0.05) == 1.0


def test_coverage_simulation_at_a_rank_of_exactly_n_cal_uses_the_largest_calibration_score():
    """n_cal = 9, alpha = 0.1: the conformal rank is ceil(10 * 0.9) = 9 = n_cal, so tau is each split's largest
    calibration score (finite), never +inf."""
    from citebound.calibration.conformal import conformal_rank, split_coverage

    neg = np.arange(20) / 20
    assert conformal_rank(9, 0.1) == 9
    out = split_coverage(neg, np.array([0.99]), 9, [0.1], 50, np.random.default_rng(1))
    assert np.isfinite(out["tau"]).all()
    assert set(np.round(out["tau"][0] * 20).astype(int)) <= set(range(20))
    assert (out["conformal"][0] < 1).any()


def test_coverage_simulation_flags_a_held_out_score_tied_with_tau():
    """Every unsupported score is 0.5: whatever the split, tau is 0.5 and every held-out score (0.5 <= 0.5) is
    flagged, so each coverage is 1; the supported 0.5 is flagged too."""
    from citebound.calibration.conformal import pac_rank, split_coverage

    assert pac_rank(30, 0.2, 0.1) <= 30
    out = split_coverage(np.full(40, 0.5), np.array([0.5, 0.9]), 30, [0.2], 5, np.random.default_rng(0), delta=0.1)
    for key in ("conformal", "naive", "pac"):
        assert (out[key] == 1.0).all(), key
    assert (out["flag_supported"] == 0.5).all()


def test_coverage_simulation_pac_rank_takes_alpha_then_delta():
    """alpha 0.2 and delta 0.05 differ: each split's PAC coverage is the share of its held-out scores at or below
    its calibration's order statistic of rank pac_rank(n_cal, 0.2, 0.05) (brute force), the splits redrawn here
    from the same generator."""
    from citebound.calibration.conformal import split_coverage

    n, n_cal, splits = 60, 40, 20
    neg = np.random.default_rng(5).permutation(n) / n
    out = split_coverage(neg, np.array([]), n_cal, [0.2], splits, np.random.default_rng(3), delta=0.05)
    k = brute_pac_rank(n_cal, 0.2, 0.05)
    assert k != brute_pac_rank(n_cal, 0.05, 0.2)
    perm = np.random.default_rng(3).random((splits, n)).argsort(axis=1)
    want = [np.mean(neg[p[n_cal:]] <= np.sort(neg[p[:n_cal]])[k - 1]) for p in perm]
    np.testing.assert_allclose(out["pac"][0], want)


# --- the alarms -------------------------------------------------------------------------------------------------------

def mixture_log_martingale(calibration, stream, thetas):
    """The simple-mixture power martingale of the smoothed conformal p-values, from the definition in
    citebound/calibration/monitor.py's docstring (100 eps at the bins' midpoints), after each score."""
    seen, logs, out = sorted(calibration), np.zeros(100), []
    eps = (np.arange(100) + 0.5) / 100
    for s, th in zip(stream, thetas):
        greater = sum(x > s for x in seen)
        equal = sum(x == s for x in seen)
        p = (greater + th * (equal + 1)) / (len(seen) + 1)
        logs = logs + np.log(eps) + (eps - 1) * math.log(p)
        out.append(math.log(np.mean(np.exp(logs))))
        seen = sorted(seen + [s])
    return out


def test_the_plain_drift_alarm_fires_when_the_martingale_first_reaches_one_over_delta():
    """delta is chosen so that 1/delta sits 10% below the martingale at the step where it first crosses: there
    it is below 2/delta, so an alarm at 2/delta would come later (or never)."""
    from citebound.calibration.monitor import DriftMonitor

    cal = list(np.linspace(0.0, 0.5, 40))
    stream, thetas = [0.9] * 12, [0.5] * 12
    logm = mixture_log_martingale(cal, stream, thetas)
    j = next(i for i, v in enumerate(logm) if v > math.log(20))  # a martingale past 20
    assert logm[j - 1] < logm[j]
    delta = 1 / (0.9 * math.exp(logm[j]))
    assert math.exp(logm[j - 1]) < 1 / delta < math.exp(logm[j]) < 2 / delta
    m = DriftMonitor(cal, delta=delta)
    assert m.robust is None
    m.update(stream, thetas)
    assert (m.state, m.alarm_at) == ("suspect", j + 1)
    assert m.log_m == pytest.approx(logm[-1], rel=1e-9)


def delta_at(target: float) -> float:
    """The delta whose log(1/delta) is ``target`` bit for bit, found one floating-point step at a time."""
    delta = 1.0 / math.exp(target)
    for _ in range(100):
        v = math.log(1.0 / delta)
        if v == target:
            break
        delta = math.nextafter(delta, 0.0 if v < target else 1.0)
    return delta

def test_the_plain_drift_alarm_fires_when_the_martingale_equals_one_over_delta_exactly():
    """Ville's inequality bounds P(the martingale ever reaches 1/delta): reaching is >=, so a martingale exactly at
    1/delta is an alarm. delta is chosen, one floating-point step at a time, so that log(1/delta) is bit for bit
    the monitor's log martingale at its third step: the alarm comes at that step, not at the next."""
    from citebound.calibration.monitor import DriftMonitor

    cal = list(np.linspace(0.0, 0.5, 40))
    stream, thetas = [0.9] * 12, [0.5] * 12
    probe = DriftMonitor(cal, delta=1e-300)  # never alarms: its log martingale, step by step
    steps = []
    for x, t in zip(stream, thetas):
        probe.update([x], [t])
        steps.append(probe.log_m)
    target = steps[2]
    delta = delta_at(target)
    assert math.log(1.0 / delta) == target and 0 < delta < 1
    m = DriftMonitor(cal, delta=delta)
    m.update(stream, thetas)
    assert (m.state, m.alarm_at) == ("suspect", 3)



def test_the_robust_drift_alarm_fires_when_its_smallest_martingale_equals_two_over_delta_exactly():
    """The robust alarm's level is 2/delta, and reaching it is an alarm: a smallest martingale exactly at 2/delta
    fires at that step. Its martingale depends on delta (each share's allowance for the references' error), so
    delta cannot be chosen from a probe run as the plain alarm's is. Instead delta is fixed and the tenth score's
    tie-breaking uniform is chosen by bisection down to one floating-point step, so that the smallest
    log martingale at step 10 is bit for bit log(2/delta): the class, the monitor and the simulation's vectorised
    form each alarm at step 10, not at 11."""
    from citebound.calibration.eprocess import ShiftRobustAlarm, alarm_times
    from citebound.calibration.monitor import DriftMonitor

    s0, s1 = list(np.linspace(0.0, 0.4, 1000)), list(np.linspace(0.3, 0.7, 250))
    delta, k = 0.11737300483699277, 10

    def thetas(th):
        return [0.5] * (k - 1) + [th] + [0.5] * 3

    def log_ms(th):
        a = ShiftRobustAlarm(s0, s1, delta)
        out = []
        for x, t in zip([0.95] * (k + 3), thetas(th)):
            a.update([x], [t])
            out.append(float(a.log_martingales().min()))
        return out

    bound = math.log(2 / delta)
    lo, hi = 0.0, 1.0  # a smaller uniform, a smaller p-value, a larger martingale
    assert log_ms(lo)[k - 1] > bound > log_ms(hi)[k - 1]
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if log_ms(mid)[k - 1] >= bound else (lo, mid)
    th = lo  # the largest uniform whose martingale reaches the bound: the one nearest it from above
    ms = log_ms(th)
    assert ms[k - 1] == bound and max(ms[:k - 1]) < bound < ms[k]
    a = ShiftRobustAlarm(s0, s1, delta)
    a.update([0.95] * (k + 3), thetas(th))
    assert (a.suspect, a.alarm_at) == (True, k)
    m = DriftMonitor(s0 + s1, delta=delta, by_class=(s0, s1))
    m.update([0.95] * (k + 3), thetas(th))
    assert (m.state, m.alarm_at) == ("suspect", k)
    at = alarm_times(s0, s1, np.array([[0.95] * (k + 3)]), np.array([thetas(th)]), delta)
    assert at.tolist() == [k]


def test_the_label_test_turns_void_when_its_wealth_equals_one_over_delta_exactly():
    """The label e-process is void once its wealth reaches 1/delta (Ville), so a wealth exactly at 1/delta is void.
    Its wealth does not depend on delta: delta is chosen one floating-point step at a time so that log(1/delta) is
    bit for bit the log wealth after two misses of two (alpha 0.1); the test turns void at the second label, not at
    the third."""
    from citebound.calibration.eprocess import MissRateTest

    probe = MissRateTest(0.1, 1e-300)
    probe.add(1, 1)
    probe.add(1, 1)
    target = probe.log_value
    assert not probe.void and 3 < target < 4  # by the bet written out: about 35.7 (test_eprocess.py)
    delta = delta_at(target)
    assert math.log(1.0 / delta) == target
    t = MissRateTest(0.1, delta)
    assert t.add(1, 1) is False and t.add(1, 1) is True and t.void_after == 2
    later = MissRateTest(0.1, math.nextafter(delta, 0.0))  # 1/delta one step above the wealth: not yet
    assert later.add(1, 1) is False and later.add(1, 1) is False and later.add(1, 1) is True

def test_the_label_tests_wealth_is_the_bet_written_out():
    """lam = f / alpha: a miss multiplies each bet by 1 + lam (1 - alpha), a catch by 1 - lam alpha. alpha 0.2,
    f 0.5 (lam 2.5): two misses and a catch, (1 + 2.5 * 0.8)^2 (1 - 2.5 * 0.2) = 9 * 0.5 = 4.5."""
    from citebound.calibration.eprocess import log_wealth

    assert float(np.exp(log_wealth(2, 3, 0.2, [0.5])[0])) == pytest.approx(4.5)


# --- parameters ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{"q": 1.0}, {"delta": 1.0}, {"supported_share_min": 1.0}, {"q": 0.0}])
def test_precision_refuses_a_parameter_of_one_or_zero(kw):
    from citebound.calibration.precision import calibrate_precision

    args = {"q": 0.1, "delta": 0.1, "supported_share_min": 0.5} | kw
    with pytest.raises(ValueError, match=f"{next(iter(kw))} must be in \\(0, 1\\)"):
        calibrate_precision([0.1, 0.9], [0, 1], **args)


def test_a_calibration_short_of_twice_the_labels_a_finite_tau_needs_is_warned():
    """alpha 0.1 needs ceil(1 / 0.1 - 1) = 9 unsupported labels for a finite tau; 12 is fewer than 18: warned.
    18 is not."""
    from citebound.calibration.files import calibration_summary

    def warned(n_neg):
        s = list(np.linspace(0, 0.4, n_neg)) + [0.9] * 5
        y = [0] * n_neg + [1] * 5
        return any("only" in w and "unsupported examples" in w for w in calibration_summary(s, y, 0.1, 0.1, "v", "h")["warnings"])

    assert warned(12) and warned(17) and not warned(18)


def test_a_calibration_file_with_alpha_zero_is_refused():
    from citebound.calibration.files import CalibrationError, calibration_summary, read_calibration

    cal = calibration_summary(list(np.linspace(0, 0.4, 40)) + [0.9] * 5, [0] * 40 + [1] * 5, 0.1, 0.1, "v", "h")
    assert read_calibration(cal)["alpha"] == 0.1
    with pytest.raises(CalibrationError, match="'alpha' must be a number in \\(0, 1\\), got 0"):
        read_calibration(cal | {"alpha": 0})


# --- the guard's side ---------------------------------------------------------------------------------------------------

def test_a_stream_is_held_back_from_its_last_open_tag_not_its_first():
    from citebound.guarding.stream import stable_end

    # a '<' alone at the end may yet open a tag ("<b>"): held back, though an earlier '<' has its '>'
    text = "Cells <b>make</b> ATP <"
    assert stable_end(text) == len(text) - 1
    text = "Cells <b>make</b> ATP <sp"
    assert stable_end(text) == text.index("<sp")
    assert stable_end("Cells <b>make</b> ATP.") == len("Cells <b>make</b> ATP.")


def test_a_streamed_answer_of_exactly_max_answer_chars_is_taken_and_one_more_is_refused():
    from citebound.guarding.stream import SentenceHold
    from citebound.text.limits import LimitExceeded, Limits

    hold = SentenceHold(Limits(max_answer_chars=40))
    hold.feed("a" * 25)
    hold.feed("b" * 15)  # 40 in all
    with pytest.raises(LimitExceeded, match="41 characters"):
        hold.feed("c")


def test_a_structured_citation_of_passage_zero_names_passage_zero():
    from citebound.guarding.report import CitationAudit
    from citebound.guarding.structured import verdict

    a = CitationAudit(0, "Cells make ATP.", 0, "[0]", [(0, 0)], 0.9, "verified")
    assert verdict(a)["passage"] == 0
    a = CitationAudit(0, "Cells make ATP.", -1, "²", [(0, 0)], None, "unverified")
    assert verdict(a)["passage"] is None


def test_an_unreadable_bracketed_marker_is_rewritten_inside_its_bracket():
    import citebound

    text, rep = citebound.guard("Cells make ATP [1a].", ["Cells make ATP."], verifier="lexical", reattributor=None)
    assert text == "Cells make ATP [1a UNVERIFIED]."
    assert [(a.marker, a.action) for a in rep.audit] == [("[1a]", "unverified")]


# --- a verdict at its threshold, a label file's sample --------------------------------------------------------------

def test_the_lexical_verdict_holds_at_exactly_its_threshold():
    """The claim's content terms are statin, lower, ldl, cholesterol, level; the passage holds three: recall 3/5 =
    0.6, the lexical verifier's threshold, which is support (score >= threshold); 2/5 is not."""
    import citebound
    from citebound.verifiers.lexical import content_terms

    claim = "Statins lower LDL cholesterol levels."
    assert sorted(content_terms(claim)) == ["cholesterol", "ldl", "level", "lower", "statin"]
    scorer = citebound.load_scorer("lexical")
    assert scorer.cfg["threshold"] == 0.6
    ps = scorer.score([claim, claim], ["Statins lower LDL in adults.", "Statins lower blood pressure."])
    assert ps.score.tolist() == [0.6, 0.4]
    assert ps.verdict.tolist() == [True, False]


def test_labels_from_two_samples_of_different_sizes_are_refused(tmp_path, capsys):
    """One seed, two sizes (10 and 12): two samples, whose unlabelled counts cannot be told; refused with both."""
    import json

    from citebound.cli.main import main

    recs = [{"score": 0.1 * i, "label": i % 2, "sample_seed": 7, "sample_size": 10 if i < 5 else 12} for i in range(10)]
    src = tmp_path / "scores.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert main(["calibrate", "--scores", str(src), "--verifier-id", "v", "--out", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "labels from more than one sample (seeds [7], sizes [10, 12])" in err
    assert not (tmp_path / "c.json").exists()
