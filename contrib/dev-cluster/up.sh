#!/bin/sh
# Boot a private single-node Slurm 22.05 cluster on loopback, as root, for stallscope's integration
# tests: munge, MariaDB, slurmdbd, slurmctld, slurmd with 4 fake GPUs (gres File=/dev/tty[0-3]) and the
# stallscope SPANK plugin in plugstack.conf. State, configs and logs live in STALLSCOPE_CLUSTER_DIR
# (default /tmp/stallscope-cluster); ports STALLSCOPE_CLUSTER_PORT_BASE..+3 (default 17817-17820).
# Idempotent: daemons already running are left alone. Installs nothing (see contrib/install-deps.sh).
#
#   STALLSCOPE_PLUGIN=/path/stallscope.so  STALLSCOPE_HELPER=/path/stallscope  contrib/dev-cluster/up.sh
#   . contrib/dev-cluster/env.sh      # SLURM_CONF for sinfo/srun/sbatch/sacct in your shell
#   contrib/dev-cluster/down.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
. "$HERE/common.sh"
t0=$(date +%s)

[ "$(id -u)" -eq 0 ] || die "must run as root (it starts slurmd and switches job uids)"
for b in munged mariadbd mariadb-install-db mariadb slurmdbd slurmctld slurmd sacctmgr sinfo srun sbatch; do
    command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin command -v "$b" >/dev/null 2>&1 ||
        die "'$b' not found; run contrib/install-deps.sh (as root) first"
done
[ -f /usr/lib/x86_64-linux-gnu/slurm-wlm/accounting_storage_mysql.so ] ||
    die "slurm-wlm-mysql-plugin missing; run contrib/install-deps.sh"
PATH=$PATH:/usr/sbin:/sbin

# The newest plain (non-sanitizer) build: slurmd cannot load an ASan-built plugin ("ASan runtime does not
# come first in initial library list") and the node never turns idle; tests/run-all.sh makes build-asan
# after build, so "newest" alone would pick it.
plain_build() {
    for so in $(ls -t "$REPO"/build*/spank/stallscope.so 2>/dev/null); do
        grep -aq __asan_init "$so" && continue
        dirname "$(dirname "$so")"
        return 0
    done
}
B=$(plain_build)
PLUGIN=${STALLSCOPE_PLUGIN:-${B:+$B/spank/stallscope.so}}
HELPER=${STALLSCOPE_HELPER:-${B:+$B/helper/stallscope}}
[ -n "$PLUGIN" ] && [ -f "$PLUGIN" ] || die "no stallscope.so; build it (ninja -C build spank/stallscope.so) or set STALLSCOPE_PLUGIN"
[ -n "$HELPER" ] || HELPER=/usr/bin/stallscope
# Job cgroups (STALLSCOPE_CLUSTER_CGROUP=1): proctrack/cgroup + task/cgroup with memory as a consumable
# resource, so `--mem` is enforced by the kernel and the helper reads the cgroup Slurm made for the job.
# The hierarchy is the one the machine has: v2 when the unified mount offers the memory controller, else
# v1 (hybrid hosts such as Debian 12 VMs: memory/cpu only in v1). Default: linuxproc + task/none.
CGROUP=${STALLSCOPE_CLUSTER_CGROUP:-0}
if [ "$CGROUP" = 1 ]; then
    if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        CGROUP_PLUGIN=cgroup/v2
    elif [ -d /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/memory ]; then
        CGROUP_PLUGIN=cgroup/v1
    else
        die "STALLSCOPE_CLUSTER_CGROUP=1 but no writable memory cgroup controller under /sys/fs/cgroup"
    fi
    PROCTRACK=proctrack/cgroup
    TASK=task/cgroup
    SELECT_PARAMS=CR_Core_Memory
    JOBACCT=jobacct_gather/cgroup
else
    PROCTRACK=proctrack/linuxproc
    TASK=task/none
    SELECT_PARAMS=CR_Core
    JOBACCT=jobacct_gather/none
fi

mkdir -p "$D/etc" "$D/log" "$D/pids" "$D/run" "$D/state/ctld" "$D/state/d" "$D/munge" "$D/stallscope-run" "$D/work"
chmod 755 "$D" "$D/etc" "$D/munge" "$D/run"
chmod 1777 "$D/work"

ensure_cluster_user

# ---- configuration (rewritten every time so changed paths/ports take effect) -----------------------
cat >"$D/etc/slurm.conf" <<CONF
ClusterName=stallscope-ci
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$D/state/ctld
SlurmdSpoolDir=$D/state/d
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmdDebug=verbose
ProctrackType=$PROCTRACK
TaskPlugin=$TASK
PlugStackConfig=$D/etc/plugstack.conf
SelectType=select/cons_tres
SelectTypeParameters=$SELECT_PARAMS
# With CR_Core_Memory a job without --mem would get the whole node: 200 MB per CPU lets the tests'
# concurrent jobs run side by side (ignored with CR_Core).
DefMemPerCPU=200
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
KillWait=10
MinJobAge=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoreFlags=job_comment
JobAcctGatherType=$JOBACCT
JobCompType=jobcomp/none
MpiDefault=none
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
echo "Name=gpu File=/dev/tty[0-3]" >"$D/etc/gres.conf"
# cgroup.conf (next to slurm.conf). Slurm 24.11+ slurmd loads a cgroup plugin whatever ProctrackType says and
# refuses to start without a cgroup filesystem: a chroot needs /sys bind-mounted (tests/integration/slurm_versions.sh).
if [ "$CGROUP" = 1 ]; then
    # ConstrainCores uses cpuset, not a CFS quota; a CPU-throttled test job sets its own quota.
    printf 'CgroupPlugin=%s\nConstrainRAMSpace=yes\nConstrainSwapSpace=no\nConstrainCores=no\nConstrainDevices=no\n' \
        "$CGROUP_PLUGIN" >"$D/etc/cgroup.conf"
else
    rm -f "$D/etc/cgroup.conf"  # Slurm's defaults (autodetect), as before the cgroup mode existed
fi
write_dbd_conf
# plugstack.conf: tests rewrite it between jobs (slurmstepd and srun re-read it at every launch).
PLUGSTACK_ARGS=${STALLSCOPE_PLUGSTACK_ARGS:-}
# The root-side job reader (spank/slurm_job.cc) is built next to the plugin; without job_reader= the plugin
# looks for the installed one and, not finding it, skips the AdminComment write (said in slurmd.log).
JOB_READER=$(dirname "$PLUGIN")/stallscope-slurm-job
case " $PLUGSTACK_ARGS" in
*" job_reader="*) ;;
*) [ -x "$JOB_READER" ] && PLUGSTACK_ARGS="job_reader=$JOB_READER $PLUGSTACK_ARGS" ;;
esac
old_plugstack=$(cat "$D/etc/plugstack.conf.default" 2>/dev/null || true)
# allow_test_env=1: a test cluster; its jobs point the helper at the fake NVML and fixture trees.
echo "optional $PLUGIN helper=$HELPER run_dir=$D/stallscope-run stop_timeout=5 min_interval=1 allow_test_env=1 $PLUGSTACK_ARGS" \
    >"$D/etc/plugstack.conf"
cp "$D/etc/plugstack.conf" "$D/etc/plugstack.conf.default"
# slurmd decides at start-up whether any SPANK plugin has a job_epilog hook; restart it on a change.
[ "$old_plugstack" = "$(cat "$D/etc/plugstack.conf")" ] || stop_pidfile slurmd

boot_munge
boot_db_and_dbd stallscope-ci
start slurmctld "$(command -v slurmctld)" -D -i
wait_for 30 slurmctld scontrol ping || die "slurmctld did not answer within 30 s; see $D/log/slurmctld.log"
start slurmd "$(command -v slurmd)" -D -N "$NODE"
idle() { sinfo -h -n "$NODE" -o %T | grep -qx idle; }
if ! wait_for 40 slurmd idle; then
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    wait_for 10 slurmd idle || die "node $NODE not idle after 50 s ($(sinfo -h -o '%T %E' 2>&1)); see $D/log/slurmd.log and $D/log/slurmctld.log"
fi

echo "dev-cluster: up in $(($(date +%s) - t0)) s; node $NODE idle; job user $CLUSTER_USER; $(slurmd -V); $PROCTRACK"
echo "dev-cluster: export SLURM_CONF=$SLURM_CONF   (or: . $HERE/env.sh)"
echo "dev-cluster: logs in $D/log (slurmd.log has slurmstepd/plugin messages); work dir $D/work"
echo "dev-cluster: plugstack: $(cat "$D/etc/plugstack.conf")"
