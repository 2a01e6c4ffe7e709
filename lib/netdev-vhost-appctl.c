/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ovs-appctl commands for vhost-user ports:
 *
 *   vhost/show [PORT]     per port and per vring: socket, state, features,
 *                         ring layout and size, counters and drops.
 *   vhost/list            the vhost-user ports, one per line, with state.
 *
 * They run on the main thread, like every unixctl command.
 */

#include <config.h>
#include "netdev-vhost.h"

#include <stdlib.h>
#include <string.h>

#include "netdev-provider.h"
#include "ovs-vhost/vhost.h"
#include "openvswitch/dynamic-string.h"
#include "openvswitch/shash.h"
#include "openvswitch/vlog.h"
#include "smap.h"
#include "sset.h"
#include "unixctl.h"
#include "lib/util.h"          /* OVS's, not ours. */

VLOG_DEFINE_THIS_MODULE(netdev_vhost_appctl);

/* Calls 'cb' on each vhost-user netdev, in name order, or only on 'name'.
 * Returns false if 'name' is given and is not a vhost-user port. */
static bool
netdev_vhost_appctl_for_each(const char *name,
                             void (*cb)(const struct netdev *, struct ds *),
                             struct ds *ds)
{
    if (name) {
        struct netdev *netdev = netdev_from_name(name);
        bool ok = netdev && netdev_vhost_is_vhost(netdev);

        if (ok) {
            cb(netdev, ds);
        }
        netdev_close(netdev);
        return ok;
    }

    struct shash devices = SHASH_INITIALIZER(&devices);
    netdev_vhost_get_devices(&devices);

    const struct shash_node **nodes = shash_sort(&devices);
    for (size_t i = 0; i < shash_count(&devices); i++) {
        struct netdev *netdev = nodes[i]->data;

        cb(netdev, ds);
    }
    free(nodes);

    struct shash_node *node;
    SHASH_FOR_EACH (node, &devices) {
        netdev_close(node->data);
    }
    shash_destroy(&devices);
    return true;
}

static void
netdev_vhost_appctl_show(struct unixctl_conn *conn, int argc,
                         const char *argv[], void *aux OVS_UNUSED)
{
    struct ds ds = DS_EMPTY_INITIALIZER;
    const char *name = argc > 1 ? argv[1] : NULL;

    uint64_t pages, violations;

    if (!netdev_vhost_appctl_for_each(name, netdev_vhost_show, &ds)) {
        unixctl_command_reply_error(conn, "no such vhost-user port");
    } else {
        if (vhost_dirty_log_audit_get(&pages, &violations)) {
            ds_put_format(&ds, "dirty-log audit: %"PRIu64" pages written "
                          "while logging, %"PRIu64" not marked\n", pages,
                          violations);
        }
        unixctl_command_reply(conn, ds_cstr(&ds));
    }
    ds_destroy(&ds);
}

static void
netdev_vhost_appctl_list_one(const struct netdev *netdev, struct ds *ds)
{
    struct smap status = SMAP_INITIALIZER(&status);

    netdev_get_status(netdev, &status);
    ds_put_format(ds, "%s %s %s %s\n", netdev_get_name(netdev),
                  netdev_get_type(netdev),
                  smap_get_def(&status, "mode", "?"),
                  smap_get_def(&status, "status", "?"));
    smap_destroy(&status);
}

static void
netdev_vhost_appctl_list(struct unixctl_conn *conn, int argc OVS_UNUSED,
                         const char *argv[] OVS_UNUSED, void *aux OVS_UNUSED)
{
    struct ds ds = DS_EMPTY_INITIALIZER;

    netdev_vhost_appctl_for_each(NULL, netdev_vhost_appctl_list_one, &ds);
    unixctl_command_reply(conn, ds_cstr(&ds));
    ds_destroy(&ds);
}

/* Registers the commands.  Called from the provider's constructor, before
 * main(): unixctl_command_register() only fills a table. */
void
netdev_vhost_appctl_register(void)
{
    unixctl_command_register("vhost/show", "[port]", 0, 1,
                             netdev_vhost_appctl_show, NULL);
    unixctl_command_register("vhost/list", "", 0, 0,
                             netdev_vhost_appctl_list, NULL);
}
