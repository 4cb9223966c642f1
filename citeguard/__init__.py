"""citeguard: audit and guard citation faithfulness of cited scientific answers.

>>> import citeguard
>>> text, report = citeguard.guard(
...     "Mitochondria produce ATP through oxidative phosphorylation [1].",
...     ["In cells, mitochondria produce ATP through oxidative phosphorylation."], verifier="lexical")
>>> report.verified, text
(1, 'Mitochondria produce ATP through oxidative phosphorylation [1].')
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__version__ = "0.1.0"
__all__ = ["guard", "load_scorer"]


def load_scorer(verifier: str = "embedding", *, overrides: Mapping[str, Any] | None = None,
                model_path: str | None = None, cache_dir: str | None = None):
    """A pair scorer for a configured verifier (``config/verifier/<name>.yaml``)."""
    from .config import compose_config, to_plain
    from .scorer import PairScorer

    cfg = compose_config([f"verifier_panel=[{verifier}]", "datasets=[]", "sources=[]"])
    verifiers = to_plain(cfg.verifiers)
    verifiers[verifier].update(overrides or {})
    return PairScorer(verifiers[verifier], verifiers, to_plain(cfg.windowing), cache_dir, model_path)


def guard(answer: str, passages: Sequence[Any], verifier: str | Callable = "embedding",
          reattributor: str | None = "bm25", threshold: float | str | Path | Mapping[str, Any] | None = None,
          base: int = 1, remove: bool = False, proposals: int = 3):
    """Verify -> re-attribute -> flag the citations of one answer.

    ``verifier``: a verifier config name or a scorer ``(claims, passages) -> (scores, verdicts)``.
    ``threshold``: None (the verifier's verdict decides), a float tau, or a calibration
    (dict or path from ``citeguard calibrate``; its verifier must match). Returns
    ``(guarded_answer, GuardReport)``.
    """
    from .guarding import guard_answer, normalise_passages

    scorer = load_scorer(verifier) if isinstance(verifier, str) else verifier
    tau, guarantee = None, ""
    if threshold is not None:
        cal = threshold
        if isinstance(threshold, (str, Path)):
            cal = json.loads(Path(threshold).read_text())
        if isinstance(cal, Mapping):
            if getattr(scorer, "hash", cal.get("verifier_hash")) != cal.get("verifier_hash"):
                raise ValueError(f"calibration is for verifier {cal.get('verifier')!r}, not {getattr(scorer, 'name', '?')!r}")
            tau, guarantee = float(cal["tau"]), str(cal.get("marginal_guarantee", ""))
        else:
            tau = float(cal)
    texts = normalise_passages(list(passages))
    return guard_answer(answer, texts, scorer, tau=tau, base=base, reattribute=reattributor,
                        proposals=proposals, remove=remove, guarantee=guarantee)
