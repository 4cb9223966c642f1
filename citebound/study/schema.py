"""Validation of the composed config against workflow/schemas/config.schema.yaml.

JSON Schema (checked with ``jsonschema``, the library behind ``snakemake.utils.validate``) was
chosen over Hydra structured configs because the group files (verifiers, sets, generators) are
open-ended YAML that users copy and edit: the schema documents every key in one readable file and
rejects unknown ones, without turning each group into a Python dataclass. The checks JSON Schema
cannot express live here.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
# the only keys `snakemake --config` takes; everything else goes through overrides
CLI_KEYS = ("experiment", "overrides")


class SchemaError(ValueError):
    """The composed config breaks the schema; the message names the key and the nearest valid one."""


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text())


def nearest(key: str, valid: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest valid key, or ''."""
    match = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def check_cli_keys(config: Mapping[str, Any]) -> None:
    """Refuse `--config` keys other than experiment and overrides (a typo would be ignored)."""
    for key in config:
        if key not in CLI_KEYS:
            raise SchemaError(f"unknown --config key {key!r}{nearest(key, CLI_KEYS)}; --config takes only "
                              f"{list(CLI_KEYS)}; set anything else with overrides='[\"group.key=value\"]'")


def _where(path: Iterable[Any]) -> str:
    return ".".join(str(p) for p in path) or "<root>"


def _message(err: ValidationError) -> str:
    where = _where(err.absolute_path)
    if err.validator == "additionalProperties":
        allowed = err.schema.get("properties", {})
        extra = sorted(set(err.instance) - set(allowed))
        if allowed and extra:
            key = extra[0]
            prefix = f"{where}." if where != "<root>" else ""
            return f"unknown config key {prefix + key!r}{nearest(prefix + key, [prefix + k for k in allowed])}"
    return f"config key {where!r}: {err.message}"


def validate_config(cfg: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`SchemaError` for the first problem of a composed (plain) config."""
    schema = load_schema() if schema is None else schema
    errors = sorted(Draft202012Validator(schema).iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        extra = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise SchemaError(_message(errors[0]) + extra)
    w = cfg["windowing"]
    if not w["window_chars"] > w["stride"]:
        raise SchemaError(f"windowing.stride ({w['stride']}) must be smaller than windowing.window_chars "
                          f"({w['window_chars']}), or text between windows is never read")
    a = cfg["analysis"]
    verifiers = cfg.get("verifiers", {})
    guard = a.get("guard_verifier")
    if guard is not None:
        if guard not in cfg["verifier_panel"]:
            raise SchemaError(f"analysis.guard_verifier={guard!r} is not in verifier_panel "
                              f"{list(cfg['verifier_panel'])}{nearest(guard, cfg['verifier_panel'])}")
        if verifiers.get(guard, {}).get("binary", False):
            continuous = [v for v in cfg["verifier_panel"] if not verifiers.get(v, {}).get("binary", False)]
            raise SchemaError(f"analysis.guard_verifier={guard!r} gives binary scores, so a conformal tau means "
                              f"nothing; pick a continuous one: {continuous}")


def check_analysis_sets(cfg: Mapping[str, Any]) -> None:
    """The workflow's analyses read sets by name: each must be a selected dataset (the library
    composes configs with no datasets, so this is the workflow's check, not validate_config's)."""
    a = cfg["analysis"]
    scored = {f"gold/{d}" for d in cfg["datasets"]}
    for key in ("validation_set", "calibration_set", "hard_negative_set", "scope_set", "frozen_scores_set",
                "validation_heldout_set"):
        name = a.get(key)
        if name is not None and name not in scored:
            raise SchemaError(f"analysis.{key}={name!r} is not a selected dataset{nearest(name, scored)}; "
                              f"datasets are {sorted(scored)}")


def check_score_first(names: Sequence[str], sets: Mapping[str, Any]) -> None:
    """Every set named in ``score_first`` must be one the experiment scores."""
    for name in names:
        if name not in sets:
            raise SchemaError(f"score_first: {name!r} is not a set of this experiment{nearest(name, sets)}; "
                              f"sets are {sorted(sets)}")
