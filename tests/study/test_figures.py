"""Each figure draws the numbers of its table: small tables written by hand, each value distinct, and the
drawn artists (lines, bars, error bars, the agreement matrix, the printed counts) read back from matplotlib and
compared with the value the table holds where the figure says it is. An interval is drawn from its low end to
its high end; a panel shows the rows its title names, in the order its ticks name."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402

from citebound.study import figures  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def line(ax, label):
    (found,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return list(np.asarray(found.get_xdata(), float)), list(np.asarray(found.get_ydata(), float))


def errorbar(ax, label=None, k=None):
    """(x, y, y-interval ends, x-interval ends) of the error bar container labelled ``label`` (or the k-th)."""
    cs = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    c = cs[k] if label is None else next(c for c in cs if c.get_label() == label)
    data, _, cols = c.lines
    x, y = (None, None) if data is None else (list(np.asarray(data.get_xdata(), float)),
                                              list(np.asarray(data.get_ydata(), float)))
    xerr = [(s[0][0], s[1][0]) for s in cols[0].get_segments()] if c.has_xerr else None
    yerr = [(s[0][1], s[1][1]) for s in cols[-1].get_segments()] if c.has_yerr else None
    return x, y, yerr, xerr


def bars(ax, label=None):
    """(centre, bottom, height) of each bar, per bar container (a histogram's label is on its first patch)."""
    cs = [c for c in ax.containers if isinstance(c, BarContainer)
          and (label is None or label in (c.get_label(), c.patches[0].get_label()))]
    return [[(p.get_x() + p.get_width() / 2, p.get_y(), p.get_height()) for p in c] for c in cs]


def hline(ax, label):
    return line(ax, label)[1][0]


def vline(ax, label):
    return line(ax, label)[0][0]


def approx(v):
    return pytest.approx(v, abs=1e-12)


def test_validation_frontier_and_score_histograms():
    frontier = pd.DataFrame({"verifier": ["a", "a", "b"], "achieved_catch_rate": [0.6, 0.9, 0.7],
                             "review_cost": [0.1, 0.4, 0.2]})
    scored = pd.DataFrame({"label": [1, 1, 0, 0, 1], "score_a": [0.92, 0.81, 0.12, 0.33, 0.97],
                           "score_b": [0.52, 0.57, 0.61, 0.07, np.nan]})
    fig = figures.validation_figure(frontier, scored, ["a", "b"])
    left, pa, pb = fig.axes
    assert line(left, "a") == ([0.6, 0.9], [0.1, 0.4]) and line(left, "b") == ([0.7], [0.2])  # x: catch, y: cost

    def filled(ax, label):  # the left edges of the 0.05-wide bins holding a score
        (heights,) = bars(ax, label)
        return sorted(round(x - 0.025, 2) for x, _, h in heights if h > 0)

    assert pa.get_title() == "a" and pb.get_title() == "b"
    assert filled(pa, "supported") == [0.8, 0.9, 0.95] and filled(pa, "unsupported") == [0.1, 0.3]
    assert filled(pb, "supported") == [0.5, 0.55] and filled(pb, "unsupported") == [0.05, 0.6]  # NaN left out


def test_rates_are_drawn_in_the_given_order_with_their_intervals():
    rates = pd.DataFrame({"source": ["s1", "s1", "pooled", "pooled"], "verifier": ["x", "y", "x", "y"],
                          "unsupported_rate": [0.10, 0.30, 0.12, 0.28], "ci_low": [0.05, 0.25, 0.08, 0.20],
                          "ci_high": [0.20, 0.32, 0.15, 0.33]})
    fig = figures.rates_figure(rates, ["y", "x"])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["y", "x"]
    assert errorbar(ax, "s1")[:3] == ([0, 1], [0.30, 0.10], [approx((0.25, 0.32)), approx((0.05, 0.20))])
    assert errorbar(ax, "pooled")[:3] == ([0, 1], [0.28, 0.12], [approx((0.20, 0.33)), approx((0.08, 0.15))])


def test_agreement_matrices_are_symmetric_with_ones_on_the_diagonal():
    agree = pd.DataFrame({"verifier_a": ["a", "a", "b"], "verifier_b": ["b", "c", "c"], "kappa": [0.5, 0.2, -0.1],
                          "negative_specific_agreement": [0.7, 0.4, 0.3]})
    fig = figures.agreement_figure(agree, ["a", "b", "c"])
    kappa, nsa = fig.axes[0], fig.axes[1]
    assert kappa.get_title() == "Cohen's kappa"
    np.testing.assert_array_equal(kappa.images[0].get_array(), [[1, 0.5, 0.2], [0.5, 1, -0.1], [0.2, -0.1, 1]])
    np.testing.assert_array_equal(nsa.images[0].get_array(), [[1, 0.7, 0.4], [0.7, 1, 0.3], [0.4, 0.3, 1]])
    printed = {(t.get_position(), t.get_text()) for t in nsa.texts}
    assert ((1, 0), "0.70") in printed and ((0, 1), "0.70") in printed and ((2, 2), "1.00") in printed


def test_coverage_boxes_and_means_show_the_conformal_column():
    per_split = pd.DataFrame({"verifier": "a", "target": [0.8] * 3 + [0.9] * 4,
                              "conformal": [0.70, 0.84, 0.87, 0.88, 0.91, 0.99, 0.94],
                              "pac": [0.90, 0.91, 0.95, 0.96, 0.97, 0.98, 0.99], "naive": 0.5})
    ax = figures.coverage_figure(per_split, [0.8, 0.9]).axes[0]
    # mean 0.80333 and 0.93; medians 0.84 and 0.925
    assert line(ax, "mean achieved") == ([0.8, 0.9], approx([(0.70 + 0.84 + 0.87) / 3, 0.93]))
    medians = sorted(ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_color() == "C1")  # boxplot medians
    assert medians == approx([0.84, 0.925])


def test_ablation_at_one_target_conformal_solid():
    abl = pd.DataFrame({"verifier": "a", "method": ["conformal", "conformal", "naive", "naive", "conformal"],
                        "target": [0.8, 0.8, 0.8, 0.8, 0.9], "n_cal": [10, 40, 10, 40, 10],
                        "share_splits_below_target": [0.05, 0.04, 0.3, 0.2, 0.07]})
    ax = figures.ablation_figure(abl, 0.8).axes[0]
    assert line(ax, "a (conformal)") == ([10, 40], [0.05, 0.04]) and line(ax, "a (naive)") == ([10, 40], [0.3, 0.2])
    styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()}
    assert styles == {"a (conformal)": "-", "a (naive)": "--"}


def test_budget_dial_plots_the_flag_rate():
    curve = pd.DataFrame({"verifier": "a", "target_catch_rate": [0.5, 0.7], "tau": [0.11, 0.42],
                          "pooled_flag_rate": [0.2, 0.35]})
    assert line(figures.budget_figure(curve).axes[0], "a") == ([0.5, 0.7], [0.2, 0.35])


def test_transfer_intervals_run_from_low_to_high():
    tr = pd.DataFrame({"verifier": "a", "target": [0.8, 0.9], "hard_catch_rate": [0.6, 0.75],
                       "ci_low": [0.5, 0.7], "ci_high": [0.68, 0.9]})
    ax = figures.transfer_figure(tr).axes[0]
    assert errorbar(ax, "a")[:3] == ([0.8, 0.9], [0.6, 0.75], [approx((0.5, 0.68)), approx((0.7, 0.9))])
    assert line(ax, "target") == ([0.8, 0.9], [0.8, 0.9])


def guarantee_tables():
    viol = pd.DataFrame({"verifier": ["a", "b"], "method": ["holm", "fixed_sequence"], "beta": [0.2, 0.3],
                         "violation_rate": [0.03, 0.06], "ci_low": [0.01, 0.04], "ci_high": [0.08, 0.09], "delta": 0.15})
    alarms = pd.DataFrame({"verifier": ["a", "a"], "setting": ["exchangeable", "shifted"], "alarm_rate": [0.02, 0.5],
                           "ci_low": [0.0, 0.4], "ci_high": [0.05, 0.6]})
    groups = pd.DataFrame({"verifier": ["a", "a"], "group": ["g1", "g2"], "pooled_miss": [0.12, 0.04],
                           "group_miss": [0.09, 0.08], "alpha": 0.1})
    shift = pd.DataFrame({"setting": ["supported share", "supported share", "other"], "verifier": "a",
                          "alarm": ["robust", "robust", "robust"], "supported_share": [0.3, 0.7, 0.5],
                          "alarm_rate": [0.01, 0.03, 0.9], "ci_low": [0.0, 0.01, 0.8], "ci_high": [0.04, 0.07, 0.95],
                          "delta": 0.05})
    labels = pd.DataFrame({"true_miss_rate": [0.1, 0.1, 0.2], "test": ["e", "e", "e"], "posts": [1, 4, 1],
                           "labels_per_post": [8, 2, 8], "void_rate": [0.02, 0.04, 0.6], "ci_low": [0.0, 0.01, 0.5],
                           "ci_high": [0.05, 0.08, 0.7], "delta": 0.05})
    precision = pd.DataFrame({"verifier": ["a", "b"], "violation_rate": [0.01, 0.02], "ci_low": [0.0, 0.005],
                              "ci_high": [0.03, 0.06], "delta": 0.05, "q": 0.1, "supported_share_min": 0.5,
                              "supported_kept_precision": [0.9, 0.8], "supported_kept_catch_pac": [0.6, 0.5]})
    return viol, alarms, groups, shift, labels, precision


def test_guarantees_panels_draw_their_own_rows():
    fig = figures.guarantees_figure(*guarantee_tables())
    a, b, c, d, e, f = fig.axes
    # (a) the two LTT rows, then the monitor's exchangeable row only, each at its row index
    drawn = [errorbar(a, k=i)[:3] + (errorbar(a, k=i)[3],) for i in range(3)]
    assert len([x for x in a.containers if isinstance(x, ErrorbarContainer)]) == 3
    assert [(x, y) for x, y, _, _ in drawn] == [([0.03], [0]), ([0.06], [1]), ([0.02], [2])]
    assert [xe for *_, xe in drawn] == [[approx((0.01, 0.08))], [approx((0.04, 0.09))], [approx((0.0, 0.05))]]
    assert [t.get_text() for t in a.get_yticklabels()] == ["a holm b=0.2", "b fixed b=0.3", "a monitor"]
    assert vline(a, "delta") == 0.15
    # (b) pooled bars left of each group, per-group right; the line at alpha (not delta)
    pooled, per_group = bars(b)
    assert [h for _, _, h in pooled] == [0.12, 0.04] and [h for _, _, h in per_group] == [0.09, 0.08]
    assert [round(x, 9) for x, _, _ in pooled] == [-0.2, 0.8]
    assert line(b, "alpha")[1] == [0.1, 0.1]
    # (c) only the supported-share setting, shifted left by 2 * 0.006 for the first alarm
    assert errorbar(c, "a, robust")[:3] == (approx([0.3 - 0.012, 0.7 - 0.012]), [0.01, 0.03],
                                             [approx((0.0, 0.04)), approx((0.01, 0.07))])
    assert hline(c, "delta") == 0.05
    # (d) only the rows at the smallest true miss rate (alpha), one point per batching
    assert errorbar(d, "e")[:3] == (approx([-0.1, 0.9]), [0.02, 0.04], [approx((0.0, 0.05)), approx((0.01, 0.08))])
    assert [t.get_text() for t in d.get_xticklabels()] == ["1 x 8", "4 x 2"] and hline(d, "delta") == 0.05
    # (e) precision violations per verifier; (f) what each guarantee keeps
    x, y, _, xerr = errorbar(e, k=0)
    assert (x, y, xerr) == ([0.01, 0.02], [0, 1], [approx((0.0, 0.03)), approx((0.005, 0.06))])
    assert vline(e, "delta") == 0.05 and [t.get_text() for t in e.get_yticklabels()] == ["a", "b"]
    assert [[h for _, _, h in bs] for bs in bars(f)] == [[0.9, 0.8], [0.6, 0.5]]
    assert [c.get_label() for c in f.containers] == ["precision guarantee", "catch-rate guarantee (PAC)"]


def test_reattribution_bars_per_k_in_order():
    rec = pd.DataFrame({"k": [3, 1, 3, 1], "ranker": ["bm25", "bm25", "random", "random"],
                        "recall": [0.9, 0.6, 0.5, 0.2], "ci_low": [0.85, 0.45, np.nan, np.nan],
                        "ci_high": [0.97, 0.7, np.nan, np.nan]})
    ax = figures.reattribution_figure(rec).axes[0]
    bm25, rnd = bars(ax, "bm25"), bars(ax, "random")
    assert [h for _, _, h in bm25[0]] == [0.6, 0.9] and [h for _, _, h in rnd[0]] == [0.2, 0.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["recall@1", "recall@3"]
    # two rankers, bars 0.8 / 2 = 0.4 wide: bm25's centred at k's index, random's 0.4 on; each tick under the
    # middle of its pair (index + 0.2)
    assert [x for x, _, _ in bm25[0]] == approx([0, 1]) and [x for x, _, _ in rnd[0]] == approx([0.4, 1.4])
    assert list(ax.get_xticks()) == approx([0.2, 1.2])
    (eb,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]  # random has no interval
    assert [(s[0][1], s[1][1]) for s in eb.lines[2][-1].get_segments()] == [approx((0.45, 0.7)), approx((0.85, 0.97))]


def test_kit_coverage_bars_and_intervals_by_column():
    cells = pd.DataFrame({"model": ["m1", "m2"], "pipeline": ["bare", "paperqa"]})
    for col, mid in (("coverage_answer", [0.5, 0.6]), ("coverage_guard", [0.4, 0.45]), ("coverage_random", [0.3, 0.2])):
        cells[col] = mid
        cells[f"{col}_ci_low"] = [m - 0.05 for m in mid]
        cells[f"{col}_ci_high"] = [m + 0.1 for m in mid]
    ax = figures.kit_coverage_figure(cells).axes[0]
    got = {c.get_label(): [h for _, _, h in bs] for c, bs in
           zip([c for c in ax.containers if isinstance(c, BarContainer)], bars(ax))}
    assert got == {"answer as written": [0.5, 0.6], "guard": [0.4, 0.45], "random removal": [0.3, 0.2]}
    # three bars 0.27 wide about each cell's tick: the guard's centred on it, the others 0.27 either side
    assert [[x for x, _, _ in bs] for bs in bars(ax)] == [approx([-0.27, 0.73]), approx([0, 1]), approx([0.27, 1.27])]
    assert list(ax.get_xticks()) == approx([0, 1])
    # each bar's interval from mid - 0.05 to mid + 0.1, in the order the bars are drawn
    assert [errorbar(ax, k=k)[2] for k in range(3)] == [[approx((0.45, 0.6)), approx((0.55, 0.7))],
                                                        [approx((0.35, 0.5)), approx((0.4, 0.55))],
                                                        [approx((0.25, 0.4)), approx((0.15, 0.3))]]


def test_failure_kinds_stacks_counts_and_intervals_per_verifier():
    fk = pd.DataFrame({"source": ["s1", "s2", "pooled", "s1", "s2", "pooled"], "verifier": ["v", "v", "v", "w", "w", "w"],
                       "misattributed_share": [0.25, np.nan, 0.25, 0.5, 0.2, 0.3],
                       "misattributed_share_ci_low": [0.1, np.nan, 0.15, 0.3, 0.1, 0.2],
                       "misattributed_share_ci_high": [0.4, np.nan, 0.35, 0.7, 0.3, 0.4],
                       "n_unsupported": [8, 0, 8, 6, 5, 11]})
    fig = figures.failure_kinds_figure(fk, ["w", "v"])
    w, v = fig.axes
    mis, rest = bars(v)
    assert [h for _, _, h in mis] == [0.25, 0.0, 0.25]  # s2 has no unsupported citation: nothing misattributed
    assert [(y, h) for _, y, h in rest] == [(0.25, 0.75), (0.0, 1.0), (0.25, 0.75)]
    assert [t.get_text() for t in v.texts] == ["8", "0", "8"] and [t.get_text() for t in w.texts] == ["6", "5", "11"]
    _, _, yerr, _ = errorbar(w, k=0)
    assert yerr == [approx((0.3, 0.7)), approx((0.1, 0.3)), approx((0.2, 0.4))]
    assert [t.get_text() for t in w.get_xticklabels()] == ["s1", "s2", "pooled"]


def test_citation_pr_places_recall_on_x_and_precision_on_y():
    pr = pd.DataFrame({"source": ["s1", "pooled"], "verifier": "v", "recall": [0.8, 0.7], "precision": [0.4, 0.5],
                       "recall_ci_low": [0.7, 0.6], "recall_ci_high": [0.85, 0.75],
                       "precision_ci_low": [0.3, 0.45], "precision_ci_high": [0.45, 0.6]})
    ax = figures.citation_pr_figure(pr, ["v"]).axes[0]
    assert errorbar(ax, "s1") == ([0.8], [0.4], [approx((0.3, 0.45))], [approx((0.7, 0.85))])
    assert errorbar(ax, "pooled") == ([0.7], [0.5], [approx((0.45, 0.6))], [approx((0.6, 0.75))])


def train_table():
    rows = []
    for variant, best, shift in (("head", 1.0, 0.0), ("wide", 10.0, 0.1)):
        for c in (0.1, 1.0, 10.0):
            for src, base in (("loso:s1", 0.6), ("loso:s2", 0.7)):
                rows.append({"variant": variant, "C": c, "evaluation": src, "auc": base + shift + c / 100,
                             "embedding_auc": base})
        rows.append({"variant": variant, "C": best, "evaluation": "in_distribution", "auc": 0.9 + shift,
                     "embedding_auc": 0.8})
        rows.append({"variant": variant, "C": best, "evaluation": "expert", "auc": 0.66 + shift, "embedding_auc": 0.62})
    return pd.DataFrame(rows)


def test_train_verifier_selection_curve_and_chosen_points():
    fig = figures.train_verifier_figure(train_table(), ["expert"])
    ax, bx = fig.axes
    # left: the mean over the two left-out sources at each C: (0.6 + 0.7) / 2 + C / 100 (+ 0.1 for wide)
    assert line(ax, "head: head") == ([0.1, 1.0, 10.0], approx([0.651, 0.66, 0.75]))
    assert line(ax, "wide: head") == ([0.1, 1.0, 10.0], approx([0.751, 0.76, 0.85]))
    assert line(ax, "head: embedding")[1] == approx([0.65, 0.65])
    # right: each variant at its own chosen C (head: 1, wide: 10); evaluations s1, s2, in_distribution, expert
    assert line(bx, "head head (C=1)") == (approx([-0.125, 0.875, 1.875, 2.875]), approx([0.61, 0.71, 0.9, 0.66]))
    assert line(bx, "wide head (C=10)") == (approx([0.125, 1.125, 2.125, 3.125]), approx([0.8, 0.9, 1.0, 0.76]))


def test_verifier_designs_intervals_stopping_point_and_training_curve():
    table = pd.DataFrame({"design": "net", "variant": "all", "setting": "stop 64",
                          "evaluation": ["loso:s1", "in_distribution", "expert"], "delta": [0.02, 0.05, -0.01],
                          "delta_ci_low": [-0.01, 0.03, -0.04], "delta_ci_high": [0.06, 0.08, 0.01]})
    checkpoints = pd.DataFrame({"design": "net", "examples": [32, 32, 64, 64], "auc": [0.6, 0.7, 0.72, 0.8],
                                "embedding_auc": [0.61, 0.67, 0.61, 0.67]})
    curves = pd.DataFrame({"design": "net", "run": ["fold:s1"] * 2 + ["final:all"] * 3, "examples": [8, 16, 8, 16, 24],
                           "loss": [5.0, 4.0, 0.9, 0.6, 0.3]})
    fig = figures.verifier_designs_figure(table, checkpoints, curves, ["expert"])
    ax, bx, cx = fig.axes
    x, y, yerr, _ = errorbar(ax, k=0)
    assert (x, y) == ([0, 1, 2], [0.02, 0.05, -0.01])
    assert yerr == [approx((-0.01, 0.06)), approx((0.03, 0.08)), approx((-0.04, 0.01))]
    assert line(bx, "net") == ([32, 64], approx([0.65, 0.76]))
    assert [ln.get_ydata()[0] for ln in bx.get_lines() if ln.get_linestyle() == "--"] == approx([0.64])  # embedding
    # the final run only, running mean over up to 10 steps: 0.9, (0.9 + 0.6) / 2, (0.9 + 0.6 + 0.3) / 3
    assert line(cx, "net") == ([8, 16, 24], approx([0.9, 0.75, 0.6]))
