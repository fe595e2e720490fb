#!/usr/bin/env bash
# Runs every test stallscope has: format check, unit + scenario tests (in the ASan/UBSan build; the plain,
# optimized build runs what only it can), the deterministic libFuzzer gate of every parser, the real-daemon
# tests (node_exporter, Alertmanager, promtool), the real Slurm cluster tests (22.05 on this host, 26.05 in a
# Debian sid root), chromium, the Debian package and the RPM.
# As root it first installs missing Debian packages (contrib/install-deps.sh); the cluster tests need root
# and are skipped (exit 77, reported) otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  contrib/install-deps.sh || exit 1
fi

passed=0 failed=0 skipped=0
# Runs `meson test` with the given arguments and adds its counts to the totals.
run_meson_tests() {
  local log
  log=$(mktemp)
  # Everything meson prints goes to the console: --print-errorlogs shows a failing test's output there.
  meson test "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} failed_here
  passed=$((passed + $(awk '/^Ok:/ {print $2}' "$log" | tail -1 | grep -E '^[0-9]+$' || echo 0)))
  failed_here=$(awk '/^(Fail|Timeout|Unexpected Pass):/ {s += $NF} END {print s + 0}' "$log")
  # meson test builds the selected tests' dependencies first: a build that fails runs no test and prints
  # no summary, and must count as a failure.
  if [ "$rc" -ne 0 ] && [ "$failed_here" -eq 0 ]; then failed_here=1; fi
  failed=$((failed + failed_here))
  skipped=$((skipped + $(awk '/^Skipped:/ {print $2}' "$log" | tail -1 | grep -E '^[0-9]+$' || echo 0)))
  rm -f "$log"
}

step() { printf '\n=== %s\n' "$*"; }

# Waits for a test started in the background (PID), prints its output (LOG) and counts its exit status:
# 0 passed, 77 skipped, anything else failed.
collect_background() {
  local pid=$1 log=$2 rc
  wait "$pid"
  rc=$?
  cat "$log"
  rm -f "$log"
  case $rc in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
}

# The Debian sid root the newest-Slurm cluster test runs in (slurm_root.sh sid runtime: ~600 MB, made
# with mmdebstrap, cached): mostly download and unpacking, so it is made beside the builds below and the
# test finds it ready (slurm_root.sh lets one maker at a time make a root; a second caller waits for it,
# and a failed one is tried again, with its log shown, by the test).
if [ "$(id -u)" -eq 0 ] && command -v mmdebstrap >/dev/null; then
  nice -n 5 tests/integration/slurm_root.sh sid runtime >/dev/null 2>&1 &
fi

step "format check (clang-format, .clang-format)"
if tests/format_check.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

step "plain build (debugoptimized): the binaries the real-daemon, cluster, browser and package tests run, and the tests only an optimized binary can run"
# A new build dir skips full debug info (-g costs ~55 % of compile time here); an existing one is reused.
# The unit and scenario suites run in the sanitizer build below, not here: compiling their ~150 test
# objects twice was ~40 % of this build. `meson test` builds only what the selected tests depend on.
# A unity build, one compiler run per target, as the sanitizer build below (why: there); the benchmarks are
# built file by file. All of build/ (-O2): 581 CPU-seconds against 806 at 6 files per run (2026-11-28).
if [ ! -f build/build.ninja ]; then
  meson setup build -Ddebug=false -Doptimization=2 -Dunity=on -Dunity_size=1000 >/dev/null || exit 1
fi
run_meson_tests -C build --suite plain --print-errorlogs

# What follows runs at once: the sanitizer build with the unit tests and the fuzz gate, the packages, the
# headers test and the real-daemon, cluster and browser suites. On CI's 2 cores the run is CPU-bound, yet
# the cluster suites alone mostly wait on daemons and time limits: the CPU-heavy parts run at nice 10 and
# fill that waiting, and the clusters, which run side by side (each its own ports, directory and munged),
# get the CPU when they want it. Each background part's output is printed after the suites, in order.
# Measured on a fresh clone, 2 vCPU, 2026-11-28: one part after another, 2 171 s and 3 994 CPU-seconds
# (both cores busy but for the last ~3 minutes); like this (and the .deb at -O0), 1 896 s and 3 692; and
# with one compiler run per target in every build, 1 428 s and 2 700.

# The sanitizer build, its unit and scenario tests, then the fuzz gate over its libFuzzer targets. A
# subshell: it writes its counts ("passed failed skipped") to the file $1.
sanitizer_and_fuzz() {
  passed=0 failed=0 skipped=0
  step "sanitizer build (clang, ASan + UBSan, unity; with the libFuzzer targets) and unit + scenario tests"
  if [ ! -f build-asan/build.ninja ]; then
    # clang when installed (contrib/install-deps.sh installs it), and then the same build holds the fuzz
    # targets (-Dfuzz=true): the library is compiled once for the unit tests and the fuzz gate. clang -O0 +
    # ASan also compiles this code in about half of g++'s time (one test unity file: 9.5 s against 17.6 s
    # of CPU, 2026-11-28). g++ without clang, and then no fuzz gate.
    # -g1 / -gline-tables-only: line tables only, enough for sanitizer reports, much cheaper to compile
    # than -g. No benchmarks: no test runs them, and they are ~20 of its objects (~40 s on 2 cores). A
    # unity build, one compiler run per target (-Dunity_size=1000: no target has that many files): every
    # file includes nlohmann/json, most also doctest or simdjson, and -O0 + ASan emits their inline code
    # once per compiler run. The whole build: 703 CPU-seconds against 1 078 at 6 files per run (2026-11-28,
    # 2 vCPU). The cost: two file-local helpers of the same name in one target collide here; share one
    # (libstallscope/util, tests/support) or give them names that say the difference.
    if command -v clang++ >/dev/null; then
      sanitizer_setup=(env CXX=clang++ meson setup build-asan -Dfuzz=true -Dcpp_args=-gline-tables-only)
    else
      sanitizer_setup=(meson setup build-asan -Dcpp_args=-g1)
    fi
    "${sanitizer_setup[@]}" -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0 -Ddebug=false \
      -Dbench=false -Dunity=on -Dunity_size=1000 >/dev/null || { echo "0 1 0" >"$1"; return; }
  fi
  if ninja -C build-asan; then
    # -O0 with sanitizers runs the CLI and scenario suites ~4x slower than the plain build: their
    # timeouts (sized for the plain build) are stretched, not the tests cut.
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      run_meson_tests -C build-asan --suite unit --suite scenarios --timeout-multiplier 4 --print-errorlogs
  else
    failed=$((failed + 1))
  fi
  # Deterministic: every committed input (seeds + past findings) once, then a fixed-seed exploration. A
  # gate must not pass or fail by chance; open-ended fuzzing is a separate, longer run (tests/fuzz/README.md).
  step "fuzz gate: every libFuzzer target replays its corpus and regressions, then ${CI_RUNS:-4000} fixed-seed runs"
  if [ ! -f build-asan/tests/fuzz/fuzz_timeline ]; then
    echo "fuzz: no fuzz targets in build-asan (clang++ was not installed when it was set up: contrib/install-deps.sh installs it); skipped"
    skipped=$((skipped + 1))
  elif BUILD_DIR="$PWD/build-asan" tests/fuzz/run.sh --ci; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  echo "$passed $failed $skipped" >"$1"
}

sanitizer_log=$(mktemp) sanitizer_counts=$(mktemp)
(renice -n 10 -p "$BASHPID" >/dev/null; sanitizer_and_fuzz "$sanitizer_counts") >"$sanitizer_log" 2>&1 &
sanitizer_pid=$!

# The Debian package (dpkg-buildpackage: its own build of the library, helper and plugin, then lintian),
# then the RPM from the same tree, both at -O0 here (why: in package_test.sh). From the source tree: it
# needs no build dir.
package_log=$(mktemp)
STALLSCOPE_PACKAGE_UNITY=1 STALLSCOPE_PACKAGE_QUICK=1 nice -n 10 \
  tests/integration/package_test.sh "$PWD" "$PWD/build/tests/integration/package" >"$package_log" 2>&1 &
package_pid=$!

# The plugin against Slurm 24.11's headers (Debian trixie; an apt download and a small -O0 build, no
# cluster). Not sid's 26.05 here: the slurm-newest suite builds the plugin and the job reader against
# those headers and that libslurm, and runs them in a 26.05 cluster.
headers_log=$(mktemp)
nice -n 10 tests/integration/slurm_headers_test.sh "$PWD" "$PWD/build/tests/integration/slurm-headers" trixie \
  >"$headers_log" 2>&1 &
headers_pid=$!

step "real daemons (node_exporter, Alertmanager, promtool), the real Slurm clusters side by side (22.05: 1 node; 3 nodes in network namespaces; 26.05 in a Debian sid root), the HTML views in headless chromium, the GPU node kit against the fake NVML and its bundle in a clean Debian 12 root"
# Up to 8 at once: the suites below are 11 tests, 7 of which may share the machine (meson runs the 4
# daemon tests, which use fixed ports, one at a time after them).
run_meson_tests -C build --suite daemons --suite cluster --suite browser --suite gpu-kit --suite bundle \
  --suite slurm-newest --print-errorlogs --num-processes 8

step "the plugin against Slurm 24.11's headers (beside the cluster tests)"
collect_background "$headers_pid" "$headers_log"

step "the Debian package and the RPM: dpkg-buildpackage, lintian, the unpacked .deb run; rpmbuild (beside the cluster tests)"
collect_background "$package_pid" "$package_log"

wait "$sanitizer_pid"
cat "$sanitizer_log"
read -r p f k <"$sanitizer_counts" || { p=0 f=1 k=0; echo "the sanitizer build and tests ended without counts"; }
passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
rm -f "$sanitizer_log" "$sanitizer_counts"

echo
echo "stallscope tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
