"""Hydra config composition for the workflow and the CLI.

The root config names lists of group choices (``datasets``, ``sources``,
``verifier_panel``, ``generation.models``/``pipelines``); :func:`compose_config`
composes once to read those lists, then again with one ``+group@key=choice``
override per choice so each selected group file sits under its own key. An
unknown choice fails here, before any DAG is built, listing the valid names.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, open_dict

from citebound import definitions
from citebound._env import getenv
from citebound.scoring.hashing import canonical_json
from citebound.study.schema import SchemaError, validate_config
from citebound.verifiers import MODEL_KINDS, runs_encoder

# The Hydra config tree lives in the repository (an editable install finds it);
# point CITEBOUND_CONFIG_DIR at a copy of config/ to use another tree.
CONFIG_DIR = Path(getenv("CONFIG_DIR") or Path(__file__).resolve().parents[2] / "config")
# groups whose files ship with the guard (citebound/definitions/), found through the search path
# pkg://citebound.definitions that config/config.yaml declares
PACKAGED_GROUPS = ("verifier", "reattributor", "windowing")


class ConfigError(ValueError):
    """A wrong config choice or value; the message lists valid choices."""


def source_key(name: str) -> str:
    """Config key for a source name: ``released/nora`` -> ``released__nora``."""
    return name.replace("/", "__").replace(".", "_").replace("-", "_")


def available(group: str, config_dir: Path = CONFIG_DIR) -> list[str]:
    """Names of the options of a config group (``verifier``, ``source/released``); the guard's
    groups (``verifier``, ``reattributor``) are read from its package data."""
    if group in PACKAGED_GROUPS:
        from citebound import definitions

        return definitions.available(group)
    return sorted(p.stem for p in (config_dir / group).glob("*.yaml"))


def _compose(config_dir: Path, overrides: Sequence[str]) -> DictConfig:
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name="config", overrides=list(overrides))
    except HydraException as e:
        raise ConfigError(f"config error: {e}") from None
    finally:
        GlobalHydra.instance().clear()


def _check_choices(kind: str, group: str, names: Sequence[str], config_dir: Path) -> None:
    valid = available(group, config_dir)
    bad = [n for n in names if n not in valid]
    if bad:
        raise ConfigError(f"unknown {kind} {bad}; valid choices: {valid}")


def compose_config(overrides: Sequence[str] = (), config_dir: Path = CONFIG_DIR) -> DictConfig:
    """Compose the root config plus every selected group file.

    Returns a resolved config with ``verifiers.<name>``, ``dataset_cfg.<name>``,
    ``source_cfg.<key>``, ``generators.<name>`` and ``pipelines.<name>``.
    """
    config_dir = Path(config_dir).resolve()
    if not (config_dir / "config.yaml").is_file():
        raise ConfigError(f"no citebound config at {config_dir}: install with `pip install -e .` from the "
                          "repository, or set CITEBOUND_CONFIG_DIR to its config/ directory")
    base = _compose(config_dir, overrides)
    extra: list[str] = []
    panel = list(base.verifier_panel)
    _check_choices("verifier", "verifier", panel, config_dir)
    needed = list(panel) + [v for v in base.analysis.get("validation_extra", []) if v not in panel]
    for name in panel:  # stacked verifiers pull in their feature verifiers' configs
        for feat in definitions.load("verifier", name).get("features", []) or []:
            if feat not in needed:
                needed.append(feat)
    _check_choices("verifier (feature)", "verifier", needed, config_dir)
    extra += [f"+verifier@verifiers.{n}={n}" for n in needed]
    _check_choices("dataset", "dataset", list(base.datasets), config_dir)
    extra += [f"+dataset@dataset_cfg.{n}={n}" for n in base.datasets]
    for src in base.sources:
        family, _, option = str(src).partition("/")
        if family != "released" or not option:
            raise ConfigError(
                f"unknown source {src!r}: list released/<system> here "
                f"({available('source/released', config_dir)}); generated/<model>/<pipeline> sources "
                "come from generation.models x generation.pipelines"
            )
        _check_choices("source", "source/released", [option], config_dir)
        extra.append(f"+source/released@source_cfg.{source_key(src)}={option}")
    rankers = list(base.get("generator_rankers", []) or [])
    gen_models = list(dict.fromkeys(list(base.generation.models) + rankers))
    _check_choices("generator", "generator", gen_models, config_dir)
    _check_choices("pipeline", "pipeline", list(base.generation.pipelines), config_dir)
    extra += [f"+generator@generators.{source_key(m)}={m}" for m in gen_models]
    extra += [f"+pipeline@pipelines.{p}={p}" for p in base.generation.pipelines]
    cfg = _compose(config_dir, list(overrides) + extra)
    OmegaConf.resolve(cfg)
    apply_model_runtime(cfg)
    place_trained_models(cfg)
    try:
        validate_config(to_plain(cfg))
    except SchemaError as e:
        raise ConfigError(f"config error: {e}") from None
    return cfg


def place_trained_models(cfg: DictConfig) -> None:
    """A trained verifier left at its definition's model (``results/models/trained``) reads the one this
    experiment's ``train_verifier`` rule writes, under its own results directory."""
    with open_dict(cfg):
        for v in (cfg.get("verifiers") or {}).values():
            if v.get("kind") == "trained" and v.get("model") == TRAINED_DEFAULT:
                v["model"] = f"{cfg.results_dir}/models/trained"


TRAINED_DEFAULT = "results/models/trained"


def apply_model_runtime(cfg: DictConfig) -> None:
    """An experiment's ``model_runtime`` ({runtime, quantize}) set on every in-process model verifier;
    null keeps each verifier's own (the exact float32 path unless its file says otherwise; a file's
    ``graph: shipped``, the guard's ONNX graph, is the exact float32 torch path here). The runtime
    goes to the encoder verifiers only: a seq2seq verifier keeps torch, with the experiment's quantize."""
    mr = cfg.get("model_runtime")
    with open_dict(cfg):
        for v in (cfg.get("verifiers") or {}).values():
            if "graph" in v:
                # the guard's graph inside the wheel is the guard's: the study keeps its own runtimes (the
                # exact float32 path, or an experiment's model_runtime), so its tables do not move
                del v["graph"]
                if v.get("runtime") == "onnx":
                    v["runtime"] = "torch"
            if not mr or v.get("kind") not in MODEL_KINDS:
                continue
            if mr.get("quantize") is not None:
                v["quantize"] = mr["quantize"]
            if mr.get("runtime") is not None and runs_encoder(v):
                v["runtime"] = mr["runtime"]


def to_plain(node: Any) -> Any:
    """Plain dict/list for a config node; other values unchanged."""
    return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node


def config_json(node: Any) -> str:
    """Canonical JSON of a config slice (sorted keys): what rules get as params."""
    return canonical_json(to_plain(node))
