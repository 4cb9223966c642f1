"""Pair scoring: one verifier under the full-passage protocol, stacked ones included.

:func:`load_scorer` turns a verifier name into a :class:`PairScorer` by reading only that
verifier's definition (``citebound/definitions/verifier/<name>.yaml``, plus a stacked verifier's
feature verifiers): its defaults are the definition's. The study builds the same
:class:`PairScorer` from its composed config, where an experiment's ``model_runtime`` applies.
"""
from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citebound import definitions
from citebound.scoring.hashing import verifier_hash
from citebound.verifiers import MODEL_KINDS, PairScores, build_verifier, cache_for, score_pairs, verifier_windowing
from citebound.verifiers.fitted import stacked_verdicts


class VerifierLoadError(ValueError):
    """A verifier that cannot be configured or loaded; the message says which and why."""


class PairScorer:
    """``scorer(claims, passages) -> (P(support), verdict)`` under the full-passage protocol.

    A stacked verifier (``kind: fitted``) scores each pair with its base verifiers, then applies
    its fitted model (:meth:`combine`); the pipeline's score jobs call :meth:`combine` on the base
    verifiers' cached score tables, so the two cannot drift. Base verifiers load on first use.
    """

    def __init__(self, cfg: Mapping[str, Any], verifiers: Mapping[str, Mapping[str, Any]],
                 windowing: Mapping[str, int], cache_dir: str | Path | None = None,
                 model_path: str | Path | None = None, progress: bool = False):
        if cfg.get("kind") == "trained" and model_path:  # --model DIR: the trained head to score with
            cfg = {**cfg, "model": str(model_path)}
        self.cfg = dict(cfg)
        self.name = str(cfg["name"])
        self.hash = verifier_hash(cfg)
        self.windowing = verifier_windowing(cfg, windowing)
        self.cache_dir = cache_dir
        self.progress = progress
        self.cache = None
        self._bases: list[PairScorer] | None = None
        self._verifiers = verifiers
        self._base_windowing = windowing
        if cfg.get("kind") == "fitted":
            if not model_path or not Path(model_path).is_file():
                raise FileNotFoundError(f"verifier {self.name} needs its fitted model JSON "
                                        f"(run the pipeline to make results/models/{self.name}.json); got {model_path}")
            self.model = json.loads(Path(model_path).read_text())
            self.hash = verifier_hash({**cfg, "model": self.model})
        else:
            self.model = None
            self.verifier = build_verifier(cfg, cache_dir or "results/cache")
            served = getattr(self.verifier, "identity", None)  # a served model: who serves it is part of the hash
            hashed = cfg if served is None else {**cfg, "served": served}
            self.hash = verifier_hash(hashed)
            self.cache = cache_for(hashed, cache_dir) if cache_dir else None

    @property
    def bases(self) -> list[PairScorer]:
        """A stacked verifier's feature verifiers, in the fitted model's order (loaded on first use)."""
        if self._bases is None:
            self._bases = [PairScorer(self._verifiers[f], self._verifiers, self._base_windowing, self.cache_dir)
                           for f in self.model["features"]]
        return self._bases

    def __call__(self, claims: Sequence[str], passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        ps = self.score(claims, passages)
        return ps.score, ps.verdict

    def score(self, claims: Sequence[str], passages: Sequence[str]) -> PairScores:
        """Scores, verdicts and each pair's best window (for a stacked verifier: its first base's)."""
        if self.model is not None:
            return self.combine([b.score(claims, passages) for b in self.bases])
        return score_pairs(self.verifier, claims, passages, window_chars=self.windowing["window_chars"],
                           stride=self.windowing["stride"], claim_cap=self.windowing["claim_cap"],
                           max_windows=self.windowing.get("max_windows"),
                           cache=self.cache, progress=self.progress)

    def combine(self, base: Sequence[PairScores]) -> PairScores:
        """A stacked verifier's outcome from its base verifiers' outcomes (one per feature, in order).

        The best window, window count and reason are the first base's; a pair with a missing
        feature score has no score (NaN) and the reason ``missing_feature`` where the base gave none.
        """
        if self.model is None:
            raise ValueError(f"verifier {self.name!r} is not stacked: nothing to combine")
        if len(base) != len(self.model["features"]):
            raise ValueError(f"verifier {self.name!r} needs {len(self.model['features'])} base outcomes "
                             f"({self.model['features']}), got {len(base)}")
        n = len(base[0].score)
        feats = np.column_stack([np.asarray(p.score, float) for p in base]) if n else np.zeros((0, len(base)))
        s, verdict = stacked_verdicts(self.model, feats, self.cfg)
        first = base[0]
        reason = [r or ("" if np.isfinite(x) else "missing_feature") for r, x in zip(first.reason, s)]
        return PairScores(s, verdict, np.asarray(first.best_window), np.asarray(first.n_windows), reason,
                          sum(p.n_units for p in base), sum(p.n_cached for p in base))

    def close(self) -> None:
        """Close the on-disk score caches."""
        if self.cache is not None:
            self.cache.close()
            self.cache = None
        for b in self._bases or []:
            b.close()


def configured_hash(cfg: Mapping[str, Any], model_path: str | Path | None = None) -> str:
    """The hash a :class:`PairScorer` of this config (and model file or folder) stamps, without loading
    it: a stacked verifier's covers its fitted model, a trained one's its head's bytes."""
    if cfg.get("kind") == "fitted" and model_path and Path(model_path).is_file():
        return verifier_hash({**cfg, "model": json.loads(Path(model_path).read_text())})
    if cfg.get("kind") == "trained" and model_path:
        return verifier_hash({**cfg, "model": str(model_path)})
    if cfg.get("kind") == "remote":  # the served model's identity, asked of its server
        from citebound.verifiers.remote import identity_of

        return verifier_hash({**cfg, "served": identity_of(cfg)})
    return verifier_hash(cfg)


def apply_runtime(cfg: dict[str, Any], runtime: Mapping[str, Any] | None) -> dict[str, Any]:
    """``runtime``/``quantize``/``threads`` set on an in-process model verifier (None keeps the definition's)."""
    if cfg.get("kind") in MODEL_KINDS:
        cfg.update({k: v for k, v in (runtime or {}).items() if v is not None})
    return cfg


def verifier_definitions(name: str, overrides: Mapping[str, Any] | None = None,
                         runtime: Mapping[str, Any] | None = None
                         ) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, int]]:
    """(the verifier's definition with ``overrides`` applied, the definitions it needs by name, windowing).

    Only ``name``'s file is read (and a stacked verifier's feature verifiers'). ``runtime``
    (``runtime``, ``quantize``, ``threads``) goes to every in-process model verifier among them.
    """
    try:
        cfg = definitions.load("verifier", name)
        needed = {name: cfg}
        for feat in cfg.get("features", []) or []:
            needed[feat] = definitions.load("verifier", feat)
    except definitions.DefinitionError as e:
        raise VerifierLoadError(str(e)) from None
    for v in needed.values():
        apply_runtime(v, runtime)
    check_override_keys(name, overrides)
    cfg.update(overrides or {})
    return cfg, needed, definitions.windowing()


# keys a verifier config may carry: those of the shipped definitions plus those the verifiers read with
# a default (tests/guard/test_cli.py checks this list against the code); an override outside it is a typo
CODE_KEYS = frozenset({
    "api", "api_key_env", "api_key_file",
    "backend", "backoff_seconds", "base_url", "batch_size", "chat_template_kwargs", "device", "dtype",
    "entailment_label", "features", "gguf_file", "k1", "b", "kind", "label_token_ids", "labels", "max_concurrency",
    "max_input_tokens", "max_length", "max_model_len", "max_new_tokens", "max_retries", "max_tokens", "memo_texts",
    "model", "name", "negative", "positive", "positive_label", "prefix", "prompt", "prompt_source", "prompts", "quantize",
    "revision", "runtime", "support_above", "temperature", "tensor_parallel_size", "threads", "threshold",
    "timeout_seconds", "variant", "verdict_mode", "verdict_prefix", "windowing", "binary", "resources",
    "url", "input_template", "pair_order", "positive_class", "num_classes", "max_response_bytes",
    "identity_check_seconds", "truncate_prompt_tokens"})


def known_keys() -> set[str]:
    keys = set(CODE_KEYS)
    for n in definitions.available("verifier"):
        keys |= set(definitions.load("verifier", n))
    return keys


def check_override_keys(name: str, overrides: Mapping[str, Any] | None) -> None:
    """An ``--override`` key no verifier reads is refused, naming the nearest valid key."""
    import difflib

    if not overrides:
        return
    keys = known_keys()
    for key in overrides:
        if key not in keys:
            near = difflib.get_close_matches(key, sorted(keys), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise VerifierLoadError(f"verifier {name!r}: unknown config key {key!r} in --override{hint} "
                                    f"(keys: {', '.join(sorted(keys))})")


def load_scorer(name: str, overrides: Mapping[str, Any] | None = None, *, model_path: str | Path | None = None,
                cache_dir: str | Path | None = None, progress: bool = False,
                runtime: Mapping[str, Any] | None = None) -> PairScorer:
    """A :class:`PairScorer` for the verifier definition ``name`` (keys replaced by ``overrides``; the
    in-process models' ``runtime``/``quantize``/``threads`` set by ``runtime``, else the definition's:
    the exact float32 PyTorch path unless the definition says otherwise: embedding and trained run the
    graph inside the wheel). A verifier that needs torch without the [torch] extra is refused, naming it."""
    vcfg, allv, windowing = verifier_definitions(name, overrides, runtime)
    check_extras(name, allv)
    check_hub(name, allv)
    try:
        return PairScorer(vcfg, allv, windowing, cache_dir=cache_dir, model_path=model_path, progress=progress)
    except (OSError, ValueError, RuntimeError) as e:  # RuntimeError: a served model that cannot be reached
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise VerifierLoadError(f"cannot load verifier {name!r}: {first.removeprefix(f'verifier {name!r}: ')}") from None


HUB_PROBE_S = 3.0


def hub_ids(configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The hub model ids the configs name (not a package's weights, not a local folder)."""
    from citebound.verifiers import MODEL_KINDS

    out = []
    for c in configs.values():
        m = c.get("model")
        if (c.get("kind") in MODEL_KINDS or c.get("kind") == "llm" and c.get("backend") in ("transformers", "vllm")) \
                and isinstance(m, str) and m.count("/") == 1 and not m.startswith(("package:", "/", ".", "~")) \
                and not Path(m).exists():
            out.append(m)
    return out


def hub_reachable(seconds: float = HUB_PROBE_S) -> bool:
    """Whether the hub's host (HF_ENDPOINT's, at its port, else huggingface.co) accepts a TCP connection
    within ``seconds``, name lookup included (a thread: getaddrinfo takes no timeout)."""
    import os
    import threading
    from urllib.parse import urlparse

    from citebound.scoring.bounded_http import url_port

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = url.hostname or "huggingface.co"
    try:
        port = url_port(url)
    except ValueError:  # HF_ENDPOINT names a port that is not a number: the default port is probed
        port = 443
    ok: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=seconds).close()
            ok.append(True)
        except OSError:
            pass

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(seconds)
    return bool(ok)


def check_hub(name: str, configs: Mapping[str, Mapping[str, Any]]) -> None:
    """A hub model that is not in the local cache, offline: refused in seconds (not after a minute of
    retries), naming HF_HUB_OFFLINE and --override model=PATH."""
    import os

    missing = []
    for repo in hub_ids(configs):
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = isinstance(try_to_load_from_cache(repo, "config.json"), str)
        except Exception:  # noqa: BLE001 - no huggingface_hub, or an id it refuses: let the loader say
            cached = True
        if not cached:
            missing.append(repo)
    if not missing:
        return
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    if offline or not hub_reachable():
        why = "HF_HUB_OFFLINE is set" if offline else f"the hub cannot be reached (no connection in {HUB_PROBE_S:g} s)"
        raise VerifierLoadError(
            f"verifier {name!r} needs {', '.join(missing)} from the Hugging Face hub, which is not in the local cache "
            f"and {why}: download it where the hub is reachable (it is then cached; set HF_HUB_OFFLINE=1 to use the "
            "cache without asking the hub), or point at a local copy with --override model=PATH")


def check_extras(name: str, configs: Mapping[str, Mapping[str, Any]]) -> None:
    """A verifier (or a stacked verifier's base) that runs a model through torch, on an install without
    the ``[torch]`` extra: refused before anything loads, with the install command."""
    import importlib.util

    from citebound.models import uses_shipped_graph
    from citebound.verifiers import MODEL_KINDS

    def network(c: Mapping[str, Any]) -> bool:  # a fine-tuned network (citebound.json) runs its own weights
        from citebound.verifiers.trained import network_design

        return c.get("kind") == "trained" and bool(c.get("model")) and network_design(c["model"]) is not None

    need = [n for n, c in configs.items() if (c.get("kind") in MODEL_KINDS and (not uses_shipped_graph(c) or network(c)))
            or c.get("kind") == "llm" and c.get("backend") in ("transformers", "vllm")]
    if need and importlib.util.find_spec("torch") is None:
        raise VerifierLoadError(f"verifier {name!r} runs {', '.join(need)} on torch, which this install lacks: "
                                "pip install 'citebound[torch]' (the embedding, trained and lexical verifiers need "
                                "no torch)")
