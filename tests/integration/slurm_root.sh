#!/usr/bin/env bash
# slurm_root.sh SUITE [full|runtime]: print the path of a Debian root filesystem for SUITE (bookworm = Slurm 22.05,
# trixie = 24.11, sid = 26.05) holding the packages stallscope's build and its test cluster need, made
# with mmdebstrap from the mirror this machine's apt uses. Roots are cached under
# STALLSCOPE_ROOT_CACHE (default /var/cache/stallscope-roots) as <suite>-<hash of the package list>, so
# a changed list makes a new root and an unchanged one is reused. Progress goes to stderr.
# full (default): build tools too, for slurm_versions.sh, which builds inside the root. runtime: the
# cluster and the checks only, for slurm_newest_cluster.sh, whose binaries are built on the host
# (about a third of the download and no compiler to unpack).
set -euo pipefail
suite=${1:?usage: slurm_root.sh bookworm|trixie|sid [full|runtime]}
profile=${2:-full}
cache=${STALLSCOPE_ROOT_CACHE:-/var/cache/stallscope-roots}

packages=()
[ "$profile" = full ] && packages+=(
  # build: only the plugin, the helper and the fake NVML (under tests/, hence doctest) are built in a root
  meson ninja-build g++ pkg-config nlohmann-json3-dev libzstd-dev libsimdjson-dev libslurm-dev doctest-dev
  # the .deb (dpkg-buildpackage; libcurl4-openssl-dev is a Build-Depends)
  debhelper dpkg-dev fakeroot libcurl4-openssl-dev
)
[ "$profile" = full ] || [ "$profile" = runtime ] || { echo "slurm_root: unknown profile '$profile'" >&2; exit 2; }
packages+=(
  # the single-node cluster
  slurmctld slurmd slurmdbd slurm-client munge mariadb-server slurm-wlm-mysql-plugin
  # the checks: python3 for check_json.py, procps for pgrep/ps, hostname, mount (fault_tests.sh mounts a
  # tiny tmpfs: not in a trixie/sid root by default, and without it the disk-full test fills the real disk)
  python3 procps hostname util-linux mount
)
# The full list's key is what it was before profiles existed, so its cached roots stay valid.
key=$(printf '%s\n' "$suite" "${packages[@]}" | sha256sum | cut -c1-12)
root=$cache/$suite-$key
if [ -f "$root/.stallscope-root-ok" ]; then
  echo "$root"
  exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "slurm_root: needs root (mmdebstrap)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "slurm_root: mmdebstrap missing; run contrib/install-deps.sh" >&2; exit 1; }

mkdir -p "$cache"
# One maker per root: tests/run-all.sh starts the sid root early, beside the builds, and the test that
# needs it may ask while it is being made; the second caller waits, then finds it made.
exec 9>"$cache/.lock-$suite-$key"
flock 9
if [ -f "$root/.stallscope-root-ok" ]; then
  echo "$root"
  exit 0
fi

mirror=$("$(dirname "$0")/apt_mirror.sh")
# A half-made root from an interrupted run is thrown away, never reused.
rm -rf "$root.tmp"
t0=$(date +%s)
echo "slurm_root: creating $root from $mirror (a few minutes, once)" >&2
# policy-rc.d keeps the packages' daemons from starting inside the root; the tests start their own.
# /etc/hosts: no bookworm package ships one (the installer writes it; trixie's and sid's netbase do), and
# without `localhost` in it mariadb-install-db refuses to run ("Neither host 'vm' nor 'localhost' could be
# looked up"): the 22.05 leg's cluster did not boot (2026-11-28).
list=$(IFS=,; echo "${packages[*]}")
# Check-Valid-Until off: the mirror reachable from CI machines can be a frozen snapshot whose sid Release
# file has expired ("Release file ... is expired"); the packages are still signed and verified.
mmdebstrap --variant=apt --include="$list" --aptopt='Acquire::Check-Valid-Until "false"' \
  --customize-hook='printf "#!/bin/sh\nexit 101\n" >"$1/usr/sbin/policy-rc.d"; chmod 755 "$1/usr/sbin/policy-rc.d"' \
  --customize-hook='[ -e "$1/etc/hosts" ] || printf "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" >"$1/etc/hosts"' \
  --essential-hook='mkdir -p "$1/usr/sbin"; printf "#!/bin/sh\nexit 101\n" >"$1/usr/sbin/policy-rc.d"; chmod 755 "$1/usr/sbin/policy-rc.d"' \
  "$suite" "$root.tmp" "$mirror" >"$cache/$suite-$key.log" 2>&1 || {
  tail -20 "$cache/$suite-$key.log" >&2
  rm -rf "$root.tmp"
  exit 1
}
touch "$root.tmp/.stallscope-root-ok"
mv "$root.tmp" "$root"
echo "slurm_root: $root made in $(($(date +%s) - t0)) s" >&2
echo "$root"
