#!/bin/bash
# Builds every libFuzzer target (clang, ASan + UBSan) and runs each for SECONDS (default 20), JOBS at a
# time (default: the number of cores). Fails on the first crash, leak, timeout or UB report; prints one line
# per target with its executions and coverage. New inputs go to a scratch dir, never into the seed corpus.
#   tests/fuzz/run.sh [SECONDS]       env: BUILD_DIR (build-fuzz), JOBS, WORK_DIR (kept when set)
set -euo pipefail

seconds="${1:-20}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD_DIR:-$repo/build-fuzz}"
jobs="${JOBS:-$(nproc)}"
start=$(date +%s)

if [[ ! -f "$build/build.ninja" ]]; then
    CXX="${CXX:-clang++}" meson setup "$build" "$repo" -Dfuzz=true --buildtype=plain >/dev/null
fi
ninja -C "$build" -j"$jobs" fuzz >/dev/null
built=$(date +%s)

if [[ -n "${WORK_DIR:-}" ]]; then
    work="$WORK_DIR"
    mkdir -p "$work"
else
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
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
        snapshot_json | timeline) dict=(-dict="$repo/tests/fuzz/json.dict") ;;
    esac
    # -rss_limit_mb bounds a runaway allocation; -timeout flags a hang (any single input over 10 s).
    "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts" "${dict[@]}" "$corpus" "$repo/tests/fuzz/corpus/$name" \
        >"$work/$name.log" 2>&1
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
printf 'fuzz: %d targets x %ss, %d at a time; build %ds, total %ds\n' "${#targets[@]}" "$seconds" "$jobs" \
    $((built - start)) $((end - start))
exit "$failed"
