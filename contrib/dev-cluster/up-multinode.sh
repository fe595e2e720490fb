#!/bin/bash
# Boot a private multi-node Slurm 22.05 cluster on this machine, as root: slurmctld, slurmdbd, MariaDB
# and munged on the host, and STALLSCOPE_MULTINODE_NODES (default 3) slurmd "hosts" n1..nN, each in
# its own network namespace (veth on a private bridge), UTS namespace (hostname nX) and mount
# namespace. In its mount namespace each node sees its own directory $D/nodes/nX/local on the common
# path $D/local: its slurmd spool, log and pid, the plugin's run_dir, and its fixture tree
# ($D/local/fixture/{sys,proc,nvml.json}), so one STALLSCOPE_SYSFS_ROOT / STALLSCOPE_PROCFS_ROOT /
# STALLSCOPE_FAKE_NVML_FIXTURE in a job's environment resolves to each node's own tree.
#
# Traffic stays between the namespaces and the host side of the bridge (STALLSCOPE_MULTINODE_SUBNET,
# default 10.77.0: host .1, nX .(10+X)); nothing is routed anywhere else. Node trees: a copy of
# fixtures/nodes/dgx-h100 each; tests modify them (tests/integration/multinode_tests.sh).
#
#   STALLSCOPE_CLUSTER_DIR=/tmp/cluster-multinode STALLSCOPE_CLUSTER_PORT_BASE=18817 \
#   STALLSCOPE_PLUGIN=build/spank/stallscope.so STALLSCOPE_HELPER=build/helper/stallscope \
#       contrib/dev-cluster/up-multinode.sh
#   contrib/dev-cluster/down-multinode.sh      (same environment)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
. "$HERE/common.sh"
. "$HERE/multinode-common.sh"
t0=$(date +%s)

[ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, slurmd, job uids)"
PATH=$PATH:/usr/sbin:/sbin
for b in ip unshare nsenter munged mariadbd mariadb-install-db mariadb slurmdbd slurmctld slurmd sacctmgr sinfo; do
    command -v "$b" >/dev/null 2>&1 || die "'$b' not found; run contrib/install-deps.sh (as root) first"
done
newest() { ls -t $1 2>/dev/null | head -n 1; }
PLUGIN=${STALLSCOPE_PLUGIN:-$(newest "$REPO/build*/spank/stallscope.so")}
HELPER=${STALLSCOPE_HELPER:-$(newest "$REPO/build*/helper/stallscope")}
[ -n "$PLUGIN" ] && [ -f "$PLUGIN" ] || die "no stallscope.so; build it or set STALLSCOPE_PLUGIN"
[ -n "$HELPER" ] || HELPER=/usr/bin/stallscope

mkdir -p "$D/etc" "$D/log" "$D/pids" "$D/run" "$D/state/ctld" "$D/munge" "$D/work" "$D/local"
chmod 755 "$D" "$D/etc" "$D/munge" "$D/run" "$D/local"
chmod 1777 "$D/work"
ensure_cluster_user

# ---- per-node trees ------------------------------------------------------------------------------
FIXTURE=$REPO/fixtures/nodes/dgx-h100
for n in $(node_names); do
    L=$D/nodes/$n/local
    mkdir -p "$L/spool" "$L/stallscope-run"
    chmod 755 "$D/nodes" "$D/nodes/$n" "$L"
    if [ ! -d "$L/fixture" ]; then
        cp -a "$FIXTURE" "$L/fixture.tmp" && mv "$L/fixture.tmp" "$L/fixture"
    fi
done

# ---- configuration -------------------------------------------------------------------------------
NODELINES=""
for i in $(seq 1 "$NODES"); do
    NODELINES="${NODELINES}NodeName=n$i NodeAddr=$(node_addr "$i") CPUs=12 RealMemory=1000 Gres=gpu:4 State=UNKNOWN
"
done
cat >"$D/etc/slurm.conf" <<CONF
ClusterName=stallscope-mn
SlurmctldHost=$(hostname -s)($HOST_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$D/state/ctld
SlurmdSpoolDir=$D/local/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/local/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmctldDebug=debug
SlurmdLogFile=$D/local/slurmd.log
SlurmdDebug=verbose
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
PlugStackConfig=$D/etc/plugstack.conf
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
KillWait=10
MinJobAge=30
MessageTimeout=20
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
${NODELINES}PartitionName=debug Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP
CONF
# Without NodeName= a slurmd started with -N under another hostname counts 0 configured GPUs.
echo "NodeName=n[1-$NODES] Name=gpu File=/dev/tty[0-3]" >"$D/etc/gres.conf"
write_dbd_conf
# allow_test_env=1: a test cluster; its jobs point each node's helper at that node's fixture tree and the
# fake NVML (STALLSCOPE_* from the job env, ignored by a production plugstack).
PLUGSTACK_ARGS=${STALLSCOPE_PLUGSTACK_ARGS:-}
JOB_READER=$(dirname "$PLUGIN")/stallscope-slurm-job   # the root-side job reader, built beside the plugin
case " $PLUGSTACK_ARGS" in
*" job_reader="*) ;;
*) [ -x "$JOB_READER" ] && PLUGSTACK_ARGS="job_reader=$JOB_READER $PLUGSTACK_ARGS" ;;
esac
echo "optional $PLUGIN helper=$HELPER run_dir=$D/local/stallscope-run stop_timeout=10 min_interval=1 allow_test_env=1 $PLUGSTACK_ARGS" \
    >"$D/etc/plugstack.conf"

# ---- network: bridge on the host, one veth + namespace per node ----------------------------------
if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$HOST_ADDR/24" dev "$BRIDGE"
fi
ip link set "$BRIDGE" up
for i in $(seq 1 "$NODES"); do
    ns=$(netns_name "$i")
    if ! ip netns list | grep -qw "$ns"; then
        ip netns add "$ns"
        ip link add "$(veth_name "$i")" type veth peer name eth0 netns "$ns"
        ip link set "$(veth_name "$i")" master "$BRIDGE" up
        ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    fi
done

# ---- daemons on the host -------------------------------------------------------------------------
boot_munge
boot_db_and_dbd stallscope-mn
start slurmctld "$(command -v slurmctld)" -D -i
wait_for 30 slurmctld scontrol ping || die "slurmctld did not answer within 30 s; see $D/log/slurmctld.log"

# ---- one slurmd per namespace --------------------------------------------------------------------
# nsenter (the node's network namespace; not `ip netns exec`, which remounts /sys without
# /sys/fs/cgroup) -> unshare (mount + UTS) -> sh (hostname, bind mount) -> exec slurmd: one pid all
# along, recorded with slurmd as its binary (stop_pidfile checks it).
# Exec'd under the name "slurmd" (Debian's is a link to slurmd-wlm): Slurm decides by program name that
# it runs in slurmd, and only then loads the node's GRES from gres.conf.
SLURMD_CMD=$(command -v slurmd)
SLURMD=$(readlink -f "$SLURMD_CMD")
for i in $(seq 1 "$NODES"); do
    n=n$i
    alive "slurmd-$n" && continue
    (cd "$D/run" && exec setsid nsenter --net="/run/netns/$(netns_name "$i")" unshare --mount --uts --propagation private \
        sh -c 'hostname "$1" && mount --bind "$2" "$3" && exec "$4" -D -N "$1"' sh "$n" "$D/nodes/$n/local" \
        "$D/local" "$SLURMD_CMD" >>"$D/log/slurmd-$n.out" 2>&1 </dev/null) &
    echo $! >"$D/pids/slurmd-$n.pid"
    echo "$SLURMD" >"$D/pids/slurmd-$n.exe"
done
all_idle() { [ "$(sinfo -h -o '%T %D' | awk '$1 == "idle" {print $2}')" = "$NODES" ]; }
if ! wait_for 40 slurmd all_idle; then
    scontrol update nodename="n[1-$NODES]" state=resume >/dev/null 2>&1 || true
    wait_for 15 slurmd all_idle ||
        die "nodes not idle after 55 s ($(sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ';')); see $D/nodes/n*/local/slurmd.log"
fi
echo "dev-cluster: multi-node up in $(($(date +%s) - t0)) s: n1..n$NODES idle; job user $CLUSTER_USER"
echo "dev-cluster: export SLURM_CONF=$SLURM_CONF; node logs $D/nodes/nX/local/slurmd.log"
