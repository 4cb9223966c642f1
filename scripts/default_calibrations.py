"""Rule default_calibrations: the guard's default verifiers calibrated on the expert attribution gold."""

import json

import pandas as pd

from citebound.calibration.files import calibration_summary
from citebound.scoring.loader import load_scorer
from citebound.study.workflow_helpers import eval_split, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
gold = eval_split(pd.read_parquet(sm.input.pairs[0])).dropna(subset=["label"]).reset_index(drop=True)
for name, out in zip(cfg["verifiers"], sm.output.calibrations):
    scorer = load_scorer(name, cache_dir=sm.params.cache_dir)  # the guard's default runtime for this verifier
    scores, _ = scorer(gold["claim"].tolist(), gold["passage"].tolist())
    summary = calibration_summary(scores, gold["label"].astype(int).tolist(), cfg["alpha"], cfg["delta"], name,
                                  scorer.hash)
    summary["provenance"] = {
        "calibrated_on": f"{cfg['calibration_set']} (evaluation split): expert-labelled citations of scholarly "
                         "literature-review answers",
        "n_citations": len(gold), "answers": int(gold["item_id"].nunique()),
        "holds_for": "answers like these (scholarly, English, passages from papers); recalibrate on your own "
                     "labelled citations (citebound label, citebound calibrate --labels) before relying on it elsewhere",
        "made_by": "snakemake default_calibrations"}
    with open(out, "w") as fh:
        fh.write(json.dumps(summary, indent=2) + "\n")
    log.info("%s: tau=%s on %d citations (%d unsupported)", name, summary["tau"], len(gold), summary["n_unsupported"])
