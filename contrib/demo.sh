#!/usr/bin/env bash
# The README's main command: build stallscope, boot a private single-node Slurm cluster on loopback
# (contrib/dev-cluster), run `srun --stallscope=1` as an ordinary user, and show what a user and an admin
# then see: the verdict, the timeline path, the report, the HTML view and the sacct comment. Stops the
# cluster at the end (STALLSCOPE_KEEP_CLUSTER=1 leaves it up). Run as root on Debian 12 (a root shell
# needs no sudo; an ordinary user runs `sudo contrib/demo.sh`).
#
#   contrib/demo.sh               a GPU node's output: on a machine without NVIDIA GPUs the job's 2 gres
#                                 GPUs are answered by the fake libnvidia-ml built from tests/fake_nvml
#                                 (fixtures/nodes/dgx-h100/nvml.json), and the demo says so
#   contrib/demo.sh --fake-gpus   the fake GPUs even where real ones exist
#   contrib/demo.sh --real-gpus   this node as it is (no GPU here: the GPU part says so)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
GPUS=auto
case "${1:-}" in
  --fake-gpus) GPUS=fake ;;
  --real-gpus) GPUS=real ;;
  "") ;;
  *) echo "usage: contrib/demo.sh [--fake-gpus | --real-gpus]" >&2; exit 2 ;;
esac
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root, e.g. sudo contrib/demo.sh (it installs packages and starts slurmd)" >&2; exit 1; }
# A machine with an NVIDIA driver has /dev/nvidia0 or a loadable NVML; without either, fake GPUs.
if [ "$GPUS" = auto ]; then
  if [ -e /dev/nvidia0 ] || ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then GPUS=real; else GPUS=fake; fi
fi
say "installing missing Debian packages (contrib/install-deps.sh)"
contrib/install-deps.sh

say "building (meson + ninja, build/)"
[ -f build/build.ninja ] || meson setup build -Ddebug=false -Doptimization=2 >/dev/null
ninja -C build spank/stallscope.so spank/stallscope-slurm-job helper/stallscope tests/fake_nvml/libnvidia-ml.so.1 | tail -1

say "booting a private Slurm cluster on loopback (contrib/dev-cluster/up.sh)"
export STALLSCOPE_PLUGIN=$REPO/build/spank/stallscope.so STALLSCOPE_HELPER=$REPO/build/helper/stallscope
contrib/dev-cluster/up.sh
. contrib/dev-cluster/env.sh
. contrib/dev-cluster/common.sh
if [ "${STALLSCOPE_KEEP_CLUSTER:-0}" != 1 ]; then trap 'contrib/dev-cluster/down.sh >/dev/null 2>&1 || true' EXIT; fi

WORK="$D/work/demo"
mkdir -p "$WORK" && chown "$CLUSTER_USER" "$WORK"
JOBENV=()
if [ "$GPUS" = fake ]; then
  say "no NVIDIA GPU on this machine: the job's GPUs are FAKE - answered by tests/fake_nvml's libnvidia-ml with fixtures/nodes/dgx-h100/nvml.json (H100s), so you see what stallscope shows for a GPU node (--real-gpus: this node as it is)"
  JOBENV=(STALLSCOPE_NVML_LIBRARY="$REPO/build/tests/fake_nvml/libnvidia-ml.so.1"
          STALLSCOPE_FAKE_NVML_FIXTURE="$REPO/fixtures/nodes/dgx-h100/nvml.json")
fi

say "running as $CLUSTER_USER: srun --stallscope=1 --gres=gpu:2 (a 35 s 'training' step: shorter ones get UNKNOWN step_too_short)"
set -x
runuser -u "$CLUSTER_USER" -- env -C "$WORK" "${JOBENV[@]}" \
  srun --stallscope=1 --gres=gpu:2 --job-name=demo-train sh -c 'echo "job $SLURM_JOB_ID on $(hostname), GPUs $CUDA_VISIBLE_DEVICES"; sleep 35'
{ set +x; } 2>/dev/null
JOB=$(sacct -n -X -P -o JobID --name=demo-train -u "$CLUSTER_USER" | tail -1)
OUT="$WORK/stallscope-$JOB"

say "what the job left in its directory ($OUT)"
ls -l "$OUT"
echo
TIMELINE=$(ls "$OUT"/timeline.*.jsonl.zst)
SAMPLES=$("$STALLSCOPE_HELPER" export "$TIMELINE" | grep -c '^{"type":"sample"' || true)
echo "timeline: $TIMELINE"
echo "          $(stat -c %s "$TIMELINE") bytes for $SAMPLES samples (zstd, only what changed per sample;"
echo "          \`stallscope export $TIMELINE\` prints every sample whole as JSON lines)"
echo "verdict:  $(ls "$OUT"/verdict.*.json)"

say "the verdict (stallscope report $OUT)"
runuser -u "$CLUSTER_USER" -- "$STALLSCOPE_HELPER" report "$OUT"

say "the same as one HTML page with charts (stallscope html $OUT -o $OUT/job.html; open it in any browser)"
runuser -u "$CLUSTER_USER" -- "$STALLSCOPE_HELPER" html "$OUT" -o "$OUT/job.html"
[ "$GPUS" = fake ] && echo "(the GPU numbers above come from the fake NVML: this machine has no NVIDIA GPU)"

say "what an admin sees in sacct (AdminComment, written by the plugin while the job ran)"
for _ in $(seq 1 20); do
  comment=$(sacct -n -X -P -j "$JOB" -o AdminComment)
  [ -n "$comment" ] && break
  sleep 0.5
done
sacct -j "$JOB" -X -o JobID,User,State,Elapsed,AdminComment%160
echo
"$STALLSCOPE_HELPER" jobs --all-users --since now-1hours
