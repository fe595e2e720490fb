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

newest() { ls -t $1 2>/dev/null | head -n 1; }
PLUGIN=${STALLSCOPE_PLUGIN:-$(newest "$REPO/build*/spank/stallscope.so")}
HELPER=${STALLSCOPE_HELPER:-$(newest "$REPO/build*/helper/stallscope")}
[ -n "$PLUGIN" ] && [ -f "$PLUGIN" ] || die "no stallscope.so; build it (ninja -C build spank/stallscope.so) or set STALLSCOPE_PLUGIN"
[ -n "$HELPER" ] || HELPER=/usr/bin/stallscope

mkdir -p "$D/etc" "$D/log" "$D/pids" "$D/run" "$D/state/ctld" "$D/state/d" "$D/munge" "$D/stallscope-run" "$D/work"
chmod 755 "$D" "$D/etc" "$D/munge" "$D/run"
chmod 1777 "$D/work"

# The job user: unprivileged, so the plugin's uid switching is really exercised.
if ! id "$CLUSTER_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir "$D/work" --shell /bin/sh "$CLUSTER_USER" ||
        die "cannot create job user $CLUSTER_USER"
fi

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
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
echo "Name=gpu File=/dev/tty[0-3]" >"$D/etc/gres.conf"
DBPASS=stallscope-ci
umask 077
cat >"$D/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$D/run/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DBPASS
StorageLoc=slurm_acct_db
CONF
umask 022
# plugstack.conf: tests rewrite it between jobs (slurmstepd and srun re-read it at every launch).
PLUGSTACK_ARGS=${STALLSCOPE_PLUGSTACK_ARGS:-}
old_plugstack=$(cat "$D/etc/plugstack.conf.default" 2>/dev/null || true)
# allow_test_env=1: a test cluster; its jobs point the helper at the fake NVML and fixture trees.
echo "optional $PLUGIN helper=$HELPER run_dir=$D/stallscope-run stop_timeout=5 min_interval=1 allow_test_env=1 $PLUGSTACK_ARGS" \
    >"$D/etc/plugstack.conf"
cp "$D/etc/plugstack.conf" "$D/etc/plugstack.conf.default"
# slurmd decides at start-up whether any SPANK plugin has a job_epilog hook; restart it on a change.
[ "$old_plugstack" = "$(cat "$D/etc/plugstack.conf")" ] || stop_pidfile slurmd

# ---- munge ---------------------------------------------------------------------------------------
# Slurm 22.05's slurmdbd clients (sacctmgr, sacct) ignore AuthInfo=socket= and always talk to the
# default socket, so the cluster uses /run/munge/munge.socket.2: a munged already serving it is reused
# (never touched), otherwise up.sh starts one with a private key and down.sh stops it.
MUNGE_SOCK=/run/munge/munge.socket.2
if ! munge -n >/dev/null 2>&1; then
    if [ ! -f "$D/munge/munge.key" ]; then
        dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
        chmod 400 "$D/munge/munge.key"
    fi
    mkdir -p /run/munge && chmod 755 /run/munge
    start munged "$(command -v munged)" -F --force --key-file="$D/munge/munge.key" --socket="$MUNGE_SOCK" \
        --pid-file="$D/run/munged.pid" --seed-file="$D/munge/seed" --log-file="$D/log/munged.log"
    wait_for 10 munge munge -n || die "munged did not come up; see $D/log/munged.log"
fi

# ---- MariaDB on a private port/socket -------------------------------------------------------------
SOCK=$D/run/mysql.sock
if [ ! -d "$D/db/mysql" ]; then
    mariadb-install-db --no-defaults --datadir="$D/db" --user=root --skip-test-db \
        --auth-root-authentication-method=socket >"$D/log/mariadb-install.log" 2>&1 ||
        die "mariadb-install-db failed; see $D/log/mariadb-install.log"
fi
start mariadbd "$(command -v mariadbd)" --no-defaults --datadir="$D/db" --user=root --port="$DB_PORT" \
    --bind-address=127.0.0.1 --socket="$SOCK" --pid-file="$D/run/mariadbd.pid" --skip-log-bin \
    --innodb-buffer-pool-size=64M --innodb-log-file-size=16M --innodb-lock-wait-timeout=900 \
    --log-error="$D/log/mariadbd.log"
wait_for 30 mariadb mariadb --no-defaults -S "$SOCK" -uroot -e 'select 1' ||
    die "mariadbd did not come up; see $D/log/mariadbd.log"
mariadb --no-defaults -S "$SOCK" -uroot -e "
  CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DBPASS';
  CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "cannot create the slurm DB user"

# ---- slurmdbd, accounts, slurmctld, slurmd --------------------------------------------------------
start slurmdbd "$(command -v slurmdbd)" -D
wait_for 60 slurmdbd sacctmgr -n list cluster ||
    die "slurmdbd did not answer within 60 s; see $D/log/slurmdbd.log"
if ! sacctmgr -n -P list cluster format=cluster | grep -qx stallscope-ci; then
    sacctmgr -i add cluster stallscope-ci >/dev/null
    sacctmgr -i add account ci Description=ci Organization=ci >/dev/null
    sacctmgr -i add user root,"$CLUSTER_USER" account=ci >/dev/null
fi
start slurmctld "$(command -v slurmctld)" -D -i
wait_for 30 slurmctld scontrol ping || die "slurmctld did not answer within 30 s; see $D/log/slurmctld.log"
start slurmd "$(command -v slurmd)" -D -N "$NODE"
idle() { sinfo -h -n "$NODE" -o %T | grep -qx idle; }
if ! wait_for 40 slurmd idle; then
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    wait_for 10 slurmd idle || die "node $NODE not idle after 50 s ($(sinfo -h -o '%T %E' 2>&1)); see $D/log/slurmd.log and $D/log/slurmctld.log"
fi

echo "dev-cluster: up in $(($(date +%s) - t0)) s; node $NODE idle; job user $CLUSTER_USER"
echo "dev-cluster: export SLURM_CONF=$SLURM_CONF   (or: . $HERE/env.sh)"
echo "dev-cluster: logs in $D/log (slurmd.log has slurmstepd/plugin messages); work dir $D/work"
echo "dev-cluster: plugstack: $(cat "$D/etc/plugstack.conf")"
