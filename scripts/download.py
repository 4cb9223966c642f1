"""Rule download: fetch one raw file (upstream or mirror) and check its sha256."""

from citebound.scoring.io import FileSpec, data_mirror, fetch_file
from citebound.study.workflow_helpers import param_json, start

log = start(snakemake)  # noqa: F821
spec = FileSpec.from_dict(param_json(snakemake, "spec"))  # noqa: F821
origin = fetch_file(spec, snakemake.output[0], data_mirror())  # noqa: F821
log.info("fetched %s from %s (sha256 ok; licence: %s)", spec.path, origin, spec.licence)
