#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds Open vSwitch from Debian's openvswitch-source package, once, and
# prints the directory of the cached build on stdout.
#
#   utilities/ovs-vhost-build-ovs.sh [--version 3.1|3.5] [CACHE-DIR]
#
# --version 3.1 (the default): Debian 12's OVS.  The tarball
# /usr/src/openvswitch/openvswitch.tar.gz of the installed
# openvswitch-source is unpacked into CACHE-DIR/openvswitch-VERSION-KEY.
#
# --version 3.5: Debian 13's OVS.  Its openvswitch-source holds the
# unpacked tree under /usr/src/openvswitch, not a tarball.  The tree comes
# from, in this order: the .deb named by $OVS_VHOST_OVS_DEB; the installed
# openvswitch-source when it is 3.5 (on Debian 13); the .deb cached in
# CACHE-DIR/downloads; or, once, `apt-get download` from Debian 13
# (trixie) with a sources list and package lists of its own in a private
# directory (the system's apt configuration is not touched), cached in
# CACHE-DIR/downloads so that later runs need no network.  The tree is
# copied into CACHE-DIR/openvswitch-VERSION-KEY.
#
# Either way the tree is configured the way Debian configures its
# openvswitch-switch (so the binary we build can stand in for Debian's
# ovs-vswitchd), and what ovs-vhost uses of it is built (OVS_TARGETS
# below: the libraries ovs-vswitchd-vhost links, the stock ovs-vswitchd
# configure looks for, and the daemons and tools the tests, the demo and
# the benchmarks run), not OVS's own test programs, vtep and the rest of
# `make all`.  A cached build that lacks one of them (a full build has
# them all) gets it made there.  KEY is a hash of the source (the tarball, or
# for 3.5 every file of the tree), the configure options and compiler
# flags, and which of the optional libraries OVS looks for are installed:
# a new package version, new options or another set of libraries give a
# new directory, and an unchanged one is reused as is.  CACHE-DIR defaults
# to $OVS_VHOST_OVS_CACHE, then /var/cache/ovs-vhost.  The tests and the
# Debian package (debian/rules) build the same tree, so one build serves
# both.
#
# Then configure ovs-vhost with --with-ovs-source=<printed directory>.
#
# Environment: OVS_VHOST_OVS_JOBS (make -j, default: the number of CPUs),
# OVS_VHOST_OVS_TARBALL (another openvswitch.tar.gz, for 3.1),
# OVS_VHOST_OVS_DEB (an openvswitch-source .deb of 3.5 to use),
# OVS_VHOST_OVS_MIRROR (the Debian mirror for 3.5's download, default
# http://deb.debian.org/debian).
set -e

log () { echo "ovs-vhost-build-ovs: $*" >&2; }

want=3.1
case $1 in
  --version) want=$2; shift 2 ;;
  --version=*) want=${1#--version=}; shift ;;
  -*) log "usage: $0 [--version 3.1|3.5] [CACHE-DIR]"; exit 1 ;;
esac
case $want in
  3.1|3.5) ;;
  *) log "OVS $want: only 3.1 (Debian 12) and 3.5 (Debian 13) are known"
     exit 1 ;;
esac
cache=${1:-${OVS_VHOST_OVS_CACHE:-/var/cache/ovs-vhost}}
jobs=${OVS_VHOST_OVS_JOBS:-$(nproc 2>/dev/null || echo 2)}

# What ovs-vhost uses of an OVS build tree: vswitchd/automake.mk links the
# three libraries, m4/ovs-vhost.m4 checks for the libraries and the stock
# ovs-vswitchd, and tests/ovs-lib.sh, tests/ovn-lib.sh, the demo and the
# benchmarks run the rest (from $OVS_BUILD; vswitchd/vswitch.ovsschema is
# a source file).
OVS_TARGETS="lib/libopenvswitch.la lib/libsflow.la ofproto/libofproto.la
  vswitchd/ovs-vswitchd ovsdb/ovsdb-server ovsdb/ovsdb-tool
  utilities/ovs-vsctl utilities/ovs-appctl utilities/ovs-ofctl"

# make_targets: builds $OVS_TARGETS in the configured tree in the current
# directory, output in build.log.  Automake's BUILT_SOURCES (generated
# headers such as include/odp-netlink.h, which nothing declares as a
# prerequisite of the objects that include them) are made first: only
# `make all` would make them by itself.  The list is read with the make
# flags of a caller (debian/rules) cleared: "Entering directory" lines
# would end up in it.
make_targets () {
  built=$(printf 'ovs-vhost-built-sources:\n\t@echo $(BUILT_SOURCES)\n' \
          | MAKEFLAGS= MAKELEVEL= make -s --no-print-directory -f Makefile -f - \
              ovs-vhost-built-sources) || return 1
  # shellcheck disable=SC2086
  { make -j"$jobs" $built && make -j"$jobs" $OVS_TARGETS; } >>build.log 2>&1
}

# Debian's configure line for openvswitch-switch (without DPDK; the same
# in Debian 12 and 13), and its hardening flags (dpkg-buildflags with
# hardening=+all, as debian/rules has it), without -ffile-prefix-map,
# which names the current directory.
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
installed=$(dpkg-query -W -f='${Version}' openvswitch-source 2>/dev/null || echo unknown)

tmp=
trap 'test -z "$tmp" || rm -rf "$tmp"' EXIT

# Downloads Debian 13's openvswitch-source .deb into "$cache/downloads",
# with apt's lists and sources in the private directory "$tmp".
download_deb () {
  mirror=${OVS_VHOST_OVS_MIRROR:-http://deb.debian.org/debian}
  log "downloading openvswitch-source from Debian 13 (trixie), $mirror"
  mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" \
           "$cache/downloads"
  echo "deb $mirror trixie main" >"$tmp/apt/sources.list"
  set -- -o Dir::Etc::sourcelist="$tmp/apt/sources.list" \
         -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$tmp/apt/lists" \
         -o Dir::Cache="$tmp/apt/cache" -o APT::Sandbox::User=root
  apt-get -q "$@" update >"$tmp/apt/update.log" 2>&1 \
    || { tail -20 "$tmp/apt/update.log" >&2; exit 1; }
  # Pinned to trixie's version: the only suite in this sources list.
  (cd "$cache/downloads" && apt-get -q "$@" download openvswitch-source/trixie) \
    >"$tmp/apt/download.log" 2>&1 \
    || { tail -20 "$tmp/apt/download.log" >&2; exit 1; }
}

# Prints the newest openvswitch-source 3.5 .deb in "$cache/downloads".
cached_deb () {
  find "$cache/downloads" -maxdepth 1 -name 'openvswitch-source_3.5.*_all.deb' \
       2>/dev/null | sort -V | tail -1
}

tree=
if [ "$want" = 3.1 ]; then
  tarball=${OVS_VHOST_OVS_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}
  if [ ! -r "$tarball" ]; then
    case $installed in
      3.5.*) log "$tarball not found: the installed openvswitch-source is $installed, use --version 3.5" ;;
      *) log "$tarball not found: install Debian 12's openvswitch-source package" ;;
    esac
    exit 1
  fi
  version=$installed
  key=$( (cat "$tarball"; echo "$config_opts $config_cflags"; echo "$libs") \
        | sha256sum | cut -c1-12)
else
  tmp=$(mktemp -d)
  deb=${OVS_VHOST_OVS_DEB:-}
  case $installed in
    3.5.*) [ -n "$deb" ] || [ ! -f /usr/src/openvswitch/configure ] \
             || tree=/usr/src/openvswitch ;;
  esac
  if [ -z "$deb" ] && [ -z "$tree" ]; then
    deb=$(cached_deb)
    if [ -z "$deb" ]; then
      download_deb
      deb=$(cached_deb)
      [ -n "$deb" ] || { log "no openvswitch-source 3.5 in trixie"; exit 1; }
    fi
  fi
  if [ -n "$deb" ]; then
    version=$(dpkg-deb -f "$deb" Version)
    case $version in
      3.5.*) ;;
      *) log "$deb is openvswitch-source $version, not 3.5"; exit 1 ;;
    esac
    dpkg-deb -x "$deb" "$tmp/deb"
    tree=$tmp/deb/usr/src/openvswitch
  else
    version=$installed
  fi
  if [ ! -f "$tree/configure" ]; then
    log "$tree: no Open vSwitch source tree"
    exit 1
  fi
  # The same tree gives the same key, whichever way it came.
  key=$( ( (cd "$tree" && find . -type f | LC_ALL=C sort | xargs sha256sum);
           echo "$config_opts $config_cflags"; echo "$libs") \
        | sha256sum | cut -c1-12)
fi
dir=$cache/openvswitch-$version-$key

if [ -f "$dir/.ovs-vhost-built" ]; then
  missing=
  for t in $OVS_TARGETS; do
    [ -e "$dir/$t" ] || missing="$missing $t"
  done
  if [ -n "$missing" ]; then
    log "making$missing in the cached build in $dir"
    (cd "$dir" && make_targets) || { tail -40 "$dir/build.log" >&2; exit 1; }
  fi
  log "using the cached build in $dir"
  echo "$dir"
  exit 0
fi

log "building Open vSwitch $version in $dir (takes a few minutes, once)"
mkdir -p "$cache"
# A half-built directory (no stamp) from an interrupted run starts over.
rm -rf "$dir"
mkdir -p "$dir"
if [ "$want" = 3.1 ]; then
  tar -xzf "$tarball" -C "$dir" --strip-components=1
else
  cp -a "$tree/." "$dir/"
fi
(
  cd "$dir"
  # shellcheck disable=SC2086
  ./configure -q $config_opts CFLAGS="$config_cflags" >configure.log 2>&1 \
    || { tail -30 configure.log >&2; exit 1; }
  : >build.log
  make_targets || { tail -40 build.log >&2; exit 1; }
)
touch "$dir/.ovs-vhost-built"
log "built $dir"
echo "$dir"
