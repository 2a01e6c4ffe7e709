# SPDX-License-Identifier: Apache-2.0
# The engine: libovs-vhost.  No dependency on Open vSwitch or DPDK.

# All of the engine, as a convenience library: the installed library
# exports only the public vhost_* API; the tests link this one to reach the
# modules below it.
noinst_LTLIBRARIES = lib/libovs-vhost-core.la
lib_libovs_vhost_core_la_SOURCES = \
	lib/guest-mem.c \
	lib/guest-mem.h \
	lib/guest-mem-guard.c \
	lib/guest-mem-guard.h \
	lib/util.h \
	lib/vhost-cold.c \
	lib/vhost-cold.h \
	lib/vhost-datapath.c \
	lib/vhost-dev.c \
	lib/vhost-dev.h \
	lib/vhost-dirty-log.c \
	lib/vhost-dirty-log.h \
	lib/vhost-engine.c \
	lib/vhost-engine.h \
	lib/vhost-features.c \
	lib/vhost-iotlb.c \
	lib/vhost-iotlb.h \
	lib/vhost-log.c \
	lib/vhost-log.h \
	lib/vhost-port.c \
	lib/vhost-postcopy.c \
	lib/vhost-postcopy.h \
	lib/vhost-port.h \
	lib/vhost-socket.c \
	lib/vhost-socket.h \
	lib/vhost-user-msg.c \
	lib/vhost-user-msg.h \
	lib/vhost-user.c \
	lib/vhost-user.h \
	lib/virtio-net-hdr.h \
	lib/virtio-ring-packed.h \
	lib/virtio-ring.h \
	lib/virtio.h \
	lib/virtq.c \
	lib/virtq-iommu.c \
	lib/virtq-iommu.h \
	lib/virtq-packed.c \
	lib/virtq-packed.h \
	lib/virtq-poslog.c \
	lib/virtq-poslog.h \
	lib/virtq-split.c \
	lib/virtq-split.h \
	lib/virtq-segs.h \
	lib/virtq.h

lib_LTLIBRARIES += lib/libovs-vhost.la
lib_libovs_vhost_la_SOURCES =
lib_libovs_vhost_la_LIBADD = lib/libovs-vhost-core.la
# Exports exactly the functions include/ovs-vhost/vhost.h declares, listed
# in lib/libovs-vhost.sym: the engine's internal modules share the vhost_
# prefix, and a prefix regex would make them part of the soname's ABI (and
# of debian/libovs-vhost0.symbols).  `make check-exports` (part of `make
# check`) fails when the list, the header and the Debian symbols file
# drift apart.
lib_libovs_vhost_la_LDFLAGS = -version-info 0:0:0 \
	-export-symbols $(srcdir)/lib/libovs-vhost.sym
EXTRA_lib_libovs_vhost_la_DEPENDENCIES = lib/libovs-vhost.sym

check-exports: lib/libovs-vhost.la
	@LC_ALL=C; export LC_ALL; \
	grep -oE '\bvhost_[a-z0-9_]+ *\(' $(srcdir)/include/ovs-vhost/vhost.h \
	  | sed 's/ *($$//' | grep -vx 'vhost_log_handler' | sort -u > check-exports.h; \
	sort -u $(srcdir)/lib/libovs-vhost.sym > check-exports.sym; \
	$(NM) -D --defined-only lib/.libs/libovs-vhost.so \
	  | awk '$$2 == "T" { print $$3 }' | sort -u > check-exports.so; \
	fail=0; \
	if ! cmp -s check-exports.h check-exports.sym; then \
	  echo "lib/libovs-vhost.sym differs from the header's functions:"; \
	  diff check-exports.h check-exports.sym; fail=1; fi; \
	if ! cmp -s check-exports.sym check-exports.so; then \
	  echo "libovs-vhost.so exports differ from lib/libovs-vhost.sym:"; \
	  diff check-exports.sym check-exports.so; fail=1; fi; \
	sed -n 's/^ \([a-z0-9_]*\)@Base .*/\1/p' \
	  $(srcdir)/debian/libovs-vhost0.symbols | sort -u > check-exports.deb; \
	if ! cmp -s check-exports.sym check-exports.deb; then \
	  echo "debian/libovs-vhost0.symbols differs from lib/libovs-vhost.sym:"; \
	  diff check-exports.sym check-exports.deb; fail=1; fi; \
	rm -f check-exports.h check-exports.sym check-exports.so check-exports.deb; \
	exit $$fail
check-local: check-exports
.PHONY: check-exports

pkginclude_HEADERS += include/ovs-vhost/vhost.h
pkgconfig_DATA += lib/libovs-vhost.pc
EXTRA_DIST += lib/libovs-vhost.pc.in lib/libovs-vhost.sym
