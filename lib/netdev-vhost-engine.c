/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one ovs-vhost engine of an ovs-vswitchd: created by the first
 * vhost-user port (after daemonizing, never from a constructor), driven from
 * the main loop, its log messages routed to the "vhost_engine" vlog module
 * (`ovs-appctl vlog/set vhost_engine:dbg` shows the protocol).
 */

#include <config.h>
#include "netdev-vhost.h"

#include <poll.h>

#include "openvswitch/poll-loop.h"
#include "openvswitch/vlog.h"
#include "ovs-thread.h"
#include "lib/util.h"          /* OVS's, not ours. */
#include "ovs-vhost/vhost.h"

VLOG_DEFINE_THIS_MODULE(vhost_engine);

static struct ovs_mutex engine_mutex = OVS_MUTEX_INITIALIZER;
static struct vhost_engine *engine;

/* The engine rate-limits the messages a frontend or guest can cause. */
static void
netdev_vhost_engine_log(enum vhost_log_level level, const char *msg,
                        void *aux OVS_UNUSED)
{
    switch (level) {
    case VHOST_LOG_ERR:
        VLOG_ERR("%s", msg);
        break;
    case VHOST_LOG_WARN:
        VLOG_WARN("%s", msg);
        break;
    case VHOST_LOG_INFO:
        VLOG_INFO("%s", msg);
        break;
    case VHOST_LOG_DBG:
    default:
        VLOG_DBG("%s", msg);
        break;
    }
}

/* Returns the engine, creating it on first use.  Main thread. */
struct vhost_engine *
netdev_vhost_engine_get(void)
{
    ovs_mutex_lock(&engine_mutex);
    if (!engine) {
        vhost_log_set_handler(netdev_vhost_engine_log, NULL);
        vhost_log_set_level(VHOST_LOG_DBG);
        int error = vhost_engine_create(&engine);
        if (error) {
            ovs_abort(error, "vhost-user engine creation failed");
        }
    }
    ovs_mutex_unlock(&engine_mutex);
    return engine;
}

/* Handles whatever the engine's sockets and timers have ready.  Engine
 * callbacks run from here. */
void
netdev_vhost_engine_run(void)
{
    if (engine) {
        vhost_engine_run(engine, 0);
    }
}

/* Wakes the main loop when the engine has work. */
void
netdev_vhost_engine_wait(void)
{
    if (engine) {
        int timeout = vhost_engine_next_timeout(engine);

        poll_fd_wait(vhost_engine_get_fd(engine), POLLIN);
        if (timeout >= 0) {
            poll_timer_wait(timeout);
        }
    }
}
