"""Rule kit_tables: cell summaries, lit - bare, cross-domain conformal, and the comparison with the authors."""
import json

import pandas as pd

from citebound.study import figures, kit
from citebound.study.workflow_helpers import settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
items = {(m, p): pd.read_csv(path, dtype={"item_id": str}) for (m, p), path in zip(cfg["cells"], sm.input.cell_items)}
cells, paired = kit.summaries(items, cfg["n_bootstrap"], cfg["seed"])
cells.to_csv(sm.output.cells, index=False)
paired.to_csv(sm.output.paired, index=False)
qasa = json.loads(open(sm.input.qasa, encoding="utf-8").read())
cell_scores = {f"{m}/{p}": pd.read_parquet(path)["score"].to_numpy()
               for (m, p), path in zip(cfg["cells"], sm.input.scores)}
conf = kit.cross_domain(qasa["unsupported_p_attr_scores"], cfg["alphas"], qasa["tau_curve"], cell_scores)
conf.to_csv(sm.output.conformal, index=False)
expected = json.loads(open(sm.input.expected, encoding="utf-8").read())
authors = kit.authors_table(cells, paired, expected, cfg["authors_model"], cfg["bands"])
authors.to_csv(sm.output.authors, index=False)
figures.save(figures.kit_coverage_figure(cells), sm.output.png, sm.output.pdf)
log.info("\n%s\n%s", cells.round(3).to_string(), authors.round(3).to_string())
