"""AttrScore (Yue et al., 2023): a seq2seq attribution validator loaded through ``transformers``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM

from citebound.verifiers.hf import load_pretrained
from citebound.verifiers.runtimes import encode_sorted, quantize_model, runtime_of, set_threads


class AttrScoreVerifier:
    """AttrScore validator; P(support) = softmax over label log-likelihoods.

    For each input the encoder runs once; the decoder is teacher-forced on each
    label string (its tokens plus EOS) reusing the encoder states, and the
    total log-likelihoods of the labels are soft-maxed.
    """

    binary = False

    def __init__(self, cfg: Mapping[str, Any]):
        self.name = cfg.get("name", "attrscore")
        self.batch_size = int(cfg.get("batch_size", 16))
        self.max_input_tokens = int(cfg.get("max_input_tokens", 1024))
        prompts = cfg["prompts"]
        if cfg["prompt"] not in prompts:
            raise ValueError(f"attrscore prompt {cfg['prompt']!r} not in {sorted(prompts)}")
        self.template = prompts[cfg["prompt"]]
        self.labels = list(cfg["labels"])
        self.pos = self.labels.index(cfg.get("positive_label", self.labels[0]))
        self.verdict_mode = str(cfg.get("verdict_mode", "likelihood"))
        if self.verdict_mode not in ("likelihood", "generate"):
            raise ValueError(f"verifier {self.name!r}: verdict_mode {self.verdict_mode!r} is not likelihood or generate")
        self.max_new_tokens = int(cfg.get("max_new_tokens", 8))
        self.verdict_prefix = str(cfg.get("verdict_prefix", self.labels[self.pos][:8])).lower()
        runtime, quantize = runtime_of(cfg)
        if runtime != "torch":
            raise ValueError(f"verifier {self.name!r}: runtime {runtime!r} is for encoder models; AttrScore (seq2seq) "
                             "runs on torch (quantize: int8 is available)")
        set_threads(cfg.get("threads"))
        self.tokenizer, self.model, self.device = load_pretrained(AutoModelForSeq2SeqLM, cfg)
        self.model = quantize_model(self.model, quantize)
        self.label_ids = [torch.tensor(self.tokenizer(lab).input_ids, device=self.device) for lab in self.labels]

    def prompt(self, claim: str, window: str) -> str:
        return self.template.format(claim=claim, reference=window)

    @torch.inference_mode()
    def label_loglik(self, claims: Sequence[str], windows: Sequence[str]) -> np.ndarray:
        """(n, n_labels) total teacher-forced log-likelihood of each label string (length-sorted batches)."""
        out = np.zeros((len(claims), len(self.labels)))
        texts = [self.prompt(c, w) for c, w in zip(claims, windows)]
        for idx, enc in encode_sorted(self.tokenizer, texts, None, max_length=self.max_input_tokens,
                                      batch_size=self.batch_size):
            enc = enc.to(self.device)
            enc_out = self.model.get_encoder()(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            b = enc["input_ids"].shape[0]
            for j, ids in enumerate(self.label_ids):
                labels = ids.unsqueeze(0).expand(b, -1).contiguous()
                dec_in = self.model.prepare_decoder_input_ids_from_labels(labels=labels)
                logits = self.model(encoder_outputs=enc_out, attention_mask=enc["attention_mask"],
                                    decoder_input_ids=dec_in).logits.float()
                logp = torch.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
                out[idx, j] = logp.sum(-1).cpu().numpy()
        return out

    @torch.inference_mode()
    def generated_verdicts(self, claims: Sequence[str], windows: Sequence[str]) -> np.ndarray:
        """Greedy-decode a short answer per unit; supported iff it starts with ``verdict_prefix``
        (case-insensitive): the generate-and-parse reading of AttrScore."""
        out = np.zeros(len(claims), dtype=bool)
        texts = [self.prompt(c, w) for c, w in zip(claims, windows)]
        for idx, enc in encode_sorted(self.tokenizer, texts, None, max_length=self.max_input_tokens,
                                      batch_size=self.batch_size):
            gen = self.model.generate(**enc.to(self.device), max_new_tokens=self.max_new_tokens, do_sample=False)
            words = self.tokenizer.batch_decode(gen, skip_special_tokens=True)
            out[idx] = [w.strip().lower().startswith(self.verdict_prefix) for w in words]
        return out

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.verdict_mode == "generate":
            v = self.generated_verdicts(claims, windows) if len(claims) else np.zeros(0, dtype=bool)
            return v.astype(float), v
        ll = self.label_loglik(claims, windows)
        p = np.exp(ll - ll.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        return p[:, self.pos], p.argmax(axis=1) == self.pos
