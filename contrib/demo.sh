#!/usr/bin/env bash
# The README's main command: build stallscope, boot a private single-node Slurm cluster on loopback
# (contrib/dev-cluster), run `srun --stallscope=1` as an ordinary user, and show what a user and an admin
# then see: the verdict, the timeline path, the report and the sacct comment. Stops the cluster at the end
# (STALLSCOPE_KEEP_CLUSTER=1 leaves it up). Run as root on Debian 12.
#
#   sudo contrib/demo.sh               this node as it is (no GPU here: the GPU part says so)
#   sudo contrib/demo.sh --fake-gpus   the job's 2 gres GPUs answered by the fake libnvidia-ml
#                                      (fixtures/nodes/dgx-h100/nvml.json), to see a GPU node's output
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
FAKE_GPUS=0
[ "${1:-}" = "--fake-gpus" ] && FAKE_GPUS=1
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it installs packages and starts slurmd)" >&2; exit 1; }
say "installing missing Debian packages (contrib/install-deps.sh)"
contrib/install-deps.sh

say "building (meson + ninja, build/)"
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build spank/stallscope.so helper/stallscope tests/fake_nvml/libnvidia-ml.so.1 | tail -1

say "booting a private Slurm cluster on loopback (contrib/dev-cluster/up.sh)"
export STALLSCOPE_PLUGIN=$REPO/build/spank/stallscope.so STALLSCOPE_HELPER=$REPO/build/helper/stallscope
contrib/dev-cluster/up.sh
. contrib/dev-cluster/env.sh
. contrib/dev-cluster/common.sh
if [ "${STALLSCOPE_KEEP_CLUSTER:-0}" != 1 ]; then trap 'contrib/dev-cluster/down.sh >/dev/null 2>&1 || true' EXIT; fi

WORK="$D/work/demo"
mkdir -p "$WORK" && chown "$CLUSTER_USER" "$WORK"
JOBENV=()
if [ "$FAKE_GPUS" = 1 ]; then
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
echo "timeline: $(ls "$OUT"/timeline.*.jsonl)"
echo "verdict:  $(ls "$OUT"/verdict.*.json)"

say "the verdict (stallscope report $OUT)"
runuser -u "$CLUSTER_USER" -- "$STALLSCOPE_HELPER" report "$OUT"

say "what an admin sees in sacct (AdminComment, written by the plugin while the job ran)"
for _ in $(seq 1 20); do
  comment=$(sacct -n -X -P -j "$JOB" -o AdminComment)
  [ -n "$comment" ] && break
  sleep 0.5
done
sacct -j "$JOB" -X -o JobID,User,State,Elapsed,AdminComment%160
echo
"$STALLSCOPE_HELPER" jobs --all-users --since now-1hours
