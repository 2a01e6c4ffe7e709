#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# ovs-vhost-ovs-bench.sh -- this build's ovs-vswitchd against Debian's
# OVS-DPDK, side by side, with the same frontend, flows and PMD core.
#
#   testpmd virtio-user port 0 <-> vhu0 --+
#             | io                        | OVS, two flows: 1->2, 2->1,
#   testpmd virtio-user port 1 <-> vhu1 --+ one PMD thread on the 2nd CPU
#
# For each ring layout (split, packed) and each switch in turn:
#   ovs-dpdk   /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
#              (Debian's openvswitch-switch-dpdk) with dpdk-init=true and
#              dpdk-extra="--no-huge --legacy-mem -m 3072 --no-pci";
#   ovs-dpdk13 Debian 13's OVS-DPDK 3.5 (DPDK 24.11), the same way, run
#              with its own ovsdb-server from the chroot --chroot DIR
#              (utilities/ovs-vhost-chroot.sh create --extra
#              openvswitch-switch-dpdk DIR, made on first use; its run
#              directory, sockets included, under DIR/tmp).  If the chroot
#              cannot be made (no archive), ovs-dpdk13 is skipped, said so,
#              and the other switches still run;
#   ovs-vhost  vswitchd/ovs-vswitchd-vhost from this build;
#   ovs-vhost35  with --vswitchd35 PATH, ovs-vswitchd-vhost from a build
#              of this tree against OVS 3.5 (configure
#              --with-ovs-source=<3.5 tree>; its Makefile names the OVS
#              build, whose ovsdb-server and schema it runs with): the
#              same OVS as the ovs-dpdk13 anchor, so that the two differ
#              only in what serves the ports;
#   base       with --base-vswitchd PATH, another build's
#              ovs-vswitchd-vhost (an older commit's), to measure a change
#              side by side; name it in --switches.  The tables compare it
#              with the anchors as they do ovs-vhost, and print
#              ovs-vhost / base, paired.
# Both run with pmd-cpu-mask on the second CPU, two dpdkvhostuser ports on
# a netdev bridge and the flows in_port=1,actions=2 and in_port=2,actions=1,
# in a private run directory (tests/ovs-lib.sh).  The frontend is one
# dpdk-testpmd with two net_virtio_user ports (packed_vq=1 on packed rows)
# in io forwarding, its forwarding lcore on the first CPU, started with
# `start tx_first 8`.
#
# Measured, REPS times over DURATION seconds after a warm-up: the
# frontend's Mpps each way (Rx-pps of port 0 and port 1), and the PMD's
# "avg processing cycles per packet" from
# `ovs-appctl dpif-netdev/pmd-stats-show` after `pmd-stats-clear`.  The
# median of the runs is kept, with the range of cycles/packet over the
# runs; the ratio is ovs-vhost / ovs-dpdk (above 1 is better for Mpps,
# below 1 is better for cycles), of the medians and, "paired", the median
# of the ratios of the switches' runs with the same number, which ran
# back to back; each switch is compared with both anchors, OVS-DPDK 3.1
# (Debian 12, the machine's) and 3.5 (Debian 13) (the steadier figure on a VM whose speed drifts from one
# minute to the next).  The PMD's counters are also read every second of
# the run: a run's "best second" is its lowest cycles/packet over one
# second.  The host's interference only adds cycles, so the best second
# is the closest reading of what the switch itself costs, and its median
# over the runs is compared too.  Before each run the script counts the other
# runnable tasks on the machine: more than one means the figures measure
# the load, not the switches.
#
# --topology pvp (`make bench-pvp`, issue 22) measures PVP instead, the
# path every vswitch is judged by, with a veth standing in for the NIC:
#
#   testpmd net_af_xdp on exP == veth == exA: AF_XDP port --+
#             | io                                          | OVS, the
#   testpmd virtio-user port 1 <-> vhu1 --------------------+ same flows
#
# exA is in the switch's network namespace, exP in the frontend's.  Ours
# opens exA with OVS's own netdev-afxdp (type=afxdp, xdp-mode=native),
# OVS-DPDK with DPDK's AF_XDP PMD (type=dpdk,
# dpdk-devargs=net_af_xdp0,iface=exA): both are AF_XDP sockets in copy
# mode on the same veth, polled by the same PMD thread as the vhost port,
# so the kernel's share of the work is the same for both.  One testpmd
# plays both the traffic generator on the NIC's far end and the guest, on
# one lcore, io forwarding port 0 <-> port 1: every frame crosses the
# switch both ways (P->V into the guest, V->P out of it), and the PMD
# thread has the second CPU to itself.  A generator and a guest of their
# own would be three busy threads on a two-CPU machine, each measuring
# the others' preemption.  Mpps each way: port 1's Rx (P->V, what the
# guest got) and port 0's Rx (V->P, what came out by the "NIC").
#
# Output in OUT (default ./bench-ovs, or ./bench-pvp): raw.csv, table.md
# (also printed), chart.png (with gnuplot), logs/.
#
# Usage: ovs-vhost-ovs-bench.sh [--vswitchd PATH] [--ovs-build DIR]
#            [--dpdk-vswitchd PATH] [--out DIR] [--duration S] [--reps N]
#            [--rings "split packed"]
#            [--switches "ovs-dpdk ovs-dpdk13 ovs-vhost"] [--chroot DIR]
#            [--topology vv|pvp] [--base-vswitchd PATH] [--vswitchd35 PATH]
#            [--report]
# --report runs nothing: it prints the tables and the chart again from
# OUT/raw.csv, for the switches and rings given.
# `make bench-ovs` runs it on the build tree (BENCHFLAGS= passes options),
# `make bench-pvp` with --topology pvp.
# Root, Linux, Debian 12 packages dpdk and openvswitch-switch-dpdk.
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)

vswitchd=
base_vswitchd=
vswitchd35=
ovs_build=${OVS_BUILD:-}
dpdk_vswitchd=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
out=
topology=vv
report=no
duration=5
reps=3
rings="split packed"
switches="ovs-dpdk ovs-dpdk13 ovs-vhost"
chroot=/var/cache/ovs-vhost/chroot-trixie-bench
warmup=3

usage () {
    sed -n '2,/^set -u/p' "$0" | sed -n 's/^# \{0,1\}//p'
}

while [ $# -gt 0 ]; do
    case $1 in
    --vswitchd) vswitchd=$2; shift ;;
    --base-vswitchd) base_vswitchd=$2; shift ;;
    --vswitchd35) vswitchd35=$2; shift ;;
    --ovs-build) ovs_build=$2; shift ;;
    --dpdk-vswitchd) dpdk_vswitchd=$2; shift ;;
    --out) out=$2; shift ;;
    --duration) duration=$2; shift ;;
    --reps) reps=$2; shift ;;
    --rings) rings=$2; shift ;;
    --switches) switches=$2; shift ;;
    --chroot) chroot=$2; shift ;;
    --topology) topology=$2; shift ;;
    --report) report=yes ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ovs-vhost-ovs-bench: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

case $topology in
vv) out=${out:-bench-ovs} ;;
pvp) out=${out:-bench-pvp} ;;
*) echo "ovs-vhost-ovs-bench: --topology is vv or pvp, not $topology" >&2; exit 2 ;;
esac
[ -n "$vswitchd" ] || vswitchd=$PWD/vswitchd/ovs-vswitchd-vhost
# What the runs need; a report needs only OUT/raw.csv.
if [ "$report" = yes ]; then
    [ -s "$out/raw.csv" ] || {
        echo "ovs-vhost-ovs-bench: --report: no $out/raw.csv" >&2; exit 1; }
else
case " $switches " in
*" ovs-vhost35 "*)
    ovs_build35=$(sed -n 's/^OVSBUILDDIR = //p' "$(dirname "$vswitchd35")/../Makefile" 2>/dev/null)
    if [ ! -x "$vswitchd35" ] || [ ! -x "$ovs_build35/ovsdb/ovsdb-server" ]; then
        echo "ovs-vhost-ovs-bench: switch ovs-vhost35 needs --vswitchd35 PATH, in a build configured against OVS 3.5" >&2
        exit 2
    fi ;;
esac
case " $switches " in
*" base "*)
    [ -x "$base_vswitchd" ] || {
        echo "ovs-vhost-ovs-bench: switch base needs --base-vswitchd PATH" >&2
        exit 2; } ;;
esac
if [ ! -x "$vswitchd" ]; then
    echo "ovs-vhost-ovs-bench: no ovs-vswitchd-vhost at $vswitchd" \
         "(configure --with-ovs-source, make)" >&2
    exit 1
fi
if [ -z "$ovs_build" ] || [ ! -x "$ovs_build/utilities/ovs-vsctl" ]; then
    echo "ovs-vhost-ovs-bench: --ovs-build must name the OVS build tree" >&2
    exit 1
fi
fi
# Debian 12's OVS-DPDK, only for a run that has it.
case " $switches " in
*" ovs-dpdk "*) [ "$report" = yes ] && need_dpdk=no || need_dpdk=yes ;;
*) need_dpdk=no ;;
esac
if [ "$need_dpdk" = yes ] && [ ! -x "$dpdk_vswitchd" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "ovs-vhost-ovs-bench: installing openvswitch-switch-dpdk" >&2
        # The package's init script must not start a system-wide OVS.
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends openvswitch-switch-dpdk >/dev/null
        rm -f /usr/sbin/policy-rc.d
    fi
    [ -x "$dpdk_vswitchd" ] || {
        echo "ovs-vhost-ovs-bench: $dpdk_vswitchd missing" >&2; exit 1; }
fi

OVS_BUILD=$ovs_build
. "$srcdir/tests/ovs-lib.sh"
. "$srcdir/tests/testpmd-lib.sh"

mkdir -p "$out/logs" || exit 1
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/ovs-vhost-ovs-bench.XXXXXX) || exit 1
O31=$work/ovs
O=$O31
# The PVP veth's ends: exA the switch's, exP the frontend's.
exA=pvpa$$ exP=pvpp$$
O13=
cleanup () {
    tpmd_stop_all "$work" >/dev/null 2>&1
    ovs_stop "$O31" >/dev/null 2>&1
    if [ -n "$O13" ] && [ "$report" != yes ]; then
        ovs_stop "$O13" >/dev/null 2>&1
        anchor13_ovs_wait "$O13"
        rm -rf "$ANCHOR13_WORK"
    fi
    ip link del "$exP" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# The Debian 13 anchor: OVS-DPDK 3.5 in its chroot (a report: its rows
# in raw.csv, and its versions if the chroot is still there).
case " $switches " in
*" ovs-dpdk13 "*)
    if [ "$report" = yes ]; then
        if grep -q '^ovs-dpdk13,' "$out/raw.csv"; then
            O13=report
            ANCHOR13_OVS=$(chroot "$chroot" dpkg-query -W -f='${Version}' openvswitch-switch-dpdk 2>/dev/null || echo "?")
            ANCHOR13_DPDK=$(chroot "$chroot" dpkg-query -W -f='${Version}' dpdk 2>/dev/null || echo "?")
        fi
    else
    . "$srcdir/utilities/ovs-vhost-anchor13.sh"
    if anchor13_setup "$chroot" ovs-vhost-ovs-bench "$work"; then
        O13=$ANCHOR13_WORK/ovs
    else
        echo "ovs-vhost-ovs-bench: SKIPPED the Debian 13 anchor (OVS-DPDK 3.5): $ANCHOR13_WHY" >&2
        switches=$(echo " $switches " | sed 's/ ovs-dpdk13 / /; s/^ //; s/ $//')
    fi
    fi ;;
esac

cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
# nth_cpu N: the Nth CPU this script may run on.
nth_cpu () {
    echo "$cpus" | tr ',' '\n' | awk -F- -v want="$1" '
        { for (c = $1; c <= ($2 == "" ? $1 : $2); c++) if (++n == want) { print c; exit } }'
}
fe_cpu=$(nth_cpu 1)
pmd_cpu=$(nth_cpu 2)
[ -n "$pmd_cpu" ] || { echo "ovs-vhost-ovs-bench: needs two CPUs" >&2; exit 1; }
pmd_mask=$(printf '0x%x' $((1 << pmd_cpu)))

# pmd_seconds O N: N readings, a second apart, of the PMD thread's
# packets and processing cycles since the last pmd-stats-clear, one
# "packets cycles" line each.  On the frontend's CPU, not the PMD's: a
# PMD preempted mid-iteration counts the lost time as processing.  Run in
# a subshell of its own (&): it pins that subshell, whose pid sh's $PPID
# gives.
pmd_seconds () {
    taskset -pc "$fe_cpu" "$(sh -c 'echo $PPID')" >/dev/null
    for i in $(seq 1 "$2"); do
        sleep 1
        ovs_appctl "$1" dpif-netdev/pmd-stats-show |
            awk '/packets received:/ && p == "" { p = $3 }
                 /processing cycles:/ && c == "" { c = $3 }
                 END { print p + 0, c + 0 }'
    done
}

# best_second FILE: the lowest cycles/packet over one second in the
# cumulative readings of pmd_seconds, or 0 if no second had packets.
best_second () {
    awk '{ dp = $1 - p; dc = $2 - c; p = $1; c = $2
           if (dp > 0 && (best == "" || dc / dp < best)) best = dc / dp }
         END { printf "%.2f", best + 0 }' "$1"
}

# ports_up: every port in $ports has carrier in OVS.
ports_up () {
    local p
    for p in $ports; do
        [ "$(ovs_vsctl "$O" get Interface "$p" link_state)" = up ] || return 1
    done
}

# pvp_ports SWITCH LOG: for --topology pvp, the veth exA (in the switch's
# namespace, gone with it) and exP (in ours), and br0 with exA as port 1
# (the switch's AF_XDP port) and vhu1 as port 2.  Neither end has IPv6,
# so no frame but the frontend's crosses.
pvp_ports () {
    local sw=$1 log=$2 ns xa
    ns=$(ovs_netns "$O")
    [ -n "$ns" ] || { echo "ovs-vhost-ovs-bench: pvp needs root" >&2; return 1; }
    ip link del "$exP" 2>/dev/null
    ip link add "$exP" type veth peer name "$exA" netns "$ns" || return 1
    if [ -d /proc/sys/net/ipv6 ]; then
        sysctl -qw "net.ipv6.conf.$exP.disable_ipv6=1" &&
        ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$exA.disable_ipv6=1" || return 1
    fi
    ip link set "$exP" up && ip -n "$ns" link set "$exA" up || return 1
    case $sw in
    ovs-vhost|ovs-vhost35|base) xa="type=afxdp options:xdp-mode=native options:n_rxq=1" ;;
    *) xa="type=dpdk options:dpdk-devargs=net_af_xdp0,iface=$exA,start_queue=0,queue_count=1" ;;
    esac
    # shellcheck disable=SC2086
    ovs_vsctl_wait "$O" add-br br0 -- set bridge br0 datapath_type=netdev \
        -- add-port br0 "$exA" -- set Interface "$exA" $xa ofport_request=1 \
        -- add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuser \
           ofport_request=2 >>"$log.err" 2>&1 || return 1
    ovs_vsctl "$O" get Interface "$exA" error | grep -qx '\[\]' || {
        echo "ovs-vhost-ovs-bench: $sw: $exA: $(ovs_vsctl "$O" get Interface "$exA" error)" >&2
        return 1; }
}

# run_switch SWITCH RING REP: one measurement; appends a line to raw.csv.
run_switch () {
    local sw=$1 ring=$2 rep=$3 vdevopt= log=$out/logs/$1-$2-$3
    [ "$ring" = packed ] && vdevopt=,packed_vq=1

    busy=$(tpmd_others_busy)
    # The OVS whose ovsdb-server, schema and utilities run the switch.
    OVS_BUILD=$ovs_build
    [ "$sw" = ovs-vhost35 ] && OVS_BUILD=$ovs_build35
    O=$O31
    [ "$sw" = ovs-dpdk13 ] && O=$O13
    rm -rf "$O"
    if [ "$sw" = ovs-dpdk13 ]; then
        mkdir -p "$O"
        anchor13_ovs_start "$O" "$pmd_mask" \
            "--no-huge --legacy-mem -m 3072 --no-pci --file-prefix=ovsbench13$$" \
            "$(ovs_netns "$O")" 2>>"$log.err" || return 1
    else
    ovs_start_db "$O" || return 1
    ovs_vsctl "$O" set Open_vSwitch . other_config:pmd-cpu-mask="$pmd_mask"
    fi
    if [ "$sw" = ovs-dpdk13 ]; then
        :
    elif [ "$sw" = ovs-dpdk ]; then
        ovs_vsctl "$O" set Open_vSwitch . other_config:dpdk-init=true \
            other_config:dpdk-extra="--no-huge --legacy-mem -m 3072 --no-pci --file-prefix=ovsbench$$"
        # Named ovs-vswitchd, as the alternatives symlink names it, so that
        # its pidfile and control socket are the stock ones.
        mkdir -p "$work/ovs-dpdk"
        ln -sf "$dpdk_vswitchd" "$work/ovs-dpdk/ovs-vswitchd"
        OVS_VSWITCHD=$work/ovs-dpdk/ovs-vswitchd
    else
        OVS_VSWITCHD=$vswitchd
        [ "$sw" = base ] && OVS_VSWITCHD=$base_vswitchd
        [ "$sw" = ovs-vhost35 ] && OVS_VSWITCHD=$vswitchd35
    fi
    if [ "$sw" != ovs-dpdk13 ]; then
        ovs_start_vswitchd "$O" 2>>"$log.err" || return 1
    fi
    if [ "$topology" = pvp ]; then
        pvp_ports "$sw" "$log" || return 1
        fe_vdevs="net_af_xdp0,iface=$exP,start_queue=0,queue_count=1 net_virtio_user1,path=$O/vhu1$vdevopt"
        ports="$exA vhu1" n_virtio=1
    else
        ovs_vsctl_wait "$O" add-br br0 -- set bridge br0 datapath_type=netdev \
            -- add-port br0 vhu0 -- set Interface vhu0 type=dpdkvhostuser \
               ofport_request=1 \
            -- add-port br0 vhu1 -- set Interface vhu1 type=dpdkvhostuser \
               ofport_request=2 >>"$log.err" 2>&1 || return 1
        fe_vdevs="net_virtio_user0,path=$O/vhu0$vdevopt net_virtio_user1,path=$O/vhu1$vdevopt"
        ports="vhu0 vhu1" n_virtio=2
    fi
    ofctl="$OVS_BUILD/utilities/ovs-ofctl"
    "$ofctl" del-flows "unix:$O/br0.mgmt" &&
    "$ofctl" add-flow "unix:$O/br0.mgmt" in_port=1,actions=output:2 &&
    "$ofctl" add-flow "unix:$O/br0.mgmt" in_port=2,actions=output:1 || return 1

    TPMD_FWD_CPU=$fe_cpu TPMD_MEM=1024 \
    TPMD_EAL_ARGS="--log-level=pmd.net.virtio.*:info" tpmd_start fe "$work" \
        "$fe_vdevs" --forward-mode=io --txd=1024 --rxd=1024 || return 1
    tpmd_wait_ready fe "$work" || { cp "$work/fe.log" "$log.fe"; return 1; }
    # The ring the frontend really runs, each virtio port, Rx and Tx.
    n_packed=$(grep -c 'virtio: using packed ring' "$work/fe.log")
    if [ "$n_packed" != "$([ "$ring" = packed ] && echo $((2 * n_virtio)) || echo 0)" ]; then
        echo "ovs-vhost-ovs-bench: the frontend does not run a $ring ring" >&2
        cp "$work/fe.log" "$log.fe"; return 1
    fi
    # Both ports up in OVS (carrier: device ready and queues enabled)
    # before the first packet, or the loop starts with one port missing
    # and runs one way only.  OVS-DPDK's main loop can take seconds here,
    # faulting in its 3 GB of no-hugepage memory.
    i=0
    until ports_up; do
        i=$((i + 1))
        [ $i -lt 300 ] || { echo "ovs-vhost-ovs-bench: $sw: ports not up" >&2; return 1; }
        sleep 0.1
    done
    sleep 1
    tpmd_cmd fe "$work" "start tx_first 8" >/dev/null
    sleep "$warmup"
    ovs_appctl "$O" dpif-netdev/pmd-stats-clear >/dev/null
    pmd_seconds "$O" $((duration + 1)) > "$log.seconds" &
    sampler=$!
    set -- $(tpmd_pps fe "$work" 0 "$duration")
    rx0=$1
    set -- $(tpmd_pps fe "$work" 1 1)
    rx1=$1
    wait $sampler
    best=$(best_second "$log.seconds")
    cyc=$(ovs_appctl "$O" dpif-netdev/pmd-stats-show | tee "$log.pmd" |
          sed -n 's/.*avg processing cycles per packet: \([0-9.]*\).*/\1/p' |
          head -1)
    tpmd_cmd fe "$work" "stop" >/dev/null
    cp "$work/fe.log" "$log.fe"
    cp "$O/ovs-vswitchd.log" "$log.vswitchd"
    tpmd_stop fe "$work" >/dev/null 2>&1
    ovs_stop "$O" >/dev/null 2>&1
    [ "$sw" = ovs-dpdk13 ] && cp "$O/start.log" "$log.start" && anchor13_ovs_wait "$O"
    echo "$sw,$ring,$rep,$(awk -v a="$rx0" -v b="$rx1" 'BEGIN { printf "%.3f,%.3f", a / 1e6, b / 1e6 }'),${cyc:-0},$busy,$best" \
        >> "$out/raw.csv"
    echo "  $sw $ring run $rep: $(tail -1 "$out/raw.csv" | cut -d, -f4,5) Mpps, ${cyc:-?} cycles/packet (best second $best), $busy other runnable tasks" >&2
}

# median_of FORMAT: the median of the numbers on stdin, one a line,
# printed with printf FORMAT ("?" if there are none).
median_of () {
    sort -g | awk -v f="$1" '{ v[NR] = $1 } END {
        if (!NR) { print "?"; exit }
        printf f, (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# median SWITCH RING COLUMN (4, 5: Mpps each way; 6: cycles/packet;
# 8: best second)
median () {
    awk -F, -v s="$1" -v r="$2" -v c="$3" '$1 == s && $2 == r { print $c }' \
        "$out/raw.csv" | median_of %s
}

# paired SWITCH RING WHAT [ANCHOR] (mpps: both ways summed; cycles):
# median over the runs of SWITCH's figure / ANCHOR's (default ovs-dpdk)
# in the same run number, which
# ran back to back.  On a VM the loop's speed drifts within a minute with
# where the host puts the two vCPUs (as much as 2x here); a ratio taken
# within one pair of runs keeps most of that out of the comparison.
paired () {
    awk -F, -v s="$1" -v r="$2" -v w="$3" -v a="${4:-ovs-dpdk}" '
        NR > 1 && $2 == r && ($1 == s || $1 == a) {
            v[$1, $3] = (w == "mpps") ? $4 + $5 : $6; runs[$3] = 1 }
        END { for (k in runs)
                  if (v[a, k] + 0 > 0 && v[s, k] + 0 > 0)
                      print v[s, k] / v[a, k] }' "$out/raw.csv" |
        median_of %.2f
}

# ratio_of A B: A / B to two places, "?" unless B is a positive number.
ratio_of () {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a / b; else printf "?" }' 2>/dev/null
}

# mpps_ratio M0 M1 D0 D1: both directions' Mpps summed, (M0 + M1) /
# (D0 + D1) to two places, "?" unless the anchor's sum is positive.
mpps_ratio () {
    awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" \
        'BEGIN { if (c + d > 0) printf "%.2f", (a + b) / (c + d); else printf "?" }' 2>/dev/null
}

# spread SWITCH RING: the lowest and highest cycles/packet of its runs
# (a run whose PMD statistics could not be read has 0 and is left out).
spread () {
    awk -F, -v s="$1" -v r="$2" 'NR > 1 && $1 == s && $2 == r && $6 > 0 {
            if (n++ == 0 || $6 < lo) lo = $6; if ($6 > hi) hi = $6 }
        END { if (n) printf "%.0f-%.0f", lo, hi; else printf "?" }' \
        "$out/raw.csv"
}

[ "$report" = yes ] ||
echo "switch,ring,rep,mpps_0to1,mpps_1to0,cycles_per_packet,others_busy,best_second_cycles" > "$out/raw.csv"
# The table's names for the frontend's port 0 and port 1 Rx.
if [ "$topology" = pvp ]; then
    h4="Mpps V->P" h5="Mpps P->V"
else
    h4="Mpps 0->1" h5="Mpps 1->0"
fi
status=0
for ring in $rings; do
    for rep in $([ "$report" = yes ] || seq 1 "$reps"); do
        # Alternate the order, so that drift on a shared machine does not
        # favour one switch.
        order=$switches
        [ $((rep % 2)) = 0 ] && order=$(echo "$switches" | awk '{ for (i = NF; i; i--) printf "%s ", $i }')
        for sw in $order; do
            run_switch "$sw" "$ring" "$rep" || {
                echo "ovs-vhost-ovs-bench: $sw $ring run $rep failed (logs in $out/logs)" >&2
                status=1
                tpmd_stop_all "$work" >/dev/null 2>&1
                ovs_stop "$O" >/dev/null 2>&1
                if [ "$sw" = ovs-dpdk13 ]; then
                    log=$out/logs/$sw-$ring-$rep
                    cp "$O/start.log" "$log.start" 2>/dev/null
                    cp "$O/ovs-vswitchd.log" "$log.vswitchd" 2>/dev/null
                    anchor13_ovs_wait "$O"
                fi
            }
        done
    done
done

{
    echo "Ratios against OVS-DPDK 3.1 ($(dpkg-query -W -f='${Version}' openvswitch-switch-dpdk 2>/dev/null), Debian 12, the machine's):"
    echo
    if [ "$topology" = pvp ]; then
        echo "PVP: testpmd on net_af_xdp at a veth's far end and on virtio-user, one io loop; the switch's AF_XDP port on the veth's other end and a dpdkvhostuser port, one PMD thread."
        echo
    fi
    echo "| ring | switch | $h4 | $h5 | PMD cycles/packet | cycles/packet, all runs | best second | Mpps ratio | cycles ratio | paired Mpps ratio | paired cycles ratio | best second ratio |"
    echo "|------|--------|-----------|-----------|-------------------|-------------------------|-------------|------------|--------------|-------------------|---------------------|-------------------|"
    for ring in $rings; do
        d0=$(median ovs-dpdk "$ring" 4); d1=$(median ovs-dpdk "$ring" 5)
        dc=$(median ovs-dpdk "$ring" 6); db=$(median ovs-dpdk "$ring" 8)
        for sw in $switches; do
            m0=$(median "$sw" "$ring" 4); m1=$(median "$sw" "$ring" 5)
            c=$(median "$sw" "$ring" 6); b=$(median "$sw" "$ring" 8)
            ratio=$(mpps_ratio "$m0" "$m1" "$d0" "$d1")
            cratio=$(ratio_of "$c" "$dc"); bratio=$(ratio_of "$b" "$db")
            echo "| $ring | $sw | $m0 | $m1 | $c | $(spread "$sw" "$ring") | $b | $ratio | $cratio | $(paired "$sw" "$ring" mpps) | $(paired "$sw" "$ring" cycles) | $bratio |"
        done
    done
    if [ -n "$O13" ]; then
        echo
        echo "Ratios against OVS-DPDK 3.5 ($ANCHOR13_OVS, Debian 13, DPDK $ANCHOR13_DPDK, in the chroot $chroot); target: cycles ovs-vhost/3.5 <= 0.8:"
        echo
        echo "| ring | switch | PMD cycles/packet | best second | Mpps ratio | cycles ratio | paired Mpps ratio | paired cycles ratio | best second ratio | <= 0.8x |"
        echo "|------|--------|-------------------|-------------|------------|--------------|-------------------|---------------------|-------------------|---------|"
        for ring in $rings; do
            d0=$(median ovs-dpdk13 "$ring" 4); d1=$(median ovs-dpdk13 "$ring" 5)
            dc=$(median ovs-dpdk13 "$ring" 6); db=$(median ovs-dpdk13 "$ring" 8)
            for sw in $switches; do
                [ "$sw" = ovs-dpdk13 ] && continue
                m0=$(median "$sw" "$ring" 4); m1=$(median "$sw" "$ring" 5)
                c=$(median "$sw" "$ring" 6); b=$(median "$sw" "$ring" 8)
                ratio=$(mpps_ratio "$m0" "$m1" "$d0" "$d1")
                cratio=$(ratio_of "$c" "$dc"); bratio=$(ratio_of "$b" "$db")
                pcyc=$(paired "$sw" "$ring" cycles ovs-dpdk13)
                met=$(awk -v p="$pcyc" 'BEGIN { if (p == "?" || p == "") print "-"; else if (p + 0 <= 0.8) print "yes"; else print "no" }')
                case $sw in ovs-vhost|ovs-vhost35) ;; *) met=- ;; esac
                echo "| $ring | $sw | $c | $b | $ratio | $cratio | $(paired "$sw" "$ring" mpps ovs-dpdk13) | $pcyc | $bratio | $met |"
            done
        done
    else
        echo
        echo "The Debian 13 anchor (OVS-DPDK 3.5) did not run${ANCHOR13_WHY:+: $ANCHOR13_WHY}."
    fi
    case " $switches " in
    *" base "*)
        echo
        echo "ovs-vhost against base ($base_vswitchd), paired:"
        echo
        echo "| ring | paired Mpps ratio | paired cycles ratio | best second ratio |"
        echo "|------|-------------------|---------------------|-------------------|"
        for ring in $rings; do
            echo "| $ring | $(paired ovs-vhost "$ring" mpps base) | $(paired ovs-vhost "$ring" cycles base) | $(ratio_of "$(median ovs-vhost "$ring" 8)" "$(median base "$ring" 8)") |"
        done ;;
    esac
    echo
    runs="$reps runs of ${duration} s"
    [ "$report" = yes ] && runs="$(awk -F, 'NR > 1 && $3 > n { n = $3 } END { print n + 0 }' "$out/raw.csv") runs"
    echo "Median of $runs, the switches alternating" \
         "(paired: median of the ratios of runs made back to back;" \
         "best second: each run's lowest cycles/packet over one second)."
    echo "Other runnable tasks before each run (0-1: idle machine):" \
         "$(awk -F, 'NR > 1 { printf "%s%s", sep, $7; sep = " " }' "$out/raw.csv")"
} > "$out/table.md"
cat "$out/table.md"

# The chart: each switch's median Mpps both ways and PMD cycles/packet,
# per ring.
if command -v gnuplot >/dev/null 2>&1; then
    for ring in $rings; do
        for sw in $switches; do
            echo "\"$sw $ring\" $(median "$sw" "$ring" 4) $(median "$sw" "$ring" 5) $(median "$sw" "$ring" 6)"
        done
    done | sed 's/?/0/g' > "$out/chart.dat"
    if [ "$topology" = pvp ]; then
        what="PVP: veth (AF_XDP) -> OVS -> testpmd virtio-user -> OVS -> veth"
    else
        what="testpmd virtio-user <-> OVS <-> testpmd virtio-user"
    fi
    gnuplot > "$out/logs/gnuplot.log" 2>&1 <<EOF
set terminal pngcairo size 1200,450 noenhanced font ",10"
set output "$out/chart.png"
set multiplot layout 1,2 title "ovs-vswitchd-vhost vs OVS-DPDK, one PMD thread ($what)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top right
set xtics rotate by -30
set yrange [0:*]
set title "Throughput (Mpps, higher is better)"
plot "$out/chart.dat" using 2:xtic(1) title "$h4", "" using 3 title "$h5"
set title "PMD cycles per packet (lower is better)"
plot "$out/chart.dat" using 4:xtic(1) notitle
unset multiplot
EOF
    [ -s "$out/chart.png" ] && echo "ovs-vhost-ovs-bench: chart: $out/chart.png" >&2
fi
exit $status
