#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# The RPM spec's own path, as Fedora/RHEL build it: `rpmbuild -ta` on the
# release tarball, Open vSwitch compiled in %build from Source1
# (openvswitch-%{ovs_version}.tar.gz; here Debian's openvswitch-source
# tarball, which is OVS 3.1.0), then the packages' contents checked with
# `rpm -qlp`:
#
#   1. `make dist` in BUILDDIR (a configured ovs-vhost build directory);
#   2. rpmbuild -ta in a private %_topdir, Source0 and Source1 in a private
#      %_sourcedir;
#   3. openvswitch-vhost holds /usr/sbin/ovs-vswitchd.vhost, the %ghost
#      /usr/sbin/ovs-vswitchd, ovs-vhost-fwd and the three man pages;
#      libovs-vhost the library and libovs-vhost-devel its header, link
#      and pkg-config file; both runtime packages carry LICENSE as
#      %license; openvswitch-vhost requires openvswitch = 3.1.0.
#
#   tests/rpm-test.sh BUILDDIR
#
# Exit status 0 (pass), 1 (fail) or 77 (skipped: no rpmbuild, no cpio, or
# no openvswitch-source tarball).  Any error in the spec, the build or its
# %check fails the test.  The scratch directory is deleted unless the
# test fails or RPM_TEST_KEEP=1.  RPM_TEST_JOBS: make -j (default: the
# number of CPUs).

builddir=${1:-}
jobs=${RPM_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
ovs_tarball=${OVS_VHOST_OVS_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}

say () { echo "rpm-test: $*"; }
skip () { say "SKIP: $*"; exit 77; }

[ -n "$builddir" ] && [ -f "$builddir/Makefile" ] \
    || { echo "usage: $0 BUILDDIR (a configured ovs-vhost build)" >&2; exit 1; }
builddir=$(cd "$builddir" && pwd)
command -v rpmbuild >/dev/null || skip "rpmbuild not installed (package rpm)"
command -v cpio >/dev/null || skip "cpio not installed (package cpio)"
[ -r "$ovs_tarball" ] || skip "$ovs_tarball not found (openvswitch-source)"

work=$(mktemp -d "${TMPDIR:-/tmp}/ovs-vhost-rpm-test.XXXXXX")
status=1
t0=$(date +%s)
cleanup () {
    if [ $status = 0 ] && [ -z "${RPM_TEST_KEEP:-}" ]; then
        rm -rf "$work"
    else
        say "logs kept in $work"
    fi
    say "total $(( $(date +%s) - t0 )) s"
    if [ $status = 0 ]; then say PASS; else say FAIL; fi
    exit $status
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail () { say "FAILED: $*"; status=1; exit 1; }

echo "=== make dist"
make -C "$builddir" dist >"$work/dist.log" 2>&1 || { tail -30 "$work/dist.log"; fail "make dist"; }
tarball=$(ls -t "$builddir"/ovs-vhost-*.tar.gz | head -1)
[ -f "$tarball" ] || fail "no tarball"
say "$tarball"

# Source1 under the name the spec gives it: the version the spec builds
# by default (3.1.0, Debian 12's openvswitch-source).
ovs_version=$(tar -xzOf "$tarball" --wildcards '*/rhel/ovs-vhost.spec' \
              | sed -n 's/^%{!?ovs_version:%global ovs_version \([0-9.]*\)}$/\1/p')
[ -n "$ovs_version" ] || fail "the spec names no default ovs_version"
mkdir -p "$work/sources" "$work/top"
cp "$tarball" "$work/sources/"
ln -s "$ovs_tarball" "$work/sources/openvswitch-$ovs_version.tar.gz"

echo "=== rpmbuild -ta"
# --nodeps: rpm's database on Debian is empty, so none of the spec's
# BuildRequires (Fedora/RHEL names: openssl-devel, libcap-ng-devel, ...)
# is known to it; utilities/install-deps.sh installs their Debian
# counterparts (libssl-dev, libcap-ng-dev, ...), which configure finds.
# Everything else is the spec's as written: its %prep, %build (OVS from
# Source1, then ovs-vhost), %check and %install.
rpmbuild -ta --nodeps \
    --define "_topdir $work/top" --define "_sourcedir $work/sources" \
    --define "_smp_mflags -j$jobs" \
    "$work/sources/$(basename "$tarball")" >"$work/rpmbuild.log" 2>&1 \
    || { tail -60 "$work/rpmbuild.log"; fail "rpmbuild -ta"; }
grep -E '^Wrote: ' "$work/rpmbuild.log" | sed 's|^Wrote: .*/|  wrote |'

echo "=== rpm -qlp"
ok=yes
# check PACKAGE PATTERN...: each extended regular expression matches a
# line of `rpm -qlp` (or, with a "license:" prefix, of the package's
# %license files; "ghost:" its %ghost files; "requires:" its requirements).
check () {
    pkg=$1; shift
    rpm=$(ls "$work"/top/RPMS/*/"$pkg"-[0-9]*.rpm 2>/dev/null | head -1)
    [ -n "$rpm" ] || { say "no $pkg package"; ok=no; return; }
    rpm -qlp "$rpm" >"$work/$pkg.files" 2>/dev/null
    rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$rpm" >"$work/$pkg.flags" 2>/dev/null
    rpm -qRp "$rpm" >"$work/$pkg.requires" 2>/dev/null
    say "$pkg: $(wc -l <"$work/$pkg.files") files"
    for pat in "$@"; do
        case $pat in
            license:*) f=$work/$pkg.flags; re="^${pat#license:} .*l" ;;
            ghost:*) f=$work/$pkg.flags; re="^${pat#ghost:} .*g" ;;
            requires:*) f=$work/$pkg.requires; re="^${pat#requires:}\$" ;;
            *) f=$work/$pkg.files; re="^$pat\$" ;;
        esac
        if grep -Eq "$re" "$f"; then
            say "  $pkg has $pat"
        else
            say "  $pkg LACKS $pat"; ok=no
        fi
    done
}
check openvswitch-vhost \
    /usr/sbin/ovs-vswitchd.vhost ghost:/usr/sbin/ovs-vswitchd \
    /usr/bin/ovs-vhost-fwd \
    '/usr/share/man/man1/ovs-vhost-fwd\.1.*' \
    '/usr/share/man/man7/ovs-vhost\.7.*' \
    '/usr/share/man/man8/ovs-vswitchd-vhost\.8.*' \
    "license:/usr/share/licenses/openvswitch-vhost(-[0-9.]+)?/LICENSE" \
    "requires:openvswitch = $ovs_version"
check libovs-vhost '/usr/lib[^/]*/libovs-vhost\.so\.0\..*' \
    "license:/usr/share/licenses/libovs-vhost(-[0-9.]+)?/LICENSE"
check libovs-vhost-devel /usr/include/ovs-vhost/vhost.h \
    '/usr/lib[^/]*/libovs-vhost\.so' '/usr/lib[^/]*/pkgconfig/libovs-vhost\.pc'
[ $ok = yes ] || fail "the packages' contents"

# The switch binary is OVS's vswitchd with our provider linked in.
rpm2cpio "$(ls "$work"/top/RPMS/*/openvswitch-vhost-[0-9]*.rpm)" \
    | (mkdir -p "$work/x" && cd "$work/x" && cpio -idm --quiet ./usr/sbin/ovs-vswitchd.vhost) \
    || fail "rpm2cpio"
strings "$work/x/usr/sbin/ovs-vswitchd.vhost" | grep -q dpdkvhostuserclient \
    || fail "ovs-vswitchd.vhost has no dpdkvhostuserclient"
status=0
