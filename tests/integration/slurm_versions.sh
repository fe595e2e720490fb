#!/usr/bin/env bash
# The Slurm version matrix: stallscope built and run against each release's own Slurm, in a real
# single-node cluster (munge, MariaDB, slurmdbd, slurmctld, slurmd; jobs as an unprivileged user; job
# cgroups where the machine allows), inside a Debian root filesystem made from Debian's packages:
#
#   22.05 = Debian 12 (bookworm)   24.11 = Debian 13 (trixie)   26.05 = Debian unstable (sid)
#
#   sudo tests/integration/slurm_versions.sh [RELEASE...]       (default: 22.05 24.11 26.05)
#
# Per release: the root (tests/integration/slurm_root.sh, cached in /var/cache/stallscope-roots), the
# build (kept in the root at /var/cache/stallscope-build, reused), then slurm_versions_leg.sh inside it:
# the cluster and its checks (STALLSCOPE_MATRIX_TEST=0 leaves them out), then the release's own .deb
# (STALLSCOPE_MATRIX_PACKAGE=0 leaves it out).
# The clusters use the fixed loopback ports of contrib/dev-cluster (roots share the host's network): with
# STALLSCOPE_CLUSTER_LOCK=FILE each leg's cluster runs under `flock FILE` (root creation does not), so
# machines shared by several people can serialise clusters; unset, no lock is taken (as meson's cluster
# suite, which runs its tests one at a time, and a caller that already holds the lock need). Prints
# a table release x check -> PASS/FAIL and exits 0 only when every check passed. Logs and the captured
# `scontrol --json show job` records land in STALLSCOPE_MATRIX_OUT (default /tmp/stallscope-matrix);
# STALLSCOPE_MATRIX_UPDATE_FIXTURES=1 copies those records into fixtures/slurm/<release>/.
# STALLSCOPE_CLUSTER_CGROUP=0 runs the clusters with proctrack/linuxproc instead of job cgroups.
# Exit 77 (skipped) without root or mmdebstrap.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUTBASE=${STALLSCOPE_MATRIX_OUT:-/tmp/stallscope-matrix}
[ "$(id -u)" -eq 0 ] || { echo "skipped: the version matrix needs root (chroot, mounts, daemons)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "skipped: mmdebstrap missing (contrib/install-deps.sh)"; exit 77; }
[ $# -gt 0 ] || set -- 22.05 24.11 26.05

suite_of() {
    case $1 in
        22.05) echo bookworm ;;
        24.11) echo trixie ;;
        26.05) echo sid ;;
        *) return 1 ;;
    esac
}
for r in "$@"; do suite_of "$r" >/dev/null || { echo "slurm_versions: unknown release '$r' (22.05, 24.11, 26.05)" >&2; exit 2; }; done

. "$HERE/chroot_mounts.sh"
trap unmount_root EXIT
trap 'unmount_root; exit 130' INT TERM

mkdir -p "$OUTBASE"
declare -A STATUS
declare -a CHECKS RELEASES_RUN TIMES
for rel in "$@"; do
    suite=$(suite_of "$rel")
    out=$OUTBASE/$rel
    rm -rf "$out"
    mkdir -p "$out"
    echo "=== Slurm $rel (Debian $suite)"
    t0=$(date +%s)
    root=$("$HERE/slurm_root.sh" "$suite") || { STATUS["$rel|root filesystem"]=FAIL; CHECKS+=("root filesystem"); RELEASES_RUN+=("$rel"); continue; }
    t_root=$(($(date +%s) - t0))
    ROOT=$root
    unmount_root  # leftovers of an interrupted run: never mount twice
    ROOT=$root
    mount_root "$ROOT" "$REPO" "$out" || { echo "slurm_versions: mounts into $ROOT failed" >&2; exit 1; }
    # The previous release's plugin, for the "wrong release" check (never the same major.minor).
    rm -f "$out/wrong-release.so"
    for other in "$OUTBASE"/plugin-*.so; do
        [ -f "$other" ] && [ "$other" != "$OUTBASE/plugin-$rel.so" ] && cp "$other" "$out/wrong-release.so" && break
    done
    t1=$(date +%s)
    inroot() {
        chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
            STALLSCOPE_CLUSTER_CGROUP="${STALLSCOPE_CLUSTER_CGROUP:-1}" STALLSCOPE_MATRIX_JOBS="${STALLSCOPE_MATRIX_JOBS:-}" \
            bash /stallscope/tests/integration/slurm_versions_leg.sh "$1" /stallscope /var/cache/stallscope-build /out
    }
    inroot build 2>&1 | tee "$out/leg.log"
    build_rc=${PIPESTATUS[0]}
    t_build=$(($(date +%s) - t1)) t_test=0 t_package=0
    if [ "$build_rc" = 0 ] && [ "${STALLSCOPE_MATRIX_TEST:-1}" = 0 ]; then
        t2=$(date +%s)  # STALLSCOPE_MATRIX_TEST=0: no cluster (the package only, say)
        t_test=0
    elif [ "$build_rc" = 0 ]; then
        t2=$(date +%s)
        lock=()
        [ -n "${STALLSCOPE_CLUSTER_LOCK:-}" ] && lock=(flock "$STALLSCOPE_CLUSTER_LOCK")
        export -f inroot
        export ROOT
        "${lock[@]}" bash -c 'inroot test' 2>&1 | tee -a "$out/leg.log"
        t_test=$(($(date +%s) - t2))
    fi
    if [ "$build_rc" = 0 ] && [ "${STALLSCOPE_MATRIX_PACKAGE:-1}" = 1 ]; then
        t3=$(date +%s)
        inroot package 2>&1 | tee -a "$out/leg.log"
        t_package=$(($(date +%s) - t3))
    fi
    cp "$ROOT/var/cache/stallscope-build/spank/stallscope.so" "$OUTBASE/plugin-$rel.so" 2>/dev/null
    # Slurm leaves its empty per-node cgroup directories (slurm_<node>/uid_N) behind; rmdir only removes
    # empty ones, so a cluster still running elsewhere keeps its own.
    find /sys/fs/cgroup/*/"slurm_$(hostname -s)" -depth -type d -exec rmdir {} \; 2>/dev/null
    unmount_root
    TIMES+=("$rel: root ${t_root} s$([ "$t_root" -lt 5 ] && echo ' (cached)'), build ${t_build} s, cluster and checks ${t_test} s, .deb ${t_package:-0} s")
    RELEASES_RUN+=("$rel")
    while IFS=$'\t' read -r check status; do
        # Job ids and paths differ between releases: the table keys on the text without them.
        key=$(sed -E 's/\(job [0-9]+[^)]*\)//; s/job [0-9]+/job N/g; s#/[^ ]*##g; s/ +$//' <<<"$check")
        [ -n "${STATUS["$rel|$key"]+x}" ] && [ "${STATUS["$rel|$key"]}" = FAIL ] && continue
        STATUS["$rel|$key"]=$status
        printf '%s\n' "${CHECKS[@]}" | grep -qxF -- "$key" || CHECKS+=("$key")
    done <"$out/results.tsv"
    if [ "${STALLSCOPE_MATRIX_UPDATE_FIXTURES:-0}" = 1 ] && [ -d "$out/fixtures/slurm" ]; then
        cp -r "$out/fixtures/slurm/." "$REPO/fixtures/slurm/"
    fi
done

# The table: one row per check, one column per release.
echo
printf '%-78s' "check"
for rel in "${RELEASES_RUN[@]}"; do printf ' %-6s' "$rel"; done
echo
failed=0
for c in "${CHECKS[@]}"; do
    printf '%-78.78s' "$c"
    for rel in "${RELEASES_RUN[@]}"; do
        s=${STATUS["$rel|$c"]:--}
        [ "$s" = FAIL ] && failed=1
        printf ' %-6s' "$s"
    done
    echo
done
printf '%s\n' "${TIMES[@]}"
[ "${#RELEASES_RUN[@]}" -eq $# ] || failed=1
exit $failed
