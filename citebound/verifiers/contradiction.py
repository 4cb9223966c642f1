"""``embedding+contradiction``: the embedding verifier with the contradiction check as a veto (#47).

Per (claim, window) unit, one pass of the shipped MiniLM graph gives the embedding score ``(cos_l6 + 1) / 2``
and the frozen features the check's head reads (here: :data:`FEATURES`, :func:`unit_features`; the
head is trained by :mod:`citebound.training.contradiction`, which imports them); the head (ONNX,
pinned) gives P(support | support or refute). A unit whose P(support) is below ``veto_below`` loses 1 from
its score: below every threshold on the embedding's 0..1 scale, so a passage the check judges contradicting
never passes, whatever its similarity. The pair takes its best window; calibrate this verifier's own
threshold (``citebound calibrate``): the guarantee is then certified for the score that is deployed.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citebound.verifiers.trained import FEATURES as BASE_FEATURES

FEATURES = [*BASE_FEATURES, "direction"]
VETO_BELOW = 0.5
# the negation cue the check's heads read (trained and scored alike): version 1, the one the shipped head was
# trained on, which misses contractions ("doesn't"); moving to 2 means retraining and re-pinning the shipped head
NEGATION_VERSION = 1

_UP = re.compile(r"\b(?:increas\w*|higher|more|greater|elevat\w*|rais\w*|improv\w*|enhanc\w*|boost\w*|ris(?:e|es|en|ing)"
                 r"|rose|gain\w*|promot\w*|accelerat\w*)\b", re.I)
_DOWN = re.compile(r"\b(?:decreas\w*|lower\w*|less|fewer|reduc\w*|declin\w*|diminish\w*|drop\w*|fall\w*|fell"
                   r"|worsen\w*|impair\w*|suppress\w*|slow\w*|prevent\w*)\b", re.I)
_NOCHANGE = re.compile(r"\b(?:no (?:significant |statistically significant )?(?:difference|change|effect|association)"
                       r"|did not (?:significantly )?(?:change|differ|affect|reduce|increase|improve|alter)"
                       r"|not (?:significantly )?(?:different|associated|changed))\b", re.I)


def direction_mismatch(claim: str, window: str) -> float:
    """1.0 when claim and window point opposite ways: one says up and the other only down, or the claim
    asserts a change and the window says there was none.

    >>> direction_mismatch("Vitamin C reduces colds.", "Vitamin C did not reduce the incidence of colds.")
    1.0
    >>> direction_mismatch("Statins lower LDL.", "Statins reduce LDL cholesterol.")
    0.0
    >>> direction_mismatch("Exercise increases HDL.", "Exercise lowered HDL in adults.")
    1.0
    """
    cu, cd, wu, wd = (bool(r.search(t)) for t in (claim, window) for r in (_UP, _DOWN))
    if (cu and not cd and wd and not wu) or (cd and not cu and wu and not wd):
        return 1.0
    return float((cu or cd) and not _NOCHANGE.search(claim) and bool(_NOCHANGE.search(window)))


def unit_features(encoder: Any, claims: Sequence[str], windows: Sequence[str], progress: bool = False) -> np.ndarray:
    """(n_units, len(FEATURES)): the frozen features of each (claim, window) unit and its direction cue."""
    base = encoder.unit_features(claims, windows, progress=progress, negation_version=NEGATION_VERSION)
    direction = np.array([[direction_mismatch(c, w)] for c, w in zip(claims, windows)]).reshape(-1, 1)
    return np.hstack([base, direction])


def embedding_score(x: np.ndarray) -> np.ndarray:
    """The embedding verifier's score of a unit: (cos_l6 + 1) / 2."""
    return (x[:, FEATURES.index("cos_l6")] + 1) / 2


def p_support(head: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    z = ((x - np.asarray(head["mean"])) / np.asarray(head["scale"])) @ np.asarray(head["coef"]) + head["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


def combined(emb: np.ndarray, p: np.ndarray, veto_below: float = VETO_BELOW) -> np.ndarray:
    """The veto: a unit the head judges contradicted loses 1 (below every threshold on the embedding's 0..1)."""
    return emb - (p < veto_below).astype(float)


class ContradictionVerifier:
    binary = False
    chunk_units = 2_048

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        import onnxruntime as ort

        from citebound.models import contradiction_head, uses_shipped_graph
        from citebound.verifiers.trained import SHIPPED_ENCODER, FrozenEncoder

        self.name = cfg.get("name", "embedding+contradiction")
        self.threshold = float(cfg.get("threshold", 0.75))
        self.veto_below = float(cfg.get("veto_below", 0.5))
        path, _ = contradiction_head(cfg.get("head", "shipped"))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        from citebound.scoring.modelpath import resolve_model

        model = SHIPPED_ENCODER if uses_shipped_graph(cfg) else resolve_model(SHIPPED_ENCODER, "model")
        self.encoder = FrozenEncoder(model, cfg, cache_dir, name=self.name)

    def p_support(self, features: np.ndarray) -> np.ndarray:
        if not len(features):
            return np.zeros(0)
        return self.session.run(["p_support"], {"features": features.astype(np.float32)})[0].astype(float)

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if not len(claims):
            return np.zeros(0), np.zeros(0, bool)
        x = unit_features(self.encoder, claims, windows)
        s = combined(embedding_score(x), self.p_support(x), self.veto_below)
        return s, s >= self.threshold
