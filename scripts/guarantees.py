"""Rule guarantees: LTT violations over calibration draws, certified beta, the drift monitor, groups."""
from citebound.study import figures
from citebound.study.analysis import guarantees as G
from citebound.study.workflow_helpers import eval_split, scored_sets, settings, start

sm = snakemake  # noqa: F821
log = start(sm)
cfg = settings(sm)
g, verifiers, seed = cfg["guarantees"], cfg["panel"], cfg["seed"]
(cal_df,) = scored_sets(sm, "cal").values()
cal = {v: eval_split(cal_df) for v in verifiers}
(hard_df,) = scored_sets(sm, "hard").values()
hard = {v: hard_df for v in verifiers}

viol = G.ltt_violations(cal, g["alpha"], g["betas"], g["delta"], g["draws"], g["cal_fraction"], seed, g["methods"])
viol.to_csv(sm.output.violations, index=False)
cert = G.certified_beta(cal, [g["alpha"]], g["delta"])
cert.to_csv(sm.output.certified, index=False)
alarms = G.monitor_alarms(cal, hard, g["alpha"], g["delta"], g["monitor_streams"], seed)
alarms.to_csv(sm.output.monitor, index=False)
groups = G.group_vs_pooled(cal, cfg["group_col"], g["alpha"], g["group_beta"], g["delta"], g["group_splits"], seed,
                           g["min_group"])
groups.to_csv(sm.output.groups, index=False)
shift = G.shift_alarm(cal, hard, g["delta"], g["shares"], g["alarm_streams"], g["alarm_length"], seed, alpha=g["alpha"])
shift.to_csv(sm.output.alarm, index=False)
labels = G.label_test(g["alpha"], g["delta"], [(1, 1000), (10, 100), (100, 10), (1000, 1)], g["label_draws"], seed)
labels.to_csv(sm.output.labels, index=False)
precision = G.precision_guarantee(cal, g["precision_q"], g["precision_share_min"], g["alpha"], g["delta"], g["draws"],
                                  g["cal_fraction"], seed)
precision.to_csv(sm.output.precision, index=False)
figures.save(figures.guarantees_figure(viol, alarms, groups, shift, labels, precision), sm.output.png)
log.info("precision\n%s", precision.round(3).to_string())
log.info("violations\n%s\ncertified\n%s\nmonitor\n%s\ngroups\n%s\nalarm\n%s\nlabels\n%s", viol.round(3).to_string(),
         cert.round(3).to_string(), alarms.round(3).to_string(), groups.round(3).to_string(), shift.round(3).to_string(),
         labels.round(3).to_string())
