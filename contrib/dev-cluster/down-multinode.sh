#!/bin/bash
# Stop what up-multinode.sh started (recorded pids; the slurmstepd of this cluster, found by its
# SLURM_CONF), then remove the namespaces, veths and bridge. Node mounts live only in the slurmd mount
# namespaces and go away with their last process. Idempotent. STALLSCOPE_CLUSTER_PURGE=1 also removes
# $STALLSCOPE_CLUSTER_DIR.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
. "$HERE/multinode-common.sh"
PATH=$PATH:/usr/sbin:/sbin
[ -d "$D" ] || { echo "dev-cluster: nothing at $D"; exit 0; }
if alive slurmctld; then
    scancel --full --quiet --user="$CLUSTER_USER" 2>/dev/null || true
fi
for n in $(node_names); do stop_pidfile "slurmd-$n"; done
for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
        kill -KILL "$p" 2>/dev/null || true
    fi
done
# Whatever still runs inside our namespaces (a job's helper that outlived its stepd) goes too.
for i in $(seq 1 "$NODES"); do
    ns=$(netns_name "$i")
    ip netns list | grep -qw "$ns" || continue
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
done
stop_pidfile slurmctld
stop_pidfile slurmdbd
stop_pidfile mariadbd
stop_pidfile munged
for i in $(seq 1 "$NODES"); do
    ns=$(netns_name "$i")
    ip link del "$(veth_name "$i")" 2>/dev/null || true
    ip netns list | grep -qw "$ns" && ip netns del "$ns"
done
ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE"
if [ "${STALLSCOPE_CLUSTER_PURGE:-0}" = 1 ]; then
    rm -rf "$D"
    echo "dev-cluster: multi-node down, $D removed"
else
    echo "dev-cluster: multi-node down (state kept in $D)"
fi
