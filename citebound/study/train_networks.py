"""Two network designs for the trained verifier (#25), fine-tuned from the shipped all-MiniLM-L6-v2 on CPU:

- ``cross_encoder``: claim and window read together (BERT sequence-pair classification, two classes,
  class-balanced cross-entropy); a unit's score is P(support);
- ``bi_encoder``: the embedding verifier's own encoder fine-tuned contrastively: each supported claim
  against its window (the positive), one hard negative, and the batch's other windows, InfoNCE at
  temperature ``tau``. The hard negative is the claim's own unsupported evidence where the data has one
  (refuting evidence on the same topic), else the window that BM25 ranks highest for the claim among the
  same source's other evidence. A unit's score is (cos + 1) / 2, as for the embedding verifier.

Training pairs are (claim, window) units: a pair's window with the highest lexical term recall (most
staged evidence is one window). Training is seeded (example order, dropout, the new classifier weights)
and runs on the CPU threads given. Held-out parts are scored through :func:`citebound.verifiers.score_pairs`,
the protocol every verifier is scored with (600-character windows at stride 300, claims capped at 600,
max over windows).
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from citebound.study.train_settings import DESIGNS, design_settings  # noqa: F401 (re-exported)
from citebound.verifiers.base import make_windows, score_pairs
from citebound.verifiers.embedding import mean_pool
from citebound.verifiers.lexical import term_recall


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def best_window_text(claim: str, passage: str, window_chars: int = 600, stride: int = 300) -> str:
    """The passage's window with the highest term recall of the claim (the first on ties).

    >>> best_window_text("aspirin fever", "x " * 75 + "aspirin lowers fever", 100, 50)[-20:]
    'aspirin lowers fever'
    """
    windows = make_windows(passage, window_chars, stride) or [""]
    return max(windows, key=lambda w: (term_recall(claim, w), -windows.index(w)))


def hard_negatives(pairs: pd.DataFrame) -> list[str]:
    """Per supported pair (in order): the claim's own unsupported evidence window if it has one, else the
    window BM25 ranks first for the claim among the same source's other evidence windows (``pairs``:
    ``source``, ``claim``, ``window``, ``label``)."""
    from rank_bm25 import BM25Okapi

    from citebound.verifiers.lexical import content_terms

    def tokenize(text: str) -> list[str]:  # the guard's BM25 re-attributor's terms
        return sorted(content_terms(text))

    out = []
    sup = pairs[pairs["label"] == 1]
    neg_of = pairs[pairs["label"] == 0].groupby("claim")["window"].first().to_dict()
    for source, g in pairs.groupby("source", sort=False):
        docs = list(dict.fromkeys(g["window"]))
        bm = BM25Okapi([tokenize(d) or ["_"] for d in docs]) if len(docs) > 1 else None
        for i in sup.index[sup["source"] == source]:
            claim, own = pairs.at[i, "claim"], pairs.at[i, "window"]
            if claim in neg_of:
                out.append((i, neg_of[claim]))
                continue
            if bm is None:
                out.append((i, ""))
                continue
            scores = bm.get_scores(tokenize(claim))
            order = np.argsort(-scores, kind="stable")
            out.append((i, next((docs[j] for j in order if docs[j] != own), "")))
    pos = {i: k for k, i in enumerate(sup.index)}
    res = [""] * len(sup)
    for i, w in out:
        res[pos[i]] = w
    return res


def _schedule(opt: torch.optim.Optimizer, steps: int, warmup: float = 0.1) -> torch.optim.lr_scheduler.LambdaLR:
    w = max(1, int(steps * warmup))
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / w, max(0.0, (steps - s) / max(1, steps - w))))


class Network:
    """One design's model in training: ``fit`` for a number of examples (calling ``at_checkpoint`` at the
    given example counts), ``judge`` for units, ``save`` as an HF-format folder the ``trained`` verifier reads."""

    def __init__(self, design: str, encoder_path: str, *, max_length: int = 256, lr: float = 3e-5,
                 batch_size: int = 16, tau: float = 0.05, seed: int = 0):
        from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

        if design not in DESIGNS:
            raise ValueError(f"unknown design {design!r}: one of {list(DESIGNS)}")
        seed_everything(seed)
        self.design, self.max_length, self.lr, self.batch_size, self.tau, self.seed = (
            design, max_length, lr, batch_size, tau, seed)
        self.tokenizer = AutoTokenizer.from_pretrained(encoder_path)
        if design == "cross_encoder":
            self.model = AutoModelForSequenceClassification.from_pretrained(encoder_path, num_labels=2)
        else:
            self.model = AutoModel.from_pretrained(encoder_path)
        self.threshold = 0.5 if design == "cross_encoder" else 0.75
        self.curve: list[dict[str, float]] = []

    # ---------------------------------------------------------------- training
    def _pool(self, texts: Sequence[str]) -> torch.Tensor:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        return mean_pool(self.model(**enc).last_hidden_state, enc["attention_mask"])

    def _loss(self, batch: pd.DataFrame, class_weight: torch.Tensor | None) -> torch.Tensor:
        if self.design == "cross_encoder":
            enc = self.tokenizer(batch["claim"].tolist(), batch["window"].tolist(), padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt")
            logits = self.model(**enc).logits
            return torch.nn.functional.cross_entropy(logits, torch.tensor(batch["label"].to_numpy(int), dtype=torch.long),
                                                     weight=class_weight)
        c = self._pool(batch["claim"].tolist())
        cands = batch["window"].tolist() + [w for w in batch["hard"].tolist() if w]
        w = self._pool(cands)
        logits = c @ w.T / self.tau
        return torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))

    def fit(self, train: pd.DataFrame, n_examples: int, checkpoints: Sequence[int] = (),
            at_checkpoint: Callable[[int], None] | None = None, progress: bool = False) -> None:
        """Train on ``n_examples`` examples drawn (seeded, without replacement while they last) from ``train``
        (``claim``, ``window``, ``label``; the bi-encoder also ``hard``, and uses supported rows only)."""
        from tqdm.auto import tqdm

        rows = train if self.design == "cross_encoder" else train[train["label"] == 1]
        rows = rows.reset_index(drop=True)
        if not len(rows):
            raise ValueError(f"{self.design}: no training examples")
        rng = np.random.default_rng(self.seed)
        order = np.concatenate([rng.permutation(len(rows)) for _ in range(math.ceil(n_examples / len(rows)))])[:n_examples]
        steps = math.ceil(n_examples / self.batch_size)
        weight = None
        if self.design == "cross_encoder":
            counts = np.bincount(rows["label"].to_numpy(int), minlength=2).astype(float)
            weight = torch.tensor(counts.sum() / (2 * np.maximum(counts, 1)), dtype=torch.float32)
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=0.01)
        sched = _schedule(opt, steps)
        marks = sorted({int(c) for c in checkpoints if 0 < c <= n_examples})
        seen = 0
        bar = tqdm(total=n_examples, desc=f"train[{self.design}]", unit="ex", disable=not progress)
        for s in range(steps):
            self.model.train()
            idx = order[s * self.batch_size:(s + 1) * self.batch_size]
            loss = self._loss(rows.iloc[idx], weight)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            opt.step()
            sched.step()
            before, seen = seen, seen + len(idx)
            self.curve.append({"examples": seen, "loss": float(loss.detach())})
            bar.update(len(idx))
            for m in marks:
                if before < m <= seen and at_checkpoint is not None:
                    self.model.eval()
                    at_checkpoint(m)
        bar.close()
        self.model.eval()

    # ---------------------------------------------------------------- scoring
    @torch.inference_mode()
    def judge(self, claims: Sequence[str], windows: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        self.model.eval()
        out = np.zeros(len(claims))
        order = np.argsort([len(c) + len(w) for c, w in zip(claims, windows)], kind="stable")
        for i in range(0, len(order), 64):
            idx = order[i:i + 64]
            cs, ws = [claims[k] for k in idx], [windows[k] for k in idx]
            if self.design == "cross_encoder":
                enc = self.tokenizer(cs, ws, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
                out[idx] = torch.softmax(self.model(**enc).logits.float(), -1)[:, 1].numpy()
            else:
                out[idx] = np.clip(((self._pool(cs) * self._pool(ws)).sum(-1).numpy() + 1) / 2, 0, 1)
        return out, out >= self.threshold

    name = "trained"
    binary = False
    chunk_units = 4096

    def pair_scores(self, claims: Sequence[str], passages: Sequence[str], windowing: Mapping[str, int]) -> np.ndarray:
        """Max over windows, through the scoring protocol every verifier follows."""
        return score_pairs(self, list(claims), list(passages), window_chars=windowing["window_chars"],
                           stride=windowing["stride"], claim_cap=windowing["claim_cap"], progress=False).score

    def save(self, out: str | Path, meta: Mapping[str, Any]) -> None:
        """HF-format folder (weights, config, tokenizer) plus ``citebound.json`` (design, threshold, meta)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(out)
        self.tokenizer.save_pretrained(out)
        (out / "citebound.json").write_text(json.dumps({"design": self.design, "threshold": self.threshold,
                                                        "max_length": self.max_length, **meta}, indent=1) + "\n")


def youden_threshold(y: np.ndarray, s: np.ndarray) -> float:
    """The score cut (flag below it) maximising sensitivity + specificity - 1.

    >>> youden_threshold(np.array([0, 1, 0, 1]), np.array([0.1, 0.4, 0.5, 0.8]))
    0.4
    >>> youden_threshold(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.35, 0.8]))
    0.35
    """
    y, s = np.asarray(y, int), np.asarray(s, float)
    best, cut = -2.0, float(np.median(s))
    for t in np.unique(s):
        j = np.mean(s[y == 1] >= t) + np.mean(s[y == 0] < t) - 1
        if j > best + 1e-12:
            best, cut = j, float(t)
    return cut


def training_units(pairs: pd.DataFrame, windowing: Mapping[str, int]) -> pd.DataFrame:
    """The pool as (claim, window) units: claims capped, each pair's best window by term recall, and for
    supported pairs a hard negative (``hard``)."""
    cap = windowing["claim_cap"]
    out = pairs.assign(claim=pairs["claim"].astype(str).str.slice(0, cap))
    out = out.assign(window=[best_window_text(c, str(e), windowing["window_chars"], windowing["stride"])
                             for c, e in zip(out["claim"], out["evidence"])]).reset_index(drop=True)
    hard = pd.Series("", index=out.index)
    hard[out.index[out["label"] == 1]] = hard_negatives(out)
    return out.assign(hard=hard)


def run_design(design: str, pool: pd.DataFrame, gold: Mapping[str, pd.DataFrame], *, encoder_path: str,
               windowing: Mapping[str, int], net: Mapping[str, Any], variants: Mapping[str, Sequence[str]],
               baseline: Callable[[Sequence[str], Sequence[str]], np.ndarray], n_boot: int, seed: int,
               progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, Network]:
    """One network design's evaluations, selected the way the head is: leave-one-source-out AUC at each
    checkpoint (``net.checkpoints`` examples) picks the stopping point; the expert gold sets get the model
    trained to it on all the variant's sources, with the paired AUC difference against ``baseline`` (the
    embedding verifier's pair scores). In-distribution: a seeded 20% of each source held out of that final
    model's training. LOSO runs for the ``all`` variant (the others: gold and in-distribution only, at the
    ``all`` variant's stopping point).

    ``pool``: training pairs (``source``, ``claim``, ``evidence``, ``label``); ``gold``: {name: pairs with
    ``claim``, ``passage``, ``label``, ``cluster``}. Returns (table, training curve, the ``all`` model)."""
    from citebound.training.evaluation import auc, holdout_mask, paired_auc_difference

    units = training_units(pool, windowing)
    rng = np.random.default_rng(seed)
    n_eval = int(net["loso_eval_pairs"])
    rows, curves = [], []
    examples = int(net["examples"])
    marks = [int(m) for m in net["checkpoints"]]

    def make() -> Network:
        return Network(design, encoder_path, max_length=int(net["max_length"]), lr=float(net["lr"]),
                       batch_size=int(net["batch_size"]), tau=float(net.get("tau", 0.05)), seed=seed)

    def sample(d: pd.DataFrame) -> pd.DataFrame:
        return d.iloc[np.sort(rng.choice(len(d), size=min(n_eval, len(d)), replace=False))] if len(d) > n_eval else d

    sources = list(variants["all"])
    for src in sources:
        held = sample(pool[pool["source"] == src])
        if held["label"].nunique() < 2:
            continue
        base = baseline(held["claim"].tolist(), held["evidence"].tolist())
        m = make()

        def check(k: int, m=m, held=held, base=base, src=src) -> None:
            s = m.pair_scores(held["claim"].tolist(), held["evidence"].tolist(), windowing)
            a, b = auc(held["label"], s), auc(held["label"], base)
            rows.append({"design": design, "variant": "all", "examples": k, "evaluation": f"loso:{src}",
                         "n": len(held), "auc": a, "embedding_auc": b, "delta": a - b})

        m.fit(units[units["source"] != src], examples, marks, check, progress=progress)
        curves += [{**c, "design": design, "run": f"loso:{src}"} for c in m.curve]
    table = pd.DataFrame(rows)
    loso = table.groupby("examples")["auc"].mean() if len(table) else pd.Series(dtype=float)
    stop = int(loso.idxmax()) if len(loso) else examples
    final = None
    for variant, srcs in variants.items():
        in_v = units[units["source"].isin(list(srcs))].reset_index(drop=True)
        test = holdout_mask(in_v["source"], srcs, rng)
        m = make()
        m.fit(in_v[~test], stop, progress=progress)
        curves += [{**c, "design": design, "run": f"final:{variant}"} for c in m.curve]
        held = sample(pool[pool["source"].isin(list(srcs))].reset_index(drop=True).iloc[np.flatnonzero(test)])
        s = m.pair_scores(held["claim"].tolist(), held["evidence"].tolist(), windowing)
        b = baseline(held["claim"].tolist(), held["evidence"].tolist())
        rows.append({"design": design, "variant": variant, "examples": stop, "evaluation": "in_distribution",
                     "n": len(held), "auc": auc(held["label"], s), "embedding_auc": auc(held["label"], b),
                     "delta": auc(held["label"], s) - auc(held["label"], b)})
        for name, g in gold.items():
            sg = m.pair_scores(g["claim"].tolist(), g["passage"].tolist(), windowing)
            bg = baseline(g["claim"].tolist(), g["passage"].tolist())
            d, lo, hi = paired_auc_difference(g["label"].to_numpy(int), sg, bg, g["cluster"].to_numpy(), n_boot, seed)
            rows.append({"design": design, "variant": variant, "examples": stop, "evaluation": name, "n": len(g),
                         "auc": auc(g["label"], sg), "embedding_auc": auc(g["label"], bg), "delta": d,
                         "delta_ci_low": lo, "delta_ci_high": hi})
        if variant == "all":
            if design == "bi_encoder":  # its verdict cut: Youden's on the in-distribution hold-out
                m.threshold = youden_threshold(held["label"].to_numpy(int), s)
            final = m
    cols = ["design", "variant", "examples", "evaluation", "n", "auc", "embedding_auc", "delta", "delta_ci_low",
            "delta_ci_high"]
    return pd.DataFrame(rows).reindex(columns=cols), pd.DataFrame(curves), final
