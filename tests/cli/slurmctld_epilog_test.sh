#!/bin/bash
# contrib/slurm/slurmctld-epilog.sh as slurmctld runs it, with stub sacct/sacctmgr/scontrol/runuser on
# PATH (a copy of the script whose only change is its PATH line, as the security review ran it) and the
# real stallscope binary behind a wrapper that records the limits it runs under.
# Checks (issue 36, M2): on the review's M2 directory (a 4 MiB verdict of ~1.4 M empty GPU objects, hard
# links to it, and one real node verdict) the comment is written within 10 s; the report runs under
# prlimit's address-space and CPU limits; a second epilog waits for the first (one report at a time).
# usage: slurmctld_epilog_test.sh STALLSCOPE SOURCE_DIR
set -euo pipefail
stallscope=$1 src=$2
# The script runs the report under prlimit --as=2G; an AddressSanitizer binary reserves terabytes of
# shadow address space and cannot start under it. The plain build runs this test (tests/run-all.sh).
if grep -aq __asan_init "$stallscope"; then
    echo "SKIP: $stallscope is an AddressSanitizer build (cannot run under the script's 2 GiB RLIMIT_AS)"
    exit 77
fi
work=$(mktemp -d /tmp/stallscope-ctld-epilog.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$work/bin" "$work/base/stallscope-4242"
sed 's|^export PATH=/usr/bin:/bin:/usr/sbin:/sbin |export PATH='"$work"'/bin:/usr/bin:/bin:/usr/sbin:/sbin |' \
    "$src/contrib/slurm/slurmctld-epilog.sh" >"$work/epilog.sh"
grep -q "^export PATH=$work/bin:" "$work/epilog.sh" || fail "the script's PATH line changed; update this test"
cat >"$work/bin/sacct" <<'STUB'
#!/bin/bash
printf '%s\n' "${FAKE_ADMIN_COMMENT:-}"
STUB
cat >"$work/bin/sacctmgr" <<'STUB'
#!/bin/bash
printf '%s\n' "$@" >>"$FAKE_LOG/sacctmgr.args"
STUB
cat >"$work/bin/scontrol" <<'STUB'
#!/bin/bash
exit 0
STUB
# runuser -u USER -- CMD...: run CMD as it is (the test's own user).
cat >"$work/bin/runuser" <<'STUB'
#!/bin/bash
[ "$1" = -u ] && [ "$3" = -- ] || { echo "runuser stub: unexpected $*" >&2; exit 1; }
shift 3
exec "$@"
STUB
cat >"$work/stallscope" <<STUB
#!/bin/bash
grep -E '^Max (address space|cpu time)' /proc/self/limits >>"\$FAKE_LOG/limits"
exec "$stallscope" "\$@"
STUB
chmod +x "$work/bin/"* "$work/stallscope"

python3 - "$src/fixtures/timelines/job-4343/verdict.0.node-02.json" "$work/base/stallscope-4242" <<'PY'
import json, os, sys
source, out = sys.argv[1], sys.argv[2]
v = json.load(open(source))
json.dump(v, open(os.path.join(out, "verdict.0.node-02.json"), "w"))
v["host"] = "h0"
v["node_stats"]["gpus"] = []
text = json.dumps(v, separators=(",", ":"))
at = text.index('"gpus":[]') + len('"gpus":[')
n = ((4 << 20) - len(text) - 16) // 3
text = text[:at] + ",".join(["{}"] * n) + text[at:]
open(os.path.join(out, "verdict.0.h0.json"), "w").write(text)
for i in (1, 2, 3):
    os.link(os.path.join(out, "verdict.0.h0.json"), os.path.join(out, "verdict.0.h%d.json" % i))
PY

run_epilog() {
    env -i FAKE_LOG="$work" SLURM_JOB_ID=4242 SLURM_JOB_USER="$(id -un)" SLURM_JOB_WORK_DIR="$work/base" \
        STALLSCOPE_BIN="$work/stallscope" STALLSCOPE_EPILOG_DELAY=0 STALLSCOPE_EPILOG_LOCK="$work/lock" \
        bash "$work/epilog.sh" 2>>"$work/epilog.err"
}

# 1. The M2 directory: bounded, and the comment still written from the readable node.
start=$(date +%s.%N)
run_epilog
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
[ -f "$work/sacctmgr.args" ] || fail "no sacctmgr call; epilog said: $(cat "$work/epilog.err")"
grep -q '^AdminComment=stallscope/1 ' "$work/sacctmgr.args" || fail "no segment: $(cat "$work/sacctmgr.args")"
(($(echo "$elapsed < 10" | bc))) || fail "the epilog took $elapsed s on the M2 directory (limit 10 s)"
grep -q 'Max address space *2147483648 *2147483648' "$work/limits" ||
    fail "the report ran without the address-space limit: $(cat "$work/limits")"
grep -q 'Max cpu time *60 *60' "$work/limits" || fail "the report ran without the CPU limit: $(cat "$work/limits")"
echo "ok: M2 directory in $elapsed s, under prlimit --as=2G --cpu=60"

# 2. One at a time: while another holder has the lock, the epilog waits for it.
rm -f "$work/sacctmgr.args"
flock "$work/lock" sleep 3 &
holder=$!
sleep 0.5
start=$(date +%s.%N)
run_epilog
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
wait "$holder"
(($(echo "$elapsed >= 2" | bc))) || fail "the epilog did not wait for the lock (took $elapsed s)"
grep -q '^AdminComment=stallscope/1 ' "$work/sacctmgr.args" || fail "no segment after waiting for the lock"
echo "ok: waited $elapsed s for the lock, then wrote the comment"
