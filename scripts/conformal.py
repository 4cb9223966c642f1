"""Rule conformal: coverage, size ablation, review budget, transfer, PAC, Mondrian."""
import pandas as pd

from citebound.study import analysis, figures
from citebound.study.workflow_helpers import eval_split, scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
ccfg, verifiers = cfg["conformal"], cfg["panel"]
seed, targets = cfg["seed"], ccfg["targets"]
(cal_df,) = scored_sets(sm, "cal").values()
cal_df = eval_split(cal_df)
cal = {v: cal_df for v in verifiers}
frozen = pd.read_parquet(sm.input.frozen_pairs[0])
cal_all = dict(cal, attrscore_released=frozen.assign(score_attrscore_released=frozen["frozen_score"]))
(hard_df,) = scored_sets(sm, "hard").values()
deploy = scored_sets(sm, "src")

coverage, per_split = analysis.coverage_table(cal_all, targets, ccfg["n_splits"], ccfg["calibration_fraction"],
                                              ccfg["pac_delta"], seed)
coverage.to_csv(sm.output.coverage, index=False)
ablation = analysis.calibration_size_ablation(cal_all, ccfg["calibration_sizes"], targets, ccfg["n_splits"], seed)
ablation.to_csv(sm.output.ablation, index=False)
budget = analysis.review_budget(cal, deploy, ccfg["budget_target"])
budget.to_csv(sm.output.budget, index=False)
curve = analysis.budget_curve(cal, deploy)
curve.to_csv(sm.output.curve, index=False)
transfer = analysis.transfer_table(cal, {v: hard_df for v in verifiers}, targets)
transfer.to_csv(sm.output.transfer, index=False)
mondrian = analysis.mondrian_table(cal, ccfg["mondrian_group"], ccfg["budget_target"], min(ccfg["n_splits"], 200), seed)
mondrian.to_csv(sm.output.mondrian, index=False)
sizes = sorted(set(ccfg["calibration_sizes"]) | {int(coverage.n_cal.max())} if len(coverage) else ccfg["calibration_sizes"])
analysis.pac_ranks_table(sizes, targets, ccfg["pac_delta"]).to_csv(sm.output.pac, index=False)

figures.save(figures.coverage_figure(per_split, targets), sm.output.cov_png)
figures.save(figures.ablation_figure(ablation, targets[0]), sm.output.abl_png)
figures.save(figures.budget_figure(curve), sm.output.budget_png)
figures.save(figures.transfer_figure(transfer), sm.output.transfer_png)
log.info("coverage\n%s\nbudget\n%s\ntransfer\n%s", coverage.round(3).to_string(), budget.round(3).to_string(),
         transfer.round(3).to_string())
