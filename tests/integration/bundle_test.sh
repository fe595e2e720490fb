#!/bin/bash
# The GPU-node bundle (contrib/make-bundle.sh) on a machine without build tools: made by its one command,
# under 20 MiB, then started in a clean Debian 12 root filesystem (mmdebstrap --variant=minbase bookworm:
# no compiler, no -dev package, no simdjson) with chroot: --version, ldd without a missing library, and
# --json against the fake libnvidia-ml (8 H100s). Root only (chroot, mount); exit 77 = skipped.
# The root is cached in /var/cache/stallscope-roots/bookworm-minbase (made here once when missing and
# mmdebstrap can reach the Debian mirror apt uses, ~2 minutes).
# usage: bundle_test.sh SOURCE_DIR WORK_DIR FAKE_NVML_LIB BUILD_DIR (the bundle relinks its stallscope)
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
fake=$3
build=$4
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (chroot, mount)"; exit 77; }
roots=/var/cache/stallscope-roots
root=$roots/bookworm-minbase
if [ ! -x "$root/bin/sh" ]; then
    command -v mmdebstrap >/dev/null || { echo "SKIP: no $root and no mmdebstrap (contrib/install-deps.sh)"; exit 77; }
    mirror=$("$src/tests/integration/apt_mirror.sh")
    mkdir -p "$roots"
    # Made by mmdebstrap (installed by contrib/install-deps.sh) from the mirror apt uses here. Once made, a
    # failure to make it again is a failure, not a skip: CI must not pass on a bundle nobody started.
    flock "$roots/.lock" bash -c "[ -x '$root/bin/sh' ] || { rm -rf '$root.tmp' &&
        mmdebstrap --variant=minbase bookworm '$root.tmp' '$mirror' > '$roots/bookworm.log' 2>&1 &&
        mv '$root.tmp' '$root'; }" || { echo "FAIL: mmdebstrap failed ($roots/bookworm.log)"; tail -20 "$roots/bookworm.log"; exit 1; }
fi
rm -rf "$work" && mkdir -p "$work"
fail=0
check() { # description, command...
    local what=$1; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

start=$(date +%s)
"$src/contrib/make-bundle.sh" --out "$work" --build-dir "$build" | tee "$work/make.out"
echo "make-bundle: $(( $(date +%s) - start )) s"
tarball=$(find "$work" -maxdepth 1 -name 'stallscope-bundle-*.tar.gz' | head -1)
packed=$(stat -c %s "$tarball")
unpacked=$(du -sb "${tarball%.tar.gz}" | cut -f1)
check "bundle packed $((packed / 1024)) KiB < 20 MiB" test "$packed" -lt $((20 << 20))
check "bundle unpacked $((unpacked / 1024)) KiB < 20 MiB" test "$unpacked" -lt $((20 << 20))

# The root has none of the build dependencies: the bundle must bring simdjson itself.
check "the root has no compiler and no simdjson" bash -c "! chroot '$root' sh -c 'command -v g++ || command -v cc' >/dev/null &&
    ! ls '$root'/usr/lib/*/libsimdjson* >/dev/null 2>&1"
inside=/tmp/stallscope-bundle-test.$$
cleanup() {
    umount "$root/proc" 2>/dev/null || true
    rm -rf "${root:?}$inside"
}
trap cleanup EXIT
mkdir -p "$root$inside/fake"
tar -C "$root$inside" -xzf "$tarball"
cp "$fake" "$root$inside/fake/libnvidia-ml.so.1"
cp "$src/fixtures/nodes/dgx-h100/nvml.json" "$root$inside/fake/nvml.json"
mount -t proc proc "$root/proc"
bundle=$inside/$(basename "${tarball%.tar.gz}")
chroot "$root" "$bundle/bin/stallscope" --version > "$work/version.out"
check "--version in the clean root: $(cat "$work/version.out")" grep -q '^stallscope ' "$work/version.out"
chroot "$root" ldd "$bundle/bin/stallscope" > "$work/ldd.out"
cat "$work/ldd.out"
check "every library found, simdjson from the bundle" bash -c "! grep -q 'not found' '$work/ldd.out' &&
    grep -q 'libsimdjson.*$bundle/bin/../lib/' '$work/ldd.out'"
chroot "$root" env STALLSCOPE_NVML_LIBRARY="$inside/fake/libnvidia-ml.so.1" \
    STALLSCOPE_FAKE_NVML_FIXTURE="$inside/fake/nvml.json" "$bundle/bin/stallscope" --json > "$work/snapshot.json"
check "--json with the fake NVML in the clean root: 8 GPUs" \
    test "$(grep -o '"uuid": *"GPU-[^"]*"' "$work/snapshot.json" | sort -u | wc -l)" = 8
check "the kit is in the bundle and starts" chroot "$root" "$bundle/validate-gpu-node.sh" --help
cleanup
trap - EXIT
check "nothing left mounted" bash -c "! grep -q ' $root/proc ' /proc/mounts"
[ "$fail" = 0 ] && echo "PASS: bundle" || echo "FAIL: bundle"
exit "$fail"
