#!/usr/bin/env bash
# The smoke DAG through a real Slurm cluster (tests/slurm/start.sh), as a user would submit it:
#   snakemake --executor slurm --workflow-profile profiles/slurm --config experiment=smoke
# then checks, from Slurm's own records (scontrol show job), that every GPU rule (generate) asked for
# a GPU and no other job did; that a generate job cancelled mid-run with scancel was retried and the
# DAG still finished with every answer; that the tables equal those of a local smoke run (argument 1:
# its results/smoke folder, e.g. the one the pytest smoke run keeps); and that a dry run afterwards
# has nothing to do.
# By default the Slurm workdir starts as a copy of the local run's (mtimes and Snakemake's metadata
# kept), and one pipeline's answers are forced to be generated again (--forcerun): the generate job and
# the 17 jobs downstream of it (scoring, stacking, the analyses, in both group jobs) then go through
# Slurm, in ~5 minutes instead of ~25 for the whole DAG. SLURM_SMOKE_FULL=1 submits the whole DAG
# from an empty workdir instead.
# Usage (as root): bash tests/slurm/run.sh LOCAL_SMOKE_RESULTS [WORKDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
local_results=${1:?usage: run.sh LOCAL_SMOKE_RESULTS [WORKDIR]}
if [ -n "${2:-}" ]; then
    wd=$2
else  # a workdir made here (~400 MB) is removed when the run passes and kept, named, when it fails
    wd=$(mktemp -d /tmp/citebound-slurm.XXXXXX)
    trap 'rc=$?; if [ $rc -eq 0 ]; then rm -rf "$wd"; else echo "kept for inspection: $wd" >&2; fi' EXIT
fi
export CITEBOUND_DATA_MIRROR=${CITEBOUND_DATA_MIRROR:-$root/../shared/data}
bash "$here/start.sh"
mkdir -p "$wd"
force=()
if [ "${SLURM_SMOKE_FULL:-0}" != 1 ]; then
    # local_results is WORKDIR/results/smoke; copy WORKDIR, not its locks, logs or incomplete markers
    src=$(cd "$local_results/../.." && pwd)
    (cd "$src" && tar cf - --exclude=.snakemake/locks --exclude=.snakemake/log --exclude=.snakemake/incomplete .) \
        | (cd "$wd" && tar xf -)
    force=(--forcerun results/smoke/generations/smollm2-135m/bare.jsonl)
fi
first_job=$(( $(scontrol show config | awk '/^NEXT_JOB_ID/ {print $3}') ))
py=${PYTHON:-python}
# A 2-CPU node: the many small scoring and analysis jobs of the smoke DAG are bundled into two
# group jobs (one sbatch each); --cores/--resources tell Snakemake what one group job may use, so
# a group's jobs run in series inside it instead of asking Slurm for their sum. Resources are the
# profile's (a --set-resources here would replace the profile's, generate's GPU included).
smk=("$py" -m snakemake -s "$root/Snakefile" --directory "$wd" --executor slurm
     --workflow-profile "$root/profiles/slurm" --jobs 4 --slurm-status-command squeue
     --slurm-init-seconds-before-status-checks 5
     --groups score=verify fit_stacked_verifier=verify score_stacked=verify validate=analysis rates=analysis
              agreement=analysis conformal=analysis reattribution=analysis scope=analysis worked_examples=analysis
     --group-components verify=100 analysis=10
     --cores 2 --resources mem_mb=16000 --config experiment=smoke)
t0=$(date +%s)
"${smk[@]}" "${force[@]}" >"$wd/snakemake.log" 2>&1 &
pid=$!
# cancel the first generate job that has been running for a few seconds (it is mid-generation then)
cancelled=""
while kill -0 $pid 2>/dev/null; do
    line=$(squeue -h -t RUNNING -o '%i %k %M' | awk '$2 ~ /^rule_generate/ && $3 ~ /^0:(0[5-9]|[1-5][0-9])$/ {print; exit}')
    if [ -n "$line" ]; then
        cancelled=${line%% *}
        echo "scancel $line"
        scancel "$cancelled"
        break
    fi
    sleep 1
done
rc=0; wait $pid || rc=$?
wall=$(( $(date +%s) - t0 ))
echo "slurm smoke DAG: rc=$rc in ${wall}s"
[ $rc -eq 0 ] || { tail -50 "$wd/snakemake.log"; exit 1; }
[ -n "$cancelled" ] || { echo "FAIL: no generate job was seen running to cancel"; exit 1; }
scontrol show job --oneliner > "$wd/slurm_jobs.txt"
"$py" "$here/check.py" "$wd/slurm_jobs.txt" "$first_job" "$cancelled" "$local_results" "$wd/results/smoke"
dry=$("${smk[@]}" -n 2>&1 || true)
echo "$dry" | grep -q "Nothing to be done" || { echo "FAIL: dry run after the Slurm run has work to do"; echo "$dry" | tail -20; exit 1; }
echo "slurm smoke: OK (dry run afterwards: nothing to be done; wall ${wall}s)"
