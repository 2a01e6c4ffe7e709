#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# A cached Debian chroot to build and test ovs-vhost's packages on another
# Debian release than the machine's (Debian 13, trixie, from Debian 12).
#
#   utilities/ovs-vhost-chroot.sh create [--suite SUITE] [--extra PKGS] [DIR]
#       Creates the chroot once, `debootstrap --variant=buildd SUITE DIR
#       MIRROR`, with ovs-vhost's build dependencies and what
#       tests/package-test.sh needs (openvswitch-switch, dpdk-testpmd,
#       lintian, man-db) installed, and prints DIR.  DIR defaults to
#       /var/cache/ovs-vhost/chroot-SUITE, SUITE to trixie.  A chroot that
#       is complete (its stamp file names the same suite and packages) is
#       reused as is, with no network; an interrupted one starts over.
#       Exit status 77 when the Debian archive cannot be reached and there
#       is no chroot yet: the caller skips.  --extra "PKGS" installs more
#       packages, and is part of the stamp: give such a chroot a DIR of its
#       own (the benchmarks' anchors, openvswitch-switch-dpdk, use
#       /var/cache/ovs-vhost/chroot-trixie-bench), or it replaces the
#       package test's.  --only "PKGS" installs PKGS alone, on debootstrap's
#       minbase variant (no compiler): the QEMU 10 the testsuite's
#       migration tests run under (tests/check-all.sh) needs only
#       qemu-system-x86, in /var/cache/ovs-vhost/chroot-trixie-qemu10.
#
#   utilities/ovs-vhost-chroot.sh run DIR COMMAND...
#       Runs COMMAND in the chroot DIR, in a mount namespace of its own
#       (unshare --mount, propagation private) with /proc, /sys, /dev,
#       /dev/pts and a private /dev/shm mounted.  The mounts are undone by
#       a trap when COMMAND ends, and could not outlive the namespace
#       anyway: nothing is ever left mounted on the machine, and nothing
#       mounted here is seen outside.
#
# As root.  Environment: OVS_VHOST_CHROOT_MIRROR (default
# http://deb.debian.org/debian).
set -e

log () { echo "ovs-vhost-chroot: $*" >&2; }
usage () {
  log "usage: $0 create [--suite SUITE] [--extra PKGS] [DIR] | run DIR COMMAND..."
  exit 1
}

mirror=${OVS_VHOST_CHROOT_MIRROR:-http://deb.debian.org/debian}

# What the chroot holds besides the buildd variant (build-essential):
# debian/control's Build-Depends, and tests/package-test.sh's needs.  The
# test leaves installed what it found installed, so openvswitch-switch is
# part of the chroot and a later run needs no network.  Debian 13 ships
# dpdk-testpmd in dpdk-dev (Debian 12: in dpdk).
pkgs="debhelper autoconf automake libtool pkgconf groff-base python3
      libssl-dev libcap-ng-dev libunbound-dev libxdp-dev libbpf-dev
      libnuma-dev openvswitch-source openvswitch-switch dpdk dpdk-dev
      lintian man-db procps iproute2 kmod"

# Mounts what a package build and Open vSwitch need in the chroot "$root",
# in the current (private) mount namespace, and sets a trap that undoes
# it.  Only called from inside `unshare --mount`.
mounted=
chroot_umount () {
  for m in $mounted; do umount "$m" 2>/dev/null || umount -l "$m"; done
  mounted=
}
chroot_mount () {
  trap chroot_umount EXIT
  trap 'exit 1' INT TERM HUP
  # The namespace's mounts must not reach the machine's through shared
  # peer groups: a private tree (unshare --propagation private says so
  # too; this makes sure).
  mount --make-rprivate /
  mount -t proc proc "$root/proc"; mounted="$root/proc $mounted"
  mount -t sysfs sysfs "$root/sys"; mounted="$root/sys $mounted"
  mount --bind /dev "$root/dev"; mounted="$root/dev $mounted"
  mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" \
    && mounted="$root/dev/pts $mounted"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"; mounted="$root/dev/shm $mounted"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case $cmd in
  # The private half of `run` and `create`: already inside the namespace.
  __in-ns)
    root=$1; shift
    chroot_mount
    # Not exec: the trap must run after COMMAND.
    rc=0
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        TERM="${TERM:-dumb}" ${OVS_VHOST_CHROOT_ENV:-} \
        chroot "$root" "$@" || rc=$?
    exit $rc ;;

  run)
    [ $# -ge 2 ] || usage
    root=$1; shift
    [ -f "$root/.ovs-vhost-chroot" ] || { log "$root: not a chroot made by $0 create"; exit 1; }
    exec unshare --mount --propagation private "$0" __in-ns "$root" "$@" ;;

  create)
    suite=trixie
    extra=
    only=
    variant=buildd
    while :; do
      case ${1:-} in
        --suite) suite=$2; shift 2 ;;
        --suite=*) suite=${1#--suite=}; shift ;;
        --extra) extra=$2; shift 2 ;;
        --extra=*) extra=${1#--extra=}; shift ;;
        --only) only=$2; shift 2 ;;
        --only=*) only=${1#--only=}; shift ;;
        *) break ;;
      esac
    done
    [ -z "$extra" ] || pkgs="$pkgs $extra"
    [ -z "$only" ] || { pkgs="$only $extra"; variant=minbase; }
    root=${1:-/var/cache/ovs-vhost/chroot-$suite}
    [ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
    stamp="suite=$suite packages=$(echo $pkgs)"
    [ "$variant" = buildd ] || stamp="$stamp variant=$variant"
    if [ -f "$root/.ovs-vhost-chroot" ] && [ "$(cat "$root/.ovs-vhost-chroot")" = "$stamp" ]; then
      log "using the chroot in $root"
      echo "$root"
      exit 0
    fi
    command -v debootstrap >/dev/null || { log "debootstrap not installed (utilities/install-deps.sh)"; exit 1; }
    # Can the archive be reached?  If not, skip rather than fail.
    if ! python3 -c 'import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=20).read(1)' \
         "$mirror/dists/$suite/InRelease" 2>/dev/null; then
      log "SKIP: $mirror/dists/$suite cannot be reached, and there is no chroot in $root yet"
      exit 77
    fi
    new=$root.new
    # An interrupted creation starts over.  Its mounts, if any, went with
    # its namespace.
    rm -rf "$new"
    mkdir -p "$(dirname "$root")"
    log "debootstrap --variant=$variant $suite $new $mirror (a few minutes, once)"
    debootstrap --variant="$variant" "$suite" "$new" "$mirror" >"$new.log" 2>&1 \
      || { tail -30 "$new.log" >&2; log "debootstrap failed (log: $new.log)"; exit 1; }
    # No daemon starts from package scripts inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
    chmod 755 "$new/usr/sbin/policy-rc.d"
    touch "$new/.ovs-vhost-chroot"
    log "installing: $(echo $pkgs)"
    # shellcheck disable=SC2086
    OVS_VHOST_CHROOT_ENV=DEBIAN_FRONTEND=noninteractive \
      unshare --mount --propagation private "$0" __in-ns "$new" \
        sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $(echo $pkgs)" \
        >>"$new.log" 2>&1 \
      || { tail -30 "$new.log" >&2; log "apt-get install in the chroot failed (log: $new.log)"; exit 1; }
    # The test's own policy-rc.d handling expects none.
    rm -f "$new/usr/sbin/policy-rc.d"
    echo "$stamp" >"$new/.ovs-vhost-chroot"
    rm -rf "$root"
    mv "$new" "$root"
    mv "$new.log" "$root.log"
    log "created $root"
    echo "$root" ;;

  *) usage ;;
esac
