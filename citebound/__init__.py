"""citebound: audit and guard citation faithfulness of cited scientific answers.

>>> import citebound
>>> text, report = citebound.guard(
...     "Mitochondria produce ATP through oxidative phosphorylation [1].",
...     ["In cells, mitochondria produce ATP through oxidative phosphorylation."], verifier="lexical")
>>> report.verified, text
(1, 'Mitochondria produce ATP through oxidative phosphorylation [1].')
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citebound.guarding.guard import Guard

__version__ = "0.4.0"
__all__ = ["Guard", "guard", "load_scorer"]


def __getattr__(name: str) -> Any:
    if name == "Guard":  # imported on first use: `import citebound` stays light
        from citebound.guarding.guard import Guard

        return Guard
    raise AttributeError(f"module 'citebound' has no attribute {name!r}")


def load_scorer(verifier: str = "embedding", *, overrides: Mapping[str, Any] | None = None,
                model_path: str | None = None, cache_dir: str | None = None,
                runtime: Mapping[str, Any] | None = None):
    """A pair scorer for a verifier definition (``citebound/definitions/verifier/<name>.yaml``)."""
    from citebound.scoring.loader import load_scorer as _load

    return _load(verifier, overrides, model_path=model_path, cache_dir=cache_dir, runtime=runtime)


@functools.lru_cache(maxsize=4)
def _scorer(name: str):
    return load_scorer(name)


def guard(answer: str, passages: Sequence[Any], verifier: str | Callable = "embedding",
          reattributor: str | None = "bm25", threshold: float | str | Path | Mapping[str, Any] | None = None,
          base: int = 1, remove: bool = False, proposals: int = 3, group: str | None = None):
    """Verify -> re-attribute -> flag the citations of one answer.

    ``verifier``: a verifier definition name or a scorer ``(claims, passages) -> (scores, verdicts)``;
    a named verifier is loaded once per process and reused. ``reattributor``: a re-attributor
    definition name (``bm25``, ``verifier``) or None. ``threshold``: None (the verifier's shipped
    calibration, ``citebound/calibrations/<name>.json``, where it runs as calibrated; otherwise its verdict
    decides), a float tau, or a calibration (dict or path from ``citebound calibrate``; its verifier
    must match); ``group``: the calibration group the answer belongs to (a grouped calibration's; None: the
    pooled one). Returns ``(guarded_answer, GuardReport)``. For many answers, build a
    :class:`citebound.Guard` once and call its ``guard_many``.
    """
    from citebound.guarding.guard import Guard

    scorer = _scorer(verifier) if isinstance(verifier, str) else verifier
    cal = threshold if isinstance(threshold, (str, Path, Mapping)) else None
    tau = None if cal is not None or threshold is None else float(threshold)
    g = Guard(scorer, reattributor=reattributor, calibration=str(cal) if isinstance(cal, Path) else cal,
              threshold=tau, base=base, remove=remove, proposals=proposals)
    return g.guard(answer, passages, group=group)
