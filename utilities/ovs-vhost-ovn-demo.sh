#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# ovs-vhost as an OVN chassis, two chassis on this machine, as root:
#
#   1. builds as utilities/ovs-vhost-demo.sh does, and unpacks Debian's
#      OVN programs without installing them (utilities/ovs-vhost-ovn.sh);
#   2. starts an OVN central (NB and SB ovsdb-servers, ovn-northd) and two
#      chassis, hvA and hvB, each an ovsdb-server, ovs-vswitchd-vhost and
#      ovn-controller in a network namespace of its own, with br-int and a
#      br-phy that carries the Geneve endpoint (172.31.0.1, 172.31.0.2) over
#      a veth between the two namespaces (tests/ovn-lib.sh);
#   3. makes logical switch ls0 with ports vm1 and vm2, and on each chassis
#      a dpdkvhostuserclient port bound to one of them by
#      external_ids:iface-id (vm1 on hvA, vm2 on hvB);
#   4. connects the guests: testpmd's virtio-user, one device per port (one
#      testpmd, so one CPU for both), each device looped to itself with
#      its MAC addresses swapped; `start tx_first 8` sends bursts from each,
#      which then goes round vm1 -> hvA -> Geneve -> hvB -> vm2 -> hvB ->
#      Geneve -> hvA -> vm1 for DEMO_SECONDS (default 5);
#   5. prints the bindings, the tunnel port, the guests' rates and every
#      port's counters on both chassis, and stops all it started.
#
# Exits 1 if no traffic came round both ways, 77 (skipped) when not root
# or without the OVN programs (no package archive and no cache).
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
seconds=${DEMO_SECONDS:-5}

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: ovs-vhost-ovn-demo needs root (network namespaces)"
  exit 77
fi
# shellcheck source=ovs-vhost-demo-lib.sh
. "$srcdir/utilities/ovs-vhost-demo-lib.sh"
demo_build "$srcdir"
rc=0
ovn_dir=$("$srcdir/utilities/ovs-vhost-ovn.sh") || rc=$?
case $rc in
0)  ;;
77) echo "SKIP: no OVN programs (utilities/ovs-vhost-ovn.sh)"; exit 77 ;;
*)  exit 1 ;;
esac
OVN=$ovn_dir/usr
# shellcheck source=../tests/ovs-lib.sh
. "$srcdir/tests/ovs-lib.sh"
# shellcheck source=../tests/ovn-lib.sh
. "$srcdir/tests/ovn-lib.sh"
# shellcheck source=../tests/testpmd-lib.sh
. "$srcdir/tests/testpmd-lib.sh"

OVN_W=$(mktemp -d "${TMPDIR:-/tmp}/ovs-vhost-ovn-demo.XXXXXX")
export OVN OVN_W
A=$OVN_W/hvA B=$OVN_W/hvB
cleanup () {
  tpmd_stop_all "$OVN_W" >/dev/null 2>&1 || true
  ovn_cleanup >/dev/null 2>&1 || true
  rm -rf "$OVN_W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
# The daemons' start-up lines, shown if one fails to start.
fail () { cat "$OVN_W/start.err" 2>/dev/null; echo "ovn-demo: FAILED: $*"; exit 1; }

echo "== OVN central in $OVN_W/central: NB and SB ovsdb-servers, ovn-northd"
ovn_start_central 2>>"$OVN_W/start.err" || fail "central"
for c in "hvA $A 172.31.0.1" "hvB $B 172.31.0.2"; do
  # shellcheck disable=SC2086
  set -- $c
  ovn_start_chassis "$2" "$1" "$3" 2>>"$OVN_W/start.err" || fail "chassis $1"
  echo "== chassis $1: ovsdb-server, ovs-vswitchd-vhost, ovn-controller in namespace $(cat "$2/netns"), Geneve endpoint $3"
done
echo "== underlay: a veth between the namespaces, in br-phy of each (MTU 1600: Geneve adds 58 bytes)"
ovn_underlay "$A" 172.31.0.1 "$B" 172.31.0.2 2>>"$OVN_W/start.err" || fail "underlay"

echo "== logical switch ls0: vm1 (02:00:00:00:00:01) and vm2 (02:00:00:00:00:02)"
ovn_nbctl ls-add ls0 \
  -- lsp-add ls0 vm1 -- lsp-set-addresses vm1 "02:00:00:00:00:01 10.0.0.1" \
  -- lsp-add ls0 vm2 -- lsp-set-addresses vm2 "02:00:00:00:00:02 10.0.0.2"

echo "== the guests: testpmd virtio-user devices, vhost-user servers at $OVN_W/vm1.sock and vm2.sock"
TPMD_MEM=512 TPMD_MBUFS=8192 tpmd_start guests "$OVN_W" \
  "net_virtio_user0,path=$OVN_W/vm1.sock,server=1,mac=02:00:00:00:00:01 net_virtio_user1,path=$OVN_W/vm2.sock,server=1,mac=02:00:00:00:00:02" \
  --forward-mode=macswap --port-topology=loop \
  --eth-peer=0,02:00:00:00:00:02 --eth-peer=1,02:00:00:00:00:01
# testpmd makes the second socket once the first is connected.
for c in "vm1 $A" "vm2 $B"; do
  # shellcheck disable=SC2086
  set -- $c
  ovn_poll 60 test -S "$OVN_W/$1.sock" || fail "no socket $OVN_W/$1.sock from testpmd"
  echo "== port $1 on chassis ${2##*/}:" \
    "type=dpdkvhostuserclient options:vhost-server-path=$OVN_W/$1.sock external_ids:iface-id=$1"
  ovs_vsctl "$2" add-port br-int "$1" -- set Interface "$1" type=dpdkvhostuserclient \
    options:vhost-server-path="$OVN_W/$1.sock" external_ids:iface-id="$1"
done
tpmd_wait_ready guests "$OVN_W" || fail "testpmd did not come up (see $OVN_W/guests.log)"
tpmd_cmd guests "$OVN_W" "set promisc all off" >/dev/null
{ ovn_wait_bound vm1 && ovn_wait_bound vm2; } || fail "vm1 and vm2 were not bound"
ovn_poll 30 ovs_vsctl "$A" get Interface ovn-hvB-0 type >/dev/null 2>&1 \
  || fail "no tunnel port on hvA"

echo "== ovn-sbctl show"
ovn_sbctl show
echo "== hvA's tunnel port to hvB (ovn-controller made it)"
ovs_vsctl "$A" --columns=name,type,options list Interface ovn-hvB-0

echo "== start tx_first 8: bursts from each guest go round through the tunnel"
# 8 bursts of 32 from each guest: enough in flight that the chassis' PMD
# threads find full batches, rather than sleeping between the few
# packets of one burst (pmd-maxsleep, set by tests/ovn-lib.sh).
demo_traffic guests "$OVN_W" "$seconds" vm1 vm2 8
echo "== the datapath's flows on hvA: into the tunnel, and out of it"
ovs_appctl "$A" dpctl/dump-flows netdev@ovs-netdev | grep -E -m 2 'tnl_(push|pop)' \
  | sed 's/^/  /' | cut -c1-200 || true
for c in "hvA $A" "hvB $B"; do
  # shellcheck disable=SC2086
  set -- $c
  echo "== $1: ovs-ofctl dump-ports br-int (the vhost-user port, the tunnel port)"
  ovn_ofctl "$2" --names dump-ports br-int
done
demo_came_round ovn-demo guests "$OVN_W" vm1 vm2 || exit 1
echo "ovn-demo: traffic came round both ways through the tunnel"
echo "== done"
