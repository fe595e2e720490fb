#!/bin/bash
# Real Alertmanager (cluster mode off) receives our v2 alerts: they appear in GET /api/v2/alerts with
# our labels, a resolved one disappears, close() resolves the rest.
# Usage: alertmanager_test.sh SINK_DRIVER
DRIVER=$1
source "$(dirname "$0")/common.sh"
require prometheus-alertmanager prometheus-alertmanager
require curl curl

cat >"$WORK/alertmanager.yml" <<'YAML'
route:
  receiver: blackhole
  group_wait: 1s
receivers:
  - name: blackhole
YAML
mkdir "$WORK/data" "$WORK/handshake"
start_daemon /-/ready "$WORK/alertmanager.log" prometheus-alertmanager \
    --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/data" \
    --web.listen-address=127.0.0.1:@PORT@ --cluster.listen-address=
API="http://127.0.0.1:$PORT/api/v2/alerts"

alerts() { curl -fsS --max-time 5 "$API" >"$WORK/alerts.json"; }
has() { grep -qF -- "$1" "$WORK/alerts.json"; }
wait_file() {
    local i
    for i in $(seq 1 300); do [ -f "$1" ] && return 0; sleep 0.1; done
    fail "timed out waiting for $1"
}
# Alertmanager answers GET with compact JSON; both alerts carry these labels.
LABELS=('"host":"gpu-node-07"' '"job_id":"4242"' '"step_id":"0"' '"scheduler":"slurm"'
        '"cluster":"rack \"7\" \\ row 2"')

timeout 60 "$DRIVER" alert "http://127.0.0.1:$PORT" "$WORK/handshake" &
driver=$!
DAEMON_PIDS+=("$driver")
wait_file "$WORK/handshake/fired"
alerts
has '"alertname":"StallscopeFabricCongestion"' || { cat "$WORK/alerts.json" >&2; fail "fabric alert not in Alertmanager"; }
has '"alertname":"StallscopeGpuThermalThrottle"' || fail "GPU alert not in Alertmanager"
has '"category":"fabric"' && has '"severity":"warning"' && has '"subject":"mlx5_0/1"' &&
    has '"reason":"fabric_congestion"' || fail "fabric alert labels incomplete: $(cat "$WORK/alerts.json")"
for l in "${LABELS[@]}"; do has "$l" || fail "label $l missing: $(cat "$WORK/alerts.json")"; done
has '"state":"active"' || fail "alert not active"
has '"summary":"mlx5_0/1: 1200 CNPs/s handled' || fail "summary annotation missing"

touch "$WORK/handshake/go"
wait_file "$WORK/handshake/resolved"
alerts
has '"alertname":"StallscopeFabricCongestion"' && fail "resolved fabric alert still listed: $(cat "$WORK/alerts.json")"
has '"alertname":"StallscopeGpuThermalThrottle"' || fail "GPU alert resolved too early"

touch "$WORK/handshake/close"
wait "$driver" || fail "sink driver failed"
alerts
has '"alertname":"Stallscope' && fail "close() left alerts active: $(cat "$WORK/alerts.json")"
echo "PASS: Alertmanager received, listed and resolved stallscope alerts"
