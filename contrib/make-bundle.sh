#!/bin/bash
# A self-contained stallscope for GPU machines without build tools or network: the `stallscope` binary
# (libstdc++ and libgcc linked in, RUNPATH $ORIGIN/../lib), the shared libraries it needs that are not
# glibc (zstd, simdjson: a stock CUDA/PyTorch image lacks simdjson at least), and the node-validation kit.
# NVML is never bundled: stallscope dlopens the driver's libnvidia-ml.so.1 (and libcurl.so.4 only for
# --alert-webhook-url), as on any node.
#
# Usage: contrib/make-bundle.sh [--out DIR] [--build-dir DIR]
#   writes DIR/stallscope-bundle-<version>-<arch>/ and DIR/stallscope-bundle-<version>-<arch>.tar.gz
#   (default DIR: ./bundle; build dir: build/ of the source tree when configured, else build-bundle)
# On the GPU machine: tar xzf stallscope-bundle-*.tar.gz && stallscope-bundle-*/validate-gpu-node.sh
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$PWD/bundle"
build="$src/build"
[ -f "$build/build.ninja" ] || build="$src/build-bundle"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
        -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "make-bundle: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

# The project's own build of stallscope (the one its tests ran), linked once more for the bundle: the
# same objects, with libstdc++/libgcc static and a RUNPATH to the bundle's lib/. Without a build dir, a
# release one is configured (same compile flags as the project's, so ccache answers); the plugin is left
# out: a SPANK plugin must be built against the site's Slurm release.
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$src" -Ddebug=false -Doptimization=2 -Dtests=disabled -Dbench=false \
        -Dspank=disabled >/dev/null
fi
ninja -C "$build" helper/stallscope >/dev/null
link=$(ninja -C "$build" -t commands helper/stallscope | tail -1)
case "$link" in *" -o helper/stallscope "*) ;; *) echo "make-bundle: unexpected link line: $link" >&2; exit 1 ;; esac
relinked="$build/stallscope-bundle.bin"
(cd "$build" && eval "${link/ -o helper\/stallscope / -o stallscope-bundle.bin } -static-libstdc++ -static-libgcc '-Wl,-rpath,\$ORIGIN/../lib'")

version=$("$build/helper/stallscope" --version | awk '{print $2}')
name="stallscope-bundle-$version-$(uname -m)"
stage="$out/$name"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
install -m 0755 "$relinked" "$stage/bin/stallscope"
strip --strip-unneeded "$stage/bin/stallscope"

# Every shared library the binary loads that glibc does not provide (glibc is the one library every
# GPU image has, and the one that must come from the image: the driver's libnvidia-ml links it).
ldd "$stage/bin/stallscope" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
        libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
        *) install -m 0644 "$(readlink -f "$lib")" "$stage/lib/$(basename "$lib")" ;;
    esac
done
for f in validate-gpu-node.sh gpu-node-load.py gpu-node-checks.py gpu-flight-recorder-check.py; do
    install -m 0755 "$src/contrib/$f" "$stage/$f"
done
os=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release)
glibc=$(objdump -T "$stage/bin/stallscope" "$stage"/lib/*.so* 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
# libstdc++ and libgcc_s come from the image: the bundled libsimdjson links them (every CUDA/PyTorch image
# has them); the binary itself has them linked in.
glibcxx=$(objdump -T "$stage"/lib/*.so* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
cat > "$stage/README.txt" <<EOF
stallscope $version bundle for $(uname -m) (built $(date -u +%Y-%m-%d) on $os).
Needs glibc >= ${glibc#GLIBC_}, libstdc++ with ${glibcxx:-no GLIBCXX symbol} (for lib/libsimdjson) and the NVIDIA
driver; nothing else is installed or downloaded.

  ./validate-gpu-node.sh [--out DIR]   node acceptance: checks, load phases (python3 + PyTorch), capture
  ./bin/stallscope --help              the CLI; bin/stallscope record is what the Slurm plugin starts

lib/ holds the libraries the binary needs besides glibc (found through its RUNPATH \$ORIGIN/../lib).
EOF
sums=$(cd "$stage" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
printf '%s\n' "$sums" > "$stage/SHA256SUMS"
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz: $(du -k "$out/$name.tar.gz" | cut -f1) KiB packed, $(du -sk "$stage" | cut -f1) KiB unpacked; needs $glibc${glibcxx:+, $glibcxx}"
