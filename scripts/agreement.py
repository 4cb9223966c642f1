"""Rule agreement: pairwise verifier agreement on a fixed sample of deployment pairs."""
from citebound.study import analysis, figures
from citebound.study.workflow_helpers import scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
verifiers = cfg["panel"]
sample = analysis.agreement_sample(scored_sets(sm, "src"), cfg["agreement_sample"], cfg["seed"])
cols = ["source", "pair_id"] + [c for v in verifiers for c in (f"score_{v}", f"verdict_{v}")]
sample[cols].to_csv(sm.output.sample, index=False)
table = analysis.agreement_table(sample, verifiers, cfg["n_bootstrap"], cfg["seed"])
table.to_csv(sm.output.table, index=False)
figures.save(figures.agreement_figure(table, verifiers), sm.output.png, sm.output.pdf)
log.info("sample of %d pairs\n%s", len(sample), table.round(3).to_string())
