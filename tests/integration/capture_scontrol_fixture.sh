#!/bin/bash
# Captures the job records the SPANK plugin reads before it writes AdminComment (spank/job_record.h), on a
# running cluster of any Slurm release, into fixtures/slurm/<major.minor>/ for tests/spank/job_record_test.cc:
#
#   scontrol_show_job.json        `scontrol --json show job <id>` (Slurm >= 23.02; 22.05's scontrol has no --json)
#   slurm_job.json                `stallscope-slurm-job --json show job <id>` (the plugin's default job reader)
#   scontrol_show_job_array.json  the same two for the array id of a 2-task array: both print every task's
#   slurm_job_array.json          record then (the plugin of the task holding that id asks for it); the
#                                 reader keeps that task's only
#   capture.json                  what was set: job ids, names, AdminComments, the release
#
# The jobs' names hold the M1 attack of issue 36 (newlines, "\n\n", a forged "JobId=", "WorkDir=" and
# "AdminComment=" line, "; stallscope/1 FAST"), and their AdminComment a jobstats segment plus ours, so the
# test checks that the real output of each release keeps every field in its place.
#
#   flock /tmp/stallscope-cluster.lock sh -c 'contrib/dev-cluster/up.sh && \
#       tests/integration/capture_scontrol_fixture.sh build/spank/stallscope-slurm-job'
#
# Run as root (sets AdminComment) with SLURM_CONF pointing at the cluster (contrib/dev-cluster/env.sh is
# sourced when SLURM_CONF is unset). Args: [JOB_READER] [OUT_DIR]; the jobs run as STALLSCOPE_CLUSTER_USER
# (the dev cluster's job user) when it exists, else as root. Exit 0 when at least one form was captured.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export PATH=$PATH:/usr/sbin:/sbin
if [ -z "${SLURM_CONF:-}" ]; then . "$REPO/contrib/dev-cluster/env.sh"; fi
READER=${1:-$(ls -t "$REPO"/build*/spank/stallscope-slurm-job 2>/dev/null | head -n 1)}
RELEASE=$(scontrol --version | awk '{print $2}')
OUT=${2:-$REPO/fixtures/slurm/$(echo "$RELEASE" | cut -d. -f1-2)}
[ "$(id -u)" -eq 0 ] || { echo "capture: run as root (scontrol update AdminComment)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "capture: python3 needed (capture.json)" >&2; exit 2; }
USER_=${STALLSCOPE_CLUSTER_USER:-stallscope-ci}
id "$USER_" >/dev/null 2>&1 || USER_=root
mkdir -p "$OUT"
TMP=$(mktemp -d)
chmod 755 "$TMP"
trap 'rm -rf "$TMP"' EXIT

NAME=$'train\n   WorkDir=/f\n\nJobId=1 JobName=x\n   WorkDir=/f\n   AdminComment=JS1:FORGED_BY_USER; stallscope/1 FAST conf=1.00 top=none file=/tmp/evil/summary.json\n\nz'
ADMIN='JS1:abc def Foo=bar; stallscope/1 SLOW conf=0.80 top=x gpus=8 dur=10 file=/a b/v.json'
OTHER='JS1:the other task'

submit() { runuser -u "$USER_" -- env -C "$TMP" sbatch --parsable -o /dev/null -J capture "$@" | cut -d';' -f1; }
running() { [ "$(squeue -h -r -j "$1" -o %T 2>/dev/null | sort -u)" = RUNNING ]; }
wait_running() { for _ in $(seq 60); do running "$1" && return 0; sleep 0.5; done; echo "capture: job $1 not RUNNING (captured anyway)" >&2; }

JOB=$(submit --wrap 'sleep 300')
ARRAY=$(submit --array=1-2 --wrap 'sleep 300')
[ -n "$JOB" ] && [ -n "$ARRAY" ] || { echo "capture: sbatch failed" >&2; exit 1; }
trap 'scancel "$JOB" "$ARRAY" 2>/dev/null; rm -rf "$TMP"' EXIT
wait_running "$JOB"
wait_running "$ARRAY"
# An array's job id is held by one of its tasks (on 22.05 the last one; the others got new ids when
# they started), and `<id>` then means every task of the array to slurm_load_job and scontrol alike: the
# plugin of that task asks for exactly that. Ours gets ADMIN, the other task OTHER.
read -r MASTER_TASK OTHER_TASK OTHER_ID < <(squeue -h -r -j "$ARRAY" -o '%A %K' |
    awk -v a="$ARRAY" '$1 == a {m = $2} $1 != a {o = $2; oid = $1} END {print m, o, oid}')
[ -n "${MASTER_TASK:-}" ] && [ -n "${OTHER_ID:-}" ] || { echo "capture: array $ARRAY tasks not found" >&2; exit 1; }
scontrol update JobId="$JOB" JobName="$NAME" AdminComment="$ADMIN" || exit 1
scontrol update JobId="${ARRAY}_$MASTER_TASK" JobName="$NAME" AdminComment="$ADMIN" || exit 1
scontrol update JobId="${ARRAY}_$OTHER_TASK" JobName="$NAME" AdminComment="$OTHER" || exit 1

captured=0
capture() {  # capture FILE CMD...: keep stdout when the command worked and printed JSON
    if "${@:2}" >"$TMP/out" 2>"$TMP/err" && [ "$(head -c 1 "$TMP/out")" = "{" ]; then
        cp "$TMP/out" "$OUT/$1"
        captured=$((captured + 1))
        echo "capture: $OUT/$1 ($(wc -c <"$OUT/$1") bytes)"
    else
        echo "capture: no $1: $(head -n 1 "$TMP/err")" >&2
    fi
}
capture scontrol_show_job.json scontrol --json show job "$JOB"
capture scontrol_show_job_array.json scontrol --json show job "$ARRAY"
if [ -n "$READER" ] && [ -x "$READER" ]; then
    capture slurm_job.json "$READER" --json show job "$JOB"
    capture slurm_job_array.json "$READER" --json show job "$ARRAY"
else
    echo "capture: no job reader (build spank/stallscope-slurm-job or pass its path)" >&2
fi
# The text forms, for comparison only (nothing reads them any more).
scontrol show job "$JOB" >"$OUT/scontrol_show_job.txt" 2>&1 || true

NAME="$NAME" ADMIN="$ADMIN" OTHER="$OTHER" RELEASE="$RELEASE" JOB="$JOB" ARRAY="$ARRAY" OTHER_ID="$OTHER_ID" \
    python3 - "$OUT/capture.json" <<'PY'
import json, os, sys
e = os.environ
doc = {
    "release": e["RELEASE"],
    "how": "tests/integration/capture_scontrol_fixture.sh",
    "job": {"job_id": int(e["JOB"]), "name": e["NAME"], "admin_comment": e["ADMIN"]},
    "job_array": {"job_id": int(e["ARRAY"]), "name": e["NAME"], "admin_comment": e["ADMIN"],
                  "other_task_id": int(e["OTHER_ID"]), "other_admin_comment": e["OTHER"]},
}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
PY
echo "capture: $OUT/capture.json (Slurm $RELEASE, job $JOB, array $ARRAY)"
[ "$captured" -gt 0 ]
