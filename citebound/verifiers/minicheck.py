"""MiniCheck (Tang, Laban & Durrett, 2024), the grounding checker practitioners pick most.

Each follows its authors' input format and decision rule (the definitions in ``citebound/definitions/verifier/`` say
where each detail comes from); the passage window plays the role of their document/premise and the
claim their claim/hypothesis. Windowing (600 characters at stride 300, max over windows) is
citebound's protocol, where the authors chunk documents their own way.

* :class:`MiniCheckVerifier` (Tang, Laban & Durrett, 2024), ``variant``:

  - ``encoder`` (MiniCheck-RoBERTa-Large, MiniCheck-DeBERTa-v3-Large): one sequence, document and
    claim joined by the tokenizer's EOS token; P(support) = softmax(logits)[1];
  - ``seq2seq`` (MiniCheck-Flan-T5-Large): ``prefix`` + document + EOS + claim; one decoder step
    from the start token; P(support) = softmax over the logits of two label token ids, [1];
  - ``llm`` (Bespoke-MiniCheck-7B): a chat prompt (system + user with the document and claim),
    P(support) = P("Yes") of the first answer token, through a generation backend (vLLM).

  Verdict: P(support) > ``support_above`` (0.5), strictly, as the authors' ``score`` does.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification

from citebound.scoring import deadline
from citebound.scoring.llm_backends import build_backend
from citebound.verifiers.hf import classify, encoder_forward, load_pretrained, string_constants
from citebound.verifiers.runtimes import encode_sorted, quantize_model, runtime_of, set_threads

VARIANTS = ("encoder", "seq2seq", "llm")


def prompt_constants(spec: Mapping[str, Any], cache_dir: str | Path | None) -> dict[str, str]:
    """The authors' prompt strings, fetched as data (pinned URL, sha256-checked, mirror-aware) and read with ast."""

    from citebound.scoring.io import FileSpec, data_mirror, fetch_file

    dest = Path(cache_dir or "results/cache") / "prompts" / spec["path"]
    if not dest.is_file():
        fetch_file(FileSpec.from_dict(dict(spec)), dest, data_mirror())
    consts = string_constants(dest.read_text(encoding="utf-8"))
    missing = [k for k in spec.get("constants", []) if k not in consts]
    if missing:
        raise ValueError(f"{dest}: no string constants {missing} (found {sorted(consts)})")
    return consts


class MiniCheckVerifier:
    binary = False

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        self.name = cfg.get("name", "minicheck")
        self.variant = str(cfg.get("variant"))
        if self.variant not in VARIANTS:
            raise ValueError(f"verifier {self.name!r}: variant {self.variant!r} is not one of {list(VARIANTS)}")
        self.batch_size = int(cfg.get("batch_size", 16))
        self.max_length = int(cfg.get("max_length", 512))
        self.support_above = float(cfg.get("support_above", 0.5))
        runtime, quantize = runtime_of(cfg)
        if self.variant == "encoder":
            self.tokenizer, self.model, self.device = load_pretrained(AutoModelForSequenceClassification, cfg)
            self.forward = encoder_forward(self.model, cfg, cache_dir, lambda o: o.logits, "logits")
        elif self.variant == "seq2seq":
            if runtime != "torch":
                raise ValueError(f"verifier {self.name!r}: runtime {runtime!r} is for encoder models; a seq2seq "
                                 "checker runs on torch (quantize: int8 is available)")
            set_threads(cfg.get("threads"))
            self.tokenizer, self.model, self.device = load_pretrained(AutoModelForSeq2SeqLM, cfg)
            self.model = quantize_model(self.model, quantize)
            self.prefix = str(cfg.get("prefix", ""))
            self.label_ids = [int(i) for i in cfg["label_token_ids"]]
        else:
            consts = prompt_constants(cfg["prompt_source"], cache_dir)
            self.system = consts[cfg["prompt_source"]["constants"][0]]
            self.user = consts[cfg["prompt_source"]["constants"][1]]
            self.backend = build_backend({**cfg, "max_new_tokens": 1})

    def _texts(self, claims: Sequence[str], windows: Sequence[str]) -> list[str]:
        eos = self.tokenizer.eos_token or ""
        return [f"{getattr(self, 'prefix', '')}{w}{eos}{c}" for c, w in zip(claims, windows)]

    @torch.inference_mode()
    def support(self, claims: Sequence[str], windows: Sequence[str]) -> np.ndarray:
        """P(support) per (claim, window) unit."""
        if self.variant == "encoder":
            return classify(self.forward, self.tokenizer, self._texts(claims, windows), None,
                            max_length=self.max_length, batch_size=self.batch_size, device=self.device)[:, 1]
        if self.variant == "seq2seq":
            out = np.zeros(len(claims))
            for idx, enc in deadline.checked(encode_sorted(self.tokenizer, self._texts(claims, windows), None,
                                                           max_length=self.max_length, batch_size=self.batch_size)):
                enc = enc.to(self.device)
                start = torch.full((len(idx), 1), int(self.model.config.decoder_start_token_id or 0),
                                   dtype=torch.long, device=self.device)
                logits = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                                    decoder_input_ids=start).logits[:, 0, :].float()
                out[idx] = torch.softmax(logits[:, self.label_ids], dim=-1)[:, 1].cpu().numpy()
            return out
        msgs = [[{"role": "system", "content": self.system},
                 {"role": "user", "content": self.user.replace("[DOCUMENT]", w).replace("[CLAIM]", c)}]
                for c, w in zip(claims, windows)]
        p: list[float] = []
        for i in deadline.checked(range(0, len(msgs), self.batch_size)):
            p += self.backend.yes_probability(msgs[i:i + self.batch_size])
        return np.asarray(p, float)

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        p = self.support(claims, windows) if len(claims) else np.zeros(0)
        return p, p > self.support_above
