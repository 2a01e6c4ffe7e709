#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# ovs-vhost-bench.sh -- ovs-vhost-fwd against DPDK's vhost PMD, side by side.
#
# The same frontend, DPDK testpmd with two virtio-user ports in io
# forwarding, is run in a loop (start tx_first) against the backends in
# turn, each forwarding port 0 <-> port 1 on its own pinned CPU:
#
#   dpdk    dpdk-testpmd --vdev net_vhost0,... --vdev net_vhost1,... in io
#           mode, with --record-core-cycles (the machine's DPDK, Debian
#           12's 22.11);
#   dpdk13  the same with Debian 13's dpdk-testpmd (DPDK 24.11), run in
#           the chroot --chroot DIR (utilities/ovs-vhost-chroot.sh create
#           --extra openvswitch-switch-dpdk DIR, made on first use); its
#           sockets live under DIR/tmp, where both sides see them.  If the
#           chroot cannot be made (no archive), dpdk13 is skipped, said
#           so, and the other backends still run;
#   ovs     ovs-vhost-fwd --mode=io;
#   base    the same with another build's ovs-vhost-fwd, --base-fwd PATH
#           (an older commit's, say): what a change costs the rows it
#           should not touch, side by side in one run (add "base" to
#           --backends; its table compares ours with it, paired).
#
# For each row (ring layout x frame size x mergeable RX buffers on/off)
# and backend it measures, REPS times over DURATION seconds, the packets the backend
# delivered to the frontend (Mpps, summed over both ports, counted by the
# frontend) and the backend's cycles per packet: testpmd's "CPU
# cycles/packet" (show fwd stats all) for DPDK, ovs-vhost-fwd's own count
# for ours; both count only polls that moved packets, per packet received.
# The median of the REPS runs is kept.
#
# The runs of the two backends alternate (dpdk ovs, ovs dpdk, dpdk ovs,
# ...), each with a fresh frontend and backend: on a virtual machine the
# host moves the two CPUs between cores, and the time a cache line takes
# from one CPU to the other changes by 4-5 times from one minute to the
# next; alternating spreads that over both backends instead of giving
# all of one backend's runs to one placement.
#
# Ring layouts: "split", and "packed" (virtio-user packed_vq=1; both
# backends offer VIRTIO_F_RING_PACKED by default, so the frontend decides).  The frontend's log must name the ring it runs, or
# the row fails.  Packed rows also show ours packed / ours split.
#
# Output, in OUT (default ./bench): raw.csv (every run), summary.csv,
# table.md (the table, also printed) and bench.png (gnuplot bar chart; the
# script installs gnuplot-nox with apt-get if it is missing), logs/.
#
# Usage: ovs-vhost-bench.sh [--fwd PATH] [--out DIR] [--duration S]
#            [--reps N] [--sizes "64 1518"] [--mrg "0 1"] [--queues N]
#            [--tx-first N] [--backends "dpdk dpdk13 ovs"]
#            [--rings "split packed"] [--chroot DIR] [--base-fwd PATH]
# `make bench` runs it on the build tree (BENCHFLAGS= passes options).
#
# Runs as root on Linux with dpdk-testpmd (Debian package dpdk) and no
# hugepages; needs two CPUs to mean anything (the frontend's forwarding
# lcore on the first allowed CPU, the backend's on the second).
set -u

srcdir=$(cd "$(dirname "$0")/.." && pwd)
. "$srcdir/tests/testpmd-lib.sh"

fwd=
base_fwd=
out=bench
duration=4
# Even, so that each backend has as many runs right after the other
# backend's as right after its own: on this VM the first run after a
# switch of backend is often 2-3x slower (seen in split 64 B: ours 4.5
# Mpps after a DPDK run, 12.5-13 after one of ours), and an odd count
# gives that penalty to one side one time more.
reps=6
sizes="64 1518"
mrgs="0 1"
queues=1
tx_first=8
backends="dpdk dpdk13 ovs"
rings="split packed"
chroot=/var/cache/ovs-vhost/chroot-trixie-bench
warmup=1

usage () {
    sed -n '2,/^set -u/p' "$0" | sed -n 's/^# \{0,1\}//p'
}

while [ $# -gt 0 ]; do
    case $1 in
    --fwd) fwd=$2; shift ;;
    --out) out=$2; shift ;;
    --duration) duration=$2; shift ;;
    --reps) reps=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --mrg) mrgs=$2; shift ;;
    --queues) queues=$2; shift ;;
    --tx-first) tx_first=$2; shift ;;
    --backends) backends=$2; shift ;;
    --rings) rings=$2; shift ;;
    --chroot) chroot=$2; shift ;;
    --base-fwd) base_fwd=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ovs-vhost-bench: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

if [ -z "$fwd" ]; then
    for f in "$PWD/utilities/ovs-vhost-fwd" "$srcdir/utilities/ovs-vhost-fwd"; do
        [ -x "$f" ] && { fwd=$f; break; }
    done
fi
case $fwd in /*) ;; ?*) fwd=$PWD/$fwd ;; esac
if [ -z "$fwd" ] || [ ! -x "$fwd" ]; then
    echo "ovs-vhost-bench: no ovs-vhost-fwd binary (build it, or --fwd PATH)" >&2
    exit 2
fi
VFWD_BIN=$fwd
case " $backends " in
*" base "*)
    case $base_fwd in /*) ;; ?*) base_fwd=$PWD/$base_fwd ;; esac
    if [ -z "$base_fwd" ] || [ ! -x "$base_fwd" ]; then
        echo "ovs-vhost-bench: backend base needs --base-fwd PATH, an ovs-vhost-fwd" >&2
        exit 2
    fi ;;
esac
tpmd_available || { echo "ovs-vhost-bench: dpdk-testpmd not found" >&2; exit 2; }

mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/ovs-vhost-bench.XXXXXX) || exit 2
TPMD_MEM=${TPMD_MEM:-1024}
export TPMD_MEM
fe_cpu=$(tpmd_cpu 0)
be_cpu=$(tpmd_cpu 1)

work13=
cleanup () {
    for d in "$work"/*/ ${work13:+"$work13"/*/}; do
        [ -d "$d" ] || continue
        vfwd_stop_all "${d%/}" >/dev/null 2>&1
        tpmd_stop_all "${d%/}" >/dev/null 2>&1
    done
    rm -rf "$work" ${work13:+"$work13"}
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

log () { echo "ovs-vhost-bench: $*" >&2; }

# The Debian 13 anchor: its chroot, its work directory inside it, and
# $work/testpmd13, the dpdk-testpmd that tpmd_start runs for it.
case " $backends " in
*" dpdk13 "*)
    . "$srcdir/utilities/ovs-vhost-anchor13.sh"
    if anchor13_setup "$chroot" ovs-vhost-bench "$work"; then
        work13=$ANCHOR13_WORK
        dpdk13_version=$ANCHOR13_DPDK
    else
        log "SKIPPED the Debian 13 anchor (DPDK 24.11): $ANCHOR13_WHY"
        backends=$(echo " $backends " | sed 's/ dpdk13 / /; s/^ //; s/ $//')
    fi ;;
esac

now () { date +%s.%N; }

# fe_rx D: RX-packets of the frontend, summed over its ports, from one
# "show port stats all".
fe_rx () {
    tpmd_cmd fe "$1" "show port stats all" |
        awk '$1 == "RX-packets:" { s += $2 } END { print s + 0 }'
}

# fwd_cycles_rx D: "CYCLES RX" of ovs-vhost-fwd now, summed over ports.
fwd_cycles_rx () {
    vfwd_dump be "$1" >/dev/null || return 1
    grep '^stats p[0-9]* ' "$1/be.log" | tail -2 | tr ' ' '\n' |
        awk -F= '$1 == "cycles" { c += $2 } $1 == "rx" { r += $2 }
                 END { print c + 0, r + 0 }'
}

# run_backend BACKEND RING SIZE MRG REP: run REP of one row for one
# backend; appends a "BACKEND,RING,SIZE,MRG,REP,MPPS,CPP,BUSY" line to
# raw.csv.
run_backend () {
    local be=$1 ring=$2 size=$3 mrg=$4 rep=$5 D t0 t1 rx0 rx1 cpp mpps c0 c1 line busy
    local vdev_ring= n_packed iD
    D=$work/$be-$ring-$size-$mrg-$rep
    [ "$be" = dpdk13 ] && D=$work13/$be-$ring-$size-$mrg-$rep
    # The backend's own name for D: inside the chroot, D less its root.
    iD=$D
    [ "$be" = dpdk13 ] && iD=${D#"$chroot"}
    if [ "$ring" = packed ]; then
        vdev_ring=,packed_vq=1
    fi
    mkdir -p "$D"
    busy=$(tpmd_others_busy)
    [ "$busy" -gt 1 ] &&
        log "  warning: $busy other task(s) runnable before the run: figures may be off"
    case $be in
    dpdk|dpdk13)
        TPMD_BIN=$(anchor_bin "$be") TPMD_FWD_CPU=1 tpmd_start be "$D" \
            "net_vhost0,iface=$iD/s0,queues=$queues net_vhost1,iface=$iD/s1,queues=$queues" \
            --rxq="$queues" --txq="$queues" --forward-mode=io \
            --record-core-cycles || return 1
        tpmd_wait_ready be "$D" 60 || return 1
        tpmd_cmd be "$D" start >/dev/null || return 1
        ;;
    ovs|base)
        VFWD_BIN=$fwd
        [ "$be" = base ] && VFWD_BIN=$base_fwd
        # shellcheck disable=SC2086
        vfwd_start be "$D" --server "$D/s0" --server "$D/s1" \
            --queues "$queues" --mode=io --cpu="$be_cpu" || return 1
        vfwd_wait_log be "$D" '^p1: listening' 10 || return 1
        ;;
    esac

    TPMD_FWD_CPU=0 TPMD_EAL_ARGS="--log-level=pmd.net.virtio.*:info" \
        tpmd_start fe "$D" \
        "net_virtio_user0,path=$D/s0,queues=$queues,mrg_rxbuf=$mrg$vdev_ring net_virtio_user1,path=$D/s1,queues=$queues,mrg_rxbuf=$mrg$vdev_ring" \
        --rxq="$queues" --txq="$queues" --forward-mode=io \
        --txpkts="$size" || return 1
    tpmd_wait_ready fe "$D" 60 || return 1
    # The ring the frontend really runs: both ports, Rx and Tx.
    n_packed=$(grep -c 'virtio: using packed ring' "$D/fe.log")
    if [ "$n_packed" != "$([ "$ring" = packed ] && echo 4 || echo 0)" ]; then
        log "  frontend does not run a $ring ring:"
        grep 'virtio: using' "$D/fe.log" >&2
        return 1
    fi
    if [ "$be" = ovs ] || [ "$be" = base ]; then
        vfwd_wait_queues be "$D" p0 "$queues" && vfwd_wait_queues be "$D" p1 "$queues" || return 1
    fi
    tpmd_cmd fe "$D" "start tx_first $tx_first" >/dev/null || return 1
    sleep "$warmup"

    case $be in
        dpdk|dpdk13) tpmd_cmd be "$D" "clear fwd stats all" >/dev/null ;;
        ovs|base) c0=$(fwd_cycles_rx "$D") || return 1 ;;
        esac
        rx0=$(fe_rx "$D"); t0=$(now)
        sleep "$duration"
        rx1=$(fe_rx "$D"); t1=$(now)
        case $be in
        dpdk|dpdk13)
            cpp=$(tpmd_cmd be "$D" "show fwd stats all" |
                  sed -n 's/.*CPU cycles\/packet=\([0-9.]*\).*/\1/p' | tail -1)
            ;;
        ovs|base)
            c1=$(fwd_cycles_rx "$D") || return 1
            cpp=$(echo "$c0 $c1" | awk '{ d = $4 - $2; printf "%.2f", d ? ($3 - $1) / d : 0 }')
            ;;
        esac
        mpps=$(echo "$rx0 $rx1 $t0 $t1" | awk '{ printf "%.3f", ($2 - $1) / ($4 - $3) / 1e6 }')
        line="$be,$ring,$size,$mrg,$rep,$mpps,${cpp:-0},$busy"
        echo "$line" >> "$out/raw.csv"
        log "  $be $ring size=$size mrg_rxbuf=$mrg run $rep: $mpps Mpps, ${cpp:-?} cycles/packet"

    tpmd_cmd fe "$D" stop >/dev/null
    tpmd_stop fe "$D" >/dev/null
    case $be in
    dpdk|dpdk13) tpmd_stop be "$D" >/dev/null ;;
    ovs|base) vfwd_stop be "$D" ;;
    esac
    for f in "$D"/*.log; do
        [ -e "$f" ] && cp "$f" "$out/logs/$be-$ring-$size-mrg$mrg-run$rep-${f##*/}"
    done
    rm -rf "$D"
    return 0
}

# anchor_bin BACKEND: the dpdk-testpmd that runs BACKEND.
anchor_bin () {
    if [ "$1" = dpdk13 ]; then echo "$ANCHOR13_TESTPMD"; else echo "$TPMD_BIN"; fi
}

# median BACKEND RING SIZE MRG COLUMN: median of COLUMN (6: Mpps, 7:
# cycles) over the runs in raw.csv.
median () {
    awk -F, -v b="$1" -v r="$2" -v s="$3" -v m="$4" -v c="$5" \
        '$1 == b && $2 == r && $3 == s && $4 == m { print $c }' "$out/raw.csv" |
        sort -g | awk '{ v[NR] = $1 }
            END { if (!NR) print "nan";
                  else if (NR % 2) print v[(NR + 1) / 2];
                  else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# paired RING SIZE MRG COLUMN [ANCHOR]: median over the runs of ours /
# ANCHOR's (default dpdk) value of COLUMN in the same run number, which
# ran back to back: on this kind
# of machine the speed of the loop drifts from minute to minute with where
# the host puts the two vCPUs, and a ratio taken within one pair of runs
# keeps most of that drift out.
paired () {
    awk -F, -v r="$1" -v s="$2" -v m="$3" -v c="$4" -v a="${5:-dpdk}" '
        $2 == r && $3 == s && $4 == m { v[$1, $5] = $c; runs[$5] = 1 }
        END { for (k in runs)
                  if (v[a, k] + 0 > 0 && v["ovs", k] + 0 > 0)
                      print v["ovs", k] / v[a, k] }' "$out/raw.csv" |
        sort -g | awk '{ v[NR] = $1 }
            END { if (!NR) print "";
                  else if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2];
                  else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "backend,ring,size,mrg_rxbuf,run,mpps,cycles_per_packet,others_busy" > "$out/raw.csv"
log "frontend forwarding lcore on CPU $fe_cpu, backend on CPU $be_cpu;" \
    "$reps runs of ${duration}s per row and backend, the backends alternating"
reversed=$(for be in $backends; do echo "$be"; done | tac | tr '\n' ' ')
status=0
for ring in $rings; do
    for size in $sizes; do
        for mrg in $mrgs; do
            log "$ring ring, ${size} B, mrg_rxbuf=$mrg"
            rep=1
            while [ $rep -le "$reps" ]; do
                order=$backends
                [ $((rep % 2)) = 0 ] && order=$reversed
                for be in $order; do
                    run_backend "$be" "$ring" "$size" "$mrg" "$rep" && continue
                    D=$work/$be-$ring-$size-$mrg-$rep
                    log "$be: $ring ring, ${size} B, mrg_rxbuf=$mrg, run $rep FAILED (logs in $out/logs)"
                    for f in "$D"/*.log; do
                        [ -e "$f" ] && cp "$f" "$out/logs/$be-$ring-$size-mrg$mrg-run$rep-${f##*/}"
                    done
                    vfwd_stop_all "$D" >/dev/null 2>&1
                    tpmd_stop_all "$D" >/dev/null 2>&1
                    status=1
                done
                rep=$((rep + 1))
            done
        done
    done
done

# Summary: one row per ring x size x mrg.  Columns 10-13 compare each
# backend's packed row with its split row (empty for split rows, or
# without a split row); 16-21 are the Debian 13 anchor's (DPDK 24.11),
# "nan" and empty when it did not run.
echo "ring,size,mrg_rxbuf,dpdk_mpps,dpdk_cycles,ovs_mpps,ovs_cycles,mpps_ratio,cycles_ratio,ovs_packed_split_mpps,ovs_packed_split_cycles,dpdk_packed_split_mpps,dpdk_packed_split_cycles,paired_mpps_ratio,paired_cycles_ratio,dpdk13_mpps,dpdk13_cycles,mpps_ratio13,cycles_ratio13,paired_mpps_ratio13,paired_cycles_ratio13" > "$out/summary.csv"
for ring in $rings; do
    for size in $sizes; do
        for mrg in $mrgs; do
            dm=$(median dpdk "$ring" "$size" "$mrg" 6); dc=$(median dpdk "$ring" "$size" "$mrg" 7)
            om=$(median ovs "$ring" "$size" "$mrg" 6); oc=$(median ovs "$ring" "$size" "$mrg" 7)
            if [ "$ring" = packed ]; then
                sdm=$(median dpdk split "$size" "$mrg" 6); sdc=$(median dpdk split "$size" "$mrg" 7)
                som=$(median ovs split "$size" "$mrg" 6); soc=$(median ovs split "$size" "$mrg" 7)
            else
                sdm=nan sdc=nan som=nan soc=nan
            fi
            pm=$(paired "$ring" "$size" "$mrg" 6); pc=$(paired "$ring" "$size" "$mrg" 7)
            tm=$(median dpdk13 "$ring" "$size" "$mrg" 6); tc=$(median dpdk13 "$ring" "$size" "$mrg" 7)
            pm13=$(paired "$ring" "$size" "$mrg" 6 dpdk13); pc13=$(paired "$ring" "$size" "$mrg" 7 dpdk13)
            echo "$ring $size $mrg $dm $dc $om $oc $som $soc $sdm $sdc $tm $tc" |
                awk -v pm="$pm" -v pc="$pc" -v pm13="$pm13" -v pc13="$pc13" '
                function ratio(a, b) { return (a + 0 > 0 && b + 0 > 0) ? sprintf("%.2f", a / b) : "" }
                { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", $1, $2, $3, $4, $5, $6, $7,
                         ratio($6, $4), ratio($7, $5), ratio($6, $8), ratio($7, $9),
                         ratio($4, $10), ratio($5, $11), pm, pc,
                         $12, $13, ratio($6, $12), ratio($7, $13), pm13, pc13 }' \
                >> "$out/summary.csv"
        done
    done
done

{
    echo "Against $(dpkg-query -W -f='DPDK ${Version}' dpdk 2>/dev/null) (the machine's, Debian 12):"
    echo
    echo "| ring | frame | mrg_rxbuf | DPDK vhost Mpps | DPDK cycles/pkt | ovs-vhost Mpps | ovs-vhost cycles/pkt | Mpps ours/DPDK | cycles ours/DPDK | paired Mpps ours/DPDK | paired cycles ours/DPDK | ours packed/split Mpps | ours packed/split cycles |"
    echo "|:---|---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    tail -n +2 "$out/summary.csv" | awk -F, '
        function or_dash(v) { return v == "" ? "-" : v }
        { printf "| %s | %s B | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, ($3 ? "on" : "off"),
                 $4, $5, $6, $7, or_dash($8), or_dash($9), or_dash($14), or_dash($15), or_dash($10), or_dash($11) }'
    if [ -n "$work13" ]; then
        echo
        echo "Against DPDK $dpdk13_version (Debian 13, in the chroot $chroot); target: Mpps ours/DPDK 24.11 >= 1.25:"
        echo
        echo "| ring | frame | mrg_rxbuf | DPDK 24.11 Mpps | DPDK 24.11 cycles/pkt | ovs-vhost Mpps | ovs-vhost cycles/pkt | Mpps ours/24.11 | cycles ours/24.11 | paired Mpps ours/24.11 | paired cycles ours/24.11 | >= 1.25x |"
        echo "|:---|---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"
        tail -n +2 "$out/summary.csv" | awk -F, '
            function or_dash(v) { return v == "" ? "-" : v }
            { met = ($18 == "" && $20 == "") ? "-" : (($20 != "" ? $20 : $18) + 0 >= 1.25 ? "yes" : "no")
              printf "| %s | %s B | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, ($3 ? "on" : "off"),
                     $16, $17, $6, $7, or_dash($18), or_dash($19), or_dash($20), or_dash($21), met }'
    else
        echo
        echo "The Debian 13 anchor (DPDK 24.11) did not run${ANCHOR13_WHY:+: $ANCHOR13_WHY}."
    fi
    case " $backends " in
    *" base "*)
        echo
        echo "Against the base build ($base_fwd): ours / base, paired (median of the ratios of runs made back to back):"
        echo
        echo "| ring | frame | mrg_rxbuf | base Mpps | base cycles/pkt | ovs-vhost Mpps | ovs-vhost cycles/pkt | paired Mpps ours/base | paired cycles ours/base |"
        echo "|:---|---:|:---:|---:|---:|---:|---:|---:|---:|"
        for ring in $rings; do
            for size in $sizes; do
                for mrg in $mrgs; do
                    printf '| %s | %s B | %s | %s | %s | %s | %s | %s | %s |\n' "$ring" "$size" \
                        "$([ "$mrg" = 1 ] && echo on || echo off)" \
                        "$(median base "$ring" "$size" "$mrg" 6)" "$(median base "$ring" "$size" "$mrg" 7)" \
                        "$(median ovs "$ring" "$size" "$mrg" 6)" "$(median ovs "$ring" "$size" "$mrg" 7)" \
                        "$(paired "$ring" "$size" "$mrg" 6 base)" "$(paired "$ring" "$size" "$mrg" 7 base)"
                done
            done
        done ;;
    esac
    echo
    echo "Median of $reps runs of ${duration} s, the backends alternating (paired: median of the ratios of runs made back to back); testpmd virtio-user (2 ports, io, start tx_first $tx_first, queues=$queues; packed_vq=1 on packed rows) as the frontend;"
    echo "frontend forwarding lcore on CPU $fe_cpu, backend forwarding thread on CPU $be_cpu."
    echo "$(uname -srm); $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1);" \
         "$(dpkg-query -W -f='dpdk ${Version}' dpdk 2>/dev/null)."
} > "$out/table.md"
cat "$out/table.md"

# The chart.
if ! command -v gnuplot >/dev/null 2>&1; then
    log "gnuplot is missing: installing gnuplot-nox (apt-get)."
    log "NOTE: add gnuplot-nox to utilities/install-deps.sh."
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        { apt-get install -y -q gnuplot-nox || { apt-get update -q && apt-get install -y -q gnuplot-nox; }; } \
            >"$out/logs/apt-get.log" 2>&1
    fi
fi
if command -v gnuplot >/dev/null 2>&1; then
    tail -n +2 "$out/summary.csv" |
        awk -F, '{ printf "\"%s %s B mrg %s\" %s %s %s %s %s %s\n", $1, $2, ($3 ? "on" : "off"), $4, $6, $5, $7,
                          ($16 == "nan" ? 0 : $16), ($17 == "nan" ? 0 : $17) }' \
        > "$out/chart.dat"
    gnuplot > "$out/logs/gnuplot.log" 2>&1 <<EOF
set terminal pngcairo size 1400,500 noenhanced font ",10"
set output "$out/bench.png"
set multiplot layout 1,2 title "ovs-vhost-fwd vs DPDK vhost PMD (testpmd virtio-user io loop; split and packed rings)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set key top right
set xtics rotate by -30
set yrange [0:*]
set title "Throughput (Mpps, higher is better)"
plot "$out/chart.dat" using 2:xtic(1) title "DPDK 22.11 vhost", "" using 6 title "DPDK 24.11 vhost", "" using 3 title "ovs-vhost"
set title "Backend cycles per packet (lower is better)"
plot "$out/chart.dat" using 4:xtic(1) title "DPDK 22.11 vhost", "" using 7 title "DPDK 24.11 vhost", "" using 5 title "ovs-vhost"
unset multiplot
EOF
    if [ -s "$out/bench.png" ]; then
        log "chart: $out/bench.png"
    else
        log "gnuplot failed (see $out/logs/gnuplot.log)"
    fi
else
    log "no gnuplot: no chart"
fi
log "results: $out/table.md $out/summary.csv $out/raw.csv"
exit $status
