/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A vhost-user port: one socket (server or client), the connection to the
 * frontend behind it, and its device.  The public half of its API is in
 * ovs-vhost/vhost.h; this header has what the engine needs.
 *
 * Thread-safety: as in vhost.h; the functions here are called with the
 * engine mutex held.
 */

#ifndef OVS_VHOST_VHOST_PORT_H
#define OVS_VHOST_VHOST_PORT_H 1

#include "util.h"

struct vhost_dev;
struct vhost_port;

struct vhost_port *vhost_port_from_node(struct ovs_list *);
struct vhost_dev *vhost_port_dev(struct vhost_port *);
void vhost_port_run_guard(struct vhost_port *);

#endif /* vhost-port.h */
