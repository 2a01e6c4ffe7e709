# SPDX-License-Identifier: Apache-2.0
# ovn-lib.sh -- an OVN central and chassis of ovs-vswitchd-vhost, in a
# private directory, for the autotest tests (tests/ovn.at) and the demo
# (utilities/ovs-vhost-ovn-demo.sh).
#
# Source it after tests/ovs-lib.sh, with OVS_BUILD and OVS_VSWITCHD set as
# for that file and:
#   OVN        the usr directory of the unpacked OVN packages
#              (utilities/ovs-vhost-ovn.sh prints its parent)
#   OVN_W      the working directory: the central runs in OVN_W/central
#   OVN_PFX    a prefix for the network namespaces of the VIFs, unique to
#              this run (namespace names are global)
# Root only.  docs/ovn-plan.md explains the choices: the daemons are run
# directly (ovn-ctl needs openvswitch-common's ovs-lib); ovn-controller
# runs in the network namespace of its ovs-vswitchd, so that it sees the
# same devices (trap 4); the underlay has MTU 1600, for Geneve's 58 bytes
# on 1500-byte frames (trap 7).
#
#   ovn_start_central              NB and SB ovsdb-servers and ovn-northd,
#                                  unix sockets only
#   ovn_start_chassis DIR NAME IP  ovsdb-server, ovs-vswitchd (ovs-lib.sh,
#                                  own namespace), br-int, ovn-controller;
#                                  Geneve endpoint IP
#   ovn_start_controller DIR / ovn_stop_controller DIR [--restart]
#   ovn_br_phy DIR IP              br-phy and its IP again (after an
#                                  ovs-vswitchd restart)
#   ovn_underlay DIR-A IP-A DIR-B IP-B
#                                  a veth between the chassis' namespaces
#                                  in br-phy of each, with the endpoint IP
#                                  on br-phy; waits until each endpoint
#                                  reaches the other
#   ovn_vif DIR LSP MAC IP/LEN [GW]
#                                  a namespace $OVN_PFX$LSP whose eth0 is a
#                                  veth to port LSP of DIR's br-int, bound
#                                  to logical port LSP by iface-id
#   ovn_ns LSP                     that namespace's name
#   ovn_ping LSP ADDR [ARGS]       3 pings from LSP's namespace
#   ovn_wait_bound LSP / ovn_wait_unbound LSP
#   ovn_nbctl / ovn_sbctl ARGS     against the central
#   ovn_ofctl DIR ARGS             ovs-ofctl with DIR's run directory
#   ovn_check_controller_log DIR [SED-FILTER]
#                                  as ovs_check_log, for ovn-controller
#   ovn_cleanup                    stops everything started under OVN_W,
#                                  deletes the namespaces made here
#
# Only pids recorded under OVN_W are signalled; only namespaces listed in
# OVN_W/netns.list (and the chassis' own, by ovs_stop) are deleted.

# shellcheck disable=SC3043
ovn_nbctl () { "$OVN/bin/ovn-nbctl" --timeout=30 --db="unix:$OVN_W/central/nb.sock" "$@"; }
ovn_sbctl () { "$OVN/bin/ovn-sbctl" --timeout=30 --db="unix:$OVN_W/central/sb.sock" "$@"; }
ovn_ofctl () {
    local dir=$1; shift
    (_ovs_env "$dir"; "$OVS_BUILD/utilities/ovs-ofctl" "$@")
}

ovn_start_central () {
    local c=$OVN_W/central db
    mkdir -p "$c" || return 1
    for db in nb sb; do
        rm -f "$c/$db.db"
        "$OVS_BUILD/ovsdb/ovsdb-tool" create "$c/$db.db" \
            "$OVN/share/ovn/ovn-$db.ovsschema" || return 1
        "$OVS_BUILD/ovsdb/ovsdb-server" "$c/$db.db" --remote="punix:$c/$db.sock" \
            --pidfile="$c/$db.pid" --unixctl="$c/$db.ctl" --log-file="$c/$db.log" \
            --detach --no-chdir || return 1
    done
    OVN_RUNDIR=$c "$OVN/bin/ovn-northd" --ovnnb-db="unix:$c/nb.sock" \
        --ovnsb-db="unix:$c/sb.sock" --pidfile="$c/northd.pid" \
        --unixctl="$c/northd.ctl" --log-file="$c/northd.log" --detach --no-chdir
}

# ovn_start_controller DIR: ovn-controller for DIR's ovs-vswitchd, in its
# namespace.  OVS_RUNDIR=DIR: it finds br-int.mgmt there.  23.03 has no
# --unixctl: its control socket is DIR/ovn-controller.PID.ctl.
ovn_start_controller () {
    local dir=$1
    (_ovs_env "$dir"; OVN_RUNDIR=$dir ip netns exec "$(cat "$dir/netns")" \
        "$OVN/bin/ovn-controller" "unix:$dir/db.sock" \
        --pidfile="$dir/ovn-controller.pid" --log-file="$dir/ovn-controller.log" \
        --detach --no-chdir)
}

# ovn_stop_controller DIR [--restart]: `exit`, which releases the
# chassis' bindings and deletes its Chassis record; with --restart it
# leaves them, as ovn-ctl's restart does.
ovn_stop_controller () {
    local pid
    pid=$(cat "$1/ovn-controller.pid" 2>/dev/null)
    [ -n "$pid" ] && (_ovs_env "$1"; "$OVS_BUILD/utilities/ovs-appctl" --timeout=10 \
        -t "$1/ovn-controller.$pid.ctl" exit $2 >/dev/null 2>&1)
    _ovs_kill "$1/ovn-controller.pid" ovn-controller 50
}

ovn_start_chassis () {
    local dir=$1 name=$2 ip=$3
    echo "$dir" >> "$OVN_W/chassis.list"
    ovs_start_db "$dir" || return 1
    # pmd-maxsleep: idle PMD threads (of the vhost ports) sleep, on a
    # machine whose 2 cores run two chassis and a guest.
    ovs_vsctl "$dir" set Open_vSwitch . external_ids:system-id="$name" \
        external_ids:ovn-remote="unix:$OVN_W/central/sb.sock" \
        external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip="$ip" \
        external_ids:ovn-bridge-datapath-type=netdev \
        other_config:pmd-maxsleep=10000 \
        other_config:stats-update-interval=5000 || return 1
    ovs_start_vswitchd "$dir" || return 1
    ovs_vsctl_wait "$dir" --may-exist add-br br-int -- set Bridge br-int \
        datapath_type=netdev fail_mode=secure other_config:disable-in-band=true \
        || return 1
    ovn_start_controller "$dir"
}

ovn_underlay () {
    local da=$1 ipa=$2 db=$3 ipb=$4 nsa nsb
    nsa=$(cat "$da/netns") nsb=$(cat "$db/netns")
    ip link add ul netns "$nsa" mtu 1600 type veth peer name ul netns "$nsb" mtu 1600 \
        || return 1
    ovn_br_phy "$da" "$ipa" && ovn_br_phy "$db" "$ipb" || return 1
    # Each endpoint pings the other: each OVS learns the peer's MAC from
    # the ARP reply through br-phy (its tunnel neighbour cache).  Else it
    # asks only when the first tunnelled packet comes, and drops that one:
    # a burst sent once (testpmd's tx_first) would be lost.
    ovn_poll 30 ip netns exec "$nsa" ping -q -c 1 -W 1 "$ipb" >/dev/null \
        && ovn_poll 30 ip netns exec "$nsb" ping -q -c 1 -W 1 "$ipa" >/dev/null
}

# ovn_br_phy DIR IP: br-phy with port ul and IP on its internal port (again
# after an ovs-vswitchd restart: the internal port is a tap device that
# goes with the process).
ovn_br_phy () {
    local ns
    ns=$(cat "$1/netns")
    ip -n "$ns" link set ul up || return 1
    ovs_vsctl_wait "$1" --may-exist add-br br-phy -- set Bridge br-phy \
        datapath_type=netdev -- --may-exist add-port br-phy ul \
        -- set Interface br-phy mtu_request=1600 || return 1
    ip -n "$ns" addr replace "$2/24" dev br-phy && ip -n "$ns" link set br-phy up
}

ovn_ns () { echo "$OVN_PFX$1"; }

ovn_vif () {
    local dir=$1 lsp=$2 mac=$3 ip=$4 gw=$5 ns
    ns=$(ovn_ns "$lsp")
    ip netns add "$ns" || return 1
    echo "$ns" >> "$OVN_W/netns.list"
    ip link add "$lsp" netns "$(cat "$dir/netns")" type veth peer name eth0 netns "$ns" \
        || return 1
    ip -n "$(cat "$dir/netns")" link set "$lsp" up || return 1
    ip -n "$ns" link set lo up && ip -n "$ns" link set eth0 address "$mac" \
        && ip -n "$ns" addr add "$ip" dev eth0 && ip -n "$ns" link set eth0 up \
        || return 1
    [ -z "$gw" ] || ip -n "$ns" route add default via "$gw" || return 1
    ovs_vsctl "$dir" add-port br-int "$lsp" -- set Interface "$lsp" \
        external_ids:iface-id="$lsp"
}

ovn_ping () {
    local lsp=$1 addr=$2; shift 2
    ip netns exec "$(ovn_ns "$lsp")" ping -q -c 3 -i 0.2 -W 2 "$@" "$addr"
}

# ovn_poll SECONDS COMMAND...: true once COMMAND is, within SECONDS.
ovn_poll () {
    local end
    end=$(( $(date +%s) + $1 )); shift
    until "$@"; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.2
    done
}

ovn_up__ () { [ "$(ovn_nbctl get Logical_Switch_Port "$1" up 2>/dev/null)" = "$2" ]; }
# Bound: the LSP is up (ovn-controller claimed it and installed its flows).
ovn_wait_bound () { ovn_poll 30 ovn_up__ "$1" true; }
ovn_wait_unbound () {
    ovn_poll 30 ovn_up__ "$1" false && ovn_poll 30 ovn_no_chassis__ "$1"
}
ovn_no_chassis__ () {
    [ -z "$(ovn_sbctl --bare --columns=chassis find Port_Binding logical_port="$1")" ]
}

# ovn_check_controller_log DIR [SED-FILTER]: the WARN and ERR lines of
# DIR/ovn-controller.log that are not expected, on stdout; false if any.
# Expected: the representor VIF plug provider, which 23.03 tries on every
# start and which needs a devlink NIC (docs/ovn-plan.md, section 6).
ovn_check_controller_log () {
    grep -E '\|(WARN|ERR|EMER)\|' "$1/ovn-controller.log" \
      | grep -v 'failed to initialize representor VIF plug provider' \
      | sed "${2:-}" | grep . && return 1
    return 0
}

ovn_cleanup () {
    local d ns
    for d in $(cat "$OVN_W/chassis.list" 2>/dev/null); do
        ovn_stop_controller "$d"
        ovs_stop "$d"
    done
    _ovs_kill "$OVN_W/central/northd.pid" ovn-northd
    _ovs_kill "$OVN_W/central/nb.pid" ovsdb-server
    _ovs_kill "$OVN_W/central/sb.pid" ovsdb-server
    for ns in $(cat "$OVN_W/netns.list" 2>/dev/null); do
        ip netns del "$ns" 2>/dev/null
    done
    rm -f "$OVN_W/chassis.list" "$OVN_W/netns.list"
}
