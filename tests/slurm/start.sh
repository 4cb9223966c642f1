#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine (Debian's slurmctld, slurmd, munge), for CI:
# one node with this machine's CPUs and memory and one GPU GRES (File=/dev/null: a GPU request is
# scheduled and recorded, nothing runs on a GPU). No accounting database: jobs are followed with
# squeue (snakemake --slurm-status-command squeue) and every finished job is written to the
# job-completion log $SLURM_JOBCOMP_LOG, which the tests read back.
# Usage (as root): bash tests/slurm/start.sh      Idempotent: an already running cluster is kept.
set -euo pipefail
export SLURM_JOBCOMP_LOG=${SLURM_JOBCOMP_LOG:-/var/log/slurm/jobcomp.log}
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge) \
        >/tmp/slurm-apt.log 2>&1 || { tail -20 /tmp/slurm-apt.log; exit 1; }
fi
if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    # kept, but jobs an earlier Snakemake run left behind (comment rule_*) would hold the node
    stale=$(squeue -h -o '%i %k' | awk '$2 ~ /^rule_/ {print $1}')
    [ -z "$stale" ] || { echo "slurm: cancelling jobs left by an earlier run: $stale"; scancel $stale; sleep 3; }
    echo "slurm: already up ($(sinfo -h -o '%N %T %G'))"; exit 0
fi
node=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=citebound-ci
SlurmctldHost=${node}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${SLURM_JOBCOMP_LOG}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MinJobAge=7200
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
NodeName=${node} CPUs=${cpus} RealMemory=${mem} Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
echo "Name=gpu File=/dev/null" > /etc/slurm/gres.conf
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
[ -s /etc/munge/munge.key ] || { mungekey --create --force 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
# -c: start from a clean state. A state file left by an earlier run on this machine brings back its
# jobs, and the node comes up "allocated" to jobs whose processes are long gone.
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld -c
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd -c
for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)'; then
        echo "slurm: up ($(sinfo -h -o '%N %c CPUs %m MB %G %T'))"; exit 0
    fi
    scontrol update NodeName="${node}" State=RESUME >/dev/null 2>&1 || true
    sleep 1
done
echo "slurm: node did not come up"; sinfo -N -l || true; squeue -a || true
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log || true
exit 1
