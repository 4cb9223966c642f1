"""Rule train_contradiction: the contradiction check's head, selected on transfer, exported to ONNX."""
import hashlib
import json
import time

from citebound.study import contradiction as C
from citebound.study.train_verifier import FIT_SOURCE, load_training
from citebound.study.workflow_helpers import settings, start
from citebound.training import contradiction as K
from citebound.training.head import FrozenFeatures

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
cc, win = cfg["contradiction"], cfg["windowing"]
tv = {**cfg["train_verifier"], "sources": list(K.REFUTE_SOURCES), "max_pairs_per_source": cc["max_pairs_per_source"],
      "seed": cc["seed"]}
timings = {}
t0 = time.perf_counter()
data = load_training(sm.input.train, sm.input.dedupe_pairs, {**cfg, "train_verifier": tv}, sm.input.dedupe_texts)
train = data["train"].reset_index(drop=True)
assert FIT_SOURCE not in set(train["source"])
log.info("refute-source pairs: %d sampled (%s)", len(train), train.groupby(["source", "kind"]).size().to_dict())
# the graph the guard scores with (no torch): the features it will see are the ones it is trained on
ff = FrozenFeatures("", batch_size=cc["batch_size"], threads=sm.threads, runtime={"runtime": "onnx", "graph": "shipped"})


def units_of(claims, passages):
    cs, ws, owner = [], [], []
    from citebound.verifiers.base import make_windows

    for i, (c, p) in enumerate(zip(claims, passages)):
        for w in make_windows(p, win["window_chars"], win["stride"]) or [""]:
            cs.append(c[: win["claim_cap"]])
            ws.append(w)
            owner.append(i)
    import numpy as np

    return K.unit_features(ff, cs, ws, progress=True), np.asarray(owner, int)


t1 = time.perf_counter()
units, owner = units_of(train["claim"].tolist(), train["evidence"].tolist())
timings[f"features of {len(train)} training pairs"] = time.perf_counter() - t1
loso, best_c = C.loso(train, units, owner, cc["C"], cc["veto_below"], cfg["n_bootstrap"], cc["seed"])
fit = train["kind"].isin(["support", "refute"]).to_numpy()
head = K.fit(C._best_window(units, owner, len(train))[fit], (train["kind"][fit] == "support").to_numpy().astype(int),
             best_c)
gold = {}
for name in ("attribution_gold_eval", "scifact_dev"):
    g = data["gold"][name]
    t1 = time.perf_counter()
    gold[name] = (g, units_of(g["claim"].tolist(), g["passage"].tolist()))
    timings[f"features of {len(g)} {name} pairs"] = time.perf_counter() - t1
gold_table, scored = C.gold_rows(head, gold, cc["veto_below"], cfg["n_bootstrap"], cc["seed"])
selection = C.pd.concat([loso, gold_table], ignore_index=True)
catch = C.catch_rows(scored, gold["attribution_gold_eval"][0]["item_id"].to_numpy(), cc["alpha"], cc["seed"])
# the cost: benchmarks/contradiction_cost.py measures it on released answers; recorded in the config
decision = C.decide(selection, catch, cc.get("cost_ratio"), best_c)
timings["total"] = time.perf_counter() - t0
selection.to_csv(sm.output.table, index=False)
catch.to_csv(sm.output.catch, index=False)
blob = K.to_onnx(head)
with open(sm.output.onnx, "wb") as f:
    f.write(blob)
sha = hashlib.sha256(blob).hexdigest()
with open(sm.output.head, "w") as f:
    json.dump({**head, "veto_below": cc["veto_below"], "decision": decision, "sha256": sha}, f, indent=1)
counts = train.groupby(["source", "kind"]).size().rename("pairs").reset_index()
licences = {k.split("__")[0]: f["licence"] for k, f in cfg["files"].items() if k.split("__")[0] in K.REFUTE_SOURCES}
with open(sm.output.card, "w") as f:
    f.write(C.model_card(decision, selection, catch, counts, licences, len(data["removed"]), timings, sha))
log.info("\n%s\n%s\ndecision: %s\ntimings: %s", selection.round(3).to_string(), catch.round(3).to_string(), decision,
         timings)
