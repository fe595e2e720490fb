# Shared by the real-daemon tests (sourced). Loopback only; every wait bounded; daemons we start are
# killed by PID on exit. Exit 77 = skipped (meson's convention) when a daemon binary is missing.
set -euo pipefail

SKIP=77
skip() { echo "SKIP: $*"; exit "$SKIP"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stallscope-daemons.XXXXXX")
DAEMON_PIDS=()
cleanup() {
    local pid
    for pid in "${DAEMON_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${DAEMON_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# require BINARY DEBIAN_PACKAGE
require() {
    command -v "$1" >/dev/null 2>&1 || skip "$1 not found (Debian package: $2)"
}

# start_daemon READY_PATH LOG COMMAND... -- COMMAND may contain @PORT@; sets PORT once
# http://127.0.0.1:PORT/READY_PATH answers 2xx. Retries on a new port if the daemon dies (port race).
start_daemon() {
    local ready=$1 log=$2 attempt pid i
    shift 2
    for attempt in 1 2 3; do
        PORT=$("$DRIVER" free-port)
        "${@//@PORT@/$PORT}" >"$log" 2>&1 &
        pid=$!
        DAEMON_PIDS+=("$pid")
        for i in $(seq 1 150); do
            if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$PORT$ready" 2>/dev/null; then
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    cat "$log" >&2
    fail "$1 did not come up on 127.0.0.1 (log above)"
}

# expect_line FILE LINE -- the exact line must be in FILE
expect_line() {
    grep -qxF -- "$2" "$1" && return 0
    { grep -F -- "${2%%[{ ]*}" "$1" || true; } | head -5 >&2
    fail "missing line in $(basename "$1"): $2"
}
