# Sourced by tests/integration/multinode_tests.sh after its other jobs: its cluster, node trees, JOBENV and
# check helpers. Issue 41 in the real cluster: two 4-rank jobs on the 3 nodes hang while they run.
#   I  rank 2 is one collective behind (fixtures/hang/fr/behind-by-one); its main thread sleeps while the
#      others wait in a futex: the summary and the comment must name rank 2 and its node
#   J  every rank is inside the same collective (fixtures/hang/fr/all-inside): "all ranks waiting"
# The ranks are tests/integration/fake_torch_rank.py (PyTorch's flight-recorder FIFO and dump, no GPU).
# The GPUs are healthy when the jobs start; once `stallscope watch` has shown them running, every node's
# fake NVML fixture turns to the busy-wait signature (utilization 100 %, SM activity 0.5 %: GPM), each
# node's helper names gpu_busy_wait_hang, asks the ranks' FIFOs for dumps and writes its evidence file;
# `watch` must then show the hang. The ranks report any signal and how late their wake-ups came.

echo "== two hung 4-rank jobs on 3 nodes (one rank behind / all ranks inside the collective)"
HANG_SECONDS=50
hang_job() {  # DIR SCENARIO BEHIND_RANK
    mkdir -p "$1" && chown "$U" "$1"
    # The real /proc (the node trees' fixture proc has no job processes): the capture reads the ranks there.
    runuser -u "$U" -- env -C "$1" "${JOBENV[@]}" STALLSCOPE_PROCFS_ROOT=/proc \
        srun -N3 -n4 --stallscope=1 sh -c '[ "$SLURM_PROCID" = 0 ] && echo "JOBID=$SLURM_JOB_ID";
            exec python3 "$0" "$1" "$2" --behind "$3"' \
        "$HERE/fake_torch_rank.py" "$REPO/fixtures/hang/fr/$2" "$HANG_SECONDS" "$3" >"$1.out" 2>&1
}
hang_job "$W/i" behind-by-one 2 &
SRUN_I=$!
hang_job "$W/j" all-inside -1 &
SRUN_J=$!
job_of() { sed -n 's/^JOBID=\([0-9]*\).*/\1/p' "$1" | head -n 1; }
wait_until 30 eval '[ -n "$(job_of "$W/i.out")" ] && [ -n "$(job_of "$W/j.out")" ]'
JI=$(job_of "$W/i.out")
JJ=$(job_of "$W/j.out")
DI=$W/i/stallscope-$JI
DJ=$W/j/stallscope-$JJ
# Running, nothing hung yet: a few samples in every node's timeline first.
wait_until 20 eval '[ "$(ls "$DI"/timeline.*.jsonl.zst 2>/dev/null | wc -l)" = 3 ]'
sleep 4
"$HELPER" watch "$JI" --once --json >"$W/i.watch1.json" 2>"$W/i.watch1.err"
watch_says() {  # FILE PYTHON-CONDITION on the frame `f`
    python3 -c 'import json,sys; f=json.loads(open(sys.argv[1]).read().splitlines()[-1]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}
check "job $JI: watch shows it running on 3 nodes, no hang yet ($(head -c 160 "$W/i.watch1.err"))" \
    watch_says "$W/i.watch1.json" 'f["hang"] is None and f["nodes"] == 3'

# The hang: every GPU of every node spins (the fake NVML re-reads its fixture when it changes).
for n in $(node_names); do
    python3 - "$D/nodes/$n/local/fixture/nvml.json" <<'PY'
import json, os, sys
path = sys.argv[1]
fixture = json.load(open(path))
for gpu in fixture["gpus"]:
    gpu["utilization_gpu_pct"] = 100
    gpu["power_usage_mw"] = 160000
    gpu["gpm"].update({"1": 100.0, "2": 0.5, "3": 0.3, "4": 0.0, "5": 0.0, "10": 0.4})
json.dump(fixture, open(path + ".tmp", "w"), indent=1)
os.replace(path + ".tmp", path)
PY
done
T_HANG=$(date +%s)
evidence_on_all() { [ "$(ls "$1"/evidence.*.json 2>/dev/null | wc -l)" = 3 ]; }
check "job $JI: an evidence file from every node" wait_until 40 evidence_on_all "$DI"
check "job $JJ: an evidence file from every node" wait_until 20 evidence_on_all "$DJ"
echo "   evidence after $(($(date +%s) - T_HANG)) s of hang: $(cd "$DI" && ls evidence.*.json | tr '\n' ' ')"
"$HELPER" watch "$JI" --once --json >"$W/i.watch2.json" 2>"$W/i.watch2.err"
check "job $JI: watch shows the hang as it happens, rank 2 named" \
    watch_says "$W/i.watch2.json" 'f["hang"] is not None and f["hang"]["rank"] == 2'
"$HELPER" watch "$JI" --once | sed -n '1,8s/^/   | /p'

wait "$SRUN_I"
RC_I=$?
wait "$SRUN_J"
RC_J=$?
check "jobs $JI and $JJ: srun exit 0 ($RC_I, $RC_J)" test "$RC_I$RC_J" = 00
ranks_untouched() {  # OUT: 4 rank lines, no signal, wake-ups at most 1 s late
    python3 - "$1" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("rank ")]
bad = [l.strip() for l in lines if "signals []" not in l or float(re.search(r"lateness ([0-9.]+)", l).group(1)) > 1.0]
print("   " + " | ".join(l.strip() for l in lines))
sys.exit(0 if len(lines) == 4 and not bad else 1)
PY
}
check "job $JI: no rank signalled or slowed" ranks_untouched "$W/i.out"
check "job $JJ: no rank signalled or slowed" ranks_untouched "$W/j.out"
host_of_rank() { sed -n "s/^rank $2 on \([^:]*\):.*/\1/p" "$1" | head -n 1; }
H2=$(host_of_rank "$W/i.out" 2)
evidence_dumped() {  # DIR: every node's file has the flight recorder's dumps, read
    python3 - "$1" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/evidence.*.json"))
ok = len(files) == 3
for f in files:
    fr = json.load(open(f))["flight_recorder"]
    read = [d["rank"] for d in fr["dumps"] if d["outcome"] == "read"]
    print("   %s: %s, ranks read %s" % (f.rsplit("/", 1)[1], fr["status"], read))
    ok = ok and fr["status"] == "dumped" and len(read) >= 1
sys.exit(0 if ok else 1)
PY
}
check "job $JI: every node's evidence holds its ranks' flight-recorder dumps" evidence_dumped "$DI"
check "job $JJ: every node's evidence holds its ranks' flight-recorder dumps" evidence_dumped "$DJ"
check "jobs $JI and $JJ: finished" wait_until 60 eval 'finished "$JI" && finished "$JJ"'
summary_hang() {  # DIR PYTHON-CONDITION on the summary's `h`
    python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["hang"]; print("  ", h and h["line"]); sys.exit(0 if h and eval(sys.argv[2]) else 1)' \
        "$1/summary.json" "$2"
}
check "job $JI: the summary names rank 2 on $H2 as the culprit (flight recorder + /proc)" \
    wait_until 30 summary_hang "$DI" 'h["kind"] == "culprit" and h["rank"] == 2 and h["host"] == "'"$H2"'"'
check "job $JJ: the summary says every rank waits inside the collective" \
    wait_until 30 summary_hang "$DJ" 'h["kind"] == "all_waiting" and "inside the collective" in h["line"]'
echo "-- job $JI: AdminComment: $(comment "$JI")"
echo "-- job $JJ: AdminComment: $(comment "$JJ")"
check "job $JI: the comment names the culprit (hang=culprit:rank2@$H2)" \
    eval '[[ "$(comment "$JI")" =~ \ hang=culprit:rank2@$H2(/gpu[0-9]+)?$ ]]'
check "job $JJ: the comment says all ranks wait (hang=all_waiting)" \
    eval '[[ "$(comment "$JJ")" =~ \ hang=all_waiting$ ]]'
"$HELPER" jobs "$JI" "$JJ" --all-users >"$W/ij.jobs" 2>&1
sed 's/^/   | /' "$W/ij.jobs"
check "stallscope jobs: the hang after the top reason (hang=culprit:rank2@$H2, hang=all_waiting)" \
    eval 'grep -qE "^$JI .*  hang=culprit:rank2@$H2(/gpu[0-9]+)?\$" "$W/ij.jobs" &&
          grep -qE "^$JJ .*  hang=all_waiting\$" "$W/ij.jobs"'
"$HELPER" jobs "$JI" --all-users --json >"$W/i.jobs.json" 2>/dev/null
check "stallscope jobs --json: \"hang\" for job $JI" \
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r and r[0]["hang"].startswith("culprit:rank2@") else 1)' "$W/i.jobs.json"
check "jobs $JI and $JJ: no helper process left" eval 'no_helpers "$JI" && no_helpers "$JJ"'
