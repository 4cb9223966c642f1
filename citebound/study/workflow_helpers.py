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
    return logging.getLogger(getattr(snakemake, "rule", "citebound"))


def param_json(snakemake: Any, name: str) -> Any:
    """A JSON-serialised config slice passed as a rule param."""
    return json.loads(getattr(snakemake.params, name))


def settings(snakemake: Any) -> dict[str, Any]:
    """The rule's ``settings`` param: exactly the config keys (and set names) the rule reads."""
    return json.loads(snakemake.params.settings)


def scored_sets(snakemake: Any, name: str) -> dict[str, Any]:
    """{set name: pairs + score_/verdict_ columns} from the ``<name>_pairs``/``<name>_scores``
    inputs; the set names come from ``settings['sets'][name]``, in input order (scores are
    grouped per set, one file per verifier)."""
    from citebound.study.scored_tables import load_scored

    sets = settings(snakemake)["sets"][name]
    pair_files = list(getattr(snakemake.input, f"{name}_pairs"))
    score_files = list(getattr(snakemake.input, f"{name}_scores"))
    per_set = len(score_files) // len(sets) if sets else 0
    if len(pair_files) != len(sets) or per_set * len(sets) != len(score_files):
        raise ValueError(f"{name}: {len(sets)} sets but {len(pair_files)} pair and {len(score_files)} score files")
    return {s: load_scored(p, score_files[i * per_set:(i + 1) * per_set])
            for i, (s, p) in enumerate(zip(sets, pair_files))}


def eval_split(df: Any) -> Any:
    """The rows of the 'eval' split (the part not used to fit the stacked verifier), or all rows
    when the set has no such split."""
    is_eval = df["split"] == "eval"
    return df[is_eval] if is_eval.any() else df
