#!/bin/bash
# A job directory gives at most 65 536 recordings to every reader (issue 36, L4): with 65 537 (one real
# fixture verdict and 65 536 empty timelines, each a recording that fails fast), `report --comment` names
# the one it left unread. Plain counting, but 65 537 recordings take minutes at -O0 under AddressSanitizer,
# so the plain build runs it (suite `plain`, tests/run-all.sh) and an ASan binary skips it.
# usage: job_files_limit_test.sh STALLSCOPE SOURCE_DIR
set -euo pipefail
stallscope=$1 src=$2
if grep -aq __asan_init "$stallscope"; then
    echo "SKIP: $stallscope is an AddressSanitizer build (minutes for 65 537 recordings)"
    exit 77
fi
work=$(mktemp -d /tmp/stallscope-job-files-many.XXXXXX)
trap 'rm -rf "$work"' EXIT
dir=$work/stallscope-9
mkdir "$dir"
cp "$src/fixtures/timelines/job-4343/verdict.0.node-02.json" "$dir/"
# Distinct empty files (hard links would be read once anyway).
(cd "$dir" && seq -f 'timeline.0.n%.0f.jsonl' 0 65535 | xargs touch)
[ "$(find "$dir" -name 'timeline.*' | wc -l)" = 65536 ] || { echo "FAIL: could not make 65 536 files"; exit 1; }
err=$(timeout 120 "$stallscope" report --comment --jobs 2 "$dir" 2>&1 >/dev/null) || true
if grep -qF "$dir: more than 65536 recordings; 1 file(s) not read" <<<"$err"; then
    echo "PASS: the 65 537th recording is named, not read"
else
    printf 'FAIL: no "more than 65536 recordings" message; stderr was:\n%s\n' "$err" | head -20
    exit 1
fi
