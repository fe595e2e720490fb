#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (with the repo's .clang-format) makes of it.
set -uo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null)
if [ ${#files[@]} -eq 0 ]; then
  echo "format check: no tracked C++ files"
  exit 0
fi
if ! command -v clang-format >/dev/null; then
  echo "format check: clang-format not installed" >&2
  exit 1
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "format check: $f is not clang-formatted (run: clang-format -i $f)"
    bad=1
  fi
done
[ "$bad" -eq 0 ] && echo "format check: ${#files[@]} files OK"
exit "$bad"
