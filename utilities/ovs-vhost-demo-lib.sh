# SPDX-License-Identifier: Apache-2.0
# ovs-vhost-demo-lib.sh -- what the demos (utilities/ovs-vhost-demo.sh,
# utilities/ovs-vhost-ovn-demo.sh) do before they start anything.
#
#   demo_build SRCDIR   installs what is missing (utilities/install-deps.sh),
#                       builds Open vSwitch 3.1 once from Debian's
#                       openvswitch-source (cached in /var/cache/ovs-vhost)
#                       and ovs-vhost against it in SRCDIR/_build/gcc,
#                       unless that build already has an ovs-vswitchd-vhost;
#                       sets OVS_BUILD and OVS_VSWITCHD for tests/ovs-lib.sh.

# shellcheck shell=sh disable=SC3043
demo_build () {
  local srcdir="$1" build="$1/_build/gcc"
  "$srcdir/utilities/install-deps.sh" || return 1
  OVS_BUILD=$("$srcdir/utilities/ovs-vhost-build-ovs.sh") || return 1
  if [ ! -x "$build/vswitchd/ovs-vswitchd-vhost" ]; then
    [ -x "$srcdir/configure" ] || (cd "$srcdir" && ./boot.sh) || return 1
    mkdir -p "$build" || return 1
    (cd "$build" && "$srcdir/configure" -q --with-ovs-source="$OVS_BUILD") \
      && make -s -C "$build" -j"$(nproc)" || return 1
  fi
  # shellcheck disable=SC2034  # for tests/ovs-lib.sh
  OVS_VSWITCHD=$build/vswitchd/ovs-vswitchd-vhost
}

# demo_traffic GUESTS DIR SECONDS NAME0 NAME1 [BURSTS]: `start tx_first
# BURSTS` (default 1: 32 packets from each port) in testpmd GUESTS in DIR,
# SECONDS of traffic, then its ports' rates as NAME0's and NAME1's, and
# `stop`.
demo_traffic () {
  tpmd_cmd "$1" "$2" "start tx_first ${6:-1}" >/dev/null || return 1
  echo "== traffic for $3 s"
  sleep "$3"
  echo "== the guests' rates ($4, $5):" \
    "$(tpmd_pps "$1" "$2" 0 1 | cut -d' ' -f1) $(tpmd_pps "$1" "$2" 1 1 | cut -d' ' -f1) pps"
  tpmd_cmd "$1" "$2" stop >/dev/null
}

# demo_came_round DEMO GUESTS DIR NAME0 NAME1: prints the RX and TX
# counters of ports 0 and 1 of testpmd GUESTS in DIR (tests/testpmd-lib.sh)
# as NAME0's and NAME1's; false, with a line "DEMO: FAILED: ...", unless
# both ports received packets.  A demo that moved nothing fails: CI runs
# the demos (tests/check-all.sh).
demo_came_round () {
  local demo="$1" c0 c1
  c0=$(tpmd_port_counts "$2" "$3" 0) c1=$(tpmd_port_counts "$2" "$3" 1)
  echo "== the guests' counters (RX TX): $4 $c0, $5 $c1"
  if [ "${c0%% *}" -gt 0 ] 2>/dev/null && [ "${c1%% *}" -gt 0 ] 2>/dev/null; then
    return 0
  fi
  echo "$demo: FAILED: no packets came round both ways"
  return 1
}
