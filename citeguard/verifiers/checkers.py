"""The small grounding checkers practitioners pick: MiniCheck and Vectara's HHEM-2.1-open.

Each follows its authors' input format and decision rule (the configs in ``config/verifier/`` say
where each detail comes from); the passage window plays the role of their document/premise and the
claim their claim/hypothesis. Windowing (600 characters at stride 300, max over windows) is
citeguard's protocol, where the authors chunk documents their own way.

* :class:`MiniCheckVerifier` (Tang, Laban & Durrett, 2024), ``variant``:

  - ``encoder`` (MiniCheck-RoBERTa-Large, MiniCheck-DeBERTa-v3-Large): one sequence, document and
    claim joined by the tokenizer's EOS token; P(support) = softmax(logits)[1];
  - ``seq2seq`` (MiniCheck-Flan-T5-Large): ``prefix`` + document + EOS + claim; one decoder step
    from the start token; P(support) = softmax over the logits of two label token ids, [1];
  - ``llm`` (Bespoke-MiniCheck-7B): a chat prompt (system + user with the document and claim),
    P(support) = P("Yes") of the first answer token, through a generation backend (vLLM).

  Verdict: P(support) > ``support_above`` (0.5), strictly, as the authors' ``score`` does.
* :class:`HHEMVerifier`: a T5 encoder with a token-classification head (the checkpoint's weights sit
  under ``t5.``); the prompt fills the premise and the hypothesis; P(consistent) = softmax of the
  first position's logits, [1]. Its prompt and foundation model are read from the checkpoint's own
  ``config.json`` or, where that lacks them, from its ``configuration_hhem_v2.py`` (parsed, not run:
  no remote code executes).
"""
from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

from .encoders import encode_sorted, quantize_model, runtime_of, set_threads
from .models import classify, encoder_forward, load_pretrained

VARIANTS = ("encoder", "seq2seq", "llm")


def string_constants(source: str, scope: str | None = None) -> dict[str, str]:
    """Module-level (or class ``scope``) string assignments of a Python file, read with ``ast``.

    >>> string_constants('A = "x"\\nclass C:\\n    B = "y"\\n', "C")
    {'B': 'y'}
    """
    tree = ast.parse(source)
    body = tree.body
    if scope is not None:
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == scope), [])
    out = {}
    for node in body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value.value
    return out


def prompt_constants(spec: Mapping[str, Any], cache_dir: str | Path | None) -> dict[str, str]:
    """The authors' prompt strings, fetched as data (pinned URL, sha256-checked, mirror-aware) and read with ast."""
    import os

    from ..io import MIRROR_ENV, FileSpec, fetch_file

    dest = Path(cache_dir or "results/cache") / "prompts" / spec["path"]
    if not dest.is_file():
        fetch_file(FileSpec.from_dict(dict(spec)), dest, os.environ.get(MIRROR_ENV) or None)
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
            from ..generation import build_backend

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
            for idx, enc in encode_sorted(self.tokenizer, self._texts(claims, windows), None,
                                          max_length=self.max_length, batch_size=self.batch_size):
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
        for i in range(0, len(msgs), self.batch_size):
            p += self.backend.yes_probability(msgs[i:i + self.batch_size])
        return np.asarray(p, float)

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        p = self.support(claims, windows) if len(claims) else np.zeros(0)
        return p, p > self.support_above


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
