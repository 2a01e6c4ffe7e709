#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# qemu-guest.sh -- builds the test guest: a Debian kernel and a busybox
# initramfs, cached, for the QEMU tests (tests/qemu.at, tests/qemu-lib.sh).
#
#   tests/qemu-guest.sh            prints the directory holding vmlinux and
#                                  initramfs.gz, building what is missing
#
# The kernel is the version Debian's linux-image-amd64 depends on
# (apt-get download, dpkg-deb -x), or $OVS_VHOST_GUEST_KERNEL (e.g.
# 6.1.0-57-amd64).  Its bzImage is unpacked to the ELF vmlinux, which QEMU
# boots directly through its PVH entry point (about 3 s under TCG).  Without
# network or apt lists, the newest kernel already in the cache is used.
#
# The initramfs holds busybox-static, tests/qemu-guest-init.sh as /init,
# tests/qemu-guest-tool.c built statically as /bin/ovsvhost-tool, and the
# kernel modules in $OVS_VHOST_GUEST_MODULES (default: virtio_pci
# virtio_net) with every module they depend on, read with kmod's modinfo
# (busybox's cannot), in load order.  It is rebuilt when any of those
# inputs changes.
#
# Cache: $OVS_VHOST_QEMU_CACHE (default /var/cache/ovs-vhost/qemu-guest),
# one directory per kernel version holding the .deb, vmlinux, config,
# version (the package's), modules/ and initramfs.gz; a lock serialises
# concurrent builds.
# Needs: apt-get, dpkg-deb, xz, modinfo (kmod), busybox (busybox-static),
# a C compiler with a static libc ($OVS_VHOST_GUEST_CC, default cc).
set -e
srcdir=$(cd "$(dirname "$0")" && pwd)
cache=${OVS_VHOST_QEMU_CACHE:-/var/cache/ovs-vhost/qemu-guest}
OVS_VHOST_GUEST_MODULES=${OVS_VHOST_GUEST_MODULES:-"virtio_pci virtio_net"}
cc=${OVS_VHOST_GUEST_CC:-cc}

say () { echo "qemu-guest.sh: $*" >&2; }
die () { say "$*"; exit 1; }

mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9

kver=${OVS_VHOST_GUEST_KERNEL:-}
if [ -z "$kver" ]; then
    kver=$(apt-cache depends linux-image-amd64 2>/dev/null \
           | sed -n 's/^ *Depends: linux-image-\([^ ]*-amd64\)$/\1/p' | head -1)
fi
if [ -z "$kver" ]; then
    # shellcheck disable=SC2010  # (newest first; the names are ours)
    kver=$(ls -t "$cache" 2>/dev/null | grep -- '-amd64$' | head -1)
    [ -n "$kver" ] || die "cannot resolve linux-image-amd64 (apt-get update?)"
    say "linux-image-amd64 not resolvable, using cached $kver"
fi
dir=$cache/$kver

# extract_vmlinux BZIMAGE OUT: the ELF inside the bzImage, found as the
# kernel's scripts/extract-vmlinux finds it: try each compressed stream's
# magic, keep the first that unpacks to an ELF file.
extract_vmlinux () {
    for magic in '\3757zXZ\000' '\037\213\010' '\050\265\057\375'; do
        # shellcheck disable=SC2059  # (the format holds the octal escapes)
        for off in $(LC_ALL=C grep -aob "$(printf "$magic")" "$1" \
                     | cut -d: -f1); do
            case $magic in
            *zXZ*) un="xz -dc" ;;
            '\037'*) un="gzip -dc" ;;
            *) un="zstd -dc" ;;
            esac
            tail -c +$((off + 1)) "$1" | $un > "$2.tmp" 2>/dev/null || true
            if [ "$(head -c 4 "$2.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
                mv "$2.tmp" "$2"
                return 0
            fi
        done
    done
    rm -f "$2.tmp"
    return 1
}

# The package, kept so that another module list needs no network.
deb=$dir/linux-image-$kver.deb
if [ ! -s "$deb" ]; then
    say "fetching linux-image-$kver"
    mkdir -p "$dir"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    chmod 755 "$tmp"      # apt's _apt user downloads into it.
    (cd "$tmp" && apt-get download -q "linux-image-$kver" >/dev/null 2>&1) \
        || (cd "$tmp" && apt-get download "linux-image-$kver") \
        || die "apt-get download linux-image-$kver failed"
    mv "$tmp"/linux-image-*.deb "$deb.tmp" && mv "$deb.tmp" "$deb"
    rm -f "$dir/vmlinux"
fi

if [ ! -s "$dir/vmlinux" ] \
   || [ "$(cat "$dir/modules/list" 2>/dev/null)" != "$OVS_VHOST_GUEST_MODULES" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    dpkg-deb -x "$deb" "$tmp/x"
    rm -rf "$dir/modules" "$dir/vmlinux"
    mkdir -p "$dir/modules"
    dpkg-deb -f "$deb" Version > "$dir/version"
    cp "$tmp/x/boot/config-$kver" "$dir/config"

    # Modules in load order: each one after everything it depends on.
    kdir=$tmp/x/lib/modules/$kver/kernel
    order=
    module_file () {
        find "$kdir" -name "$1.ko*" -o -name "$(echo "$1" | tr _ -).ko*" | head -1
    }
    add_module () {
        case " $order " in *" $1 "*) return 0 ;; esac
        f=$(module_file "$1")
        [ -n "$f" ] || die "module $1 not in linux-image-$kver"
        for dep in $(modinfo -F depends "$f" | tr , ' '); do
            add_module "$dep"
        done
        f=$(module_file "$1")      # (The recursion reused 'f'.)
        case $f in
        *.ko) cp "$f" "$dir/modules/$1.ko" ;;
        *.ko.xz) xz -dc "$f" > "$dir/modules/$1.ko" ;;
        *.ko.zst) zstd -dcq "$f" > "$dir/modules/$1.ko" ;;
        *) die "cannot unpack $f" ;;
        esac
        order="$order $1"
    }
    for m in $OVS_VHOST_GUEST_MODULES; do add_module "$m"; done
    echo $order > "$dir/modules/order"
    echo "$OVS_VHOST_GUEST_MODULES" > "$dir/modules/list"
    # Last: its presence says the rest is complete.
    extract_vmlinux "$tmp/x/boot/vmlinuz-$kver" "$dir/vmlinux" \
        || die "no vmlinux found in vmlinuz-$kver"
    rm -rf "$tmp"
    trap - EXIT
    say "kernel $kver ($(cat "$dir/version")): modules$order"
fi

busybox=$(command -v busybox) || die "busybox not found (busybox-static)"
stamp=$(cat "$srcdir/qemu-guest-init.sh" "$srcdir/qemu-guest-tool.c" \
            "$dir/modules/order" "$busybox" | cksum | cut -d' ' -f1)
if [ ! -s "$dir/initramfs.gz" ] || [ "$(cat "$dir/initramfs.stamp" 2>/dev/null)" != "$stamp" ]; then
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    mkdir -p "$root/bin" "$root/sbin" "$root/proc" "$root/sys" "$root/dev" \
             "$root/tmp" "$root/lib/modules"
    cp "$busybox" "$root/bin/busybox"
    for applet in $("$busybox" --list); do
        [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
    done
    $cc -static -O2 -Wall -o "$root/bin/ovsvhost-tool" "$srcdir/qemu-guest-tool.c" \
        || die "cannot build qemu-guest-tool.c statically (libc6-dev?)"
    cp "$srcdir/qemu-guest-init.sh" "$root/init"
    chmod 755 "$root/init"
    cp "$dir/modules/"* "$root/lib/modules/"
    (cd "$root" && find . | "$busybox" cpio -o -H newc -R 0:0 2>/dev/null) \
        | gzip -1 > "$dir/initramfs.gz.tmp"
    mv "$dir/initramfs.gz.tmp" "$dir/initramfs.gz"
    echo "$stamp" > "$dir/initramfs.stamp"
    rm -rf "$root"
    trap - EXIT
    say "initramfs for $kver built"
fi
echo "$dir"
