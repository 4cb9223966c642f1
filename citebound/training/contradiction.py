"""A contradiction check on the shipped MiniLM: does the cited passage *contradict* the claim?

The embedding verifier scores topic: a passage that says "supplementation did not reduce colds" is as close
to "supplementation prevents colds" as one that says it did. This check is a small logistic head trained
on **supporting vs refuting** evidence only (the refute pairs of the licence-clean training sets), on the
frozen features of each (claim, window) unit that the trained head reads (cosines at layers 2, 4, 6, token
max-sim, term recall, number agreement, one-sided negation) plus one more, fixed in advance:

- ``direction``: 1 when the claim says a quantity rises and the window that it falls (or the reverse), or the
  claim asserts a change and the window "no significant difference".

Used as a **veto** in the verifier ``embedding+contradiction``: a window's score is the embedding score
``(cos_l6 + 1) / 2``, minus 1 when the head's P(support | support or refute) is below ``veto_below`` (0.5).
The pair takes the best window, as every verifier does, and the conformal layer calibrates this final score,
so the catch-rate guarantee is certified for what is deployed.

The head ships as ONNX (``citebound/models/contradiction/head.onnx``: standardise, linear, logistic), pinned by
its sha256 in :mod:`citebound.models`, and runs on ONNX Runtime: no torch.

Selection is on transfer (:func:`evaluate`): leave one refute source out, and the SciFact gold (whose
unsupported claims are all contradictions). The adoption rule, fixed before any result was seen
(:data:`ADOPTION`): the check becomes a default stage only if, on the left-out sources, it raises the
supporting-vs-contradicting AUC over embedding by at least 0.10 (the mean over sources, and on the SciFact
gold), keeps the catch guarantee on held-out gold, and costs at most 1.5x the guard's time per answer.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

# inference lives beside the verifier; training imports it, never the reverse
from citebound.verifiers.contradiction import (  # noqa: F401 - re-exported for the study and scripts
    FEATURES,
    NEGATION_VERSION,
    VETO_BELOW,
    combined,
    direction_mismatch,
    embedding_score,
    p_support,
    unit_features,
)

REFUTE_SOURCES = ("check_covid", "evidence_inference", "fever_symmetric", "scifact_train_rte", "scitab")
ADOPTION = {"min_auc_gain": 0.10, "max_cost_ratio": 1.5, "alpha": 0.1}


def fit(x: np.ndarray, y: np.ndarray, c: float) -> dict[str, Any]:
    """The trained head's fit (standardise, L2 logistic, balanced classes) of support (1) vs refute (0)."""
    from citebound.training.head import fit_head

    return fit_head(x, y, c, FEATURES, NEGATION_VERSION)


def pair_max(unit: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, unit)
    return out


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(a positive outscores a negative), ties half (Mann-Whitney)."""
    from scipy.stats import mannwhitneyu

    if not len(pos) or not len(neg):
        return float("nan")
    return float(mannwhitneyu(pos, neg, alternative="two-sided").statistic / (len(pos) * len(neg)))


def auc_gain(s_new: np.ndarray, s_old: np.ndarray, y: np.ndarray, n_boot: int, rng: np.random.Generator
             ) -> tuple[float, float, float, float, float]:
    """(AUC old, AUC new, gain, CI low, CI high): a paired bootstrap over pairs, 95% percentile interval."""
    pos, neg = y == 1, y == 0
    a_old, a_new = auc(s_old[pos], s_old[neg]), auc(s_new[pos], s_new[neg])
    gains = []
    ip, ineg = np.flatnonzero(pos), np.flatnonzero(neg)
    for _ in range(n_boot):
        bp, bn = rng.choice(ip, len(ip)), rng.choice(ineg, len(ineg))
        gains.append(auc(s_new[bp], s_new[bn]) - auc(s_old[bp], s_old[bn]))
    lo, hi = np.percentile(gains, [2.5, 97.5]) if gains else (np.nan, np.nan)
    return a_old, a_new, a_new - a_old, float(lo), float(hi)


def to_onnx(head: Mapping[str, Any]) -> bytes:
    """The head as an ONNX graph: ``features`` (N, len(FEATURES)) float32 -> ``p_support`` (N,)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    f = len(FEATURES)
    inits = [numpy_helper.from_array(np.asarray(head["mean"], np.float32), "mean"),
             numpy_helper.from_array(np.asarray(head["scale"], np.float32), "scale"),
             numpy_helper.from_array(np.asarray(head["coef"], np.float32).reshape(f, 1), "coef"),
             numpy_helper.from_array(np.asarray([head["intercept"]], np.float32), "intercept"),
             numpy_helper.from_array(np.asarray([-1], np.int64), "flat")]
    nodes = [helper.make_node("Sub", ["features", "mean"], ["centred"]),
             helper.make_node("Div", ["centred", "scale"], ["standard"]),
             helper.make_node("MatMul", ["standard", "coef"], ["z1"]),
             helper.make_node("Add", ["z1", "intercept"], ["z"]),
             helper.make_node("Sigmoid", ["z"], ["p"]),
             helper.make_node("Reshape", ["p", "flat"], ["p_support"])]
    graph = helper.make_graph(nodes, "citebound_contradiction",
                              [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["n", f])],
                              [helper.make_tensor_value_info("p_support", TensorProto.FLOAT, ["n"])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="citebound")
    model.ir_version = 8
    model.doc_string = "features: " + ", ".join(FEATURES)
    onnx.checker.check_model(model)
    return model.SerializeToString()
