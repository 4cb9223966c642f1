"""Rule kit_test_data: a small local dataset of the hub's schema, from the mirrored QA rows."""
import json

from citebound.study import kit
from citebound.study.workflow_helpers import settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
manifest = json.loads(open(sm.input.manifest, encoding="utf-8").read())
rows = kit.load_rows({"format": "csv", "data_files": sm.input.qa_csv})
qa, corpus, small = kit.stand_in_dataset(manifest, rows, cfg["n"])
qa.to_parquet(sm.output.qa, index=False)
corpus.to_parquet(sm.output.corpus, index=False)
with open(sm.output.manifest, "w", encoding="utf-8") as fh:
    json.dump(small, fh, indent=2)
log.info("test dataset: %d QA rows, %d stand-in passages, %d manifest entries (md5 %s)",
         len(qa), len(corpus), len(small["entries"]), small["expected_md5"])
