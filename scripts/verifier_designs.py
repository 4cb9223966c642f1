"""Rule verifier_designs: every trained-verifier design at its selected setting, side by side; which one
the expert gold prefers, and whether it is adopted."""
import json
from pathlib import Path

import pandas as pd

from citebound.study import figures
from citebound.study.train_verifier import GOLD, choose_design, design_table, designs_card
from citebound.study.workflow_helpers import settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
head = pd.read_csv(sm.input.head)
nets = [pd.read_csv(p) for p in sm.input.networks]
curves = pd.concat([pd.read_csv(p) for p in sm.input.curves], ignore_index=True) if sm.input.curves else pd.DataFrame()
gold = [name for name, _ in GOLD]
table = design_table(head, nets)
decision = choose_design(table, gold, cfg["adopt_margin"])
decision["seconds"] = {}
for d in sm.input.models:  # each network's whole-rule time, from its citebound.json
    meta = json.loads((Path(d) / "citebound.json").read_text())
    decision["seconds"][meta["design"]] = float(meta["training_seconds"])
table.to_csv(sm.output.table, index=False)
with open(sm.output.decision, "w") as f:
    json.dump(decision, f, indent=1)
with open(sm.output.card, "w") as f:
    f.write(designs_card(table, decision, cfg["train_verifier"], decision["seconds"]))
checkpoints = pd.concat([t[t["evaluation"].str.startswith("loso:")] for t in nets], ignore_index=True) if nets else head.iloc[:0]
figures.save(figures.verifier_designs_figure(table, checkpoints, curves, gold), sm.output.png)
log.info("\n%s\ndecision: %s", table.round(3).to_string(), decision)
