# SPDX-License-Identifier: Apache-2.0
# ovs-vswitchd with the vhost-user provider: Open vSwitch's own vswitchd
# sources, referenced in the OVS tree given to configure (--with-ovs-source)
# through the thin wrappers here, linked with OVS's libraries and with
# lib/netdev-vhost*.c.  Built only when configure found an OVS tree.

if HAVE_OVS
vswitchddir = $(prefix)/lib/openvswitch-switch-vhost
vswitchd_PROGRAMS = vswitchd/ovs-vswitchd-vhost

# OVS's config.h and headers, not ours: the sources here include <config.h>
# and OVS's "util.h", "packets.h", ...  Our public header comes from
# include/ only.
# Our tree comes last, so that "lib/util.h" is OVS's and "lib/netdev-vhost.h"
# ours.
OVS_CPPFLAGS = -I$(top_srcdir)/include \
	-I$(OVSBUILDDIR) -I$(OVSBUILDDIR)/include -I$(OVSBUILDDIR)/lib \
	-I$(OVSDIR) -I$(OVSDIR)/include -I$(OVSDIR)/lib -I$(top_srcdir) \
	$(OVS_COMPAT_DEFS)
OVS_LIBS = $(OVSBUILDDIR)/ofproto/libofproto.la \
	$(OVSBUILDDIR)/lib/libsflow.la \
	$(OVSBUILDDIR)/lib/libopenvswitch.la

# The provider, with our warnings.  A static convenience library: bridge.c
# refers to netdev_vhost_set_other_config(), which pulls in the object whose
# constructor registers the classes.
noinst_LTLIBRARIES += lib/libnetdev-vhost.la
lib_libnetdev_vhost_la_SOURCES = \
	lib/netdev-vhost.c \
	lib/netdev-vhost.h \
	lib/netdev-vhost-compat.h \
	lib/netdev-vhost-datapath.c \
	lib/netdev-vhost-private.h \
	lib/netdev-vhost-stats.c \
	lib/netdev-vhost-appctl.c \
	lib/netdev-vhost-engine.c
lib_libnetdev_vhost_la_CPPFLAGS = $(OVS_CPPFLAGS)
lib_libnetdev_vhost_la_CFLAGS = $(OVS_VHOST_STD_CFLAGS) $(WARNING_CFLAGS) \
	$(WERROR_CFLAGS)

# OVS's own files, with OVS's flags' spirit: no -Werror on code we do not
# own.
vswitchd_ovs_vswitchd_vhost_SOURCES = \
	vswitchd/ovs-vswitchd-vhost.c \
	vswitchd/ovs-bridge.c \
	vswitchd/ovs-system-stats.c
vswitchd_ovs_vswitchd_vhost_CPPFLAGS = $(OVS_CPPFLAGS)
vswitchd_ovs_vswitchd_vhost_CFLAGS = $(OVS_VHOST_STD_CFLAGS)
vswitchd_ovs_vswitchd_vhost_LDADD = lib/libnetdev-vhost.la \
	lib/libovs-vhost-core.la $(OVS_LIBS)
endif

EXTRA_DIST += \
	vswitchd/automake.mk \
	vswitchd/ovs-bridge.c \
	vswitchd/ovs-system-stats.c \
	vswitchd/ovs-vswitchd-vhost.c \
	lib/netdev-vhost.c \
	lib/netdev-vhost.h \
	lib/netdev-vhost-compat.h \
	lib/netdev-vhost-datapath.c \
	lib/netdev-vhost-private.h \
	lib/netdev-vhost-stats.c \
	lib/netdev-vhost-appctl.c \
	lib/netdev-vhost-engine.c
