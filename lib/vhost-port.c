/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vhost-user ports: sockets, connections and their lifecycle.  See
 * ovs-vhost/vhost.h for the API and vhost-port.h for the engine's side.
 *
 * A server port listens all its life and serves one frontend at a time.
 * A second connection is refused while the first is a working frontend,
 * and replaces it when the first shows it is not one (see "Takeover"
 * below).  When the first goes the next is accepted.  A client port
 * connects, and after a failed attempt or a lost connection tries again
 * after a delay that starts at 'reconnect_min_ms' and doubles up to
 * 'reconnect_max_ms'.
 *
 * Takeover
 * ========
 *
 * Anyone who can open the socket can connect to it, so the connection a
 * server port serves may be a prober, a crashed or stuck process, or an
 * attacker who sends half a message and waits.  'msg_timeout_ms' ends such
 * a connection in the end (5 s by default; never, for one that sends
 * nothing at all), but the port's real frontend must not wait that long.
 * So a connection that arrives while another is served is accepted and
 * held, unread, as the 'pending' one, and the current one is judged:
 *
 *   - Its device is ready: it is a working frontend and is never
 *     displaced.  The newcomer is refused, as a second frontend always
 *     was.
 *
 *   - It sent SET_OWNER and owes no part of a message: it is a frontend
 *     that has set the device up as far as its guest has asked.  QEMU sends
 *     SET_OWNER as it starts the vhost device and the rest only when the
 *     guest's driver starts, which may be minutes later (or never, for a
 *     guest that does not load virtio-net), so an idle owner is not a
 *     stalled one.  The newcomer is refused.
 *
 *   - It has not sent SET_OWNER VHOST_PORT_TAKEOVER_MS after it connected,
 *     or it has owed the rest of a message (or not read a reply) for
 *     VHOST_PORT_TAKEOVER_MS: it is dropped, counted in
 *     'frontends_displaced', and the newcomer takes its place.  Before
 *     that, the newcomer waits, and is refused if the current one proves
 *     itself meanwhile.
 *
 * QEMU and DPDK's virtio-user send SET_OWNER among their first handful of
 * messages, each written whole with one sendmsg(), so the grace is far
 * more than either needs, and a well-behaved frontend that connects first
 * is never displaced: a stream of connections (from an attacker or a
 * misconfigured second VM) cannot cut a real frontend off in the middle of
 * its setup.  Nor can the grace delay a newcomer by more than
 * VHOST_PORT_TAKEOVER_MS, well within the second a frontend is owed.
 *
 * One newcomer waits at a time: a later one replaces it, since the newest
 * connection is the one most likely to have a live peer, and an unread
 * pending connection must not keep out a third.  Nothing waits on a peer:
 * the pending connection is only held, and closing it does not block.
 * What an attacker who connects first and then sends SET_OWNER and idles
 * gets is what any frontend gets; socket permissions are what keep such a
 * peer out.
 *
 * Held queues
 * ===========
 *
 * Message handlers take queue locks, spinning: a burst holds its queue's
 * lock for microseconds.  But a PMD thread that touches a guest page that
 * postcopy migration has not brought over yet sleeps in the fault, holding
 * the lock, until the frontend serves the page; a frontend that never does
 * (its migration paused by a broken link, or stuck) would stop the engine's
 * loop, and every port with it, at the next message for that device, and
 * the embedder's statistics with it.  So before a message is handled each
 * queue's lock is tried for VHOST_PORT_QUEUE_WAIT_US (vhost_dev_held_queue();
 * long enough for a burst whose thread was preempted) and, if one stays
 * held, the message waits, unhandled and counted in 'msgs_deferred': the
 * connection reads nothing more, reports only a hang-up, and is tried
 * again every VHOST_PORT_DEFER_RETRY_MS, for VHOST_PORT_QUEUE_RETRY_WAIT_US
 * each time.  A frontend
 * that goes meanwhile is disconnected, which closes the userfaultfd first
 * and so wakes the PMD thread (vhost_dev_reset()).  Between the check and
 * the handler a burst can still start and fault; that window is a few
 * microseconds per message, not the life of the stall.
 */

#include <config.h>
#include "vhost-port.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ovs-vhost/vhost.h"
#include "vhost-dev.h"
#include "vhost-engine.h"
#include "vhost-log.h"
#include "vhost-socket.h"
#include "vhost-user-msg.h"
#include "vhost-user.h"
#include "virtq.h"

/* Messages handled per wake-up of one connection, so that a frontend that
 * streams messages cannot starve the other ports. */
#define VHOST_PORT_MAX_MSGS_PER_RUN 64
#define VHOST_PORT_ACCEPT_RETRY_MS 100

/* Server mode: how long a connection has to send SET_OWNER, or to finish a
 * message it started, before one that connected after it may take its
 * place (see "Takeover" above). */
#define VHOST_PORT_TAKEOVER_MS 250

/* A message is handled only once none of its device's queues has been held
 * by the data path for VHOST_PORT_QUEUE_WAIT_US; until then it waits, and
 * is tried again every VHOST_PORT_DEFER_RETRY_MS (see "Held queues"
 * below). */
#define VHOST_PORT_QUEUE_WAIT_US 200000
#define VHOST_PORT_DEFER_RETRY_MS 50

/* How long each later try waits: the queue is known to be held, and the
 * loop must not spend its time waiting for it. */
#define VHOST_PORT_QUEUE_RETRY_WAIT_US 2000

struct vhost_port {
    struct vhost_engine *engine;
    struct ovs_list node;               /* In the engine's port list. */
    struct vhost_engine_zombie zombie;  /* Deferred free after destroy. */

    /* Configuration, constant. */
    char *name;
    char *path;
    enum vhost_port_mode mode;
    unsigned int reconnect_min_ms;
    unsigned int reconnect_max_ms;
    unsigned int msg_timeout_ms;

    /* Server mode. */
    int listen_fd;
    ino_t sock_inode;                   /* Of the socket file we made. */
    struct vhost_engine_watch listen_watch;

    /* Client mode. */
    struct vhost_engine_timer reconnect_timer;
    unsigned int backoff_ms;            /* Next delay after a failure. */
    struct vhost_ratelimit connect_rl;  /* Failed attempts: 2 a minute. */

    /* The connection to the frontend, if any. */
    int conn_fd;
    struct vhost_engine_watch conn_watch;
    struct vhost_user_msg_reader reader;

    /* A reply the socket could not take at once.  While one is pending
     * the connection waits for output and reads nothing, so at most one
     * reply is ever buffered. */
    struct vhost_user_reply out;
    size_t out_sent;
    bool out_pending;

    /* Armed when a message has started to arrive, or a reply waits for
     * the frontend to read it; stopped when that message is complete or
     * that reply sent, and not re-armed as more bytes trickle in: a
     * frontend gets 'msg_timeout_ms' per message, however it paces it. */
    struct vhost_engine_timer msg_timer;
    bool msg_timer_armed;

    /* The message in 'reader' waits for a held queue (see "Held queues"
     * above): 'defer_timer' tries it again. */
    bool msg_deferred;
    int held_vring;                     /* The vring it waits for. */
    struct vhost_engine_timer defer_timer;

    /* Server mode: while the process is out of fds (accept() fails with
     * EMFILE and the like), the listening socket stays readable; it is
     * taken off the loop and this timer puts it back, so the loop does not
     * spin. */
    struct vhost_engine_timer accept_timer;
    bool accept_paused;

    /* Server mode: takeover (see "Takeover" above).  'pending_fd' is a
     * connection accepted while 'conn_fd' was served, held unread until
     * 'pending_timer' or a change in the current connection decides
     * between them. */
    int pending_fd;
    struct vhost_engine_timer pending_timer;
    long long int conn_since_ms;        /* When 'conn_fd' started. */
    long long int owed_since_ms;        /* When 'msg_timer' was armed. */
    bool conn_owned;                    /* 'conn_fd' sent SET_OWNER. */

    struct vhost_dev dev;
};

static void vhost_port_listen_cb__(struct vhost_engine_watch *, uint32_t);
static void vhost_port_conn_cb__(struct vhost_engine_watch *, uint32_t);
static void vhost_port_reconnect_cb__(struct vhost_engine_timer *);
static void vhost_port_listen_cb__(struct vhost_engine_watch *, uint32_t);
static void vhost_port_accept_resume_cb__(struct vhost_engine_timer *);
static void vhost_port_msg_timeout_cb__(struct vhost_engine_timer *);
static void vhost_port_pending_cb__(struct vhost_engine_timer *);
static void vhost_port_defer_cb__(struct vhost_engine_timer *);

struct vhost_port *
vhost_port_from_node(struct ovs_list *node)
{
    return CONTAINER_OF(node, struct vhost_port, node);
}

struct vhost_dev *
vhost_port_dev(struct vhost_port *port)
{
    return &port->dev;
}

/* Initialises 'opts' with defaults: server mode, the default features and
 * protocol features, one queue pair, reconnect after 100 ms backing off to
 * 2 s. */
void
vhost_port_options_init(struct vhost_port_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->mode = VHOST_PORT_SERVER;
    opts->features = vhost_default_features();
    opts->protocol_features = vhost_default_protocol_features();
    opts->max_queue_pairs = 1;
    opts->reconnect_min_ms = 100;
    opts->reconnect_max_ms = 2000;
}

const char *
vhost_port_get_name(const struct vhost_port *port)
{
    return port->name;
}

static void
vhost_port_start_conn__(struct vhost_port *port, int fd)
{
    int error = vhost_engine_watch_add(port->engine, &port->conn_watch, fd,
                                       vhost_port_conn_cb__);
    if (error) {
        VLOG_ERR("%s: cannot watch connection (%s)", port->name,
                 strerror(error));
        close(fd);
        return;
    }
    port->conn_fd = fd;
    port->out_pending = false;
    port->conn_since_ms = vhost_time_msec();
    port->conn_owned = false;
    vhost_user_msg_reader_init(&port->reader);
    port->dev.counters.connects++;
    port->backoff_ms = port->reconnect_min_ms;
    VLOG_INFO("%s: frontend %s on %s", port->name,
              port->mode == VHOST_PORT_SERVER ? "connected" : "reached",
              port->path);
    if (port->dev.cb && port->dev.cb->connected) {
        port->dev.cb->connected(port, port->dev.aux);
    }
}

/* Client mode: tries to connect now; on failure, schedules the next try. */
static void
vhost_port_try_connect__(struct vhost_port *port)
{
    int fd;
    int error = vhost_socket_connect(port->path, &fd);

    if (!error) {
        vhost_port_start_conn__(port, fd);
        return;
    }

    /* The frontend not being there yet is normal: say so now and then,
     * with a limiter of its own so that it cannot crowd out the device's
     * warnings. */
    port->dev.counters.connect_failures++;
    vhost_log_rl(&port->connect_rl, VHOST_LOG_INFO, "%s: connecting to %s "
                 "failed (%s); retrying in %u ms", port->name, port->path,
                 strerror(error), port->backoff_ms);
    vhost_engine_timer_arm(port->engine, &port->reconnect_timer,
                           port->backoff_ms);
    port->backoff_ms = MIN(port->backoff_ms * 2, port->reconnect_max_ms);
}

static void
vhost_port_reconnect_cb__(struct vhost_engine_timer *timer)
{
    struct vhost_port *port = CONTAINER_OF(timer, struct vhost_port,
                                           reconnect_timer);
    if (port->conn_fd < 0) {
        vhost_port_try_connect__(port);
    }
}

/* Ends the connection to the frontend: the device is reset (the embedder
 * hears device_gone first if it was ready), every fd the frontend gave is
 * closed and guest memory is unmapped.  A client port schedules a
 * reconnect unless 'destroying'. */
static void
vhost_port_disconnect__(struct vhost_port *port, bool destroying)
{
    if (port->conn_fd < 0) {
        return;
    }
    port->dev.counters.fds_closed += vhost_user_msg_release(&port->reader);
    vhost_engine_timer_cancel(&port->msg_timer);
    port->msg_timer_armed = false;
    vhost_engine_timer_cancel(&port->defer_timer);
    port->msg_deferred = false;
    vhost_engine_watch_del(port->engine, &port->conn_watch);
    close(port->conn_fd);
    port->conn_fd = -1;
    port->dev.counters.disconnects++;
    /* A reply's fd that never went out (postcopy's userfaultfd). */
    close_fd_quietly(port->out.fd);
    port->out.fd = -1;

    vhost_dev_reset(&port->dev);
    VLOG_INFO("%s: frontend disconnected", port->name);
    if (port->dev.cb && port->dev.cb->disconnected) {
        port->dev.cb->disconnected(port, port->dev.aux);
    }

    if (port->mode == VHOST_PORT_CLIENT && !destroying) {
        vhost_engine_timer_arm(port->engine, &port->reconnect_timer,
                               port->backoff_ms);
    }
    if (port->pending_fd >= 0 && !destroying) {
        /* The frontend that waited is next.  Started from the loop rather
         * than from within whatever ended this connection. */
        vhost_engine_timer_arm(port->engine, &port->pending_timer, 0);
    }
}

/* Closes the pending connection, if any, as a refused frontend, saying
 * 'why'. */
static void
vhost_port_refuse_pending__(struct vhost_port *port, const char *why)
{
    if (port->pending_fd < 0) {
        return;
    }
    vhost_engine_timer_cancel(&port->pending_timer);
    port->dev.counters.extra_conns_refused++;
    VHOST_DEV_LOG_RL(&port->dev, VHOST_LOG_WARN, "%s: refusing a second "
                     "frontend on %s: %s", port->name, port->path, why);
    close(port->pending_fd);
    port->pending_fd = -1;
}

/* Makes the pending connection the current one.  The port has none.
 *
 * The loop may still hold an event for the old connection's watch in its
 * current batch, which then reaches the new one: harmless, since reading a
 * connection that has nothing to read only returns EAGAIN. */
static void
vhost_port_promote_pending__(struct vhost_port *port)
{
    int fd = port->pending_fd;

    vhost_engine_timer_cancel(&port->pending_timer);
    port->pending_fd = -1;
    vhost_port_start_conn__(port, fd);
}

/* Server mode: decides between the current connection and the pending one,
 * as "Takeover" above describes: refuses the pending one if the current one
 * is a working frontend, replaces the current one with it if the current
 * one has had VHOST_PORT_TAKEOVER_MS to prove itself and has not, and
 * otherwise arms 'pending_timer' for when it will have had that long.
 * Called whenever the answer may have changed: a connection arrives, the
 * current one handled input or ended, or the timer fired. */
static void
vhost_port_judge__(struct vhost_port *port)
{
    long long int now = vhost_time_msec();
    long long int since;
    const char *what;

    if (port->pending_fd < 0) {
        return;
    }
    if (port->conn_fd < 0) {
        vhost_port_promote_pending__(port);
        return;
    }
    if (port->dev.ready) {
        vhost_port_refuse_pending__(port, "one is connected and its device "
                                    "is ready");
        return;
    }
    if (!port->conn_owned) {
        since = port->conn_since_ms;
        what = "sent no SET_OWNER in";
    } else if (port->msg_timer_armed) {
        since = port->owed_since_ms;
        what = port->out_pending ? "left a reply unread for"
                                 : "left a message half-written for";
    } else {
        vhost_port_refuse_pending__(port, "one is connected and owns the "
                                    "device");
        return;
    }
    if (now - since < VHOST_PORT_TAKEOVER_MS) {
        if (!port->pending_timer.armed
            || port->pending_timer.when != since + VHOST_PORT_TAKEOVER_MS) {
            vhost_engine_timer_arm(port->engine, &port->pending_timer,
                                   since + VHOST_PORT_TAKEOVER_MS - now);
        }
        return;
    }

    port->dev.counters.frontends_displaced++;
    VHOST_DEV_LOG_RL(&port->dev, VHOST_LOG_WARN, "%s: frontend on %s %s "
                     "%lld ms; replacing it with the one that connected "
                     "after it", port->name, port->path, what, now - since);
    vhost_port_disconnect__(port, false);
    vhost_port_promote_pending__(port);
}

static void
vhost_port_pending_cb__(struct vhost_engine_timer *timer)
{
    struct vhost_port *port = CONTAINER_OF(timer, struct vhost_port,
                                           pending_timer);

    vhost_port_judge__(port);
}

/* Called by the engine loop after a guarded SIGBUS anywhere: if it hit
 * this port's guest memory or dirty log, the device is broken, and the
 * frontend goes as after any fatal error (the embedder hears device_gone
 * and disconnected; a client port reconnects). */
void
vhost_port_run_guard(struct vhost_port *port)
{
    if (port->conn_fd >= 0 && vhost_dev_check_guard(&port->dev)) {
        vhost_port_disconnect__(port, false);
    }
}

static void
vhost_port_listen_cb__(struct vhost_engine_watch *watch, uint32_t events)
{
    struct vhost_port *port = CONTAINER_OF(watch, struct vhost_port,
                                           listen_watch);
    int fd;
    int error = vhost_socket_accept(port->listen_fd, &fd);

    if (error) {
        if (error == EAGAIN || error == EINTR || error == ECONNABORTED) {
            return;
        }
        /* Out of fds or memory: the pending connection stays queued and
         * the socket readable.  Stop watching it for a while rather than
         * spin. */
        port->dev.counters.accept_failures++;
        VHOST_DEV_LOG_RL(&port->dev, VHOST_LOG_WARN, "%s: accept failed "
                         "(%s); retrying in %d ms", port->name,
                         strerror(error), VHOST_PORT_ACCEPT_RETRY_MS);
        vhost_engine_watch_del(port->engine, &port->listen_watch);
        port->accept_paused = true;
        vhost_engine_timer_arm(port->engine, &port->accept_timer,
                               VHOST_PORT_ACCEPT_RETRY_MS);
        return;
    }
    if (port->conn_fd < 0 && port->pending_fd >= 0) {
        /* The current frontend just went: the one that waited comes
         * first. */
        vhost_port_promote_pending__(port);
    }
    if (port->conn_fd < 0) {
        vhost_port_start_conn__(port, fd);
        return;
    }
    /* One frontend per device: a second one would fight the first over
     * the same queues.  This one waits while the first is judged. */
    vhost_port_refuse_pending__(port, "another connected after it");
    port->pending_fd = fd;
    vhost_port_judge__(port);
}

static void
vhost_port_accept_resume_cb__(struct vhost_engine_timer *timer)
{
    struct vhost_port *port = CONTAINER_OF(timer, struct vhost_port,
                                           accept_timer);

    if (port->accept_paused && port->listen_fd >= 0) {
        port->accept_paused = false;
        if (vhost_engine_watch_add(port->engine, &port->listen_watch,
                                   port->listen_fd, vhost_port_listen_cb__)) {
            port->accept_paused = true;
            vhost_engine_timer_arm(port->engine, &port->accept_timer,
                                   VHOST_PORT_ACCEPT_RETRY_MS);
        }
    }
}

static void
vhost_port_stop_msg_timer__(struct vhost_port *port)
{
    if (port->msg_timer_armed) {
        vhost_engine_timer_cancel(&port->msg_timer);
        port->msg_timer_armed = false;
    }
}

/* Sends 'port->out' from where it stands.  Returns true if the connection
 * may go on reading: the reply is out, or it waits for output. */
static bool
vhost_port_send_reply__(struct vhost_port *port)
{
    int error = vhost_user_msg_send(port->conn_fd, &port->out.hdr,
                                    &port->out.payload, &port->out.fd,
                                    port->out.fd >= 0, &port->out_sent);
    if (!error) {
        /* Out with the first byte: the frontend has its copy. */
        close_fd_quietly(port->out.fd);
        port->out.fd = -1;
        if (port->out_pending) {
            vhost_port_stop_msg_timer__(port);
            port->out_pending = false;
            vhost_engine_watch_set_output(port->engine, &port->conn_watch,
                                          false);
        }
        return true;
    }
    if (error == EAGAIN) {
        if (port->out_pending) {
            return false;
        }
        port->out_pending = true;
        error = vhost_engine_watch_set_output(port->engine,
                                              &port->conn_watch, true);
        if (!error) {
            return false;
        }
    }
    VHOST_DEV_LOG_RL(&port->dev, VHOST_LOG_WARN, "%s: sending %s reply "
                     "failed (%s)", port->name,
                     vhost_user_request_to_string(port->out.hdr.request),
                     strerror(error));
    vhost_port_disconnect__(port, false);
    return false;
}

/* Arms the message timer when the frontend owes us the rest of a message
 * or has not read a reply, and disarms it when it owes nothing. */
static void
vhost_port_update_msg_timer__(struct vhost_port *port)
{
    bool owed = port->conn_fd >= 0 && !port->msg_deferred
                && (port->reader.have > 0 || port->out_pending);

    if (owed && !port->msg_timer_armed) {
        vhost_engine_timer_arm(port->engine, &port->msg_timer,
                               port->msg_timeout_ms);
        port->msg_timer_armed = true;
        port->owed_since_ms = vhost_time_msec();
    } else if (!owed && port->msg_timer_armed) {
        vhost_engine_timer_cancel(&port->msg_timer);
        port->msg_timer_armed = false;
    }
}

static void
vhost_port_msg_timeout_cb__(struct vhost_engine_timer *timer)
{
    struct vhost_port *port = CONTAINER_OF(timer, struct vhost_port,
                                           msg_timer);

    port->msg_timer_armed = false;
    if (port->conn_fd < 0) {
        return;
    }
    port->dev.counters.msg_timeouts++;
    VHOST_DEV_LOG_RL(&port->dev, VHOST_LOG_WARN, "%s: frontend %s for %u "
                     "ms; disconnecting", port->name,
                     port->out_pending ? "left a reply unread"
                     : "left a message half-written", port->msg_timeout_ms);
    vhost_port_disconnect__(port, false);
}

static void vhost_port_conn_run__(struct vhost_port *);

/* Serves the connection: what it sent, its timers, a waiting newcomer. */
static void
vhost_port_conn_serve__(struct vhost_port *port)
{
    vhost_port_conn_run__(port);
    vhost_port_update_msg_timer__(port);
    vhost_port_judge__(port);
}

static void
vhost_port_conn_cb__(struct vhost_engine_watch *watch, uint32_t events)
{
    struct vhost_port *port = CONTAINER_OF(watch, struct vhost_port,
                                           conn_watch);

    vhost_port_conn_serve__(port);
}

static void
vhost_port_defer_cb__(struct vhost_engine_timer *timer)
{
    struct vhost_port *port = CONTAINER_OF(timer, struct vhost_port,
                                           defer_timer);

    if (port->conn_fd >= 0) {
        vhost_port_conn_serve__(port);
    }
}

/* Returns true if the message in 'port->reader' may be handled now: no
 * queue of the device is held by the data path (see "Held queues" above).
 * Otherwise the message waits: the first time, it is counted and logged,
 * and the connection stops reporting input; every time, 'defer_timer' is
 * armed to try again. */
static bool
vhost_port_may_handle__(struct vhost_port *port)
{
    struct vhost_dev *dev = &port->dev;
    int held = vhost_dev_held_queue(dev, port->msg_deferred
                                         ? VHOST_PORT_QUEUE_RETRY_WAIT_US
                                         : VHOST_PORT_QUEUE_WAIT_US);

    if (held < 0) {
        if (port->msg_deferred) {
            port->msg_deferred = false;
            vhost_engine_watch_hold(port->engine, &port->conn_watch, false);
            VLOG_INFO("%s: vring %d released; handling %s", port->name,
                      port->held_vring, vhost_user_request_to_string(
                          port->reader.msg.hdr.request));
        }
        return true;
    }
    if (!port->msg_deferred) {
        port->msg_deferred = true;
        port->held_vring = held;
        dev->counters.msgs_deferred++;
        /* Only a hang-up wakes the connection until the queue is free. */
        vhost_engine_watch_hold(port->engine, &port->conn_watch, true);
        VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: vring %d held by the "
                         "data path for %u ms (a postcopy fault the "
                         "frontend does not serve?); %s waits", port->name,
                         held, VHOST_PORT_QUEUE_WAIT_US / 1000,
                         vhost_user_request_to_string(
                             port->reader.msg.hdr.request));
    }
    vhost_engine_timer_arm(port->engine, &port->defer_timer,
                           VHOST_PORT_DEFER_RETRY_MS);
    return false;
}

/* Handles the message complete in 'port->reader' and sends its reply.
 * Returns true if the connection may go on reading. */
static bool
vhost_port_handle_msg__(struct vhost_port *port)
{
    struct vhost_dev *dev = &port->dev;
    enum vhost_user_verdict verdict
        = vhost_user_dispatch(dev, &port->reader.msg, &port->out);

    dev->counters.fds_closed += vhost_user_msg_release(&port->reader);
    /* Latched: a RESET_OWNER later does not make this connection any less
     * a frontend. */
    port->conn_owned |= dev->owned;
    if (verdict == VHOST_USER_DISCONNECT) {
        vhost_port_disconnect__(port, false);
        return false;
    }
    if (verdict == VHOST_USER_REPLY) {
        port->out_sent = 0;
        return vhost_port_send_reply__(port);
    }
    return true;
}

/* Handles what the frontend sent, up to VHOST_PORT_MAX_MSGS_PER_RUN
 * messages. */
static void
vhost_port_conn_run__(struct vhost_port *port)
{
    struct vhost_dev *dev = &port->dev;

    if (port->msg_deferred) {
        if (vhost_socket_peer_gone(port->conn_fd)) {
            VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: frontend gone while "
                             "%s waited for a held vring", port->name,
                             vhost_user_request_to_string(
                                 port->reader.msg.hdr.request));
            vhost_port_disconnect__(port, false);
            return;
        }
        if (!vhost_port_may_handle__(port)
            || !vhost_port_handle_msg__(port)) {
            return;
        }
    }
    if (port->out_pending
        && (!vhost_port_send_reply__(port) || port->out_pending)) {
        return;
    }

    for (int i = 0; i < VHOST_PORT_MAX_MSGS_PER_RUN; i++) {
        int error;
        enum vhost_user_read_status status
            = vhost_user_msg_read(port->conn_fd, &port->reader, &error);

        switch (status) {
        case VHOST_USER_READ_MORE:
            return;

        case VHOST_USER_READ_MSG:
            /* The frontend finished its message: the next one gets a
             * timeout of its own. */
            vhost_port_stop_msg_timer__(port);
            if (!vhost_port_may_handle__(port)
                || !vhost_port_handle_msg__(port)) {
                return;
            }
            break;

        case VHOST_USER_READ_BAD:
            dev->counters.msgs++;
            dev->counters.msgs_rejected++;
            dev->counters.msgs_bad_header++;
            VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: bad message header "
                             "(request %u, flags %#x, size %u); "
                             "disconnecting", port->name,
                             port->reader.msg.hdr.request,
                             port->reader.msg.hdr.flags,
                             port->reader.msg.hdr.size);
            vhost_port_disconnect__(port, false);
            return;

        case VHOST_USER_READ_ERROR:
            VHOST_DEV_LOG_RL(dev, VHOST_LOG_WARN, "%s: read error (%s)",
                             port->name, strerror(error));
            vhost_port_disconnect__(port, false);
            return;

        case VHOST_USER_READ_EOF:
            vhost_port_disconnect__(port, false);
            return;
        }
    }
}

static void
vhost_port_free__(struct vhost_engine_zombie *z)
{
    struct vhost_port *port = CONTAINER_OF(z, struct vhost_port, zombie);

    vhost_dev_destroy(&port->dev);
    free(port->name);
    free(port->path);
    free(port);
}

/* Returns true if a server port of 'engine' listens at 'path'. */
static bool
vhost_port_path_in_use__(const struct vhost_engine *engine, const char *path)
{
    const struct ovs_list *ports = vhost_engine_ports(engine);

    for (const struct ovs_list *n = ports->next; n != ports; n = n->next) {
        const struct vhost_port *p = CONTAINER_OF(n, struct vhost_port, node);

        if (p->listen_fd >= 0 && !strcmp(p->path, path)) {
            return true;
        }
    }
    return false;
}

/* Creates a port on 'engine' as 'opts' describe and stores it in '*portp'.
 * A server port listens at once (replacing a stale socket file); a client
 * port tries to connect at once and keeps trying.  Returns 0 or a positive
 * errno value: EINVAL for bad options, EADDRINUSE if another process
 * listens at a server port's path, EEXIST if something other than a socket
 * is there. */
int
vhost_port_create(struct vhost_engine *engine,
                  const struct vhost_port_options *opts,
                  struct vhost_port **portp)
{
    *portp = NULL;
    if (!opts->path || !opts->path[0]
        || opts->max_queue_pairs < 1
        || opts->max_queue_pairs > VHOST_MAX_QUEUE_PAIRS
        || (opts->mode != VHOST_PORT_SERVER
            && opts->mode != VHOST_PORT_CLIENT)) {
        return EINVAL;
    }

    struct vhost_port *port = calloc(1, sizeof *port);
    if (!port) {
        return ENOMEM;
    }
    port->engine = engine;
    port->path = strdup(opts->path);
    port->name = strdup(opts->name ? opts->name : opts->path);
    if (!port->path || !port->name) {
        free(port->path);
        free(port->name);
        free(port);
        return ENOMEM;
    }
    port->mode = opts->mode;
    port->reconnect_min_ms = MAX(opts->reconnect_min_ms, 1);
    port->reconnect_max_ms = MAX(opts->reconnect_max_ms,
                                 port->reconnect_min_ms);
    port->msg_timeout_ms = opts->msg_timeout_ms ? opts->msg_timeout_ms
                                                : VHOST_PORT_MSG_TIMEOUT_MS;
    vhost_engine_timer_init(&port->msg_timer, vhost_port_msg_timeout_cb__);
    vhost_engine_timer_init(&port->defer_timer, vhost_port_defer_cb__);
    port->backoff_ms = port->reconnect_min_ms;
    port->connect_rl = (struct vhost_ratelimit) VHOST_RATELIMIT_INIT(2, 1);
    port->listen_fd = -1;
    port->conn_fd = -1;
    port->out.fd = -1;
    port->pending_fd = -1;
    vhost_engine_timer_init(&port->pending_timer, vhost_port_pending_cb__);
    port->listen_watch.fd = port->conn_watch.fd = -1;
    vhost_engine_timer_init(&port->reconnect_timer, vhost_port_reconnect_cb__);
    vhost_engine_timer_init(&port->accept_timer,
                            vhost_port_accept_resume_cb__);
    vhost_user_msg_reader_init(&port->reader);

    struct vhost_port_options dev_opts = *opts;
    dev_opts.name = port->name;
    vhost_dev_init(&port->dev, port, &dev_opts);
    /* The SIGBUS handler wakes the loop through it. */
    port->dev.guard.wake_fd = vhost_engine_wake_fd(engine);

    vhost_engine_lock(engine);
    if (port->mode == VHOST_PORT_SERVER) {
        /* Our own port at the same path is live, but probing it with a
         * connection would look like a frontend to it. */
        int error = vhost_port_path_in_use__(engine, port->path)
                    ? EADDRINUSE : 0;
        if (!error) {
            error = vhost_socket_listen(port->path, &port->listen_fd,
                                        &port->sock_inode);
        }
        if (!error) {
            error = vhost_engine_watch_add(engine, &port->listen_watch,
                                           port->listen_fd,
                                           vhost_port_listen_cb__);
            if (error) {
                vhost_socket_unlink(port->path, port->sock_inode);
                close(port->listen_fd);
            }
        }
        if (error) {
            vhost_engine_unlock(engine);
            VLOG_ERR("%s: cannot listen at %s (%s)", port->name, port->path,
                     strerror(error));
            vhost_port_free__(&port->zombie);
            return error;
        }
        VLOG_INFO("%s: listening at %s", port->name, port->path);
    } else {
        vhost_port_try_connect__(port);
    }
    vhost_engine_add_port(engine, &port->node);
    vhost_engine_unlock(engine);

    *portp = port;
    return 0;
}

/* Disconnects the frontend (the embedder hears device_gone and
 * disconnected), stops listening and removes the socket file a server port
 * made, and frees 'port'. */
void
vhost_port_destroy(struct vhost_port *port)
{
    if (!port) {
        return;
    }

    struct vhost_engine *engine = port->engine;
    vhost_engine_lock(engine);
    vhost_port_disconnect__(port, true);
    vhost_dev_close_poslog(&port->dev);
    vhost_engine_timer_cancel(&port->reconnect_timer);
    vhost_engine_timer_cancel(&port->accept_timer);
    if (port->pending_fd >= 0) {
        vhost_engine_timer_cancel(&port->pending_timer);
        close(port->pending_fd);
        port->pending_fd = -1;
    }
    if (port->listen_fd >= 0) {
        if (!port->accept_paused) {
            vhost_engine_watch_del(engine, &port->listen_watch);
        }
        close(port->listen_fd);
        port->listen_fd = -1;
        vhost_socket_unlink(port->path, port->sock_inode);
    }
    ovs_list_remove(&port->node);
    VLOG_INFO("%s: destroyed", port->name);

    /* The loop may hold a stale event for one of our watches. */
    port->zombie.free = vhost_port_free__;
    vhost_engine_defer_free(engine, &port->zombie);
    vhost_engine_unlock(engine);
}

int
vhost_port_get_info(struct vhost_port *port, struct vhost_port_info *info)
{
    memset(info, 0, sizeof *info);
    vhost_engine_lock(port->engine);
    vhost_dev_get_info(&port->dev, info);
    info->connected = port->conn_fd >= 0;
    info->counters = port->dev.counters;
    vhost_engine_unlock(port->engine);
    return 0;
}

/* Sets the MTU that the device's configuration space shows (see
 * include/ovs-vhost/vhost.h).  Returns 0, or EINVAL for an MTU from 1 to
 * 67. */
int
vhost_port_set_mtu(struct vhost_port *port, uint16_t mtu)
{
    if (mtu && mtu < 68) {
        return EINVAL;
    }
    vhost_engine_lock(port->engine);
    port->dev.config_mtu = mtu;
    vhost_engine_unlock(port->engine);
    return 0;
}

/* Stores queue 'qid''s state in '*info'.  Returns 0, or EINVAL if the port
 * has no queue 'qid'.  A queue the frontend has not named yet reads as all
 * zeros.  Never waits long for a burst (see virtq_lock_bounded()). */
int
vhost_port_get_queue_info(struct vhost_port *port, unsigned int qid,
                          struct vhost_queue_info *info)
{
    memset(info, 0, sizeof *info);
    if (qid >= 2 * port->dev.max_queue_pairs) {
        return EINVAL;
    }

    vhost_engine_lock(port->engine);
    struct virtq *vq = port->dev.vqs[qid];
    if (vq && qid < port->dev.n_vqs) {
        /* The control plane writes these with the engine mutex held. */
        info->enabled = vq->enabled;
        info->ready = vq->ready;
        info->size = vq->size;
        info->has_addr = vq->has_addr;
        info->has_kick = vq->has_kick;
        info->has_call = vq->call_fd >= 0;
        info->has_err = vq->err_fd >= 0;
        info->log_used = vq->log_used;
        /* The position is the data path's: not while a burst holds the
         * queue for long (a PMD thread in a postcopy fault), when it
         * reads as 0. */
        if (virtq_lock_for_read(vq)) {
            info->base = virtq_get_base(vq);
            virtq_unlock(vq);
        }
    }
    vhost_engine_unlock(port->engine);
    return 0;
}
