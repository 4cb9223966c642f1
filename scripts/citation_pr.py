"""Rule citation_pr: ALCE-style citation recall and precision per source x verifier."""
from citebound.study import analysis, figures
from citebound.study.workflow_helpers import scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
table = analysis.citation_pr_table(scored_sets(sm, "src"), cfg["panel"], cfg["n_bootstrap"], cfg["seed"])
table.to_csv(sm.output.table, index=False)
figures.save(figures.citation_pr_figure(table, cfg["panel"]), sm.output.png)
log.info("\n%s", table.round(3).to_string())
