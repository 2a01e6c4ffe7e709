# SPDX-License-Identifier: Apache-2.0
# Tests: C test drivers wrapped by an autotest testsuite, as in Open vSwitch.
#
# `make check` builds the drivers and runs tests/testsuite through
# tests/run-testsuite.sh, which prints "N passed, N failed, N skipped".
# Pass TESTSUITEFLAGS to select tests (-k keyword, test numbers, -v, -d).

TESTSUITE_AT = \
	tests/testsuite.at \
	tests/ovs-macros.at \
	tests/qemu-macros.at \
	tests/guest-mem.at \
	tests/iotlb.at \
	tests/postcopy.at \
	tests/vhost-user.at \
	tests/engine.at \
	tests/datapath.at \
	tests/packed.at \
	tests/fuzz.at \
	tests/adversarial.at \
	tests/concurrency.at \
	tests/dirty-log.at \
	tests/testpmd.at \
	tests/testpmd-datapath.at \
	tests/ovs.at \
	tests/ovn.at \
	tests/pvp.at \
	tests/qemu.at \
	tests/qemu-lifecycle.at \
	tests/qemu-migration.at \
	tests/qemu-iommu.at \
	tests/configure.at

include tests/fuzz/automake.mk

TESTSUITE = $(srcdir)/tests/testsuite
AUTOTEST_PATH = utilities:tests:tests/fuzz
AUTOM4TE = autom4te
AUTOTEST = $(AUTOM4TE) -l autotest

EXTRA_DIST += \
	$(TESTSUITE_AT) \
	$(TESTSUITE) \
	tests/atlocal.in \
	tests/package.m4 \
	tests/run-testsuite.sh \
	tests/testpmd-lib.sh \
	tests/ovs-lib.sh \
	tests/ovn-lib.sh \
	tests/ovn-udp.py \
	tests/pvp-send.py \
	tests/check-all.sh \
	tests/package-test.sh \
	tests/chroot-package-test.sh \
	tests/rpm-test.sh \
	tests/qemu-guest.sh \
	tests/qemu-guest-init.sh \
	tests/qemu-guest-tool.c \
	tests/qemu-guest.py \
	tests/vhost-user-probe.py \
	tests/qemu-lib.sh \
	tests/qemu-migration-control.sh \
	tests/qemu-chroot.sh \
	tests/README-qemu.md
DISTCLEANFILES += tests/atconfig tests/atlocal

# The test drivers link the engine's internal objects directly, so they can
# test modules (guest-mem, the message reader) below the public API.
check_PROGRAMS += tests/test-engine
tests_test_engine_SOURCES = \
	tests/test-adv-sigbus.c \
	tests/test-adv-budget.c \
	tests/test-adversarial.c \
	tests/test-adv-ctrl.c \
	tests/test-adv-stall.c \
	tests/test-concurrency.c \
	tests/test-datapath-buffers.c \
	tests/test-datapath-cold.c \
	tests/test-datapath-fixture.c \
	tests/test-datapath-notify.c \
	tests/test-datapath-queues.c \
	tests/test-datapath-validate.c \
	tests/test-datapath.h \
	tests/test-dirty-log.c \
	tests/test-engine-device.c \
	tests/test-engine-fixture.c \
	tests/test-engine-mem.c \
	tests/test-engine-proto.c \
	tests/test-engine-socket.c \
	tests/test-engine-vring.c \
	tests/test-engine.c \
	tests/test-engine.h \
	tests/test-frontend-mem.c \
	tests/test-frontend-vq.c \
	tests/test-frontend.c \
	tests/test-frontend.h \
	tests/test-guest-mem.c \
	tests/test-iommu.c \
	tests/test-postcopy.c \
	tests/test-iotlb.c \
	tests/test-lifecycle.c \
	tests/test-packed-diff.c \
	tests/test-packed-fixture.c \
	tests/test-packed-notify.c \
	tests/test-packed-order.c \
	tests/test-packed-ring.c \
	tests/test-packed-state.c \
	tests/test-packed-validate.c \
	tests/test-packed.h \
	tests/test-util.c \
	tests/test-util.h \
	tests/test-vhost-user.c
tests_test_engine_LDADD = lib/libovs-vhost-core.la

# `make soak`: SOAK_TIME seconds (default 60) of traffic between two ports
# while their frontends disconnect and come back every 2 s (the "soak"
# test of tests/test-adversarial.c).  Meant for the ASan build, where a
# sanitizer report ends it; ASan's quarantine is capped so that the
# resident-set bound means something.
SOAK_TIME = 60
soak: tests/test-engine
	SOAK_TIME='$(SOAK_TIME)' \
	ASAN_OPTIONS="$${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:quarantine_size_mb=16}" \
	UBSAN_OPTIONS="$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
	  tests/test-engine soak
.PHONY: soak

# `make bench-hostile`: a receive burst into a hostile guest's ring
# against one into an ordinary ring, ns side by side, both ring layouts,
# queue sizes 256 and 1024 (the "adv-budget-bench" test of
# tests/test-adv-budget.c; the work budget of lib/virtq-segs.h keeps the
# ratio at 2 or less).
bench-hostile: tests/test-engine
	tests/test-engine adv-budget-bench
.PHONY: bench-hostile

# `make bench-iommu`: cycles per packet of a 32-packet burst without an
# IOMMU and with one (VIRTIO_F_IOMMU_PLATFORM, one IOTLB entry per page of
# buffers), side by side, both ring layouts and directions (the
# "iommu-bench" test of tests/test-iommu.c).
bench-iommu: tests/test-engine
	tests/test-engine iommu-bench
.PHONY: bench-iommu

$(srcdir)/tests/package.m4: $(top_srcdir)/configure.ac
	$(AM_V_GEN):;{ \
	  echo '# Signature of the current package.' && \
	  echo 'm4_define([AT_PACKAGE_NAME],      [$(PACKAGE_NAME)])' && \
	  echo 'm4_define([AT_PACKAGE_TARNAME],   [$(PACKAGE_TARNAME)])' && \
	  echo 'm4_define([AT_PACKAGE_VERSION],   [$(PACKAGE_VERSION)])' && \
	  echo 'm4_define([AT_PACKAGE_STRING],    [$(PACKAGE_STRING)])' && \
	  echo 'm4_define([AT_PACKAGE_BUGREPORT], [$(PACKAGE_BUGREPORT)])'; \
	} >'$@'

$(TESTSUITE): $(srcdir)/tests/package.m4 $(TESTSUITE_AT)
	$(AM_V_GEN)$(AUTOTEST) -I '$(srcdir)/tests' -o $@.tmp $@.at && mv $@.tmp $@

check-local: tests/atconfig tests/atlocal $(TESTSUITE) $(check_PROGRAMS) $(bin_PROGRAMS)
	$(SHELL) '$(srcdir)/tests/run-testsuite.sh' '$(TESTSUITE)' -C tests \
	  AUTOTEST_PATH='$(AUTOTEST_PATH)' $(TESTSUITEFLAGS)

clean-local:
	test ! -f '$(TESTSUITE)' || $(SHELL) '$(TESTSUITE)' -C tests --clean
