"""Example guard input shipped with the package: ``answer.json`` (one cited answer with its passages).

>>> import json
>>> sorted(json.loads(path("answer.json").read_text()))
['answer', 'id', 'passages']
"""
from __future__ import annotations

from pathlib import Path


def path(name: str = "answer.json") -> Path:
    """The file of a shipped example (``citebound guard --input "$(citebound example)"``)."""
    p = Path(__file__).resolve().parent / name
    if not p.is_file():
        raise FileNotFoundError(f"no shipped example {name!r}; have {sorted(q.name for q in p.parent.glob('*.json'))}")
    return p
