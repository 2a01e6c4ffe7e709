#! /bin/sh
# Sets up a fresh Debian 12 machine and runs every test, as CI does:
#
#   1. installs the build and test dependencies (utilities/install-deps.sh)
#      and builds Open vSwitch 3.1 from Debian's openvswitch-source, once
#      (utilities/ovs-vhost-build-ovs.sh caches it in /var/cache/ovs-vhost);
#   2. builds with gcc, warnings as errors, against that OVS (so the OVS
#      provider and ovs-vswitchd-vhost are built and tested), and runs
#      `make check`;
#   3. builds again with clang, AddressSanitizer and UndefinedBehaviorSanitizer,
#      and runs `make check` there too.
#
# Each build lives in its own directory under _build/, so the source tree
# stays clean.  Extra arguments go to the testsuite (TESTSUITEFLAGS), e.g.
# `tests/check-all.sh -k testpmd`.  Ends with "N passed, N failed".
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$srcdir"
jobs=$(nproc 2>/dev/null || echo 2)

"$srcdir/utilities/install-deps.sh"
ovs=$("$srcdir/utilities/ovs-vhost-build-ovs.sh")
[ -x configure ] || ./boot.sh

total_pass=0 total_fail=0 total_skip=0 status=0
run_build () {
  name=$1; shift
  dir=$srcdir/_build/$name
  mkdir -p "$dir"
  echo "=== $name: configure $*"
  (cd "$dir" && "$srcdir/configure" -q "$@")
  echo "=== $name: build"
  make -s -C "$dir" -j"$jobs"
  echo "=== $name: make check"
  log=$dir/check.log
  if make -C "$dir" check TESTSUITEFLAGS="$TESTSUITEFLAGS" >"$log" 2>&1; then
    :
  else
    status=1
    # Show what failed: the testsuite keeps each failed test's log.
    cat "$dir/tests/testsuite.log" 2>/dev/null | tail -200 || true
  fi
  grep -E '^ *[0-9]+: ' "$log" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  echo "=== $name: ${line:-no summary (build or testsuite error)}"
  [ -n "$line" ] || { status=1; total_fail=$((total_fail + 1)); return; }
  set -- $line
  total_pass=$((total_pass + $1)); total_fail=$((total_fail + $3))
  total_skip=$((total_skip + $5))
}

TESTSUITEFLAGS="$*"
run_build gcc --enable-Werror CC=gcc --with-ovs-source="$ovs"
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
run_build asan --enable-Werror CC=clang --with-ovs-source="$ovs" \
  CFLAGS="-g -O1 $san" LDFLAGS="$san"

echo
echo "tests: $total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ] || status=1
exit $status
