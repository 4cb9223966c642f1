"""Rule prepare: raw files of one set -> pairs.parquet, skipped.csv, stats.json."""
from pathlib import Path

from citebound.study.prepare import prepare_set, write_prepared
from citebound.study.workflow_helpers import param_json, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = param_json(sm, "set_cfg")
files = {k: Path(v) for k, v in sm.input.items()}
prep = prepare_set(sm.wildcards.set, cfg["kind"], files, cfg,
                   claim_cap=int(sm.params.claim_cap), max_items=sm.params.max_items)
write_prepared(prep, sm.output.pairs, sm.output.skipped, sm.output.stats)
log.info("%s", prep.stats.row())
