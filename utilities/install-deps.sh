#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs what building and testing ovs-vhost needs on Debian 12, as root.
# Safe to run again: packages already there are skipped by apt-get.
set -e

# openvswitch-source, libssl-dev, libcap-ng-dev: Open vSwitch 3.1, built
# once by ovs-vhost-build-ovs.sh for the OVS provider (with the libraries
# Debian's openvswitch-switch is built with: unbound, libxdp/libbpf, numa;
# Debian 13's Open vSwitch 3.5, fetched by ovs-vhost-build-ovs.sh --version
# 3.5, configures and builds with the same set on Debian 12);
# iputils-ping for the OVS tests' pings between namespaces; dpkg-dev,
# debhelper, lintian, man-db and groff-base for the package test
# (tests/package-test.sh, which installs openvswitch-switch itself if it is
# missing) and the man pages' check; qemu-system-x86, busybox-static, kmod,
# xz-utils and libc6-dev (a static libc) for the QEMU guest tests
# (tests/qemu-guest.sh builds the guest's initramfs); rpm and cpio for
# the RPM test (tests/rpm-test.sh, rpmbuild -ta on the release tarball,
# then rpm2cpio | cpio to look into a package: rpm does not depend on
# cpio) and
# debootstrap for the Debian 13 package test's chroot
# (tests/chroot-package-test.sh).
pkgs="autoconf automake libtool pkg-config make gcc clang gnuplot-nox
      libclang-rt-14-dev dpdk dpdk-dev procps iproute2 python3
      openvswitch-source libssl-dev libcap-ng-dev iputils-ping
      libunbound-dev libxdp-dev libbpf-dev libnuma-dev
      dpkg-dev debhelper lintian man-db groff-base
      qemu-system-x86 busybox-static kmod xz-utils libc6-dev
      rpm cpio debootstrap"

missing=
for p in $pkgs; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' \
    || missing="$missing $p"
done
if [ -z "$missing" ]; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: need root to install:$missing" >&2
  exit 1
fi
echo "install-deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
