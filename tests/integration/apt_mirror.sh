#!/bin/bash
# Prints the Debian mirror this machine's apt uses (the first Debian URI in its sources, deb822 or one-line
# format), so root filesystems for the tests come from the same place and no host name is hard-coded.
# Exit 1 when apt has no Debian source.
set -euo pipefail
mirror=$( (grep -rhoE '(URIs:|^deb) +[a-z]+://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ \
  2>/dev/null || true) | awk '{print $2}' | sed -n 1p)
[ -n "$mirror" ] || { echo "apt_mirror: no Debian mirror in /etc/apt/sources.list*" >&2; exit 1; }
echo "$mirror"
