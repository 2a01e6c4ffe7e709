# The engine: libovs-vhost.  No dependency on Open vSwitch or DPDK.

# All of the engine, as a convenience library: the installed library
# exports only the public vhost_* API; the tests link this one to reach the
# modules below it.
noinst_LTLIBRARIES = lib/libovs-vhost-core.la
lib_libovs_vhost_core_la_SOURCES = \
	lib/guest-mem.c \
	lib/guest-mem.h \
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
	lib/vhost-log.c \
	lib/vhost-log.h \
	lib/vhost-port.c \
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
	lib/virtq-packed.c \
	lib/virtq-packed.h \
	lib/virtq-split.c \
	lib/virtq-split.h \
	lib/virtq-segs.h \
	lib/virtq.h

lib_LTLIBRARIES += lib/libovs-vhost.la
lib_libovs_vhost_la_SOURCES =
lib_libovs_vhost_la_LIBADD = lib/libovs-vhost-core.la
lib_libovs_vhost_la_LDFLAGS = -version-info 0:0:0 \
	-export-symbols-regex '^vhost_'

pkginclude_HEADERS += include/ovs-vhost/vhost.h
pkgconfig_DATA += lib/libovs-vhost.pc
EXTRA_DIST += lib/libovs-vhost.pc.in
