"""Analysis 4c: the guard's guarantees as a deployment would test them.

- :func:`ltt_violations`: the two-sided rule (Learn-then-Test, both rates) over many calibration draws.
  The gold set is the population: each draw takes ``n_cal`` citations from it with replacement (so the
  draws are i.i.d. from a distribution whose risks are known exactly: the gold set's own rates at each
  threshold), calibrates, and counts a **violation** when some certified threshold has a population miss
  rate above alpha or a population false-flag rate above beta. The guarantee says violations happen in
  at most delta of the draws; the table gives the frequency with its Clopper-Pearson 95% interval.
- :func:`certified_beta`: on the whole gold set, the smallest false-flag rate (0.01 steps) certifiable
  with the catch rate 1 - alpha: what a 90% catch costs with this verifier.
- :func:`monitor_alarms`: the drift monitor's false-alarm rate on exchangeable streams (reference and
  stream are the two halves of a random split of the gold set), which Ville's inequality bounds by delta,
  and its detection delay on the transfer setting (reference: the whole gold set; stream: the hard set's
  citations in random order), beside how far the catch rate has really fallen there.
- :func:`group_vs_pooled`: per-group (Mondrian) against pooled two-sided calibration, on random halves of
  the gold set, with its groups as the deployment's groups; a group whose half certifies nothing falls
  back to the pooled threshold, as the guard does.
- :func:`shift_alarm`: the label-shift robust alarm (and the older mixture monitor beside it) on streams
  whose supported share differs from the calibration's while the unsupported class is unchanged: the
  reference is half of each class of the gold set, the stream draws (with replacement) from the other half,
  supported with probability ``share``. Every alarm there is false; the rate must stay under delta. Also its
  detection rate and delay on the transfer setting, beside the label test's on the same streams (every
  citation labelled as it comes; the delay is the labels it took).
- :func:`precision_guarantee`: the precision (false-discovery) guarantee for readers over calibration draws,
  as :func:`ltt_violations` does for the two-sided one: a draw **violates** when any certified threshold has
  a population false-discovery rate above q at the assumed supported share (the bound's worst case); with
  the share of supported citations each guarantee keeps (the precision one's and the catch-rate PAC one's).
- :func:`label_test`: the anytime-valid label test at a true miss rate of exactly alpha, labels posted in
  batches of several sizes (every post a look), beside a fixed-n binomial test re-run at every look; and
  its power (labels until void) at a true miss rate of 2 alpha.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration.binomial import upper_bound
from citebound.calibration.conformal import conformal_threshold, tau_warnings_silenced
from citebound.calibration.eprocess import alarm_times, log_wealth
from citebound.calibration.ltt import calibrate_two_sided, default_grid
from citebound.calibration.monitor import DriftMonitor
from citebound.calibration.precision import fdr_bounds
from citebound.study.analysis._common import seeded_rng


def _scored(df: pd.DataFrame, v: str) -> tuple[np.ndarray, np.ndarray]:
    s = df[f"score_{v}"].to_numpy(float)
    ok = np.isfinite(s) & df["label"].notna().to_numpy()
    return s[ok], df["label"].to_numpy()[ok].astype(int)


def grid_for(scores: np.ndarray, size: int = 201) -> np.ndarray:
    """The fixed grid of thresholds: 0..1 (every CPU verifier's scale), widened to whole numbers around
    a scale outside it."""
    lo, hi = min(0.0, float(np.floor(scores.min()))), max(1.0, float(np.ceil(scores.max())))
    return default_grid(lo, hi, size)


def cp_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval of a rate with k events in n."""
    tail = (1 - level) / 2
    hi = upper_bound(k, n, tail)
    lo = 1 - upper_bound(n - k, n, tail)
    return (0.0 if k == 0 else lo), hi


def population_risks(s: np.ndarray, y: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The population's miss rate (unsupported with score > tau) and false-flag rate (supported with
    score <= tau) at each tau of the grid."""
    neg, pos = s[y == 0], s[y == 1]
    miss = (neg[None, :] > grid[:, None]).mean(axis=1)
    flag = (pos[None, :] <= grid[:, None]).mean(axis=1)
    return miss, flag


def ltt_violations(cal: dict[str, pd.DataFrame], alpha: float, betas: Sequence[float], delta: float, draws: int,
                   cal_fraction: float, seed: int, methods: Sequence[str] = ("bonferroni",)) -> pd.DataFrame:
    rows = []
    for v, df in cal.items():
        s, y = _scored(df, v)
        grid = grid_for(s)
        miss, flag = population_risks(s, y, grid)
        n_cal = max(2, int(round(cal_fraction * len(s))))
        for method, beta in ((m, b) for m in methods for b in betas):
            bad = (miss > alpha) | (flag > beta)
            rng = seeded_rng(seed)
            violations = certified = 0
            chosen = []
            for _ in range(draws):
                idx = rng.integers(0, len(s), n_cal)
                r = calibrate_two_sided(s[idx], y[idx], alpha, beta, delta, grid, method, best_bounds=False)
                if r.certified:
                    certified += 1
                    hit = np.isin(grid, r.certified)
                    violations += bool(bad[hit].any())
                    chosen.append(int(np.flatnonzero(grid == r.tau)[0]))
            lo, hi = cp_interval(violations, draws)
            c = np.asarray(chosen, int)
            rows.append({
                "verifier": v, "method": method, "alpha": alpha, "beta": beta, "delta": delta, "n_population": len(s),
                "n_unsupported": int((y == 0).sum()), "n_cal": n_cal, "draws": draws,
                "certified_share": certified / draws, "violations": violations, "violation_rate": violations / draws,
                "ci_low": lo, "ci_high": hi, "within_delta": bool(lo <= delta),
                "median_tau": float(np.median(grid[c])) if len(c) else np.nan,
                "mean_miss_at_tau": float(miss[c].mean()) if len(c) else np.nan,
                "mean_false_flag_at_tau": float(flag[c].mean()) if len(c) else np.nan,
                "population_tau_feasible": bool((~bad).any()),
            })
    return pd.DataFrame(rows)


def certified_beta(cal: dict[str, pd.DataFrame], alphas: Sequence[float], delta: float) -> pd.DataFrame:
    rows = []
    for v, df in cal.items():
        s, y = _scored(df, v)
        grid = grid_for(s)
        for alpha in alphas:
            beta = tau = None
            for b in np.round(np.arange(0.01, 1.0, 0.01), 2):
                r = calibrate_two_sided(s, y, alpha, float(b), delta, grid, best_bounds=False)
                if r.certified:
                    beta, tau = float(b), r.tau
                    break
            miss, flag = population_risks(s, y, np.asarray([tau if tau is not None else np.nan]))
            rows.append({"verifier": v, "alpha": alpha, "delta": delta, "n_unsupported": int((y == 0).sum()),
                         "n_supported": int((y == 1).sum()), "certified_beta": beta, "tau": tau,
                         "empirical_miss_at_tau": float(miss[0]) if tau is not None else np.nan,
                         "empirical_false_flag_at_tau": float(flag[0]) if tau is not None else np.nan})
    return pd.DataFrame(rows)


def monitor_alarms(cal: dict[str, pd.DataFrame], hard: dict[str, pd.DataFrame], alpha: float, delta: float,
                   streams: int, seed: int) -> pd.DataFrame:
    rows = []
    for v, df in cal.items():
        s, y = _scored(df, v)
        rng = seeded_rng(seed)
        alarms = 0
        for b in range(streams):
            idx = rng.permutation(len(s))
            m = DriftMonitor(s[idx[:len(s) // 2]], delta=delta, seed=b)
            m.update(s[idx[len(s) // 2:]])
            alarms += m.alarm_at is not None
        lo, hi = cp_interval(alarms, streams)
        base = {"verifier": v, "delta": delta, "streams": streams, "reference": len(s) // 2}
        rows.append(base | {"setting": "exchangeable", "stream_length": len(s) - len(s) // 2, "alarms": alarms,
                            "alarm_rate": alarms / streams, "ci_low": lo, "ci_high": hi,
                            "within_delta": bool(lo <= delta), "median_delay": np.nan, "p90_delay": np.nan,
                            "catch_rate_at_tau": np.nan, "catch_rate_before_alarm": np.nan})
        if v not in hard:
            continue
        hs, hy = _scored(hard[v], v)
        with tau_warnings_silenced():
            tau = conformal_threshold(s[y == 0], alpha)  # the guard's one-sided threshold on the easy negatives
        delays, before = [], []
        for b in range(streams):
            order = rng.permutation(len(hs))
            m = DriftMonitor(s, delta=delta, seed=b)
            m.update(hs[order])
            at = m.alarm_at
            delays.append(np.inf if at is None else at)
            seen = order[:at] if at is not None else order
            neg = hs[seen][hy[seen] == 0]
            if len(neg):
                before.append(float(np.mean(neg <= tau)))
        d = np.asarray(delays, float)
        fin = d[np.isfinite(d)]
        lo, hi = cp_interval(len(fin), streams)
        rows.append(base | {"reference": len(s), "setting": "transfer", "stream_length": len(hs), "alarms": len(fin),
                            "alarm_rate": len(fin) / streams, "ci_low": lo, "ci_high": hi, "within_delta": None,
                            "median_delay": float(np.median(fin)) if len(fin) else np.nan,
                            "p90_delay": float(np.percentile(fin, 90)) if len(fin) else np.nan,
                            "catch_rate_at_tau": float(np.mean(hs[hy == 0] <= tau)) if (hy == 0).any() else np.nan,
                            "catch_rate_before_alarm": float(np.median(before)) if before else np.nan})
    return pd.DataFrame(rows)


def group_vs_pooled(cal: dict[str, pd.DataFrame], group_col: str, alpha: float, beta: float, delta: float,
                    splits: int, seed: int, min_group: int) -> pd.DataFrame:
    rows = []
    for v, df in cal.items():
        d = df[np.isfinite(df[f"score_{v}"]) & df["label"].notna()]
        s, y = d[f"score_{v}"].to_numpy(float), d["label"].to_numpy().astype(int)
        groups = d[group_col].astype(str).to_numpy()
        grid = grid_for(s)
        rng = seeded_rng(seed)
        names = [g for g in sorted(set(groups)) if (groups == g).sum() >= min_group]
        acc = {g: {"pooled": [], "group": [], "fallback": 0} for g in names}
        uncertified = 0
        for _ in range(splits):
            half = rng.random(len(s)) < 0.5
            pooled = calibrate_two_sided(s[half], y[half], alpha, beta, delta, grid, best_bounds=False).tau
            if pooled is None:  # the guard refuses such a calibration: nothing to compare in this split
                uncertified += 1
                continue
            for g in names:
                gm = groups == g
                own = calibrate_two_sided(s[half & gm], y[half & gm], alpha, beta, delta, grid, best_bounds=False).tau
                acc[g]["fallback"] += own is None
                test = ~half & gm
                ts, ty = s[test], y[test]
                for key, tau in (("pooled", pooled), ("group", pooled if own is None else own)):
                    miss = float(np.mean(ts[ty == 0] > tau)) if (ty == 0).any() else np.nan
                    ff = float(np.mean(ts[ty == 1] <= tau)) if (ty == 1).any() else np.nan
                    acc[g][key].append((miss, ff))
        for g in names:
            n = len(acc[g]["pooled"])
            p, q = np.asarray(acc[g]["pooled"], float).reshape(-1, 2), np.asarray(acc[g]["group"], float).reshape(-1, 2)

            def mean(x: np.ndarray) -> float:
                x = x[np.isfinite(x)] if x.dtype != bool else x
                return float(np.mean(x)) if len(x) else np.nan

            rows.append({"verifier": v, "group": g, "n": int((groups == g).sum()),
                         "n_unsupported": int(((groups == g) & (y == 0)).sum()), "alpha": alpha, "beta": beta,
                         "delta": delta, "splits": splits, "pooled_uncertified_splits": uncertified,
                         "fallback_share": acc[g]["fallback"] / n if n else np.nan,
                         "pooled_miss": mean(p[:, 0]), "group_miss": mean(q[:, 0]),
                         "pooled_false_flag": mean(p[:, 1]), "group_false_flag": mean(q[:, 1]),
                         "pooled_share_miss_above_alpha": mean(p[np.isfinite(p[:, 0]), 0] > alpha) if n else np.nan,
                         "group_share_miss_above_alpha": mean(q[np.isfinite(q[:, 0]), 0] > alpha) if n else np.nan})
    return pd.DataFrame(rows, columns=GROUP_COLUMNS)


GROUP_COLUMNS = ["verifier", "group", "n", "n_unsupported", "alpha", "beta", "delta", "splits",
                 "pooled_uncertified_splits", "fallback_share", "pooled_miss", "group_miss", "pooled_false_flag",
                 "group_false_flag", "pooled_share_miss_above_alpha", "group_share_miss_above_alpha"]


def population_fdr(miss: np.ndarray, flag: np.ndarray, share: float) -> np.ndarray:
    """The false-discovery rate among passed citations at each tau, at supported share ``share``."""
    bad, good = (1 - share) * miss, share * (1 - flag)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bad + good > 0, bad / (bad + good), 0.0)


def precision_guarantee(cal: dict[str, pd.DataFrame], q: float, share_min: float, alpha: float, delta: float,
                        draws: int, cal_fraction: float, seed: int) -> pd.DataFrame:
    """Realised violations of the precision guarantee over calibration draws (CP 95%), and the supported share
    kept (population 1 - false-flag rate) at its deployed tau and at the catch-rate guarantee's PAC tau."""
    from citebound.calibration.conformal import pac_rank

    rows = []
    for v, df in cal.items():
        s, y = _scored(df, v)
        grid = grid_for(s)
        miss, flag = population_risks(s, y, grid)
        fdr = population_fdr(miss, flag, share_min)
        n_cal = max(2, int(round(cal_fraction * len(s))))
        rng = seeded_rng(seed)
        violations = certified = 0
        kept, kept_pac, fdr_at = [], [], []
        for _ in range(draws):
            idx = rng.integers(0, len(s), n_cal)
            cs, cy = s[idx], y[idx]
            ok = fdr_bounds(cs, cy, grid, delta, share_min) <= q
            if ok.any():
                certified += 1
                violations += bool((fdr[ok] > q).any())  # any certified tau, not only the deployed one
                t = int(np.flatnonzero(ok)[0])  # the smallest certified tau keeps the most supported citations
                kept.append(1 - flag[t])
                fdr_at.append(fdr[t])
            neg = np.sort(cs[cy == 0])
            k = pac_rank(len(neg), alpha, delta)
            if k <= len(neg):
                tau_pac = neg[k - 1]
                kept_pac.append(float(np.mean(s[y == 1] > tau_pac)))
        lo, hi = cp_interval(violations, draws)
        rows.append({"verifier": v, "q": q, "supported_share_min": share_min, "delta": delta, "alpha": alpha,
                     "n_population": len(s), "n_cal": n_cal, "draws": draws, "certified_share": certified / draws,
                     "violations": violations, "violation_rate": violations / draws, "ci_low": lo, "ci_high": hi,
                     "within_delta": bool(lo <= delta),
                     "mean_fdr_at_tau": float(np.mean(fdr_at)) if fdr_at else np.nan,
                     "supported_kept_precision": float(np.mean(kept)) if kept else 0.0,
                     "supported_kept_catch_pac": float(np.mean(kept_pac)) if kept_pac else np.nan})
    return pd.DataFrame(rows)


def _half_by_class(s: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """([reference unsupported, reference supported], [pool unsupported, pool supported]): half of each class."""
    ref, pool = [], []
    for c in (0, 1):
        x = rng.permutation(s[y == c])
        ref.append(x[: len(x) // 2])
        pool.append(x[len(x) // 2:])
    return ref, pool


def labels_to_void(order_labels: np.ndarray, order_missed: np.ndarray, alpha: float, delta: float) -> np.ndarray:
    """Per stream (row), how many citations had been labelled when the label e-process turned void (0: never):
    ``order_labels`` marks the unsupported ones (the only ones the test counts), ``order_missed`` those the
    deployed threshold passed. Labels arrive one at a time, in stream order; the e-process is the average of
    :func:`log_wealth`'s bets, as the guard's :class:`~citebound.calibration.eprocess.MissRateTest` does."""
    k = np.cumsum(order_labels & order_missed, axis=1)
    n = np.cumsum(order_labels, axis=1)
    parts = log_wealth(k, n, alpha)
    top = parts.max(axis=2, keepdims=True)
    lm = (top + np.log(np.mean(np.exp(parts - top), axis=2, keepdims=True)))[..., 0]
    reached = lm >= np.log(1 / delta)
    return np.where(reached.any(axis=1), reached.argmax(axis=1) + 1, 0)


def shift_alarm(cal: dict[str, pd.DataFrame], hard: dict[str, pd.DataFrame], delta: float, shares: Sequence[float],
                streams: int, length: int, seed: int, mixture: bool = True, alpha: float = 0.1) -> pd.DataFrame:
    """False-suspect rates of the alarms at each supported share (CP 95%), and on the transfer setting the
    robust alarm's detection beside the label test's: the same streams, each citation labelled as it comes,
    the e-process testing the deployed threshold (the conformal tau at ``alpha`` on the whole calibration) on
    the unsupported ones (``realised_miss``: how often that tau really passes the hard set's unsupported
    citations). ``mixture``: also the older mixture monitor, on the same streams."""
    rows = []
    for v, df in cal.items():
        s, y = _scored(df, v)
        if not ((y == 0).sum() >= 4 and (y == 1).sum() >= 4):
            continue
        rng = seeded_rng(seed)
        ref, pool = _half_by_class(s, y, rng)
        base = {"verifier": v, "delta": delta, "streams": streams, "stream_length": length,
                "calibration_share": len(ref[1]) / (len(ref[0]) + len(ref[1]))}
        for share in shares:
            sup = rng.random((streams, length)) < share
            stream = np.where(sup, rng.choice(pool[1], (streams, length)), rng.choice(pool[0], (streams, length)))
            thetas = rng.random((streams, length))
            at = alarm_times(ref[0], ref[1], stream, thetas, delta)
            found = {"label-shift robust": int((at > 0).sum())}
            if mixture:
                both = np.concatenate(ref)
                found["mixture (before 0.3.1)"] = sum(DriftMonitor(both, delta=delta, seed=b).update(stream[b], thetas[b])
                                                      != "ok" for b in range(streams))
            for alarm, k in found.items():
                lo, hi = cp_interval(k, streams)
                rows.append(base | {"alarm": alarm, "setting": "supported share", "supported_share": share,
                                    "alarms": k, "alarm_rate": k / streams, "ci_low": lo, "ci_high": hi,
                                    "within_delta": bool(lo <= delta), "median_delay": np.nan, "p90_delay": np.nan})
        if v not in hard:
            continue
        hs, hy = _scored(hard[v], v)
        idx = np.stack([rng.permutation(len(hs)) for _ in range(streams)])
        order = hs[idx]
        at = alarm_times(s[y == 0], s[y == 1], order, rng.random(order.shape), delta)
        with tau_warnings_silenced():
            tau = conformal_threshold(s[y == 0], alpha)
        realised = float(np.mean(hs[hy == 0] > tau)) if np.isfinite(tau) and (hy == 0).any() else np.nan
        voids = (labels_to_void(hy[idx] == 0, order > tau, alpha, delta) if np.isfinite(tau)
                 else np.zeros(streams, int))
        for alarm, times in (("label-shift robust", at), ("labels (anytime-valid e-process)", voids)):
            fired = times[times > 0]
            lo, hi = cp_interval(len(fired), streams)
            rows.append(base | {"stream_length": len(hs), "calibration_share": float(np.mean(y == 1)),
                                "alarm": alarm, "setting": "transfer", "supported_share": np.nan,
                                "alarms": len(fired), "alarm_rate": len(fired) / streams, "ci_low": lo, "ci_high": hi,
                                "within_delta": None, "realised_miss": realised,
                                "median_delay": float(np.median(fired)) if len(fired) else np.nan,
                                "p90_delay": float(np.percentile(fired, 90)) if len(fired) else np.nan})
    return pd.DataFrame(rows)


def label_test(alpha: float, delta: float, batchings: Sequence[tuple[int, int]], draws: int, seed: int
               ) -> pd.DataFrame:
    """False voids of the label e-process at a true miss rate of alpha, per batching ``(posts, size)``, beside a
    fixed-n binomial test re-run at every post; and its power at 2 alpha (one label per post)."""
    from scipy import stats

    rng = seeded_rng(seed)
    rows = []

    def e_voids(paths: np.ndarray, size: int) -> np.ndarray:
        k = np.cumsum(paths, axis=1)[:, size - 1::size]
        n = np.arange(size, paths.shape[1] + 1, size)
        parts = log_wealth(k, np.broadcast_to(n, k.shape), alpha)
        top = parts.max(axis=2, keepdims=True)
        lm = (top + np.log(np.mean(np.exp(parts - top), axis=2, keepdims=True)))[..., 0]
        reached = lm >= np.log(1 / delta)
        return np.where(reached.any(axis=1), n[reached.argmax(axis=1)], 0)

    for posts, size in batchings:
        paths = (rng.random((draws, posts * size)) < alpha).astype(int)
        k = np.cumsum(paths, axis=1)[:, size - 1::size]
        n = np.arange(size, posts * size + 1, size)
        naive = (stats.binom.sf(k - 1, n[None, :], alpha) < delta).any(axis=1)
        for test, voided in (("e-process (anytime-valid)", e_voids(paths, size) > 0),
                             ("fixed-n binomial at every post", naive)):
            v = int(voided.sum())
            lo, hi = cp_interval(v, draws)
            rows.append({"test": test, "delta": delta, "true_miss_rate": alpha, "posts": posts, "labels_per_post": size,
                         "draws": draws, "voids": v, "void_rate": v / draws, "ci_low": lo, "ci_high": hi,
                         "within_delta": bool(lo <= delta), "median_labels_to_void": np.nan})
    total = max(p * s for p, s in batchings)
    at = e_voids((rng.random((draws, total)) < 2 * alpha).astype(int), 1)
    v = int((at > 0).sum())
    lo, hi = cp_interval(v, draws)
    rows.append({"test": "e-process (anytime-valid)", "delta": delta, "true_miss_rate": 2 * alpha, "posts": total,
                 "labels_per_post": 1,
                 "draws": draws, "voids": v, "void_rate": v / draws, "ci_low": lo, "ci_high": hi, "within_delta": None,
                 "median_labels_to_void": float(np.median(at[at > 0])) if v else np.nan})
    return pd.DataFrame(rows)
