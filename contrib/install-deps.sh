#!/usr/bin/env bash
# Installs every Debian 12 package stallscope's build, tests and demo need. Idempotent and quiet: only
# missing packages are installed, and apt-get update runs only when something is missing.
# Daemons that packages would normally start (munge, mariadb, slurm*, prometheus*) are kept from starting
# by a temporary policy-rc.d: the dev cluster and the tests start private instances on loopback ports.
set -euo pipefail

packages=(
  # build
  meson ninja-build g++ pkg-config nlohmann-json3-dev libzstd-dev libsimdjson-dev doctest-dev libcurl4-openssl-dev libslurm-dev
  clang-format python3
  # libFuzzer targets (tests/fuzz)
  clang libclang-rt-14-dev
  # the private Slurm cluster (tests/integration, README demo)
  slurmctld slurmd slurmdbd slurm-client munge mariadb-server slurm-wlm-mysql-plugin
  # the multi-node cluster: network namespaces, veths, a bridge (unshare/nsenter: util-linux, essential)
  iproute2
  # real Prometheus parts the sink tests talk to
  prometheus-node-exporter prometheus-alertmanager prometheus curl
  # the HTML views in a real browser (tests/integration/browser_test.py)
  chromium python3-pil
  # the Debian package (dpkg-buildpackage -us -uc -b, tests/package)
  debhelper dpkg-dev lintian
  # the RPM for RHEL-family sites (rpmbuild, rpm -qlp, rpm2cpio | cpio; tests/integration/package_test.sh)
  rpm cpio
  # the Slurm version matrix: Debian 13 / unstable root filesystems (tests/integration/slurm_versions.sh)
  mmdebstrap
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: needs root (apt-get)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  created_policy=1
fi
trap '[ "$created_policy" = 1 ] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/tmp/stallscope-apt.log 2>&1 || {
  tail -30 /tmp/stallscope-apt.log >&2
  exit 1
}
