#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# qemu-migration-control.sh -- the control run of tests/qemu-migration.at:
# the same guest, the same QEMU and the same hops, with no vhost-user and
# no ovs-vhost at all.  The NIC is QEMU's own virtio-net (vhost=off) on a
# tap in a network namespace of its own, bridged to an address the guest
# pings every 100 ms while UDP flows run both ways, as in the dirty-log
# audit test.  A destination guest that logs a kernel error here broke
# without our code: see tests/README-qemu.md, "Migration tests".
#
#   sh tests/qemu-migration-control.sh [HOPS [QUEUES [DEVICE-OPTS]]]
#
# (UDP=no: pings only, the load of the ping-pong tests)
# as root, from the source tree.  Prints one line per hop and, at the
# end, the kernel errors of every guest; exits 1 if there were any.
# Work files go to a private temporary directory, kept with KEEP=yes.
set -u
hops=${1:-10} queues=${2:-2} opts=${3:-}
top=$(cd "$(dirname "$0")/.." && pwd)
abs_top_srcdir=$top
. "$top/tests/qemu-lib.sh"

[ "$(id -u)" = 0 ] || { echo "$0: needs root" >&2; exit 77; }
qemu_available || { echo "$0: no QEMU" >&2; exit 77; }
D=$(mktemp -d /tmp/qemu-mig-control.XXXXXX) || exit 1
ns=migctl$$
net=10.251.0
mac=52:54:00:00:00:4d
udp_pid=
cleanup () {
    [ -n "$udp_pid" ] && kill "$udp_pid" 2>/dev/null
    qemu_stop_all "$D" >/dev/null 2>&1
    ip netns del $ns 2>/dev/null
    [ "${KEEP:-no}" = yes ] && echo "kept $D" || rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add $ns && ip -n $ns link add br0 type bridge \
    && ip -n $ns addr add $net.1/24 dev br0 && ip -n $ns link set br0 up \
    && ip -n $ns link set lo up || exit 1
# QEMU creates its tap in the namespace, so it runs there.
cat > "$D/qemu" <<EOF
#!/bin/sh
exec ip netns exec $ns ${QEMU_BIN:-qemu-system-x86_64} "\$@"
EOF
chmod +x "$D/qemu"
QEMU_BIN=$D/qemu
qemu_guest_build || exit 1

mq=
[ "$queues" -gt 1 ] && mq=,mq=on,vectors=0
kargs="ovsvhost.ip=$net.2/24 ovsvhost.peer=$net.1 ovsvhost.queues=$queues"
nic () {
    echo "-netdev tap,id=net0,ifname=ctl$1,script=no,downscript=no,vhost=off,queues=$queues" \
         "-device virtio-net-pci,netdev=net0,mac=$mac$mq$opts"
}
attach () {
    i=0
    until ip -n $ns link set ctl$1 master br0 up 2>/dev/null; do
        [ $i -lt 100 ] || { echo "no tap ctl$1"; return 1; }
        sleep 0.1; i=$((i + 1))
    done
}

qemu_start g0 "$D" "$kargs" $(nic 0) && attach 0 \
    && qemu_wait_console g0 "$D" 'ovsvhost: run none rc=0' 90 || exit 1
i=0
until qemu_ctl g0 "$D" "ping -q -c 1 -W 1 $net.1" >/dev/null; do
    [ $i -lt 30 ] || { echo "g0 cannot ping"; exit 1; }
    i=$((i + 1))
done
qemu_ctl g0 "$D" "ping -i 0.1 $net.1 > /tmp/ping.log 2>&1 &"
if [ "${UDP:-yes}" = yes ]; then
    qemu_ctl g0 "$D" "while :; do ovsvhost-tool udp $net.1 5000 64; sleep 0.5; done > /dev/null 2>&1 &"
    ip netns exec $ns bash -c 'while :; do for p in $(seq 5000 5063); do echo x > /dev/udp/'$net.2'/$p; done; sleep 0.5; done' > /dev/null 2>&1 &
    udp_pid=$!
fi
sleep 1

rc=0
hop=1
while [ $hop -le "$hops" ]; do
    src=g$((hop - 1)) dst=g$hop sock=$D/mig$hop.sock
    qemu_start $dst "$D" "$kargs" $(nic $((hop % 2))) -incoming unix:$sock \
        || exit 1
    attach $((hop % 2)) || exit 1
    i=0
    while [ ! -S $sock ]; do sleep 0.1; i=$((i + 1)); [ $i -lt 300 ] || exit 1; done
    qemu_qmp $src "$D" migrate-set-parameters \
        '{"max-bandwidth": 1073741824, "downtime-limit": 50}' > /dev/null
    qemu_qmp $src "$D" migrate '{"uri": "unix:'$sock'"}' > /dev/null
    i=0
    while :; do
        st=$(qemu_qmp $src "$D" query-migrate)
        case $st in
        *'"status": "completed"'*) break ;;
        *'"status": "failed"'*|*'"status": "cancelled"'*) echo "$st"; exit 1 ;;
        esac
        [ $i -lt 600 ] || { echo "hop $hop not done"; exit 1; }
        sleep 0.1; i=$((i + 1))
    done
    qemu_stop $src "$D"
    sleep 1.5
    if qemu_running $dst "$D"; then
        errs=$(grep -c '^\[' "$D/qemu-$dst/console.log")
        echo "hop $hop: $(echo "$st" | grep -o '"downtime": [0-9]*'), kernel lines on $dst: $errs"
    else
        echo "hop $hop: $dst exited"
        rc=1
        break
    fi
    hop=$((hop + 1))
done
last=g$((hop - 1))
qemu_running $last "$D" \
    && echo "$last: $(qemu_ctl $last "$D" 'killall ping; sleep 0.5; tail -2 /tmp/ping.log' | tr '\n' ' ')"
for g in "$D"/qemu-g*/; do
    g=${g%/}; g=${g##*/qemu-}
    qemu_check_log $g "$D" || rc=1
done
exit $rc
