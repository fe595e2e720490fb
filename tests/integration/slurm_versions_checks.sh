# Sourced by slurm_versions_leg.sh with the dev cluster up: the checks only the version matrix has.
# Needs: SRC OUT PLUGIN HELPER FAKE_NVML, common.sh sourced (D, CLUSTER_USER), result().
U=$CLUSTER_USER
W=$D/work/matrix-$$
mkdir -p "$W" && chmod 1777 "$W"
LOG=$D/log/slurmd.log
as_user() {
    local dir=$1
    shift
    [ -d "$dir" ] || { mkdir -p "$dir" && chown "$U" "$dir"; }
    runuser -u "$U" -- env -C "$dir" -u STALLSCOPE "$@"
}
wait_until() {
    local end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -ge "$end" ] && return 1
        sleep 0.5
    done
}
sacct_field() { sacct -n -X -P -j "$1" -o "$2" 2>/dev/null | head -n 1; }
state_is() { [[ "$(sacct_field "$1" State)" =~ ^$2 ]]; }
one_file() { compgen -G "$1" | head -n 1; }
mcheck() { local what=$1; shift; if "$@"; then result "$what" PASS; else result "$what" FAIL; fi; }
# sample_field TIMELINE EXPR: the last sample's job_cgroup as JSON, for python checks.
last_job_cgroup() {
    "$HELPER" export "$1" 2>/dev/null | python3 -c '
import json, sys
cg = None
for line in sys.stdin:
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if isinstance(d, dict) and d.get("job_cgroup"):
        cg = d["job_cgroup"]
print(json.dumps(cg))'
}
CGROUP_MODE=$(sed -n 's/^ProctrackType=//p' "$D/etc/slurm.conf")
echo "== matrix: $(slurmd -V), $CGROUP_MODE"

if [ "$CGROUP_MODE" = proctrack/cgroup ]; then
    echo "== matrix: the helper reads the job cgroup Slurm made"
    out=$(as_user "$W/cg" srun --stallscope=1 --mem=300M sh -c 'echo JOBID=$SLURM_JOB_ID; cat /proc/self/cgroup | sed "s/^/CG:/"; sleep 3')
    id=$(sed -n 's/^JOBID=//p' <<<"$out")
    echo "$out" | grep '^CG:' | sed 's/^/    /'
    tl=$(one_file "$W/cg/stallscope-$id/timeline.*.jsonl.zst")
    cg=$(last_job_cgroup "${tl:-/nonexistent}")
    echo "    job_cgroup: $cg"
    mcheck "cgroup: job_cgroup found in the job's own cgroup (job $id)" python3 -c '
import json, sys
cg = json.loads(sys.argv[1]); job = sys.argv[2]
ok = cg and cg.get("scope") == "job" and (cg.get("job_id") == job or job in cg.get("path", ""))
sys.exit(0 if ok else 1)' "$cg" "$id"
    mcheck "cgroup: memory limit = --mem=300M, usage read" python3 -c '
import json, sys
cg = json.loads(sys.argv[1])
sys.exit(0 if cg and cg.get("memory_max_bytes") == 300 << 20 and (cg.get("memory_current_bytes") or 0) > 0 else 1)' "$cg"

    echo "== matrix: a job that exceeds its own --mem is OOM-killed; its verdict says job_oom_kill"
    # Allocation in 10 MiB steps with a pause, so the helper samples before and after the kill.
    # bytes * n writes every page (a zeroed bytearray may stay untouched, hence uncharged).
    HOG='import time
b = []
time.sleep(2.5)
for i in range(60):
    b.append(bytes([1]) * (10 << 20))
    time.sleep(0.02)
time.sleep(2)'
    out=$(as_user "$W/oom" srun --stallscope=1 --mem=150M sh -c "echo JOBID=\$SLURM_JOB_ID; python3 -c '$HOG'; sleep 2" 2>&1)
    id=$(sed -n 's/^JOBID=//p' <<<"$out" | head -n 1)
    vd=$(one_file "$W/oom/stallscope-$id/verdict.*.json")
    mcheck "oom: job $id ended OUT_OF_MEMORY (Slurm saw the cgroup OOM kill)" wait_until 20 state_is "$id" OUT_OF_MEMORY
    mcheck "oom: its verdict names job_oom_kill" grep -q '"job_oom_kill"' "${vd:-/dev/null}"
    mcheck "oom: the verdict names the job" grep -q "job $id" "${vd:-/dev/null}"
    # A job that stays within its limit, run beside it, is not touched by the other job's OOM.
    echo "== matrix: another job's OOM does not touch this job's verdict"
    id2=$(as_user "$W/quiet" sbatch --parsable --stallscope=1 --mem=200M --wrap 'sleep 8')
    wait_until 20 state_is "$id2" RUNNING
    as_user "$W/oom2" srun --mem=100M python3 -c 'b = bytes([1]) * (400 << 20)' >/dev/null 2>&1
    mcheck "oom: job $id2 COMPLETED" wait_until 40 state_is "$id2" COMPLETED
    vd2=$(one_file "$W/quiet/stallscope-$id2/verdict.*.json")
    mcheck "oom: job $id2's verdict has no job_oom_kill" eval '[ -f "${vd2:-/nonexistent}" ] && ! grep -q job_oom_kill "$vd2"'

    echo "== matrix: a CPU-throttled job (a 10 % CFS quota on the job's cpu cgroup) is named job_cpu_throttled"
    # Slurm's v1 plugins use cpuset (ConstrainCores), not a CFS quota, and make no cpu-controller group:
    # root gives the running job one with a 10 % quota at the path of its memory cgroup, and the job moves
    # itself in (its uid owns the processes; root chowns cgroup.procs). The helper opens cpu.stat lazily.
    mkdir -p "$W/thr" && chown "$U" "$W/thr"
    cat >"$W/thr/job.sh" <<'JOB'
#!/bin/sh
d=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup | sed 's#/step_.*##')
echo "$d" >"path.$SLURM_JOB_ID"
i=0
while [ ! -e "ready.$SLURM_JOB_ID" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo $$ >"/sys/fs/cgroup/cpu$d/cgroup.procs" && echo MOVED "$d"
timeout 8 sh -c 'while :; do :; done'
true
JOB
    chmod 755 "$W/thr/job.sh"
    id=$(as_user "$W/thr" sbatch --parsable --stallscope=1 --mem=100M -o "$W/thr/out.%j" "$W/thr/job.sh")
    wait_until 30 test -s "$W/thr/path.$id"
    jdir=/sys/fs/cgroup/cpu$(cat "$W/thr/path.$id" 2>/dev/null)
    if [ -s "$W/thr/path.$id" ] && mkdir -p "$jdir" && echo 100000 >"$jdir/cpu.cfs_period_us" &&
        echo 10000 >"$jdir/cpu.cfs_quota_us" && chown "$U" "$jdir/cgroup.procs"; then
        touch "$W/thr/ready.$id"
        wait_until 60 state_is "$id" COMPLETED
        vd=$(one_file "$W/thr/stallscope-$id/verdict.*.json")
        mcheck "throttle: job $id moved itself into its cpu cgroup" grep -q MOVED "$W/thr/out.$id"
        mcheck "throttle: its verdict names job_cpu_throttled" grep -q '"job_cpu_throttled"' "${vd:-/dev/null}"
        mcheck "throttle: the job still COMPLETED" state_is "$id" COMPLETED
        wait_until 10 rmdir "$jdir" 2>/dev/null
    else
        scancel "$id"
        result "throttle: a cpu cgroup for job $id at the path of its memory cgroup" FAIL
    fi
fi

echo "== matrix: the real scontrol --json show job record (fixtures/slurm/<release>/scontrol_show_job.json)"
# A JobName holding newlines, a literal "\n\n", "AdminComment=" and a fake stallscope segment; an
# AdminComment holding a JS1 value and a segment: what the root-side record reader must not be fooled by.
NAME=$'line1\nline2 \\n\\n AdminComment=evil; stallscope/1 FAST'
id=$(as_user "$W/fx" sbatch --parsable --job-name="$NAME" --wrap 'sleep 20')
wait_until 20 state_is "$id" RUNNING
scontrol update JobId="$id" AdminComment='JS1:abc; stallscope/1 SLOW conf=0.80 top=gpu_idle nodes=1 file=/x/summary.json'
scontrol update JobId="$id" Comment='user comment; stallscope/1 FAST'
rel=$(slurmd -V | awk '{print $2}' | cut -d. -f1,2)
mkdir -p "$OUT/fixtures/slurm/$rel"
scontrol --json show job "$id" >"$OUT/fixtures/slurm/$rel/scontrol_show_job.json" 2>"$OUT/scontrol-json.err"
scancel "$id"
if grep -q "unrecognized option '--json'" "$OUT/scontrol-json.err"; then
    # scontrol --json came with Slurm 23.02: 22.05's record is captured from the job reader instead
    # (fixtures/slurm/22.05). Not a failure of this release, and no empty capture left behind.
    rm -f "$OUT/fixtures/slurm/$rel/scontrol_show_job.json"
    result "fixture: scontrol --json show job (Slurm 23.02+; $rel has no --json)" SKIP
else
    # What was set, for tests/spank/job_record_test.cc (it reads every release folder that has a capture.json).
    python3 -c '
import json, sys
cap = {"release": sys.argv[2], "how": "tests/integration/slurm_versions_checks.sh (scontrol --json show job)",
       "job": {"job_id": int(sys.argv[3]), "name": sys.argv[4], "admin_comment": sys.argv[5]}}
open(sys.argv[1], "w").write(json.dumps(cap, indent=2) + "\n")' "$OUT/fixtures/slurm/$rel/capture.json" \
        "$(slurmd -V | awk '{print $2}')" "$id" "$NAME" \
        'JS1:abc; stallscope/1 SLOW conf=0.80 top=gpu_idle nodes=1 file=/x/summary.json'
    mcheck "fixture: scontrol --json show job $id parses, holds the name and both comments" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
j = d["jobs"][0]
print("    keys:", ", ".join(k for k in ("job_id", "name", "admin_comment", "comment", "current_working_directory", "work_dir") if k in j))
sys.exit(0 if j["name"] == sys.argv[2] and j.get("admin_comment", "").startswith("JS1:abc; stallscope/1 SLOW") else 1)' \
        "$OUT/fixtures/slurm/$rel/scontrol_show_job.json" "$NAME"
fi

echo "== matrix: the plugin's declared Slurm version"
decl=$(python3 "$SRC/tests/integration/plugin_version.py" "$PLUGIN" 2>&1)
echo "    plugin_version: $decl, slurmd: $rel"
mcheck "plugin: declares the Slurm major.minor it runs on (plugin_version)" test "$decl" = "$rel"

# A plugin built for another release (the previous leg's, kept by slurm_versions.sh): Slurm's loader must
# refuse it with its own log line, and with `optional` in plugstack.conf no job may fail for it.
if [ -f /out/wrong-release.so ]; then
    echo "== matrix: a plugin built for Slurm $(python3 "$SRC/tests/integration/plugin_version.py" /out/wrong-release.so) in plugstack.conf"
    cp /out/wrong-release.so "$D/wrong-release.so"
    sed "s#^optional [^ ]*#optional $D/wrong-release.so#" "$D/etc/plugstack.conf.default" >"$D/etc/plugstack.conf.new" &&
        mv "$D/etc/plugstack.conf.new" "$D/etc/plugstack.conf"
    before=$(wc -l <"$LOG")
    out=$(as_user "$W/wrong" srun sh -c 'echo JOBID=$SLURM_JOB_ID' 2>&1)
    rc=$?
    id=$(sed -n 's/^JOBID=//p' <<<"$out" | head -n 1)
    echo "$out" | grep -v '^JOBID=' | sed 's/^/    srun: /'
    sleep 1
    tail -n +"$((before + 1))" "$LOG" | grep -iE 'wrong-release|incompatible|plugin' | head -n 5 | sed 's/^/    slurmd: /'
    mcheck "wrong release: a job without the option still runs (rc $rc)" test "$rc" = 0 -a -n "$id"
    mcheck "wrong release: slurmd logs why the plugin was not loaded" eval \
        'tail -n +"$((before + 1))" "$LOG" | grep -qiE "incompatible.*wrong-release|wrong-release.*(incompatible|version)"'
    cp "$D/etc/plugstack.conf.default" "$D/etc/plugstack.conf"
fi
