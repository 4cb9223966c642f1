"""Where the study's config puts things: a trained verifier left at its definition's default reads this experiment's
own trained head, one given its own model keeps it, and a source's config key is its name with "/" as "__"."""
from omegaconf import OmegaConf

from citebound.study.config import TRAINED_DEFAULT, place_trained_models, source_key


def test_only_a_trained_verifier_at_the_default_is_placed_under_the_results():
    cfg = OmegaConf.create({"results_dir": "results/exp1", "verifiers": {
        "trained": {"kind": "trained", "model": TRAINED_DEFAULT},
        "mine": {"kind": "trained", "model": "/models/my-head"},
        "lex": {"kind": "lexical", "model": TRAINED_DEFAULT}}})
    place_trained_models(cfg)
    assert cfg.verifiers.trained.model == "results/exp1/models/trained"
    assert cfg.verifiers.mine.model == "/models/my-head"
    assert cfg.verifiers.lex.model == TRAINED_DEFAULT


def test_a_source_key_keeps_its_parts_apart():
    assert source_key("released/nora") == "released__nora"
    assert source_key("released/open-scholar.v2") == "released__open_scholar_v2"
    assert source_key("released/a_b") != source_key("released_a/b")


def test_a_stacked_verifier_brings_its_feature_verifiers_and_rankers_their_generators():
    """fitted stacks lexical and embedding (its definition's features): both are composed though the panel names
    only fitted; a generator ranker is composed beside the generation models, once when it is both."""
    from citebound.study.config import compose_config

    cfg = compose_config(["verifier_panel=[fitted]", "generator_rankers=[smollm2-135m]"])
    assert sorted(cfg.verifiers) == ["embedding", "fitted", "lexical"]
    assert list(cfg.generators) == ["smollm2_135m"] and cfg.generators.smollm2_135m.name == "smollm2-135m"
    cfg = compose_config(["generation.models=[smollm2-135m]", "generator_rankers=[smollm2-135m]"])
    assert list(cfg.generators) == ["smollm2_135m"]
