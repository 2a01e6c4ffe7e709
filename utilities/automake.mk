# SPDX-License-Identifier: Apache-2.0
# Utilities built on the engine.

bin_PROGRAMS += utilities/ovs-vhost-fwd
utilities_ovs_vhost_fwd_SOURCES = utilities/ovs-vhost-fwd.c
# Linked with the engine statically, so the build tree runs the real
# binary (no libtool wrapper between a test and the pid it signals).
utilities_ovs_vhost_fwd_LDADD = lib/libovs-vhost-core.la

EXTRA_DIST += \
	utilities/ovs-vhost-demo.sh \
	utilities/ovs-vhost-demo-lib.sh \
	utilities/ovs-vhost-ovn-demo.sh \
	utilities/install-deps.sh \
	utilities/ovs-vhost-bench.sh \
	utilities/ovs-vhost-build-ovs.sh \
	utilities/ovs-vhost-chroot.sh \
	utilities/ovs-vhost-ovs-bench.sh \
	utilities/ovs-vhost-anchor13.sh \
	utilities/ovs-vhost-ovn.sh \
	docs/benchmark.md \
	docs/benchmark-ovs.md \
	docs/benchmark-pvp.md \
	docs/bench-pvp.png \
	docs/ovn-plan.md \
	docs/bench.png

# `make bench`: ovs-vhost-fwd against DPDK's vhost PMD, with testpmd's
# virtio-user as the frontend (docs/benchmark.md).  Not a test: it takes a
# few minutes and its figures depend on the machine.  Results go to
# bench/ in the build tree; BENCHFLAGS passes options to the script, e.g.
# `make bench BENCHFLAGS='--reps 5 --duration 10'`.
bench: utilities/ovs-vhost-fwd
	$(SHELL) '$(srcdir)/utilities/ovs-vhost-bench.sh' \
	  --fwd '$(abs_builddir)/utilities/ovs-vhost-fwd' \
	  --out '$(abs_builddir)/bench' $(BENCHFLAGS)
.PHONY: bench

# `make bench-ovs`: this build's ovs-vswitchd against Debian's OVS-DPDK,
# testpmd's virtio-user as the guests (docs/benchmark.md).  Needs the
# build configured --with-ovs-source.
if HAVE_OVS
bench-ovs: vswitchd/ovs-vswitchd-vhost
	$(SHELL) '$(srcdir)/utilities/ovs-vhost-ovs-bench.sh' \
	  --vswitchd '$(abs_builddir)/vswitchd/ovs-vswitchd-vhost' \
	  --ovs-build '$(OVSBUILDDIR)' \
	  --out '$(abs_builddir)/bench-ovs' $(BENCHFLAGS)

# `make bench-pvp`: the same switches with a veth as the physical port
# (PVP: AF_XDP port -> OVS -> guest -> OVS -> AF_XDP port), docs/benchmark-pvp.md.
bench-pvp: vswitchd/ovs-vswitchd-vhost
	$(SHELL) '$(srcdir)/utilities/ovs-vhost-ovs-bench.sh' --topology pvp \
	  --vswitchd '$(abs_builddir)/vswitchd/ovs-vswitchd-vhost' \
	  --ovs-build '$(OVSBUILDDIR)' \
	  --out '$(abs_builddir)/bench-pvp' $(BENCHFLAGS)
else
bench-ovs bench-pvp:
	@echo "$@: configure --with-ovs-source=DIR first" >&2; exit 1
endif
.PHONY: bench-ovs bench-pvp
