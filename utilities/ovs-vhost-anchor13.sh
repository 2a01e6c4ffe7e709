# SPDX-License-Identifier: Apache-2.0
# ovs-vhost-anchor13.sh -- Debian 13's DPDK 24.11 dpdk-testpmd and OVS-DPDK
# 3.5 as benchmark anchors, run from a Debian 13 chroot.
#
# Sourced by utilities/ovs-vhost-bench.sh and ovs-vhost-ovs-bench.sh after
# setting srcdir; uses tests/testpmd-lib.sh's conventions.  The chroot is
# utilities/ovs-vhost-chroot.sh's, with openvswitch-switch-dpdk and dpdk-dev
# (Debian 13 ships dpdk-testpmd there, not in dpdk) as extra packages,
# in a directory of its own (never the package test's
# chroot-trixie: openvswitch-switch-dpdk would change its ovs-vswitchd
# alternative).  Every process runs in the chroot through
# `ovs-vhost-chroot.sh run`, in a mount namespace of its own, so nothing
# it mounts is seen outside or outlives it.  The vhost-user sockets, logs
# and run directories live in ROOT/tmp/NAME.XXXXXX: the anchor sees that
# as /tmp/NAME.XXXXXX, the frontend outside the chroot as the full path.
#
#   anchor13_setup ROOT NAME DIR
#       Makes or reuses the chroot ROOT, and sets ANCHOR13_WORK (a fresh
#       work directory under ROOT/tmp, the caller's to remove),
#       ANCHOR13_DPDK and ANCHOR13_OVS (the package versions) and
#       ANCHOR13_TESTPMD (DIR/testpmd13, a dpdk-testpmd for TPMD_BIN).
#       False, with ANCHOR13_WHY saying why, when the chroot cannot be had
#       (no Debian archive and no chroot yet: the caller skips the
#       anchor).
#   anchor13_inside PATH
#       PATH as the chroot sees it.
#   anchor13_ovs_start O PMD_MASK DPDK_EXTRA [NETNS]
#       ovsdb-server and OVS-DPDK 3.5's ovs-vswitchd-dpdk, in the chroot,
#       with run, log and database directory O (under ANCHOR13_WORK),
#       dpdk-init=true, pmd-cpu-mask and dpdk-extra set before vswitchd
#       starts, in the network namespace NETNS if given (O
#       holds nothing older: it gets a new database).  Returns when
#       vswitchd answers on its control socket.  The same files as
#       tests/ovs-lib.sh's (O/db.sock, O/ovs-vswitchd.pid, its .ctl), so
#       ovs_vsctl, ovs_appctl and ovs_stop O work from outside.
#   anchor13_ovs_wait O
#       After ovs_stop O: waits for the chroot's namespace to end.

# shellcheck disable=SC3043
ANCHOR13_WHY=
ANCHOR13_ROOT=

anchor13_setup () {
    local root=$1 name=$2 dir=$3 rc=0
    ANCHOR13_ROOT=$root
    sh "$srcdir/utilities/ovs-vhost-chroot.sh" create --suite trixie \
        --extra "openvswitch-switch-dpdk dpdk-dev" "$root" >/dev/null || rc=$?
    case $rc in
    0) ;;
    77) ANCHOR13_WHY="no Debian 13 chroot in $root and the Debian archive cannot be reached"
        return 1 ;;
    *) ANCHOR13_WHY="utilities/ovs-vhost-chroot.sh create failed for $root"
       return 1 ;;
    esac
    ANCHOR13_DPDK=$(chroot "$root" dpkg-query -W -f='${Version}' dpdk 2>/dev/null)
    ANCHOR13_OVS=$(chroot "$root" dpkg-query -W -f='${Version}' openvswitch-switch-dpdk 2>/dev/null)
    if [ -z "$ANCHOR13_DPDK" ] || [ ! -x "$root/usr/bin/dpdk-testpmd" ]; then
        ANCHOR13_WHY="no dpdk-testpmd in $root"
        return 1
    fi
    ANCHOR13_WORK=$(mktemp -d "$root/tmp/$name.XXXXXX") || {
        ANCHOR13_WHY="cannot make a directory in $root/tmp"; return 1; }
    ANCHOR13_TESTPMD=$dir/testpmd13
    # A wrapper, so that the pid tpmd_start records is one it may signal:
    # a SIGTERM to it reaches dpdk-testpmd (the child of the namespace's
    # shell, which would only wait for it), and the EAL runtime directory
    # it leaves in the chroot goes with it.  Not exec: it must outlive
    # testpmd to clean up.  A background job's stdin is /dev/null unless
    # redirected, hence fd 3.
    cat > "$ANCHOR13_TESTPMD" <<EOF
#! /bin/sh
# Debian 13's dpdk-testpmd, in the chroot $root.
prefix= prev=
for a; do [ "\$prev" = --file-prefix ] && prefix=\$a; prev=\$a; done
exec 3<&0
sh '$srcdir/utilities/ovs-vhost-chroot.sh' run '$root' \\
    stdbuf -o0 -e0 dpdk-testpmd "\$@" <&3 3<&- &
child=\$!
exec 3<&-
trap 'for p in \$(ps -o pid= --ppid "\$child"); do kill -TERM "\$p"; done' TERM INT HUP
rc=0
wait "\$child" || rc=\$?
while kill -0 "\$child" 2>/dev/null; do wait "\$child" || rc=\$?; done
[ -n "\$prefix" ] && rm -rf '$root/run/dpdk/'"\$prefix"
exit \$rc
EOF
    chmod +x "$ANCHOR13_TESTPMD"
}

anchor13_inside () { echo "${1#"$ANCHOR13_ROOT"}"; }

anchor13_ovs_start () {
    local O=$1 mask=$2 extra=$3 ns=${4:-} iO i=0
    iO=$(anchor13_inside "$O")
    mkdir -p "$O" || return 1
    cat > "$O/start.sh" <<EOF
set -e
OVS_RUNDIR=$iO OVS_LOGDIR=$iO OVS_DBDIR=$iO OVS_SYSCONFDIR=$iO
export OVS_RUNDIR OVS_LOGDIR OVS_DBDIR OVS_SYSCONFDIR
ovsdb-tool create $iO/conf.db /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server $iO/conf.db --remote=punix:$iO/db.sock \\
    --pidfile=$iO/ovsdb-server.pid --unixctl=$iO/ovsdb-server.ctl \\
    --log-file=$iO/ovsdb-server.log --detach --no-chdir
ovs-vsctl --db=unix:$iO/db.sock --no-wait init -- \\
    set Open_vSwitch . other_config:pmd-cpu-mask=$mask \\
    other_config:dpdk-init=true other_config:dpdk-extra="$extra"
# Named ovs-vswitchd, so that its pidfile and control socket are the
# stock ones.
ln -sf /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk $iO/ovs-vswitchd
set +e
# In the foreground: the namespace's mounts stay until it exits.
$iO/ovs-vswitchd unix:$iO/db.sock --pidfile --log-file -vfile:info --no-chdir
rc=\$?
ovs-appctl -t $iO/ovsdb-server.ctl exit
exit \$rc
EOF
    ${ns:+ip netns exec "$ns"} sh "$srcdir/utilities/ovs-vhost-chroot.sh" \
        run "$ANCHOR13_ROOT" sh "$iO/start.sh" > "$O/start.log" 2>&1 < /dev/null &
    echo $! > "$O/anchor13.pid"
    until [ -s "$O/ovs-vswitchd.pid" ] &&
          [ -S "$O/ovs-vswitchd.$(cat "$O/ovs-vswitchd.pid").ctl" ]; do
        kill -0 "$(cat "$O/anchor13.pid")" 2>/dev/null || {
            echo "anchor13: OVS-DPDK 3.5 did not start:" >&2
            tail -5 "$O/start.log" >&2; return 1; }
        i=$((i + 1))
        [ $i -lt 600 ] || { echo "anchor13: OVS-DPDK 3.5 start timed out" >&2; return 1; }
        sleep 0.1
    done
}

anchor13_ovs_wait () {
    local pid i=0
    pid=$(cat "$1/anchor13.pid" 2>/dev/null) || return 0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
    wait "$pid" 2>/dev/null
    rm -f "$1/anchor13.pid"
}
