#!/bin/bash
# contrib/gpu-flight-recorder-check.py's own logic, where no GPU is: the cases, the tmpfs mounts, the FIFO
# request and the rows, against tests/device/fake_torch (a stand-in that does what doc/hang-evidence.md
# section 1 says PyTorch does: abort when the FIFO cannot be made, log a failed dump, dump on timeout).
# What a real PyTorch does is the device session's to find out (tests/device/gpu-session.sh); this keeps
# the script that asks it from rotting between sessions. Root: the full and read-only cases mount tmpfs.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=$(PYTHONPATH="$src/tests/device/fake_torch" timeout 120 python3 "$src/contrib/gpu-flight-recorder-check.py" \
    --out "$work/out")
echo "$rows"
want() {  # want STATUS NAME
    if ! grep -q "^ROW	$1	fr_$2	" <<< "$rows"; then echo "FAIL: fr_$2 is not $1" >&2; exit 1; fi
}
want PASS baseline
want PASS defaults
want PASS dump_missing
want PASS timeout_ours
want PASS timeout_nodir
want INFO timeout_plain
if [ "$(id -u)" = 0 ]; then
    want PASS dump_full
    for c in pipe_missing pipe_readonly pipe_full; do
        grep -q "^ROW	INFO	fr_$c	signal 6 .*matches the doc" <<< "$rows" || { echo "FAIL: fr_$c" >&2; exit 1; }
    done
fi
test -s "$work/out/dumps/defaults.rank0"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["cases"]) == 10, d' "$work/out/fr-cases.json"
echo "fr_check_harness_test: ok"
