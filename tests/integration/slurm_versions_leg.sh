#!/bin/bash
# One leg of the Slurm version matrix (tests/integration/slurm_versions.sh), run as root INSIDE a Debian
# root filesystem (chroot) whose Slurm is the release under test: builds the plugin, the helper and the
# fake NVML against that release's libslurm-dev, boots the real single-node cluster with job cgroups
# where the machine has a writable memory controller, runs the cluster tests (run_cluster_tests.sh,
# fault_tests.sh), then the checks only a matrix has: the job cgroup as Slurm made it, an OOM kill at the
# job's own --mem, a CPU-throttled job, the real `scontrol --json show job` record.
#
#   slurm_versions_leg.sh build|test|package SRC BUILD OUT
# build: compile (outside the cluster lock); test: boot the cluster and run the checks; package: the .deb
# for this release (tests/integration/package_test.sh in the root: dpkg-buildpackage against its
# libslurm-dev, the Depends on its Slurm, the plugin's declared release). SRC the source
# tree (may be read-only), BUILD a build dir kept between runs, OUT where the logs, the per-check results
# (results.tsv: check<TAB>PASS|FAIL) and captured fixtures go.
set -u
PHASE=$1 SRC=$2 BUILD=$3 OUT=$4
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p "$OUT" "$BUILD"
result() { printf '%s\t%s\n' "$1" "$2" >>"$OUT/results.tsv"; echo "  $2 $1"; }
t0=$(date +%s)
PLUGIN=$BUILD/spank/stallscope.so HELPER=$BUILD/helper/stallscope FAKE_NVML=$BUILD/tests/fake_nvml/libnvidia-ml.so.1

if [ "$PHASE" = build ]; then
: >"$OUT/results.tsv"

# ---- build: only what a cluster needs, unoptimised (compiles fastest; no timing is taken here) ----
# A unity build, one compiler run per target (as CI's builds): the tree changes between matrix runs, so
# most objects are rebuilt each time, and 169 separate -O0 objects each parsing nlohmann/json and simdjson
# took ~30 minutes on the shared 2-core VM. A build dir kept from before is switched over (a no-op after).
unity=(-Dunity=on -Dunity_size=1000)
if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" "$SRC" -Doptimization=0 -Ddebug=false -Dbench=false -Dalertmanager=disabled "${unity[@]}" \
        >"$OUT/meson-setup.log" 2>&1 || { tail -20 "$OUT/meson-setup.log"; result build FAIL; exit 1; }
else
    meson configure "$BUILD" "${unity[@]}" >"$OUT/meson-setup.log" 2>&1 ||
        { tail -20 "$OUT/meson-setup.log"; result build FAIL; exit 1; }
fi
# nice: on a shared machine the matrix build yields to interactive builds; STALLSCOPE_MATRIX_JOBS caps it.
if nice -n 10 ninja -C "$BUILD" ${STALLSCOPE_MATRIX_JOBS:+-j "$STALLSCOPE_MATRIX_JOBS"} spank/stallscope.so spank/stallscope-slurm-job helper/stallscope tests/fake_nvml/libnvidia-ml.so.1 >"$OUT/build.log" 2>&1; then
    result "build (plugin, job reader, helper, fake NVML) against $(slurmd -V)" PASS
else
    tail -30 "$OUT/build.log"
    result build FAIL
    exit 1
fi
grep -E 'warning:' "$OUT/build.log" | sort -u >"$OUT/build-warnings.txt" || true
echo "build: $(($(date +%s) - t0)) s, $(wc -l <"$OUT/build-warnings.txt") distinct warning lines"
exit 0
fi

if [ "$PHASE" = package ]; then
    # Outside the cluster lock, like the build. Each "ok"/"FAIL" line of the package test becomes a row.
    # -d: the root has every Build-Depends but the build-essential metapackage (g++, make are there).
    STALLSCOPE_PACKAGE_UNITY=1 STALLSCOPE_PACKAGE_NODEPS=1 \
        bash "$SRC/tests/integration/package_test.sh" "$SRC" /var/cache/stallscope-package \
        >"$OUT/package.log" 2>&1
    rc=$?
    sed -n 's/^built \(.*\)$/package: built \1/p' "$OUT/package.log"
    sed -n 's/^ok   \(.*\)/\1\tPASS/p; s/^FAIL \(.*\)/\1\tFAIL/p' "$OUT/package.log" | sed 's/^/.deb: /' |
        tee -a "$OUT/results.tsv"
    [ "$rc" = 0 ] || { tail -20 "$OUT/package.log"; result ".deb: package_test.sh (exit $rc)" FAIL; exit 1; }
    exit 0
fi

# The helper must be reachable by the job user: the build dir lives under /var/cache (0755).
export STALLSCOPE_CLUSTER_CGROUP=${STALLSCOPE_CLUSTER_CGROUP:-1}
export STALLSCOPE_KEEP_CLUSTER=1
t1=$(date +%s)
bash "$SRC/tests/integration/run_cluster_tests.sh" "$PLUGIN" "$HELPER" "$FAKE_NVML" 2>&1 | tee "$OUT/cluster-tests.log"
echo "cluster tests: $(($(date +%s) - t1)) s"
# One row per "== section" of the cluster tests: PASS when none of its checks failed.
awk -F'\t' '
  /^== / && !/ passed, / { if (sec != "") print sec "\t" (bad ? "FAIL" : "PASS"); sec = substr($0, 4); bad = 0; next }
  /^  FAIL / { bad = 1 }
  /^FAIL: / { print $0 "\tFAIL" }
  END { if (sec != "") print sec "\t" (bad ? "FAIL" : "PASS") }' "$OUT/cluster-tests.log" >>"$OUT/results.tsv"

. "$SRC/contrib/dev-cluster/common.sh"
export PATH=$PATH:/usr/sbin:/sbin
if ! sinfo -h -o %T 2>/dev/null | grep -qx idle; then
    result "cluster still up for the matrix checks" FAIL
    "$SRC/contrib/dev-cluster/down.sh" >/dev/null 2>&1
    exit 1
fi
. "$SRC/tests/integration/slurm_versions_checks.sh"
"$SRC/contrib/dev-cluster/down.sh" >/dev/null 2>&1
cp "$D/log/slurmd.log" "$OUT/slurmd.log" 2>/dev/null
cp "$D/log/slurmdbd.log" "$OUT/slurmdbd.log" 2>/dev/null
echo "leg: $(($(date +%s) - t0)) s"
! grep -q $'\tFAIL$' "$OUT/results.tsv"
