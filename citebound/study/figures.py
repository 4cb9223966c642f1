"""Figures a reviewer wants to look at (matplotlib, saved as PNG and PDF)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

plt.rcParams.update({"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
                     "axes.spines.right": False, "font.size": 9})


def save(fig: plt.Figure, png: str | Path, pdf: str | Path | None = None) -> None:
    fig.tight_layout()
    fig.savefig(png, dpi=150)
    fig.savefig(pdf or Path(png).with_suffix(".pdf"))
    plt.close(fig)


def validation_figure(frontier: pd.DataFrame, scored: pd.DataFrame, verifiers: Sequence[str]) -> plt.Figure:
    """Left: matched catch-rate frontier. Right: score distributions by gold class."""
    n = len(verifiers)
    fig, axes = plt.subplots(1, 1 + n, figsize=(4.2 + 2.6 * n, 3.4), squeeze=False)
    ax = axes[0, 0]
    for v in verifiers:
        f = frontier[frontier.verifier == v]
        ax.plot(f.achieved_catch_rate, f.review_cost, marker=".", label=v)
    ax.plot([0, 1], [0, 1], color="grey", ls=":", lw=1, label="no skill")
    ax.set(xlabel="catch rate on unsupported (gold)", ylabel="review cost: supported flagged",
           title="Matched catch-rate frontier", xlim=(0.45, 1.01), ylim=(-0.02, 1.02))
    ax.legend(fontsize=7)
    bins = np.linspace(0, 1, 21)
    for i, v in enumerate(verifiers):
        a = axes[0, i + 1]
        s = scored[f"score_{v}"]
        a.hist(s[scored.label == 1].dropna(), bins=bins, alpha=0.6, label="supported", color="tab:green")
        a.hist(s[scored.label == 0].dropna(), bins=bins, alpha=0.6, label="unsupported", color="tab:red")
        a.set(title=v, xlabel="P(support)", ylabel="pairs")
        a.legend(fontsize=7)
    return fig


def rates_figure(rates: pd.DataFrame, order: Sequence[str]) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(max(4.5, 1.3 * len(order) + 2), 3.6))
    x = np.arange(len(order))
    for src, g in rates.groupby("source", sort=False):
        g = g.set_index("verifier").reindex(order)
        style = dict(color="black", lw=2.2) if src == "pooled" else {}
        ax.errorbar(x, g.unsupported_rate, yerr=[g.unsupported_rate - g.ci_low, g.ci_high - g.unsupported_rate],
                    marker="o", capsize=3, label=src, **style)
    ax.set_xticks(x, order)
    ax.set(xlabel="verifier (ordered by recall on supported gold)", ylabel="unsupported-citation rate",
           title="Same answers, different verifier, different rate (95% item-bootstrap CI)")
    ax.legend(fontsize=7, ncol=2)
    return fig


def agreement_figure(agree: pd.DataFrame, verifiers: Sequence[str]) -> plt.Figure:
    names = list(verifiers) + (["jury"] if (agree.verifier_b == "jury").any() else [])
    fig, axes = plt.subplots(1, 2, figsize=(2.2 * len(names) + 2, 3.4))
    for ax, col, title in ((axes[0], "kappa", "Cohen's kappa"), (axes[1], "negative_specific_agreement",
                                                                  "agreement on flags (NSA)")):
        m = np.full((len(names), len(names)), np.nan)
        for _, r in agree.iterrows():
            i, j = names.index(r.verifier_a), names.index(r.verifier_b)
            m[i, j] = m[j, i] = r[col]
        np.fill_diagonal(m, 1.0)
        im = ax.imshow(m, vmin=-0.2 if col == "kappa" else 0, vmax=1, cmap="viridis")
        ax.set_xticks(range(len(names)), names, rotation=30)
        ax.set_yticks(range(len(names)), names)
        for i in range(len(names)):
            for j in range(len(names)):
                if np.isfinite(m[i, j]):
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", color="w", fontsize=8)
        ax.set_title(title)
        ax.grid(False)
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def coverage_figure(per_split: pd.DataFrame, targets: Sequence[float]) -> plt.Figure:
    verifiers = list(dict.fromkeys(per_split.verifier))
    fig, axes = plt.subplots(1, len(verifiers), figsize=(3.2 * len(verifiers), 3.4), squeeze=False, sharey=True)
    for ax, v in zip(axes[0], verifiers):
        g = per_split[per_split.verifier == v]
        data = [g[g.target == t].conformal for t in targets]
        ax.boxplot(data, positions=targets, widths=0.012, showfliers=False)
        ax.plot(targets, [d.mean() for d in data], "o", color="tab:blue", label="mean achieved")
        ax.plot([min(targets) - 0.02, max(targets) + 0.02], [min(targets) - 0.02, max(targets) + 0.02],
                ls=":", color="grey", label="target")
        ax.set(title=v, xlabel="target catch rate", xlim=(min(targets) - 0.03, max(targets) + 0.03))
        ax.set_xticks(targets, [f"{t:.2f}" for t in targets])
    axes[0, 0].set_ylabel("achieved catch rate on held-out unsupported")
    axes[0, 0].legend(fontsize=7)
    return fig


def ablation_figure(abl: pd.DataFrame, target: float) -> plt.Figure:
    g = abl[np.isclose(abl.target, target)]
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for (v, method), d in g.groupby(["verifier", "method"]):
        ax.plot(d.n_cal, d.share_splits_below_target, marker="o", ls="-" if method == "conformal" else "--",
                label=f"{v} ({method})")
    ax.set(xscale="log", xlabel="calibration size (unsupported)", ylabel=f"share of splits below {target:.2f}",
           title="Conformal (+1 correction) vs naive quantile")
    ax.legend(fontsize=7)
    return fig


def budget_figure(curve: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for v, d in curve.groupby("verifier"):
        ax.plot(d.target_catch_rate, d.pooled_flag_rate, marker=".", label=v)
    ax.set(xlabel="guaranteed catch rate on unsupported", ylabel="share of deployment citations flagged",
           title="The recall-cost dial (review budget)")
    ax.legend(fontsize=7)
    return fig


def transfer_figure(tr: pd.DataFrame) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for v, d in tr.groupby("verifier"):
        ax.errorbar(d.target, d.hard_catch_rate, yerr=[d.hard_catch_rate - d.ci_low, d.ci_high - d.hard_catch_rate],
                    marker="o", capsize=3, label=v)
    t = np.array(sorted(tr.target.unique()))
    ax.plot(t, t, ls=":", color="grey", label="target")
    ax.set(xlabel="target (calibrated on easy distractors)", ylabel="catch rate on human-refuted pairs",
           title="Transfer of the guarantee to hard negatives")
    ax.legend(fontsize=7)
    return fig


def guarantees_figure(viol: pd.DataFrame, alarms: pd.DataFrame, groups: pd.DataFrame,
                      shift: pd.DataFrame | None = None, labels: pd.DataFrame | None = None,
                      precision: pd.DataFrame | None = None) -> plt.Figure:
    """(a) how often either certified rate is exceeded, and the monitor's false alarms, against delta;
    (b) per group, the held-out miss rate under the pooled and the per-group threshold; (c) the alarms'
    false-suspect rate by the deployment's supported share; (d) the label tests' false voids by batching;
    (e) the precision guarantee's violations and (f) the supported share each guarantee keeps."""
    fig, ((a, b), (c, d), (e, f)) = plt.subplots(3, 2, figsize=(10, 10.5))
    _shift_panel(c, shift)
    _labels_panel(d, labels)
    _precision_panels(e, f, precision)
    rows = [(f"{r.verifier} {r.method[:5]} b={r.beta:g}", r.violation_rate, r.ci_low, r.ci_high, "C0")
            for r in viol.itertuples()]
    ex = alarms[alarms.setting == "exchangeable"]
    rows += [(f"{r.verifier} monitor", r.alarm_rate, r.ci_low, r.ci_high, "C1") for r in ex.itertuples()]
    y = np.arange(len(rows))
    for i, (_, rate, lo, hi, colour) in enumerate(rows):
        a.errorbar(rate, i, xerr=[[rate - lo], [hi - rate]], fmt="o", color=colour, capsize=3)
    if len(viol):
        a.axvline(float(viol.delta.iloc[0]), ls=":", color="grey", label="delta")
    a.set_yticks(y, [r[0] for r in rows], fontsize=7)
    a.set(xlabel="share of draws / streams (Clopper-Pearson 95%)",
          title="LTT violations (blue), monitor false alarms (orange)")
    a.legend(fontsize=7)
    if len(groups):
        labels = [f"{r.verifier}/{r.group}" for r in groups.itertuples()]
        x = np.arange(len(labels))
        b.bar(x - 0.2, groups.pooled_miss, 0.4, label="pooled tau")
        b.bar(x + 0.2, groups.group_miss, 0.4, label="per-group tau (pooled where it falls back)")
        b.axhline(float(groups.alpha.iloc[0]), ls=":", color="grey", label="alpha")
        b.set_xticks(x, labels, rotation=60, ha="right", fontsize=6)
    b.set(ylabel="held-out miss rate", title="Per-group vs pooled calibration")
    b.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _shift_panel(ax: Any, shift: pd.DataFrame | None) -> None:
    if shift is None or not len(shift):
        ax.set_axis_off()
        return
    sh = shift[shift.setting == "supported share"]
    for i, ((v, alarm), d) in enumerate(sh.groupby(["verifier", "alarm"], sort=False)):
        x = d.supported_share.to_numpy() + (i - 2) * 0.006
        ax.errorbar(x, d.alarm_rate, yerr=[d.alarm_rate - d.ci_low, d.ci_high - d.alarm_rate], fmt="o-" if "robust" in alarm
                    else "x:", capsize=2, label=f"{v}, {alarm}")
    ax.axhline(float(sh.delta.iloc[0]), ls=":", color="grey", label="delta")
    ax.set(xlabel="supported share in deployment (unsupported class unchanged)", ylabel="streams turned suspect",
           title="Drift alarm: false alarms (CP 95%)", ylim=(-0.03, 1.03))
    ax.legend(fontsize=6)


def _precision_panels(e: Any, f: Any, precision: pd.DataFrame | None) -> None:
    if precision is None or not len(precision):
        e.set_axis_off()
        f.set_axis_off()
        return
    y = np.arange(len(precision))
    p = precision
    e.errorbar(p.violation_rate, y, xerr=[p.violation_rate - p.ci_low, p.ci_high - p.violation_rate], fmt="o",
               capsize=3, color="C2")
    e.axvline(float(p.delta.iloc[0]), ls=":", color="grey", label="delta")
    e.set_yticks(y, list(p.verifier), fontsize=7)
    e.set(xlabel="draws with a certified tau above q (CP 95%)",
          title=f"Precision guarantee: q = {p.q.iloc[0]:g}, supported share >= {p.supported_share_min.iloc[0]:g}")
    e.legend(fontsize=7)
    x = np.arange(len(p))
    f.bar(x - 0.2, p.supported_kept_precision, 0.4, label="precision guarantee")
    f.bar(x + 0.2, p.supported_kept_catch_pac, 0.4, label="catch-rate guarantee (PAC)")
    f.set_xticks(x, list(p.verifier), fontsize=7)
    f.set(ylabel="supported citations kept", ylim=(0, 1), title="What each guarantee costs readers")
    f.legend(fontsize=7)


def _labels_panel(ax: Any, labels: pd.DataFrame | None) -> None:
    if labels is None or not len(labels):
        ax.set_axis_off()
        return
    at = labels[labels.true_miss_rate == labels.true_miss_rate.min()]
    for i, (test, d) in enumerate(at.groupby("test", sort=False)):
        x = np.arange(len(d)) + (i - 0.5) * 0.2
        ax.errorbar(x, d.void_rate, yerr=[d.void_rate - d.ci_low, d.ci_high - d.void_rate], fmt="o", capsize=3,
                    label=test)
        ax.set_xticks(np.arange(len(d)), [f"{p} x {s}" for p, s in zip(d.posts, d.labels_per_post)])
    ax.axhline(float(at.delta.iloc[0]), ls=":", color="grey", label="delta")
    ax.set(xlabel="labels posted as (posts x labels each)", ylabel="valid calibrations voided",
           title="Label test at a true miss rate of alpha (CP 95%)")
    ax.legend(fontsize=7)


def reattribution_figure(rec: pd.DataFrame) -> plt.Figure:
    ks = sorted(rec.k.unique())
    rankers = list(dict.fromkeys(rec.ranker))
    fig, ax = plt.subplots(figsize=(min(9.0, 1.1 * len(rankers) + 3), 3.4))
    w = 0.8 / len(rankers)
    for i, r in enumerate(rankers):
        d = rec[rec.ranker == r].set_index("k").reindex(ks)
        err = None if d.ci_low.isna().all() else [d.recall - d.ci_low, d.ci_high - d.recall]
        ax.bar(np.arange(len(ks)) + i * w, d.recall, w, yerr=err, capsize=2, label=r,
               hatch="//" if r == "random" else None, alpha=0.85)
    ax.set_xticks(np.arange(len(ks)) + w * (len(rankers) - 1) / 2, [f"recall@{k}" for k in ks])
    ax.set(ylabel="human-labelled passage in top k", ylim=(0, 1.05), title="Re-attribution among provided passages")
    ax.legend(fontsize=7, ncol=2)
    return fig


def kit_coverage_figure(cells: pd.DataFrame) -> plt.Figure:
    """Reference coverage (ROUGE-L recall) per model x cell: as written, kept by the guard, and with as
    many random cited sentences removed, with 95% item-bootstrap intervals."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(cells) + 2), 4))
    x = np.arange(len(cells))
    for k, (col, label) in enumerate([("coverage_answer", "answer as written"), ("coverage_guard", "guard"),
                                      ("coverage_random", "random removal")]):
        mid = cells[col].to_numpy(float)
        err = np.vstack([mid - cells[f"{col}_ci_low"].to_numpy(float), cells[f"{col}_ci_high"].to_numpy(float) - mid])
        ax.bar(x + (k - 1) * 0.27, mid, 0.27, yerr=np.nan_to_num(err), capsize=2, label=label)
    ax.set_xticks(x, [f"{m}\n{c}" for m, c in zip(cells["model"], cells["pipeline"])], fontsize=7)
    ax.set_ylabel("ROUGE-L recall of the reference answer")
    ax.set_title("Coverage kept by the guard vs random removal of as many cited sentences")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def failure_kinds_figure(fk: pd.DataFrame, order: Sequence[str]) -> plt.Figure:
    """Stacked shares of unsupported citations per source, one panel per verifier: misattributed
    (another passage the answer had supports the claim) below, ungrounded above, with the misattributed
    share's 95% item-bootstrap CI and the unsupported count on top."""
    sources = [s for s in dict.fromkeys(fk.source) if s != "pooled"] + (["pooled"] if (fk.source == "pooled").any() else [])
    fig, axes = plt.subplots(1, len(order), figsize=(max(4.0, 0.55 * len(sources) + 1.2) * len(order) / 1.4, 3.8),
                             squeeze=False, sharey=True)
    for ax, v in zip(axes[0], order):
        g = fk[fk.verifier == v].set_index("source").reindex(sources)
        x = np.arange(len(sources))
        mis = g.misattributed_share.fillna(0).to_numpy()
        ax.bar(x, mis, color="tab:blue", label="misattributed")
        ax.bar(x, 1 - mis, bottom=mis, color="tab:red", alpha=0.55, label="ungrounded")
        ax.errorbar(x, mis, yerr=[mis - g.misattributed_share_ci_low.fillna(0), g.misattributed_share_ci_high.fillna(0) - mis],
                    fmt="none", ecolor="black", capsize=2, lw=1)
        for xi, n in zip(x, g.n_unsupported.fillna(0).astype(int)):
            ax.text(xi, 1.01, str(n), ha="center", va="bottom", fontsize=6)
        ax.set_xticks(x, [s.split("/")[-1] for s in sources], rotation=60, fontsize=7)
        ax.set_ylim(0, 1.1)
        ax.set_title(v)
    axes[0][0].set_ylabel("share of unsupported citations")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle("What kind of failure: misattributed vs ungrounded (n unsupported on top; 95% item-bootstrap CI)",
                 fontsize=9)
    return fig


def citation_pr_figure(pr: pd.DataFrame, order: Sequence[str]) -> plt.Figure:
    """Citation precision against recall per source, one panel per verifier, 95% item-bootstrap CIs."""
    fig, axes = plt.subplots(1, len(order), figsize=(3.4 * len(order), 3.6), squeeze=False, sharex=True, sharey=True)
    sources = list(dict.fromkeys(pr.source))
    colors = {s: plt.cm.tab10(i % 10) for i, s in enumerate(sources)}
    for ax, v in zip(axes[0], order):
        for _, r in pr[pr.verifier == v].iterrows():
            pooled = r.source == "pooled"
            ax.errorbar(r.recall, r.precision, xerr=[[r.recall - r.recall_ci_low], [r.recall_ci_high - r.recall]],
                        yerr=[[r.precision - r.precision_ci_low], [r.precision_ci_high - r.precision]],
                        fmt="s" if pooled else "o", color="black" if pooled else colors[r.source], capsize=2,
                        ms=6 if pooled else 4, label=r.source.split("/")[-1])
        ax.plot([0, 1], [0, 1], color="0.8", lw=0.8, zorder=0)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="citation recall (cited sentences supported)", title=v)
    axes[0][0].set_ylabel("citation precision (citations needed)")
    axes[0][-1].legend(fontsize=6, loc="lower right", ncol=2)
    fig.suptitle("Panel-judged citation precision and recall per system (95% item-bootstrap CI)", fontsize=9)
    return fig


def train_verifier_figure(table: pd.DataFrame, gold_names: Sequence[str]) -> plt.Figure:
    """Left: mean leave-one-source-out AUC against the inverse L2 strength C per variant (the head's training
    path), embedding's as a dashed line. Right: at each variant's chosen C, AUC per evaluation, head
    (filled) against embedding (open), expert gold last."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 2]})
    colors = {}
    for i, (variant, g) in enumerate(table[table.evaluation.str.startswith("loso:")].groupby("variant", sort=False)):
        colors[variant] = plt.cm.tab10(i)
        m = g.groupby("C")[["auc", "embedding_auc"]].mean()
        ax.plot(m.index, m.auc, "o-", color=colors[variant], label=f"{variant}: head")
        ax.axhline(m.embedding_auc.iloc[0], ls="--", color=colors[variant], lw=0.8, label=f"{variant}: embedding")
    ax.set(xscale="log", xlabel="inverse L2 strength C", ylabel="mean leave-one-source-out AUC", title="Selection on transfer")
    ax.legend(fontsize=7)
    chosen = table[~table.evaluation.str.startswith("loso:") | table.C.isin(
        table[table.evaluation.isin(list(gold_names))].C.unique())]
    evals = list(dict.fromkeys(e for e in chosen.evaluation if e.startswith("loso:"))) + ["in_distribution", *gold_names]
    x = np.arange(len(evals))
    for k, (variant, g) in enumerate(chosen.groupby("variant", sort=False)):
        c = g[g.evaluation.isin(list(gold_names))].C.iloc[0]
        g = g[(g.C == c)].set_index("evaluation").reindex(evals)
        off = (k - 0.5) * 0.25
        bx.plot(x + off, g.auc, "o", color=colors.get(variant, "k"), label=f"{variant} head (C={c:g})")
        bx.plot(x + off, g.embedding_auc, "o", mfc="none", color=colors.get(variant, "k"), label=f"{variant}: embedding")
    bx.axvline(len(evals) - len(gold_names) - 0.5, color="0.6", lw=0.8)
    bx.set_xticks(x, [e.removeprefix("loso:") for e in evals], rotation=35, ha="right", fontsize=7)
    bx.set(ylabel="AUC", title="Left-out sources, in-distribution, and the expert gold (right of the line)")
    bx.legend(fontsize=6, ncol=2)
    return fig


def verifier_designs_figure(table: pd.DataFrame, checkpoints: pd.DataFrame, curves: pd.DataFrame,
                            gold_names: Sequence[str]) -> plt.Figure:
    """Left: AUC minus embedding per design (each at its selected setting) on every left-out source and the
    expert gold (with paired 95% CIs), zero dashed. Middle: the networks' mean leave-one-source-out AUC
    against training examples (the stopping-point choice). Right: their training loss (final runs, running
    mean over 10 steps)."""
    fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(14, 4), gridspec_kw={"width_ratios": [2, 1, 1]})
    keys = list(dict.fromkeys(zip(table["design"], table["variant"])))
    evals = list(dict.fromkeys(e for e in table["evaluation"] if e.startswith("loso:"))) + [
        e for e in ["in_distribution", *gold_names] if e in set(table["evaluation"])]
    x = np.arange(len(evals))
    for k, (design, variant) in enumerate(keys):
        g = table[(table["design"] == design) & (table["variant"] == variant)].set_index("evaluation").reindex(evals)
        off = (k - (len(keys) - 1) / 2) * 0.8 / max(1, len(keys))
        err = np.vstack([g["delta"] - g["delta_ci_low"], g["delta_ci_high"] - g["delta"]])
        ax.errorbar(x + off, g["delta"], yerr=np.where(np.isfinite(err), err, 0), fmt="o", ms=4, capsize=2,
                    color=plt.cm.tab10(k), label=f"{design} / {variant} ({g['setting'].dropna().iloc[0]})")
    ax.axhline(0, ls="--", color="0.4", lw=0.8)
    ax.axvline(len(evals) - len(gold_names) - 0.5, color="0.6", lw=0.8)
    ax.set_xticks(x, [e.removeprefix("loso:") for e in evals], rotation=35, ha="right", fontsize=7)
    ax.set(ylabel="AUC minus embedding's", title="Designs on left-out sources and the expert gold (right of the line)")
    ax.legend(fontsize=6)
    for k, (design, g) in enumerate(checkpoints.groupby("design", sort=False)):
        m = g.groupby("examples")[["auc", "embedding_auc"]].mean()
        bx.plot(m.index, m["auc"], "o-", color=plt.cm.tab10(k + 3), label=design)
        bx.axhline(m["embedding_auc"].iloc[0], ls="--", color="0.4", lw=0.8)
    for k, (design, g) in enumerate(curves.groupby("design", sort=False)):
        fin = g[g["run"] == "final:all"]
        cx.plot(fin["examples"], fin["loss"].rolling(10, min_periods=1).mean(), ".-", ms=3, color=plt.cm.tab10(k + 3),
                label=design)
    bx.set(xlabel="training examples", ylabel="mean left-out-source AUC",
           title="Stopping point (networks; embedding dashed)")
    cx.set(xlabel="training examples", ylabel="training loss", title="Training curve (all sources)")
    bx.legend(fontsize=7)
    cx.legend(fontsize=7)
    return fig
