"""Rule validate: verifier validation on gold (dev, the calibration gold's evaluation split, and held-out when
configured) + frontier."""
import pandas as pd

from citebound.study import analysis, figures
from citebound.study.workflow_helpers import eval_split, scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
verifiers = cfg["panel"] + [v for v in cfg["validation_extra"] if v not in cfg["panel"]]
# each gold set's evaluation split (the calibration gold's fit split trained the stacked verifier)
sets = {name: eval_split(df) for name, df in scored_sets(sm, "val").items()}
table = pd.concat([analysis.validation_table(df, verifiers, cfg["n_bootstrap"], cfg["seed"]).assign(set=name)
                   for name, df in sets.items()], ignore_index=True)
table.to_csv(sm.output.table, index=False)
frontier = pd.concat([analysis.catch_rate_frontier(df, verifiers).assign(set=name) for name, df in sets.items()],
                     ignore_index=True)
frontier.to_csv(sm.output.frontier, index=False)
dev = cfg["validation_set"]
figures.save(figures.validation_figure(frontier[frontier.set == dev], sets[dev], verifiers), sm.output.png,
             sm.output.pdf)
log.info("\n%s", table.round(3).to_string())
