"""Rule kit_cell: per-item kit metrics of one model x cell."""
import json

import pandas as pd

from citebound.scoring.io import read_records
from citebound.study import kit
from citebound.study.workflow_helpers import settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
refs = {r["id"]: r["output"] for r in json.loads(open(sm.input.slice, encoding="utf-8").read())}
pairs = pd.read_parquet(sm.input.pairs)
verdict = pairs["pair_id"].map(pd.read_parquet(sm.input.scores).set_index("pair_id")["verdict"]).fillna(False)
items = kit.cell_items(read_records(sm.input.generations), refs, kit.sentence_support(pairs, verdict),
                       cfg["cue_pattern"], cfg["seed"], tuple(cfg["rouge_caps"]))
items.insert(0, "model", sm.wildcards.model)
items.insert(1, "pipeline", sm.wildcards.pipeline)
items.to_csv(sm.output[0], index=False)
log.info("%s/%s: %d items (%d generation errors), %d cited sentences, %d unsupported",
         sm.wildcards.model, sm.wildcards.pipeline, len(items), items["error"].sum(), items["n_cited"].sum(),
         items["n_unsupported"].sum())
