#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# The main job, on a fresh Debian 12 machine as root: an Open vSwitch
# sandbox whose vhost-user ports are served by ovs-vhost.
#
#   1. installs what is missing, builds Open vSwitch 3.1 once from Debian's
#      openvswitch-source (cached in /var/cache/ovs-vhost), and builds
#      ovs-vhost against it, with vswitchd/ovs-vswitchd-vhost;
#   2. starts ovsdb-server and that ovs-vswitchd in a private directory,
#      with a netdev bridge br0 and two ports: vhu0 (dpdkvhostuser, OVS
#      listens) and vhu1 (dpdkvhostuserclient, OVS connects to a testpmd
#      that listens), and flows vhu0 -> vhu1 -> vhu0;
#   3. connects DPDK testpmd as the guests (virtio-user, no hugepages):
#      one testpmd with a port on each socket, forwarding between them (io),
#      started with tx_first, so packets go round guest -> vhu0 -> OVS ->
#      vhu1 -> guest -> vhu1 -> OVS -> vhu0 -> guest;
#   4. prints the ports' status and statistics columns, and
#      `ovs-appctl vhost/show`.
#
# DEMO_SECONDS (default 5) sets how long traffic runs.
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$srcdir"
seconds=${DEMO_SECONDS:-5}

# shellcheck source=ovs-vhost-demo-lib.sh
. "$srcdir/utilities/ovs-vhost-demo-lib.sh"
demo_build "$srcdir"
# shellcheck source=../tests/ovs-lib.sh
. "$srcdir/tests/ovs-lib.sh"
# shellcheck source=../tests/testpmd-lib.sh
. "$srcdir/tests/testpmd-lib.sh"

dir=$(mktemp -d "${TMPDIR:-/tmp}/ovs-vhost-demo.XXXXXX")
O=$dir/ovs
cleanup () {
  tpmd_stop_all "$dir" >/dev/null 2>&1 || true
  ovs_stop "$O" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "== ovsdb-server and ovs-vswitchd-vhost in $O"
ovs_start "$O" 2>/dev/null
ovs_vsctl "$O" set Open_vSwitch . other_config:stats-update-interval=5000
ovs_vsctl_wait "$O" add-br br0 -- set bridge br0 datapath_type=netdev \
  -- add-port br0 vhu0 -- set Interface vhu0 type=dpdkvhostuser ofport_request=1 \
  -- add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuserclient \
       options:vhost-server-path="$dir/vhu1.sock" ofport_request=2
ofctl=$OVS_BUILD/utilities/ovs-ofctl
"$ofctl" del-flows "unix:$O/br0.mgmt"
"$ofctl" add-flow "unix:$O/br0.mgmt" in_port=1,actions=output:2
"$ofctl" add-flow "unix:$O/br0.mgmt" in_port=2,actions=output:1
echo "== iface_types: $(ovs_vsctl "$O" get Open_vSwitch . iface_types)"
ovs_vsctl "$O" show

echo "== testpmd as the guests: virtio-user port 0 on $O/vhu0 (OVS listens),"
echo "   port 1 listening at $dir/vhu1.sock (OVS connects); io forwarding 0<->1"
TPMD_FWD_CPU=0 tpmd_start guests "$dir" \
  "net_virtio_user0,path=$O/vhu0 net_virtio_user1,path=$dir/vhu1.sock,server=1" \
  --forward-mode=io
tpmd_wait_ready guests "$dir"
i=0
until [ "$(ovs_vsctl "$O" get Interface vhu1 status:status 2>/dev/null)" = connected ] \
      && [ "$(ovs_vsctl "$O" get Interface vhu0 status:status 2>/dev/null)" = connected ]; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "ports did not connect"; exit 1; }
  sleep 0.2
done
echo "== start tx_first: 32 packets per port go round guest -> OVS -> guest"
demo_traffic guests "$dir" "$seconds" "port 0" "port 1"
sleep 6   # one statistics interval

for p in vhu0 vhu1; do
  echo "== Interface $p status"
  ovs_vsctl "$O" get Interface $p status
  echo "== Interface $p statistics (standard and ovs_*)"
  ovs_vsctl "$O" get Interface $p statistics | tr -d '{}' | tr ',' '\n' \
    | sed 's/^ //' | grep -E '^(rx|tx)_(packets|bytes|dropped|errors)=|^ovs_' \
    | paste -sd' ' | fold -s -w 100
done
demo_came_round demo guests "$dir" "port 0" "port 1" || exit 1
echo "== ovs-appctl vhost/show"
ovs_appctl "$O" vhost/show
echo "== ovs-appctl dpif-netdev/pmd-rxq-show"
ovs_appctl "$O" dpif-netdev/pmd-rxq-show
echo "== done"
