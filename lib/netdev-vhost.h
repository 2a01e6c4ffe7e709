/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Open vSwitch netdev provider for vhost-user ports, served by the
 * ovs-vhost engine: the classes "dpdkvhostuser" (we listen) and
 * "dpdkvhostuserclient" (we connect), with the names, options, status keys
 * and statistics OVS-DPDK gives them, so that an ovs-vswitchd built with
 * this provider can stand in for Debian's ovs-vswitchd-dpdk.
 *
 * Usage
 * =====
 *
 * Linking netdev-vhost.c into ovs-vswitchd is enough: a constructor
 * registers both classes before main() runs (netdev_register_provider()
 * needs nothing initialised).  The Open_vSwitch table's other_config
 * reaches us through netdev_vhost_set_other_config(), which vswitchd/
 * arranges to be called where bridge.c calls dpdk_init().
 *
 * Thread-safety
 * =============
 *
 * The engine's control plane runs on the main thread, from the classes'
 * run and wait hooks: no thread is created, before or after daemonizing.
 * Engine callbacks therefore arrive on the main thread, with the engine
 * lock held; they take a port's 'mutex'.  Lock order: the engine, then
 * the provider's global 'vhost_mutex', then a port's 'mutex'.  Code that
 * holds a port's 'mutex' calls neither into the engine's control plane nor
 * takes 'vhost_mutex'.
 *
 * PMD threads call rxq_recv and send, which use the engine's burst calls
 * (lock-free apart from each vring's access lock) and atomics of the port.
 *
 * Trust model
 * ===========
 *
 * The frontend and the guest are untrusted; the engine checks everything
 * they send.  What the provider takes from the engine (queue counts, MTU,
 * packet lengths and offload metadata) is bounded again where it is used.
 */

#ifndef NETDEV_VHOST_H
#define NETDEV_VHOST_H 1

#include <stdbool.h>

struct smap;
struct ds;
struct netdev;
struct shash;

void netdev_vhost_set_other_config(const struct smap *ovs_other_config);

bool netdev_vhost_is_vhost(const struct netdev *);
void netdev_vhost_get_devices(struct shash *);
void netdev_vhost_show(const struct netdev *, struct ds *);

void netdev_vhost_appctl_register(void);

struct vhost_engine *netdev_vhost_engine_get(void);
void netdev_vhost_engine_run(void);
void netdev_vhost_engine_wait(void);

#endif /* netdev-vhost.h */
