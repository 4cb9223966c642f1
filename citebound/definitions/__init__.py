"""The guard's own definitions, shipped as package data: one YAML file per verifier
(``verifier/<name>.yaml``), per re-attributor (``reattributor/<name>.yaml``) and the windowing
protocol (``windowing/default.yaml``).

The guard reads a single file with :func:`load`; the study's Hydra config reads the same files
through the search path ``pkg://citebound.definitions`` (``config/config.yaml``), so there is one
copy of each definition.

>>> load("reattributor", "bm25")["k1"]
1.5
>>> "lexical" in available("verifier")
True
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
GROUPS = ("verifier", "reattributor", "windowing")


class DefinitionError(ValueError):
    """An unknown or unreadable definition; the message lists the valid names."""


def available(group: str) -> list[str]:
    """The names defined in a group (``verifier``, ``reattributor``, ``windowing``)."""
    if group not in GROUPS:
        raise DefinitionError(f"unknown definition group {group!r}; valid: {', '.join(GROUPS)}")
    return sorted(p.stem for p in (ROOT / group).glob("*.yaml"))


def path_of(group: str, name: str) -> Path:
    """The file of one definition; an unknown name is an error naming the nearest valid ones."""
    valid = available(group)
    if name not in valid:
        near = difflib.get_close_matches(str(name), valid, n=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise DefinitionError(f"unknown {group} {name!r}{hint}; valid choices: {valid}")
    return ROOT / group / f"{name}.yaml"


def load(group: str, name: str) -> dict[str, Any]:
    """One definition as a plain dict (PyYAML; a Hydra ``# @package`` line is a comment here)."""
    import yaml

    path = path_of(group, name)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise DefinitionError(f"{path}: expected a mapping, got {type(data).__name__}")
    return data


def windowing() -> dict[str, int]:
    """The default windowing protocol (600-character windows at stride 300, claims capped at 600)."""
    return {k: int(v) for k, v in load("windowing", "default").items()}
