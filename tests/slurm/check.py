"""Checks of a smoke run through Slurm, from Slurm's own job records (``scontrol show job --oneliner``).

Usage: check.py JOBS_TXT FIRST_JOB_ID CANCELLED_JOB_ID LOCAL_RESULTS SLURM_RESULTS
"""
import json
import sys
from pathlib import Path

import pandas as pd


def jobs(path: str, first: int) -> list[dict[str, str]]:
    out = []
    for line in Path(path).read_text().splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if fields.get("JobId", "").isdigit() and int(fields["JobId"]) >= first:
            out.append(fields)
    return out


def gpus(job: dict[str, str]) -> int:
    """GPUs the job asked Slurm for (--gpus -> TresPerJob, --gres -> TresPerNode)."""
    tres = ",".join(job.get(k, "") for k in ("TresPerJob", "TresPerNode", "TresPerTask"))
    for part in tres.split(","):
        if part.startswith("gres:gpu") or part.startswith("gres/gpu"):
            return int(part.rsplit(":", 1)[-1].rsplit("=", 1)[-1])
    return 0


def main() -> int:
    path, first, cancelled, local_res, slurm_res = sys.argv[1:6]
    js = jobs(path, int(first))
    rules = [(j["JobId"], j.get("Comment", ""), j["JobState"], gpus(j)) for j in js]
    assert rules, "no Slurm jobs recorded"
    bad = [r for r in rules if r[1].startswith("rule_generate") != (r[3] >= 1)]
    assert not bad, f"GPU request does not match the rule: {bad}"
    by_rule: dict[str, int] = {}
    for _, c, _, _ in rules:
        name = c.split("_wildcards_")[0].removeprefix("rule_")
        by_rule[name] = by_rule.get(name, 0) + 1
    assert not {"download", "prepare", "data_summary"} & set(by_rule), f"local rules went to Slurm: {by_rule}"
    # the cancelled generate job was rerun for the same wildcards and completed
    cj = next(r for r in rules if r[0] == cancelled)
    assert cj[2] == "CANCELLED", cj
    again = [r for r in rules if r[1] == cj[1] and r[0] != cancelled]
    assert again and again[-1][2] == "COMPLETED", (cj, again)
    gens = sorted(Path(slurm_res, "generations").glob("*/*.jsonl"))
    assert len(gens) == 3 and not list(Path(slurm_res, "generations").glob("*/*.partial")), gens
    for g in gens:
        ids = [json.loads(x)["id"] for x in g.read_text().splitlines()]
        assert len(ids) == len(set(ids)) == 4, (g, ids)  # nothing lost, nothing twice
    # the tables equal those of the local smoke run
    tables = sorted(p.name for p in Path(local_res, "tables").glob("*.csv"))
    assert tables == sorted(p.name for p in Path(slurm_res, "tables").glob("*.csv")), tables
    for name in tables:
        a = pd.read_csv(Path(local_res, "tables", name))
        b = pd.read_csv(Path(slurm_res, "tables", name))
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-6, atol=1e-9, obj=name)
    gpu_jobs = sum(1 for r in rules if r[3])
    print(json.dumps({"slurm_jobs": len(rules), "gpu_jobs": gpu_jobs, "jobs_by_rule": by_rule,
                      "cancelled": {"job": cancelled, "rule": cj[1], "rerun_as": again[-1][0]},
                      "tables_equal_to_local": len(tables)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
