"""Rule data_summary: one row per set with counts and skip reasons."""
import json

import pandas as pd

from citebound.study.workflow_helpers import start

sm = snakemake  # noqa: F821
log = start(sm)
rows = [json.load(open(p)) for p in sm.input]
table = pd.DataFrame(rows)
first = ["set", "kind", "n_items", "n_items_with_pairs", "n_sentences", "n_cited_sentences", "n_pairs",
         "n_supported", "n_unsupported", "n_skipped"]
table = table[first + sorted(c for c in table.columns if c not in first)]
table.to_csv(sm.output[0], index=False)
log.info("wrote %d rows", len(table))
