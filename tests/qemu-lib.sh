# SPDX-License-Identifier: Apache-2.0
# qemu-lib.sh -- run Linux guests under QEMU as vhost-user frontends, from
# shell tests (tests/qemu.at) and by hand.  See tests/README-qemu.md.
#
# Source it (". tests/qemu-lib.sh"); works with dash and bash.  Each guest
# is named NAME and lives in DIR/qemu-NAME/:
#   cmdline      the QEMU command line, for the record
#   pid          QEMU's pid
#   qemu.log     QEMU's stdout and stderr: every line but "info:" ones is a
#                warning or error
#   console.log  the guest's first serial port: /init's "ovsvhost: ..."
#                lines and kernel messages of level warning and worse only
#                (loglevel=5), each with its "[    1.234567]" time stamp
#   qmp.sock     QMP (qemu_qmp)
#   ctl.sock     the guest's command server on its second serial port
#                (qemu_ctl)
#   dmesg.log    the whole kernel log, saved by qemu_stop
#
#   qemu_available                  QEMU, python3 and the guest build tools
#                                   are here
#   qemu_guest_build                builds or finds the cached kernel and
#                                   initramfs (tests/qemu-guest.sh); sets
#                                   QEMU_GUEST_DIR
#   qemu_vhost_nic ID SOCK TYPE QUEUES [DEVICE-OPTS]
#                                   prints QEMU arguments for one vhost-user
#                                   virtio-net-pci NIC: TYPE is the OVS port
#                                   type, dpdkvhostuser (OVS listens on SOCK,
#                                   QEMU connects and reconnects) or
#                                   dpdkvhostuserclient (QEMU listens on
#                                   SOCK); DEVICE-OPTS are added to -device,
#                                   e.g. ",packed=on,mrg_rxbuf=off"
#   qemu_start NAME DIR KERNEL-ARGS [QEMU-ARGS...]
#                                   starts a guest (background) with extra
#                                   kernel command line KERNEL-ARGS (the
#                                   ovsvhost.* settings of
#                                   tests/qemu-guest-init.sh) and extra QEMU
#                                   arguments, e.g. $(qemu_vhost_nic ...)
#   qemu_wait_console NAME DIR PATTERN [SECS]
#                                   waits for an extended regexp on the
#                                   console (default 60 s); false at once if
#                                   QEMU exits
#   qemu_ctl NAME DIR COMMAND [SECS]
#                                   runs shell COMMAND in the guest, prints
#                                   its output, returns its status (default
#                                   timeout 30 s; 124 on timeout)
#   qemu_qmp NAME DIR COMMAND [ARGS-JSON] [SECS]
#                                   one QMP command; prints its return value
#   qemu_qmp_event NAME DIR COMMAND ARGS-JSON EVENT [SECS]
#                                   one QMP command, then waits for EVENT on
#                                   the same connection (device_del, then
#                                   DEVICE_DELETED); prints the return value
#                                   and the event's data (default 60 s)
#   qemu_running NAME DIR
#   qemu_pid NAME DIR
#   qemu_stop NAME DIR              saves dmesg.log (if the guest runs),
#                                   then QMP quit, then
#                                   SIGTERM after 10 s, SIGKILL after 20 s
#   qemu_kill NAME DIR              SIGKILL, for crash tests
#   qemu_stop_all DIR               every guest under DIR (for traps)
#   qemu_check_log NAME DIR [SED-FILTER]
#                                   prints qemu.log's lines (but "info:"
#                                   ones), the guest
#                                   kernel's warnings and errors and
#                                   /init's failures that SED-FILTER does
#                                   not delete; false if any
#
# Tunables (environment): QEMU_BIN (qemu-system-x86_64; with
# OVS_VHOST_QEMU_CHROOT=DIR, tests/qemu-chroot.sh: the QEMU of that chroot,
# e.g. Debian 13's QEMU 10, see tests/README-qemu.md), QEMU_MEM (guest
# RAM, default 256M), QEMU_SMP (1), QEMU_MACHINE (q35), QEMU_EXTRA_APPEND
# (more kernel arguments for every guest), QEMU_REBOOT (yes: a guest reboot
# restarts the guest instead of ending QEMU), QEMU_VIOMMU (yes: every guest
# has a virtual IOMMU and every NIC sits behind it, below).
#
# vIOMMU (QEMU_VIOMMU=yes, tests/qemu-iommu.at): qemu_start adds an
# intel-iommu (interrupt remapping, device IOTLB) before any other device
# and intel_iommu=on to the kernel command line; qemu_vhost_nic puts each
# NIC on a PCIe root port of its own, with iommu_platform=on (the guest
# hands the NIC I/O virtual addresses, which the backend translates with
# the IOTLB QEMU sends it), ats=on and disable-legacy=on (a legacy virtio
# device cannot have iommu_platform).  The root port is what makes ats=on
# real: on q35's root bus the NIC is a conventional PCI device without the
# PCIe ATS capability, and the guest then never sends the device-IOTLB
# invalidations that device-iotlb=on is for.  Under TCG, intremap=on needs
# no kernel-irqchip=split (KVM does).
#
# Facts of QEMU 7.2 on these machines, built in here:
#   - nested KVM fails ("KVM internal error. Suberror: 1"): -accel tcg;
#   - a vhost-user NIC with MSI-X makes QEMU 7.2 segfault under TCG:
#     vectors=0 (the guest driver falls back to INTx);
#   - vhost-user needs guest RAM that the backend can map: a shared memfd
#     (-object memory-backend-memfd,share=on, -machine memory-backend=);
#   - the uncompressed vmlinux boots through PVH in about 3 s.
#
# Only pids recorded in DIR/qemu-NAME/pid are ever signalled, and only
# while /proc/PID/cmdline still names that guest's directory.

# shellcheck disable=SC3043
_qemu_lib_dir=${abs_top_srcdir:+$abs_top_srcdir/tests}
: "${_qemu_lib_dir:=$(cd "$(dirname "${0:-.}")" 2>/dev/null && pwd)}"
if [ -n "${OVS_VHOST_QEMU_CHROOT:-}" ]; then
    export OVS_VHOST_QEMU_CHROOT
    QEMU_BIN=${QEMU_BIN:-$_qemu_lib_dir/qemu-chroot.sh}
fi
QEMU_BIN=${QEMU_BIN:-qemu-system-x86_64}

_qemu_py () { python3 "$_qemu_lib_dir/qemu-guest.py" "$@"; }

qemu_available () {
    command -v "$QEMU_BIN" >/dev/null 2>&1 && command -v python3 >/dev/null \
        && { [ -z "${OVS_VHOST_QEMU_CHROOT:-}" ] \
             || [ -x "$OVS_VHOST_QEMU_CHROOT/usr/bin/qemu-system-x86_64" ]; } \
        && command -v busybox >/dev/null && command -v modinfo >/dev/null
}

qemu_guest_build () {
    QEMU_GUEST_DIR=$(sh "$_qemu_lib_dir/qemu-guest.sh") || return 1
    export QEMU_GUEST_DIR
}

_qemu_nic_n=0
qemu_vhost_nic () {
    local id=$1 sock=$2 type=$3 queues=$4 opts=${5:-} chr mq='' mac=''
    case $type in
    dpdkvhostuser)       chr="path=$sock,reconnect=1" ;;
    dpdkvhostuserclient) chr="path=$sock,server=on,wait=off" ;;
    *) echo "qemu_vhost_nic: unknown port type $type" >&2; return 2 ;;
    esac
    [ "$queues" -gt 1 ] && mq=",mq=on"
    _qemu_nic_n=$((_qemu_nic_n + 1))
    case $opts in
    *mac=*) ;;
    *) mac=",mac=52:54:00:00:00:$(printf %02x $_qemu_nic_n)" ;;
    esac
    if [ "${QEMU_VIOMMU:-no}" = yes ]; then
        # A root port per NIC; its chassis number, unique per guest, comes
        # from the NIC's id (this function runs in $(...), so a counter
        # would not survive between NICs).
        local chassis
        chassis=$(( $(printf %s "$id" | cksum | cut -d' ' -f1) % 255 + 1 ))
        echo "-device pcie-root-port,id=rp-$id,bus=pcie.0,chassis=$chassis"
        opts=",bus=rp-$id,iommu_platform=on,ats=on,disable-legacy=on$opts"
    fi
    echo "-chardev socket,id=chr-$id,$chr" \
         "-netdev vhost-user,id=$id,chardev=chr-$id,queues=$queues" \
         "-device virtio-net-pci,netdev=$id,vectors=0$mq$mac$opts"
}

qemu_pid () { cat "$2/qemu-$1/pid" 2>/dev/null; }

qemu_running () {
    local pid
    pid=$(qemu_pid "$1" "$2") && [ -n "$pid" ] \
        && grep -q "qemu-$1/" "/proc/$pid/cmdline" 2>/dev/null
}

qemu_start () {
    local name=$1 dir=$2/qemu-$1 append=$3 g
    shift 3
    if [ -z "${QEMU_GUEST_DIR:-}" ]; then
        qemu_guest_build || return 1
    fi
    g=$QEMU_GUEST_DIR
    mkdir -p "$dir" || return 1
    rm -f "$dir/console.log" "$dir/qemu.log" "$dir/dmesg.log" \
          "$dir/qmp.sock" "$dir/ctl.sock"
    if [ "${QEMU_VIOMMU:-no}" = yes ]; then
        # Before the devices it translates for; see "vIOMMU" above.
        set -- -device intel-iommu,intremap=on,device-iotlb=on "$@"
        append="intel_iommu=on $append"
    fi
    set -- -name "$name" -accel tcg -machine "${QEMU_MACHINE:-q35},memory-backend=mem,hpet=off" \
        -object "memory-backend-memfd,id=mem,size=${QEMU_MEM:-256M},share=on" \
        -m "${QEMU_MEM:-256M}" -smp "${QEMU_SMP:-1}" \
        -nodefaults -no-user-config -display none \
        -kernel "$g/vmlinux" -initrd "$g/initramfs.gz" \
        -append "console=ttyS0 loglevel=5 printk.time=1 panic=-1 tsc=reliable no_timer_check ${QEMU_EXTRA_APPEND:-} $append" \
        -serial "file:$dir/console.log" \
        -chardev "socket,id=ctl,path=$dir/ctl.sock,server=on,wait=off" \
        -device isa-serial,chardev=ctl \
        -qmp "unix:$dir/qmp.sock,server=on,wait=off" "$@"
    # A reboot or a panic (panic=-1) ends QEMU, unless a test wants reboots.
    [ "${QEMU_REBOOT:-no}" = yes ] || set -- "$@" -no-reboot
    echo "$QEMU_BIN $*" > "$dir/cmdline"
    "$QEMU_BIN" "$@" < /dev/null >> "$dir/qemu.log" 2>&1 &
    local pid=$! i=0
    echo $pid > "$dir/pid"
    # The sockets exist once QEMU has parsed its arguments.  Until the
    # child has exec'd QEMU, its /proc/PID/cmdline is still this shell's,
    # so qemu_running would call it gone: ask the kernel whether our own
    # child lives instead.
    while [ ! -S "$dir/qmp.sock" ] && [ $i -lt 100 ]; do
        kill -0 "$pid" 2>/dev/null || { cat "$dir/qemu.log" >&2; return 1; }
        sleep 0.1; i=$((i + 1))
    done
    [ -S "$dir/qmp.sock" ] || { cat "$dir/qemu.log" >&2; return 1; }
}

qemu_wait_console () {
    local name=$1 dir=$2/qemu-$1 pattern=$3 secs=${4:-60} i=0
    while ! grep -Eq -- "$pattern" "$dir/console.log" 2>/dev/null; do
        if ! qemu_running "$name" "$2"; then
            echo "qemu_wait_console: $name exited" >&2
            return 1
        fi
        if [ $i -ge $((secs * 10)) ]; then
            echo "qemu_wait_console: no \"$pattern\" from $name in $secs s" >&2
            return 1
        fi
        sleep 0.1; i=$((i + 1))
    done
}

qemu_ctl () {
    _qemu_py ctl "$2/qemu-$1/ctl.sock" "$3" --timeout "${4:-30}"
}

qemu_qmp () {
    if [ $# -ge 5 ]; then
        _qemu_py qmp "$2/qemu-$1/qmp.sock" "$3" "$4" --timeout "$5"
    elif [ -n "${4:-}" ]; then
        _qemu_py qmp "$2/qemu-$1/qmp.sock" "$3" "$4"
    else
        _qemu_py qmp "$2/qemu-$1/qmp.sock" "$3"
    fi
}

qemu_qmp_event () {
    _qemu_py qmp "$2/qemu-$1/qmp.sock" "$3" "$4" --event "$5" \
        --timeout "${6:-60}"
}

_qemu_wait_exit () {
    local i=0
    while qemu_running "$1" "$2" && [ $i -lt $(($3 * 10)) ]; do
        sleep 0.1; i=$((i + 1))
    done
    ! qemu_running "$1" "$2"
}

qemu_kill () {
    local pid
    qemu_running "$1" "$2" || return 0
    pid=$(qemu_pid "$1" "$2")
    kill -9 "$pid" 2>/dev/null
    _qemu_wait_exit "$1" "$2" 10
}

qemu_stop () {
    local name=$1 dir=$2/qemu-$1 pid
    qemu_running "$name" "$2" || return 0
    # A paused guest (a migration's source, once done) cannot answer.
    if qemu_qmp "$name" "$2" query-status '' 5 2>/dev/null \
            | grep -q '"running": true'; then
        qemu_ctl "$name" "$2" 'dmesg' 10 > "$dir/dmesg.log" 2>&1
    fi
    qemu_qmp "$name" "$2" quit '' 5 >/dev/null 2>&1
    _qemu_wait_exit "$name" "$2" 10 && return 0
    pid=$(qemu_pid "$name" "$2")
    kill "$pid" 2>/dev/null
    _qemu_wait_exit "$name" "$2" 10 && return 0
    qemu_kill "$name" "$2"
}

qemu_stop_all () {
    local d
    for d in "$1"/qemu-*/; do
        [ -f "$d/pid" ] || continue
        d=${d%/}
        qemu_stop "${d##*/qemu-}" "$1"
    done
}

# The lines every boot of this guest under TCG logs, whatever the test:
# TCG's timers are too coarse for the kernel's calibrations.  On a loaded
# host TCG's timers also lag, and the kernel says so; what it would say is
# turned off: the clocksource watchdog (tsc=reliable), the check of the
# 8254 timer's interrupt ("MP-BIOS bug": no_timer_check) and the HPET's
# emulated RTC interrupts ("hpet: Lost N RTC interrupts": hpet=off).  (The pc
# machine adds "fail to add MMCONFIG information": q35 has MMCONFIG.)
_qemu_boot_noise='/tsc: .*[Cc]alibrat/d
/APIC calibration not consistent with PM-Timer/d'

qemu_check_log () {
    local name=$1 dir=$2/qemu-$1 filter=${3:-}
    {
        # QEMU's "info:" lines are not complaints: a vhost-user netdev
        # on a server socket says it waits for the backend to connect.
        grep -Ev '^[^:]+: (.*: )?info: ' "$dir/qemu.log" 2>/dev/null \
            | sed 's/^/qemu: /'
        # Kernel lines (time-stamped: levels warning and worse), and
        # what /init reports as failed.
        grep -E '^\[ *[0-9]+\.[0-9]+\]|^ovsvhost: .*(failed|unknown)' \
            "$dir/console.log" 2>/dev/null | sed "$_qemu_boot_noise" \
            | sed 's/^/guest: /'
    } | { if [ -n "$filter" ]; then sed "$filter"; else cat; fi; } \
      | grep . && return 1
    return 0
}
