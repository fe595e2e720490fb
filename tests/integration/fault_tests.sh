# Fault injection on the real cluster, sourced by run_cluster_tests.sh (uses its variables and check
# helpers). Every fault: the job's exit code is unchanged, its runtime too (within 1 s of a fault-free
# step of the same length), nothing the helper flushed is lost, and the verdict (or the job comment, when
# there is no verdict to write) names the fault.

STEP_SECONDS=10
# fault_step NAME [SRUN ARGS...]: a 10 s step with --stallscope=1 in $W/NAME, in the background.
fault_step() {
    local name=$1
    shift
    FDIR=$W/$name
    FOUT=$W/${name//\//_}.out  # srun's own output, never on the (full) disk under test
    mkdir -p "$FDIR" && chown "$U" "$FDIR"
    FSTART=$(date +%s.%N)
    as_user "$FDIR" srun --stallscope=1 "$@" sh -c "echo JOBID=\$SLURM_JOB_ID; sleep $STEP_SECONDS" \
        >"$FOUT" 2>&1 &
    FPID=$!
}
# finish_step: waits for it; sets FRC (srun's exit code), FID (job id), FOVER (wall time - 10 s).
finish_step() {
    wait "$FPID"
    FRC=$?
    FOVER=$(awk -v a="$FSTART" -v b="$(date +%s.%N)" -v s="$STEP_SECONDS" 'BEGIN { printf "%.2f", b - a - s }')
    FID=$(jobid_of "$(cat "$FOUT")")
}
# The step's helper pid, once it runs.
step_helper() { pgrep -u "$U" -f "$HELPER record --out-dir $FDIR/stallscope-" | head -n 1; }
# Not delayed: at most 1 s over the fault-free reference step, and the step's own STEP_SECONDS ran in full
# (a step cut short would end early). One-sided: the Slurm matrix runs beside builds, where the reference
# step once took 1.8-1.9 s over and the faulted steps 0.7 s after it, which a two-sided check failed.
same_runtime() { awk -v a="$FOVER" -v b="$BASE_OVER" 'BEGIN { exit !(a - b <= 1 && a >= 0) }'; }
# count_lines TYPE [KIND] FILE: lines of a timeline with that "type" (and event "kind"); every line but a
# torn last one must parse, else the count is -1. A v2 .jsonl.zst is read through `stallscope export` (what
# users are told to run); export failing counts as -1.
count_lines() {
    local path=${*: -1} plain
    plain=$path
    if [[ $path == *.zst ]]; then
        plain=$(mktemp)
        "$HELPER" export "$path" >"$plain" 2>/dev/null || { echo -1; rm -f "$plain"; return; }
    fi
    python3 - "${@:1:$#-1}" "$plain" <<'PY'
import json, sys
args = sys.argv[1:]
path, kind = args[-1], (args[1] if len(args) == 3 else None)
lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
n = 0
for i, line in enumerate(lines):
    if not line:
        continue
    try:
        j = json.loads(line)
    except ValueError:
        if i == len(lines) - 1:
            continue  # torn last line, allowed
        print(-1)
        sys.exit()
    n += j.get("type") == args[0] and (kind is None or j.get("kind") == kind)
print(n)
PY
    [ "$plain" = "$path" ] || rm -f "$plain"
}
json_field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@" 2>/dev/null; }

echo "== faults: a fault-free ${STEP_SECONDS} s step, the runtime reference"
fault_step base
finish_step
BASE_OVER=$FOVER
SUCCEEDED_JOBS+=("$FID")
check "reference step exit code 0 (job $FID, ${FOVER} s over ${STEP_SECONDS} s)" test "$FRC" = 0

echo "== fault: helper SIGKILLed mid-step"
fault_step kill
wait_until 10 eval 'test -n "$(step_helper)"'
sleep 4
kill -KILL "$(step_helper)"
finish_step
SUCCEEDED_JOBS+=("$FID")
tl=$(one_file "$FDIR/stallscope-$FID/timeline.*.jsonl.zst")
check "exit code 0 (job $FID)" test "$FRC" = 0
check "runtime unchanged (${FOVER} s over the step vs ${BASE_OVER} s)" same_runtime
check "the flushed samples are intact (>= 4 complete sample lines)" test "$(count_lines sample "${tl:-/dev/null}")" -ge 4
check "slurmd log names the dead helper" log_has "stallscope: job $FID step 0: helper"
check "... as died during the step without a verdict" grep -q "job $FID step 0: helper [0-9]* died during the step without a verdict" "$LOG"
check "AdminComment says UNKNOWN top=helper_died" wait_until 20 comment_matches "$FID" '^stallscope/1 UNKNOWN conf=0.00 top=helper_died'
summary_says() {
    json_field "$FDIR/stallscope-$FID/summary.json" \
        'd["verdict"]["label"] != "FAST" and "recording_incomplete" in [r["code"] for r in d["verdict"]["reasons"]]' |
        grep -qx True
}
# Not FAST (silence never reads as healthy); UNKNOWN on a quiet machine, SLOW when the real /proc of a busy
# CI machine shows CPU pressure during the step.
check "epilog summary: not FAST, with a recording_incomplete reason" wait_until 20 summary_says

echo "== fault: helper SIGSTOPped from 2 s into the step to its end"
fault_step stop
wait_until 10 eval 'test -n "$(step_helper)"'
sleep 2
kill -STOP "$(step_helper)"
finish_step
SUCCEEDED_JOBS+=("$FID")
vd=$(one_file "$FDIR/stallscope-$FID/verdict.*.json")
check "exit code 0 (job $FID)" test "$FRC" = 0
check "runtime unchanged (${FOVER} s over the step vs ${BASE_OVER} s)" same_runtime
check "woken by the stop and finished (no SIGKILL after stop_timeout)" eval '! grep -q "job $FID step 0: helper .* killed it" "$LOG"'
check "verdict written" test -n "$vd"
check "the verdict names the gap" grep -q "before the stop (from .*the helper was stopped (SIGSTOP)" "${vd:-/dev/null}"
check "the timeline has the sampling_gap event" test "$(count_lines event sampling_gap "$(one_file "$FDIR/stallscope-$FID/timeline.*.jsonl.zst")")" = 1
check "AdminComment carries the verdict" wait_until 20 comment_matches "$FID" '^stallscope/1 [A-Z_]+ conf=.* file=/'

# A v2 timeline is too small (tens of bytes per sample) to fill even 4 KiB within a 10 s step, so the tmpfs
# is filled first: the first timeline write gets ENOSPC. (ENOSPC mid-write, torn block and all, is
# tests/cli/record_test.cc's 64 KiB tmpfs case, v1 and v2.)
echo "== fault: the output dir's disk is full (16 KiB tmpfs, filled before the step)"
# Only into the tmpfs: without it (no mount binary, no privilege) dd would fill the real disk.
mkdir -p "$W/full" && mount -t tmpfs -o size=16k,mode=1777 tmpfs "$W/full" &&
    dd if=/dev/zero of="$W/full/filler" bs=4096 2>/dev/null  # until ENOSPC
fault_step full/job --gres=gpu:2
finish_step
SUCCEEDED_JOBS+=("$FID")
left=$(compgen -G "$FDIR/stallscope-$FID/timeline.*" || true)
umount "$W/full"
check "exit code 0 (job $FID)" test "$FRC" = 0
check "runtime unchanged (${FOVER} s over the step vs ${BASE_OVER} s)" same_runtime
wait_until 20 comment_matches "$FID" 'file=/'
vfile=$(sed -n 's/.* file=\([^ ]*\).*/\1/p' <<<"$(sacct_field "$FID" AdminComment)")
check "verdict in the fallback dir ($vfile)" test -f "${vfile:-/nonexistent}"
check "the verdict names the full disk" grep -q "No space left on device" "${vfile:-/dev/null}"
tl=$(one_file "$(dirname "${vfile:-/x}")/timeline.*.jsonl.zst")
check "the moved timeline is whole: header, >= 8 samples, verdict line" eval \
    '[ "$(count_lines header "${tl:-/dev/null}") $(count_lines verdict "${tl:-/dev/null}")" = "1 1" ] && [ "$(count_lines sample "${tl:-/dev/null}")" -ge 8 ]'
check "nothing left on the full disk" test -z "$left"

echo "== fault: slurmctld stopped while the job comment is written"
id=$(as_user "$W/ctld" sbatch --parsable --stallscope=1 --wrap 'sleep 8')
wait_until 20 state_is "$id" RUNNING
sleep 2
stop_pidfile slurmctld
check "job $id: verdict written while slurmctld is down" wait_until 20 eval 'compgen -G "$W/ctld/stallscope-$id/verdict.*.json" >/dev/null'
check "the comment write gave up at once, naming slurmctld" wait_until 10 log_has "stallscope: job $id: job comment not updated: slurmctld is not responding"
# The step's end was held by the comment write for at most 1 s (slurmd log timestamps).
held=$(python3 - "$LOG" "$id" <<'PY'
import re, sys, datetime
stop = fail = None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"\[([0-9T:.-]+)\]", line)
    if not m:
        continue
    t = datetime.datetime.fromisoformat(m.group(1))
    if f"job {sys.argv[2]} step batch: helper" in line and "stopped after" in line:
        stop = t
    if f"job {sys.argv[2]}: job comment not updated" in line:
        fail = t
print("%.3f" % (fail - stop).total_seconds() if stop and fail else "unknown")
PY
)
check "comment attempt held the step end ${held} s (<= 1 s)" awk -v h="$held" 'BEGIN { exit !(h != "unknown" && h <= 1) }'
start slurmctld "$(command -v slurmctld)" -D -i
wait_for 30 slurmctld scontrol ping || bad "slurmctld did not come back"
SUCCEEDED_JOBS+=("$id")
check "job $id COMPLETED once slurmctld is back" wait_until 60 state_is "$id" COMPLETED
check "epilog summary written" wait_until 30 test -f "$W/ctld/stallscope-$id/summary.json"

echo "== 200 short steps in a row: no leaked helpers, locks, state or files"
# Zombies the plugin could leave: children of this cluster's slurmd or slurmstepd (their environment names
# our slurm.conf), which is where a helper or its probes would be left unreaped. Not the machine's whole count,
# nor every slurmstepd's: the other clusters CI runs beside this one, its package build and its fuzz gate
# have short-lived zombies of their own.
zombies() {
    ps -eo stat=,ppid= | awk '$1 ~ /^Z/ {print $2}' | sort -u | while read -r ppid; do
        if { tr '\0' '\n' <"/proc/$ppid/environ"; } 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
            ps -eo stat=,ppid= | awk -v p="$ppid" '$1 ~ /^Z/ && $2 == p'
        fi
    done | wc -l
}
zombies_before=$(zombies)
id=$(as_user "$W/many" sbatch --parsable --wait -o "$W/many/out.%j" --wrap '
    t0=$(date +%s.%N); for i in $(seq 20); do srun true || echo "FAILED plain $i"; done; t1=$(date +%s.%N)
    for i in $(seq 200); do srun --stallscope=1 true || echo "FAILED stallscope $i"; done; t2=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v c="$t2" "BEGIN { printf \"STEPS plain %.0f ms, stallscope %.0f ms per step\n\", (b - a) * 50, (c - b) * 5 }"')
SUCCEEDED_JOBS+=("$id")
out=$(cat "$W/many/out.$id" 2>/dev/null)
echo "  $(grep STEPS <<<"$out")"
check "all 220 steps exit 0 (job $id)" test "$(grep -c FAILED <<<"$out")" = 0
check "220 step records 0:0" test "$(sacct -n -P -j "$id" -o JobID,ExitCode | grep -cE '^[0-9]+\.[0-9]+\|0:0$')" = 220
check "no helper process left" wait_until 10 eval '! helpers_running "$id"'
# Written at the first step and again only when a step's verdict changes the segment (on a loaded machine
# a step can see host CPU pressure: SLOW instead of UNKNOWN); kept by every other step.
written=$(grep -c "job $id step [0-9]*: job comment written" "$LOG")
kept=$(grep -c "job $id step [0-9]*: job comment kept" "$LOG")
segments_changed() { # every write differs from the one before it (the segment without file=)
    grep -o "job $id step [0-9]*: job comment written: .*" "$LOG" | sed -E 's/^[^:]*: job comment written: //; s/ file=.*//' |
        awk 'NR > 1 && $0 == last { bad = 1 } { last = $0 } END { exit bad }'
}
check "the job comment was written only when it changed ($written written, $kept kept; not 200 writes)" \
    eval '[ "$((written + kept))" = 200 ] && [ "$written" -le 5 ] && segments_changed'

check "200 timelines and 200 verdicts" test "$(compgen -G "$W/many/stallscope-$id/timeline.*.jsonl.zst" | wc -l) $(compgen -G "$W/many/stallscope-$id/verdict.*.json" | wc -l)" = "200 200"
check "no temporary or probe files left" test -z "$(find "$W/many/stallscope-$id" -name '.*' -o -name '*.tmp*' | head -n 1)"
check "run-dir state and lock removed by the epilog" wait_until 20 no_run_state "$id"
# A slurmstepd reaps its children a moment after they exit; a leak stays.
check "no new zombie processes (had $zombies_before)" wait_until 5 eval '[ "$(zombies)" -le "$zombies_before" ]'
