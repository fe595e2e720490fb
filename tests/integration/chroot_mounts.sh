# shellcheck shell=bash
# Sourced by slurm_versions.sh and slurm_newest_cluster.sh: the mounts a test root gets around its chroot.
# mount_root ROOT REPO OUT: proc; /sys recursively (slurmd 24.11+ needs the cgroup mounts; job cgroups are
# the host's hierarchies) and /dev, both slaves so unmounting here never propagates back; the source
# read-only at /stallscope; OUT read-write at /out. unmount_root undoes it for $ROOT (set by the caller).
mount_root() {
    local root=$1 repo=$2 out=$3
    mkdir -p "$root/stallscope" "$root/out"
    mount -t proc proc "$root/proc" &&
        mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" &&
        mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" &&
        mount --bind "$repo" "$root/stallscope" && mount -o remount,bind,ro "$root/stallscope" &&
        mount --bind "$out" "$root/out"
}
ROOT=""
unmount_root() {
    [ -n "$ROOT" ] || return 0
    # Lazily, deepest first: /sys and /dev hold submounts (cgroup hierarchies, pts).
    for m in stallscope out dev sys proc; do
        mountpoint -q "$ROOT/$m" && umount -R -l "$ROOT/$m"
    done
    ROOT=""
}
