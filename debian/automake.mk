# The Debian packaging ships in the release tarball, as Open vSwitch's
# does: `make dist`, unpack, `dpkg-buildpackage -us -uc -b`.
EXTRA_DIST += \
	debian/changelog \
	debian/control \
	debian/copyright \
	debian/libovs-vhost-dev.install \
	debian/libovs-vhost0.install \
	debian/libovs-vhost0.symbols \
	debian/openvswitch-switch-vhost.docs \
	debian/openvswitch-switch-vhost.install \
	debian/openvswitch-switch-vhost.postinst \
	debian/openvswitch-switch-vhost.prerm \
	debian/ovs-switch-depends \
	debian/rules \
	debian/source/format
