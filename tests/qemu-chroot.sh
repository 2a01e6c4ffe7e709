#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# qemu-chroot.sh -- another Debian release's QEMU, as QEMU_BIN of
# tests/qemu-lib.sh: runs the qemu-system-x86_64 of the chroot
# $OVS_VHOST_QEMU_CHROOT (utilities/ovs-vhost-chroot.sh create --extra
# qemu-system-x86 DIR) on this machine, with the chroot's dynamic loader,
# libraries, modules and firmware, so that it sees the machine's files,
# sockets, network namespaces and taps as they are: no chroot, no mounts.
# tests/README-qemu.md, "QEMU 10".
#
#   OVS_VHOST_QEMU_CHROOT=DIR tests/qemu-chroot.sh QEMU-ARGS...
#
# QEMU finds its data relative to /proc/self/exe, which is the loader
# here, so nothing of the machine's own QEMU is found: -L names the
# chroot's firmware directories (Debian's --firmwarepath) and
# QEMU_MODULE_DIR its modules.
r=${OVS_VHOST_QEMU_CHROOT:?"qemu-chroot.sh: set OVS_VHOST_QEMU_CHROOT to a chroot with qemu-system-x86"}
lib=$r/usr/lib/x86_64-linux-gnu
QEMU_MODULE_DIR=$lib/qemu
export QEMU_MODULE_DIR
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" \
    "$r/usr/bin/qemu-system-x86_64" \
    -L "$r/usr/share/qemu" -L "$r/usr/share/seabios" -L "$r/usr/lib/ipxe/qemu" \
    "$@"
