# SPDX-License-Identifier: Apache-2.0
# ovs-lib.sh -- run ovsdb-server and this build's ovs-vswitchd in a private
# directory, for shell tests, the demo and the benchmark.
#
# Source it (". tests/ovs-lib.sh") after setting:
#   OVS_BUILD      the Open vSwitch build tree (ovsdb-server, ovs-vsctl,
#                  ovs-appctl and the schema come from there)
#   OVS_VSWITCHD   the ovs-vswitchd to run (default: our vswitchd build)
# Every daemon gets OVS_RUNDIR/OVS_LOGDIR/OVS_DBDIR = DIR, so nothing
# touches /run/openvswitch, and the ovs-vsctl/ovs-appctl wrappers below
# talk to those daemons only.  As root, ovs-vswitchd runs in a network
# namespace of its own (named in DIR/netns): the userspace datapath makes
# kernel tap devices ("ovs-netdev", one per bridge) whose names would
# collide between sandboxes, or with a host's Open vSwitch.  Works with
# dash and bash.
#
#   ovs_start DIR [VSWITCHD-ARGS...]   ovsdb-server + ovs-vswitchd, detached
#   ovs_stop DIR                       both, with ovs-appctl exit, then kill
#   ovs_vsctl DIR ARGS...              ovs-vsctl against DIR's db
#   ovs_appctl DIR ARGS...             ovs-appctl against DIR's vswitchd
#   ovs_vswitchd_pid DIR
#   ovs_check_log DIR [EXTRA-SED]      prints unexpected WARN/ERR lines of
#                                      DIR/ovs-vswitchd.log and
#                                      ovsdb-server.log, false if any
#
# Only pids recorded in DIR (ovsdb-server.pid, ovs-vswitchd.pid) are ever
# signalled.

# shellcheck disable=SC3043
_ovs_env () {
    OVS_RUNDIR=$1 OVS_LOGDIR=$1 OVS_DBDIR=$1 OVS_SYSCONFDIR=$1 \
    OVS_PKGDATADIR=$OVS_BUILD/vswitchd
    export OVS_RUNDIR OVS_LOGDIR OVS_DBDIR OVS_SYSCONFDIR OVS_PKGDATADIR
}

ovs_vsctl () {
    local dir=$1; shift
    (_ovs_env "$dir"; "$OVS_BUILD/utilities/ovs-vsctl" --timeout=30 \
        --db="unix:$dir/db.sock" --no-wait "$@")
}

ovs_vsctl_wait () {
    local dir=$1; shift
    (_ovs_env "$dir"; "$OVS_BUILD/utilities/ovs-vsctl" --timeout=30 \
        --db="unix:$dir/db.sock" "$@")
}

ovs_appctl () {
    local dir=$1; shift
    (_ovs_env "$dir"; "$OVS_BUILD/utilities/ovs-appctl" --timeout=30 \
        -t ovs-vswitchd "$@")
}

ovs_vswitchd_pid () { cat "$1/ovs-vswitchd.pid" 2>/dev/null; }

# ovs_start_db DIR: a fresh database and ovsdb-server.
ovs_start_db () {
    local dir=$1
    mkdir -p "$dir" || return 1
    rm -f "$dir/conf.db"
    "$OVS_BUILD/ovsdb/ovsdb-tool" create "$dir/conf.db" \
        "$OVS_BUILD/vswitchd/vswitch.ovsschema" || return 1
    (_ovs_env "$dir"; "$OVS_BUILD/ovsdb/ovsdb-server" "$dir/conf.db" \
        --remote="punix:$dir/db.sock" --pidfile="$dir/ovsdb-server.pid" \
        --unixctl="$dir/ovsdb-server.ctl" \
        --log-file="$dir/ovsdb-server.log" --detach --no-chdir) || return 1
    ovs_vsctl "$dir" --no-wait init
}

# ovs_netns DIR: the network namespace of DIR's ovs-vswitchd, created on
# first use; empty if not root.
ovs_netns () {
    local ns
    [ "$(id -u)" = 0 ] || return 0
    if [ ! -s "$1/netns" ]; then
        ns=ovsvh$(printf '%s' "$1" | cksum | cut -d' ' -f1)
        ip netns add "$ns" 2>/dev/null || ip netns list | grep -q "^$ns\b" \
            || return 0
        echo "$ns" > "$1/netns"
    fi
    cat "$1/netns"
}

# ovs_start_vswitchd DIR [ARGS...]: this build's ovs-vswitchd, detached.
ovs_start_vswitchd () {
    local dir=$1 ns; shift
    ns=$(ovs_netns "$dir")
    # Default pidfile, log and control socket names: they come from the
    # program name, which must be "ovs-vswitchd" for a drop-in binary.
    (_ovs_env "$dir"; ${ns:+ip netns exec "$ns"} "$OVS_VSWITCHD" "unix:$dir/db.sock" \
        --pidfile --log-file -vfile:info --detach --no-chdir "$@") || return 1
}

ovs_start () {
    local dir=$1; shift
    ovs_start_db "$dir" && ovs_start_vswitchd "$dir" "$@"
}

# _ovs_kill PIDFILE NAME [GRACE]: waits GRACE tenths of a second for the
# process to exit by itself (after `ovs-appctl exit`), then asks with
# SIGTERM, then SIGKILL after 10 s.
_ovs_kill () {
    local pid i=0
    pid=$(cat "$1" 2>/dev/null) || return 0
    [ -n "$pid" ] || return 0
    grep -q "$2" "/proc/$pid/cmdline" 2>/dev/null || { rm -f "$1"; return 0; }
    while [ -d "/proc/$pid" ] && [ $i -lt "${3:-0}" ]; do sleep 0.1; i=$((i + 1)); done
    i=0
    [ -d "/proc/$pid" ] && kill "$pid" 2>/dev/null
    while [ -d "/proc/$pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null
    rm -f "$1"
}

ovs_stop_vswitchd () {
    local dir=$1
    ovs_appctl "$dir" exit >/dev/null 2>&1
    _ovs_kill "$dir/ovs-vswitchd.pid" ovs-vswitchd 100
}

ovs_stop () {
    local dir=$1
    ovs_stop_vswitchd "$dir"
    _ovs_kill "$dir/ovsdb-server.pid" ovsdb-server
    if [ -s "$dir/netns" ]; then
        ip netns del "$(cat "$dir/netns")" 2>/dev/null
        rm -f "$dir/netns"
    fi
}

# ovs_check_log DIR [SED-FILTER]: the WARN and ERR lines of
# DIR/ovs-vswitchd.log and DIR/ovsdb-server.log that are not expected, on
# stdout; false if any.
# Expected everywhere: the server-mode deprecation notice, the lines a
# sandbox without kernel datapath or hugepages always logs, and what OVS's
# own check_logs lets pass (a client gone before its reply: "Broken pipe",
# "reset by peer"; timeval's long-poll-interval report).
ovs_check_log () {
    local dir=$1 filter=${2:-}
    # Both daemons' logs, as OVS's own check_logs reads every log.
    cat "$dir/ovs-vswitchd.log" "$dir/ovsdb-server.log" 2>/dev/null \
      | grep -E '\|(WARN|ERR|EMER)\|' \
      | grep -v -e 'dpdkvhostuser ports are considered deprecated' \
                -e 'Failed to acquire lock' \
                -e 'could not create datapath' \
                -e 'system@ovs-system' \
                -e 'failed to connect to .*db.sock' \
                -e 'connection dropped' \
                -e 'failed to set MTU for network device br0' \
                -e 'reset by peer' -e 'Broken pipe' \
                -e 'Unreasonably long [0-9]*ms poll interval' \
                -e 'faults: [0-9]* minor, [0-9]* major' \
                -e 'context switches: [0-9]* voluntary' \
      | { if [ -n "$filter" ]; then sed "$filter"; else cat; fi; } \
      | grep . && return 1
    return 0
}
