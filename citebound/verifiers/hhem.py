"""Vectara's HHEM-2.1-open

* :class:`HHEMVerifier`: a T5 encoder with a token-classification head (the checkpoint's weights sit
  under ``t5.``); the prompt fills the premise and the hypothesis; P(consistent) = softmax of the
  first position's logits, [1]. Its prompt and foundation model are read from the checkpoint's own
  ``config.json`` or, where that lacks them, from its ``configuration_hhem_v2.py`` (parsed, not run:
  no remote code executes).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoTokenizer

from citebound.verifiers.hf import classify, encoder_forward, string_constants


def hhem_settings(model_dir: Path) -> dict[str, str]:
    """``foundation`` and ``prompt`` of an HHEM checkpoint: config.json first, else the class
    attributes of ``HHEMv2Config`` in its configuration file (read with ast, never imported)."""
    conf = json.loads((model_dir / "config.json").read_text())
    out = {k: conf[k] for k in ("foundation", "prompt") if isinstance(conf.get(k), str)}
    src = model_dir / "configuration_hhem_v2.py"
    if len(out) < 2 and src.is_file():
        consts = string_constants(src.read_text(encoding="utf-8"), "HHEMv2Config")
        out = {**{k: consts[k] for k in ("foundation", "prompt") if k in consts}, **out}
    if len(out) < 2:
        raise ValueError(f"{model_dir}: no foundation/prompt in config.json or configuration_hhem_v2.py")
    return out


def resolve_local(model: str, revision: str | None) -> Path:
    """A local checkpoint directory: the path itself, or the hub snapshot (downloaded when online)."""
    if Path(model).is_dir():
        return Path(model)
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(model, revision=revision))


class HHEMVerifier:
    binary = False

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        from safetensors.torch import load_file
        from transformers import T5ForTokenClassification

        self.name = cfg.get("name", "hhem")
        self.threshold = float(cfg.get("threshold", 0.5))
        self.batch_size = int(cfg.get("batch_size", 16))
        self.max_length = int(cfg.get("max_length", 512))
        path = resolve_local(str(cfg["model"]), cfg.get("revision") or None)
        hs = hhem_settings(path)
        self.prompt = hs["prompt"]
        foundation = str(resolve_local(hs["foundation"], None)) if not Path(hs["foundation"]).is_absolute() else hs["foundation"]
        self.tokenizer = AutoTokenizer.from_pretrained(foundation)
        t5cfg = AutoConfig.from_pretrained(foundation, num_labels=2)
        model = T5ForTokenClassification(t5cfg)
        state = load_file(str(path / "model.safetensors"))
        res = model.load_state_dict({k.removeprefix("t5."): v for k, v in state.items()}, strict=False)
        tied = {"transformer.encoder.embed_tokens.weight"}  # the same tensor as transformer.shared
        if res.unexpected_keys or set(res.missing_keys) - tied:
            raise ValueError(f"{path}: not an HHEM checkpoint (missing {sorted(set(res.missing_keys) - tied)[:5]}, "
                             f"unexpected {sorted(res.unexpected_keys)[:5]})")
        self.model, self.device = model.eval(), torch.device("cpu")
        self.forward = encoder_forward(self.model, cfg, cache_dir, lambda o: o.logits[:, 0, :], "hhem-first-token")

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        texts = [self.prompt.format(text1=w, text2=c) for c, w in zip(claims, windows)]
        p = classify(self.forward, self.tokenizer, texts, None, max_length=self.max_length,
                     batch_size=self.batch_size, device=self.device)[:, 1] if texts else np.zeros(0)
        return p, p >= self.threshold
