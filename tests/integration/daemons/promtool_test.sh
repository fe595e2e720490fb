#!/bin/bash
# promtool lints our exposition text, checks and unit-tests the contrib alerting rules, and checks the
# PromQL of every Grafana panel; every stallscope metric the rules and dashboard use must exist.
# Usage: promtool_test.sh SINK_DRIVER SOURCE_ROOT
DRIVER=$1
SRC=$2
source "$(dirname "$0")/common.sh"
require promtool prometheus
RULES="$SRC/contrib/prometheus/stallscope-alerts.yml"
DASHBOARD="$SRC/contrib/grafana/stallscope-dashboard.json"

"$DRIVER" textfile "$WORK/stallscope.prom" >/dev/null
# promtool check metrics prints one line per lint problem (missing HELP, counter without _total,
# non-base units, ...) and exits non-zero on any.
promtool check metrics <"$WORK/stallscope.prom" >"$WORK/lint.txt" 2>&1 || { cat "$WORK/lint.txt" >&2; fail "promtool check metrics"; }

promtool check rules "$RULES" || fail "promtool check rules"
(cd "$(dirname "$0")" && promtool test rules stallscope-alerts.test.yml) || fail "promtool test rules"

# Dashboard PromQL, checked by promtool as recording rules.
"$DRIVER" dashboard-exprs "$DASHBOARD" >"$WORK/exprs.txt" || fail "dashboard JSON unreadable"
{
    echo "groups:"
    echo "  - name: dashboard"
    echo "    rules:"
    n=0
    while IFS= read -r expr; do
        n=$((n + 1))
        echo "      - record: dashboard:expr_$n"
        printf '        expr: %s\n' "$(printf '%s' "$expr" | sed "s/'/''/g; s/^/'/; s/\$/'/")"
    done <"$WORK/exprs.txt"
} >"$WORK/dashboard-rules.yml"
promtool check rules "$WORK/dashboard-rules.yml" >"$WORK/dash.txt" 2>&1 || { cat "$WORK/dash.txt" >&2; fail "dashboard PromQL"; }

missing=0
for metric in $(grep -ho 'stallscope_[a-z_]*' "$RULES" "$DASHBOARD" | sort -u); do
    grep -q "^# TYPE $metric " "$WORK/stallscope.prom" || { echo "unknown metric: $metric" >&2; missing=1; }
done
[ "$missing" -eq 0 ] || fail "rules or dashboard use metrics the textfile sink does not write"
echo "PASS: exposition lint-clean, $(grep -c 'alert:' "$RULES") alert rules valid and tested, $(wc -l <"$WORK/exprs.txt") dashboard queries valid"
