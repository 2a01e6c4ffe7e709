#! /bin/sh
# Builds Open vSwitch from Debian's openvswitch-source package, once, and
# prints the directory of the cached build on stdout.
#
#   utilities/ovs-vhost-build-ovs.sh [CACHE-DIR]
#
# The tarball /usr/src/openvswitch/openvswitch.tar.gz is unpacked into
# CACHE-DIR/openvswitch-VERSION-KEY, configured the way Debian configures
# its openvswitch-switch (so the binary we build can stand in for Debian's
# ovs-vswitchd) and built.  KEY is a hash of the tarball and the configure
# options: a new package version or new options give a new directory, and
# an unchanged one is reused as is.  CACHE-DIR defaults to
# $OVS_VHOST_OVS_CACHE, then /var/cache/ovs-vhost.
#
# Then configure ovs-vhost with --with-ovs-source=<printed directory>.
set -e

tarball=${OVS_VHOST_OVS_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}
cache=${1:-${OVS_VHOST_OVS_CACHE:-/var/cache/ovs-vhost}}
jobs=$(nproc 2>/dev/null || echo 2)

# Debian's configure line for openvswitch-switch (without DPDK).
config_opts="--prefix=/usr --localstatedir=/var --sysconfdir=/etc --enable-ssl"
config_cflags="-g -O2 -fPIC"

log () { echo "ovs-vhost-build-ovs: $*" >&2; }

if [ ! -r "$tarball" ]; then
  log "$tarball not found: install Debian's openvswitch-source package"
  exit 1
fi

version=$(dpkg-query -W -f='${Version}' openvswitch-source 2>/dev/null || echo unknown)
key=$( (cat "$tarball"; echo "$config_opts $config_cflags") | sha256sum | cut -c1-12)
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
