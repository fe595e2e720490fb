#!/usr/bin/env bash
# The newest Slurm (Debian sid, 26.05 on 2026-11-28) in a real single-node cluster, fast enough for CI:
# the 26.05 leg of the version matrix (slurm_versions.sh) without its 30-45 minutes of building inside a
# 1.5 GB root. Here the root holds only what the cluster and its checks run (slurm_root.sh sid runtime:
# no compiler), and the binaries come from the host:
#   - the plugin and the job reader, built on the host against sid's libslurm-dev headers (fetched into a
#     private apt state, as slurm_headers_test.sh does); the job reader linked against sid's libslurm
#     itself (the host's is another release), with --allow-shlib-undefined as sid's libslurm may need
#     newer glibc symbols than the host has: the binary only ever runs in the sid root;
#   - the helper and the fake NVML as the host built them (HELPER, FAKE_NVML; default SRC/build), plus
#     the host's libsimdjson (sid ships another soname) in the root's /usr/local/lib.
# Then slurm_versions_leg.sh's test phase, unchanged, in the root, with the mounts slurm_versions.sh uses.
#
#   sudo tests/integration/slurm_newest_cluster.sh SRC OUT [HELPER FAKE_NVML]
#
# The root is made while the host compiles (one is network-bound, the other CPU-bound). The cluster has
# its own ports (STALLSCOPE_NEWEST_PORT_BASE, default 19817) and runs under `flock
# /tmp/stallscope-cluster.lock` (STALLSCOPE_CLUSTER_LOCK=FILE another, empty none, for a caller that holds
# it): the version matrix's legs use job cgroups too, and two slurmd of one node name would share the
# node's cgroup directory. A plugin built for another release (STALLSCOPE_WRONG_RELEASE_PLUGIN, default the host
# build's spank/stallscope.so next to HELPER's build) feeds the leg's "wrong release" check.
# Prints the leg's PASS/FAIL rows and the timings; exit 0 only when all passed, 77 without root or
# mmdebstrap. STALLSCOPE_ROOT_CACHE (slurm_root.sh) sets where roots are cached.
set -uo pipefail
usage="usage: slurm_newest_cluster.sh SRC OUT [HELPER FAKE_NVML]"
SRC=$(cd "${1:?$usage}" && pwd)
OUT=${2:?$usage}
HELPER=$(readlink -f "${3:-$SRC/build/helper/stallscope}")
FAKE_NVML=$(readlink -f "${4:-$SRC/build/tests/fake_nvml/libnvidia-ml.so.1}")
HERE=$SRC/tests/integration
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (mmdebstrap, chroot, mounts, daemons)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "skipped: mmdebstrap missing (contrib/install-deps.sh)"; exit 77; }
[ -x "$HELPER" ] && [ -f "$FAKE_NVML" ] || { echo "slurm_newest_cluster: build $HELPER and $FAKE_NVML first" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LEG=$OUT/leg  # the leg's OUT: /out in the root
rm -rf "$LEG" "$OUT/root.path" "$OUT/root.rc"
mkdir -p "$LEG"
T0=$(date +%s)
fail() { echo "FAIL $*"; exit 1; }

# ---- the root, in the background ----------------------------------------------------------------------
(
    t=$(date +%s)
    "$HERE/slurm_root.sh" sid runtime >"$OUT/root.path" 2>"$OUT/root.log"
    echo "$? $(($(date +%s) - t))" >"$OUT/root.rc"
) &
root_job=$!

# ---- sid's libslurm-dev and libslurm, into a private apt state (the host's apt is not touched) ----------
apt=$OUT/apt
mirror=$("$HERE/apt_mirror.sh") || fail "no Debian mirror"
. "$HERE/private_apt.sh"
private_apt "$apt" sid "$mirror"
t=$(date +%s)
apt-get "${apt_opts[@]}" update >"$apt/apt.log" 2>&1 || { tail -5 "$apt/apt.log"; fail "apt-get update (sid)"; }
rm -f "$apt"/*.deb
(cd "$apt" && apt-get "${apt_opts[@]}" download libslurm-dev >>"$apt/apt.log" 2>&1) ||
    { tail -5 "$apt/apt.log"; fail "apt-get download libslurm-dev (sid)"; }
# libslurm-dev depends on exactly one libslurmNN: the shared library its libslurm.so points at.
libpkg=$(dpkg-deb -f "$apt"/libslurm-dev_*.deb Depends | grep -oE 'libslurm[0-9][0-9a-z]*' | head -n 1)
(cd "$apt" && apt-get "${apt_opts[@]}" download "$libpkg" >>"$apt/apt.log" 2>&1) ||
    { tail -5 "$apt/apt.log"; fail "apt-get download $libpkg (sid)"; }
sid=$OUT/sid
rm -rf "$sid"
for deb in "$apt"/*.deb; do dpkg-deb -x "$deb" "$sid"; done
include=$sid/usr/include libdir=$sid/usr/lib/x86_64-linux-gnu
version=$(sed -nE 's/^#define SLURM_VERSION_NUMBER 0x([0-9a-f]{2})([0-9a-f]{2}).*/\1 \2/p' "$include/slurm/slurm_version.h")
[ -n "$version" ] || fail "sid's slurm_version.h names no release"
release=$(printf '%02d.%02d' "0x${version% *}" "0x${version#* }")
t_apt=$(($(date +%s) - t))
echo "== sid: $(cd "$apt" && ls ./*.deb | tr '\n' ' ')(Slurm $release), ${t_apt} s"

# ---- the plugin and the job reader on the host, against sid's headers and libslurm ---------------------
# -isystem puts sid's slurm/*.h before the host's; -L puts sid's libslurm.so before the host's (ld
# searches every -L directory before the default ones); -rpath-link finds what it needs in turn.
build=$OUT/build
t=$(date +%s)
TIMEFORMAT='%R %U %S'
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$SRC" -Dtests=disabled -Dbench=false -Dfuzz=false -Dspank=enabled \
        -Doptimization=0 -Ddebug=false -Dalertmanager=disabled "-Dcpp_args=-isystem $include" \
        "-Dcpp_link_args=-L$libdir -Wl,-rpath-link,$libdir -Wl,--allow-shlib-undefined" >"$OUT/setup.log" 2>&1 ||
        { tail -20 "$OUT/setup.log"; fail "meson setup against sid's libslurm-dev"; }
fi
{ time nice -n 10 ninja -C "$build" ${STALLSCOPE_MATRIX_JOBS:+-j "$STALLSCOPE_MATRIX_JOBS"} \
    spank/stallscope.so spank/stallscope-slurm-job >"$OUT/build.log" 2>&1; } 2>"$OUT/build.time" ||
    { grep -E 'error' "$OUT/build.log" | head -20; fail "the plugin and the job reader against Slurm $release (sid)"; }
read -r b_wall b_user b_sys <"$OUT/build.time"
t_build=$(($(date +%s) - t))
decl=$(python3 "$HERE/plugin_version.py" "$build/spank/stallscope.so")
[ "$decl" = "$release" ] || fail "the plugin declares Slurm $decl, not sid's $release"
soname=$(readelf -d "$libdir/libslurm.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
readelf -d "$build/spank/stallscope-slurm-job" | grep -qF "[$soname]" ||
    fail "the job reader is not linked against sid's ${soname:-libslurm}"
echo "== host build: plugin (declares $decl) and job reader ($soname) in ${t_build} s (ninja: ${b_wall} s wall, ${b_user}+${b_sys} s CPU)"

# ---- the root: wait for it, put the binaries where the leg's test phase expects them --------------------
wait "$root_job"
read -r root_rc t_root <"$OUT/root.rc"
[ "$root_rc" = 0 ] || { tail -20 "$OUT/root.log"; fail "the sid runtime root (slurm_root.sh sid runtime)"; }
root=$(cat "$OUT/root.path")
echo "== root: $root (ready ${t_root} s after the start, $(($(date +%s) - T0)) s now)"
B=/var/cache/stallscope-lean  # in the root; 0755 on the way, so the job user reaches the helper
rm -rf "${root:?}$B"
mkdir -p "$root$B/spank" "$root$B/helper" "$root$B/tests/fake_nvml"
cp "$build/spank/stallscope.so" "$build/spank/stallscope-slurm-job" "$root$B/spank/" &&
    cp "$HELPER" "$root$B/helper/stallscope" && cp "$FAKE_NVML" "$root$B/tests/fake_nvml/libnvidia-ml.so.1" &&
    chmod -R a+rX "$root/var/cache/stallscope-lean" || fail "copying the binaries into $root$B"
# The job reader's libslurm: sid's daemons use their private libslurmfull, so the runtime root has no
# libslurmNN; the package fetched above (the very one the reader was linked against) goes in with dpkg.
if [ "$(chroot "$root" dpkg-query -W -f '${Version}' "$libpkg" 2>/dev/null)" != "$(dpkg-deb -f "$apt/${libpkg}"_*.deb Version)" ]; then
    cp "$apt/${libpkg}"_*.deb "$root/tmp/" && chroot "$root" sh -c "dpkg -i /tmp/${libpkg}_*.deb && rm /tmp/${libpkg}_*.deb" \
        >"$OUT/dpkg.log" 2>&1 || { tail -5 "$OUT/dpkg.log"; fail "installing $libpkg in the root"; }
fi
# The host's shared libraries the root lacks (its libsimdjson: sid has another soname): what the root's
# ldd does not find for the helper, copied from where the host's ldd finds it. Nothing else: the root's
# own libc and libstdc++ are newer than the host's.
chroot "$root" /usr/sbin/ldconfig  # a fresh root has no ld.so.cache yet
for name in $(chroot "$root" ldd "$B/helper/stallscope" | awk '/not found/ {print $1}'); do
    lib=$(ldd "$HELPER" | awk -v n="$name" '$1 == n {print $3}')
    [ -f "$lib" ] && cp -L "$lib" "$root/usr/local/lib/$name" || fail "$name for the helper in the root"
done
chroot "$root" /usr/sbin/ldconfig
for bin in helper/stallscope spank/stallscope-slurm-job spank/stallscope.so; do
    missing=$(chroot "$root" ldd "$B/$bin" 2>&1 | grep -E 'not found|version .* not found')
    [ -z "$missing" ] || { echo "$missing"; fail "$bin's libraries in the root"; }
done
wrong=${STALLSCOPE_WRONG_RELEASE_PLUGIN:-$(dirname "$(dirname "$HELPER")")/spank/stallscope.so}
if [ -f "$wrong" ] && [ "$(python3 "$HERE/plugin_version.py" "$wrong" 2>/dev/null)" != "$release" ]; then
    cp "$wrong" "$LEG/wrong-release.so"
fi

# ---- the cluster and the checks: the leg's test phase, as slurm_versions.sh runs it --------------------
. "$HERE/chroot_mounts.sh"
trap unmount_root EXIT
trap 'unmount_root; exit 130' INT TERM
ROOT=$root
unmount_root  # leftovers of an interrupted run: never mount twice
ROOT=$root
mount_root "$ROOT" "$SRC" "$LEG" || fail "mounts into $ROOT"
t=$(date +%s)
# Its own ports and directory (the root's /tmp): tests/run-all.sh runs the host's 22.05 clusters at the
# same time, on 17817-17820 and 18817-18820, in the same network namespace; the directory names its
# slurm.conf, by which each cluster's down.sh finds its own slurmstepd among all the machine's.
PORT_BASE=${STALLSCOPE_NEWEST_PORT_BASE:-19817}
CLUSTER_DIR=/tmp/stallscope-newest
lock=${STALLSCOPE_CLUSTER_LOCK-/tmp/stallscope-cluster.lock}
${lock:+flock "$lock"} chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    STALLSCOPE_CLUSTER_CGROUP="${STALLSCOPE_CLUSTER_CGROUP:-1}" \
    STALLSCOPE_CLUSTER_DIR="$CLUSTER_DIR" STALLSCOPE_CLUSTER_PORT_BASE="$PORT_BASE" \
    bash /stallscope/tests/integration/slurm_versions_leg.sh test /stallscope "$B" /out 2>&1 | tee "$LEG/leg.log"
leg_rc=${PIPESTATUS[0]}
t_test=$(($(date +%s) - t))
# Slurm leaves its empty per-node cgroup directories behind (rmdir keeps a running cluster's own).
find /sys/fs/cgroup/*/"slurm_$(hostname -s)" -depth -type d -exec rmdir {} \; 2>/dev/null
unmount_root

echo
cat "$LEG/results.tsv" 2>/dev/null | awk -F'\t' '{ printf "%-4s %s\n", $2, $1 }'
rows=$(wc -l <"$LEG/results.tsv" 2>/dev/null || echo 0)
failed=$(grep -c $'\tFAIL$' "$LEG/results.tsv" 2>/dev/null)
echo "Slurm $release (sid): $rows checks, ${failed:-0} failed, leg exit $leg_rc"
echo "times: root ${t_root} s$([ "$t_root" -lt 5 ] && echo ' (cached)') (beside the host build), apt ${t_apt} s," \
    "host build ${t_build} s (${b_user}+${b_sys} s CPU), cluster and checks ${t_test} s, total $(($(date +%s) - T0)) s"
[ "$leg_rc" = 0 ] && [ "$rows" -gt 0 ] && [ "${failed:-0}" = 0 ]
