#! /bin/sh
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
#   3. connects DPDK testpmd as both guests (virtio-user, no hugepages):
#      one sends packets (txonly) into vhu0, the other forwards what it
#      gets from vhu1 back (io forwarding);
#   4. prints the ports' status and statistics columns, and
#      `ovs-appctl vhost/show`.
#
# DEMO_SECONDS (default 5) sets how long traffic runs.
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$srcdir"
seconds=${DEMO_SECONDS:-5}

"$srcdir/utilities/install-deps.sh"
ovs_build=$("$srcdir/utilities/ovs-vhost-build-ovs.sh")
build=$srcdir/_build/gcc
if [ ! -x "$build/vswitchd/ovs-vswitchd-vhost" ]; then
  [ -x configure ] || ./boot.sh
  mkdir -p "$build"
  (cd "$build" && "$srcdir/configure" -q --with-ovs-source="$ovs_build")
  make -s -C "$build" -j"$(nproc)"
fi

OVS_BUILD=$ovs_build
OVS_VSWITCHD=$build/vswitchd/ovs-vswitchd-vhost
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

echo "== testpmd guest A: virtio-user on $O/vhu0, txonly"
TPMD_MEM=512 tpmd_start ga "$dir" "net_virtio_user0,path=$O/vhu0" \
  --forward-mode=txonly
tpmd_wait_ready ga "$dir"
echo "== testpmd guest B: virtio-user server at $dir/vhu1.sock, io (loops back)"
TPMD_MEM=512 tpmd_start gb "$dir" "net_virtio_user0,path=$dir/vhu1.sock,server=1" \
  --forward-mode=io
tpmd_wait_ready gb "$dir"
i=0
until [ "$(ovs_vsctl "$O" get Interface vhu1 status:status 2>/dev/null)" = connected ] \
      && [ "$(ovs_vsctl "$O" get Interface vhu0 status:status 2>/dev/null)" = connected ]; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "ports did not connect"; exit 1; }
  sleep 0.2
done
tpmd_cmd gb "$dir" start >/dev/null
tpmd_cmd ga "$dir" start >/dev/null
echo "== traffic for $seconds s"
sleep "$seconds"
tpmd_cmd ga "$dir" stop >/dev/null
sleep 6   # one statistics interval

for p in vhu0 vhu1; do
  echo "== Interface $p status"
  ovs_vsctl "$O" get Interface $p status
  echo "== Interface $p statistics (standard and ovs_*)"
  ovs_vsctl "$O" get Interface $p statistics | tr -d '{}' | tr ',' '\n' \
    | sed 's/^ //' | grep -E '^(rx|tx)_(packets|bytes|dropped|errors)=|^ovs_' \
    | paste -sd' ' | fold -s -w 100
done
echo "== guest A (sent into vhu0), guest B (received on vhu1, sent back)"
echo "A: $(tpmd_port_counts ga "$dir" 0)   B: $(tpmd_port_counts gb "$dir" 0)   (RX TX)"
echo "== ovs-appctl vhost/show"
ovs_appctl "$O" vhost/show
echo "== ovs-appctl dpif-netdev/pmd-rxq-show"
ovs_appctl "$O" dpif-netdev/pmd-rxq-show
echo "== done"
