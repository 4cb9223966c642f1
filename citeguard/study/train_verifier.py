"""Rule train_verifier: fit the frozen-feature head (:mod:`citeguard.study.frozen_head`) on the staged
claim-evidence sets and select it on transfer.

Selection never looks at the training sources' own held-out pairs:
- leave-one-source-out (LOSO): fit on every source of a variant but one, AUC on the one left out;
  the L2 strength ``C`` is the one with the best mean LOSO AUC;
- the project's expert gold, out of domain for every staged source: the attribution gold's
  evaluation split and SciFact dev, each with a paired answer-bootstrap CI of the AUC difference
  against the embedding verifier (the same encoder's layer-6 cosine, ``cos_l6``).
An in-distribution AUC (a seeded 80/20 split of the training pairs) is reported and chooses nothing.

Two variants: all sources, and the domain-matched (biomedical) ones. Adoption needs the chosen
variant to beat embedding by ``adopt_margin`` AUC on both gold sets with the CI excluding 0, and to
lose to embedding on no left-out source.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import stats as st
from ..io import DataError
from .frozen_head import FEATURES, best_window, fit_head, pair_scores

BASELINE = "cos_l6"  # the embedding verifier's score, up to the monotone (cos + 1) / 2


def sample_per_source(pairs: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """At most ``n`` pairs per source, drawn without replacement (seeded), in a stable order."""
    rng = np.random.default_rng(seed)
    parts = []
    for _, g in pairs.groupby("source", sort=True):
        parts.append(g.iloc[np.sort(rng.choice(len(g), size=min(n, len(g)), replace=False))])
    return pd.concat(parts, ignore_index=True) if parts else pairs.iloc[:0]


def auc(y: np.ndarray, s: np.ndarray) -> float:
    y = np.asarray(y, int)
    return st.roc_auc(np.asarray(s, float), y) if 0 < y.sum() < len(y) else float("nan")


def paired_auc_difference(y: np.ndarray, s_new: np.ndarray, s_base: np.ndarray, clusters: np.ndarray,
                          n_boot: int, seed: int) -> tuple[float, float, float]:
    """AUC(new) - AUC(base) and its 95% CI, resampling clusters (answers or claims), both scores on the
    same resample."""
    y, s_new, s_base = np.asarray(y, int), np.asarray(s_new, float), np.asarray(s_base, float)
    codes, uniq = pd.factorize(pd.Series(clusters))
    members = [np.flatnonzero(codes == k) for k in range(len(uniq))]
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_boot):
        idx = np.concatenate([members[k] for k in rng.integers(len(members), size=len(members))])
        if 0 < y[idx].sum() < len(idx):
            diffs.append(auc(y[idx], s_new[idx]) - auc(y[idx], s_base[idx]))
    lo, hi = st.percentile_ci(np.asarray(diffs))
    return auc(y, s_new) - auc(y, s_base), lo, hi


Units = tuple[np.ndarray, np.ndarray]  # (unit features, owning pair index)


def _scores(head: Mapping[str, Any], units: Units, n: int, pick: np.ndarray | None = None) -> np.ndarray:
    """The head's pair scores (max over windows), for all pairs or those where ``pick`` is True."""
    feats, owner = units
    if pick is None:
        return pair_scores(dict(head), feats, owner, n)
    keep = pick[owner]
    new_index = np.cumsum(pick) - 1
    return pair_scores(dict(head), feats[keep], new_index[owner[keep]], int(pick.sum()))


def evaluate(train: pd.DataFrame, train_units: Units, gold: Mapping[str, tuple[pd.DataFrame, Units]],
             variants: Mapping[str, Sequence[str]], grid: Sequence[float], n_boot: int,
             seed: int) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """The design x evaluation table and, per variant, its chosen C and the head fitted on all its sources.

    ``train``: pairs with ``source`` and ``label``; ``train_units``: their (claim, window) unit features and
    owning pair index; ``gold``: {name: (pairs with ``label`` and ``cluster``, their units)}. Heads fit on
    each pair's best window (:func:`best_window`) and score a pair by the max over its windows; the
    baseline is the embedding verifier's score, the best window's ``cos_l6``."""
    rows, chosen = [], {}
    base_col = FEATURES.index(BASELINE)
    x_train = best_window(*train_units, len(train))
    gold_base = {name: best_window(*u, len(g))[:, base_col] for name, (g, u) in gold.items()}
    for variant, sources in variants.items():
        in_v = train["source"].isin(list(sources)).to_numpy()
        tv, xv = train[in_v].reset_index(drop=True), x_train[in_v]
        y = tv["label"].to_numpy(int)
        pos = np.flatnonzero(in_v)

        def held(head, mask_v, pos=pos):  # the head's pair scores on the variant's pairs where mask_v is True
            pick = np.zeros(len(train), bool)
            pick[pos[mask_v]] = True
            return _scores(head, train_units, len(train), pick)

        loso_mean = {}
        for c in grid:
            aucs = []
            for src in sources:
                out = (tv["source"] == src).to_numpy()
                if out.all() or not out.any():
                    continue
                head = fit_head(xv[~out], y[~out], c)
                a, b = auc(y[out], held(head, out)), auc(y[out], xv[out][:, base_col])
                aucs.append(a)
                rows.append({"variant": variant, "C": c, "evaluation": f"loso:{src}", "n": int(out.sum()),
                             "auc": a, "embedding_auc": b, "delta": a - b})
            loso_mean[c] = float(np.nanmean(aucs)) if aucs else float("nan")
        best = max(grid, key=lambda c: (np.nan_to_num(loso_mean[c], nan=-1.0), -c))
        head = fit_head(xv, y, best)
        for name, (g, units) in gold.items():
            yg = g["label"].to_numpy(int)
            sg = _scores(head, units, len(g))
            d, lo, hi = paired_auc_difference(yg, sg, gold_base[name], g["cluster"].to_numpy(), n_boot, seed)
            rows.append({"variant": variant, "C": best, "evaluation": name, "n": len(g), "auc": auc(yg, sg),
                         "embedding_auc": auc(yg, gold_base[name]), "delta": d, "delta_ci_low": lo,
                         "delta_ci_high": hi})
        rng = np.random.default_rng(seed)
        test = holdout_mask(tv["source"], sources, rng)
        h_in = fit_head(xv[~test], y[~test], best)
        a, b = auc(y[test], held(h_in, test)), auc(y[test], xv[test][:, base_col])
        rows.append({"variant": variant, "C": best, "evaluation": "in_distribution", "n": int(test.sum()),
                     "auc": a, "embedding_auc": b, "delta": a - b})
        chosen[variant] = {"C": best, "loso_mean_auc": loso_mean[best], "head": head, "sources": list(sources)}
    table = pd.DataFrame(rows, columns=["variant", "C", "evaluation", "n", "auc", "embedding_auc", "delta",
                                        "delta_ci_low", "delta_ci_high"])
    return table, chosen


def holdout_mask(source: pd.Series, sources: Sequence[str], rng: np.random.Generator) -> np.ndarray:
    """The in-distribution hold-out: a seeded 20% (at least one pair) of each source's rows, drawn source by
    source in the given order."""
    test = np.zeros(len(source), bool)
    for src in sources:
        idx = np.flatnonzero((source == src).to_numpy())
        if len(idx):
            test[rng.choice(idx, size=max(1, len(idx) // 5), replace=False)] = True
    return test


def choose_and_adopt(table: pd.DataFrame, chosen: Mapping[str, Mapping[str, Any]], gold_names: Sequence[str],
                     margin: float) -> dict[str, Any]:
    """The variant with the best mean AUC over the expert gold sets, and whether it is adopted: AUC at
    least ``margin`` above embedding on every gold set with the CI's lower end above 0, and no left-out
    source where it is below embedding."""
    gold = table[table["evaluation"].isin(list(gold_names))]
    means = gold.groupby("variant")["auc"].mean()
    variant = str(means.idxmax())
    g = gold[gold["variant"] == variant].set_index("evaluation")
    c = chosen[variant]["C"]
    loso = table[(table["variant"] == variant) & (table["C"] == c) & table["evaluation"].str.startswith("loso:")]
    reasons = adoption_reasons(g, loso, gold_names, margin)
    return {"variant": variant, "C": c, "adopted": not reasons, "reasons": reasons}


def adoption_reasons(gold: pd.DataFrame, loso: pd.DataFrame, gold_names: Sequence[str], margin: float) -> list[str]:
    """Why a design fails the adoption rule (empty: adopted): on each gold set (``gold`` indexed by
    evaluation) an AUC gain of at least ``margin`` with the CI's lower end above 0; leave-one-source-out
    rows present and none below embedding."""
    reasons = []
    for name in gold_names:
        r = gold.loc[name]
        if not (r["delta"] >= margin and r["delta_ci_low"] > 0):
            reasons.append(f"{name}: AUC {r['auc']:.3f} vs embedding {r['embedding_auc']:.3f} (delta {r['delta']:+.3f}, "
                           f"95% CI {r['delta_ci_low']:+.3f} to {r['delta_ci_high']:+.3f}; needs >= +{margin:.2f}, CI above 0)")
    if loso.empty:
        reasons.append("no leave-one-source-out evaluation for this variant")
    for _, r in loso[loso["delta"] < 0].iterrows():
        reasons.append(f"{r['evaluation']}: AUC {r['auc']:.3f} below embedding's {r['embedding_auc']:.3f}")
    return reasons


def evaluation_rows(table: pd.DataFrame, lead: Callable[[pd.Series], list[str]]) -> list[str]:
    """Markdown rows of an evaluation table: ``lead(row)``'s cells, then evaluation, n, AUC, embedding AUC,
    delta and its 95% CI (empty where there is none)."""
    out = []
    for _, r in table.iterrows():
        ci = "" if pd.isna(r["delta_ci_low"]) else f"{r['delta_ci_low']:+.3f} to {r['delta_ci_high']:+.3f}"
        cells = [*lead(r), str(r["evaluation"]), str(r["n"]), f"{r['auc']:.3f}", f"{r['embedding_auc']:.3f}",
                 f"{r['delta']:+.3f}", ci]
        out.append("| " + " | ".join(cells) + " |")
    return out


def model_card(cfg: Mapping[str, Any], counts: pd.DataFrame, removed: pd.DataFrame, skipped: Mapping[Any, int],
               table: pd.DataFrame, decision: Mapping[str, Any], timings: Mapping[str, float],
               licences: Mapping[str, str]) -> str:
    """The trained verifier's model card (Markdown): data and licences, hyper-parameters, every evaluation,
    the decision and why."""
    lines = ["# citeguard `trained` verifier: frozen-feature head", "",
             f"Design: `{cfg['design']}`: L2 logistic regression (balanced classes) on standardised features "
             f"{', '.join(f'`{f}`' for f in FEATURES)} of the frozen encoder `{cfg['encoder']}`. "
             "A labelled pair trains it through its "
             "600-character window with the highest layer-6 cosine; a pair is scored, like every verifier, by the "
             "maximum over its windows (600 characters at stride 300; claims capped at 600).", "",
             "## Data", "", "| source | domain | pairs used | supported | licence |", "|---|---|---|---|---|"]
    for _, r in counts.iterrows():
        lines.append(f"| {r['source']} | {r['domain']} | {r['pairs']} | {r['supported']} | {licences.get(r['source'], '')} |")
    lines += ["", (f"At most {cfg['max_pairs_per_source']} pairs per source (seed {cfg['seed']}). "
                   if cfg.get("max_pairs_per_source") else "") + "Training claims that are also "
              "claims of an evaluation set were removed first"
              + (f" (of the attribution gold, its evaluation split: its fit split is the training source {FIT_SOURCE})"
                 if FIT_SOURCE in cfg.get("sources", ()) else "") + ":", "",
              "| evaluation set | source | training pairs removed |", "|---|---|---|"]
    lines += [f"| {r['eval_set']} | {r['source']} | {r['removed']} |" for _, r in removed.iterrows() if r["removed"]]
    if not removed["removed"].any():
        lines.append("| (none matched) | | 0 |")
    lines += ["", "Rows the readers could not use: " + (", ".join(f"{s} {why}: {n}" for (s, why), n in sorted(skipped.items()))
                                                      or "none") + ".", "",
              "ExpertQA and HealthVer are reserved for an independent check: not read, trained or tuned on.", "",
              "## Hyper-parameters", "",
              f"- inverse L2 strengths (C) tried: {list(cfg['C'])}; chosen per variant by mean "
              f"{cfg.get('held_out', 'leave-one-source-out')} AUC (rows `loso:<held-out part>`)",
              "- variants: all sources" + (f"; domain-matched {list(cfg['domain_matched'])}" if cfg.get("domain_matched")
                                            else ""),
              f"- bootstrap: {cfg['n_bootstrap']} resamples of answers (attribution gold) or claims (SciFact)", "",
              "## Evaluations (AUC; embedding = the same encoder's layer-6 cosine)", "",
              "| variant | C | evaluation | n | AUC | embedding AUC | delta | 95% CI of delta |",
              "|---|---|---|---|---|---|---|---|"]
    lines += evaluation_rows(table, lambda r: [str(r["variant"]), f"{r['C']:g}"])
    lines += ["", "## Decision", "",
              f"Chosen on the expert gold: variant `{decision['variant']}`, C = {decision['C']:g}. "
              + ("**Adopted**: it beats embedding out of domain by the required margin and loses on no left-out source."
                 if decision["adopted"] else "**Not adopted** (embedding stays the guard's default and `lite`'s panel "
                 "is unchanged):"), ""]
    lines += [f"- {r}" for r in decision["reasons"]]
    lines += ["", "## Cost", ""] + [f"- {k}: {v:.1f} s" for k, v in timings.items()]
    return "\n".join(lines) + "\n"


def claim_folds(claims: Sequence[str], k: int, seed: int) -> list[str]:
    """``fold1`` .. ``fold{k}`` per claim: every copy of a claim (by :func:`claim_key`) in the same fold, the
    distinct claims dealt to folds in a seeded random order (so folds differ in size by at most one claim)."""
    from .train_data import claim_key

    keys = [claim_key(c) for c in claims]
    uniq = list(dict.fromkeys(keys))
    order = np.random.default_rng(seed).permutation(len(uniq))
    fold = {uniq[j]: f"fold{r % k + 1}" for r, j in enumerate(order)}
    return [fold[key] for key in keys]


def train_own(pairs: pd.DataFrame, evals: Mapping[str, pd.DataFrame], *, encoder: str, grid: Sequence[float],
              n_boot: int, seed: int, windowing: Mapping[str, int], folds: int = 5, margin: float = 0.05,
              batch_size: int = 32, threads: int | None = None, progress: bool = True) -> dict[str, Any]:
    """``citeguard train``: the pipeline's frozen-feature head on a lab's own labelled pairs.

    ``pairs``: ``claim``, ``passage``, ``label`` (1 = supported) and ``source`` (None where not given);
    ``evals``: {name: pairs with ``claim``, ``passage``, ``label``}, out-of-domain sets. Training claims that
    match an evaluation claim are removed first (counted). With two or more sources the held-out
    evaluation is leave-one-source-out, else ``folds``-fold cross-validation grouped by claim; either
    way C is chosen on it. Each evaluation set gets the AUC difference against the embedding score with
    a paired bootstrap CI (clusters: claims); the head "beats embedding" by the pipeline's adoption rule.
    Returns the table, removals, head, decision, per-source counts and timings."""
    import time

    from ..verifiers.embedding import resolve_model_path
    from .frozen_head import FrozenFeatures
    from .train_data import dedupe_against

    t0, timings = time.perf_counter(), {}
    pairs = pairs.reset_index(drop=True)
    given = pairs["source"].dropna().astype(str)
    if given.nunique() >= 2 and len(given) == len(pairs):
        sources = pairs["source"].astype(str)
        how = "leave-one-source-out"
    else:
        sources = pd.Series(claim_folds(pairs["claim"].tolist(), folds, seed))
        how = f"{folds}-fold cross-validation grouped by claim"
    pairs = pairs.assign(source=sources.to_numpy(), domain="user")
    kept, removed = dedupe_against(pairs, {n: e["claim"].tolist() for n, e in evals.items()})
    for what, d in (("training", kept), *((f"evaluation set {n!r}", e) for n, e in evals.items())):
        if d["label"].nunique() < 2:
            raise ValueError(f"{what}: needs supported and unsupported pairs (has {len(d)} pairs, "
                             f"labels {sorted(d['label'].unique().tolist())})")
    ff = FrozenFeatures(resolve_model_path(encoder), batch_size=batch_size, threads=threads)
    win = windowing

    def units(d: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        return ff.pair_units(d["claim"].tolist(), d["passage"].tolist(), win["window_chars"], win["stride"],
                             win["claim_cap"], progress=progress)

    t1 = time.perf_counter()
    train_units = units(kept)
    timings[f"features of {len(kept)} training pairs"] = time.perf_counter() - t1
    gold = {}
    for name, e in evals.items():
        e = e.reset_index(drop=True)
        gold[name] = (e.assign(cluster=e["claim"].astype(str)), units(e))
    t1 = time.perf_counter()
    names = sorted(kept["source"].unique())
    table, chosen = evaluate(kept, train_units, gold, {"all": names}, grid, n_boot, seed)
    timings["head fits"] = time.perf_counter() - t1
    if gold:
        decision = choose_and_adopt(table, chosen, list(gold), margin)
    else:
        decision = {"variant": "all", "C": chosen["all"]["C"], "adopted": False,
                    "reasons": ["no evaluation set given (--eval NAME=FILE): nothing out of domain to beat "
                                "embedding on"]}
    timings["total"] = time.perf_counter() - t0
    counts = kept.groupby(["source", "domain"])["label"].agg(pairs="size", supported="sum").reset_index()
    return {"table": table, "removed": removed, "head": chosen["all"]["head"], "decision": decision,
            "counts": counts, "timings": timings, "held_out": how}


GOLD = (("attribution_gold_eval", "calibration_set"), ("scifact_dev", "validation_set"))


def kit_slice_texts(path: str) -> list[str]:
    """The kit's BioASQ slice as claims to dedupe against: each question and each sentence of each answer."""
    from ..citations import split_sentences

    qa = pd.read_csv(path)
    missing = {"question", "answer"} - set(qa.columns)
    if missing:
        raise ValueError(f"{path}: no column(s) {sorted(missing)} (expected the rag-mini-bioasq QA split)")
    out = qa["question"].dropna().astype(str).tolist()
    for a in qa["answer"].dropna().astype(str):
        out += split_sentences(a)
    return out


FIT_SOURCE = "attribution_gold_fit"  # the attribution gold's 'fit' split, trained on like a staged source


def gold_fit_pairs(gold: pd.DataFrame, where: str) -> pd.DataFrame:
    """The attribution gold's ``fit`` split (the questions the stacked verifier is fitted on) as training
    pairs of source ``attribution_gold_fit``: each cited sentence against each passage of its question.
    ``where`` names the set in the error when it has no such split."""
    fit = gold[gold["split"] == "fit"].dropna(subset=["label"]) if "split" in gold.columns else gold.iloc[:0]
    if fit.empty:
        raise DataError(f"{where}: no 'fit' split to train on (train_verifier.sources lists {FIT_SOURCE})")
    return pd.DataFrame({"source": FIT_SOURCE, "domain": "scholarly", "pair_id": FIT_SOURCE + ":" + fit["pair_id"].astype(str),
                         "claim": fit["claim"].astype(str), "evidence": fit["passage"].astype(str),
                         "label": fit["label"].astype(int)}).reset_index(drop=True)


def load_training(train_files: Sequence[str], dedupe_files: Sequence[str], cfg: Mapping[str, Any],
                  dedupe_texts: Sequence[str] = ()) -> dict[str, Any]:
    """What every train_verifier design reads: the staged sets (from where the download rule put them) and,
    where ``train_verifier.sources`` lists ``attribution_gold_fit``, the attribution gold's fit split;
    deduped against the evaluation sets (the attribution gold's evaluation split, every other gold set,
    the kit slice) and sampled per source; and the expert gold sets.

    ``cfg``: the rule's settings (``train_verifier``, ``files``, ``dedupe_sets``, ``calibration_set``,
    ``validation_set``, ``dedupe_texts``: the names of ``dedupe_texts``' files, e.g. ``kit_slice``).
    Returns ``train``, ``removed``, ``read`` (pairs read), ``kept`` (after dedupe),
    ``skipped`` and ``gold`` ({name: pairs with ``label`` and ``cluster``})."""
    from .train_data import dedupe_against, read_train_sets
    from .workflow_helpers import eval_split

    tv = cfg["train_verifier"]
    first = str(train_files[0])  # the staged tree's root: where the first input landed, less its path
    rel = next(f["path"] for f in cfg["files"].values() if first.endswith("/" + f["path"]))
    ts = read_train_sets(first[: -len(rel)] + "train", [s for s in tv["sources"] if s != FIT_SOURCE])
    gold_sets = {s: pd.read_parquet(p) for s, p in zip(cfg["dedupe_sets"], dedupe_files)}
    cal = cfg["calibration_set"]
    # the attribution gold's own fit split is training data: only its evaluation split is held against
    against = {s: (eval_split(d) if s == cal else d)["claim"].unique() for s, d in gold_sets.items()}
    for name, path in zip(cfg.get("dedupe_texts", []), dedupe_texts):
        against[name] = kit_slice_texts(str(path))
    pairs = ts.pairs
    if FIT_SOURCE in tv["sources"]:
        if cal not in gold_sets:
            raise DataError(f"train_verifier.sources lists {FIT_SOURCE} but the calibration set {cal} is not a "
                            "gold set of this experiment")
        pairs = pd.concat([pairs, gold_fit_pairs(gold_sets[cal], cal)], ignore_index=True)
    read = len(pairs)
    pairs, removed = dedupe_against(pairs, against)
    # staged sources sampled as before the fit split joined (their draws do not move), the fit split apart
    is_fit = pairs["source"] == FIT_SOURCE
    train = pd.concat([sample_per_source(pairs[~is_fit], tv["max_pairs_per_source"], tv["seed"]),
                       sample_per_source(pairs[is_fit], tv["max_pairs_per_source"], tv["seed"])], ignore_index=True)
    gold = {}
    for name, key in GOLD:
        g = gold_sets[cfg[key]]
        g = (eval_split(g) if name == "attribution_gold_eval" else g).dropna(subset=["label"]).reset_index(drop=True)
        gold[name] = g.assign(cluster=g["item_id"].astype(str))
    return {"train": train, "removed": removed, "read": read, "kept": len(pairs), "skipped": ts.skipped,
            "gold": gold}


def design_table(head: pd.DataFrame, networks: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The design x evaluation table: each design and variant at its own selected setting (the head's C,
    a network's stopping point), every evaluation it has. ``head``: the train_verifier table; ``networks``:
    run_design tables. ``setting`` names the selected value."""
    rows = []
    for _, g in head.groupby("variant", sort=False):
        gold = g[~g["evaluation"].str.startswith("loso:")]
        c = gold["C"].iloc[0]
        rows.append(g[g["C"] == c].assign(design="frozen_head", setting=f"C={c:g}"))
    for t in networks:
        for _, g in t.groupby(["design", "variant"], sort=False):
            stop = g.loc[~g["evaluation"].str.startswith("loso:"), "examples"].iloc[0]
            rows.append(g[g["examples"] == stop].assign(setting=f"examples={int(stop)}"))
    cols = ["design", "variant", "setting", "evaluation", "n", "auc", "embedding_auc", "delta", "delta_ci_low",
            "delta_ci_high"]
    return pd.concat(rows, ignore_index=True).reindex(columns=cols)


def choose_design(table: pd.DataFrame, gold_names: Sequence[str], margin: float) -> dict[str, Any]:
    """The (design, variant) with the best mean AUC over the expert gold sets, and whether it is adopted
    (:func:`adoption_reasons`; a variant with no leave-one-source-out evaluation cannot be)."""
    gold = table[table["evaluation"].isin(list(gold_names))]
    means = gold.groupby(["design", "variant"], sort=False)["auc"].mean()
    design, variant = means.idxmax()
    g = table[(table["design"] == design) & (table["variant"] == variant)]
    loso = g[g["evaluation"].str.startswith("loso:")]
    reasons = adoption_reasons(g[g["evaluation"].isin(list(gold_names))].set_index("evaluation"), loso, gold_names,
                               margin)
    return {"design": str(design), "variant": str(variant), "setting": str(g["setting"].iloc[0]),
            "mean_gold_auc": float(means.max()), "adopted": not reasons, "reasons": reasons}


def designs_card(table: pd.DataFrame, decision: Mapping[str, Any], tv: Mapping[str, Any],
                 seconds: Mapping[str, float]) -> str:
    """The design comparison as Markdown: what each design is and was trained with, every evaluation at
    its selected setting, the decision and why, and the training times."""
    from .train_networks import design_settings

    net = tv.get("networks", {})

    def budget(n: Mapping[str, Any]) -> str:
        return (f"{n.get('examples')} examples, batch {n.get('batch_size')}, AdamW lr {n.get('lr')}, max length "
                f"{n.get('max_length')}, stopping point from {list(n.get('checkpoints', []))}")

    lines = ["# citeguard `trained` verifier: the designs compared", "",
             "Every design reads the same staged claim-evidence pairs (after removing training claims that are "
             f"evaluation claims; at most {tv['max_pairs_per_source']} per source, seed {tv['seed']}) and is scored "
             "like every verifier: 600-character windows at stride 300, claims capped at 600, max over windows.", "",
             "| design | what it is | trained with |", "|---|---|---|",
             f"| frozen_head | L2 logistic head on frozen `{tv['encoder']}` features (3 layers' cosines, token "
             f"max-sim, term recall, numbers, negation) | C chosen from {list(tv['C'])} on leave-one-source-out AUC; "
             "see results/models/trained/MODEL_CARD.md |",
             f"| cross_encoder | the encoder fine-tuned as a 2-class sequence-pair classifier (class-balanced "
             f"cross-entropy) | {budget(design_settings(net, 'cross_encoder'))} |",
             f"| bi_encoder | the embedding encoder fine-tuned contrastively: claim vs its window, a hard negative "
             f"(the claim's own unsupported evidence, else the source's BM25 top window) and in-batch negatives, "
             f"InfoNCE tau {design_settings(net, 'bi_encoder').get('tau')} | "
             f"{budget(design_settings(net, 'bi_encoder'))}, supported claims only |", "",
             "## Evaluations (AUC; embedding = the shipped embedding verifier)", "",
             "| design | variant | setting | evaluation | n | AUC | embedding AUC | delta | 95% CI of delta |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += evaluation_rows(table, lambda r: [str(r["design"]), str(r["variant"]), str(r["setting"])])
    lines += ["", "## Decision", "",
              f"The expert gold prefers `{decision['design']}` / `{decision['variant']}` ({decision['setting']}), mean "
              f"gold AUC {decision['mean_gold_auc']:.3f}. "
              + ("**Adopted.**" if decision["adopted"] else "**Not adopted**: embedding stays the guard's default and "
                 "lite's panel is unchanged."), ""]
    lines += [f"- {r}" for r in decision["reasons"]]
    lines += ["", "## Training time (whole rule, 2 cores)", ""] + [f"- {k}: {v:.0f} s" for k, v in seconds.items()]
    return "\n".join(lines) + "\n"
