#! /bin/sh
# The main job, on a fresh Debian 12 machine as root: installs what is
# missing, builds ovs-vhost, starts ovs-vhost-fwd serving a vhost-user port
# with two queue pairs, connects DPDK's testpmd to it as the frontend
# (virtio-user, no hugepages), and prints the device state as it changes:
# connection, negotiated features, queues, guest memory.  testpmd then
# sends packets that ovs-vhost-fwd loops back (io mode), and both sides
# print their counters.  Then testpmd restarts, to show the port coming
# back, and everything is cleaned up.
#
# DEMO_SECONDS (default 5) sets how long each phase runs.
set -e
srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$srcdir"
seconds=${DEMO_SECONDS:-5}

"$srcdir/utilities/install-deps.sh"
build=$srcdir/_build/gcc
if [ ! -x "$build/utilities/ovs-vhost-fwd" ]; then
  [ -x configure ] || ./boot.sh
  mkdir -p "$build"
  (cd "$build" && "$srcdir/configure" -q)
  make -s -C "$build" -j"$(nproc)"
fi
fwd=$build/utilities/ovs-vhost-fwd

dir=$(mktemp -d "${TMPDIR:-/tmp}/ovs-vhost-demo.XXXXXX")
fwd_pid=
# shellcheck source=../tests/testpmd-lib.sh
. "$srcdir/tests/testpmd-lib.sh"
cleanup () {
  tpmd_stop_all "$dir" >/dev/null 2>&1 || true
  if [ -n "$fwd_pid" ]; then kill "$fwd_pid" 2>/dev/null || true; wait "$fwd_pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "== ovs-vhost-fwd: serving $dir/vhu0.sock (server mode, 2 queue pairs)"
# Its forwarding thread on the second CPU; testpmd forwards on the first.
cpu=; [ "$(nproc)" -ge 2 ] && cpu=--cpu=1
"$fwd" --server "$dir/vhu0.sock" --queues 2 --mode=io $cpu >"$dir/fwd.log" 2>&1 &
fwd_pid=$!
tail -f "$dir/fwd.log" --pid=$$ 2>/dev/null | grep -v '|DBG|' &

for round in 1 2; do
  echo "== testpmd (virtio-user frontend, queues=2), round $round"
  tpmd_start fe "$dir" "net_virtio_user0,path=$dir/vhu0.sock,queues=2" \
    --rxq=2 --txq=2 --forward-mode=io
  tpmd_wait_ready fe "$dir"
  echo "== testpmd: start tx_first (packets loop through ovs-vhost-fwd)"
  tpmd_cmd fe "$dir" "start tx_first" >/dev/null
  sleep "$seconds"
  kill -USR1 "$fwd_pid"
  sleep 1
  echo "== testpmd's counters"
  tpmd_cmd fe "$dir" "show port stats 0" | grep -E 'RX-packets|TX-packets'
  echo "== stopping testpmd"
  tpmd_stop fe "$dir" || true
  sleep 1
done
echo "== done"
