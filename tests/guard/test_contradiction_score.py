"""The contradiction check's score is the embedding verifier's score, less 1 where its head vetoes (#56, round 89):
compared with the embedding verifier itself on the shipped graph (an independent path to layer 6's cosine; the two
run the float32 graph on differently padded batches, about 3e-5 apart), with the veto switched off (``veto_below``
0: no P(support) is below it) and on for every unit (``veto_below`` above 1). A check that read another layer's
cosine, or ignored the configured ``veto_below``, fails here."""
import numpy as np
import pytest

pytest.importorskip("onnxruntime")

CLAIMS = ["Statins lower LDL cholesterol.", "Vitamin C prevents the common cold.", "Mitochondria produce ATP.",
          "Aspirin increases bleeding."]
WINDOWS = ["Statins lower LDL cholesterol in adults with high risk.",
           "Regular vitamin C supplementation did not reduce the incidence of the common cold.",
           "The heart pumps blood through the body.", "Aspirin decreased bleeding in the trial."]


@pytest.fixture(scope="module")
def embedding_scores():
    from citebound.verifiers.embedding import EmbeddingVerifier

    s, _ = EmbeddingVerifier({"name": "embedding", "runtime": "onnx", "graph": "shipped"}).judge(CLAIMS, WINDOWS)
    return np.asarray(s, float)


def check(**cfg):
    from citebound.verifiers.contradiction import ContradictionVerifier

    return ContradictionVerifier({"name": "embedding+contradiction", **cfg}, None)


def test_with_no_veto_the_score_is_the_embedding_verifiers(embedding_scores):
    s, ok = check(veto_below=0.0).judge(CLAIMS, WINDOWS)
    assert s == pytest.approx(embedding_scores, abs=2e-4)
    assert ok.tolist() == (embedding_scores >= 0.75).tolist()


def test_with_every_unit_vetoed_each_score_loses_exactly_one(embedding_scores):
    s, ok = check(veto_below=1.01).judge(CLAIMS, WINDOWS)
    assert s == pytest.approx(embedding_scores - 1.0, abs=2e-4)
    assert not ok.any()


def test_the_default_veto_falls_where_the_heads_p_support_is_below_one_half(embedding_scores):
    v = check()
    from citebound.verifiers.contradiction import unit_features

    p = v.p_support(unit_features(v.encoder, CLAIMS, WINDOWS))
    s, _ = v.judge(CLAIMS, WINDOWS)
    assert s == pytest.approx(embedding_scores - (p < 0.5), abs=2e-4)
    assert 0 < int((p < 0.5).sum()) < len(CLAIMS)  # the cases hold a vetoed unit and a kept one
