# Utilities built on the engine.

bin_PROGRAMS += utilities/ovs-vhost-fwd
utilities_ovs_vhost_fwd_SOURCES = utilities/ovs-vhost-fwd.c
# Linked with the engine statically, so the build tree runs the real
# binary (no libtool wrapper between a test and the pid it signals).
utilities_ovs_vhost_fwd_LDADD = lib/libovs-vhost-core.la

EXTRA_DIST += utilities/ovs-vhost-demo.sh utilities/install-deps.sh
