#!/usr/bin/env bash
# The plugin and its job reader compiled against the Slurm headers of newer Debian releases, in minutes:
# the part of the version matrix (slurm_versions.sh, 30-45 minutes a release) that fits in CI.
#
#   tests/integration/slurm_headers_test.sh SRC OUT [SUITE...]     (default suites: trixie sid)
#
# Per suite: Debian's libslurm-dev of that suite (trixie = Slurm 24.11, sid = the newest, 26.05 on
# 2026-11-28), fetched with apt-get from this machine's Debian mirror into a private apt state (nothing is
# installed; the host's Slurm stays), unpacked; then a meson build of spank/ at -O0 whose `-isystem` puts
# that release's slurm/*.h before the host's: the plugin linked (the release it declares is checked) and
# the job reader compiled (it links only against the host's libslurm, which is another release). What
# this catches is what each release changed in the API the plugin and the job reader use: 24.11 removed
# slurm_get_errno(), 26.05's slurm_load_job takes a slurm_step_id_t (both found by the matrix on
# 2026-11-28; this test fails on the code before those fixes). What it cannot catch is behaviour: the
# matrix's clusters do that.
# OUT/<suite>/ keeps the apt state, the .deb and the build; a second run reuses them (apt-get update is
# then a no-op when the index has not changed). Needs root (apt-get's download as the _apt user) and the
# network; exit 77 (skipped) without root.
set -uo pipefail
src=$(cd "${1:?usage: slurm_headers_test.sh SRC OUT [SUITE...]}" && pwd)
out=${2:?usage: slurm_headers_test.sh SRC OUT [SUITE...]}
shift 2
[ $# -gt 0 ] || set -- trixie sid
[ "$(id -u)" -eq 0 ] || { echo "skipped: fetching Debian's libslurm-dev with apt-get needs root"; exit 77; }
mirror=$("$src/tests/integration/apt_mirror.sh") || exit 1
. "$src/tests/integration/private_apt.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)

fail=0
check() {
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

for suite in "$@"; do
  dir=$out/$suite
  # Only this suite's index, in a private state: the host's sources, preferences and lists are not read.
  private_apt "$dir" "$suite" "$mirror"
  if ! apt-get "${apt_opts[@]}" update >"$dir/apt.log" 2>&1; then
    tail -5 "$dir/apt.log"
    check "apt-get update for $suite from $mirror" false
    continue
  fi
  rm -f "$dir"/libslurm-dev_*.deb
  if ! (cd "$dir" && apt-get "${apt_opts[@]}" download libslurm-dev >>"$dir/apt.log" 2>&1); then
    tail -5 "$dir/apt.log"
    check "apt-get download libslurm-dev ($suite)" false
    continue
  fi
  deb=$(ls "$dir"/libslurm-dev_*.deb)
  rm -rf "$dir/root"
  dpkg-deb -x "$deb" "$dir/root"
  include=$dir/root/usr/include
  version=$(sed -nE 's/^#define SLURM_VERSION_NUMBER 0x([0-9a-f]{2})([0-9a-f]{2}).*/\1 \2/p' \
    "$include/slurm/slurm_version.h")
  [ -n "$version" ] || { check "$suite's slurm_version.h names a release" false; continue; }
  release=$(printf '%02d.%02d' "0x${version% *}" "0x${version#* }")
  echo "== $suite: $(basename "$deb") (Slurm $release)"

  build=$dir/build
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$src" -Dtests=disabled -Dbench=false -Dfuzz=false -Dspank=enabled \
      -Doptimization=0 -Ddebug=false "-Dcpp_args=-isystem $include" >"$dir/setup.log" 2>&1 ||
      { tail -20 "$dir/setup.log"; check "meson setup against $suite's headers" false; continue; }
  fi
  # The object only: linking the job reader would pair these headers with the host's libslurm.
  reader_object=spank/stallscope-slurm-job.p/slurm_job.cc.o
  if ninja -C "$build" spank/stallscope.so "$reader_object" >"$dir/build.log" 2>&1; then
    check "the plugin and the job reader compile against Slurm $release's headers ($suite)" true
    # Warnings are not errors here (the release's headers may deprecate what older ones need), but shown.
    grep -E 'warning:' "$dir/build.log" | sort -u | head -10
    check "the plugin built against $suite's headers declares Slurm $release" \
      test "$(python3 "$src/tests/integration/plugin_version.py" "$build/spank/stallscope.so")" = "$release"
  else
    grep -E 'error' "$dir/build.log" | head -20
    check "the plugin and the job reader compile against Slurm $release's headers ($suite)" false
  fi
done
exit $fail
