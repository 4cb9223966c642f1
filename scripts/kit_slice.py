"""Rule kit_slice: rebuild the kit's BioASQ slice through HF datasets and check it against the manifest."""
import json

from citebound.study import kit
from citebound.study.workflow_helpers import settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
manifest = json.loads(open(sm.input.manifest, encoding="utf-8").read())
if cfg["local"]:
    qa = kit.load_rows({"format": "parquet", "data_files": sm.input.qa}, sm.params.cache_dir)
    corpus = kit.load_rows({"format": "parquet", "data_files": sm.input.corpus}, sm.params.cache_dir)
else:
    qa, corpus = kit.hub_tables(cfg["qa"], cfg["corpus"], cfg["qa_csv"], sm.params.cache_dir, log)
records, md5 = kit.rebuild_slice(manifest, qa, kit.passage_table(corpus))
with open(sm.output[0], "w", encoding="utf-8") as fh:
    fh.write(kit.slice_text(records))
log.info("slice: %d records, md5 %s (matches the manifest)", len(records), md5)
