"""Rule score_stacked: a fitted stacked verifier over one set, from its base verifiers' score tables,
through the PairScorer the guard uses (PairScorer.combine)."""
import pandas as pd

from citebound import definitions
from citebound.scoring.loader import PairScorer
from citebound.study.scored_tables import read_pair_scores, score_table
from citebound.study.workflow_helpers import param_json, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = param_json(sm, "verifier")
pairs = pd.read_parquet(sm.input.pairs)
scorer = PairScorer(cfg, {}, definitions.windowing(), model_path=sm.input.model)  # bases come as tables
base = dict(read_pair_scores(pairs["pair_id"], p) for p in sm.input.features)
ps = scorer.combine([base[f] for f in scorer.model["features"]])
table = score_table(pairs["pair_id"], cfg["name"], ps, False)
table.to_parquet(sm.output[0], index=False)
log.info("%s on %s: %d pairs, supported %.3f", cfg["name"], sm.wildcards.set, len(table), table.verdict.mean())
