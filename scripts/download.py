"""Rule download: fetch one raw file (upstream or mirror) and check its sha256."""

import sys

from citebound.scoring.io import DataError, FileSpec, data_mirror, fetch_file
from citebound.study.workflow_helpers import param_json, start

log = start(snakemake)  # noqa: F821
spec = FileSpec.from_dict(param_json(snakemake, "spec"))  # noqa: F821
try:
    origin = fetch_file(spec, snakemake.output[0], data_mirror())  # noqa: F821
except DataError as e:  # offline, or a bad mirror: say so on the console too, not only in the log
    log.error("%s", e)
    print(f"\nerror: {e}\n(raw files land under the config's raw_dir, resources/raw/ by default; see README, "
          "'The data mirror')\n", file=sys.__stderr__, flush=True)
    raise SystemExit(1) from None
log.info("fetched %s from %s (sha256 ok; licence: %s)", spec.path, origin, spec.licence)
