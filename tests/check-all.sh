#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Sets up a fresh Debian 12 machine and runs every test, as CI does:
#
#   1. installs the build and test dependencies (utilities/install-deps.sh)
#      and builds Open vSwitch 3.1 from Debian's openvswitch-source, once
#      (utilities/ovs-vhost-build-ovs.sh caches it in /var/cache/ovs-vhost);
#   2. builds with gcc, warnings as errors, against that OVS (so the OVS
#      provider and ovs-vswitchd-vhost are built and tested), and runs
#      `make check`.  The QEMU guest tests (tests/qemu.at, keyword qemu)
#      run here only, to keep CI's time (they take minutes under TCG):
#      every later testsuite run skips them (OVS_VHOST_SKIP_QEMU=yes), and
#      the OVN tests too (tests/ovn.at, keyword ovn: two chassis and a
#      central, about 4.5 minutes with its QEMU guest; OVS_VHOST_SKIP_OVN=yes).
#      This build also has the dirty-log audit (--enable-dirty-log-audit),
#      so that the migration tests of tests/qemu-migration.at prove the
#      dirty log during real QEMU migrations (the packed ping-pong test,
#      10 hops, about 2 minutes; the others skip without
#      OVS_VHOST_QEMU_MIGRATION=yes, as QEMU 7.2's TCG migration breaks
#      guests: tests/README-qemu.md), and every engine test is audited
#      here too: the
#      audit costs nothing until a frontend logs (lib/vhost-datapath.c
#      starts it only for a queue with log_all and a log base, and each
#      write's record is behind an "if (log)" on a NULL log), and the
#      tarball, the .deb (steps 5 and 6 configure their own builds) and
#      the ASan build's timings are unchanged: no extra build, no
#      extra minutes;
#   2a. in the same build, runs those skipped migration tests (keyword
#      qemu10: the split ping-pong, the four dirty-log audit tests and
#      the two flood tests, about 5 minutes) under Debian 13's QEMU 10,
#      from a minimal trixie chroot (utilities/ovs-vhost-chroot.sh create
#      --only qemu-system-x86: about a minute with the network, once;
#      CHECK_ALL_QEMU10=no leaves them out);
#   2b. builds with gcc, warnings as errors, against Debian 13's Open
#      vSwitch 3.5 (ovs-vhost-build-ovs.sh --version 3.5 fetches it once
#      from trixie and caches its build beside 3.1's) and runs the OVS
#      tests (`-k ovs`) and the QEMU TSO test on a split ring (`-k
#      qemu,tso,split`: the guest's and OVS's TSO through 3.5's offload
#      interface), about 5 minutes: the provider builds and passes from
#      one source against both releases;
#   3. builds again with clang, AddressSanitizer and UndefinedBehaviorSanitizer,
#      and the dirty-log audit (--enable-dirty-log-audit), and runs
#      `make check` there too; then a clang ThreadSanitizer build
#      of the engine alone (no OVS provider) runs the concurrency tests
#      (`-k concurrency`: control messages against bursts on two threads),
#      counted like the others;
#   4. in that build, runs every libFuzzer target for FUZZ_TIME seconds
#      (`make fuzz`, default 25 s each) and the soak test for SOAK_TIME
#      seconds (`make soak`, default 45 s).  Each fuzz target and the soak
#      count as one test in the summary;
#   5. the package test (tests/package-test.sh): builds the .deb from the
#      release tarball, installs it beside Debian's Open vSwitch, switches
#      the ovs-vswitchd alternative, runs traffic, removes it again;
#   5b. the same for Debian 13 (tests/chroot-package-test.sh), in the
#      cached trixie chroot (utilities/ovs-vhost-chroot.sh; made once, with
#      network, in the background from step 1 on, then reused), against
#      its Open vSwitch 3.5 built once in the chroot (CHECK_ALL_DEB13=no
#      leaves it out);
#   5c. the RPMs (tests/rpm-test.sh): `rpmbuild -ta` on the tarball, OVS
#      3.1 from Source1, the packages' contents checked
#      (CHECK_ALL_RPM=no leaves it out);
#   6. `make distcheck` on the gcc build: the tarball builds, against the
#      same Open vSwitch, and a subset of its testsuite passes
#      (DISTCHECK_TESTSUITEFLAGS, below): the whole testsuite already ran
#      in steps 2 and 3, and distcheck's own job is the tarball.
#
# Before steps 5 and 6, the README's main job (utilities/ovs-vhost-demo.sh)
# and the OVN demo (utilities/ovs-vhost-ovn-demo.sh) run on the gcc
# build, as one test each.  Steps 5, 5b, 5c and 6 count as one test each
# in the summary (passed, failed, or skipped when the test cannot run
# here: no root, no rpmbuild or cpio, no chroot and no network);
# CHECK_ALL_PACKAGES=no leaves them all out.
#
# Each build lives in its own directory under _build/, so the source tree
# stays clean.  Extra arguments go to the testsuite (TESTSUITEFLAGS), e.g.
# `tests/check-all.sh -k testpmd`.  Ends with "N passed, N failed".
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$srcdir"
jobs=$(nproc 2>/dev/null || echo 2)

"$srcdir/utilities/install-deps.sh"
# Step 5b's chroot is made, the first time, in the background while the
# builds and testsuites run: debootstrap and apt are bound by the network
# and the disk (about a minute of CPU in 4-6 minutes here), and a chroot
# already made is only looked at.  It holds the lock that
# tests/chroot-package-test.sh takes, which so waits for it; a failure
# here is that test's to report (it runs `create` again).
chroot_pid=
if [ "${CHECK_ALL_PACKAGES:-yes}" != no ] && [ "${CHECK_ALL_DEB13:-yes}" != no ] \
   && [ "$(id -u)" = 0 ]; then
  chroot_dir=${OVS_VHOST_CHROOT_DIR:-/var/cache/ovs-vhost/chroot-trixie}
  mkdir -p "$srcdir/_build" "$(dirname "$chroot_dir")"
  flock "$chroot_dir.lock" "$srcdir/utilities/ovs-vhost-chroot.sh" create \
    "$chroot_dir" >"$srcdir/_build/chroot-create.log" 2>&1 &
  chroot_pid=$!
fi
ovs=$("$srcdir/utilities/ovs-vhost-build-ovs.sh")
ovs35=$("$srcdir/utilities/ovs-vhost-build-ovs.sh" --version 3.5)
[ -x configure ] || ./boot.sh

total_pass=0 total_fail=0 total_skip=0 status=0
failed_list=$srcdir/_build/failed-tests.txt
mkdir -p "$srcdir/_build" && : > "$failed_list"
run_build () {
  name=$1; shift
  flags=${BUILD_TESTSUITEFLAGS-$TESTSUITEFLAGS}
  dir=$srcdir/_build/$name
  mkdir -p "$dir"
  echo "=== $name: configure $*"
  (cd "$dir" && "$srcdir/configure" -q "$@")
  echo "=== $name: build"
  make -s -C "$dir" -j"$jobs"
  run_check "$name" "$dir" "$flags" check.log
}

# run_check NAME DIR FLAGS LOG: `make check` in build DIR with
# TESTSUITEFLAGS=FLAGS, its output in DIR/LOG; counts its summary.
run_check () {
  name=$1 dir=$2 flags=$3
  echo "=== $name: make check"
  log=$dir/$4
  if make -C "$dir" check TESTSUITEFLAGS="$flags" >"$log" 2>&1; then
    :
  else
    status=1
    # Show what failed: the testsuite keeps each failed test's log.
    cat "$dir/tests/testsuite.log" 2>/dev/null | tail -200 || true
  fi
  grep -E '^ *[0-9]+: ' "$log" || true
  # Kept for the last lines of the run, which are what a CI report shows
  # when the rest is cut.
  grep -E ' FAILED \(' "$log" | sed "s/^/  $name /" >> "$failed_list" || true
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  echo "=== $name: ${line:-no summary (build or testsuite error)}"
  [ -n "$line" ] || {
    echo "  $name: no summary (build or testsuite error), $log" >> "$failed_list"
    status=1; total_fail=$((total_fail + 1)); return; }
  set -- $line
  total_pass=$((total_pass + $1)); total_fail=$((total_fail + $3))
  total_skip=$((total_skip + $5))
}

TESTSUITEFLAGS="$*"
run_build gcc --enable-Werror --enable-dirty-log-audit CC=gcc --with-ovs-source="$ovs"
# The migration tests that QEMU 7.2's TCG migration breaks guests in by
# itself (keyword qemu10: the split ping-pong, the dirty-log audit and the
# flood tests; tests/README-qemu.md, "QEMU 10"), under Debian 13's QEMU 10
# from a minimal trixie chroot (utilities/ovs-vhost-chroot.sh, made once,
# about a minute with the network; cached after) in the same build, about
# 8 minutes.  Skipped, and counted so, when the chroot cannot be made.
if [ -z "$TESTSUITEFLAGS" ] && [ "${CHECK_ALL_QEMU10:-yes}" != no ]; then
  echo "=== gcc-qemu10: chroot"
  qrc=0
  qroot=$("$srcdir/utilities/ovs-vhost-chroot.sh" create --only qemu-system-x86 \
            /var/cache/ovs-vhost/chroot-trixie-qemu10) || qrc=$?
  case $qrc in
  0)  OVS_VHOST_QEMU_CHROOT=$qroot; export OVS_VHOST_QEMU_CHROOT
      run_check gcc-qemu10 "$srcdir/_build/gcc" "-k qemu10" check-qemu10.log
      unset OVS_VHOST_QEMU_CHROOT ;;
  77) echo "=== gcc-qemu10: skipped (no chroot, no network)"
      total_skip=$((total_skip + 1)) ;;
  *)  echo "=== gcc-qemu10: FAILED to make the chroot"
      echo "  gcc-qemu10: the QEMU 10 chroot could not be made" >> "$failed_list"
      status=1; total_fail=$((total_fail + 1)) ;;
  esac
fi
# OVS 3.5: its OVS tests and one QEMU test (TSO both ways, minutes under
# TCG); extra arguments, when given, select here instead.
BUILD_TESTSUITEFLAGS=${TESTSUITEFLAGS:-"-k ovs -k qemu,tso,split"}
run_build ovs35 --enable-Werror CC=gcc --with-ovs-source="$ovs35"
unset BUILD_TESTSUITEFLAGS
OVS_VHOST_SKIP_QEMU=yes
export OVS_VHOST_SKIP_QEMU
# The OVN tests (tests/ovn.at, about 4.5 minutes) likewise run in the gcc
# build only: the ASan build and distcheck would add 9 more.
OVS_VHOST_SKIP_OVN=yes
export OVS_VHOST_SKIP_OVN
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# The asan build also audits the dirty log (--enable-dirty-log-audit):
# every engine test that logs fails on a page written but not marked
# (tests/dirty-log.at).  The audit costs nothing until a frontend logs.
run_build asan --enable-Werror --enable-dirty-log-audit CC=clang \
  --with-ovs-source="$ovs" CFLAGS="-g -O1 $san" LDFLAGS="$san"
# ThreadSanitizer: the concurrency tests only, in about a minute of build.
BUILD_TESTSUITEFLAGS="-k concurrency"
run_build tsan --enable-Werror \
  CC=clang CFLAGS="-g -O1 -fsanitize=thread" LDFLAGS="-fsanitize=thread"
unset BUILD_TESTSUITEFLAGS

# Short fuzzing and soak, in the sanitizer build: a finding, a sanitizer
# report, fd growth or RSS growth past its bound fails them.
extra () {
  name=$1; shift
  echo "=== asan: $name"
  log=$srcdir/_build/asan/$name.log
  if make -C "$srcdir/_build/asan" "$@" >"$log" 2>&1; then rc=0; else rc=1; fi
  case $name in
    fuzz)
      # A failed target's lines are indented under it: its trace and its
      # input, base64 (tests/fuzz/run-fuzz.sh).
      grep -E '^fuzz |^  \| ' "$log" || true
      line=$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
      if [ -z "$line" ]; then
        echo "  asan fuzz: no summary, $log" >> "$failed_list"
        tail -50 "$log"; status=1; total_fail=$((total_fail + 1)); return
      fi
      grep -E '^fuzz [^:]+: ' "$log" | grep -v ': ok ' | sed 's/^/  asan /' >> "$failed_list" || true
      set -- $line
      total_pass=$((total_pass + $2)); total_fail=$((total_fail + $4))
      [ "$4" -eq 0 ] || status=1 ;;
    soak)
      grep -E 'test: soak:|FAIL|ERROR|runtime error' "$log" | tail -20
      if [ $rc -eq 0 ]; then
        total_pass=$((total_pass + 1))
      else
        tail -50 "$log"; status=1; total_fail=$((total_fail + 1))
        echo "  asan soak ($log)" >> "$failed_list"
      fi ;;
  esac
}
if [ -z "$TESTSUITEFLAGS" ]; then
  extra fuzz fuzz FUZZ_TIME="${FUZZ_TIME:-25}"
  extra soak soak SOAK_TIME="${SOAK_TIME:-45}"
fi

# run_step NAME COMMAND...: one more counted test; exit status 77 means
# skipped.  The output goes to _build/NAME.log, shown on failure.
run_step () {
  name=$1; shift
  log=$srcdir/_build/$name.log
  echo "=== $name"
  start=$(date +%s)
  if "$@" >"$log" 2>&1; then rc=0; else rc=$?; fi
  secs=$(( $(date +%s) - start ))
  case $rc in
  0)  total_pass=$((total_pass + 1)); result=ok ;;
  77) total_skip=$((total_skip + 1)); result="skipped: $(grep 'SKIP' "$log" | tail -1)" ;;
  *)  total_fail=$((total_fail + 1)); status=1; result=FAILED
      echo "  step $name (exit $rc, $log)" >> "$failed_list"
      tail -80 "$log" ;;
  esac
  grep "^$name: " "$log" | sed 's/^/  /' || true
  echo "=== $name: $result ($secs s, log in $log)"
}

# The README's main job, on the gcc build, and the OVN chassis demo
# (utilities/ovs-vhost-ovn-demo.sh: a central and two chassis, about
# 30 s): each fails if no traffic came round.
if [ -z "$TESTSUITEFLAGS" ]; then
  run_step demo env DEMO_SECONDS=3 "$srcdir/utilities/ovs-vhost-demo.sh"
  run_step ovn-demo env DEMO_SECONDS=3 "$srcdir/utilities/ovs-vhost-ovn-demo.sh"
fi

if [ "${CHECK_ALL_PACKAGES:-yes}" != no ]; then
  run_step package-test "$srcdir/tests/package-test.sh" "$srcdir/_build/gcc"
  if [ "${CHECK_ALL_DEB13:-yes}" != no ]; then
    [ -z "$chroot_pid" ] || wait "$chroot_pid" || :
    run_step chroot-package-test env PACKAGE_TEST_JOBS="$jobs" \
      "$srcdir/tests/chroot-package-test.sh" "$srcdir/_build/gcc"
  fi
  if [ "${CHECK_ALL_RPM:-yes}" != no ]; then
    run_step rpm-test env RPM_TEST_JOBS="$jobs" "$srcdir/tests/rpm-test.sh" "$srcdir/_build/gcc"
  fi
  # distcheck's testsuite: the whole of it ran in the gcc and ASan builds
  # (and the package builds above ran the in-process tests from the
  # tarball three times more), so distcheck keeps what proves the tarball
  # complete and its tests runnable from it, in a read-only source tree
  # without the dirty-log audit: every in-process test (fuzz replays the
  # shipped corpus and regress inputs), the configure test, one test of
  # testpmd.at (tests/testpmd-lib.sh), one of each ring through
  # ovs-vhost-fwd (testpmd-datapath.at) and two of ovs.at
  # (tests/ovs-lib.sh, ovs-vswitchd-vhost built from the tarball).  Left
  # to the gcc and ASan builds: the rest of the testpmd matrix and of the
  # OVS tests, about 6 of distcheck's 8.5 minutes.
  # (One line to make: a newline would end its recipe's command.)
  distcheck_flags="-k !testpmd,!ovs,!qemu,!ovn,!pvp -k configure"
  distcheck_flags="$distcheck_flags -k integration,server,queues=1"
  distcheck_flags="$distcheck_flags -k testpmd,macswap -k testpmd,packed,rxonly"
  distcheck_flags="$distcheck_flags -k ovs,add,delete -k ovs,ping,client,queues=1"
  run_step distcheck make -C "$srcdir/_build/gcc" -j"$jobs" distcheck \
    TESTSUITEFLAGS="${DISTCHECK_TESTSUITEFLAGS-$distcheck_flags}"
fi

echo
if [ -s "$failed_list" ]; then
  echo "failed tests:"
  cat "$failed_list"
fi
echo "tests: $total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ] || status=1
exit $status
