"""Rule rates: unsupported-citation rate per verifier x source (item bootstrap)."""
import pandas as pd

from citebound.study import analysis, figures
from citebound.study.workflow_helpers import scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
verifiers = cfg["panel"]
rates = analysis.unsupported_rates(scored_sets(sm, "src"), verifiers, cfg["n_bootstrap"], cfg["seed"])
rates.to_csv(sm.output.table, index=False)
val = pd.read_csv(sm.input.validation)
order = val[val.set == cfg["validation_set"]].sort_values("recall_supported")["verifier"].tolist()
figures.save(figures.rates_figure(rates, [v for v in order if v in verifiers]), sm.output.png, sm.output.pdf)
log.info("\n%s", rates.round(3).to_string())
