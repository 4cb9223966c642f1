"""Rule validate: verifier validation on gold + matched catch-rate frontier."""
from citeguard import analysis, figures
from citeguard.rulekit import panel, param_json, scored_sets, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = param_json(sm, "analysis")
verifiers = panel(sm) + [v for v in cfg.get("validation_extra", []) if v not in panel(sm)]
(df,) = scored_sets(sm, "val").values()
table = analysis.validation_table(df, verifiers, cfg["n_bootstrap"], cfg["seed"])
table.to_csv(sm.output.table, index=False)
frontier = analysis.catch_rate_frontier(df, verifiers)
frontier.to_csv(sm.output.frontier, index=False)
figures.save(figures.validation_figure(frontier, df, verifiers), sm.output.png, sm.output.pdf)
log.info("\n%s", table.round(3).to_string())
