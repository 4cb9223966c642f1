"""Rule scope: support verdicts vs PubMedQA yes/no conclusions (support is not correctness)."""
from citeguard import analysis
from citeguard.rulekit import panel, param_json, scored_sets, start

sm = snakemake  # noqa: F821
log = start(sm)
acfg = param_json(sm, "analysis")
(df,) = scored_sets(sm, "scope").values()
table = analysis.scope_table(df, panel(sm), acfg["n_bootstrap"], acfg["seed"])
table.to_csv(sm.output.table, index=False)
log.info("\n%s", table.round(3).to_string())
