"""#52 items 6-7 and #56 item 3: calibrate prints the tau the guard deploys and the guarantee in force; the
precision rule deploys the smallest certified tau and reports the bound at that tau (checked against an
independent brute force with scipy's beta quantiles); the stated supported share is tested against the
labels; conflicting or ignored options are errors."""
import json

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from citebound.calibration.precision import calibrate_precision
from citebound.cli.main import main


def brute_force_precision(s, y, grid, q, delta, pi):
    """Clopper-Pearson upper bounds at level delta / (2 |grid|) by scipy, the FDR bound at each tau, the
    smallest tau whose bound is <= q and the bound there."""
    level = delta / (2 * len(grid))
    unsup, sup = s[y == 0], s[y == 1]

    def cp_upper(k, n):
        return 1.0 if k >= n else float(beta_dist.ppf(1 - level, k + 1, n - k))
    bounds = []
    for t in grid:
        m_up = cp_upper(int((unsup > t).sum()), len(unsup))
        f_up = cp_upper(int((sup <= t).sum()), len(sup))
        bad, good = (1 - pi) * m_up, pi * (1 - f_up)
        bounds.append(bad / (bad + good) if bad + good > 0 else 1.0)
    ok = [i for i, b in enumerate(bounds) if b <= q]
    return (grid[ok[0]], bounds[ok[0]]) if ok else (None, None)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_precision_deploys_the_smallest_certified_tau_and_its_own_bound(seed):
    rng = np.random.default_rng(seed)
    y = np.r_[np.zeros(300, int), np.ones(500, int)]
    s = np.r_[rng.beta(2, 5, 300), rng.beta(5, 2, 500)]
    grid = np.linspace(0, 1, 41)
    r = calibrate_precision(s, y, 0.1, 0.1, 0.6, grid)
    tau, bound = brute_force_precision(s, y, grid, 0.1, 0.1, 0.6)
    assert tau is not None and r["tau"] == pytest.approx(tau)
    assert r["fdr_bound_at_tau"] == pytest.approx(bound, rel=1e-6)  # at the deployed tau, not the smallest bound
    assert r["certified"] >= 2  # several taus keep the promise: the test is that the smallest is chosen


def _scores_file(tmp_path, n_unsup, n_sup, seed=0):
    rng = np.random.default_rng(seed)
    rows = [{"score": float(x), "label": 0} for x in rng.beta(2, 5, n_unsup)]
    rows += [{"score": float(x), "label": 1} for x in rng.beta(5, 2, n_sup)]
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_calibrate_prints_the_tau_in_force_with_precision(tmp_path, capsys):
    src = _scores_file(tmp_path, 300, 700)
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--scores", src, "--verifier", "lexical", "--precision", "0.2",
                 "--supported-share-min", "0.6", "--out", str(out)]) == 0
    cal = json.loads(out.read_text())
    err = capsys.readouterr().err
    tau = cal["precision"]["tau"]
    s = np.array([json.loads(x)["score"] for x in open(src)])
    flagged = 100 * float(np.mean(s <= tau))
    assert f"tau in force (precision) = {tau:.6g}, flagging {flagged:.1f}%" in err
    assert f"conformal tau {cal['tau']:.6g} (not deployed)" in err and "at most 0.2 of the citations" in err


def test_calibrate_prints_the_pac_tau_not_the_conformal_one(tmp_path, capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--scores", _scores_file(tmp_path, 400, 400), "--verifier", "lexical",
                 "--out", str(out)]) == 0
    cal = json.loads(out.read_text())
    err = capsys.readouterr().err
    assert cal["pac"]["tau"] != cal["tau"]
    assert f"tau in force (pac) = {cal['pac']['tau']:.6g}" in err and f"tau = {cal['tau']:.6g}," not in err


def test_a_refuted_supported_share_is_refused_or_recorded(tmp_path, capsys):
    src = _scores_file(tmp_path, 650, 350)  # 35% supported, as in the issue
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--scores", src, "--verifier", "lexical", "--precision", "0.3",
                 "--supported-share-min", "0.8", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "refute --supported-share-min 0.8: 350 of 1000 are supported (35.0%" in err and not out.exists()
    assert main(["calibrate", "--scores", src, "--verifier", "lexical", "--precision", "0.3",
                 "--supported-share-min", "0.8", "--accept-refuted-share", "--out", str(out)]) == 0
    refuted = json.loads(out.read_text())["precision"]["assumption_refuted"]
    assert (refuted["n"], refuted["n_supported"]) == (1000, 350)
    # the upper bound is scipy's one-sided Clopper-Pearson at 1 - delta
    assert refuted["upper_bound"] == pytest.approx(beta_dist.ppf(0.9, 351, 650), abs=1e-9)
    # a share the labels do not refute (upper bound >= P) passes without a flag
    assert main(["calibrate", "--scores", src, "--verifier", "lexical", "--precision", "0.3",
                 "--supported-share-min", "0.36", "--out", str(out)]) == 0


@pytest.mark.parametrize("extra,message", [
    (["--precision", "0.1", "--supported-share-min", "0.5", "--beta", "0.3"], "not both"),
    (["--ltt-method", "holm"], "only for --beta"),
    (["--grid", "0,1,11"], "only for --beta or --precision"),
    (["--accept-refuted-share"], "only for --precision"),
])
def test_conflicting_or_ignored_options_are_errors(tmp_path, capsys, extra, message):
    assert main(["calibrate", "--scores", _scores_file(tmp_path, 50, 50), "--verifier", "lexical",
                 "--out", str(tmp_path / "c.json")] + extra) == 2
    assert message in capsys.readouterr().err


def test_ltt_method_from_the_command_line_changes_the_rule(tmp_path):
    src = _scores_file(tmp_path, 300, 300)
    taus = {}
    for method in ("bonferroni", "holm", "fixed_sequence"):
        out = tmp_path / f"{method}.json"
        assert main(["calibrate", "--scores", src, "--verifier", "lexical", "--beta", "0.4", "--ltt-method", method,
                     "--out", str(out)]) == 0
        cal = json.loads(out.read_text())
        assert cal["two_sided"]["method"] == method
        taus[method] = cal["tau"]
    assert all(t is not None for t in taus.values())
