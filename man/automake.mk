.\" SPDX-License-Identifier: Apache-2.0
# Manual pages.  man/*.in are roff; configure substitutes the version
# (AC_CONFIG_FILES), so the pages are made in the build directory.

man_MANS = man/ovs-vhost.7 man/ovs-vhost-fwd.1
if HAVE_OVS
man_MANS += man/ovs-vswitchd-vhost.8
endif

MAN_IN = \
	man/ovs-vhost.7.in \
	man/ovs-vhost-fwd.1.in \
	man/ovs-vswitchd-vhost.8.in
EXTRA_DIST += $(MAN_IN)

# Every page formats without a groff warning (lintian runs the same check
# on the packages).
check-manpages:
	@command -v groff >/dev/null || { echo "check-manpages: no groff, skipped"; exit 0; }; \
	fail=0; for p in man/ovs-vhost.7 man/ovs-vhost-fwd.1 \
	                  man/ovs-vswitchd-vhost.8; do \
	  out=`LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
	       groff -man -Tutf8 -ww -z $$p 2>&1`; \
	  if test -n "$$out"; then echo "$$p: $$out"; fail=1; fi; \
	done; exit $$fail
.PHONY: check-manpages
check-local: check-manpages
