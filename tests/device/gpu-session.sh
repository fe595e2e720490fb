#!/bin/bash
# Everything stallscope checks on a real GPU, as one bounded command for a session that is lent a GPU
# machine (the workplace's device tool: 15 minutes a session, one command at most 10). Nothing here runs
# in CI. Built here, run there, from the repository root:
#
#   contrib/make-bundle.sh --out .device             # x86-64 build with its libraries (this machine)
#   tests/device/gpu-session.sh .device/stallscope-bundle-*.tar.gz "$OUT"      # on the GPU machine
#
# Two parts, each bounded by `timeout`:
#   1. a hang end to end: `stallscope record` beside a one-rank NCCL job whose next collective waits
#      behind a spinning kernel, with the plugin's variables: the busy-wait hang must be named, the
#      FIFO asked, the real dump read into evidence.*.json;
#   2. contrib/validate-gpu-node.sh (the admin's kit) at KIT_SCALE (default 0.6 of its phase lengths),
#      its last phase contrib/gpu-flight-recorder-check.py: the real PyTorch + NCCL against the
#      flight-recorder variables the plugin sets and the failure paths doc/hang-evidence.md section 1 names.
# Writes $OUT/hang.tar.gz (part 1: the real dump, the evidence), $OUT/kit.tar.gz (the kit's directory: the
# NVML capture and the flight-recorder dumps are fixtures) and $OUT/device.log. About 6 minutes; give the
# device call timeout_s 590. Exit status: that of the kit, or 1 when a part failed before it.
set -uo pipefail

bundle=${1:?usage: gpu-session.sh BUNDLE.tar.gz OUT_DIR}
out=${2:?usage: gpu-session.sh BUNDLE.tar.gz OUT_DIR}
work=/tmp/stallscope-device
rm -rf "$work"
mkdir -p "$work" "$out"
exec > >(tee "$out/device.log") 2>&1
tar xzf "$bundle" -C "$work"
kit=$(echo "$work"/stallscope-bundle-*/)
stallscope="$kit/bin/stallscope"
failed=0
part() { echo; echo "=== $(date -u +%T) $*"; }

part "machine"
# The driver's NVML where the loader does not know it (a container image may mount it elsewhere).
if ! ldconfig -p | grep -q 'libnvidia-ml.so.1 '; then
    for candidate in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
        if [ -e "$candidate/libnvidia-ml.so.1" ]; then
            export STALLSCOPE_NVML_LIBRARY="$candidate/libnvidia-ml.so.1"
            echo "NVML not in the loader's cache: STALLSCOPE_NVML_LIBRARY=$STALLSCOPE_NVML_LIBRARY"
            break
        fi
    done
fi
nvidia-smi -L
nvidia-smi --query-gpu=driver_version,name,power.limit --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
"$stallscope" --version
uname -r
# Which flight-recorder variables this PyTorch build reads (names in its libraries' string tables).
timeout 60 python3 - <<'PY'
import glob, mmap, os, re, torch
names = set()
for lib in glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch*.so*")):
    with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        names.update(x.decode() for x in re.findall(rb"TORCH_(?:NCCL|FR)_[A-Z0-9_]+", m))
print("flight-recorder variables in libtorch:", " ".join(sorted(names)))
PY

part "1. hang end to end: stallscope record + a rank stuck behind a spinning kernel"
rec="$work/record"
mkdir -p "$rec/out" "$rec/run"
chmod 700 "$rec/run"
"$stallscope" record --out-dir "$rec/out" --interval-seconds 1 > "$rec/record.log" 2>&1 &
helper=$!
sleep 3
# What plan_flight_recorder_env sets for a job that set none of these (spank/flight_recorder_env.cc).
TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
    TORCH_FR_DUMP_TEMP_FILE="$rec/out/torch-fr-" TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$rec/out/torch-fr-" \
    TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$rec/run/frpipe.0." PYTHONUNBUFFERED=1 \
    timeout 90 python3 "$kit/gpu-flight-recorder-check.py" --child --store "$rec/store" \
    --spin 35 --pg-timeout 600 > "$rec/rank.log" 2>&1
echo "rank exit status $? (0: the dump request did not disturb it)"
sleep 3
kill -TERM "$helper"
wait "$helper"
echo "record exit status $?"
ls -la "$rec/out" "$rec/run"
tail -5 "$rec/record.log"
for f in "$rec"/out/evidence.*.json; do
    [ -f "$f" ] || { echo "no evidence file"; failed=1; continue; }
    python3 - "$f" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))
print("evidence keys:", sorted(e))
fr = e.get("flight_recorder", {})
print("flight_recorder:", json.dumps(fr)[:1500])
print("pids/proc:", json.dumps(e.get("proc", {}))[:600])
EOF
done
timeline=$(ls "$rec"/out/timeline.* 2>/dev/null | head -1)
if [ -n "$timeline" ]; then
    "$stallscope" export "$timeline" > "$rec/timeline.jsonl" || failed=1
    grep -c '"type":"sample"' "$rec/timeline.jsonl"
    grep '"hang_evidence"' "$rec/timeline.jsonl" | cut -c1-600
fi
"$stallscope" report "$rec/out" 2>&1 | head -40
# Packed now: a kit that runs past the command's limit must not take part 1 with it.
tar czf "$out/hang.tar.gz" -C "$work" record

part "2. the node validation kit at scale ${KIT_SCALE:-0.6}"
STALLSCOPE_KIT_SCALE=${KIT_SCALE:-0.6} timeout 420 "$kit/validate-gpu-node.sh" --out "$work/kit" \
    --stallscope "$stallscope"
kit_status=$?

part "packing"
tar czf "$out/kit.tar.gz" -C "$work" kit && ls -la "$out"
[ "$failed" = 0 ] || exit 1
exit "$kit_status"
