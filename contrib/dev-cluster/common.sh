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

die() { echo "dev-cluster: $*" >&2; exit 1; }

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
