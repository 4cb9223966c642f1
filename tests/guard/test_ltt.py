"""Learn-then-Test two-sided calibration: binomial tails by hand, the guarantee in a seeded simulation,
and a planted off-by-one in the p-value that the simulation catches."""
import math

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from citebound.calibration import ltt


def tail(k, n, r):
    return sum(math.comb(n, j) * r ** j * (1 - r) ** (n - j) for j in range(k + 1))


@pytest.mark.parametrize("k,n,r", [(0, 5, 0.1), (1, 10, 0.3), (3, 20, 0.25), (7, 7, 0.5), (2, 30, 0.05)])
def test_binomial_p_is_the_lower_tail_by_hand(k, n, r):
    assert ltt.binomial_p(k, n, r) == pytest.approx(tail(k, n, r), rel=1e-12)


def test_a_small_case_by_hand():
    # 10 unsupported at 0.05..0.50, 10 supported at 0.55..1.00; grid {0.5, 0.52}; alpha = 0.3, beta = 0.3
    s = np.r_[np.arange(1, 11) * 0.05, 0.5 + np.arange(1, 11) * 0.05]
    y = np.r_[np.zeros(10, int), np.ones(10, int)]
    r = ltt.calibrate_two_sided(s, y, 0.3, 0.3, 0.1, grid=[0.5, 0.52])
    # at 0.5: no unsupported passes (k0 = 0), no supported flagged (k1 = 0): p = 0.7 ** 10 = 0.0282 <= 0.1 / 2
    assert 0.7 ** 10 <= 0.05 and r.certified == [0.5, 0.52] and r.tau == 0.5
    # what the card shows of it: the certified taus from the lowest to the highest, and how many
    assert r.to_dict()["certified_tau_interval"] == [0.5, 0.52] and r.to_dict()["n_certified"] == 2
    # at alpha = beta = 0.2: p = 0.8 ** 10 = 0.107 > 0.05: nothing certified; the best beta at alpha = 0.3 is the
    # Clopper-Pearson bound for 0 of 10 at level 0.05: 1 - 0.05 ** (1 / 10)
    r = ltt.calibrate_two_sided(s, y, 0.2, 0.2, 0.1, grid=[0.5, 0.52])
    assert r.certified == [] and r.tau is None and "no threshold is certified" in r.rule
    r2 = ltt.calibrate_two_sided(s, y, 0.3, 0.01, 0.1, grid=[0.5, 0.52])
    # the hint is the smallest 0.01 step the same procedure certifies: the CP bound 0.2589, rounded up
    assert 1 - 0.05 ** (1 / 10) == pytest.approx(0.2589, abs=1e-4) and r2.best_beta_at_alpha == 0.26
    assert ltt.calibrate_two_sided(s, y, 0.3, 0.26, 0.1, grid=[0.5, 0.52]).certified
    assert not ltt.calibrate_two_sided(s, y, 0.3, 0.25, 0.1, grid=[0.5, 0.52]).certified
    assert "--beta 0.26" in r2.rule and "cheaper fix" in r2.rule
    assert r2.to_dict()["certified_tau_interval"] == [None, None]


def test_fixed_sequence_stops_at_the_first_failure():
    # the certify step by hand: order 3, 0, 1, 2 with p 0.01, 0.02, 0.5, 0.03: stops at 0.5
    p = np.array([0.02, 0.5, 0.03, 0.01])
    assert ltt.certify(p, "fixed_sequence", 0.1, np.array([3, 0, 1, 2])).tolist() == [True, False, False, True]
    # Holm at delta 0.1 over 4: 0.01 <= 0.025, 0.02 <= 0.0333, 0.03 <= 0.05, 0.5 > 0.1
    assert ltt.certify(p, "holm", 0.1).tolist() == [True, False, True, True]
    assert ltt.certify(p, "bonferroni", 0.1).tolist() == [True, False, False, True]  # 0.03 > 0.025


@pytest.mark.parametrize("method", ["bonferroni", "holm", "fixed_sequence"])
def test_the_hint_names_a_beta_the_same_method_certifies(method):
    rng = np.random.default_rng(2)
    s = np.r_[rng.beta(2, 5, 300), rng.beta(4, 3, 120)]  # overlapping classes: a tight beta is out of reach
    y = np.r_[np.zeros(300, int), np.ones(120, int)]
    r = ltt.calibrate_two_sided(s, y, 0.1, 0.05, 0.1, method=method)
    assert r.certified == [] and r.best_beta_at_alpha is not None
    b = r.best_beta_at_alpha
    assert ltt.calibrate_two_sided(s, y, 0.1, b, 0.1, method=method).certified
    assert not ltt.calibrate_two_sided(s, y, 0.1, round(b - 0.01, 2), 0.1, method=method).certified
    # and the other way, asked at alpha 0.05 and beta 0.2 (alpha and beta unequal, each recorded as given): the
    # smallest alpha these labels certify at beta 0.2, by the same definition
    r = ltt.calibrate_two_sided(s, y, 0.05, 0.2, 0.1, method=method)
    assert r.certified == [] and (r.to_dict()["alpha"], r.to_dict()["beta"]) == (0.05, 0.2)
    a = r.best_alpha_at_beta
    assert a is not None and ltt.calibrate_two_sided(s, y, a, 0.2, 0.1, method=method).certified
    assert not ltt.calibrate_two_sided(s, y, round(a - 0.01, 2), 0.2, 0.1, method=method).certified


def test_split_fixed_sequence_certifies_where_the_middle_start_could_not():
    # scores all above 0.5 (as embedding's are): a sequence starting at the grid's middle fails at once
    rng = np.random.default_rng(3)
    s = np.r_[0.5 + 0.5 * rng.beta(2, 6, 1500), 0.5 + 0.5 * rng.beta(6, 2, 500)]
    y = np.r_[np.zeros(1500, int), np.ones(500, int)]
    r = ltt.calibrate_two_sided(s, y, 0.1, 0.5, 0.1, method="fixed_sequence")
    assert r.certified and min(r.certified) > 0.5


def test_holm_rejects_at_least_what_bonferroni_does():
    rng = np.random.default_rng(4)
    for _ in range(20):
        p = rng.random(50) ** 4
        assert (ltt.certify(p, "holm", 0.1) >= ltt.certify(p, "bonferroni", 0.1)).all()


@pytest.mark.parametrize("method,mapie_method", [("bonferroni", "bonferroni"), ("holm", "bonferroni_holm"),
                                                 ("fixed_sequence", "fixed_sequence")])
def test_the_family_wise_step_agrees_with_mapie(method, mapie_method):
    """MAPIE 1.6's control_fwer on the same p-values rejects the same hypotheses (its fixed sequence walks the
    given order: we hand it the p-values in our order). MAPIE computes its own LTT p-values with
    Hoeffding-Bentkus bounds by default; ours are exact binomial ones, so the comparison is of the
    multiple-testing step on identical p-values."""
    risk_control = pytest.importorskip("mapie.risk_control.fwer_control", reason="MAPIE 1.6 (the [test] extra)")
    rng = np.random.default_rng(5)
    for trial in range(30):
        p = np.minimum(rng.random(80) ** rng.uniform(1, 8), 1.0)
        order = rng.permutation(80)
        ours = ltt.certify(p, method, 0.1, order)
        if method == "fixed_sequence":
            got = risk_control.control_fwer(p[order], 0.1, mapie_method)
            theirs = np.zeros(80, bool)
            theirs[order[got]] = True
        else:
            theirs = np.zeros(80, bool)
            theirs[risk_control.control_fwer(p, 0.1, mapie_method)] = True
        assert (ours == theirs).all(), (method, trial)


BOUNDARY = float(beta_dist.isf(0.102, 2, 5))  # the tau whose true miss rate is 0.102, just past alpha = 0.1


def test_the_guarantee_holds_in_a_seeded_simulation():
    """One tau whose true miss rate is just past alpha: it is (wrongly) certified in at most delta of the draws."""
    freq, _ = ltt.violation_frequency(0.1, 0.99, 0.1, 200, 50, 4000, seed=3, grid=[BOUNDARY])
    assert freq <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 4000), freq
    freq_grid, certified = ltt.violation_frequency(0.15, 0.3, 0.2, 300, 300, 500, seed=4)
    assert freq_grid <= 0.2 and certified > 400  # a realistic grid: certified nearly always, rarely wrongly


def test_an_off_by_one_in_the_p_value_breaks_the_guarantee(monkeypatch):
    real = ltt.binomial_ps
    monkeypatch.setattr(ltt, "binomial_ps", lambda k, n, rate: real(np.asarray(k) - 1, n, rate))
    freq, _ = ltt.violation_frequency(0.1, 0.99, 0.1, 200, 50, 4000, seed=3, grid=[BOUNDARY])
    assert freq > 0.1 + 3 * math.sqrt(0.1 * 0.9 / 4000), freq


def test_calibrate_beta_writes_the_two_sided_calibration(tmp_path, capsys):
    import json
    from contextlib import redirect_stdout
    from io import StringIO

    from citebound.cli.main import main

    rng = np.random.default_rng(0)
    rows = [{"score": float(x), "label": 0} for x in rng.beta(2, 5, 300)] + \
           [{"score": float(x), "label": 1} for x in rng.beta(5, 2, 300)]
    src = tmp_path / "s.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    buf = StringIO()
    with redirect_stdout(buf):
        assert main(["calibrate", "--scores", str(src), "--verifier-id", "x", "--alpha", "0.15", "--beta", "0.3",
                     "--delta", "0.2"]) == 0
    cal = json.loads(buf.getvalue())
    want = ltt.calibrate_two_sided([r["score"] for r in rows], [r["label"] for r in rows], 0.15, 0.3, 0.2)
    assert cal["tau"] == want.tau is not None and cal["two_sided"]["n_certified"] == len(want.certified)
    assert cal["two_sided"]["n_unsupported"] == 300 and "false-flag rate" in cal["marginal_guarantee"]
    buf = StringIO()
    with redirect_stdout(buf):
        main(["calibrate", "--scores", str(src), "--verifier-id", "x", "--alpha", "0.01", "--beta", "0.01"])
    none = json.loads(buf.getvalue())
    assert none["tau"] is None and "no threshold is certified" in none["no_tau_reason"]
