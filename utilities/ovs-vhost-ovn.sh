#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Provides Debian's OVN binaries (ovn-northd, ovn-controller, ovn-nbctl,
# ...) and schemas without installing them, and prints the directory.
#
#   utilities/ovs-vhost-ovn.sh [CACHE-DIR]
#
# The candidate version of ovn-host (23.03.1-1~deb12u2 on Debian 12) is
# fetched once with `apt-get download ovn-common ovn-central ovn-host` and
# unpacked with dpkg-deb -x into CACHE-DIR/ovn-VERSION, whose path is
# printed; the programs are in its usr/bin, the schemas in usr/share/ovn.
# CACHE-DIR defaults to $OVS_VHOST_OVS_CACHE, then /var/cache/ovs-vhost.
#
# Why not `apt-get install`: ovn-host and ovn-central depend on
# openvswitch-switch/openvswitch-common, and an installed system OVS
# changes what tests/package-test.sh does (docs/ovn-plan.md, trap 1).  The
# unpacked programs run against the host's libraries; the OVS tools they
# need (ovsdb-server, ovs-vsctl, ...) come from the OVS build tree.
#
# Exit status: 0 with the directory printed; 77 (autotest's "skip") when
# there is no cache and the archive cannot be reached, or the programs
# cannot run here; 1 on other errors.
set -e

log () { echo "ovs-vhost-ovn: $*" >&2; }

cache=${1:-${OVS_VHOST_OVS_CACHE:-/var/cache/ovs-vhost}}

# The version apt would install; without package lists, the newest cache.
version=$(LC_ALL=C apt-cache policy ovn-host 2>/dev/null \
          | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }')
if [ -z "$version" ]; then
  dir=$(ls -d "$cache"/ovn-*/usr/bin/ovn-controller 2>/dev/null | sort -V | tail -1)
  if [ -z "$dir" ]; then
    log "no ovn-host in apt's lists and no cache in $cache"
    exit 77
  fi
  dir=${dir%/usr/bin/ovn-controller}
else
  dir=$cache/ovn-$version
fi

# ovs_ovn_usable DIR: every program and schema the tests use is there and
# the programs find their libraries.
ovs_ovn_usable () {
  for f in bin/ovn-northd bin/ovn-controller bin/ovn-nbctl bin/ovn-sbctl \
           bin/ovn-appctl share/ovn/ovn-nb.ovsschema share/ovn/ovn-sb.ovsschema; do
    [ -e "$1/usr/$f" ] || return 1
  done
  "$1/usr/bin/ovn-controller" --version >/dev/null 2>&1 \
    && "$1/usr/bin/ovn-northd" --version >/dev/null 2>&1
}

if [ -d "$dir" ]; then
  if ovs_ovn_usable "$dir"; then echo "$dir"; exit 0; fi
  log "$dir is there but its programs do not run here"
  exit 77
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/ovn-$version.new.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; as root, apt's
# sandbox user may not write there, which it only warns about.
if ! (cd "$tmp" && apt-get download -q ovn-common="$version" \
        ovn-central="$version" ovn-host="$version") >"$tmp/download.log" 2>&1; then
  sed 's/^/  /' "$tmp/download.log" >&2
  log "cannot download OVN $version from the archive, and no cache"
  exit 77
fi
mkdir "$tmp/root"
for deb in "$tmp"/*.deb; do
  dpkg-deb -x "$deb" "$tmp/root"
done
if ! ovs_ovn_usable "$tmp/root"; then
  log "OVN $version unpacked, but its programs do not run here:"
  ldd "$tmp/root/usr/bin/ovn-controller" 2>&1 | grep 'not found' >&2 || true
  exit 77
fi
# Atomic: a second run at the same time finds the directory complete, or
# does the work again and loses the rename.
mv -T "$tmp/root" "$dir" 2>/dev/null || [ -d "$dir" ]
echo "$dir"
