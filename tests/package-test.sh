#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian packages, end to end, as an operator meets them.  As root on
# Debian 12 with Debian's openvswitch-source and dpdk-testpmd (what
# utilities/install-deps.sh installs), or on Debian 13 (what
# tests/chroot-package-test.sh does, in a chroot):
#
#   1. `make dist` in BUILDDIR (a configured ovs-vhost build directory),
#      unpack the tarball in a scratch directory and build the packages
#      there with `dpkg-buildpackage -us -uc -b`; lintian on the result:
#      any error fails the test, warnings are listed; openvswitch-switch-vhost
#      must depend on exactly one openvswitch-switch, "(= VERSION)"
#      (dpkg-deb -f);
#   2. install them beside Debian's openvswitch-switch (installed first if
#      missing, with service start-up blocked by policy-rc.d); the
#      openvswitch-switch installed must be that VERSION, built from the
#      openvswitch-source the package was built from, and
#      ovs-vswitchd-vhost --version must name its upstream version;
#   3. select ovs-vswitchd-vhost with update-alternatives;
#   4. start Open vSwitch the distro way (ovs-ctl start) and check that the
#      running ovs-vswitchd is ours and offers dpdkvhostuserclient;
#   5. a datapath_type=netdev bridge, two dpdkvhostuserclient ports added
#      with ovs-vsctl, flows 1->2 and 2->1, and one dpdk-testpmd (no
#      hugepages) whose two virtio-user ports (server=1) loop packets
#      through them (io forwarding, tx_first); the ports' counters, read
#      with ovs-vsctl (statistics, status) and ovs-appctl (vhost/show,
#      vhost/list), must show that traffic in both directions;
#   6. `man ovs-vhost` shows the page;
#   7. stop Open vSwitch, remove the packages, and check that the
#      ovs-vswitchd alternative falls back to the stock binary.
#
#   tests/package-test.sh BUILDDIR
#
# Exit status 0 (pass), 1 (fail) or 77 (skipped: not root, not Debian, no
# dpdk-testpmd, or an Open vSwitch already running on this machine, which
# the test will not disturb).
#
# Cleans up after itself: stops what it started, removes the packages it
# installed (and only those), puts back the alternative's previous setting,
# the Open vSwitch database, /etc/openvswitch, /var/log/openvswitch and
# /run/openvswitch as it found them, and deletes its scratch directory
# (kept, with the logs, on failure or with PACKAGE_TEST_KEEP=1).
#
# Environment:
#   OVS_VHOST_DEB_OVS_CACHE  where debian/rules keeps its Open vSwitch
#                            build (default here: /var/cache/ovs-vhost,
#                            shared with the tests; empty: build OVS inside
#                            the package build, as a plain
#                            dpkg-buildpackage does)
#   PACKAGE_TEST_JOBS        dpkg-buildpackage -j (default 2)
#   PACKAGE_TEST_SECONDS     how long traffic runs (default 3)
#   PACKAGE_TEST_TARBALL     the release tarball to build (default: `make
#                            dist` in BUILDDIR, which may then be "-")

srcdir=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-}
jobs=${PACKAGE_TEST_JOBS:-2}
seconds=${PACKAGE_TEST_SECONDS:-3}

say () { echo "package-test: $*"; }
skip () { say "SKIP: $*"; exit 77; }

tarball=${PACKAGE_TEST_TARBALL:-}
if [ -n "$tarball" ]; then
    [ -f "$tarball" ] || { echo "$0: $tarball: no such tarball" >&2; exit 1; }
    tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
else
    [ -n "$builddir" ] && [ -f "$builddir/Makefile" ] \
        || { echo "usage: $0 BUILDDIR (a configured ovs-vhost build)" >&2; exit 1; }
    builddir=$(cd "$builddir" && pwd)
fi
[ "$(id -u)" = 0 ] || skip "needs root (installs packages, starts Open vSwitch)"
command -v dpkg-buildpackage >/dev/null && [ -r /etc/debian_version ] \
    || skip "not a Debian system with dpkg-dev"
command -v dpdk-testpmd >/dev/null || skip "dpdk-testpmd not installed"
# Debian 12's openvswitch-source is a tarball, Debian 13's a tree.
[ -r /usr/src/openvswitch/openvswitch.tar.gz ] || [ -f /usr/src/openvswitch/configure ] \
    || skip "openvswitch-source not installed"

# Debian's Open vSwitch layout.
OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl
RUNDIR=/var/run/openvswitch
VHOST_BIN=/usr/lib/openvswitch-switch-vhost/ovs-vswitchd-vhost
STOCK_BIN=/usr/lib/openvswitch-switch/ovs-vswitchd

# Somebody's Open vSwitch is running: leave it alone.
for d in ovsdb-server ovs-vswitchd; do
    pid=$(cat "$RUNDIR/$d.pid" 2>/dev/null) || continue
    [ -n "$pid" ] && [ -d "/proc/$pid" ] \
        && skip "a system $d is running (pid $pid); not disturbing it"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ovs-vhost-package-test.XXXXXX")
status=1
t0=$(date +%s)
step_start=$t0
step () {
    now=$(date +%s)
    [ -z "${step_name:-}" ] || say "  ($step_name: $((now - step_start)) s)"
    step_name=$1 step_start=$now
    echo "=== $1"
}

# --- what to put back ------------------------------------------------------

installed_now () {
    dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 2>/dev/null \
        | awk '$1 ~ /^ii/ { print $2 }' | sort
}
alt_before=$(update-alternatives --query ovs-vswitchd 2>/dev/null \
             | sed -n 's/^Status: //p')
alt_value_before=$(update-alternatives --query ovs-vswitchd 2>/dev/null \
                   | sed -n 's/^Value: //p')
run_existed=no; [ -e "$RUNDIR" ] && run_existed=yes
mkdir -p "$work/save"
for d in /etc/openvswitch /var/lib/openvswitch /var/log/openvswitch; do
    [ -d "$d" ] && (cd "$d" && find . -mindepth 1 | sort) > "$work/save/$(echo "$d" | tr / _).list"
done
if [ -e /var/lib/openvswitch/conf.db ]; then
    cp -p /var/lib/openvswitch/conf.db "$work/save/conf.db"
fi
policy_rc=no
started_ovs=no

ovs_stop () {
    if [ $started_ovs = yes ]; then
        "$OVS_CTL" stop >"$work/ovs-ctl-stop.log" 2>&1 || cat "$work/ovs-ctl-stop.log"
        started_ovs=no
    fi
}

cleanup () {
    set +e
    trap - EXIT INT TERM HUP
    [ -n "${tpmd_dir:-}" ] && tpmd_stop_all "$tpmd_dir" >/dev/null 2>&1
    if [ $started_ovs = yes ]; then
        ovs-vsctl --timeout=10 --if-exists del-br br-pkgtest >/dev/null 2>&1
        ovs_stop
    fi
    # Packages this test installed (ours, and openvswitch-switch & co if
    # they were missing) that are still there, nothing else: not what
    # somebody else may have installed meanwhile.
    new=
    if [ -f "$work/pkgs.ours" ]; then
        installed_now > "$work/pkgs.now"
        new=$(comm -12 "$work/pkgs.ours" "$work/pkgs.now" | tr '\n' ' ')
    fi
    if [ -n "$new" ]; then
        say "removing what the test installed: $new"
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -q \
            -o DPkg::Lock::Timeout=120 $new >"$work/purge.log" 2>&1 \
            || { cat "$work/purge.log"; status=1; }
    fi
    # The alternative as it was.
    if [ "$alt_before" = manual ] && [ -n "$alt_value_before" ] \
       && [ -e "$alt_value_before" ]; then
        update-alternatives --set ovs-vswitchd "$alt_value_before" >/dev/null
    elif [ "$alt_before" = auto ]; then
        update-alternatives --auto ovs-vswitchd >/dev/null 2>&1
    fi
    # The database, and the files Open vSwitch made.
    if [ -f "$work/save/conf.db" ]; then
        cp -p "$work/save/conf.db" /var/lib/openvswitch/conf.db
    fi
    for d in /etc/openvswitch /var/lib/openvswitch /var/log/openvswitch; do
        l="$work/save/$(echo "$d" | tr / _).list"
        [ -f "$l" ] && [ -d "$d" ] || continue
        (cd "$d" && find . -mindepth 1 | sort) | comm -13 "$l" - \
            | (cd "$d" && sort -r | while read -r f; do
                   if [ -d "$f" ]; then rmdir "$f"; else rm -f "$f"; fi
               done)
    done
    [ $run_existed = yes ] || rm -rf "$RUNDIR"
    [ $policy_rc = yes ] && rm -f /usr/sbin/policy-rc.d
    if [ $status = 0 ] && [ -z "${PACKAGE_TEST_KEEP:-}" ]; then
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

# --- 1. build -----------------------------------------------------------

if [ -z "$tarball" ]; then
    step "make dist"
    make -C "$builddir" dist >"$work/dist.log" 2>&1 || { tail -30 "$work/dist.log"; fail "make dist"; }
    tarball=$(ls -t "$builddir"/ovs-vhost-*.tar.gz | head -1)
    [ -f "$tarball" ] || fail "no tarball"
fi
say "$tarball"
tar -xzf "$tarball" -C "$work"
src=$(ls -d "$work"/ovs-vhost-*/)
src=${src%/}

step "dpkg-buildpackage -us -uc -b"
export OVS_VHOST_DEB_OVS_CACHE="${OVS_VHOST_DEB_OVS_CACHE-/var/cache/ovs-vhost}"
say "Open vSwitch build cache: ${OVS_VHOST_DEB_OVS_CACHE:-inside the package build}"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs" \
    dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 \
    || { tail -60 "$work/build.log"; fail "dpkg-buildpackage"; }
changes=$(ls "$work"/ovs-vhost_*.changes)
ls "$work"/*.deb | sed 's|.*/|  |'

step "lintian"
lintian --fail-on error --display-info "$changes" >"$work/lintian.log" 2>&1
lintian_rc=$?
sed 's/^/  /' "$work/lintian.log"
say "lintian: $(grep -c '^E:' "$work/lintian.log") errors," \
    "$(grep -c '^W:' "$work/lintian.log") warnings," \
    "$(grep -c '^I:' "$work/lintian.log") infos"
[ $lintian_rc = 0 ] || fail "lintian reports errors"

step "Depends: openvswitch-switch"
ovs_src_version=$(dpkg-query -W -f='${Version}' openvswitch-source)
depends=$(dpkg-deb -f "$(ls "$work"/openvswitch-switch-vhost_*.deb)" Depends)
say "Depends: $depends"
ovs_rel=$(echo "$depends" | tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep '^openvswitch-switch\( \|$\)')
say "built from openvswitch-source $ovs_src_version: $ovs_rel"
case $ovs_rel in
    *"
"*) fail "more than one relation on openvswitch-switch" ;;
    "openvswitch-switch (= "*")") ovs_switch_version=${ovs_rel#openvswitch-switch (= }
                                  ovs_switch_version=${ovs_switch_version%)} ;;
    *) fail "openvswitch-switch-vhost does not depend on one exact openvswitch-switch" ;;
esac

# --- 2. install -----------------------------------------------------------

step "install beside Debian's openvswitch-switch"
if [ ! -e /usr/sbin/policy-rc.d ]; then
    # No service start or restart from package scripts: this test starts
    # Open vSwitch itself.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    policy_rc=yes
fi
installed_now > "$work/pkgs.before"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    -o DPkg::Lock::Timeout=120 "$work"/openvswitch-switch-vhost_*.deb \
    "$work"/libovs-vhost0_*.deb "$work"/libovs-vhost-dev_*.deb \
    >"$work/install.log" 2>&1
rc=$?
installed_now | comm -13 "$work/pkgs.before" - > "$work/pkgs.ours"
[ $rc = 0 ] || { tail -30 "$work/install.log"; fail "apt-get install"; }
say "installed: $(tr '\n' ' ' < "$work/pkgs.ours")"
dpkg-query -W openvswitch-switch openvswitch-switch-vhost libovs-vhost0 \
    libovs-vhost-dev | sed 's/^/  /'
[ -x "$VHOST_BIN" ] || fail "$VHOST_BIN not installed"
v=$(dpkg-query -W -f='${Version} ${source:Version}' openvswitch-switch)
[ "$v" = "$ovs_switch_version $ovs_src_version" ] \
    || fail "openvswitch-switch (version, source version) is $v, not $ovs_switch_version $ovs_src_version"
"$VHOST_BIN" --version >"$work/version.txt" || fail "$VHOST_BIN --version"
say "$(head -1 "$work/version.txt")"
head -1 "$work/version.txt" | grep -q " ${ovs_src_version%-*}\$" \
    || fail "$VHOST_BIN is not Open vSwitch ${ovs_src_version%-*}"
update-alternatives --query ovs-vswitchd | grep -A1 "^Alternative: $VHOST_BIN\$" \
    | grep -q '^Priority: 25$' || fail "alternative not registered at priority 25"
[ "$(readlink -f /usr/sbin/ovs-vswitchd)" != "$VHOST_BIN" ] \
    || fail "installing switched the alternative by itself"
pkg-config --modversion libovs-vhost | sed 's/^/  libovs-vhost.pc: /' \
    || fail "pkg-config libovs-vhost"

# --- 3. select it -------------------------------------------------------

step "update-alternatives --set ovs-vswitchd"
update-alternatives --set ovs-vswitchd "$VHOST_BIN" || fail "update-alternatives --set"
[ "$(readlink -f /usr/sbin/ovs-vswitchd)" = "$VHOST_BIN" ] || fail "link not switched"

# --- 4. start Open vSwitch ------------------------------------------------

step "ovs-ctl start"
# ovs-ctl loads the openvswitch kernel module before it starts
# ovs-vswitchd and gives up if it cannot; a netdev bridge does not need
# it.  Where the module is neither loaded nor loadable (containers, VMs
# without modules), a stub modprobe that only says yes to "openvswitch"
# goes first in ovs-ctl's PATH; nothing else changes.
ctl_path=$PATH
if [ ! -e /sys/module/openvswitch ] && ! modprobe -n openvswitch 2>/dev/null; then
    mkdir -p "$work/bin"
    printf '#!/bin/sh\n[ "$1" = openvswitch ] && exit 0\nexec /sbin/modprobe "$@"\n' \
        > "$work/bin/modprobe"
    chmod 755 "$work/bin/modprobe"
    ctl_path=$work/bin:$PATH
    say "no openvswitch kernel module here: ovs-ctl gets a modprobe stub"
fi
started_ovs=yes
PATH=$ctl_path "$OVS_CTL" start --system-id=random --no-mlockall \
    >"$work/ovs-ctl-start.log" 2>&1 \
    || { cat "$work/ovs-ctl-start.log"; fail "ovs-ctl start"; }
sed 's/^/  /' "$work/ovs-ctl-start.log"
pid=$(cat "$RUNDIR/ovs-vswitchd.pid")
exe=$(readlink -f "/proc/$pid/exe")
say "ovs-vswitchd pid $pid runs $exe"
[ "$exe" = "$VHOST_BIN" ] || fail "the running ovs-vswitchd is not ovs-vswitchd-vhost"
types=$(ovs-vsctl get Open_vSwitch . iface_types)
say "iface_types: $types"
case $types in *dpdkvhostuserclient*) ;; *) fail "no dpdkvhostuserclient in iface_types" ;; esac

# --- 5. traffic -----------------------------------------------------------

step "bridge, ports and testpmd"
# shellcheck source=testpmd-lib.sh
. "$srcdir/tests/testpmd-lib.sh"
tpmd_dir=$work/tpmd
mkdir -p "$tpmd_dir"
ovs-vsctl --timeout=30 add-br br-pkgtest -- set bridge br-pkgtest datapath_type=netdev \
    -- add-port br-pkgtest vhc0 -- set Interface vhc0 type=dpdkvhostuserclient \
         options:vhost-server-path="$tpmd_dir/vhc0.sock" ofport_request=1 \
    -- add-port br-pkgtest vhc1 -- set Interface vhc1 type=dpdkvhostuserclient \
         options:vhost-server-path="$tpmd_dir/vhc1.sock" ofport_request=2 \
    || fail "ovs-vsctl add-br/add-port"
ovs-ofctl del-flows br-pkgtest
ovs-ofctl add-flow br-pkgtest in_port=1,actions=output:2
ovs-ofctl add-flow br-pkgtest in_port=2,actions=output:1
TPMD_MEM=512 tpmd_start guest "$tpmd_dir" \
    "net_virtio_user0,path=$tpmd_dir/vhc0.sock,server=1 net_virtio_user1,path=$tpmd_dir/vhc1.sock,server=1" \
    --forward-mode=io || fail "tpmd_start"
tpmd_wait_ready guest "$tpmd_dir" 60 || { cat "$tpmd_dir/guest.log"; fail "testpmd did not come up"; }
i=0
until [ "$(ovs-vsctl get Interface vhc0 status:status 2>/dev/null)" = connected ] \
      && [ "$(ovs-vsctl get Interface vhc1 status:status 2>/dev/null)" = connected ]; do
    i=$((i + 1)); [ $i -lt 150 ] || fail "ports did not connect"
    sleep 0.2
done
ovs-appctl vhost/list | sed 's/^/  /'
{ tpmd_link_up guest "$tpmd_dir" 0 && tpmd_link_up guest "$tpmd_dir" 1; } \
    || fail "testpmd's links did not come up"
tpmd_cmd guest "$tpmd_dir" "start tx_first" >/dev/null || fail "testpmd start"
sleep "$seconds"
tpmd_cmd guest "$tpmd_dir" stop >"$work/testpmd-stop.txt" || fail "testpmd stop"
g0=$(tpmd_port_counts guest "$tpmd_dir" 0)
g1=$(tpmd_port_counts guest "$tpmd_dir" 1)
say "testpmd port 0 (vhc0) RX TX: $g0; port 1 (vhc1) RX TX: $g1"

step "counters through ovs-vsctl and ovs-appctl"
# The statistics column is refreshed every stats-update-interval (5 s).
sleep 6
ok=yes
for p in vhc0 vhc1; do
    st=$(ovs-vsctl get Interface "$p" statistics)
    rx=$(ovs-vsctl get Interface "$p" statistics:rx_packets)
    tx=$(ovs-vsctl get Interface "$p" statistics:tx_packets)
    say "$p: rx_packets=$rx tx_packets=$tx"
    echo "$st" | tr -d '{}' | tr ',' '\n' | sed 's/^ //' \
        | grep -E '^(rx|tx)_(packets|bytes|dropped)=|^ovs_tx_(retries|failure_drops)=|^rx_q0_good_packets=' \
        | paste -sd' ' | sed 's/^/    /'
    echo "    status: $(ovs-vsctl get Interface "$p" status)"
    [ "${rx:-0}" -ge 1000 ] && [ "${tx:-0}" -ge 1000 ] || ok=no
done
ovs-appctl vhost/show >"$work/vhost-show.txt" || fail "ovs-appctl vhost/show"
sed 's/^/  /' "$work/vhost-show.txt"
grep -q 'vhc0: dpdkvhostuserclient, mode client' "$work/vhost-show.txt" \
    && grep -q 'state: connected, device ready' "$work/vhost-show.txt" \
    && grep -Eq 'vring 1 \(guest tx, ovs rx q0\): size [0-9]+, enabled, packets [1-9]' "$work/vhost-show.txt" \
    || fail "vhost/show does not show the traffic"
[ $ok = yes ] || fail "OVS counters did not see traffic both ways (want >= 1000 each)"
tpmd_stop guest "$tpmd_dir" >/dev/null
ovs-vsctl del-br br-pkgtest

# --- 6. man ---------------------------------------------------------------

step "man ovs-vhost"
MANPAGER=cat MANWIDTH=80 man ovs-vhost >"$work/man.txt" 2>"$work/man.err" \
    || { cat "$work/man.err"; fail "man ovs-vhost"; }
grep -q 'vhost/show' "$work/man.txt" && grep -q 'SWITCHING THE ALTERNATIVE' "$work/man.txt" \
    || fail "man ovs-vhost: not the expected page"
say "man ovs-vhost: $(wc -l < "$work/man.txt") lines; also $(man -w ovs-vswitchd-vhost ovs-vhost-fwd | tr '\n' ' ')"

# --- 7. stop, remove, fall back -------------------------------------------

step "ovs-ctl stop, remove the packages"
ovs_stop
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q -o DPkg::Lock::Timeout=120 \
    openvswitch-switch-vhost libovs-vhost-dev libovs-vhost0 >"$work/remove.log" 2>&1 \
    || { tail -20 "$work/remove.log"; fail "apt-get remove"; }
update-alternatives --query ovs-vswitchd >"$work/alt.txt"
if grep -q "^Alternative: $VHOST_BIN\$" "$work/alt.txt"; then
    fail "the alternative is still registered"
fi
link=$(readlink -f /usr/sbin/ovs-vswitchd)
say "after removal: /usr/sbin/ovs-vswitchd -> $link ($(sed -n 's/^Status: //p' "$work/alt.txt"))"
[ "$link" = "$STOCK_BIN" ] || fail "the alternative did not fall back to $STOCK_BIN"
[ ! -e "$VHOST_BIN" ] || fail "$VHOST_BIN left behind"

step done
status=0
