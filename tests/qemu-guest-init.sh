#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# /init of the ovs-vhost test guest (busybox ash), built into the initramfs
# by tests/qemu-guest.sh.  See tests/README-qemu.md.
#
# 1. Mounts /proc, /sys, /dev; loads the modules listed, in dependency
#    order, in /lib/modules/order (written at build time from each
#    module's depends=).
# 2. Reads its settings from the kernel command line, ovsvhost.KEY=VALUE:
#      ip=A.B.C.D/N   address of eth0 (eth0 stays down without it)
#      peer=A.B.C.D   the address the workloads talk to
#      mtu=N          eth0's MTU
#      queues=N       eth0's combined channels (ethtool -L), when the
#                     guest has fewer CPUs than queue pairs
#      run=NAME       a workload, below (default: none)
# 3. Prints "ovsvhost: ready" on the console (ttyS0), then runs the
#    workload and prints "ovsvhost: run NAME rc=N".
# 4. Serves commands on the second serial port (ttyS1), one per line:
#      ID COMMAND...
#    runs `sh -c COMMAND` and answers with "ovsvhost-begin ID", the
#    command's output and "ovsvhost-done ID rc=N".  An empty line gets
#    "ovsvhost-ctl-ready": clients send them until the server answers.
#    tests/qemu-guest.py ctl is the other end.
#
# Workloads (run=NAME):
#   none        nothing
#   ping        pings the peer 5 times (-i 0.2); rc is ping's
#   ping-loop   pings the peer every 100 ms until the guest stops, each
#               reply on the console as ping prints it
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp /dev/pts
mount -t tmpfs tmp /tmp

say () { echo "ovsvhost: $*" > /dev/console; }

for m in $(cat /lib/modules/order); do
    insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done

ip='' peer='' mtu='' queues='' run=none
for w in $(cat /proc/cmdline); do
    case $w in
    ovsvhost.ip=*)     ip=${w#*=} ;;
    ovsvhost.peer=*)   peer=${w#*=} ;;
    ovsvhost.mtu=*)    mtu=${w#*=} ;;
    ovsvhost.queues=*) queues=${w#*=} ;;
    ovsvhost.run=*)    run=${w#*=} ;;
    esac
done

ip link set lo up
if [ -n "$ip" ]; then
    i=0
    while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do
        sleep 0.1; i=$((i + 1))
    done
    [ -n "$mtu" ] && ip link set eth0 mtu "$mtu"
    if [ -n "$queues" ]; then
        ovsvhost-tool channels eth0 "$queues" > /dev/console 2>&1 \
            || say "channels $queues failed"
    fi
    ip addr add "$ip" dev eth0
    ip link set eth0 up
fi

# ctl_loop: the command server on ttyS1 (raw: no echo, no CR/LF rewrite).
ctl_loop () {
    stty -F /dev/ttyS1 raw -echo || return
    while :; do
        while IFS= read -r line; do
            if [ -z "$line" ]; then
                echo ovsvhost-ctl-ready
                continue
            fi
            id=${line%% *} cmd=${line#* }
            echo "ovsvhost-begin $id"
            sh -c "$cmd" < /dev/null > "/tmp/ctl.$id" 2>&1
            rc=$?
            cat "/tmp/ctl.$id"
            rm -f "/tmp/ctl.$id"
            echo "ovsvhost-done $id rc=$rc"
        done < /dev/ttyS1 > /dev/ttyS1
    done
}
[ -e /dev/ttyS1 ] && ctl_loop &

say ready
case $run in
none)      rc=0 ;;
ping)      ping -c 5 -i 0.2 -W 2 "$peer" > /dev/console 2>&1; rc=$? ;;
ping-loop) ping -i 0.1 "$peer" > /dev/console 2>&1 & rc=0 ;;
*)         say "unknown workload $run"; rc=2 ;;
esac
say "run $run rc=$rc"

# init must not exit: the kernel would panic.
while :; do sleep 3600; done
