#!/bin/bash
# Multi-node Slurm tests (contrib/dev-cluster/up-multinode.sh: 3 slurmd in network namespaces): one
# job verdict, merged once and written to the job comment once per job, whatever the node count.
# Node n2 has an RDMA port DOWN (mlx5_0/1, link polling) and ACK timeouts; node n3 is a straggler (GPUs at
# 15 % while the others run at 95 %). Four jobs run at once:
#   A  sbatch -N3 --stallscope=1 with srun -N3           (writer: the batch step's helper on n1)
#   B  srun -N3 --stallscope=1 alone                     (writer: the step's node 0)
#   C  sbatch -N3 with two concurrent srun -N3 steps     (two steps per node; one sampler per node)
#   D  srun -N3 whose helper on n3 is SIGKILLed          (the comment names n3 as missing)
#   E  sbatch -N3 whose writer (batch helper, n1) is SIGKILLed: only n1's job_epilog summarizes
#   F  two srun --stallscope steps in a batch job that does not record: step 0 merges and writes, step 1
#      keeps the comment, n1's epilog merges once at the end
#   G  sbatch -N3 cancelled mid-step: no helper left, at most one write, a summary
#   H  a job array of 2 tasks: each task is its own job, with its own single comment write
# Then `stallscope nodes` over these jobs names n2, the node that failed its job-mates (issue 39), and two
# more jobs hang while they run (tests/integration/multinode_hang.sh, issue 41).
# The comment writes are counted twice: the plugin's "job comment written" lines in the three slurmd
# logs, and slurmctld's own log of AdminComment updates (SlurmctldDebug=debug).
#
#   tests/integration/multinode_tests.sh PLUGIN.so HELPER FAKE_NVML_LIB
# Exit 0 passed, 1 a check failed, 77 skipped (not root, no ip/unshare/nsenter, Slurm missing).
set -u
# meson test sets MALLOC_PERTURB_ (a random byte glibc writes into freed memory) for every test, and the
# Slurm daemons this script starts would inherit it: a multinode CI run had slurmd 22.05 itself abort
# ("double free or corruption" as several steps ended at once; in slurmd the plugin only returns early)
# and the same test passed when rerun without it. The plugin and helper are sanitizer-checked elsewhere.
unset MALLOC_PERTURB_
if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: the multi-node tests need root (network namespaces, daemons, job uids)"
    exit 77
fi
for b in ip unshare nsenter slurmctld slurmd slurmdbd mariadbd munged sacct sbatch srun python3; do
    if ! PATH=$PATH:/usr/sbin:/sbin command -v "$b" >/dev/null 2>&1; then
        echo "skipped: '$b' not installed; run contrib/install-deps.sh as root"
        exit 77
    fi
done
[ $# -ge 3 ] || { echo "usage: $0 PLUGIN.so HELPER FAKE_NVML_LIB" >&2; exit 2; }
# A mount namespace of its own, with a private /run/munge: Slurm 22.05's clients only talk to munged's
# default socket, and tests/run-all.sh runs this beside the single-node cluster, which starts (or reuses)
# a munged there. Shared, it would be stopped by whichever cluster ends first. In here this cluster
# starts its own and stops it (contrib/dev-cluster/common.sh boot_munge); everything it starts (daemons,
# jobs, node namespaces) inherits the mount.
if [ "${STALLSCOPE_MULTINODE_OWN_MOUNTS:-}" != 1 ]; then
    mkdir -p /run/munge
    exec env STALLSCOPE_MULTINODE_OWN_MOUNTS=1 unshare --mount --propagation private "$0" "$@"
fi
mount -t tmpfs -o mode=755,size=1m stallscope-munge /run/munge || { echo "FAIL: a private /run/munge"; exit 1; }
PLUGIN=$(readlink -f "$1")
HELPER=$(readlink -f "$2")
FAKE_NVML=$(readlink -f "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export PATH=$PATH:/usr/sbin:/sbin
# Its own directory and ports: never the single-node cluster's (tests/integration/run_cluster_tests.sh).
export STALLSCOPE_CLUSTER_DIR=${STALLSCOPE_MULTINODE_DIR:-/tmp/stallscope-multinode}
export STALLSCOPE_CLUSTER_PORT_BASE=${STALLSCOPE_MULTINODE_PORT_BASE:-18817}
T0=$(date +%s)
. "$REPO/contrib/dev-cluster/common.sh"
. "$REPO/contrib/dev-cluster/multinode-common.sh"
cleanup() {
    [ -n "${WRITER_PID:-}" ] && kill "$WRITER_PID" 2>/dev/null
    [ "${STALLSCOPE_KEEP_CLUSTER:-0}" = 1 ] || "$REPO/contrib/dev-cluster/down-multinode.sh" >/dev/null
}
trap cleanup EXIT
export STALLSCOPE_PLUGSTACK_ARGS="job_reader=$(dirname "$PLUGIN")/stallscope-slurm-job ${STALLSCOPE_PLUGSTACK_ARGS:-}"
STALLSCOPE_PLUGIN=$PLUGIN STALLSCOPE_HELPER=$HELPER "$REPO/contrib/dev-cluster/up-multinode.sh" ||
    { echo "FAIL: the multi-node cluster did not boot"; exit 1; }
BOOT_S=$(($(date +%s) - T0))
U=$CLUSTER_USER

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "  ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "  FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
wait_until() {
    local end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.5
    done
}
runuser -u "$U" -- test -x "$HELPER" || { echo "FAIL: $U cannot execute $HELPER (directory permissions?)"; exit 1; }

# ---- node trees: a fresh copy each run, then the faults ------------------------------------------
FIXTURE=$REPO/fixtures/nodes/dgx-h100
for n in $(node_names); do
    L=$D/nodes/$n/local
    rm -rf "$L/fixture" && cp -a "$FIXTURE" "$L/fixture"
done
PORT=$D/nodes/n2/local/fixture/sys/class/infiniband/mlx5_0/ports/1
echo "1: DOWN" >"$PORT/state"
echo "2: Polling" >"$PORT/phys_state"
sed -i 's/"utilization_gpu_pct": [0-9]*/"utilization_gpu_pct": 15/' "$D/nodes/n3/local/fixture/nvml.json"
# ACK timeouts on n2 move while the jobs run (bounded: stops after 120 s or at cleanup).
ACK=$PORT/hw_counters/local_ack_timeout_err
(
    v=$(cat "$ACK")
    for _ in $(seq 1 240); do
        v=$((v + 7))
        echo "$v" >"$ACK.tmp" && mv "$ACK.tmp" "$ACK"
        sleep 0.5
    done
) &
WRITER_PID=$!

W=$D/work/run-$$
mkdir -p "$W" && chmod 1777 "$W"
JOBENV=(-u STALLSCOPE -u SLURM_SPANK__SLURM_SPANK_OPTION_stallscope_stallscope
    STALLSCOPE_SYSFS_ROOT="$D/local/fixture/sys" STALLSCOPE_PROCFS_ROOT="$D/local/fixture/proc"
    STALLSCOPE_NVML_LIBRARY="$FAKE_NVML" STALLSCOPE_FAKE_NVML_FIXTURE="$D/local/fixture/nvml.json")
as_user() {
    local dir=$1
    shift
    mkdir -p "$dir" && chown "$U" "$dir"
    runuser -u "$U" -- env -C "$dir" "${JOBENV[@]}" "$@"
}
# Long enough for a verdict (min_step_seconds=30); the nine jobs share the nodes' 12 (configured) CPUs.
STEP=34
echo "== eight 3-node jobs at once (${STEP} s steps)"
# Job D: the helper of this job on this node (same UTS namespace = same node) is SIGKILLed on n3.
KILL_OWN_HELPER='for p in $(pgrep -u $(id -u) -f "record --out-dir '"$W"'/[a-z]/stallscope-$SLURM_JOB_ID( |\$)"); do
  [ "$(readlink /proc/$p/ns/uts)" = "$(readlink /proc/self/ns/uts)" ] && kill -KILL $p; done'
JA=$(as_user "$W/a" env STALLSCOPE_NCCL_ENV=1 sbatch --parsable -N3 --stallscope=1 -o "$W/a/out" \
    --wrap "srun -N3 sh -c 'echo NCCL_DEBUG_FILE=\$NCCL_DEBUG_FILE; sleep $STEP'")
JC=$(as_user "$W/c" sbatch --parsable -N3 --stallscope=1 \
    --wrap "srun -N3 --overlap sleep $STEP & srun -N3 --overlap sleep $STEP & wait")
JE=$(as_user "$W/e" sbatch --parsable -N3 --stallscope=1 --wrap "sleep 3; $KILL_OWN_HELPER; srun -N3 sleep $STEP")
JF=$(as_user "$W/f" sbatch --parsable -N3 --wrap "srun -N3 --stallscope=1 sleep 5; srun -N3 --stallscope=1 sleep 5")
JH=$(as_user "$W/h" sbatch --parsable -N3 --stallscope=1 --array=1-2 --wrap "srun -N3 sleep 5")
JG=$(as_user "$W/g" sbatch --parsable -N3 --stallscope=1 --wrap "srun -N3 sleep 300")
as_user "$W/b" srun -N3 --stallscope=1 sh -c "[ \$SLURM_NODEID = 0 ] && echo JOBID=\$SLURM_JOB_ID; sleep $STEP" \
    >"$W/b.out" 2>&1 &
SRUN_B=$!
as_user "$W/d" srun -N3 --stallscope=1 sh -c "[ \$SLURM_NODEID = 0 ] && echo JOBID=\$SLURM_JOB_ID; sleep 4;
    [ \$(hostname) = n3 ] && { $KILL_OWN_HELPER; }; sleep $((STEP - 4))" >"$W/d.out" 2>&1 &
SRUN_D=$!
T_JOBS=$(date +%s)
sleep 12
scancel "$JG"
wait "$SRUN_B"
RC_B=$?
wait "$SRUN_D"
RC_D=$?
JB=$(sed -n 's/^JOBID=\([0-9]*\).*/\1/p' "$W/b.out" | head -n 1)
JD=$(sed -n 's/^JOBID=\([0-9]*\).*/\1/p' "$W/d.out" | head -n 1)
sacct_field() { sacct -n -X -P -j "$1" -o "$2" 2>/dev/null | head -n 1; }
finished() { [[ "$(sacct_field "$1" State)" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT) ]]; }
check "srun-only job B ($JB) exit 0" test "$RC_B" = 0 -a -n "$JB"
check "srun-only job D ($JD) exit 0" test "$RC_D" = 0 -a -n "$JD"
check "batch jobs A ($JA), C ($JC), E ($JE), F ($JF), G ($JG) finished" wait_until 60 \
    eval 'finished "$JA" && finished "$JC" && finished "$JE" && finished "$JF" && finished "$JG"'
# The array's tasks, each its own job id (JobIDRaw).
JH_TASKS=$(sacct -n -X -P -j "$JH" -o JobIDRaw 2>/dev/null | sort -n | tr '\n' ' ')
check "array job $JH: 2 tasks ($JH_TASKS), both finished" \
    wait_until 30 eval '[ "$(for t in $JH_TASKS; do finished "$t" && echo x; done | wc -l)" = 2 ]'
JOBS_S=$(($(date +%s) - T_JOBS))
check "A, C and E completed" test "$(sacct_field "$JA" State)$(sacct_field "$JC" State)$(sacct_field "$JE" State)" = \
    COMPLETEDCOMPLETEDCOMPLETED
# The epilogs (every node) finish shortly after the job; give them a moment before counting.
epilog_done() { ! compgen -G "$D/nodes/n*/local/stallscope-run/$1.*" >/dev/null; }
for j in "$JA" "$JB" "$JC" "$JD" "$JE" "$JF" "$JG" $JH_TASKS; do
    check "job $j: every node's epilog removed its run-dir state" wait_until 30 epilog_done "$j"
done

NODE_LOGS=$(for n in $(node_names); do echo "$D/nodes/$n/local/slurmd.log"; done)
plugin_writes() { cat $NODE_LOGS | grep -c "stallscope: job $1 step [^ ]*: job comment written: "; }
# slurmctld logs every AdminComment it sets (job_mgr.c, "setting admin_comment ... for JobId=N"); the
# log file has each line twice (its own "[time] ..." line and the "slurmctld: ..." stderr copy).
ctld_writes() { grep -cE "^\[[^]]*\] _update_job: setting admin_comment .* for JobId=$1\$" "$D/log/slurmctld.log"; }
epilog_summaries() { cat $NODE_LOGS | grep -c "stallscope: job $1: epilog summarized"; }
# By JobIDRaw: `sacct -j <array id>` lists every task of the array, the asked-for one not necessarily first.
comment() { sacct -n -X -P -j "$1" -o JobIDRaw,AdminComment 2>/dev/null | awk -F'|' -v id="$1" '$1 == id {print $2; exit}'; }
owned_by_user() { [ -z "$(find "$1" ! -user "$U" -print -quit)" ]; }
# Only this run's helpers: other clusters on the machine may run jobs as the same user with the same ids.
no_helpers() { ! pgrep -u "$U" -f "record --out-dir $W/[a-z]/stallscope-$1( |\$)" >/dev/null; }

check_job() {
    local id=$1 dir=$2 what=$3 c
    c=$(comment "$id")
    echo "-- job $id ($what): AdminComment: $c"
    check "job $id: ONE comment write (plugin log: $(plugin_writes "$id"))" test "$(plugin_writes "$id")" = 1
    check "job $id: ONE AdminComment update at slurmctld ($(ctld_writes "$id"))" test "$(ctld_writes "$id")" = 1
    check "job $id: comment is the merged FAIL_RISK of 3 nodes" \
        eval '[[ "$c" =~ ^stallscope/1\ FAIL_RISK\ .*\ nodes=3\  ]]'
    check "job $id: root cause on n2 (port down / ACK timeouts)" \
        eval '[[ "$c" =~ \ top=fabric_(port_down|ack_timeout):n2: ]]'
    check "job $id: straggler n3 named" eval '[[ "$c" =~ \ stragglers=([^ ]*,)?n3[\ ,] ]]'
    check "job $id: comment points at summary.json" eval '[[ "$c" =~ \ file=$dir/summary.json$ ]]'
    check "job $id: summary.json written by the writer, not re-done by an epilog" \
        test -f "$dir/summary.json" -a "$(epilog_summaries "$id")" = 0
    check "job $id: every file in $dir owned by $U" owned_by_user "$dir"
    check "job $id: no helper process left" no_helpers "$id"
}
check_job "$JA" "$W/a/stallscope-$JA" "sbatch + srun -N3"
check "job $JA: the batch step wrote it" eval 'cat $NODE_LOGS | grep -q "job $JA step batch: job comment written"'
check "job $JA: batch on n1, step 0 on n2 and n3, 3 verdicts" test "$(cd "$W/a/stallscope-$JA" && ls verdict.*.json | tr '\n' ' ')" = \
    "verdict.0.n2.json verdict.0.n3.json verdict.batch.n1.json "
check "job $JA: the NCCL env help reached step 0 on every node, n1 included (sampled by the batch step)" \
    test "$(grep -cxF "NCCL_DEBUG_FILE=$W/a/stallscope-$JA/nccl.%h.%p.log" "$W/a/out")" = 3
check "job $JA: step 0 on n1 started no second sampler" \
    eval 'grep -q "job $JA step 0: another step of the job samples this node" "$D/nodes/n1/local/slurmd.log"'
check_job "$JB" "$W/b/stallscope-$JB" "srun -N3 alone"
check "job $JB: step 0's node 0 (n1) wrote it" \
    eval 'grep -q "job $JB step 0: job comment written" "$D/nodes/n1/local/slurmd.log"'
check_job "$JC" "$W/c/stallscope-$JC" "two steps per node"
check "job $JC: one timeline per node" test "$(ls "$W/c/stallscope-$JC"/timeline.*.jsonl.zst | wc -l)" = 3
echo "-- job $JD (helper killed on n3): AdminComment: $(comment "$JD")"
check "job $JD: ONE comment write ($(plugin_writes "$JD"))" test "$(plugin_writes "$JD")" = 1
check "job $JD: n3 named missing, root cause still n2" \
    eval '[[ "$(comment "$JD")" =~ ^stallscope/1\ FAIL_RISK\ .*top=fabric_[a-z_]*:n2:.*\ missing=n3\  ]]'
check "job $JD: n3's plugin logged the dead helper" \
    eval 'grep -q "job $JD step 0: helper [0-9]* died during the step" "$D/nodes/n3/local/slurmd.log"'
check "job $JD: no helper process left" no_helpers "$JD"

echo "-- job $JE (writer helper killed on n1): AdminComment: $(comment "$JE")"
check "job $JE: summary.json written once, by n1's job_epilog (the writer node) only" \
    eval 'test -f "$W/e/stallscope-$JE/summary.json" && [ "$(epilog_summaries "$JE")" = 1 ] &&
        grep -q "job $JE: epilog summarized" "$D/nodes/n1/local/slurmd.log"'
check "job $JE: at most one comment write ($(plugin_writes "$JE"))" test "$(plugin_writes "$JE")" -le 1
check "job $JE: every file owned by $U" owned_by_user "$W/e/stallscope-$JE"

N1_LOG=$D/nodes/n1/local/slurmd.log
echo "-- job $JF (two srun-only steps): AdminComment: $(comment "$JF")"
check "job $JF: step 0 merged (job writer), step 1 only wrote its node segment (comment writer)" \
    eval 'grep -q "job $JF step 0: helper pid .*, job writer)" "$N1_LOG" &&
        grep -q "job $JF step 1: helper pid .*, comment writer)" "$N1_LOG"'
check "job $JF: one comment write, kept by step 1 ($(plugin_writes "$JF"))" \
    eval '[ "$(plugin_writes "$JF")" = 1 ] && grep -q "job $JF step 1: job comment kept" "$N1_LOG"'
check "job $JF: the comment is the merged job segment" eval '[[ "$(comment "$JF")" =~ \ nodes=3\ .*file=$W/f/stallscope-$JF/summary.json ]]'
check "job $JF: the stale summary merged once more, by n1's epilog only" \
    eval '[ "$(epilog_summaries "$JF")" = 1 ] && grep -q "job $JF: epilog summarized" "$N1_LOG"'
check "job $JF: summary.json covers both steps (6 node recordings)" eval \
    'python3 -c "import json,sys; sys.exit(len(json.load(open(\"$W/f/stallscope-$JF/summary.json\"))[\"nodes\"]) != 6)"'
echo "-- job $JG (cancelled): $(sacct_field "$JG" State), AdminComment: $(comment "$JG")"
check "job $JG: cancelled" eval '[[ "$(sacct_field "$JG" State)" =~ ^CANCELLED ]]'
check "job $JG: no helper process left" no_helpers "$JG"
check "job $JG: at most one comment write ($(plugin_writes "$JG")), at most one epilog summary" \
    eval '[ "$(plugin_writes "$JG")" -le 1 ] && [ "$(epilog_summaries "$JG")" -le 1 ]'
check "job $JG: a summary.json, owned by $U" eval 'test -f "$W/g/stallscope-$JG/summary.json" && owned_by_user "$W/g/stallscope-$JG"'
# The post-job writer (EpilogSlurmctld) for a cancelled job: the comment it leaves is the merged job
# segment, as the job's writer composes it, not one node's. Lower-case foreign content first (sacctmgr
# lowercases what it sets), replacing whatever the plugin managed to write before the cancel.
sacctmgr -i modify job where jobid="$JG" set AdminComment="js1:before" >/dev/null 2>&1
SLURM_JOB_ID=$JG SLURM_JOB_USER=$U SLURM_JOB_WORK_DIR=$W/g STALLSCOPE_EPILOG_DELAY=0 STALLSCOPE_BIN=$HELPER \
    "$REPO/contrib/slurm/slurmctld-epilog.sh" 2>"$W/g.epilog.err"
echo "-- job $JG after slurmctld-epilog.sh: AdminComment: $(comment "$JG")"
# (sacctmgr lowercases the path too: compared lowercased.)
epilog_segment_ok() {
    local re="^js1:before; stallscope/1 [a-z_]+ conf=[0-9.]+( top=[^ ]+)? nodes=3 .*file=${W,,}/g/stallscope-$JG/summary\.json$"
    [[ "$(comment "$JG")" =~ $re ]]
}
check "job $JG: slurmctld-epilog.sh appends the merged 3-node segment to the foreign one" epilog_segment_ok

array_task_ok() {
    [ "$(plugin_writes "$1")" = 1 ] && [[ "$(comment "$1")" =~ \ nodes=3\ .*file=$W/h/stallscope-$1/summary.json$ ]]
}
# Every task, the one whose id is the array's id too (scontrol show job <that id> lists every task: only
# the record with exactly this JobId is read, spank/comment.cc).
for t in $JH_TASKS; do
    check "array task $t: its own comment, written once, for its own dir" array_task_ok "$t"
done

# `stallscope nodes` (issue 39) over this run's jobs: n2 (port down) is the root cause job after job while
# its job-mate n1 is fine: n2 must be a drain candidate with those jobs as evidence, n1 never named.
SINCE=$(date -d "@$T0" +%Y-%m-%dT%H:%M:%S)
"$HELPER" nodes --all-users --since "$SINCE" --json >"$W/nodes.json" 2>"$W/nodes.err"
check "stallscope nodes: exit 0 ($(head -c 200 "$W/nodes.err"))" test -s "$W/nodes.json"
nodes_names_n2() {
    python3 - "$W/nodes.json" "$JA" "$JB" "$JC" "$JD" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
drain = {d["node"]: d for d in r["drain_candidates"]}
n2 = drain.get("n2")
ok = (n2 is not None and n2["root_cause"] >= 3 and n2["command"].startswith("scontrol update NodeName=n2 State=DRAIN")
      and set(sys.argv[2:]) & set(n2["recent_job_ids"])  # the last 5 jobs that named it
      and "n1" not in drain and all(t["node"] != "n1" for t in r["ranked"] + r["too_few_jobs"]))
print("n2:", n2 and {k: n2[k] for k in ("jobs", "named", "root_cause", "straggler", "missing", "recent_job_ids")},
      "drain:", sorted(drain))
sys.exit(0 if ok else 1)
PY
}
check "stallscope nodes: n2 is a drain candidate (root cause in >= 3 jobs), n1 is never named" nodes_names_n2
"$HELPER" nodes --all-users --since "$SINCE" >"$W/nodes.txt" 2>&1
check "stallscope nodes: the table prints the drain command for n2" \
    grep -q "^    scontrol update NodeName=n2 State=DRAIN Reason='stallscope: named in " "$W/nodes.txt"
sed 's/^/   | /' "$W/nodes.txt"

# Issue 41: two jobs hang while they run (evidence on every node, the culprit named, watch shows it).
. "$HERE/multinode_hang.sh"

echo "== teardown"
"$REPO/contrib/dev-cluster/down-multinode.sh" >/dev/null
check "no namespace left" eval '! ip netns list | grep -q "ss$CTLD_PORT-"'
check "no bridge or veth left" eval '! ip link show | grep -qE "$BRIDGE|ssv$CTLD_PORT-"'
# (Its helpers by their lock file in this cluster's run dir: the single-node cluster may run the same binary.)
check "no daemon or helper of the cluster left" eval '! pgrep -f "slurmd -D -N n[0-9]|$HELPER record .*--lock-file $D/local/" >/dev/null'
check "no mount of the node trees left on the host" eval '! grep -q " $D/local " /proc/self/mountinfo'
STALLSCOPE_KEEP_CLUSTER=1  # already down
echo "multinode: boot ${BOOT_S} s, jobs ${JOBS_S} s, total $(($(date +%s) - T0)) s; $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
