"""Rule worked_examples: the guard on real released answers; rows where it re-attributed or flagged."""

import pandas as pd

from citebound.calibration.conformal import ConformalGuard
from citebound.guarding.guard import Guard
from citebound.guarding.reattributors import Reattributor
from citebound.scoring.io import read_records
from citebound.scoring.loader import PairScorer
from citebound.study.workflow_helpers import eval_split, param_json, scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
verifiers = param_json(sm, "verifiers")
name = cfg["guard_verifier"]
(cal_df,) = scored_sets(sm, "cal").values()
cal_df = eval_split(cal_df)
cal = ConformalGuard(alpha=round(1 - cfg["budget_target"], 10)).calibrate(
    cal_df[f"score_{name}"].to_numpy(float), cal_df["label"].to_numpy())
model = next((m for m in sm.input.models if m.endswith(f"/{name}.json")), None)
reattributor = Reattributor.from_config(cfg["reattributor"])
guard = Guard(PairScorer(verifiers[name], verifiers, cfg["windowing"], sm.params.cache_dir, model),
              reattributor=reattributor, threshold=cal.tau, base=0)
want = int(cfg["worked_examples"])
rows = []
for rec in read_records(sm.input.answers):
    passages = [c.get("text") if isinstance(c.get("text"), str) else "" for c in rec["ctxs"]]
    if not all(p.strip() for p in passages):
        continue  # the guard refuses empty passages; such answers are counted in data_summary
    _, report = guard.guard(rec["output"], passages)
    for a in report.audit:
        if a.action in ("reattributed", "flagged"):
            rows.append({"answer_id": rec["id"], "action": a.action, "claim": a.claim, "cited": a.cited,
                         "score": a.score, "tau": cal.tau, "new_pointer": a.new_pointer, "new_score": a.new_score,
                         "cited_passage": passages[a.cited][:400] if 0 <= a.cited < len(passages) else "",
                         "new_passage": passages[a.new_pointer][:400] if a.new_pointer is not None else ""})
    kinds = pd.Series([r["action"] for r in rows]).value_counts() if rows else pd.Series(dtype=int)
    if kinds.get("reattributed", 0) >= want // 2 and kinds.get("flagged", 0) >= want // 2:
        break
table = pd.DataFrame(rows)
if len(table):
    table = pd.concat([g.head(want // 2) for _, g in table.groupby("action")], ignore_index=True)
table.to_csv(sm.output.table, index=False)
log.info("verifier %s, tau=%.4f (guaranteed catch rate %.2f): %d examples", name, cal.tau, cfg["budget_target"],
         len(table))
