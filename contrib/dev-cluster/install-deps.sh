#!/bin/sh
# Install the Debian 12 packages the private dev cluster (up.sh) needs. Quiet and idempotent:
# packages that are already installed are left alone. Run as root. up.sh itself installs nothing.
set -eu
PKGS="slurmctld slurmd slurmdbd slurm-client munge mariadb-server slurm-wlm-mysql-plugin libslurm-dev"
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: must run as root (apt-get install)" >&2
    exit 1
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps.sh: all packages present"
    exit 0
fi
echo "install-deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# Debian's maintainer scripts try to start the daemons; forbid that (no init system in CI containers,
# and up.sh starts private instances on private ports anyway).
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
fi
trap '[ "$made_policy" = 1 ] && rm -f "$policy"' EXIT
apt-get -o DPkg::Lock::Timeout=600 update -qq
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps.sh: done"
