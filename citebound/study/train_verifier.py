"""Rule train_verifier: fit the frozen-feature head (:mod:`citebound.training.head`) on the staged
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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citebound.scoring.io import DataError
from citebound.training.evaluation import adoption_reasons, evaluation_rows
from citebound.training.head import FEATURES


def sample_per_source(pairs: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """At most ``n`` pairs per source, drawn without replacement (seeded), in a stable order."""
    rng = np.random.default_rng(seed)
    parts = []
    for _, g in pairs.groupby("source", sort=True):
        parts.append(g.iloc[np.sort(rng.choice(len(g), size=min(n, len(g)), replace=False))])
    return pd.concat(parts, ignore_index=True) if parts else pairs.iloc[:0]


def model_card(cfg: Mapping[str, Any], counts: pd.DataFrame, removed: pd.DataFrame, skipped: Mapping[Any, int],
               table: pd.DataFrame, decision: Mapping[str, Any], timings: Mapping[str, float],
               licences: Mapping[str, str]) -> str:
    """The trained verifier's model card (Markdown): data and licences, hyper-parameters, every evaluation,
    the decision and why."""
    lines = ["# citebound `trained` verifier: frozen-feature head", "",
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


GOLD = (("attribution_gold_eval", "calibration_set"), ("scifact_dev", "validation_set"))


def kit_slice_texts(path: str) -> list[str]:
    """The kit's BioASQ slice as claims to dedupe against: each question and each sentence of each answer."""
    from citebound.text.citations import split_sentences

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
    from citebound.study.train_data import read_train_sets
    from citebound.study.workflow_helpers import eval_split
    from citebound.training.evaluation import dedupe_against

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
    from citebound.study.train_settings import design_settings

    net = tv.get("networks", {})

    def budget(n: Mapping[str, Any]) -> str:
        return (f"{n.get('examples')} examples, batch {n.get('batch_size')}, AdamW lr {n.get('lr')}, max length "
                f"{n.get('max_length')}, stopping point from {list(n.get('checkpoints', []))}")

    lines = ["# citebound `trained` verifier: the designs compared", "",
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
