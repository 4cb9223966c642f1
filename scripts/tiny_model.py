"""Rule tiny_model: build a tiny random-weight Llama with a chat template."""
from citeguard.rulekit import start
from citeguard.tiny import build_tiny_llama

log = start(snakemake)  # noqa: F821
path = build_tiny_llama(snakemake.output[0])  # noqa: F821
log.info("built %s", path)
