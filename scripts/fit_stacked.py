"""Rule fit_stacked_verifier: logistic regression on the training split of gold."""
import json

from citebound.study.scored_tables import feature_matrix, load_scored
from citebound.study.workflow_helpers import param_json, start
from citebound.verifiers.fitted import fit_stacked

sm = snakemake  # noqa: F821
log = start(sm)
cfg = param_json(sm, "verifier")
pairs = load_scored(sm.input.pairs, sm.input.features)
train = pairs[pairs["split"] == cfg["train_split"]]
if train.empty:
    raise ValueError(f"{sm.input.pairs}: no pairs in split {cfg['train_split']!r} to fit {cfg['name']}")
model = fit_stacked(feature_matrix(train, cfg["features"]), train["label"].to_numpy(float), cfg["features"],
                    C=float(cfg.get("C", 1.0)))
model.update(train_set=cfg["train_set"], train_split=cfg["train_split"], threshold=cfg["threshold"])
json.dump(model, open(sm.output[0], "w"), indent=2)
log.info("fitted %s on %d pairs: %s", cfg["name"], model["n_train"], model)
