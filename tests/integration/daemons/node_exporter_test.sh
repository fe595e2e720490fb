#!/bin/bash
# Real node_exporter reads our textfile: every series we wrote is scraped, values and escaped labels
# survive its parser, and node_textfile_scrape_error is 0. Optionally the same through the CLI on a
# fixture node, and the big node (dgx-h100 with the fake libnvidia-ml: GPU depth series) with its series
# count.  Usage: node_exporter_test.sh SINK_DRIVER [STALLSCOPE_BIN FIXTURES_DIR [FAKE_NVML]]
DRIVER=$1
STALLSCOPE=${2:-}
FIXTURES=${3:-}
FAKE_NVML=${4:-}
source "$(dirname "$0")/common.sh"
require prometheus-node-exporter prometheus-node-exporter
require curl curl

mkdir "$WORK/textfile"
expected=$("$DRIVER" textfile "$WORK/textfile/stallscope.prom")
[ "$expected" -eq 1687 ] || fail "driver wrote $expected series, the documented DGX bound is 1687"

start_daemon /metrics "$WORK/node_exporter.log" prometheus-node-exporter \
    --web.listen-address=127.0.0.1:@PORT@ --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$WORK/textfile"
scrape() { curl -fsS --max-time 10 "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics"; }
scrape

grep -qx 'node_textfile_scrape_error 0' "$WORK/metrics" || { tail -5 "$WORK/node_exporter.log" >&2; fail "node_exporter could not parse our textfile"; }
got=$(grep -c '^stallscope_' "$WORK/metrics" || true)
[ "$got" -eq "$expected" ] || fail "node_exporter exposes $got stallscope series, we wrote $expected"

# node_exporter re-renders with labels sorted by name; the cluster label checks escaping end to end.
# job_id/step_id are on stallscope_job_info only (a per-job label multiplies every series by the jobs).
CTX=('cluster="rack \"7\" \\ row 2"' 'host="gpu-node-07"' 'scheduler="slurm"')
# expect NAME VALUE [LABEL...] -- the exact line node_exporter prints
expect() {
    local name=$1 value=$2
    shift 2
    expect_line "$WORK/metrics" "$name{$(printf '%s\n' "${CTX[@]}" "$@" | LC_ALL=C sort | paste -sd, -)} $value"
}
expect stallscope_profile_label 1 'label="SLOW"'
expect stallscope_profile_label 0 'label="FAST"'
expect stallscope_profile_confidence_ratio 0.8
expect stallscope_alerts_active 21 'severity="warning"'
expect stallscope_profile_reason_active 1 'code="fabric_congestion"' 'category="fabric"' 'severity="warning"' \
    'subject="mlx5_0/1"'
expect stallscope_gpu_power_watts 403.5 'gpu="3"' 'uuid="GPU-00000003"'
expect stallscope_gpu_xid_errors_total 1 'gpu="2"' 'uuid="GPU-00000002"'
expect stallscope_rdma_hw_events_total 14 'counter="rp_cnp_handled"' 'device="mlx5_4"' 'port="1"'
expect stallscope_rdma_port_transmit_bytes_total 8e+09 'device="mlx5_0"' 'port="1"'
expect stallscope_network_pause_duration_seconds_total 1.5 'direction="tx"' 'interface="ens5np0"' 'priority="3"'
grep -q '^# TYPE stallscope_network_pause_frames_total counter$' "$WORK/metrics" || fail "pause frames not a counter"
# GPU depth and the job cgroup (issue 39), as node_exporter serves them.
expect stallscope_job_info 1 'job_id="4242"' 'scope="step"' 'step_id="0"'
expect stallscope_gpu_sm_active_ratio 0.125 'gpu="1"' 'uuid="GPU-00000001"'
expect stallscope_gpu_nvlink_errors_total 21 'gpu="3"' 'kind="crc"' 'uuid="GPU-00000003"'
expect stallscope_gpu_foreign_processes 2 'gpu="0"' 'uuid="GPU-00000000"'
expect stallscope_gpu_foreign_process_memory_bytes 1.073741824e+09 'gpu="0"' 'uuid="GPU-00000000"'
expect stallscope_job_oom_kills_total 1
expect stallscope_job_pressure_ratio 0.5 'kind="some"' 'resource="cpu"' 'window="10s"'
[ "$(grep -c '^stallscope_[a-z_]*{[^}]*job_id=' "$WORK/metrics")" -eq 1 ] || fail "job_id is a label of more than stallscope_job_info"

# Through the CLI, when it and the RoCE fixture exist: a second file next to ours must not break the
# collector (families merge across files only when HELP/TYPE agree).
if [ -n "$STALLSCOPE" ] && [ -x "$STALLSCOPE" ] && [ -d "$FIXTURES/nodes/roce/sys" ]; then
    STALLSCOPE_PROCFS_ROOT="$FIXTURES/nodes/roce/proc" STALLSCOPE_SYSFS_ROOT="$FIXTURES/nodes/roce/sys" \
        STALLSCOPE_ETHTOOL_ROOT="$FIXTURES/nodes/roce/ethtool" \
        timeout 30 "$STALLSCOPE" --interval-seconds 0.1 --count 2 --json \
        --prometheus-textfile "$WORK/textfile/cli.prom" >"$WORK/cli.json" 2>"$WORK/cli.err" ||
        { cat "$WORK/cli.err" >&2; fail "stallscope CLI with --prometheus-textfile failed"; }
    [ -f "$WORK/textfile/cli.prom" ] || fail "the CLI left no textfile (it must keep its last one)"
    scrape
    expect_line "$WORK/metrics" 'node_textfile_scrape_error 0'
    [ "$(grep -c '^stallscope_build_info{' "$WORK/metrics")" -eq 2 ] || fail "CLI textfile not scraped"
    grep -q '^stallscope_rdma_port_receive_bytes_total{.*device="' "$WORK/metrics" || fail "no RDMA bytes from the CLI"
    echo "CLI textfile: $(grep -c '^stallscope_' "$WORK/textfile/cli.prom" || true) lines scraped"

    # A netdev named with a byte that is not UTF-8 (the kernel allows any but '/', ':' and spaces):
    # node_exporter rejects a whole file for one such label value, so the writer replaces it (U+FFFD).
    cp -r "$FIXTURES/nodes/roce" "$WORK/latin1-node"
    LC_ALL=C sed -i "s/^eno1np0:/eno1$(printf '\xe9'):/" "$WORK/latin1-node/proc/net/dev"
    STALLSCOPE_PROCFS_ROOT="$WORK/latin1-node/proc" STALLSCOPE_SYSFS_ROOT="$WORK/latin1-node/sys" \
        STALLSCOPE_ETHTOOL_ROOT="$WORK/latin1-node/ethtool" \
        timeout 30 "$STALLSCOPE" --interval-seconds 0.1 --count 2 --json \
        --prometheus-textfile "$WORK/textfile/latin1.prom" >"$WORK/latin1.json" 2>"$WORK/latin1.err" ||
        { cat "$WORK/latin1.err" >&2; fail "stallscope CLI on a netdev name that is not UTF-8 failed"; }
    scrape
    expect_line "$WORK/metrics" 'node_textfile_scrape_error 0'
    LC_ALL=C grep -q "interface=\"eno1$(printf '\xef\xbf\xbd')\"" "$WORK/metrics" ||
        fail "the netdev that is not UTF-8 is not scraped as eno1 + U+FFFD"
    echo "netdev name not UTF-8: scraped, replaced by U+FFFD"
else
    echo "note: CLI part skipped (stallscope binary or fixtures/nodes/roce missing)"
fi

# The big node with the fake NVML (8 H100s: GPM, NVLink, processes): every depth family scraped, the
# series count within the documented DGX bound, and the job only on stallscope_job_info.
if [ -n "$STALLSCOPE" ] && [ -x "$STALLSCOPE" ] && [ -f "$FAKE_NVML" ] && [ -d "$FIXTURES/nodes/dgx-h100/sys" ]; then
    rm -f "$WORK/textfile/"*.prom
    STALLSCOPE_PROCFS_ROOT="$FIXTURES/nodes/dgx-h100/proc" STALLSCOPE_SYSFS_ROOT="$FIXTURES/nodes/dgx-h100/sys" \
        STALLSCOPE_NVML_LIBRARY="$FAKE_NVML" STALLSCOPE_FAKE_NVML_FIXTURE="$FIXTURES/nodes/dgx-h100/nvml.json" \
        SLURM_JOB_ID=777 SLURM_STEP_ID=0 \
        timeout 30 "$STALLSCOPE" --interval-seconds 0.5 --count 2 --json \
        --prometheus-textfile "$WORK/textfile/dgx.prom" >"$WORK/dgx.json" 2>"$WORK/dgx.err" ||
        { cat "$WORK/dgx.err" >&2; fail "stallscope CLI on the dgx-h100 fixture failed"; }
    scrape
    expect_line "$WORK/metrics" 'node_textfile_scrape_error 0'
    dgx=$(grep -c '^stallscope_' "$WORK/metrics" || true)
    [ "$dgx" -gt 0 ] && [ "$dgx" -le 1687 ] || fail "dgx-h100: $dgx series scraped, the DGX bound is 1687"
    for family in gpu_sm_active_ratio gpu_tensor_active_ratio gpu_nvlink_transmit_bytes_total gpu_processes \
        gpu_foreign_processes; do
        [ "$(grep -c "^stallscope_$family{" "$WORK/metrics")" -eq 8 ] || fail "dgx-h100: stallscope_$family not one series per GPU"
    done
    jobs=$(grep -c '^stallscope_[a-z_]*{[^}]*job_id=' "$WORK/metrics" || true)
    [ "$jobs" -le 1 ] || fail "dgx-h100: job_id on $jobs series (only stallscope_job_info may carry it)"
    echo "dgx-h100 with the fake NVML: $dgx stallscope series scraped (bound 1687)"
else
    echo "note: dgx-h100 part skipped (stallscope binary, fake libnvidia-ml or fixtures/nodes/dgx-h100 missing)"
fi

echo "PASS: node_exporter scraped $expected stallscope series, scrape_error 0"
