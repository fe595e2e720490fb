#!/bin/bash
# Node acceptance for stallscope: one command an admin runs on one GPU node before enabling the plugin.
# Proves, with the real driver, that stallscope reads every GPU right (NVML), sees load, a busy-wait hang
# and idle GPUs where they are, reads NCCL RAS, and what it costs; writes a capture that becomes a test
# fixture. Needs only `stallscope` (installed, or next to this script in a bundle), the NVIDIA driver,
# and for the load phases python3 with PyTorch; without PyTorch the passive checks run and the table says
# what was skipped. Runs as root or as a user, in under 8 minutes. README: "Validate a GPU node".
#
# Usage: validate-gpu-node.sh [--out DIR] [--stallscope PATH] [--no-load] [--device N]
# Exit status: 0 no check failed, 1 a check failed, 2 usage error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="stallscope-validate-$(hostname -s)-$(date -u +%Y%m%dT%H%M%SZ)"
stallscope=""
load=1
device=0
scale=${STALLSCOPE_KIT_SCALE:-1}          # phase length factor (only for trying the kit out quickly)
passive_seconds=${STALLSCOPE_KIT_PASSIVE_SECONDS:-15}

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --stallscope) stallscope=${2:?--stallscope needs a path}; shift 2 ;;
        --no-load) load=0; shift ;;
        --device) device=${2:?--device needs an index}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "validate-gpu-node: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [ -z "$stallscope" ]; then
    for candidate in "$here/stallscope" "$here/bin/stallscope" "$(command -v stallscope || true)"; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then stallscope=$candidate; break; fi
    done
fi
if [ -z "$stallscope" ] || [ ! -x "$stallscope" ]; then
    echo "validate-gpu-node: no stallscope found (--stallscope PATH)" >&2
    exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
log="$out/kit.log"
: > "$log"
python=$(command -v python3 || true)
checks="$here/gpu-node-checks.py"
loader="$here/gpu-node-load.py"
started=$(date +%s)

rows=()
add_row() { rows+=("$1"$'\t'"$2"$'\t'"$3"); echo "$(date -u +%T) $1 $2: $3" >> "$log"; }
# Rows printed by gpu-node-checks.py ("ROW<TAB>STATUS<TAB>NAME<TAB>DETAIL").
take_rows() {
    local tag status name detail
    while IFS=$'\t' read -r tag status name detail; do
        if [ "$tag" = ROW ]; then add_row "$status" "$name" "$detail"; fi
    done
}
run_checks() {
    if [ -z "$python" ]; then add_row SKIP "$1" "python3 missing: the JSON checks need it"; return; fi
    local printed status=0
    printed=$("$python" "$checks" "${@:2}" 2>> "$log") || status=$?
    take_rows <<< "$printed"  # not in a pipeline: add_row must change this shell's rows
    if [ "$status" != 0 ]; then add_row FAIL "$1" "the checks failed with status $status (kit.log)"; fi
}

echo "stallscope node validation: $(hostname) as $(id -un), output in $out"
"$stallscope" --version > "$out/version.txt"
{
    echo "stallscope: $stallscope ($(cat "$out/version.txt"))"
    echo "NVML library: ${STALLSCOPE_NVML_LIBRARY:-libnvidia-ml.so.1, the driver one}"
    echo "kernel: $(uname -r)"
} | tee -a "$log"

# 1. Passive: one profile with the real NVML (three samples 0.5 s apart: GPM needs a pair), the NVML
#    capture in the fake's fixture format, and nvidia-smi for reference.
smi=$(command -v "${STALLSCOPE_NVIDIA_SMI:-nvidia-smi}" || true)
smi_csv=""
if [ -n "$smi" ]; then
    "$smi" -q > "$out/nvidia-smi-q.txt" 2>&1 || true
    if "$smi" --query-gpu=uuid,pci.bus_id,name,compute_cap,mig.mode.current --format=csv,noheader \
        > "$out/nvidia-smi.csv" 2>> "$log"; then smi_csv="$out/nvidia-smi.csv"; fi
    driver=$("$smi" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
    add_row INFO driver "NVIDIA driver ${driver:-unknown} (nvidia-smi -q in nvidia-smi-q.txt)"
else
    add_row SKIP nvidia_smi "nvidia-smi not found: identity and MIG mode not cross-checked"
fi
if "$stallscope" --interval-seconds 0.5 --count 3 --json > "$out/snapshot.jsonl" 2>> "$log"; then
    if "$stallscope" nvml-capture --out "$out/nvml-capture.json" 2>> "$log"; then
        run_checks snapshot snapshot "$out/snapshot.jsonl" "$out/nvml-capture.json" ${smi_csv:+"$smi_csv"}
    else
        add_row FAIL capture "stallscope nvml-capture failed: $(tail -1 "$log")"
    fi
else
    add_row FAIL snapshot "stallscope --json failed: $(tail -1 "$log")"
fi

# 2-4. The helper recording at 1 s across the load phases (or a short passive recording), as the
#      plugin runs it; NCCL RAS polled as on node 0 of a job (no STATUS in the first 5 s, then every 30 s).
ras_port=$((28100 + RANDOM % 800))
export NCCL_RAS_ADDR="127.0.0.1:$ras_port" STALLSCOPE_NCCL_RAS_DELAY=5 STALLSCOPE_NCCL_RAS_INTERVAL=30
mkdir -p "$out/record"
"$stallscope" record --out-dir "$out/record" --interval-seconds 1 2>> "$log" &
helper=$!
trap 'kill "$helper" 2>/dev/null || true' EXIT
record_start=$(date +%s)

load_ran=0
why_no_load=""
if [ "$load" = 0 ]; then
    why_no_load="--no-load given"
elif [ -z "$python" ]; then
    why_no_load="python3 not found"
elif ! why_no_load=$("$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>&1); then
    why_no_load=${why_no_load:-PyTorch sees no CUDA device}
    why_no_load="PyTorch unusable: $(tail -1 <<< "$why_no_load")"
else
    why_no_load=""
fi
if [ -z "$why_no_load" ]; then
    echo "load phases: idle 30 s, bf16 matmul 60 s, copy 30 s, spin-wait 60 s, idle 60 s, NCCL 75 s (~5.5 min)"
    if "$python" "$loader" --phases-out "$out/phases.json" \
        --scale "$scale" --device "$device" --nccl --ras-addr "$NCCL_RAS_ADDR" \
        --ras-text-out "$out/ras-status.txt" 2>> "$log"; then
        load_ran=1
    else
        add_row FAIL load "gpu-node-load.py failed: $(tail -1 "$log")"
    fi
else
    for phase in idle matmul copy spin idle_end nccl_ras; do
        add_row SKIP "phase_$phase" "load phases skipped: $why_no_load"
    done
    sleep "$passive_seconds"
fi

# The helper's cost over the run, read just before it is stopped.
ticks=$(awk '{print $14 + $15}' "/proc/$helper/stat")
hwm_kib=$(awk '/^VmHWM:/ {print $2}' "/proc/$helper/status")
elapsed=$(( $(date +%s) - record_start ))
kill -TERM "$helper"
wait "$helper" || add_row FAIL record "stallscope record exited with status $?"
trap - EXIT
hz=$(getconf CLK_TCK)
cpu_pct=$(awk -v t="$ticks" -v hz="$hz" -v s="$elapsed" 'BEGIN {printf "%.3f", t / hz / s * 100}')
rss_mib=$(awk -v k="$hwm_kib" 'BEGIN {printf "%.1f", k / 1024}')
cost="$cpu_pct % of a core over $elapsed s at 1 s (${ticks} ticks of 1/$hz s), peak RSS $rss_mib MiB (goal <= 0.1 %, <= 16 MiB)"
if [ "$elapsed" -lt 120 ]; then
    add_row SKIP helper_cost "run too short to hold 0.1 % to a clock tick: $cost"
elif awk -v c="$cpu_pct" -v r="$rss_mib" 'BEGIN {exit !(c <= 0.1 && r <= 16)}'; then
    add_row PASS helper_cost "$cost"
else
    add_row FAIL helper_cost "$cost"
fi

timeline=$(find "$out/record" -maxdepth 1 -name 'timeline.*' | head -1)
if [ -n "$timeline" ] && "$stallscope" export "$timeline" > "$out/timeline.jsonl" 2>> "$log"; then
    samples=$(grep -c '"type":"sample"' "$out/timeline.jsonl" || true)
    verdict=$(find "$out/record" -maxdepth 1 -name 'verdict.*.json' | head -1)
    if [ -n "$verdict" ]; then
        add_row PASS record "$samples samples, verdict $(grep -o '"label": *"[A-Z_]*"' "$verdict" | head -1)"
    else
        add_row FAIL record "$samples samples but no verdict file after SIGTERM"
    fi
else
    add_row FAIL record "no timeline to export in $out/record"
fi
if [ "$load_ran" = 1 ] && [ -s "$out/timeline.jsonl" ]; then
    run_checks phases phases "$out/timeline.jsonl" "$out/phases.json" "$stallscope" "$out"
    run_checks nccl_ras ras "$out/timeline.jsonl" "$out/phases.json"
fi

# 5. The flight-recorder variables the plugin sets, against this node's PyTorch + NCCL (a release the
#    plugin's table in doc/hang-evidence.md was not read for may differ): its defaults must never end or
#    stall a rank. After the recording, so its spinning kernels are not in the timeline's phases.
if [ -z "$why_no_load" ]; then
    fr_status=0
    printed=$(timeout 180 "$python" "$here/gpu-flight-recorder-check.py" --out "$out/flight-recorder" \
        --device "$device" 2>> "$log") || fr_status=$?
    take_rows <<< "$printed"
    case "$fr_status" in
        0|1) ;;  # 1: a FAIL row says which case
        *) add_row FAIL flight_recorder "gpu-flight-recorder-check.py ended with status $fr_status (kit.log)" ;;
    esac
else
    add_row SKIP flight_recorder "PyTorch cases skipped: $why_no_load"
fi

# 6. What stays in DIR: nvml-capture.json (a fake-NVML fixture), snapshot.jsonl, timeline.jsonl and the
#    record/ directory (timeline + verdict), ras-status.txt, nvidia-smi-q.txt, phases.json, kit.log,
#    flight-recorder/ (fr-cases.json and the dumps this PyTorch wrote).
add_row INFO capture_dir "$out: nvml-capture.json is a fixture for tests/fake_nvml (fixtures/nvml/<gpu>-real-<driver>.json)"

pass=0 fail=0 skip=0
printf '\n%-6s %-16s %s\n' STATUS CHECK DETAIL
for r in "${rows[@]}"; do
    IFS=$'\t' read -r status name detail <<< "$r"
    printf '%-6s %-16s %s\n' "$status" "$name" "$detail"
    case "$status" in PASS) pass=$((pass + 1)) ;; FAIL) fail=$((fail + 1)) ;; SKIP) skip=$((skip + 1)) ;; esac
done
printf '\n%d passed, %d failed, %d skipped in %d s; everything is in %s\n' \
    "$pass" "$fail" "$skip" "$(( $(date +%s) - started ))" "$out"
printf '%s\n' "${rows[@]}" > "$out/results.tsv"
[ "$fail" = 0 ]
