"""``citebound train``: the frozen-feature head on a lab's own labelled pairs, and its model card."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from citebound.training.evaluation import choose_and_adopt, claim_folds, dedupe_against, evaluate


def train_own(pairs: pd.DataFrame, evals: Mapping[str, pd.DataFrame], *, encoder: str, grid: Sequence[float],
              n_boot: int, seed: int, windowing: Mapping[str, int], folds: int = 5, margin: float = 0.05,
              batch_size: int = 32, threads: int | None = None, progress: bool = True) -> dict[str, Any]:
    """``citebound train``: the pipeline's frozen-feature head on a lab's own labelled pairs.

    ``pairs``: ``claim``, ``passage``, ``label`` (1 = supported) and ``source`` (None where not given);
    ``evals``: {name: pairs with ``claim``, ``passage``, ``label``}, out-of-domain sets. Training claims that
    match an evaluation claim are removed first (counted). With two or more sources the held-out
    evaluation is leave-one-source-out, else ``folds``-fold cross-validation grouped by claim; either
    way C is chosen on it. Each evaluation set gets the AUC difference against the embedding score with
    a paired bootstrap CI (clusters: claims); the head "beats embedding" by the pipeline's adoption rule.
    Returns the table, removals, head, decision, per-source counts and timings."""
    import time

    from citebound.training.head import FrozenFeatures
    from citebound.verifiers.embedding import resolve_model_path
    from citebound.verifiers.trained import SHIPPED_ENCODER

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
    # features on the path the guard's trained verifier scores with: the shipped graph for the shipped
    # encoder (no torch), another encoder's weights on torch
    graph = {"runtime": "onnx", "graph": "shipped"} if encoder == SHIPPED_ENCODER else None
    ff = FrozenFeatures(resolve_model_path(encoder) if graph is None else encoder, batch_size=batch_size,
                        threads=threads, runtime=graph)
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


def lab_model_card(cfg: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """The model card of a head trained with ``citebound train`` (Markdown): what it is, the data it saw,
    what was removed, every evaluation against embedding, the decision and what to do next.

    ``cfg``: ``encoder``, ``C`` (the grid), ``seed``, ``n_bootstrap``, ``margin``, ``trained_from``;
    ``result``: what :func:`train_own` returns."""
    from citebound.training.evaluation import evaluation_rows
    from citebound.training.head import FEATURES

    d, counts, removed = result["decision"], result["counts"], result["removed"]
    lines = ["# Trained verifier head (citebound train)", "",
             f"An L2 logistic regression (balanced classes) on standardised features {', '.join(f'`{f}`' for f in FEATURES)} "
             f"of the frozen encoder `{cfg['encoder']}`, trained on `{cfg['trained_from']}`. A pair is scored like every "
             "citebound verifier: by the maximum over its 600-character passage windows (stride 300; claims capped at "
             "600 characters). Its score is the head's P(support), not calibrated to your traffic: calibrate it with "
             "`citebound calibrate --labels` before you rely on a threshold.", "",
             "## Training data", "", "| part | pairs | supported |", "|---|---|---|"]
    lines += [f"| {r['source']} | {r['pairs']} | {r['supported']} |" for _, r in counts.iterrows()]
    n_removed = int(removed["removed"].sum()) if len(removed) else 0
    lines += ["", f"{n_removed} training pairs were removed because their claim is also a claim of an evaluation set "
              "(`--eval`):", "", "| evaluation set | part | training pairs removed |", "|---|---|---|"]
    lines += [f"| {r['eval_set']} | {r['source']} | {r['removed']} |" for _, r in removed.iterrows() if r["removed"]]
    if not n_removed:
        lines.append("| (none matched) | | 0 |")
    lines += ["",
              "## Choices", "",
              f"- held-out evaluation: {result['held_out']}; C chosen from {list(cfg['C'])} by its mean held-out AUC "
              "(ties go to the smaller C, the stronger regularisation)",
              f"- paired bootstrap of the AUC difference: {cfg['n_bootstrap']} resamples of claims, seed {cfg['seed']}",
              f"- beats embedding when it is at least {cfg['margin']:+.2f} AUC above it on every `--eval` set with the "
              "95% CI above 0, and below it on no held-out part", "",
              "## Evaluations (AUC; embedding = the same encoder's layer-6 cosine)", "",
              "| C | evaluation | n | AUC | embedding AUC | delta | 95% CI of delta |", "|---|---|---|---|---|---|---|"]
    lines += evaluation_rows(result["table"], lambda r: [f"{r['C']:g}"])
    lines += ["", "## Decision", "", f"C = {d['C']:g}: " + ("**beats embedding** out of domain." if d["adopted"] else
              "**does not beat embedding** out of domain; keep `--verifier embedding` unless your own checks say "
              "otherwise:"), ""]
    lines += [f"- {r}" for r in d["reasons"]]
    lines += ["", "## Cost", ""] + [f"- {k}: {v:.1f} s" for k, v in result["timings"].items()]
    lines += ["", "## Use", "", "    citebound guard --verifier trained --model <this folder> --input answers.jsonl"]
    return "\n".join(lines) + "\n"
