#!/usr/bin/env bash
# The Debian package as an admin gets it: `dpkg-buildpackage -us -uc -b` on a copy of the source tree
# (it writes next to the tree, so never in the checkout itself), lintian, then the .deb unpacked into
# an empty directory (`dpkg -x`) and run from there: --version, the man pages, the plugin's place. Then
# the RPM (contrib/rpm/stallscope.spec) from the same tree, unpacked and checked the same way.
# usage: package_test.sh SOURCE_DIR WORK_DIR      exit 77 = skipped (no dpkg-buildpackage/debhelper)
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(realpath -m "$2")  # absolute: the build below runs in a subdirectory of it
for tool in dpkg-buildpackage dh; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool missing (contrib/install-deps.sh)"; exit 77; }
done
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
rm -rf "$work" && mkdir -p "$work/stallscope-$version"
# The tree without build outputs or VCS data (a build dir may be inside the checkout). tests/run-all.sh
# runs this beside other tests, which may make build dirs or scratch files in the checkout meanwhile: the
# top directory changing under tar ("file changed as we read it", exit 1) is expected, any other error is not.
copy_tree() {  # tar options... (writes the archive to stdout)
  local rc=0
  tar -C "$src" --exclude=./.git --exclude='./build*' --exclude='./obj-*' --warning=no-file-changed "$@" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 1 ]
}
copy_tree --exclude=./debian/stallscope --exclude='./debian/.debhelper' -cf - . |
  tar -C "$work/stallscope-$version" -xf -

start=$(date +%s)
# -g0 (appended to dpkg-buildflags' -g): debug info is what dh_strip moves into a -dbgsym package, and
# about half of this build's compile time on 2 cores; what this test checks (the package's files,
# dependencies, plugin release, man pages, a run of the packaged binary) does not depend on it.
# STALLSCOPE_PACKAGE_DEBUG=1 builds exactly what an admin's dpkg-buildpackage does; STALLSCOPE_PACKAGE_UNITY=1
# (tests/run-all.sh) adds DEB_BUILD_OPTIONS=unity (debian/rules: a unity build, fewer compiler runs);
# STALLSCOPE_PACKAGE_NODEPS=1 (the Slurm matrix's roots: every Build-Depends but build-essential) passes -d.
# STALLSCOPE_PACKAGE_QUICK=1 (tests/run-all.sh): DEB_BUILD_OPTIONS=noopt (-O0) here and -O0 for the RPM
# below. CI's run is CPU-bound on 2 cores (2026-11-28: ~3 800 CPU-seconds, both cores busy throughout),
# and its plain build already compiles these sources with g++ -O2; what this test checks is the
# packaging (files, places, dependencies, the declared Slurm release, a binary that runs).
debug_flags=-g0
[ "${STALLSCOPE_PACKAGE_DEBUG:-0}" = 1 ] && debug_flags=
quick=
[ "${STALLSCOPE_PACKAGE_QUICK:-0}" = 1 ] && quick=noopt && echo "the .deb at -O0 (STALLSCOPE_PACKAGE_QUICK=1)"
(cd "$work/stallscope-$version" &&
  DEB_CXXFLAGS_APPEND="$debug_flags" DEB_BUILD_OPTIONS="nocheck parallel=2 ${STALLSCOPE_PACKAGE_UNITY:+unity} $quick" \
    dpkg-buildpackage -us -uc -b ${STALLSCOPE_PACKAGE_NODEPS:+-d} >"$work/build.log" 2>&1) || {
  tail -40 "$work/build.log"
  echo "FAIL: dpkg-buildpackage"
  exit 1
}
built=$(date +%s)
deb=$(ls "$work"/stallscope_"$version"_*.deb)
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) in $((built - start)) s"

fail=0
check() { # description, command...
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

# lintian: errors fail the test; warnings are printed (debian/stallscope.lintian-overrides explains
# the ones that are by design).
# (Not installed in the Slurm matrix's roots, which build the per-release .deb with this script.)
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1 || true
  cat "$work/lintian.txt"
  check "lintian reports no error" bash -c "! grep -q '^E:' '$work/lintian.txt'"
else
  echo "SKIP lintian: not installed"
fi

root="$work/root"
dpkg -x "$deb" "$root"
check "stallscope --version runs from the unpacked package" \
  bash -c "'$root/usr/bin/stallscope' --version | grep -qx 'stallscope $version'"
slurm=$(dpkg-query -W -f='${Version}' libslurm-dev | cut -d. -f1-2)
check "the package depends on the Slurm release it was built for ($slurm)" \
  bash -c "dpkg-deb -f '$deb' Depends | grep -q 'slurm-wlm-basic-plugins (>= $slurm), slurm-wlm-basic-plugins (<< $slurm.99)'"
check "the package recommends libcurl4 (dlopened by the Alertmanager sink, not linked)" \
  bash -c "dpkg-deb -f '$deb' Recommends | grep -qw libcurl4"
check "the plugin is in Slurm's PluginDir" test -f "$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm/stallscope.so"
check "the plugin declares Slurm $slurm (plugin_version, what slurmd compares)" \
  test "$(python3 "$src/tests/integration/plugin_version.py" "$root"/usr/lib/*/slurm-wlm/stallscope.so)" = "$slurm"
check "the plugin exports the SPANK entry points" \
  bash -c "nm -D --defined-only '$root'/usr/lib/*/slurm-wlm/stallscope.so | grep -q ' slurm_spank_init$'"
check "the plugin starts /usr/bin/stallscope by default" \
  bash -c "grep -qa /usr/bin/stallscope '$root'/usr/lib/*/slurm-wlm/stallscope.so"
check "the plugin's job reader is where the plugin looks for it" \
  bash -c "test -x '$root'/usr/libexec/stallscope-slurm-job && grep -qa /usr/libexec/stallscope-slurm-job '$root'/usr/lib/*/slurm-wlm/stallscope.so"
for page in man1/stallscope.1.gz man8/stallscope.so.8.gz; do
  if command -v man >/dev/null; then  # (a Slurm matrix root has no man-db)
    check "man page $page renders without warnings" \
      bash -c "test -z \"\$(man --warnings -l '$root/usr/share/man/$page' 2>&1 >/dev/null)\""
  else
    check "man page $page is shipped" test -s "$root/usr/share/man/$page"
  fi
done
check "examples are shipped" test -f "$root/usr/share/doc/stallscope/examples/plugstack.conf.example"
check "the packaged binary renders a job page" \
  "$root/usr/bin/stallscope" html "$src/fixtures/timelines/job-4242" -o "$work/job.html"

# The RPM for RHEL-family sites (contrib/rpm/stallscope.spec) from the same tree, as rpmbuild builds it
# there, on Debian: --nodeps (its BuildRequires name RHEL packages; Debian's -dev packages provide the
# same headers), a unity build (one compiler run per target). What is checked is what the spec decides: the
# files and their places, the Slurm release the package requires and the plugin declares.
if command -v rpmbuild >/dev/null; then
  rpm_start=$(date +%s)
  rpm_version=$(sed -n 's/^Version: *//p' "$src/contrib/rpm/stallscope.spec")
  top="$work/rpm"
  mkdir -p "$top/SOURCES" "$top/tree"
  copy_tree --exclude=./debian --transform "s,^\.,stallscope-$rpm_version," \
    -czf "$top/SOURCES/stallscope-$rpm_version.tar.gz" .
  rpm_meson_args="-Dunity=on -Dunity_size=1000"
  # STALLSCOPE_PACKAGE_QUICK=1 (tests/run-all.sh sets it): compiled at -O0 (why: above). Its three targets
  # took 6.0 CPU-minutes at -O0 against 7.3 at -O2 (6 files per compiler run, this VM, 2026-11-28; most of
  # it is parsing nlohmann/json and simdjson); one run per target, 105 CPU-seconds at -O0 against 305.
  # What this part checks is the spec's own work (files, places, Requires, the declared Slurm release, a
  # binary that runs), not the optimizer.
  if [ "${STALLSCOPE_PACKAGE_QUICK:-0}" = 1 ]; then
    rpm_meson_args+=" -Doptimization=0"
    echo "the RPM at -O0 (STALLSCOPE_PACKAGE_QUICK=1)"
  fi
  if rpmbuild -bb --nodeps --define "_topdir $top" --define "stallscope_meson_args $rpm_meson_args" \
    "$src/contrib/rpm/stallscope.spec" >"$work/rpmbuild.log" 2>&1; then
    rpm_file=$(ls "$top"/RPMS/*/stallscope-"$rpm_version"-*.rpm)
    echo "built $(basename "$rpm_file") ($(du -k "$rpm_file" | cut -f1) KiB) in $(( $(date +%s) - rpm_start )) s"
    check "the RPM's release names Slurm $slurm" bash -c "[[ '$(basename "$rpm_file")' == *-1.slurm$slurm.* ]]"
    check "the RPM requires Slurm $slurm exactly (>= $slurm, < $slurm.99)" \
      bash -c "rpm -qp --requires '$rpm_file' 2>/dev/null | grep -qx 'slurm >= $slurm' &&
               rpm -qp --requires '$rpm_file' 2>/dev/null | grep -qx 'slurm < $slurm.99'"
    check "the RPM installs the command, the plugin in /usr/lib64/slurm, the job reader and the man pages" \
      bash -c "rpm -qlp '$rpm_file' 2>/dev/null | grep -qx /usr/bin/stallscope &&
               rpm -qlp '$rpm_file' 2>/dev/null | grep -qx /usr/lib64/slurm/stallscope.so &&
               rpm -qlp '$rpm_file' 2>/dev/null | grep -qx /usr/libexec/stallscope-slurm-job &&
               rpm -qlp '$rpm_file' 2>/dev/null | grep -q '^/usr/share/man/man8/stallscope.so.8'"
    (cd "$top/tree" && rpm2cpio "$rpm_file" | cpio -idm --quiet)
    check "the RPM's stallscope --version runs" \
      bash -c "'$top/tree/usr/bin/stallscope' --version | grep -qx 'stallscope $rpm_version'"
    check "the RPM's plugin declares Slurm $slurm" \
      test "$(python3 "$src/tests/integration/plugin_version.py" "$top/tree/usr/lib64/slurm/stallscope.so")" = "$slurm"
  else
    tail -30 "$work/rpmbuild.log"
    check "rpmbuild -bb contrib/rpm/stallscope.spec" false
  fi
else
  echo "SKIP the RPM: rpmbuild missing (contrib/install-deps.sh installs Debian's rpm)"
fi
echo "package test: $(( $(date +%s) - start )) s in all"
exit $fail
