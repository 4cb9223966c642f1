"""The precision guarantee: its bound by hand against scipy's Clopper-Pearson, and its promise by
simulation on a population whose false-discovery rate is known in closed form."""
import numpy as np
import pytest
from scipy import stats

from citebound.calibration.precision import calibrate_precision, fdr_bounds


def test_the_bound_by_hand():
    # 20 unsupported (3 pass tau = 0.5), 30 supported (6 flagged); one tau: level delta / 2 = 0.05
    s = np.r_[[0.9] * 3, [0.1] * 17, [0.2] * 6, [0.8] * 24]
    y = np.r_[np.zeros(20, int), np.ones(30, int)]
    m_up = stats.beta.ppf(1 - 0.05, 3 + 1, 20 - 3)   # exact one-sided CP upper bounds
    f_up = stats.beta.ppf(1 - 0.05, 6 + 1, 30 - 6)
    pi = 0.7
    want = (1 - pi) * m_up / ((1 - pi) * m_up + pi * (1 - f_up))
    assert fdr_bounds(s, y, [0.5], 0.1, pi)[0] == pytest.approx(want, rel=1e-6)
    r = calibrate_precision(s, y, q=want + 1e-9, delta=0.1, supported_share_min=pi, grid=[0.5])
    assert r["tau"] == 0.5 and "at most" in r["guarantee"]
    r = calibrate_precision(s, y, q=want - 1e-9, delta=0.1, supported_share_min=pi, grid=[0.5])
    assert r["tau"] is None and r["guarantee"].startswith("none")


def test_precision_holds_over_calibration_draws():
    """Unsupported scores ~ Beta(2, 5), supported ~ Beta(5, 2), deployed supported share 0.6: the true FDR at
    every tau is known. Over 300 calibration draws the certified tau's true FDR exceeds q in at most delta
    of them (Clopper-Pearson 95% upper bound)."""
    rng = np.random.default_rng(0)
    q, delta, pi = 0.1, 0.1, 0.6
    grid = np.linspace(0, 1, 101)

    def true_fdr(tau):
        m, keep = stats.beta.sf(tau, 2, 5), stats.beta.sf(tau, 5, 2)
        return (1 - pi) * m / ((1 - pi) * m + pi * keep)

    bad = certified = 0
    for _ in range(300):
        s = np.r_[rng.beta(2, 5, 300), rng.beta(5, 2, 300)]
        y = np.r_[np.zeros(300, int), np.ones(300, int)]
        r = calibrate_precision(s, y, q, delta, pi, grid)
        if r["tau"] is not None:
            certified += 1
            bad += true_fdr(r["tau"]) > q
    assert certified > 250  # it certifies in nearly every draw
    assert stats.beta.ppf(0.95, bad + 1, 300 - bad) <= delta, bad


def test_calibrate_cli_precision(tmp_path):
    import json
    import subprocess
    import sys

    rng = np.random.default_rng(1)
    lines = [{"score": float(x), "label": 0} for x in rng.beta(2, 6, 300)] + \
            [{"score": float(x), "label": 1} for x in rng.beta(6, 2, 300)]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    base = [sys.executable, "-m", "citebound.cli.main", "calibrate", "--scores", str(tmp_path / "s.jsonl"),
            "--verifier", "lexical", "--out", str(tmp_path / "c.json")]
    bad = subprocess.run(base + ["--precision", "0.1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--supported-share-min" in bad.stderr
    ok = subprocess.run(base + ["--precision", "0.1", "--supported-share-min", "0.5"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    cal = json.loads((tmp_path / "c.json").read_text())
    from citebound.calibration.files import in_force

    kind, tau, promise = in_force(cal)
    assert kind == "precision" and tau == cal["precision"]["tau"] and "at most 0.1" in promise


def test_the_deployed_tau_is_the_smallest_certified_one_and_its_bound_is_reported():
    """Brute force, independent of the code under test: for each tau of the grid, counts by a loop (pass iff
    score > tau), the exact Clopper-Pearson bounds from SciPy's beta quantile at delta / (2 |grid|), the FDR bound;
    of the certified taus (bound <= q) the deployed one must be the smallest (it keeps the most supported
    citations), and the bound reported must be that tau's, not a neighbour's."""
    rng = np.random.default_rng(3)
    q, delta, pi = 0.12, 0.1, 0.6
    grid = np.round(np.linspace(0.05, 0.95, 19), 2)
    for draw in range(20):
        s = np.r_[rng.beta(2, 5, 120), rng.beta(5, 2, 150)]
        y = np.r_[np.zeros(120, int), np.ones(150, int)]
        level = delta / (2 * len(grid))
        bounds = []
        for tau in grid:
            k0 = sum(1 for sc, lab in zip(s, y) if lab == 0 and sc > tau)
            k1 = sum(1 for sc, lab in zip(s, y) if lab == 1 and sc <= tau)
            m_up = 1.0 if k0 == 120 else stats.beta.ppf(1 - level, k0 + 1, 120 - k0)
            f_up = 1.0 if k1 == 150 else stats.beta.ppf(1 - level, k1 + 1, 150 - k1)
            bounds.append((1 - pi) * m_up / ((1 - pi) * m_up + pi * (1 - f_up)))
        certified = [t for t, b in zip(grid, bounds) if b <= q]
        r = calibrate_precision(s, y, q, delta, pi, grid)
        assert r["certified"] == len(certified), draw
        if not certified:
            assert r["tau"] is None
            continue
        assert r["tau"] == pytest.approx(min(certified)), draw
        assert r["fdr_bound_at_tau"] == pytest.approx(bounds[list(grid).index(min(certified))], rel=1e-6), draw


def test_a_tau_whose_bound_equals_q_is_certified_and_no_supported_labels_certify_nothing():
    """'bound <= q' certifies: at q equal to the bound (checked against scipy), the tau is deployed. With no
    supported calibration citation the false-flag rate is unbounded (f_up = 1), so FDR's bound is 1 at every tau."""
    s = np.r_[[0.9] * 2, [0.1] * 28, [0.8] * 30]
    y = np.r_[np.zeros(30, int), np.ones(30, int)]
    level = 0.1 / 2
    m_up, f_up = stats.beta.ppf(1 - level, 2 + 1, 30 - 2), stats.beta.ppf(1 - level, 0 + 1, 30)
    want = 0.5 * m_up / (0.5 * m_up + 0.5 * (1 - f_up))
    bound = float(fdr_bounds(s, y, [0.5], 0.1, 0.5)[0])
    assert bound == pytest.approx(want, rel=1e-9)
    r = calibrate_precision(s, y, q=bound, delta=0.1, supported_share_min=0.5, grid=[0.5])
    assert (r["tau"], r["certified"], r["fdr_bound_at_tau"]) == (0.5, 1, bound)
    only_unsupported = calibrate_precision([0.1] * 40, [0] * 40, q=0.5, delta=0.1, supported_share_min=0.9,
                                           grid=[0.2, 0.5])
    assert (only_unsupported["tau"], only_unsupported["certified"]) == (None, 0)
    assert fdr_bounds([0.1] * 40, [0] * 40, [0.2, 0.5], 0.1, 0.9).tolist() == [1.0, 1.0]
