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


def scored_sets(snakemake: Any, name: str) -> dict[str, "Any"]:
    """{set name: pairs + score_/verdict_ columns} from ``<name>_pairs``/``<name>_scores`` inputs."""
    from .scores import load_scored

    out = {}
    score_files = list(getattr(snakemake.input, f"{name}_scores"))
    for p in getattr(snakemake.input, f"{name}_pairs"):
        set_dir = p.rsplit("/data/", 1)[1].rsplit("/pairs.parquet", 1)[0]
        mine = [s for s in score_files if f"/scores/{set_dir}/" in s]
        out[set_dir] = load_scored(p, mine)
    return out


def panel(snakemake: Any) -> list[str]:
    return json.loads(snakemake.params.panel)
