#!/bin/bash
# Real-Slurm integration tests for the stallscope SPANK plugin and helper, on the private dev cluster
# (contrib/dev-cluster). Needs root (boots daemons, switches uids); jobs run as an unprivileged user.
#
#   tests/integration/run_cluster_tests.sh PLUGIN.so HELPER [FAKE_NVML_LIB]
#   (meson: meson test -C build --suite cluster)
#
# Exit 0 all passed, 1 a check failed, 77 skipped (not root / Slurm packages missing).
# STALLSCOPE_KEEP_CLUSTER=1 leaves the cluster running afterwards.
set -u
# meson test sets MALLOC_PERTURB_ (a random byte glibc writes into freed memory) for every test, and the
# Slurm daemons this script starts would inherit it: a multinode CI run had slurmd 22.05 itself abort
# ("double free or corruption" as several steps ended at once; in slurmd the plugin only returns early)
# and the same test passed when rerun without it. The plugin and helper are sanitizer-checked elsewhere.
unset MALLOC_PERTURB_
if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: the cluster tests need root (they boot slurmctld/slurmd and run jobs as another user)"
    exit 77
fi
for b in slurmctld slurmd slurmdbd mariadbd munged sacct sbatch srun python3; do
    if ! PATH=$PATH:/usr/sbin:/sbin command -v "$b" >/dev/null 2>&1; then
        echo "skipped: '$b' not installed; run contrib/install-deps.sh as root"
        exit 77
    fi
done
[ $# -ge 2 ] || { echo "usage: $0 PLUGIN.so HELPER [FAKE_NVML_LIB]" >&2; exit 2; }
PLUGIN=$(readlink -f "$1")
HELPER=$(readlink -f "$2")
FAKE_NVML=${3:+$(readlink -f "$3")}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
export PATH=$PATH:/usr/sbin:/sbin
T0=$(date +%s)

# The plugin reads the job record with stallscope-slurm-job (built next to stallscope.so) before every
# AdminComment write (spank/job_record.h).
JOB_READER=$(dirname "$PLUGIN")/stallscope-slurm-job
export STALLSCOPE_PLUGSTACK_ARGS="job_reader=$JOB_READER ${STALLSCOPE_PLUGSTACK_ARGS:-}"
STALLSCOPE_PLUGIN=$PLUGIN STALLSCOPE_HELPER=$HELPER "$REPO/contrib/dev-cluster/up.sh" ||
    { echo "FAIL: the dev cluster did not boot"; exit 1; }
BOOT_S=$(($(date +%s) - T0))
. "$REPO/contrib/dev-cluster/common.sh"
U=$CLUSTER_USER
UID_U=$(id -u "$U")
LOG=$D/log/slurmd.log
RUNDIR=$D/stallscope-run
cleanup() {
    cp "$D/etc/plugstack.conf.default" "$D/etc/plugstack.conf" 2>/dev/null
    [ "${STALLSCOPE_KEEP_CLUSTER:-0}" = 1 ] || "$REPO/contrib/dev-cluster/down.sh" >/dev/null
}
trap cleanup EXIT

# Replaces plugstack.conf atomically: the spank-epilog of the job that just ended may be reading it
# (a half-written file there means no plugin, no epilog, and run-dir state left behind).
plugstack_from() { cat >"$D/etc/plugstack.conf.new" && mv "$D/etc/plugstack.conf.new" "$D/etc/plugstack.conf"; }

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "  ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "  FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

W=$D/work/run-$$
mkdir -p "$W" && chmod 1777 "$W"
# Job environment: never inherit a STALLSCOPE from whoever runs the tests; fake NVML if built.
JOBENV=(-u STALLSCOPE -u SLURM_SPANK__SLURM_SPANK_OPTION_stallscope_stallscope)
# (The STALLSCOPE_* variables reach the helper through the plugin's env allowlist.)
NVML_FIXTURE=$REPO/fixtures/nodes/dgx-h100/nvml.json
if [ -n "$FAKE_NVML" ] && [ -f "$FAKE_NVML" ] && [ -f "$NVML_FIXTURE" ]; then
    JOBENV+=(STALLSCOPE_NVML_LIBRARY="$FAKE_NVML" STALLSCOPE_FAKE_NVML_FIXTURE="$NVML_FIXTURE")
fi
# as_user DIR CMD...: run as the job user from DIR (created, owned by the user unless it exists).
as_user() {
    local dir=$1
    shift
    [ -d "$dir" ] || { mkdir -p "$dir" && chown "$U" "$dir"; }
    runuser -u "$U" -- env -C "$dir" "${JOBENV[@]}" "$@"
}
# A job's helper, recognised by its output dir (other tests' jobs, e.g. the time-limit one, run
# concurrently); without an argument any helper of this cluster. Only this cluster's: its lock file is
# in this cluster's run dir (the multi-node cluster, which tests/run-all.sh runs at the same time, starts
# the same helper binary for the same user, and its job ids overlap these).
helpers_running() { pgrep -u "$U" -f "$HELPER record --out-dir [^ ]*${1:+stallscope-$1 } .*--lock-file $RUNDIR/" >/dev/null; }
# Inside a job: its own helper, by the output dir under the job's working directory ($W is per run).
JOB_HELPER_PID='pgrep -u $(id -u) -f "record --out-dir $PWD/stallscope-$SLURM_JOB_ID " | head -n 1'
JOB_HELPER="[ -n \"\$($JOB_HELPER_PID)\" ] && echo HELPER_RUNNING"
sacct_field() { sacct -n -X -P -j "$1" -o "$2" 2>/dev/null | head -n 1; }
# wait_for SECONDS CMD...
wait_until() {
    local end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.5
    done
}
state_is() { [[ "$(sacct_field "$1" State)" =~ ^$2 ]]; }
comment_matches() { [[ "$(sacct_field "$1" AdminComment)" =~ $2 ]]; }
jobid_of() { sed -n 's/^JOBID=\([0-9]*\).*/\1/p' <<<"$1" | head -n 1; }
owned_by_user() { [ "$(stat -c %U "$1")" = "$U" ]; }
one_file() { compgen -G "$1" | head -n 1; }
log_has() { grep -qF -- "$1" "$LOG"; }
no_run_state() { ! compgen -G "$RUNDIR/$1*" >/dev/null; }
SUCCEEDED_JOBS=()

runuser -u "$U" -- test -x "$HELPER" || { echo "FAIL: $U cannot execute $HELPER (directory permissions?)"; exit 1; }

echo "== time limit job submitted first (Slurm enforces 1 minute at the earliest; checked at the end)"
TL_ID=$(as_user "$W/timelimit" sbatch --parsable --stallscope=1 -t 1 --wrap 'sleep 600')

echo "== srun --stallscope=1 --gres=gpu:1: files, ownership, JSON, job context, helper lifetime"
out=$(as_user "$W/srun" srun --stallscope=1 --gres=gpu:1 sh -c "echo JOBID=\$SLURM_JOB_ID; sleep 1; $JOB_HELPER; sleep 2")
rc=$?
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
dir=$W/srun/stallscope-$id
check "srun exit code 0 (job $id)" test "$rc" = 0
check "helper runs during the step" grep -q HELPER_RUNNING <<<"$out"
tl=$(one_file "$dir/timeline.*.jsonl.zst")
vd=$(one_file "$dir/verdict.*.json")
check "timeline and verdict exist in $dir" test -n "$tl" -a -n "$vd"
check "files owned by $U" owned_by_user "${tl:-/}"
check "verdict owned by $U" owned_by_user "${vd:-/}"
# The timeline as users read it: `stallscope export` gives its JSON lines.
"$HELPER" export "${tl:-/nonexistent}" >"$W/srun/export.jsonl" || : >"$W/srun/export.jsonl"
check "timeline (export) + verdict parse as JSON with job $id, step 0, 1 GPU" python3 "$HERE/check_json.py" "$W/srun/export.jsonl" ${vd:-/nonexistent} --job "$id" --step 0 --gpus 1
check "the timeline is zstd (stallscope.timeline/3)" eval '[ "$(head -c 4 "${tl:-/dev/null}" | od -An -tx1 | tr -d " ")" = 28b52ffd ]' 
check "no helper left after the step" wait_until 5 eval '! helpers_running "$id"'
check "epilog wrote summary.json as the user" wait_until 20 test -f "$dir/summary.json"
[ -f "$dir/summary.json" ] && check "summary.json owned by $U" owned_by_user "$dir/summary.json"
check "sacct AdminComment carries the stallscope/1 segment" wait_until 20 comment_matches "$id" '^stallscope/1 '
check "epilog removed the run-dir state" wait_until 10 no_run_state "$id"
# What an admin runs: one sacct call, our segment parsed back into a row with the job's verdict.
jobs_lists() { "$HELPER" jobs --all-users --since now-1hours --json | grep -q "\"job_id\": \"$1\""; }
check "stallscope jobs (sacct) lists job $id with its verdict" wait_until 20 jobs_lists "$id"
check "stallscope jobs prints a table row for job $id" eval '"$HELPER" jobs --all-users --since now-1hours | grep -qE "^$id +$U +.*(FAST|SLOW|FAIL_RISK|UNKNOWN)"'

echo "== sbatch --stallscope=1 with two srun steps: option reaches every step, one sampler per node"
printf '#!/bin/sh\nsrun sleep 2\nsrun sleep 2\n' >"$W/sb.sh"
chmod 755 "$W/sb.sh"
out=$(as_user "$W/sbatch" sbatch --parsable --wait --stallscope=1 "$W/sb.sh")
rc=$?
id=${out%%;*}
SUCCEEDED_JOBS+=("$id")
check "sbatch --wait exit code 0 (job $id)" test "$rc" = 0
check "batch-step verdict parses, job context" python3 "$HERE/check_json.py" $(compgen -G "$W/sbatch/stallscope-$id/verdict.*.json" || echo /nonexistent) --job "$id"
check "step 0 got the option from sbatch (node sampled by the batch step)" log_has "job $id step 0: another step of the job samples this node; no helper"
check "step 1 got the option from sbatch (node sampled by the batch step)" log_has "job $id step 1: another step of the job samples this node; no helper"
check "steps 0/1 started no second sampler" eval '! grep -q "job $id step [01]: helper pid" "$LOG"'
check "all three records exit 0:0" test "$(sacct -n -P -j "$id" -o ExitCode | sort -u | tr -d '\n')" = "0:0"
check "AdminComment has the batch step's merged job segment" wait_until 20 comment_matches "$id" "^stallscope/1 .* nodes=1 .*file=[^ ]*/stallscope-$id/summary\\.json"

echo "== no option: no helper, no files"
out=$(as_user "$W/plain" srun sh -c "echo JOBID=\$SLURM_JOB_ID; sleep 1; $JOB_HELPER; true")
rc=$?
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
check "exit code 0 (job $id)" test "$rc" = 0
check "no helper process during the step" eval '! grep -q HELPER_RUNNING <<<"$out"'
check "no stallscope-$id directory" test ! -e "$W/plain/stallscope-$id"
check "no run-dir state" no_run_state "$id"
check "no plugin activity logged" eval '! grep -q "stallscope: job $id " "$LOG"'

echo "== STALLSCOPE=1 in the environment enables it too"
out=$(as_user "$W/envvar" env STALLSCOPE=1 srun sh -c 'echo JOBID=$SLURM_JOB_ID; sleep 2')
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
check "verdict written for job $id" wait_until 5 eval 'compgen -G "$W/envvar/stallscope-$id/verdict.*.json" >/dev/null'

echo "== STALLSCOPE_NCCL_ENV=1: NCCL/PyTorch variables in the step env and the helper's, user values win"
NCCL_SHOW='echo JOBID=$SLURM_JOB_ID; env | grep -E "^(NCCL|TORCH)_"; sleep 1; hp=$('"$JOB_HELPER_PID"'); [ -n "$hp" ] && tr "\0" "\n" </proc/$hp/environ | sed "s/^/HELPERENV:/"; sleep 1'
out=$(as_user "$W/ncclenv" env STALLSCOPE_NCCL_ENV=1 srun --stallscope=1 sh -c "$NCCL_SHOW")
rc=$?
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
ndir=$W/ncclenv/stallscope-$id
check "exit code 0 (job $id)" test "$rc" = 0
check "per-job NCCL_RAS_ADDR in 28100-29123" grep -qx "NCCL_RAS_ADDR=localhost:$((28100 + id % 1024))" <<<"$out"
check "NCCL_RAS_ENABLE=1 and NCCL_DEBUG=WARN" eval 'grep -qx NCCL_RAS_ENABLE=1 <<<"$out" && grep -qx NCCL_DEBUG=WARN <<<"$out"'
check "NCCL_DEBUG_FILE in the job's stallscope dir" grep -qxF "NCCL_DEBUG_FILE=$ndir/nccl.%h.%p.log" <<<"$out"
check "flight recorder prefixes set" eval 'grep -qxF "TORCH_FR_DUMP_TEMP_FILE=$ndir/torch-fr-" <<<"$out" && grep -qxF "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$ndir/torch-fr-" <<<"$out"'
check "no Inspector without nccl_inspector_plugin" eval '! grep -q "^NCCL_PROFILER_PLUGIN=" <<<"$out"'
check "helper env has NCCL_RAS_ADDR and NCCL_DEBUG_FILE" eval 'grep -qx "HELPERENV:NCCL_RAS_ADDR=localhost:$((28100 + id % 1024))" <<<"$out" && grep -qxF "HELPERENV:NCCL_DEBUG_FILE=$ndir/nccl.%h.%p.log" <<<"$out"'
check "helper env has STALLSCOPE_NCCL_LOGS (the debug file glob)" grep -qE "^HELPERENV:STALLSCOPE_NCCL_LOGS=$ndir/nccl\.[^%]+\.\*\.log$" <<<"$out"
check "root created nothing for NCCL in the job dir" test ! -e "$ndir/nccl-inspector"
out=$(as_user "$W/ncclenv" env STALLSCOPE_NCCL_ENV=1 NCCL_DEBUG_FILE=/tmp/mine.%h.log srun --stallscope=1 sh -c "$NCCL_SHOW")
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
check "user-set NCCL_DEBUG_FILE kept (job $id)" grep -qxF "NCCL_DEBUG_FILE=/tmp/mine.%h.log" <<<"$out"
check "the helper sees the user's NCCL_DEBUG_FILE" grep -qxF "HELPERENV:NCCL_DEBUG_FILE=/tmp/mine.%h.log" <<<"$out"
check "RAS port still set next to it" grep -q "^NCCL_RAS_ADDR=localhost:" <<<"$out"
out=$(as_user "$W/ncclenv" env -u STALLSCOPE_NCCL_ENV srun --stallscope=1 sh -c 'echo JOBID=$SLURM_JOB_ID; env')
SUCCEEDED_JOBS+=("$(jobid_of "$out")")
check "NCCL help off by default: no NCCL_ variables" eval '! grep -qE "^NCCL_" <<<"$out"'
# The PyTorch flight recorder is on by default (issue 41; plugstack flight_recorder=0 turns it off): its
# variables and no other TORCH_ one.
FR_VARS='TORCH_NCCL_TRACE_BUFFER_SIZE|TORCH_FR_BUFFER_SIZE|TORCH_NCCL_DUMP_ON_TIMEOUT|TORCH_FR_DUMP_TEMP_FILE|TORCH_NCCL_DEBUG_INFO_TEMP_FILE|TORCH_NCCL_DEBUG_INFO_PIPE_FILE'
check "flight recorder on by default: a buffer size, and no TORCH_ variable but its own" \
    eval 'grep -q "^TORCH_NCCL_TRACE_BUFFER_SIZE=" <<<"$out" && ! grep -E "^TORCH_" <<<"$out" | grep -qvE "^($FR_VARS)="'
# Never against the job: its own buffer size (0: no flight recorder) leaves every TORCH_ variable alone.
out=$(as_user "$W/ncclenv" env -u STALLSCOPE_NCCL_ENV TORCH_NCCL_TRACE_BUFFER_SIZE=0 srun --stallscope=1 sh -c 'echo JOBID=$SLURM_JOB_ID; env')
SUCCEEDED_JOBS+=("$(jobid_of "$out")")
check "a job's TORCH_NCCL_TRACE_BUFFER_SIZE=0 is kept and no TORCH_ variable is added" \
    eval '[ "$(grep -E "^TORCH_" <<<"$out")" = "TORCH_NCCL_TRACE_BUFFER_SIZE=0" ]'

echo "== --gres=gpu:2: the helper records the step's 2 GPUs"
out=$(as_user "$W/gpu2" srun --stallscope=1 --gres=gpu:2 sh -c 'echo JOBID=$SLURM_JOB_ID; sleep 2')
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
tl=$(one_file "$W/gpu2/stallscope-$id/timeline.*.jsonl.zst")
"$HELPER" export "${tl:-/nonexistent}" >"$W/gpu2/export.jsonl" || : >"$W/gpu2/export.jsonl"
check "GPU context = 2 GPUs (job $id)" python3 "$HERE/check_json.py" "$W/gpu2/export.jsonl" $(compgen -G "$W/gpu2/stallscope-$id/verdict.*.json" || echo /nonexistent) --gpus 2

echo "== bad values: one stallscope line, non-zero exit, nothing submitted"
# The newest job id, not a count over the last hour: on a machine that ran the suite an hour ago, old
# jobs leave that window while the checks run.
# slurmdbd learns of a job asynchronously: the gpu2 job just before may reach sacct only while these
# commands run (seen in CI under load), so the last job id this script submitted counts too.
newest_job() { sacct -n -X -a -o JobID -S now-1days 2>/dev/null | grep -oE '^[0-9]+' | sort -n | tail -1; }
before=$(newest_job)
[ "${before:-0}" -ge "${id:-0}" ] || before=$id
err=$(as_user "$W/bad" srun --stallscope=abc true 2>&1)
rc=$?
check "srun --stallscope=abc fails" test "$rc" != 0
check "srun prints our reason first" test "$(head -n 1 <<<"$err")" = "srun: error: stallscope: --stallscope=abc: not a whole number of seconds (sampling interval between 1 and 3600 s)"
check "exactly one stallscope line" test "$(grep -c stallscope: <<<"$err")" = 1
err=$(as_user "$W/bad" sbatch --stallscope=0 --wrap true 2>&1)
rc=$?
check "sbatch --stallscope=0 fails" test "$rc" != 0
check "sbatch names the range" grep -q "stallscope: --stallscope=0: sampling interval must be between 1 and 3600 seconds" <<<"$err"
err=$(as_user "$W/bad" env STALLSCOPE=-3 srun true 2>&1)
check "STALLSCOPE=-3 srun fails naming STALLSCOPE" grep -q "stallscope: STALLSCOPE=-3: must be positive" <<<"$err"
check "no job was submitted by the bad commands" test "$(newest_job)" -le "${before:-0}"

echo "== read-only output dir: job succeeds, verdict in the fallback dir, warning recorded"
mkdir -p "$W/ro" && chown root "$W/ro" && chmod 755 "$W/ro"
out=$(as_user "$W/ro" srun --stallscope=1 sh -c 'echo JOBID=$SLURM_JOB_ID; sleep 2')
rc=$?
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
check "exit code 0 (job $id)" test "$rc" = 0
check "nothing created in the read-only dir" test ! -e "$W/ro/stallscope-$id"
wait_until 20 comment_matches "$id" 'file=/'
vfile=$(sed -n 's/.* file=\([^ ]*\).*/\1/p' <<<"$(sacct_field "$id" AdminComment)")
check "verdict in a fallback dir ($vfile)" test -n "$vfile" -a -f "${vfile:-/nonexistent}"
check "fallback dir is not the read-only one" test "${vfile#$W/ro}" = "$vfile"
check "the fallback is recorded as a warning" grep -rqi "not writable" "$(dirname "${vfile:-/nonexistent/x}")"

echo "== missing helper binary: job succeeds, clear slurmd log line"
sed "s#helper=[^ ]*#helper=/nonexistent/stallscope#" "$D/etc/plugstack.conf.default" | plugstack_from
out=$(as_user "$W/nohelper" srun --stallscope=1 sh -c 'echo JOBID=$SLURM_JOB_ID')
rc=$?
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
plugstack_from <"$D/etc/plugstack.conf.default"
check "exit code 0 (job $id)" test "$rc" = 0
check "slurmd log says why" log_has "stallscope: job $id step 0: cannot start helper /nonexistent/stallscope: exec failed: No such file or directory"

echo "== allow_test_env=0 (production default): a job's STALLSCOPE_NVML_LIBRARY does not reach the helper"
sed "s#allow_test_env=1#allow_test_env=0#" "$D/etc/plugstack.conf.default" | plugstack_from
HELPER_ADJ='cat /proc/$('"$JOB_HELPER_PID"')/oom_score_adj | sed "s/^/HELPER_ADJ=/"'
out=$(as_user "$W/noseams" srun --stallscope=1 --gres=gpu:1 sh -c "echo JOBID=\$SLURM_JOB_ID; sleep 1; $HELPER_ADJ; sleep 1")
rc=$?
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
plugstack_from <"$D/etc/plugstack.conf.default"
check "exit code 0 (job $id)" test "$rc" = 0
check "the helper runs at oom_score_adj 0" grep -qx "HELPER_ADJ=0" <<<"$out"
if [ -n "$FAKE_NVML" ]; then  # the first srun test saw the fixture's GPU through the same variables
    vd=$(one_file "$W/noseams/stallscope-$id/verdict.*.json")
    check "no GPU seen: the fake NVML of the job env was not loaded" python3 -c \
        'import json, sys; sys.exit(json.load(open(sys.argv[1]))["inventory"]["gpus"] != [])' "${vd:-/nonexistent}"
fi

echo "== slurmctld-epilog.sh finds the verdict of a job submitted with --chdir (under the submit dir)"
sed 's#$# comment=none#' "$D/etc/plugstack.conf.default" | plugstack_from
mkdir -p "$W/epi/work" && chown "$U" "$W/epi/work"
id=$(as_user "$W/epi/submit" sbatch --parsable --wait --stallscope=1 --chdir="$W/epi/work" --wrap 'sleep 3')
SUCCEEDED_JOBS+=("$id")
plugstack_from <"$D/etc/plugstack.conf.default"
check "verdict under the submit dir, none under the work dir (job $id)" eval \
    'compgen -G "$W/epi/submit/stallscope-$id/verdict.*.json" >/dev/null && [ ! -e "$W/epi/work/stallscope-$id" ]'
SLURM_JOB_ID=$id SLURM_JOB_USER=$U SLURM_JOB_WORK_DIR=$W/epi/work STALLSCOPE_EPILOG_DELAY=1 \
    STALLSCOPE_BIN=$HELPER "$REPO/contrib/slurm/slurmctld-epilog.sh" 2>"$W/epi/epilog.err"
# The job segment (report --comment), as the job's writer composes it: a top reason and nodes=. The label is
# lowercase on 22.05 (its sacctmgr lowercases the value it sets), as written on 26.05.
check "the slurmctld epilog wrote AdminComment from the submit dir's recording" \
    wait_until 10 comment_matches "$id" "^stallscope/1 [A-Za-z_]+ conf=[0-9.]+( top=[^ ]+)? nodes=1 .*file=$W/epi/submit/stallscope-$id"

echo "== AdminComment: a pre-existing JS1: value set by root survives"
id=$(as_user "$W/js1" sbatch --parsable --stallscope=1 --wrap 'sleep 6')
SUCCEEDED_JOBS+=("$id")
wait_until 20 state_is "$id" RUNNING
scontrol update JobId="$id" AdminComment="JS1:preexisting=1"
check "job $id completes" wait_until 30 state_is "$id" COMPLETED
check "AdminComment = JS1 value + our segment" wait_until 20 comment_matches "$id" '^JS1:preexisting=1; stallscope/1 '

echo "== the helper runs with the job's umask (SLURM_UMASK; issue 36, L8)"
out=$(as_user "$W/umask" bash -c 'umask 077; srun --stallscope=1 sh -c "echo JOBID=\$SLURM_JOB_ID; sleep 2"')
id=$(jobid_of "$out")
SUCCEEDED_JOBS+=("$id")
check "a umask-077 job's directory is 0700, not 0755 (job $id)" \
    test "$(stat -c %a "$W/umask/stallscope-$id" 2>/dev/null)" = 700

echo "== AdminComment (issue 36, M1): a JobName with \\n\\n renamed in a loop while the job ends forges and removes nothing"
id=$(as_user "$W/m1" sbatch --parsable --stallscope=1 --wrap 'sleep 8')
SUCCEEDED_JOBS+=("$id")
wait_until 20 state_is "$id" RUNNING
scontrol update JobId="$id" AdminComment="JS1:abc def Foo=bar"
# The review's names: A ends the job's record early in `scontrol show job`, B forges the one-liner.
cat >"$W/m1/rename.sh" <<'RENAME'
#!/bin/bash
A=$'x\n   WorkDir=/f\n   AdminComment=JS1:FORGED_BY_USER\n\nz'
B='x WorkDir=/f AdminComment=JS1:FORGED_BY_USER z'
while squeue -h -j "$1" 2>/dev/null | grep -q .; do
    scontrol update JobId="$1" JobName="$A" 2>/dev/null
    scontrol update JobId="$1" JobName="$B" 2>/dev/null
done
RENAME
chmod 755 "$W/m1/rename.sh"
as_user "$W/m1" "$W/m1/rename.sh" "$id" &
RENAMER=$!
check "job $id completes while renamed in a loop" wait_until 40 state_is "$id" COMPLETED
wait "$RENAMER" 2>/dev/null
check "AdminComment is the JS1 value + our segment, byte for byte" \
    wait_until 20 comment_matches "$id" '^JS1:abc def Foo=bar; stallscope/1 [A-Z_]+ [^;]*$'
check "no forged text in AdminComment ($(sacct_field "$id" AdminComment))" \
    eval '! grep -q FORGED <<<"$(sacct_field "$id" AdminComment)"'
check "the plugin logged the write for job $id" log_has "stallscope: job $id step batch: job comment written: stallscope/1 "

echo "== scancel mid-run: verdict still written, no helper left"
id=$(as_user "$W/cancel" sbatch --parsable --stallscope=1 --wrap 'sleep 300')
CANCEL_ID=$id
wait_until 20 state_is "$id" RUNNING
sleep 3
scancel "$id"
check "job $id CANCELLED" wait_until 30 state_is "$id" CANCELLED
check "verdict written after scancel" wait_until 20 eval 'compgen -G "$W/cancel/stallscope-$id/verdict.*.json" >/dev/null'
check "helper stopped gracefully (no SIGKILL)" eval '! grep -q "job $id step batch: helper .* killed it" "$LOG"'

echo "== time limit: verdict still written"
check "job $TL_ID reached TIMEOUT" wait_until 150 state_is "$TL_ID" TIMEOUT
check "verdict written after the time limit" wait_until 20 eval 'compgen -G "$W/timelimit/stallscope-$TL_ID/verdict.*.json" >/dev/null'

. "$HERE/fault_tests.sh"

echo "== global: no job failed because of stallscope, nothing left behind"
for j in "${SUCCEEDED_JOBS[@]}"; do
    check "job $j COMPLETED 0:0" test "$(sacct_field "$j" State)|$(sacct_field "$j" ExitCode)" = "COMPLETED|0:0"
done
check "no helper process left" wait_until 10 eval '! helpers_running'
for j in "${SUCCEEDED_JOBS[@]}" "$TL_ID" "$CANCEL_ID"; do
    check "run-dir state of job $j removed by the epilog" wait_until 20 no_run_state "$j"
done

echo "== $PASS passed, $FAIL failed; boot ${BOOT_S} s, total $(($(date +%s) - T0)) s; logs: $D/log"
[ "$FAIL" = 0 ]
