"""citeguard: audit and guard citation faithfulness of cited scientific answers.

>>> import citeguard
>>> text, report = citeguard.guard(
...     "Mitochondria produce ATP through oxidative phosphorylation [1].",
...     ["In cells, mitochondria produce ATP through oxidative phosphorylation."], verifier="lexical")
>>> report.verified, text
(1, 'Mitochondria produce ATP through oxidative phosphorylation [1].')
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__version__ = "0.1.0"
__all__ = ["guard", "load_scorer"]


def load_scorer(verifier: str = "embedding", *, overrides: Mapping[str, Any] | None = None,
                model_path: str | None = None, cache_dir: str | None = None):
    """A pair scorer for a configured verifier (``config/verifier/<name>.yaml``)."""
    from .pair_scoring import load_scorer as _load

    return _load(verifier, overrides, model_path=model_path, cache_dir=cache_dir)


def guard(answer: str, passages: Sequence[Any], verifier: str | Callable = "embedding",
          reattributor: str | None = "bm25", threshold: float | str | Path | Mapping[str, Any] | None = None,
          base: int = 1, remove: bool = False, proposals: int = 3):
    """Verify -> re-attribute -> flag the citations of one answer.

    ``verifier``: a verifier config name or a scorer ``(claims, passages) -> (scores, verdicts)``.
    ``reattributor``: a re-attributor config name (``bm25``, ``verifier``) or None.
    ``threshold``: None (the verifier's verdict decides), a float tau, or a calibration
    (dict or path from ``citeguard calibrate``; its verifier must match). Returns
    ``(guarded_answer, GuardReport)``.
    """
    from .calibration import check_verifier, guarantee_line, read_calibration
    from .guarding import guard_answer, normalise_passages

    scorer = load_scorer(verifier) if isinstance(verifier, str) else verifier
    tau, guarantee = None, ""
    if isinstance(threshold, (str, Path, Mapping)):
        cal = read_calibration(threshold)
        if hasattr(scorer, "hash"):
            check_verifier(cal, scorer.name, scorer.hash)
        tau, guarantee = cal["tau"], guarantee_line(cal)
    elif threshold is not None:
        tau = float(threshold)
    texts = normalise_passages(list(passages))
    return guard_answer(answer, texts, scorer, tau=tau, base=base, reattribute=reattributor,
                        proposals=proposals, remove=remove, guarantee=guarantee)
