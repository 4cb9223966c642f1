"""Rule tiny_model: build a tiny random-weight Llama with a chat template."""
from citebound.study.tiny import build_tiny_llama
from citebound.study.workflow_helpers import start

log = start(snakemake)  # noqa: F821
path = build_tiny_llama(snakemake.output[0])  # noqa: F821
log.info("built %s", path)
