# Utilities built on the engine.

bin_PROGRAMS += utilities/ovs-vhost-fwd
utilities_ovs_vhost_fwd_SOURCES = utilities/ovs-vhost-fwd.c
utilities_ovs_vhost_fwd_LDADD = lib/libovs-vhost.la

EXTRA_DIST += utilities/ovs-vhost-demo.sh utilities/install-deps.sh
