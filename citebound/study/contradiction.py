"""Rule train_contradiction: the contradiction check (citebound.training.contradiction), selected on transfer.

- :func:`loso`: for each refute source left out, the head (each L2 strength) trained on the others' supporting
  and refuting pairs; on the left-out source, the AUC of supporting vs refuting evidence and of supporting vs
  all unsupported (refuting and not-enough-information) evidence, for embedding and for embedding with the
  veto, with a paired bootstrap CI of the gain. The strength with the best mean gain (support vs refute) is
  chosen; nothing else is tuned.
- :func:`gold_rows`: the final head (all refute sources) on the expert gold: SciFact (every unsupported claim
  there is a contradiction) and the attribution gold's evaluation split (supported vs unsupported).
- :func:`catch_rows`: the catch-rate guarantee on held-out gold: tau calibrated (split conformal, alpha) on
  one half of the attribution gold's evaluation split (by answer), the realised catch rate (CP 95%) and the
  share of supported citations kept on the other half, and on SciFact's contradictions, for both verifiers.
- :func:`decide`: the adoption rule, fixed in advance (:data:`citebound.training.contradiction.ADOPTION`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citebound.training import contradiction as K


def _pairs_scores(head: Mapping[str, Any], units: np.ndarray, owner: np.ndarray, n: int, veto_below: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    emb = K.embedding_score(units)
    return K.pair_max(emb, owner, n), K.pair_max(K.combined(emb, K.p_support(head, units), veto_below), owner, n)


def _best_window(units: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Each pair's training instance: its window with the highest cos_l6 (the one embedding scores it by)."""
    cos = units[:, K.FEATURES.index("cos_l6")]
    order = np.lexsort((-cos, owner))
    first = np.unique(owner[order], return_index=True)[1]
    out = np.zeros((n, units.shape[1]))
    out[owner[order][first]] = units[order][first]
    return out


def loso(train: pd.DataFrame, units: np.ndarray, owner: np.ndarray, cs: Sequence[float], veto_below: float,
         n_boot: int, seed: int) -> tuple[pd.DataFrame, float]:
    kind = train["kind"].to_numpy()
    src = train["source"].to_numpy()
    inst = _best_window(units, owner, len(train))
    rows = []
    for c in cs:
        for held in K.REFUTE_SOURCES:
            fit_on = (src != held) & np.isin(kind, ["support", "refute"])
            head = K.fit(inst[fit_on], (kind[fit_on] == "support").astype(int), c)
            here = np.flatnonzero(src == held)
            if not len(here):
                continue
            m = np.isin(owner, here)
            remap = {p: k for k, p in enumerate(here)}
            emb, comb = _pairs_scores(head, units[m], np.array([remap[o] for o in owner[m]]), len(here), veto_below)
            k = kind[here]
            rng = np.random.default_rng(seed)
            for ev, keep, y in (("support vs refute", np.isin(k, ["support", "refute"]), k == "support"),
                                ("support vs all unsupported", np.ones(len(k), bool), k == "support")):
                if not (y[keep].any() and (~y[keep]).any()):
                    continue
                a_old, a_new, gain, lo, hi = K.auc_gain(comb[keep], emb[keep], y[keep].astype(int), n_boot, rng)
                rows.append({"C": c, "evaluation": f"loso:{held}", "comparison": ev, "n_support": int(y[keep].sum()),
                             "n_other": int((~y[keep]).sum()), "embedding_auc": a_old, "check_auc": a_new,
                             "gain": gain, "gain_ci_low": lo, "gain_ci_high": hi,
                             "vetoed_support": float(np.mean(comb[keep][y[keep]] < emb[keep][y[keep]]))})
    table = pd.DataFrame(rows)
    sr = table[table.comparison == "support vs refute"]
    best = float(sr.groupby("C")["gain"].mean().idxmax())
    return table, best


def gold_rows(head: Mapping[str, Any], gold: Mapping[str, tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray]]],
              veto_below: float, n_boot: int, seed: int) -> tuple[pd.DataFrame, dict[str, tuple[np.ndarray, ...]]]:
    rows, scored = [], {}
    for name, (g, (units, owner)) in gold.items():
        emb, comb = _pairs_scores(head, units, owner, len(g), veto_below)
        y = g["label"].to_numpy().astype(int)
        scored[name] = (emb, comb, y)
        a_old, a_new, gain, lo, hi = K.auc_gain(comb, emb, y, n_boot, np.random.default_rng(seed))
        comparison = "support vs contradict" if name == "scifact_dev" else "support vs all unsupported"
        rows.append({"C": head["C"], "evaluation": name, "comparison": comparison, "n_support": int(y.sum()),
                     "n_other": int((y == 0).sum()), "embedding_auc": a_old, "check_auc": a_new, "gain": gain,
                     "gain_ci_low": lo, "gain_ci_high": hi, "vetoed_support": float(np.mean(comb[y == 1] < emb[y == 1]))})
    return pd.DataFrame(rows), scored


def catch_rows(scored: Mapping[str, tuple[np.ndarray, ...]], items: np.ndarray, alpha: float, seed: int,
               splits: int = 50) -> pd.DataFrame:
    """Per verifier: tau on half of the attribution gold's answers, catch and supported kept on the other half
    (averaged over seeded splits, with the CP interval of the pooled held-out catches) and on SciFact."""
    from citebound.calibration.conformal import conformal_threshold
    from citebound.study.analysis.guarantees import cp_interval

    emb_a, comb_a, y_a = scored["attribution_gold_eval"]
    emb_s, comb_s, y_s = scored["scifact_dev"]
    rng = np.random.default_rng(seed)
    uniq = np.unique(items)
    out = []
    for name, s_a, s_s in (("embedding", emb_a, emb_s), ("embedding+contradiction", comb_a, comb_s)):
        caught = total = 0
        kept, sf_caught, sf_kept = [], [], []
        for _ in range(splits):
            half = np.isin(items, rng.choice(uniq, len(uniq) // 2, replace=False))
            tau = conformal_threshold(s_a[half & (y_a == 0)], alpha)
            test = ~half
            caught += int((s_a[test & (y_a == 0)] <= tau).sum())
            total += int((test & (y_a == 0)).sum())
            kept.append(float(np.mean(s_a[test & (y_a == 1)] > tau)))
            sf_caught.append(float(np.mean(s_s[y_s == 0] <= tau)))
            sf_kept.append(float(np.mean(s_s[y_s == 1] > tau)))
        lo, hi = cp_interval(caught, total)
        out.append({"verifier": name, "alpha": alpha, "splits": splits, "held_out_catch": caught / total,
                    "catch_ci_low": lo, "catch_ci_high": hi, "keeps_guarantee": bool(hi >= 1 - alpha),
                    "held_out_supported_kept": float(np.mean(kept)),
                    "scifact_contradictions_caught": float(np.mean(sf_caught)),
                    "scifact_supported_kept": float(np.mean(sf_kept))})
    return pd.DataFrame(out)


def decide(selection: pd.DataFrame, catch: pd.DataFrame, cost_ratio: float | None, c: float) -> dict[str, Any]:
    """The adoption rule, fixed before any result: a default stage only if the mean left-out
    support-vs-refute gain and the SciFact gain are each >= min_auc_gain, the catch guarantee holds on
    held-out gold, and the cost ratio is <= max_cost_ratio (None: not measured here, so not adopted)."""
    rule = K.ADOPTION
    sr = selection[(selection.C == c) & (selection.comparison == "support vs refute")
                   & selection.evaluation.str.startswith("loso:")]
    sf = selection[selection.evaluation == "scifact_dev"]
    mean_gain = float(sr["gain"].mean())
    sf_gain = float(sf["gain"].iloc[0]) if len(sf) else float("nan")
    keeps = bool(catch.set_index("verifier").loc["embedding+contradiction", "keeps_guarantee"])
    checks = {"loso_mean_gain": mean_gain >= rule["min_auc_gain"], "scifact_gain": sf_gain >= rule["min_auc_gain"],
              "catch_guarantee_kept": keeps, "cost": cost_ratio is not None and cost_ratio <= rule["max_cost_ratio"]}
    return {"rule": rule, "C": c, "loso_mean_gain": mean_gain, "scifact_gain": sf_gain, "cost_ratio": cost_ratio,
            "checks": checks, "adopted": all(checks.values())}


def model_card(decision: Mapping[str, Any], selection: pd.DataFrame, catch: pd.DataFrame, counts: pd.DataFrame,
               licences: Mapping[str, str], removed: int, timings: Mapping[str, float], sha256: str) -> str:
    fmt = {"floatfmt": ".3f"}
    verdict = ("**adopted** as a default stage" if decision["adopted"] else
               "**not adopted** as a default: it ships as the opt-in verifier `embedding+contradiction`")
    failed = [k for k, ok in decision["checks"].items() if not ok]
    cost = "not measured" if decision["cost_ratio"] is None else f"{decision['cost_ratio']:.2f}"
    return f"""# Model card: the contradiction check (`embedding+contradiction`)

A logistic head on frozen all-MiniLM-L6-v2 features of a (claim, passage window) unit, trained on
**supporting vs refuting** evidence, used as a veto on the embedding verifier: a window the head judges
contradicted (P(support) < {K.VETO_BELOW}) loses 1 from its score. ONNX: `head.onnx` (sha256 `{sha256}`), run on ONNX
Runtime with the shipped graph; no torch.

## Data
Supporting and refuting pairs of the staged, licence-clean sets ({removed} training pairs removed because their
claim is an evaluation claim); not-enough-information pairs are left out of training and kept for evaluation:

{counts.to_markdown(index=False)}

Licences: {"; ".join(f"{k}: {v}" for k, v in sorted(licences.items()))}.

## Selection on transfer (L2 strength C = {decision['C']:g}, chosen by the mean left-out support-vs-refute gain)

{selection.to_markdown(index=False, **fmt)}

## The catch-rate guarantee on held-out gold (alpha = {decision['rule']['alpha']})

{catch.to_markdown(index=False, **fmt)}

## Decision (rule fixed in advance)

Default stage only if the mean left-out support-vs-refute AUC gain and the SciFact gain are each >=
{decision['rule']['min_auc_gain']}, the catch guarantee holds on held-out gold, and it costs <=
{decision['rule']['max_cost_ratio']}x the guard's time per answer. Mean left-out gain
{decision['loso_mean_gain']:+.3f}, SciFact gain {decision['scifact_gain']:+.3f}, cost ratio {cost}:
{verdict}{' (fails: ' + ', '.join(failed) + ')' if failed else ''}.

## What it cannot do
It sees contradiction only through features of two separately encoded texts (cosines, token alignment,
negation and direction cues): it does not read the pair jointly as an entailment model does. It misses
contradictions stated without those cues (a different number, entity or population) and it vetoes some
supported citations (`vetoed_support` above). Its evidence is English sentences, abstracts, tables and
Wikipedia; use an NLI verifier (`deberta_nli`, `minicheck_*`) when contradiction must be caught.

Timings on this machine: {", ".join(f"{k} {v:.0f} s" for k, v in timings.items())}.
"""
