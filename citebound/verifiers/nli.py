"""A sequence-pair NLI classifier (e.g. DeBERTa-v3 MNLI); P(support) = P(entailment | window, claim).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification

from citebound.verifiers.hf import classify, encoder_forward, load_pretrained


class NLIVerifier:
    """Sequence-pair NLI classifier; P(support) = P(entailment | window, claim)."""

    binary = False

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        self.name = cfg.get("name", "deberta_nli")
        self.batch_size = int(cfg.get("batch_size", 32))
        self.max_length = int(cfg.get("max_length", 512))
        self.tokenizer, self.model, self.device = load_pretrained(AutoModelForSequenceClassification, cfg)
        want = str(cfg.get("entailment_label", "entailment")).lower()
        labels = {str(v).lower(): int(k) for k, v in self.model.config.id2label.items()}
        if want not in labels:
            raise ValueError(f"{cfg['model']}: no label {want!r} in id2label {self.model.config.id2label}")
        self.entail = labels[want]
        self.forward = encoder_forward(self.model, cfg, cache_dir, lambda o: o.logits, "logits")

    @torch.inference_mode()
    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        probs = classify(self.forward, self.tokenizer, windows, claims, max_length=self.max_length,
                         batch_size=self.batch_size, device=self.device, truncation="only_first")
        return probs[:, self.entail], probs.argmax(-1) == self.entail
