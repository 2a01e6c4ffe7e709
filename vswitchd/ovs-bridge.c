/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open vSwitch's vswitchd/bridge.c, compiled unchanged from the OVS source
 * tree given to configure (--with-ovs-source), with one redirection: where
 * bridge.c hands the Open_vSwitch table's other_config to dpdk_init() on
 * every main-loop pass, this build hands it to the vhost-user provider,
 * which reads the vhost-* keys there as OVS-DPDK does.  There is no DPDK
 * in this ovs-vswitchd; the provider says so once if dpdk-init is set.
 */

#include <config.h>
#include "lib/netdev-vhost.h"

#define dpdk_init netdev_vhost_set_other_config
#include "vswitchd/bridge.c"
