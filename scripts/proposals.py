"""Rule proposals: the re-attributor's proposals for a source's cited sentences, as a pair table."""
import json
from pathlib import Path

import pandas as pd

from citebound.guarding.reattributors import Reattributor
from citebound.study import analysis
from citebound.study.prepare import prepare_set
from citebound.study.workflow_helpers import param_json, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
source = sm.wildcards.set
pairs = pd.read_parquet(sm.input.pairs)
# the answers' passages, cited or not: the same parse that wrote pairs.parquet
raw = {k: Path(v) for k, v in sm.input.items() if k != "pairs"}
set_cfg = param_json(sm, "set_cfg")
prep = prepare_set(source, set_cfg["kind"], raw, set_cfg, claim_cap=cfg["claim_cap"],
                   max_items=cfg["max_items"])
if len(prep.pairs) != len(pairs) or not prep.pairs["pair_id"].equals(pairs["pair_id"]):
    raise SystemExit(f"{source}: the raw files no longer give {sm.input.pairs}; rerun prepare")
items = analysis.sample_items(pairs["item_id"], cfg["items"], cfg["seed"])
table, counts = analysis.proposal_pairs(pairs, analysis.failure_kinds.answer_passages(prep.passages),
                                        Reattributor.from_config(cfg["reattributor"]), items,
                                        f"{source}/proposals")
table.to_parquet(sm.output.pairs, index=False)
Path(sm.output.sample).write_text(json.dumps({**counts, "item_ids": items}, indent=1))
log.info("%s: %s", source, counts)
