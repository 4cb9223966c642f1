"""Analysis 9: what kind of failure an unsupported citation is.

- **misattributed**: another passage the answer had supports the claim; the guard's re-attributor
  proposes it and the verifier accepts it, so the pointer is wrong and re-attribution fixes it;
- **ungrounded**: no proposal is accepted: no passage the agent had supports the claim (a
  fabrication risk).

The split is the guard's own (:func:`citebound.guarding.guard.guard_answers`): for a citation the verifier
rejects, the re-attributor proposes the best other passages of the answer, never one the sentence
already cites, and the citation is misattributed when the verifier accepts any proposal. Here the
proposals are built once per set (:func:`proposal_pairs`, verifier-independent) and scored by the
``score`` rule like any pair table, so every (claim, window) unit goes through the score cache once.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.guarding.reattributors import Reattributor
from citebound.study.analysis._common import ci_cols, seeded_rng, sources_then_pooled

PROPOSAL_MARK = "r"  # proposal pair ids: <sentence_id>:r<passage_index>


def sample_items(item_ids: Sequence[str], max_items: int | None, seed: int) -> list[str]:
    """The items the analysis covers: all of them, or ``max_items`` drawn without replacement (seeded)."""
    items = sorted({str(i) for i in item_ids})
    if max_items is None or len(items) <= max_items:
        return items
    pick = seeded_rng(seed).choice(len(items), size=int(max_items), replace=False)
    return sorted(items[i] for i in pick)


def answer_passages(prep_passages: pd.DataFrame) -> dict[str, tuple[list[int], list[str]]]:
    """{item: (passage indices, texts)} from a prepared set's passage table, in index order."""
    out = {}
    for item, g in prep_passages.sort_values(["item_id", "passage_index"]).groupby("item_id", sort=False):
        out[str(item)] = (g["passage_index"].astype(int).tolist(), g["passage"].tolist())
    return out


def proposal_pairs(pairs: pd.DataFrame, passages: dict[str, tuple[list[int], list[str]]],
                   reattributor: Reattributor, items: Sequence[str], set_name: str) -> tuple[pd.DataFrame, dict]:
    """The re-attributor's proposals for every cited sentence of ``items``, as a pair table.

    A sentence's proposals exclude every passage it already cites (as the guard's do). Returns the
    table and counts: sentences, proposals, and sentences with no other passage to propose."""
    keep = pairs[pairs["item_id"].astype(str).isin(set(items))]
    rows, no_alternative = [], 0
    for sid, g in keep.groupby("sentence_id", sort=True):
        item = str(g["item_id"].iloc[0])
        idx, texts = passages.get(item, ([], []))
        cited = set(g["passage_index"].astype(int))
        props = reattributor.propose(str(g["claim"].iloc[0]), texts, {k for k, p in enumerate(idx) if p in cited})
        no_alternative += not props
        for k in props:
            rows.append({"set": set_name, "pair_id": f"{sid}:{PROPOSAL_MARK}{idx[k]}", "item_id": item,
                         "sentence_id": sid, "claim": g["claim"].iloc[0], "passage": texts[k],
                         "passage_index": idx[k], "label": np.nan, "group": g["group"].iloc[0],
                         "split": g["split"].iloc[0], "marker": "", "frozen_score": np.nan})
    table = pd.DataFrame(rows, columns=list(pairs.columns))
    table["passage_index"] = table["passage_index"].astype(int)
    table["label"] = table["label"].astype(float)
    counts = {"items": len(set(items)), "items_in_set": int(pairs["item_id"].nunique()),
              "sentences": int(keep["sentence_id"].nunique()), "citations": len(keep), "proposals": len(table),
              "sentences_without_alternative": no_alternative}
    return table, counts


def classify(cited: pd.DataFrame, proposals: pd.DataFrame, verifier: str) -> pd.DataFrame:
    """Per cited pair: ``unsupported`` (the verifier rejects it) and, for those, ``misattributed``
    (a proposal for its sentence is accepted) or ``ungrounded``."""
    accepted = proposals.groupby("sentence_id")[f"verdict_{verifier}"].any() if len(proposals) else pd.Series(dtype=bool)
    unsup = ~cited[f"verdict_{verifier}"].to_numpy(bool)
    alt = cited["sentence_id"].map(accepted).fillna(False).to_numpy(bool)
    return pd.DataFrame({"item_id": cited["item_id"].astype(str).to_numpy(), "unsupported": unsup,
                         "misattributed": unsup & alt, "ungrounded": unsup & ~alt})


def failure_kinds_table(cited: dict[str, pd.DataFrame], proposals: dict[str, pd.DataFrame],
                        items: dict[str, Sequence[str]], verifiers: Sequence[str], n_boot: int,
                        seed: int) -> pd.DataFrame:
    """Per verifier x source (and pooled): counts, the misattributed share of unsupported citations
    and the ungrounded share of all citations, each with an item-bootstrap 95% CI."""
    rows = []
    def build(source: str, v: str) -> pd.DataFrame:
        df = cited[source]
        return classify(df[df["item_id"].astype(str).isin(set(items[source]))], proposals[source], v)

    for v in verifiers:
        for source, c in sources_then_pooled(cited, lambda name, v=v: build(name, v)):
            per = c.groupby("item_id")[["unsupported", "misattributed", "ungrounded"]].sum()
            per["n"] = c.groupby("item_id").size()
            n_unsup, n_mis, n_ung = (int(per[k].sum()) for k in ("unsupported", "misattributed", "ungrounded"))
            boot_mis = st.cluster_bootstrap_rate(per["misattributed"].to_numpy(), per["unsupported"].to_numpy(),
                                                 n_boot, seeded_rng(seed))
            boot_ung = st.cluster_bootstrap_rate(per["ungrounded"].to_numpy(), per["n"].to_numpy(), n_boot,
                                                 seeded_rng(seed))
            rows.append({"verifier": v, "source": source, "n_items": len(per), "n_citations": int(per["n"].sum()),
                         "n_unsupported": n_unsup, "n_misattributed": n_mis, "n_ungrounded": n_ung,
                         **ci_cols("misattributed_share", n_mis / n_unsup if n_unsup else np.nan, boot_mis),
                         **ci_cols("ungrounded_rate", n_ung / len(c) if len(c) else np.nan, boot_ung)})
    return pd.DataFrame(rows)


def gold_cases(gold: pd.DataFrame, reattributor: Reattributor, seed: int) -> pd.DataFrame:
    """Cases with a known failure kind, built from an attribution gold (every cited sentence x every
    passage of its answer; ``label`` 1 marks the passages the expert cited for it).

    Per sentence with a gold passage and at least two non-gold ones, one non-gold passage (seeded
    draw) is taken as the cited one, twice:
    - ``misattributed``: the answer keeps all its passages, so a gold passage is there to be found;
    - ``ungrounded``: the gold passages are removed, so (per the gold) none supports the sentence.
    Each case lists the pair ids the re-attributor proposes, from the same BM25 proposals the guard makes."""
    rng = seeded_rng(seed)
    rows = []
    for sid, g in gold.sort_values(["sentence_id", "passage_index"]).groupby("sentence_id", sort=True):
        lab = g["label"].to_numpy()
        if not (lab == 1).any() or (lab == 0).sum() < 2:
            continue
        claim = str(g["claim"].iloc[0])
        ids, texts = g["pair_id"].tolist(), g["passage"].tolist()
        wrong = [k for k in range(len(ids)) if lab[k] == 0]
        cited = wrong[int(rng.integers(len(wrong)))]
        for truth, pool in (("misattributed", list(range(len(ids)))), ("ungrounded", wrong)):
            props = reattributor.propose(claim, [texts[k] for k in pool], {pool.index(cited)})
            rows.append({"item_id": str(g["item_id"].iloc[0]), "sentence_id": sid, "truth": truth,
                         "cited_pair": ids[cited], "proposals": [ids[pool[k]] for k in props]})
    return pd.DataFrame(rows, columns=["item_id", "sentence_id", "truth", "cited_pair", "proposals"])


def gold_agreement(gold: pd.DataFrame, cases: pd.DataFrame, verifiers: Sequence[str], n_boot: int,
                   seed: int) -> pd.DataFrame:
    """Per verifier: the 2x2 table of the gold's kind against the classifier's call, over the cases
    whose cited (wrong) passage the verifier rejects, and the agreement with an item-bootstrap CI.
    Cases where the verifier accepts the wrong passage are counted (``n_wrong_accepted``), not classed."""
    rows = []
    for v in verifiers:
        verdict = dict(zip(gold["pair_id"], gold[f"verdict_{v}"].to_numpy(bool)))
        flagged = cases[[not verdict[p] for p in cases["cited_pair"]]] if len(cases) else cases
        call = np.array([any(verdict[p] for p in props) for props in flagged["proposals"]], bool)
        truth = flagged["truth"].to_numpy() == "misattributed"
        agree = call == truth
        per = pd.DataFrame({"item": flagged["item_id"].to_numpy(), "agree": agree}).groupby("item")["agree"]
        boot = st.cluster_bootstrap_rate(per.sum().to_numpy(), per.count().to_numpy(), n_boot, seeded_rng(seed))
        n = len(flagged)
        rows.append({"verifier": v, "n_cases": len(cases), "n_wrong_accepted": len(cases) - n, "n_classed": n,
                     "gold_mis_called_mis": int(np.sum(truth & call)), "gold_mis_called_ung": int(np.sum(truth & ~call)),
                     "gold_ung_called_mis": int(np.sum(~truth & call)), "gold_ung_called_ung": int(np.sum(~truth & ~call)),
                     **ci_cols("agreement", float(agree.mean()) if n else np.nan, boot)})
    return pd.DataFrame(rows)
