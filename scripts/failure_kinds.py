"""Rule failure_kinds: unsupported citations split into misattributed and ungrounded, per source x
verifier, and the split checked against the attribution gold."""
import json

from citebound.guarding.reattributors import Reattributor
from citebound.study import analysis, figures
from citebound.study.workflow_helpers import eval_split, scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
panel, n_boot, seed = cfg["panel"], cfg["n_bootstrap"], cfg["seed"]
cited = scored_sets(sm, "src")
proposals = dict(zip(cited, scored_sets(sm, "prop").values()))
items = {s: json.loads(open(p).read())["item_ids"] for s, p in zip(cited, sm.input.samples)}
table = analysis.failure_kinds_table(cited, proposals, items, panel, n_boot, seed)
table.to_csv(sm.output.table, index=False)
(gold,) = scored_sets(sm, "cal").values()
gold = eval_split(gold)
cases = analysis.gold_cases(gold, Reattributor.from_config(cfg["reattributor"]), seed)
agree = analysis.gold_agreement(gold, cases, panel, n_boot, seed)
agree.insert(1, "gold_set", cfg["sets"]["cal"][0])
agree.to_csv(sm.output.gold, index=False)
figures.save(figures.failure_kinds_figure(table, panel), sm.output.png)
log.info("\n%s\n%s", table.round(3).to_string(), agree.round(3).to_string())
