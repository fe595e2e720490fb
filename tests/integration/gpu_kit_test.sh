#!/bin/bash
# contrib/validate-gpu-node.sh against the fake libnvidia-ml, so the node kit cannot rot where no GPU is:
#  1. the kit's passive checks PASS on an 8-GPU H100 fixture (load phases SKIP, saying why), and FAIL on a
#     fixture whose GPUs answer Not Supported (the checks can fail);
#  2. `stallscope nvml-capture` round-trips every NVML fixture: the capture, served by the fake, gives the
#     same `gpus` as the fixture it was taken from (a capture from a real GPU is a usable fixture);
#  3. the per-phase checks (gpu-node-checks.py phases) on a recording whose fixture changes phase by phase
#     as PyTorch's load would change the real GPU: PASS in order, FAIL when the phases are mislabelled.
# usage: gpu_kit_test.sh STALLSCOPE FAKE_NVML_LIB SOURCE_DIR WORK_DIR     (exit 77: python3 missing)
set -euo pipefail
stallscope=$1
fake=$2
src=$(cd "$3" && pwd)
work=$4
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
export STALLSCOPE_NVML_LIBRARY=$fake STALLSCOPE_NVIDIA_SMI=/nonexistent/nvidia-smi
fail=0
check() { # description, command...
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
# shellcheck disable=SC2317  # called through check()
row() { grep -qP "^$1 +$2 " "$work/$3.out"; }  # STATUS CHECK kit-run

# 1. The kit, passive (no PyTorch here: --no-load names the reason the same way a missing PyTorch does).
start=$(date +%s.%N)
export STALLSCOPE_KIT_PASSIVE_SECONDS=3
STALLSCOPE_FAKE_NVML_FIXTURE=$src/fixtures/nodes/dgx-h100/nvml.json \
    "$src/contrib/validate-gpu-node.sh" --stallscope "$stallscope" --out "$work/h100" --no-load > "$work/h100.out" 2>&1 &&
    kit_rc=0 || kit_rc=$?
cat "$work/h100.out"
check "the kit passes on the 8-GPU H100 fixture (exit $kit_rc)" test "$kit_rc" = 0
for name in nvml identity gauges clocks gpm nvlink_pcie mig capture record; do
    check "  $name PASS" row PASS "$name" h100
done
check "  load phases SKIP with the reason" grep -q "SKIP   phase_matmul .*load phases skipped: --no-load given" "$work/h100.out"
check "  helper cost SKIP (too short to measure), not a claimed PASS" row SKIP helper_cost h100
check "  capture written" test -s "$work/h100/nvml-capture.json"
check "  timeline exported with samples" grep -q '"type":"sample"' "$work/h100/timeline.jsonl"
echo "kit run: $(python3 -c "import time; print(round(time.time() - $start, 1))") s"

STALLSCOPE_FAKE_NVML_FIXTURE=$src/fixtures/nvml/not-supported.json \
    "$src/contrib/validate-gpu-node.sh" --stallscope "$stallscope" --out "$work/ns" --no-load > "$work/ns.out" 2>&1 &&
    kit_rc=0 || kit_rc=$?
check "the kit fails on GPUs that answer Not Supported (exit $kit_rc)" test "$kit_rc" = 1
check "  gauges FAIL" row FAIL gauges ns
STALLSCOPE_FAKE_NVML_FIXTURE=$src/fixtures/nvml/a100-no-gpm.json \
    "$src/contrib/validate-gpu-node.sh" --stallscope "$stallscope" --out "$work/a100" --no-load > "$work/a100.out" 2>&1 || true
check "A100: GPM null with its warning is a PASS" row PASS gpm a100

# 2. Capture round trip: what the fake answers from the capture equals what it answers from the fixture.
gpus_of() { # fixture -> the gpus of the last sample (GPM needs a pair >= 0.1 s apart: 0.5 s leaves room
    # for a first sample slowed down by a loaded machine)
    STALLSCOPE_FAKE_NVML_FIXTURE=$1 "$stallscope" --interval-seconds 0.5 --count 3 --json | tail -1 |
        python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["gpus"], sort_keys=True, indent=1))'
}
for fixture in "$src"/fixtures/nvml/*.json "$src"/fixtures/nodes/*/nvml.json; do
    name=$(basename "$(dirname "$fixture")")-$(basename "$fixture" .json)
    STALLSCOPE_FAKE_NVML_FIXTURE=$fixture "$stallscope" nvml-capture --gpm-seconds 0.2 --out "$work/$name.capture.json"
    gpus_of "$fixture" > "$work/$name.want"
    gpus_of "$work/$name.capture.json" > "$work/$name.got"
    check "capture of $name answers as the fixture" diff -u "$work/$name.want" "$work/$name.got"
done

# 3. The phase checks on a recording driven through the fake: each phase's fixture is what the load does
#    to an H100 (1 block of 132 SMs spinning: SM 0.8 %), 3 s a phase at 0.25 s.
phases_dir=$work/phases
mkdir -p "$phases_dir/record"
python3 - "$src/fixtures/nodes/dgx-h100/nvml.json" "$phases_dir" <<'EOF'
import copy, json, sys
base = json.load(open(sys.argv[1]))
base["gpus"] = base["gpus"][:1]
shapes = {  # utilization, SM, tensor, DRAM
    "idle": (0, 0.0, 0.0, 0.0), "matmul": (100, 92.0, 71.0, 35.0), "copy": (100, 60.0, 0.0, 88.0),
    "spin": (100, 0.8, 0.0, 0.1), "idle_end": (0, 0.0, 0.0, 0.0)}
for name, (util, sm, tensor, dram) in shapes.items():
    f = copy.deepcopy(base)
    g = f["gpus"][0]
    g["utilization_gpu_pct"] = util
    g["power_usage_mw"] = 650000 if name in ("matmul", "copy") else 150000 if name == "spin" else 70000
    g.setdefault("gpm", {}).update({"2": sm, "3": sm / 2, "5": tensor, "10": dram})
    json.dump(f, open("%s/%s.json" % (sys.argv[2], name), "w"))
EOF
cp "$phases_dir/idle.json" "$phases_dir/now.json"
STALLSCOPE_FAKE_NVML_FIXTURE=$phases_dir/now.json "$stallscope" record --out-dir "$phases_dir/record" \
    --interval-seconds 0.25 2>> "$phases_dir/record.log" &
helper=$!
trap 'kill "$helper" 2>/dev/null || true' EXIT
sleep 1
echo '{"sm_count": 132, "phases": [' > "$phases_dir/phases.json"
sep=""
for phase in idle matmul copy spin idle_end; do
    cp "$phases_dir/$phase.json" "$phases_dir/now.json.tmp" && mv "$phases_dir/now.json.tmp" "$phases_dir/now.json"
    begin=$(date +%s.%N)
    sleep 3
    printf '%s{"name": "%s", "start": %s, "end": %s}\n' "$sep" "$phase" "$begin" "$(date +%s.%N)" >> "$phases_dir/phases.json"
    sep=","
done
echo ']}' >> "$phases_dir/phases.json"
kill -TERM "$helper" && wait "$helper"
trap - EXIT
"$stallscope" export "$phases_dir"/record/timeline.* > "$phases_dir/timeline.jsonl"
python3 "$src/contrib/gpu-node-checks.py" phases "$phases_dir/timeline.jsonl" "$phases_dir/phases.json" \
    "$stallscope" "$phases_dir" | tee "$phases_dir/rows"
for phase in idle matmul copy spin idle_end; do
    check "phase $phase PASS from the timeline" grep -qP "^ROW\tPASS\tphase_$phase\t" "$phases_dir/rows"
done
check "phase verdicts SKIP (3 s phases are shorter than min_step_seconds)" grep -qP "^ROW\tSKIP\tverdict_spin\t" "$phases_dir/rows"
# Mislabelled: the matmul window called spin and the spin window called matmul.
python3 - "$phases_dir/phases.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
names = {"matmul": "spin", "spin": "matmul"}
for ph in p["phases"]:
    ph["name"] = names.get(ph["name"], ph["name"])
json.dump(p, open(sys.argv[1] + ".swapped", "w"))
EOF
python3 "$src/contrib/gpu-node-checks.py" phases "$phases_dir/timeline.jsonl" "$phases_dir/phases.json.swapped" \
    "$stallscope" "$phases_dir" > "$phases_dir/rows.swapped"
check "mislabelled phases FAIL (spin)" grep -qP "^ROW\tFAIL\tphase_spin\t" "$phases_dir/rows.swapped"
check "mislabelled phases FAIL (matmul)" grep -qP "^ROW\tFAIL\tphase_matmul\t" "$phases_dir/rows.swapped"

[ "$fail" = 0 ] && echo "PASS: gpu kit" || echo "FAIL: gpu kit"
exit "$fail"
