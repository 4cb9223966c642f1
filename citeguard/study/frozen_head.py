"""A CPU verifier design for #25: a small regularised head on frozen MiniLM features.

Per (claim, window) unit, on the scoring protocol (claims capped at 600 characters, passages in
600-character windows at stride 300):

- ``cos_l2``, ``cos_l4``, ``cos_l6``: cosine of the mean-pooled claim and window at layers 2, 4 and 6
  of the shipped all-MiniLM-L6-v2 (layer 6 is what the embedding verifier scores);
- ``maxsim``: token alignment, the mean over the claim's tokens of the best cosine to a window token
  (last layer);
- ``term_recall``: the lexical verifier's share of claim content terms found in the window;
- ``numbers``: share of the claim's numbers found in the window (1 when it has none);
- ``negation``: 1 when exactly one of claim and window carries a negation cue.

A labelled pair trains the head through its window with the highest ``cos_l6`` (the window the
embedding verifier scores it by); at scoring, as for every verifier, the head scores each window and
the pair takes the maximum. The head is an L2-regularised logistic regression (balanced classes) on
standardised features.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from ..verifiers.base import make_windows
from ..verifiers.lexical import term_recall

FEATURES = ["cos_l2", "cos_l4", "cos_l6", "maxsim", "term_recall", "numbers", "negation"]
LAYERS = (2, 4, 6)
_NUM = re.compile(r"\d+(?:[.,]\d+)?")
_NEG = re.compile(r"\b(?:no|not|never|none|neither|nor|without|cannot|n't|fail(?:s|ed)?|lack(?:s|ed)?)\b", re.I)


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


def negation_mismatch(claim: str, window: str) -> float:
    """1.0 when exactly one of the two texts has a negation cue.

    >>> negation_mismatch("Aspirin does not work.", "Aspirin works.")
    1.0
    >>> negation_mismatch("Aspirin works.", "Aspirin works well.")
    0.0
    """
    return float(bool(_NEG.search(claim)) != bool(_NEG.search(window)))


class FrozenFeatures:
    """Feature extractor over a frozen encoder (``transformers`` AutoModel, CPU)."""

    def __init__(self, model_path: str, batch_size: int = 32, max_length: int = 256, threads: int | None = None):
        from transformers import AutoModel, AutoTokenizer

        if threads:
            torch.set_num_threads(int(threads))
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModel.from_pretrained(model_path).eval()
        self.batch_size, self.max_length = batch_size, max_length

    @torch.inference_mode()
    def _encode(self, texts: Sequence[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per text: mean-pooled, L2-normalised embeddings at LAYERS (3 x d) and its normalised last-layer
        token vectors (tokens x d, special tokens left out)."""
        pooled: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
        tokens: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
        order = np.argsort([len(t) for t in texts], kind="stable")
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            enc = self.tokenizer([texts[k] for k in idx], padding=True, truncation=True, max_length=self.max_length,
                                 return_tensors="pt", return_special_tokens_mask=True)
            special = enc.pop("special_tokens_mask")
            out = self.model(**enc, output_hidden_states=True)
            mask = enc["attention_mask"].unsqueeze(-1).float()
            layers = []
            for layer in LAYERS:
                h = out.hidden_states[layer]
                layers.append(torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1))
            pooled_b = torch.stack(layers, 1).numpy()
            last = torch.nn.functional.normalize(out.hidden_states[-1], dim=-1).numpy()
            keep = ((enc["attention_mask"] == 1) & (special == 0)).numpy()
            for j, k in enumerate(idx):
                pooled[k] = pooled_b[j]
                tokens[k] = last[j][keep[j]]
        return pooled, tokens

    def unit_features(self, claims: Sequence[str], windows: Sequence[str], chunk: int = 256,
                      progress: bool = False) -> np.ndarray:
        """(n_units, len(FEATURES)) for (claim, window) units, texts embedded once per chunk."""
        out = np.zeros((len(claims), len(FEATURES)))
        bar = tqdm(total=len(claims), desc="features", unit="unit", disable=not progress)
        for s in range(0, len(claims), chunk):
            cs, ws = list(claims[s:s + chunk]), list(windows[s:s + chunk])
            texts = list(dict.fromkeys(cs + ws))
            pos = {t: k for k, t in enumerate(texts)}
            pooled, tokens = self._encode(texts)
            for j, (c, w) in enumerate(zip(cs, ws)):
                tc, tw = tokens[pos[c]], tokens[pos[w]]
                maxsim = float((tc @ tw.T).max(1).mean()) if len(tc) and len(tw) else 0.0
                out[s + j] = [*(pooled[pos[w]] * pooled[pos[c]]).sum(-1), maxsim, term_recall(c, w),
                              number_share(c, w), negation_mismatch(c, w)]
            bar.update(len(cs))
        bar.close()
        return out

    def pair_units(self, claims: Sequence[str], passages: Sequence[str], window_chars: int = 600, stride: int = 300,
                   claim_cap: int = 600, progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Every (claim, window) unit of the pairs on the scoring protocol: (unit features, owning pair index)."""
        cs, ws, owner = [], [], []
        for i, (c, p) in enumerate(zip(claims, passages)):
            for w in make_windows(p, window_chars, stride) or [""]:
                cs.append(c[:claim_cap])
                ws.append(w)
                owner.append(i)
        return self.unit_features(cs, ws, progress=progress), np.asarray(owner, int)


def best_window(units: np.ndarray, owner: np.ndarray, n_pairs: int) -> np.ndarray:
    """(n_pairs, len(FEATURES)): each pair's unit with the highest layer-6 cosine (the window the
    embedding verifier scores a pair by; a pair's training instance)."""
    cos = units[:, FEATURES.index("cos_l6")]
    out = np.zeros((n_pairs, units.shape[1]))
    best = np.full(n_pairs, -np.inf)
    for u, (i, c) in enumerate(zip(owner, cos)):
        if c > best[i]:
            best[i], out[i] = c, units[u]
    return out


def pair_scores(model: dict[str, Any], units: np.ndarray, owner: np.ndarray, n_pairs: int) -> np.ndarray:
    """P(support) per pair: the head on every window, max over the pair's windows (the scoring protocol
    every verifier follows)."""
    p = apply_head(model, units)
    out = np.full(n_pairs, -np.inf)
    np.maximum.at(out, owner, p)
    return out


def fit_head(x: np.ndarray, y: np.ndarray, c: float = 1.0) -> dict[str, Any]:
    """Standardise, then an L2 logistic regression with balanced classes; a JSON-serialisable model."""
    from sklearn.linear_model import LogisticRegression

    mu, sd = x.mean(0), x.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    lr = LogisticRegression(C=c, max_iter=2000, class_weight="balanced").fit((x - mu) / sd, y.astype(int))
    return {"features": FEATURES, "mean": mu.tolist(), "scale": sd.tolist(), "coef": lr.coef_[0].tolist(),
            "intercept": float(lr.intercept_[0]), "C": c, "n_train": len(y), "n_train_supported": int(y.sum())}


def apply_head(model: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """P(support) of each row of features."""
    z = ((x - np.asarray(model["mean"])) / np.asarray(model["scale"])) @ np.asarray(model["coef"]) + model["intercept"]
    return 1.0 / (1.0 + np.exp(-z))
