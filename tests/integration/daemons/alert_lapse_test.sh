#!/bin/bash
# The periodic CLI against a real Alertmanager, with Prometheus' semantics (issue 39): a `--count` run
# that ends while the fault persists leaves its alert active (endsAt lapses ~4 min later, nothing is
# resolved on exit); a run that sees the fault clear resolves it. The fault: an RDMA port of a copied
# fixture node that goes DOWN after being ACTIVE (fabric_port_down), flipped between samples.
# Usage: alert_lapse_test.sh SINK_DRIVER STALLSCOPE_BIN FIXTURES_DIR
DRIVER=$1
STALLSCOPE=$2
FIXTURES=$3
source "$(dirname "$0")/common.sh"
require prometheus-alertmanager prometheus-alertmanager
require curl curl
[ -d "$FIXTURES/nodes/roce/sys" ] || skip "fixtures/nodes/roce missing"

cat >"$WORK/alertmanager.yml" <<'YAML'
route:
  receiver: blackhole
  group_wait: 1s
receivers:
  - name: blackhole
YAML
mkdir "$WORK/data"
start_daemon /-/ready "$WORK/alertmanager.log" prometheus-alertmanager \
    --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/data" \
    --web.listen-address=127.0.0.1:@PORT@ --cluster.listen-address=
AM="http://127.0.0.1:$PORT"

cp -r "$FIXTURES/nodes/roce" "$WORK/node"
PORT_DIR="$WORK/node/sys/class/infiniband/mlx5_0/ports/1"
port_up() { echo "4: ACTIVE" >"$PORT_DIR/state"; echo "5: LinkUp" >"$PORT_DIR/phys_state"; }
port_down() { echo "1: DOWN" >"$PORT_DIR/state"; echo "3: Disabled" >"$PORT_DIR/phys_state"; }
alerts() { curl -fsS --max-time 5 "$AM/api/v2/alerts" >"$WORK/alerts.json"; }
port_down_alert() { grep -o '"alertname":"StallscopeFabricPortDown"' "$WORK/alerts.json" | head -1; }

# run_cli COUNT ACTION... -- sample every second; after sample N (N = 1, 2, ...) run ACTION N, if given.
run_cli() {
    local count=$1 n=0 line
    shift
    exec 3< <(STALLSCOPE_PROCFS_ROOT="$WORK/node/proc" STALLSCOPE_SYSFS_ROOT="$WORK/node/sys" \
        STALLSCOPE_ETHTOOL_ROOT="$WORK/node/ethtool" \
        timeout 60 "$STALLSCOPE" --interval-seconds 1 --count "$count" --json \
        --alert-webhook-url "$AM" 2>"$WORK/cli.err"; echo "exit $?")
    while IFS= read -r line <&3; do
        case $line in
        "exit "*) [ "${line#exit }" -eq 0 ] || { cat "$WORK/cli.err" >&2; fail "stallscope exited ${line#exit }"; } ;;
        *) n=$((n + 1)); [ $n -le $# ] && ${!n} ;;
        esac
    done
    exec 3<&-
    grep -i alertmanager "$WORK/cli.err" >&2 && fail "the CLI reported Alertmanager trouble" || true
}

# 1. ACTIVE, then DOWN: fires at sample 2; the run ends with the port still down.
port_up
run_cli 2 port_down
alerts
[ -n "$(port_down_alert)" ] || { cat "$WORK/alerts.json" >&2; fail "no StallscopeFabricPortDown after a --count run on a port that is still down (resolved on exit?)"; }
grep -q '"state":"active"' "$WORK/alerts.json" || fail "the alert is not active: $(cat "$WORK/alerts.json")"
# endsAt is bounded: at most 4 x max(60 s, interval) ahead, so a monitor that is gone lets it lapse.
ends=$(grep -o '"endsAt":"[^"]*"' "$WORK/alerts.json" | head -1 | cut -d'"' -f4)
left=$(( $(date -d "$ends" +%s) - $(date +%s) ))
[ "$left" -gt 120 ] && [ "$left" -le 245 ] || fail "endsAt $ends is ${left}s ahead, expected about 240 s"
echo "after the --count run: StallscopeFabricPortDown still active, endsAt ${left}s ahead"

# 2. The fault clears while a run watches: ACTIVE, DOWN (fires again, same alert), ACTIVE (resolved).
port_up
run_cli 3 port_down port_up
alerts
[ -z "$(port_down_alert)" ] || fail "the port is up again but the alert is still listed: $(cat "$WORK/alerts.json")"
echo "PASS: the CLI's alert outlived its --count run and resolved when the fault cleared"
