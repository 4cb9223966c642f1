"""Rule train_verifier: the frozen-feature head on the staged training sets, selected on transfer."""
import json
import time

from citebound.study import figures
from citebound.study.train_verifier import FIT_SOURCE, load_training, model_card
from citebound.study.workflow_helpers import settings, start
from citebound.training.evaluation import choose_and_adopt, evaluate
from citebound.training.head import FrozenFeatures
from citebound.verifiers.embedding import resolve_model_path

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
tv, win = cfg["train_verifier"], cfg["windowing"]
timings = {}
t0 = time.perf_counter()
data = load_training(sm.input.train, sm.input.dedupe_pairs, cfg, sm.input.dedupe_texts)
train = data["train"]
log.info("training pairs: %d read, %d after dedupe, %d sampled; skipped %s", data["read"], data["kept"], len(train),
         dict(data["skipped"]))
ff = FrozenFeatures(resolve_model_path(tv["encoder"]), batch_size=tv["batch_size"], threads=sm.threads)
t1 = time.perf_counter()
train_units = ff.pair_units(train["claim"].tolist(), train["evidence"].tolist(), win["window_chars"], win["stride"],
                            win["claim_cap"], progress=True)
timings[f"features of {len(train)} training pairs"] = time.perf_counter() - t1
gold = {}
for name, g in data["gold"].items():
    t1 = time.perf_counter()
    gold[name] = (g, ff.pair_units(g["claim"].tolist(), g["passage"].tolist(), win["window_chars"], win["stride"],
                                   win["claim_cap"], progress=True))
    timings[f"features of {len(g)} {name} pairs"] = time.perf_counter() - t1
t1 = time.perf_counter()
variants = {"all": tv["sources"], "domain_matched": [s for s in tv["sources"] if s in tv["domain_matched"]]}
table, chosen = evaluate(train, train_units, gold, variants, tv["C"], cfg["n_bootstrap"], tv["seed"])
timings["head fits (every variant, C and fold)"] = time.perf_counter() - t1
decision = choose_and_adopt(table, chosen, list(gold), tv["adopt_margin"])
timings["total"] = time.perf_counter() - t0
table.to_csv(sm.output.table, index=False)
data["removed"].to_csv(sm.output.dedupe, index=False)
model = {**chosen[decision["variant"]]["head"], "design": tv["design"], "encoder": tv["encoder"],
         "variant": decision["variant"], "windowing": win, "adopted": decision["adopted"]}
with open(sm.output.model, "w") as f:
    json.dump(model, f, indent=1)
counts = (train.groupby(["source", "domain"])["label"].agg(pairs="size", supported="sum").reset_index())
licences = {k.split("__")[0]: f["licence"] for k, f in cfg["files"].items()}
licences[FIT_SOURCE] = "; ".join(cfg["calibration_licence"])
with open(sm.output.card, "w") as f:
    f.write(model_card({**tv, "n_bootstrap": cfg["n_bootstrap"]}, counts, data["removed"], data["skipped"], table,
                       decision, timings, licences))
figures.save(figures.train_verifier_figure(table, list(gold)), sm.output.png)
log.info("\n%s\ndecision: %s\ntimings: %s", table.round(3).to_string(), decision, timings)
