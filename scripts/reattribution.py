"""Rule reattribution: recall@k of the human-labelled passage per ranker."""

import pandas as pd

from citebound.guarding.reattributors import Reattributor, bm25_scores
from citebound.study import analysis, figures
from citebound.study.workflow_helpers import eval_split, scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
bm25 = Reattributor.from_config(cfg["reattributor"])
verifiers = cfg["panel"]
(df,) = scored_sets(sm, "cal").values()
df = eval_split(df).copy()
df["score_bm25"] = 0.0
for _, g in df.groupby("sentence_id"):
    df.loc[g.index, "score_bm25"] = bm25_scores(g["claim"].iloc[0], g["passage"].tolist(), k1=bm25.k1, b=bm25.b)
rankers = {"bm25": "score_bm25"} | {v: f"score_{v}" for v in verifiers}
for path in sm.input.generator_scores:
    name = "generator:" + path.rsplit("/", 1)[1].removesuffix(".parquet")
    g = pd.read_parquet(path).set_index("pair_id")["score"]
    df[f"score_{name}"] = df["pair_id"].map(g).astype(float)
    rankers[name] = f"score_{name}"
out = analysis.reattribution_tables(df, rankers, [1, 3, 5], cfg["seed"])
out["recall"].to_csv(sm.output.table, index=False)
out["mcnemar"].to_csv(sm.output.mcnemar, index=False)
out["strata"].to_csv(sm.output.strata, index=False)
(val,) = scored_sets(sm, "val").values()
analysis.lexical_overlap_by_label(val).to_csv(sm.output.overlap, index=False)
figures.save(figures.reattribution_figure(out["recall"]), sm.output.png)
log.info("\n%s\n%s", out["recall"].round(3).to_string(), out["mcnemar"].to_string())
