"""Rule train_network: one network design (cross-encoder or contrastive bi-encoder) fine-tuned from the shipped
MiniLM on the staged sets, evaluated leave-one-source-out and on the expert gold; its model saved in HF format
with its ONNX graph."""
import time
from pathlib import Path

import torch

from citebound.study.train_networks import run_design
from citebound.study.train_settings import design_settings
from citebound.study.train_verifier import load_training
from citebound.study.workflow_helpers import settings, start
from citebound.verifiers import build_verifier, score_pairs
from citebound.verifiers.embedding import resolve_model_path
from citebound.verifiers.runtimes import _Output, export_onnx

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
design = sm.wildcards.design
tv, win = cfg["train_verifier"], cfg["windowing"]
net = design_settings(tv["networks"], design)
torch.set_num_threads(sm.threads)
t0 = time.perf_counter()
data = load_training(sm.input.train, sm.input.dedupe_pairs, cfg, sm.input.dedupe_texts)
log.info("%s: %d training pairs (of %d after dedupe)", design, len(data["train"]), data["kept"])
emb = build_verifier({"name": "embedding", "kind": "embedding", "model": tv["encoder"], "threads": sm.threads})


def baseline(claims, passages):
    """The embedding verifier's pair scores (its own code, max over windows)."""
    return score_pairs(emb, list(claims), list(passages), window_chars=win["window_chars"], stride=win["stride"],
                       claim_cap=win["claim_cap"], progress=False).score


variants = {"all": tv["sources"], "domain_matched": [s for s in tv["sources"] if s in tv["domain_matched"]]}
variants = {k: v for k, v in variants.items() if k in net["variants"]}
table, curve, model = run_design(design, data["train"], data["gold"], encoder_path=resolve_model_path(tv["encoder"]),
                                 windowing=win, net=net, variants=variants, baseline=baseline,
                                 n_boot=cfg["n_bootstrap"], seed=tv["seed"], progress=True)
seconds = time.perf_counter() - t0
table.to_csv(sm.output.table, index=False)  # the time goes to citebound.json: tables hold only what reruns equal
curve.to_csv(sm.output.curve, index=False)
out = Path(sm.output.model)
stop = int(table.loc[~table["evaluation"].str.startswith("loso:"), "examples"].iloc[0])  # the stopping point
model.save(out, {"encoder": tv["encoder"], "examples": stop, "seed": tv["seed"],
                 "windowing": win, "training_seconds": round(seconds, 1)})
# the network's ONNX graph (what the onnx and openvino runtimes run), next to its weights
pick = (lambda o: o.logits) if design == "cross_encoder" else (lambda o: o.last_hidden_state)
pair = model.tokenizer(["a claim"], ["a window"] if design == "cross_encoder" else None, return_tensors="pt")
export_onnx(_Output(model.model, pick).eval(), dict(pair), out / "model.onnx", int8=False)
log.info("\n%s\n%.0f s", table.round(3).to_string(), seconds)
