#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian 13 (trixie) packages, built and tested in a Debian 13 chroot
# on this Debian 12 machine:
#
#   1. utilities/ovs-vhost-chroot.sh create: the cached chroot (made once,
#      a few minutes with network; reused as is afterwards);
#   2. `make dist` in BUILDDIR (a configured ovs-vhost build directory),
#      the tarball copied into a scratch directory in the chroot and
#      unpacked there;
#   3. Open vSwitch 3.5 built in the chroot from Debian 13's
#      openvswitch-source, utilities/ovs-vhost-build-ovs.sh --version 3.5,
#      into the chroot's /var/cache/ovs-vhost: built once, reused by later
#      runs and by the package build (debian/rules passes --version 3.5
#      on Debian 13);
#   4. tests/package-test.sh, from the tarball, inside the chroot and a
#      network namespace of its own (its netdev bridge's tap device does
#      not appear on the machine): dpkg-buildpackage -us -uc -b, lintian,
#      the Depends on exactly Debian 13's openvswitch-switch (3.5.0-1+b1,
#      a binNMU of openvswitch-source 3.5.0-1) checked with dpkg-deb -f,
#      install, the alternative, ovs-ctl start, traffic with
#      dpdk-testpmd 24.11 and the counters, removal and fallback;
#   5. nothing of the chroot's is left mounted.
#
#   tests/chroot-package-test.sh BUILDDIR
#
# Exit status 0 (pass), 1 (fail) or 77 (skipped: not root, no unshare, or
# no chroot and the Debian archive cannot be reached; or package-test.sh
# skipped).  The scratch directory in the chroot is deleted unless the
# test fails or CHROOT_TEST_KEEP=1.  One run at a time per chroot (a lock
# next to it).
#
# Environment:
#   OVS_VHOST_CHROOT_DIR  the chroot (default
#                         /var/cache/ovs-vhost/chroot-trixie)
#   PACKAGE_TEST_JOBS     make -j for Open vSwitch and the package (2)
#   PACKAGE_TEST_SECONDS  how long traffic runs (3)

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-}
jobs=${PACKAGE_TEST_JOBS:-2}
chroot_dir=${OVS_VHOST_CHROOT_DIR:-/var/cache/ovs-vhost/chroot-trixie}
chroot_sh=$srcdir/utilities/ovs-vhost-chroot.sh

say () { echo "chroot-package-test: $*"; }
skip () { say "SKIP: $*"; exit 77; }

[ -n "$builddir" ] && [ -f "$builddir/Makefile" ] \
    || { echo "usage: $0 BUILDDIR (a configured ovs-vhost build)" >&2; exit 1; }
builddir=$(cd "$builddir" && pwd)
[ "$(id -u)" = 0 ] || skip "needs root (chroot, mount namespace)"
command -v unshare >/dev/null && command -v flock >/dev/null \
    || skip "unshare or flock not installed (util-linux)"

status=1
t0=$(date +%s)
work=
step_start=$t0
step () {
    now=$(date +%s)
    [ -z "${step_name:-}" ] || say "($step_name: $((now - step_start)) s)"
    step_name=$1 step_start=$now
    echo "=== $1"
}
cleanup () {
    set +e
    trap - EXIT INT TERM HUP
    if [ -n "$work" ]; then
        if [ $status != 1 ] && [ -z "${CHROOT_TEST_KEEP:-}" ]; then
            rm -rf "$work"
        else
            say "logs kept in $work"
        fi
    fi
    # The mounts live in the namespaces of `ovs-vhost-chroot.sh run`,
    # gone with them; if one ever leaked, say so and fail.
    if mount | grep -F " $chroot_dir/" >/dev/null; then
        mount | grep -F " $chroot_dir/"
        say "FAILED: left mounted on the machine"
        status=1
    fi
    say "total $(( $(date +%s) - t0 )) s"
    case $status in
        0) say PASS ;;
        77) ;;
        *) say FAIL ;;
    esac
    exit $status
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail () { say "FAILED: $*"; status=1; exit 1; }

step "chroot"
mkdir -p "$(dirname "$chroot_dir")"
exec 9>"$chroot_dir.lock"
flock -w 3600 9 || fail "$chroot_dir.lock: another run holds it"
"$chroot_sh" create "$chroot_dir" >/dev/null
rc=$?
case $rc in
    0) ;;
    77) status=77; say "SKIP: no chroot, and the Debian archive cannot be reached"; exit 77 ;;
    *) fail "ovs-vhost-chroot.sh create" ;;
esac
in_chroot () { "$chroot_sh" run "$chroot_dir" "$@"; }
say "$chroot_dir: Debian $(cat "$chroot_dir/etc/debian_version"), $(in_chroot dpkg-query -W \
    -f='${Package} ${Version}; ' openvswitch-source openvswitch-switch dpdk)"

step "make dist"
make -C "$builddir" dist >"$builddir/chroot-dist.log" 2>&1 \
    || { tail -30 "$builddir/chroot-dist.log"; fail "make dist"; }
tarball=$(ls -t "$builddir"/ovs-vhost-*.tar.gz | head -1)
[ -f "$tarball" ] || fail "no tarball"
say "$tarball"
mkdir -p "$chroot_dir/tmp"
work=$(mktemp -d "$chroot_dir/tmp/ovs-vhost-chroot-test.XXXXXX")
inner=${work#"$chroot_dir"}
cp "$tarball" "$work/" && tar -xzf "$tarball" -C "$work" || fail "copying the tarball"
src=$(cd "$work" && ls -d ovs-vhost-*/)
src=$inner/${src%/}
itarball=$inner/$(basename "$tarball")

step "Open vSwitch 3.5 (ovs-vhost-build-ovs.sh --version 3.5)"
in_chroot env OVS_VHOST_OVS_JOBS="$jobs" "$src/utilities/ovs-vhost-build-ovs.sh" \
    --version 3.5 /var/cache/ovs-vhost >"$work/ovs-dir" 2>"$work/build-ovs.log" \
    || { cat "$work/build-ovs.log"; fail "ovs-vhost-build-ovs.sh --version 3.5"; }
sed 's/^/  /' "$work/build-ovs.log"
say "Open vSwitch: $(cat "$work/ovs-dir") (in the chroot)"

step "tests/package-test.sh in the chroot"
unshare --net "$chroot_sh" run "$chroot_dir" env TMPDIR="$inner" \
    PACKAGE_TEST_TARBALL="$itarball" PACKAGE_TEST_JOBS="$jobs" \
    PACKAGE_TEST_SECONDS="${PACKAGE_TEST_SECONDS:-3}" \
    OVS_VHOST_DEB_OVS_CACHE=/var/cache/ovs-vhost \
    ${PACKAGE_TEST_KEEP:+PACKAGE_TEST_KEEP=1} \
    "$src/tests/package-test.sh" - >"$work/package-test.log" 2>&1
rc=$?
cat "$work/package-test.log"
sed -n 's/^package-test: \(Depends: .*\)$/\1/p' "$work/package-test.log" | sed 's/^/chroot-package-test: /'
case $rc in
    0) ;;
    77) status=77; say "SKIP: $(grep 'SKIP' "$work/package-test.log" | tail -1)"; exit 77 ;;
    *) fail "tests/package-test.sh in the chroot" ;;
esac

step done
status=0
