"""Rule score: one base verifier over one set's pairs, through the PairScorer the guard uses."""
import pandas as pd

from citebound.scoring.loader import PairScorer
from citebound.study.scored_tables import score_table
from citebound.study.workflow_helpers import param_json, start

sm = snakemake  # noqa: F821
log = start(sm)
vcfg = {**param_json(sm, "verifier"), "threads": sm.threads}  # the cores this job was given (not in the hash)
pairs = pd.read_parquet(sm.input.pairs)
scorer = PairScorer(vcfg, {vcfg["name"]: vcfg}, param_json(sm, "windowing"), sm.params.cache_dir)
ps = scorer.score(pairs["claim"].tolist(), pairs["passage"].tolist())
scorer.close()
table = score_table(pairs["pair_id"], vcfg["name"], ps, bool(vcfg.get("binary", False)))
table.to_parquet(sm.output[0], index=False)
reasons = table.loc[table.reason != "", "reason"].value_counts().to_dict()
log.info("%s on %s: %d pairs, %d units (%d cached), not normally scored: %s, supported: %.3f",
         vcfg["name"], sm.wildcards.set, len(table), ps.n_units, ps.n_cached, reasons or "none",
         table["verdict"].mean() if len(table) else float("nan"))
