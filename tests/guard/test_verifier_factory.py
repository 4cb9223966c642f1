"""The verifier factory's own choices: which kinds run an encoder (and so take any runtime), and where an LLM
judge keeps its answers."""
import pytest
from conftest import verifier_cfg

from citebound.verifiers import build_verifier, runs_encoder


# from the docstring: encoders (embedding, NLI, HHEM's T5 encoder, the trained head's MiniLM, MiniCheck's
# RoBERTa/DeBERTa) run on any runtime; the seq2seq ones (AttrScore, MiniCheck-Flan-T5) and the non-model kinds
# do not
@pytest.mark.parametrize("cfg,encoder", [
    ({"kind": "embedding"}, True), ({"kind": "nli"}, True), ({"kind": "hhem"}, True), ({"kind": "trained"}, True),
    ({"kind": "minicheck", "variant": "encoder"}, True),
    ({"kind": "minicheck", "variant": "seq2seq"}, False), ({"kind": "minicheck"}, False),
    ({"kind": "attrscore"}, False), ({"kind": "attrscore", "variant": "encoder"}, False),
    ({"kind": "llm", "variant": "encoder"}, False), ({"kind": "lexical"}, False), ({}, False),
])
def test_which_kinds_run_an_encoder(cfg, encoder):
    assert runs_encoder(cfg) is encoder


def test_an_llm_judge_keeps_one_answer_store_per_setting(tmp_path, monkeypatch):
    """Two judges of one name whose answers could differ (another max_tokens or temperature) must not share the
    stored answers: each setting has a store file of its own; the same setting reopens its file."""
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test")
    base = verifier_cfg("llm_judge")
    for cfg in (base, {**base, "max_tokens": 64}, {**base, "temperature": 0.7}, base):
        build_verifier(cfg, tmp_path)
    stores = sorted(p.name for p in (tmp_path / "llm").glob("*.sqlite"))
    assert len(stores) == 3 and all(n.startswith(f"{base['name']}-") for n in stores)
