"""Rule score_stacked: apply a fitted stacked verifier to one set."""
import json

import numpy as np
import pandas as pd

from citeguard.rulekit import param_json, start
from citeguard.score_tables import SCORE_COLUMNS, feature_matrix, load_scored
from citeguard.verifiers.fitted import stacked_verdicts

sm = snakemake  # noqa: F821
log = start(sm)
cfg = param_json(sm, "verifier")
model = json.load(open(sm.input.model))
pairs = load_scored(sm.input.pairs, sm.input.features)
score, verdict = stacked_verdicts(model, feature_matrix(pairs, model["features"]), cfg)
table = pd.DataFrame({
    "pair_id": pairs["pair_id"], "verifier": cfg["name"], "score": score,
    "verdict": verdict, "best_window": -1, "n_windows": 0,
    "reason": np.where(np.isfinite(score), "", "missing_feature"), "binary": False,
}, columns=SCORE_COLUMNS)
table.to_parquet(sm.output[0], index=False)
log.info("%s on %s: %d pairs, supported %.3f", cfg["name"], sm.wildcards.set, len(table), table.verdict.mean())
