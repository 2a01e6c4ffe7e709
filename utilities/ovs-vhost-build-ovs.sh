#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds Open vSwitch from Debian's openvswitch-source package, once, and
# prints the directory of the cached build on stdout.
#
#   utilities/ovs-vhost-build-ovs.sh [CACHE-DIR]
#
# The tarball /usr/src/openvswitch/openvswitch.tar.gz is unpacked into
# CACHE-DIR/openvswitch-VERSION-KEY, configured the way Debian configures
# its openvswitch-switch (so the binary we build can stand in for Debian's
# ovs-vswitchd) and built.  KEY is a hash of the tarball, the configure
# options and compiler flags, and which of the optional libraries OVS
# looks for are installed: a new package version, new options or another
# set of libraries give a new directory, and an unchanged one is reused as
# is.  CACHE-DIR defaults to $OVS_VHOST_OVS_CACHE, then
# /var/cache/ovs-vhost.  The tests and the Debian package (debian/rules)
# build the same tree, so one build serves both.
#
# Then configure ovs-vhost with --with-ovs-source=<printed directory>.
#
# Environment: OVS_VHOST_OVS_JOBS (make -j, default: the number of CPUs),
# OVS_VHOST_OVS_TARBALL (another openvswitch.tar.gz).
set -e

tarball=${OVS_VHOST_OVS_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}
cache=${1:-${OVS_VHOST_OVS_CACHE:-/var/cache/ovs-vhost}}
jobs=${OVS_VHOST_OVS_JOBS:-$(nproc 2>/dev/null || echo 2)}

# Debian's configure line for openvswitch-switch (without DPDK), and its
# hardening flags (dpkg-buildflags with hardening=+all, as debian/rules
# has it), without -ffile-prefix-map, which names the current directory.
# -fPIC: the static libraries go into position-independent executables.
config_opts="--prefix=/usr --localstatedir=/var --sysconfdir=/etc --enable-ssl"
config_cflags="-g -O2 -fPIC"
if command -v dpkg-buildflags >/dev/null 2>&1; then
  config_cflags="$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CPPFLAGS) $(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get CFLAGS) -fPIC"
  config_cflags=$(printf '%s\n' "$config_cflags" | sed 's/ *-ffile-prefix-map=[^ ]*//g')
fi
# The optional libraries OVS's configure picks up when present (Debian
# builds openvswitch-switch with all of them).
libs=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' libssl-dev \
       libcap-ng-dev libunbound-dev libxdp-dev libbpf-dev libnuma-dev \
       2>/dev/null | awk '$1 == "ii" { printf "%s ", $2 }')

log () { echo "ovs-vhost-build-ovs: $*" >&2; }

if [ ! -r "$tarball" ]; then
  log "$tarball not found: install Debian's openvswitch-source package"
  exit 1
fi

version=$(dpkg-query -W -f='${Version}' openvswitch-source 2>/dev/null || echo unknown)
key=$( (cat "$tarball"; echo "$config_opts $config_cflags"; echo "$libs") \
      | sha256sum | cut -c1-12)
dir=$cache/openvswitch-$version-$key

if [ -f "$dir/.ovs-vhost-built" ]; then
  log "using the cached build in $dir"
  echo "$dir"
  exit 0
fi

log "building Open vSwitch $version in $dir (takes a few minutes, once)"
mkdir -p "$cache"
# A half-built directory (no stamp) from an interrupted run starts over.
rm -rf "$dir"
mkdir -p "$dir"
tar -xzf "$tarball" -C "$dir" --strip-components=1
(
  cd "$dir"
  # shellcheck disable=SC2086
  ./configure -q $config_opts CFLAGS="$config_cflags" >configure.log 2>&1 \
    || { tail -30 configure.log >&2; exit 1; }
  make -j"$jobs" >build.log 2>&1 \
    || { tail -40 build.log >&2; exit 1; }
)
touch "$dir/.ovs-vhost-built"
log "built $dir"
echo "$dir"
