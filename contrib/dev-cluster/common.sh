# Shared settings for up.sh / down.sh / env.sh (sourced, not executed).
# Everything lives under STALLSCOPE_CLUSTER_DIR; private ports keep a system Slurm (6817-6819) and a
# system MariaDB (3306) undisturbed.
D=${STALLSCOPE_CLUSTER_DIR:-/tmp/stallscope-cluster}
CLUSTER_USER=${STALLSCOPE_CLUSTER_USER:-stallscope-ci}
CTLD_PORT=${STALLSCOPE_CLUSTER_PORT_BASE:-17817}
SLURMD_PORT=$((CTLD_PORT + 1))
DBD_PORT=$((CTLD_PORT + 2))
DB_PORT=$((CTLD_PORT + 3))
NODE=$(hostname -s)
export SLURM_CONF="$D/etc/slurm.conf"
DBPASS=stallscope-ci

die() { echo "dev-cluster: $*" >&2; exit 1; }

# The job user: unprivileged, so the plugin's uid switching is really exercised. Two clusters booting at
# once (tests/run-all.sh runs them side by side) may both find it missing: the loser's useradd fails
# because the user now exists, which is what it wanted.
ensure_cluster_user() {
    id "$CLUSTER_USER" >/dev/null 2>&1 && return 0
    err=$(useradd --system --no-create-home --home-dir "$D/work" --shell /bin/sh "$CLUSTER_USER" 2>&1) ||
        id "$CLUSTER_USER" >/dev/null 2>&1 || die "cannot create job user $CLUSTER_USER: $err"
}

# Kill one daemon that up.sh started, by its recorded pid, only if that pid still runs the same binary.
stop_pidfile() {
    name=$1
    pf="$D/pids/$name.pid"
    [ -f "$pf" ] || return 0
    pid=$(cat "$pf")
    exe=$(cat "$D/pids/$name.exe" 2>/dev/null || echo "")
    if [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        i=0
        while [ -d "/proc/$pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$pf" "$D/pids/$name.exe"
}

# Is the daemon recorded under this name alive?
alive() {
    pf="$D/pids/$1.pid"
    [ -f "$pf" ] && [ -d "/proc/$(cat "$pf")" ] &&
        [ "$(readlink "/proc/$(cat "$pf")/exe" 2>/dev/null)" = "$(cat "$D/pids/$1.exe" 2>/dev/null)" ]
}

# start NAME BINARY ARGS...: run a foreground daemon in the background from a scratch cwd (daemons
# inherit their cwd, which shows up in hook logs), log to $D/log/NAME.log, record pid and binary.
start() {
    name=$1
    shift
    if alive "$name"; then return 0; fi
    (cd "$D/run" && exec setsid "$@" >>"$D/log/$name.log" 2>&1 </dev/null) &
    echo $! >"$D/pids/$name.pid"
    readlink -f "$1" >"$D/pids/$name.exe"
}

# wait_for SECONDS WHAT CMD...: poll CMD every 0.2 s.
wait_for() {
    limit=$1
    what=$2
    shift 2
    end=$(($(date +%s) + limit))
    while ! "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.2
    done
    return 0
}

# Slurm 22.05's slurmdbd clients (sacctmgr, sacct) ignore AuthInfo=socket= and always talk to the
# default socket, so the cluster uses /run/munge/munge.socket.2: a munged already serving it is reused
# (never touched), otherwise up.sh starts one with a private key and down.sh stops it.
boot_munge() {
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
}

# boot_db_and_dbd CLUSTER: MariaDB on a private port/socket, slurmdbd ($D/etc/slurmdbd.conf, see
# write_dbd_conf), and the cluster's account, root and the job user in it.
boot_db_and_dbd() {
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
    # The database is created here, not by slurmdbd: slurmdbd creates a missing one and then reconnects
    # on the same MYSQL handle, which the MariaDB 11.8 client library (Debian 13/unstable) leaves broken:
    # every query then fails with "5027 Number of columns in result (=1) set execeeds maxmimum allowed
    # number of columns (=0)" and slurmdbd dies in _check_mysql_concat_is_sane. A handle that connected
    # the first time is fine, so an existing database avoids the bug on every release.
    mariadb --no-defaults -S "$SOCK" -uroot -e "
      CREATE DATABASE IF NOT EXISTS slurm_acct_db;
      CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DBPASS';
      CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';" || die "cannot create the slurm DB user"

    # slurmdbd and the accounts
    start slurmdbd "$(command -v slurmdbd)" -D
    wait_for 60 slurmdbd sacctmgr -n list cluster ||
        die "slurmdbd did not answer within 60 s; see $D/log/slurmdbd.log"
    if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$1"; then
        sacctmgr -i add cluster "$1" >/dev/null
        sacctmgr -i add account ci Description=ci Organization=ci >/dev/null
        sacctmgr -i add user root,"$CLUSTER_USER" account=ci >/dev/null
    fi
}

# slurmdbd.conf (0600) for the private MariaDB.
write_dbd_conf() {
    (
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
    )
}
