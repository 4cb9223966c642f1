"""Analysis 10: ALCE-style citation recall and precision per source x verifier.

Per cited sentence, its citations *jointly* support it when the verifier accepts at least one of
them: our verifiers score each passage alone (max over its windows), so "jointly" is "any cited
passage", where ALCE runs NLI once over the cited passages concatenated.

- **recall**: supported cited sentences / cited sentences (ALCE divides by every sentence, cited
  or not; the kit's structural recall counts cue sentences that carry a marker);
- **precision**: needed citations / citations. As in ALCE, a citation is needed when its sentence is
  jointly supported and the citation either supports the sentence alone or the sentence is no
  longer supported without it; a citation of a sentence its citations do not support is not
  needed. Under any-of-them support this is the share of citations the verifier accepts alone;
- **irrelevant share**: citations that do not support their sentence alone while the others still
  do (ALCE's "over-citation"), over all citations.

A passage a sentence cites twice counts once.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from citebound.calibration import stats as st
from citebound.study.analysis._common import ci_cols, seeded_rng, sources_then_pooled


def sentence_citations(df: pd.DataFrame, verifier: str) -> pd.DataFrame:
    """Per cited sentence: item, citations, supported (jointly), needed and irrelevant citations."""
    d = pd.DataFrame({"item_id": df["item_id"].astype(str).to_numpy(), "sentence_id": df["sentence_id"].to_numpy(),
                      "passage_index": df["passage_index"].to_numpy(int),
                      "ok": df[f"verdict_{verifier}"].to_numpy(bool)})
    d = d.drop_duplicates(["sentence_id", "passage_index"])
    g = d.groupby("sentence_id", sort=True)
    out = pd.DataFrame({"item_id": g["item_id"].first(), "n_citations": g.size(), "n_accepted": g["ok"].sum()})
    out["supported"] = out["n_accepted"] > 0
    # needed: alone-supporting, or the sentence's only support (impossible to be both unaccepted and
    # the only support when support is any-of-them, so needed = accepted in a supported sentence)
    out["n_needed"] = np.where(out["supported"], out["n_accepted"], 0)
    out["n_irrelevant"] = np.where(out["supported"], out["n_citations"] - out["n_accepted"], 0)
    return out.reset_index()


def citation_pr_table(scored: dict[str, pd.DataFrame], verifiers: Sequence[str], n_boot: int,
                      seed: int) -> pd.DataFrame:
    """Per verifier x source (and pooled): recall, precision and irrelevant share, with 95% CIs
    from resampling answers (items)."""
    rows = []
    for v in verifiers:
        for source, s in sources_then_pooled(scored, lambda name, v=v: sentence_citations(scored[name], v)):
            per = s.groupby("item_id").agg(sent=("supported", "size"), sup=("supported", "sum"),
                                           cit=("n_citations", "sum"), need=("n_needed", "sum"),
                                           irr=("n_irrelevant", "sum"))
            boot = {k: st.cluster_bootstrap_rate(per[num].to_numpy(), per[den].to_numpy(), n_boot, seeded_rng(seed))
                    for k, num, den in (("recall", "sup", "sent"), ("precision", "need", "cit"),
                                        ("irrelevant_share", "irr", "cit"))}
            n_sent, n_cit = int(per["sent"].sum()), int(per["cit"].sum())
            rows.append({"verifier": v, "source": source, "n_items": len(per), "n_sentences": n_sent,
                         "n_citations": n_cit,
                         **ci_cols("recall", per["sup"].sum() / n_sent if n_sent else np.nan, boot["recall"]),
                         **ci_cols("precision", per["need"].sum() / n_cit if n_cit else np.nan, boot["precision"]),
                         **ci_cols("irrelevant_share", per["irr"].sum() / n_cit if n_cit else np.nan,
                                   boot["irrelevant_share"])})
    out = pd.DataFrame(rows)
    if len(out):
        p, r = out["precision"], out["recall"]
        out["f1"] = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return out
