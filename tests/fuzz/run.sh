#!/bin/bash
# Builds every libFuzzer target (clang, ASan + UBSan) and runs it, JOBS at a time (default: the number of
# cores). Fails on any crash, leak, timeout or UB report; prints one line per target with its executions and
# coverage. New inputs go to a scratch dir, never into the seed corpus.
#
#   tests/fuzz/run.sh --ci      the CI gate, deterministic: every committed input (corpus/<target>/, which
#                               holds the seeds and every past finding as regression_*) replayed once
#                               (-runs=0), then a fixed-seed exploration of CI_RUNS (default 4000) inputs
#                               (-seed=1 -runs=N: the same inputs on every run of the same code)
#   tests/fuzz/run.sh [SECONDS] open-ended exploration for SECONDS per target (default 20): finds new bugs,
#                               so it can fail on code nobody touched; not a gate (README.md here)
#   env: BUILD_DIR (build-fuzz), JOBS, WORK_DIR (kept when set), CI_RUNS
set -euo pipefail

mode=explore
seconds=20
if [[ "${1:-}" == "--ci" ]]; then
    mode=ci
elif [[ -n "${1:-}" ]]; then
    seconds="$1"
fi
ci_runs="${CI_RUNS:-4000}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD_DIR:-$repo/build-fuzz}"
jobs="${JOBS:-$(nproc)}"
start=$(date +%s)

# The targets need a clang build with ASan + UBSan and -Dfuzz=true (tests/fuzz/meson.build). CI passes its
# sanitizer build (tests/run-all.sh: BUILD_DIR=build-asan, -O0, the unit tests' build, so the library is
# compiled once for both); on its own this makes one at -O1 (explores ~2x faster). Unity (one compiler
# run per target): the files each include nlohmann/json and simdjson, whose inline code is then
# instrumented once per target.
if [[ ! -f "$build/build.ninja" ]]; then
    CXX="${CXX:-clang++}" meson setup "$build" "$repo" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Doptimization=1 -Ddebug=false -Dcpp_args=-gline-tables-only -Dbench=false -Dunity=on -Dunity_size=1000 \
        >/dev/null
fi
# ninja prints compile and link errors on stdout: keep them, and show them when the build fails.
ninja -C "$build" -j"$jobs" fuzz >"$build/fuzz-build.log" || { tail -40 "$build/fuzz-build.log"; exit 1; }
built=$(date +%s)

if [[ -n "${WORK_DIR:-}" ]]; then
    work="$WORK_DIR"
    mkdir -p "$work"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
fi

# The exploration runs without address-space randomisation where the kernel lets us (containers may not).
no_aslr=()
if setarch "$(uname -m)" -R true 2>/dev/null; then
    no_aslr=(setarch "$(uname -m)" -R)
elif [[ "$mode" == ci ]]; then
    echo "fuzz: setarch -R refused here: the fixed-seed exploration may differ between runs" >&2
fi

targets=()
for exe in "$build"/tests/fuzz/fuzz_*; do
    [[ -x "$exe" && -f "$exe" ]] && targets+=("$(basename "$exe" | sed 's/^fuzz_//')")
done

run_one() {
    local name="$1"
    local corpus="$work/corpus/$name" artifacts="$work/artifacts/$name/"
    mkdir -p "$corpus" "$artifacts"
    local dict=()
    case "$name" in
        snapshot_json | timeline | timeline_roundtrip | sample_line_json | verdict_file | hang_evidence) dict=(-dict="$repo/tests/fuzz/json.dict") ;;
    esac
    # -timeout flags a hang (any single input over 10 s); -rss_limit_mb (below) bounds a runaway allocation.
    local common=(-timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts" "${dict[@]}")
    if [[ "$mode" == ci ]]; then
        # 1. Every committed input once, in a fixed order (regressions first fail here, on every run).
        "$build/tests/fuzz/fuzz_$name" "${common[@]}" -rss_limit_mb=2048 -runs=0 "$repo/tests/fuzz/corpus/$name" \
            >"$work/$name.log" 2>&1 || return 0
        # 2. A fixed-seed exploration from that corpus. timeline_roundtrip writes and reads each input
        # three times and profiles it twice (~40 inputs/s under ASan, 10x the others): a quarter of the
        # runs keeps the gate's time; open-ended runs give it the full time.
        local runs="$ci_runs"
        [[ "$name" == timeline_roundtrip ]] && runs=$((ci_runs / 4))
        # -seed=1 alone did not make it the same run on every clone (measured on nccl_ras: cov 3588 /
        # 3602 / 3610 / 3626 for one commit), so everything else libFuzzer lets vary is pinned too:
        #  - the seeds' order: libFuzzer sorts them by size only (unstably), equal sizes staying in the
        #    order they were listed, i.e. readdir's, which differs between file systems: a sorted list;
        #  - -reload=0: no re-reading of the scratch corpus every second (a timer: one input more or less);
        #  - -rss_limit_mb=0: no RSS-watching thread, whose start, racing the first inputs, decided which
        #    branch of libstdc++'s single-threaded checks got covered (-malloc_limit_mb keeps a runaway
        #    allocation bounded);
        #  - -use_cmp=0 and no ASLR (setarch -R): compared operands that are addresses became dictionary
        #    words, different in every process.
        # Exploration with all of libFuzzer's tricks is the open-ended mode's job (not a gate).
        local seeds="$work/$name.seeds"
        (cd "$repo/tests/fuzz/corpus/$name" && LC_ALL=C ls -1) | sed "s|^|$repo/tests/fuzz/corpus/$name/|" |
            paste -sd, - >"$seeds"
        "${no_aslr[@]}" "$build/tests/fuzz/fuzz_$name" "${common[@]}" -rss_limit_mb=0 -malloc_limit_mb=2048 \
            -reload=0 -use_cmp=0 -seed=1 -runs="$runs" -seed_inputs=@"$seeds" "$corpus" \
            >>"$work/$name.log" 2>&1
    else
        "$build/tests/fuzz/fuzz_$name" "${common[@]}" -rss_limit_mb=2048 -max_total_time="$seconds" "$corpus" \
            "$repo/tests/fuzz/corpus/$name" >"$work/$name.log" 2>&1
    fi
}

failed=0
running=0
declare -A pids
for name in "${targets[@]}"; do
    run_one "$name" &
    pids[$name]=$!
    running=$((running + 1))
    if ((running >= jobs)); then
        wait -n || true
        running=$((running - 1))
    fi
done
wait || true

for name in "${targets[@]}"; do
    log="$work/$name.log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    # The last status line: "#1234 DONE cov: 567 ft: 890 corp: 12/3456b ..."
    cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)
    if grep -qE '^==[0-9]+==ERROR|runtime error:|SUMMARY: (Address|Undefined|Leak)Sanitizer|deadly signal|contract broken|ERROR: libFuzzer' "$log" || [[ -z "$execs" ]]; then
        printf '%-16s FAILED (log: %s, reproducer under %s)\n' "$name" "$log" "$work/artifacts/$name/"
        grep -E 'ERROR|runtime error:|contract broken|SUMMARY' "$log" | head -5 | sed 's/^/    /'
        failed=1
        [[ -z "${WORK_DIR:-}" ]] && trap - EXIT  # keep the evidence
    else
        printf '%-16s %10s execs  %s\n' "$name" "$execs" "$cov"
    fi
done
end=$(date +%s)
if [[ "$mode" == ci ]]; then what="every committed input + $ci_runs fixed-seed runs ($((ci_runs / 4)) for timeline_roundtrip)"; else what="${seconds}s"; fi
printf 'fuzz: %d targets x %s, %d at a time; build %ds, total %ds\n' "${#targets[@]}" "$what" "$jobs" \
    $((built - start)) $((end - start))
exit "$failed"
