"""Rule scope: support verdicts vs PubMedQA yes/no conclusions (support is not correctness)."""
from citebound.study import analysis
from citebound.study.workflow_helpers import scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
(df,) = scored_sets(sm, "scope").values()
table = analysis.scope_table(df, cfg["panel"], cfg["n_bootstrap"], cfg["seed"])
table.to_csv(sm.output.table, index=False)
log.info("\n%s", table.round(3).to_string())
