"""Small helpers for the thin rule scripts in ``scripts/``."""
from __future__ import annotations

import json
import logging
import sys
from typing import Any


def start(snakemake: Any) -> logging.Logger:
    """Send this rule's logging and stderr to ``snakemake.log[0]`` (if any)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if getattr(snakemake, "log", None) and len(snakemake.log):
        fh = open(snakemake.log[0], "w")
        sys.stderr = fh
        handlers = [logging.StreamHandler(fh)]
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return logging.getLogger(getattr(snakemake, "rule", "citeguard"))


def param_json(snakemake: Any, name: str) -> Any:
    """A JSON-serialised config slice passed as a rule param."""
    return json.loads(getattr(snakemake.params, name))
