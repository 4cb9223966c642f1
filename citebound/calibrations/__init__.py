"""The guard's default calibrations, shipped as package data: ``<verifier>.json`` for each CPU verifier,
made by ``snakemake default_calibrations`` on the expert attribution gold (each file's ``provenance``
says on what, and for which answers it holds). A guard uses one only when its verifier runs exactly as
calibrated (same verifier hash); ``--calibration none`` (``default_calibration=False``) turns it off.
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any


def shipped(verifier: str) -> dict[str, Any] | None:
    """The shipped calibration of ``verifier``, checked like any calibration file, or None."""
    from citebound.calibration.files import read_calibration

    path = resources.files(__name__) / f"{verifier}.json"
    if not verifier or not path.is_file():
        return None
    return read_calibration(json.loads(path.read_text()))


def available() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files(__name__).iterdir() if p.name.endswith(".json"))
