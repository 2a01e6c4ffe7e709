# Autoconf macros for ovs-vhost.

dnl OVS_VHOST_CHECK_C11: require a compiler that accepts -std=gnu11.
AC_DEFUN([OVS_VHOST_CHECK_C11], [
  AC_CACHE_CHECK([whether $CC accepts -std=gnu11], [ovs_vhost_cv_c11], [
    save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -std=gnu11"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <stdatomic.h>
_Static_assert(1, "c11");]], [[atomic_int x = 0; (void) x;]])],
      [ovs_vhost_cv_c11=yes], [ovs_vhost_cv_c11=no])
    CFLAGS=$save_CFLAGS])
  AS_IF([test "$ovs_vhost_cv_c11" != yes],
        [AC_MSG_ERROR([a C11 compiler with <stdatomic.h> is required])])
  AC_SUBST([OVS_VHOST_STD_CFLAGS], [-std=gnu11])])

dnl OVS_VHOST_ENABLE_WERROR: --enable-Werror turns warnings into errors.
AC_DEFUN([OVS_VHOST_ENABLE_WERROR], [
  AC_ARG_ENABLE([Werror],
    [AS_HELP_STRING([--enable-Werror], [treat compiler warnings as errors])],
    [], [enable_Werror=no])
  AS_IF([test "$enable_Werror" = yes], [WERROR_CFLAGS=-Werror], [WERROR_CFLAGS=])
  AC_SUBST([WERROR_CFLAGS])])

dnl OVS_VHOST_ENABLE_DIRTY_LOG_AUDIT: --enable-dirty-log-audit, for test
dnl builds: the data path records every guest page it writes while
dnl logging and reports any it did not mark (lib/vhost-dirty-log.h).
AC_DEFUN([OVS_VHOST_ENABLE_DIRTY_LOG_AUDIT], [
  AC_ARG_ENABLE([dirty-log-audit],
    [AS_HELP_STRING([--enable-dirty-log-audit],
                    [check that every guest page written while logging is marked (test builds; slows logging)])],
    [], [enable_dirty_log_audit=no])
  AS_IF([test "$enable_dirty_log_audit" = yes],
        [AC_DEFINE([VHOST_DIRTY_LOG_AUDIT], [1],
                   [Define to audit the dirty log (test builds only).])])
  AC_SUBST([DIRTY_LOG_AUDIT], [$enable_dirty_log_audit])])

dnl OVS_VHOST_ENABLE_FLAGS: warning flags used for every file we build.
AC_DEFUN([OVS_VHOST_ENABLE_FLAGS], [
  WARNING_CFLAGS="-Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -Wshadow -Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes -Wformat=2"
  AC_SUBST([WARNING_CFLAGS])])

dnl OVS_VHOST_CHECK_OVS: the --with-ovs-source / --with-ovs-build options,
dnl following OVN's OVN_CHECK_OVS.  Without --with-ovs-source only the
dnl engine, its utilities and its tests are built.
AC_DEFUN([OVS_VHOST_CHECK_OVS], [
  AC_ARG_WITH([ovs-source],
    [AS_HELP_STRING([--with-ovs-source=DIR],
                    [build the Open vSwitch provider against the configured and built OVS source tree in DIR])],
    [], [with_ovs_source=no])
  AC_ARG_WITH([ovs-build],
    [AS_HELP_STRING([--with-ovs-build=DIR],
                    [OVS build directory, if it differs from --with-ovs-source])],
    [], [with_ovs_build=no])

  OVSDIR= OVSBUILDDIR=
  AS_CASE([$with_ovs_source],
    [no|""], [AS_IF([test "$with_ovs_build" != no],
                    [AC_MSG_ERROR([--with-ovs-build requires --with-ovs-source])])],
    [yes], [AC_MSG_ERROR([--with-ovs-source needs a directory argument])],
    [
      AC_MSG_CHECKING([for an Open vSwitch source tree in $with_ovs_source])
      OVSDIR=`cd "$with_ovs_source" 2>/dev/null && pwd`
      AS_IF([test -z "$OVSDIR" || test ! -f "$OVSDIR/lib/netdev-provider.h" \
             || test ! -f "$OVSDIR/vswitchd/ovs-vswitchd.c"],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([$with_ovs_source is not an Open vSwitch source tree (lib/netdev-provider.h or vswitchd/ovs-vswitchd.c missing)])])
      AC_MSG_RESULT([$OVSDIR])

      AS_IF([test "$with_ovs_build" = no], [with_ovs_build=$OVSDIR])
      AC_MSG_CHECKING([for a configured and built Open vSwitch in $with_ovs_build])
      OVSBUILDDIR=`cd "$with_ovs_build" 2>/dev/null && pwd`
      AS_IF([test -z "$OVSBUILDDIR" || test ! -f "$OVSBUILDDIR/config.h"],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([$with_ovs_build is not a configured Open vSwitch build tree (config.h missing): run ./configure there first])])
      AS_IF([test ! -f "$OVSBUILDDIR/lib/libopenvswitch.la" \
             || test ! -f "$OVSBUILDDIR/vswitchd/ovs-vswitchd"],
            [AC_MSG_RESULT([no])
             AC_MSG_ERROR([$with_ovs_build is configured but not built (lib/libopenvswitch.la or vswitchd/ovs-vswitchd missing): run make there first])])
      AC_MSG_RESULT([$OVSBUILDDIR])
      OVS_VHOST_CHECK_OVS_COMPAT
    ])
  AC_SUBST([OVSDIR])
  AC_SUBST([OVSBUILDDIR])
  AC_SUBST([OVS_VERSION])
  AC_SUBST([OVS_COMPAT_DEFS])
  AM_CONDITIONAL([HAVE_OVS], [test -n "$OVSDIR"])])

dnl OVS_VHOST_CHECK_OVS_COMPAT: what differs between the Open vSwitch
dnl releases the provider builds against (3.1 and 3.5), found by compiling
dnl against the tree in OVSDIR/OVSBUILDDIR.  Each finding is a -D in
dnl OVS_COMPAT_DEFS, for the provider's compile line only (it includes
dnl OVS's config.h, not ours); lib/netdev-vhost-compat.h turns them into
dnl one interface.  OVS_VERSION (e.g. 3.5.0) goes to tests/atlocal, for the
dnl tests that compare against what this OVS shows.
AC_DEFUN([OVS_VHOST_CHECK_OVS_COMPAT], [
  AC_MSG_CHECKING([for the Open vSwitch version])
  OVS_VERSION=`sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$OVSBUILDDIR/config.h"`
  AS_CASE([$OVS_VERSION],
    [[[0-9]*.[0-9]*.[0-9]*]], [AC_MSG_RESULT([$OVS_VERSION])],
    [AC_MSG_RESULT([unknown])
     AC_MSG_ERROR([no PACKAGE_VERSION in $OVSBUILDDIR/config.h])])
  dnl MAJOR * 100 + MINOR: 301, 305.
  ovs_vhost_ovs_num=`echo "$OVS_VERSION" | awk -F. '{ print $[]1 * 100 + $[]2 }'`
  OVS_COMPAT_DEFS="-DNETDEV_VHOST_OVS_VERSION=$ovs_vhost_ovs_num"

  save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS -I$OVSBUILDDIR -I$OVSBUILDDIR/include -I$OVSBUILDDIR/lib -I$OVSDIR -I$OVSDIR/include -I$OVSDIR/lib"
  m4_define([ovs_vhost_prologue], [[#include <config.h>
#include "dp-packet.h"
#include "netdev-provider.h"]])

  dnl OVS 3.3 moved a guest's partial checksum into the packet: the
  dnl virtio-net header's csum_start and csum_offset go into dp_packet,
  dnl and miniflow_extract() sets the L4 flags from them.
  AC_CACHE_CHECK([whether struct dp_packet has csum_start],
    [ovs_vhost_cv_dp_packet_csum_start],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([ovs_vhost_prologue],
       [[struct dp_packet *p = 0; (void) sizeof p->csum_start;
         (void) sizeof p->csum_offset;]])],
       [ovs_vhost_cv_dp_packet_csum_start=yes],
       [ovs_vhost_cv_dp_packet_csum_start=no])])
  AS_IF([test "$ovs_vhost_cv_dp_packet_csum_start" = yes],
    [OVS_COMPAT_DEFS="$OVS_COMPAT_DEFS -DNETDEV_VHOST_HAVE_DP_PACKET_CSUM_START"])

  dnl OVS 3.3 carries a TSO packet's segment size in the packet
  dnl (dp_packet_get/set_tso_segsz()), for its software segmentation.
  AC_CACHE_CHECK([whether dp_packet has a TSO segment size],
    [ovs_vhost_cv_dp_packet_tso_segsz],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([ovs_vhost_prologue],
       [[void (*set)(struct dp_packet *, uint16_t) = dp_packet_set_tso_segsz;
         uint16_t (*get)(const struct dp_packet *) = dp_packet_get_tso_segsz;
         (void) set; (void) get;]])],
       [ovs_vhost_cv_dp_packet_tso_segsz=yes],
       [ovs_vhost_cv_dp_packet_tso_segsz=no])])
  AS_IF([test "$ovs_vhost_cv_dp_packet_tso_segsz" = yes],
    [OVS_COMPAT_DEFS="$OVS_COMPAT_DEFS -DNETDEV_VHOST_HAVE_DP_PACKET_TSO_SEGSZ"])

  dnl OVS 3.3 offloads a tunnelled packet's inner checksum: the flags then
  dnl name the inner headers (dp_packet_inner_l3/l4()).
  AC_CACHE_CHECK([whether dp_packet has tunnel offload flags],
    [ovs_vhost_cv_dp_packet_tunnel_ol],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([ovs_vhost_prologue],
       [[uint64_t f = DP_PACKET_OL_TX_TUNNEL_VXLAN | DP_PACKET_OL_TX_TUNNEL_GENEVE;
         void *(*l3)(const struct dp_packet *) = dp_packet_inner_l3;
         void *(*l4)(const struct dp_packet *) = dp_packet_inner_l4;
         (void) f; (void) l3; (void) l4;]])],
       [ovs_vhost_cv_dp_packet_tunnel_ol=yes],
       [ovs_vhost_cv_dp_packet_tunnel_ol=no])])
  AS_IF([test "$ovs_vhost_cv_dp_packet_tunnel_ol" = yes],
    [OVS_COMPAT_DEFS="$OVS_COMPAT_DEFS -DNETDEV_VHOST_HAVE_DP_PACKET_TUNNEL_OL"])

  dnl OVS 3.4's --mlockall asks for MCL_ONFAULT first and says whether it
  dnl fell back to locking every page up front with memory_all_locked();
  dnl before, mlockall(MCL_CURRENT | MCL_FUTURE) and memory_locked().
  AC_CACHE_CHECK([whether OVS has memory_all_locked()],
    [ovs_vhost_cv_memory_all_locked],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([ovs_vhost_prologue
#include "util.h"],
       [[bool (*f)(void) = memory_all_locked; (void) f;]])],
       [ovs_vhost_cv_memory_all_locked=yes],
       [ovs_vhost_cv_memory_all_locked=no])])
  AS_IF([test "$ovs_vhost_cv_memory_all_locked" = yes],
    [OVS_COMPAT_DEFS="$OVS_COMPAT_DEFS -DNETDEV_VHOST_HAVE_MEMORY_ALL_LOCKED"])
  CPPFLAGS=$save_CPPFLAGS])
