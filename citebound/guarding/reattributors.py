"""Re-attribution proposals: which other provided passage might support a sentence.

The re-attributor *proposes* candidate passages; the verifier *disposes*
(the guard moves a pointer only to a proposal the verifier accepts). Used by
the deployable guard and by the pipeline's re-attribution analysis alike, with
BM25's ``k1``/``b`` from ``citebound/definitions/reattributor/<name>.yaml``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("bm25", "verifier")


@dataclass(frozen=True)
class Reattributor:
    """How proposals are made.

    ``bm25``: the ``proposals`` best other passages by Okapi BM25 (``k1``, ``b``)
    over content terms; ``verifier``: every other passage (the verifier ranks them).
    """

    name: str
    kind: str
    k1: float = 1.5
    b: float = 0.75
    proposals: int = 3

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"re-attributor {self.name!r}: unknown kind {self.kind!r} (valid: {', '.join(KINDS)})")
        if self.proposals < 1:
            raise ValueError(f"re-attributor {self.name!r}: proposals must be >= 1, got {self.proposals}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], proposals: int = 3) -> Reattributor:
        return cls(name=str(cfg.get("name", cfg["kind"])), kind=str(cfg["kind"]), k1=float(cfg.get("k1", 1.5)),
                   b=float(cfg.get("b", 0.75)), proposals=int(proposals))

    def propose(self, claim: str, passages: Sequence[str], exclude: set[int]) -> list[int]:
        """Indices of the candidate passages for ``claim``, best first, never one in ``exclude``."""
        return self.proposer(passages)(claim, exclude)

    def proposer(self, passages: Sequence[str]) -> Callable[[str, set[int]], list[int]]:
        """:meth:`propose` for many claims against the same passages: the BM25 index is built once."""
        if self.kind == "verifier" or not passages:  # no passages: nothing to propose (and no BM25 index)
            return lambda claim, exclude: [j for j in range(len(passages)) if j not in exclude]
        index = bm25_index(passages, k1=self.k1, b=self.b)

        def propose(claim: str, exclude: set[int]) -> list[int]:
            s = bm25_query(index, claim)
            return [int(i) for i in np.argsort(-s, kind="stable") if int(i) not in exclude][:self.proposals]

        return propose


def load_reattributor(name: str, proposals: int = 3) -> Reattributor:
    """The re-attributor ``citebound/definitions/reattributor/<name>.yaml`` describes."""
    from citebound import definitions

    try:
        return Reattributor.from_config(definitions.load("reattributor", name), proposals)
    except definitions.DefinitionError as e:
        raise ValueError(str(e).replace("unknown reattributor", "unknown re-attributor")) from None


def bm25_index(passages: Sequence[str], k1: float = 1.5, b: float = 0.75) -> Any:
    """A rank-bm25 Okapi index over the passages' content terms."""
    from rank_bm25 import BM25Okapi

    from citebound.verifiers.lexical import content_terms

    return BM25Okapi([sorted(content_terms(p)) or ["<empty>"] for p in passages], k1=k1, b=b)


def bm25_query(index: Any, claim: str) -> np.ndarray:
    """Each indexed passage's BM25 score for the claim's content terms."""
    from citebound.verifiers.lexical import content_terms

    return np.asarray(index.get_scores(sorted(content_terms(claim))), float)


def bm25_scores(claim: str, passages: Sequence[str], k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 (rank-bm25) of each candidate passage for the claim, over content terms."""
    return bm25_query(bm25_index(passages, k1=k1, b=b), claim)
