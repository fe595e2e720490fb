#!/bin/sh
# Stop exactly what up.sh started (pids recorded in $STALLSCOPE_CLUSTER_DIR/pids) plus the slurmstepd
# processes of this cluster (found by SLURM_CONF in their environment). Idempotent. Keeps the state
# (database, munge key) for a fast next boot; STALLSCOPE_CLUSTER_PURGE=1 removes the directory.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/common.sh"
PATH=$PATH:/usr/sbin:/sbin
[ -d "$D" ] || { echo "dev-cluster: nothing at $D"; exit 0; }
if alive slurmctld; then
    scancel --full --quiet --user="$CLUSTER_USER" 2>/dev/null || true
    scancel --full --quiet --user=root 2>/dev/null || true
fi
stop_pidfile slurmd
# slurmstepd of this cluster outlive slurmd; only those whose environment names our slurm.conf.
for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
        kill -KILL "$p" 2>/dev/null || true
    fi
done
stop_pidfile slurmctld
stop_pidfile slurmdbd
stop_pidfile mariadbd
stop_pidfile munged
if [ "${STALLSCOPE_CLUSTER_PURGE:-0}" = 1 ]; then
    rm -rf "$D"
    echo "dev-cluster: down, $D removed"
else
    echo "dev-cluster: down (state kept in $D; STALLSCOPE_CLUSTER_PURGE=1 to remove)"
fi
