"""Model-based verifiers loaded through ``transformers``: AttrScore (seq2seq) and NLI."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

from .encoders import Forward, encode_sorted, quantize_model, runtime_of, set_threads, weights_key

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def pick_device(requested: str) -> torch.device:
    """The configured device, falling back to CPU (with float32) when CUDA is absent."""
    if requested.startswith("cuda") and not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device(requested)


def pick_dtype(name: str | None, device: torch.device) -> torch.dtype:
    if device.type == "cpu":
        return torch.float32
    return _DTYPES[name or "float32"]


def load_pretrained(auto_cls: Any, cfg: Mapping[str, Any], model_path: str | None = None):
    """(tokenizer, eval-mode model, device) for a config's model id/dir, revision, device and dtype."""
    device = pick_device(str(cfg.get("device", "cpu")))
    path, rev = model_path or cfg["model"], cfg.get("revision") or None
    tokenizer = AutoTokenizer.from_pretrained(path, revision=rev)
    model = auto_cls.from_pretrained(path, revision=rev, dtype=pick_dtype(cfg.get("dtype"), device))
    return tokenizer, model.to(device).eval(), device


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


def encoder_forward(model: torch.nn.Module, cfg: Mapping[str, Any], cache_dir: str | Path | None,
                    pick: Any, output: str) -> Forward:
    """The configured runtime (``runtime``, ``quantize``, ``threads``) around one encoder model."""
    runtime, quantize = runtime_of(cfg)
    set_threads(cfg.get("threads"))
    return Forward(model, pick, runtime, quantize, threads=cfg.get("threads"),
                   onnx_dir=Path(cache_dir) / "onnx" if cache_dir else None,
                   key=f"{cfg.get('name', 'model')}-{weights_key(model, output)}")


def classify(forward: Forward, tokenizer: Any, first: Sequence[str], second: Sequence[str] | None, *,
             max_length: int, batch_size: int, device: torch.device, truncation: str | bool = True) -> np.ndarray:
    """(n, n_classes) softmax probabilities, from length-sorted batches, in input order."""
    out: np.ndarray | None = None
    for idx, enc in encode_sorted(tokenizer, first, second, max_length=max_length, batch_size=batch_size,
                                  truncation=truncation):
        p = torch.softmax(forward(enc.to(device)).float(), dim=-1).cpu().numpy()
        if out is None:
            out = np.zeros((len(first), p.shape[1]))
        out[idx] = p
    return out if out is not None else np.zeros((0, 2))
