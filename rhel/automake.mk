# SPDX-License-Identifier: Apache-2.0
# The RPM spec: configure makes rhel/ovs-vhost.spec (version substituted);
# both ship in the tarball, so `rpmbuild -ta` works on it.
EXTRA_DIST += \
	rhel/ovs-vhost.spec \
	rhel/ovs-vhost.spec.in

# `make rpm`: the RPMs from this tree's tarball, against the Open vSwitch
# tree this build was configured with, in _rpm/ (RPMS/<arch>/*.rpm).  On
# Debian, RPMBUILD_OPT=--nodeps: rpm's database there knows none of the
# BuildRequires.
RPMBUILD_OPT =
if HAVE_OVS
rpm: dist rhel/ovs-vhost.spec
	rm -rf _rpm && mkdir -p _rpm
	rpmbuild --define "_topdir $(abs_builddir)/_rpm" \
	  --define "_sourcedir $(abs_builddir)" \
	  --define "ovs_source $(OVSDIR)" --define "ovs_build $(OVSBUILDDIR)" \
	  $(RPMBUILD_OPT) -bb rhel/ovs-vhost.spec
else
rpm:
	@echo "rpm: configure --with-ovs-source=DIR first (or rpmbuild -ta the tarball on Fedora/RHEL)" >&2; exit 1
endif
.PHONY: rpm
clean-rpm:
	rm -rf _rpm
clean-local: clean-rpm
.PHONY: clean-rpm
