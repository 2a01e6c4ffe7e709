/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests: the fixture shared by test-engine-*.c (see test-engine.h):
 * one engine in its own thread, one port, one frontend, and the checks
 * every test ends with.
 */

#include <config.h>

#include "test-engine.h"

/* Sets up 'fx' with default options (server mode, 2 queue pairs, callbacks
 * recorded in 'fx->ev'); the caller may change 'fx->opts' before
 * fx_start(). */
void
fx_init(struct fx *fx, const char *name)
{
    memset(fx, 0, sizeof *fx);
    fx->fds0 = tu_count_fds();
    fx->threads0 = tu_count_threads();
    tu_events_init(&fx->ev);
    fx->path = tu_path(name);
    vhost_port_options_init(&fx->opts);
    fx->opts.name = name;
    fx->opts.path = fx->path;
    fx->opts.mode = VHOST_PORT_SERVER;
    fx->opts.max_queue_pairs = 2;
    fx->opts.reconnect_min_ms = 10;
    fx->opts.reconnect_max_ms = 100;
    fx->opts.cb = &tu_callbacks;
    fx->opts.aux = &fx->ev;
}

struct vhost_engine *
fx_start_engine(void)
{
    struct vhost_engine *engine = NULL;

    TU_CHECK_OK(vhost_engine_create(&engine));
    TU_CHECK_NONNULL(engine);
    TU_CHECK_OK(vhost_engine_start(engine));
    return engine;
}

void
fx_create_port(struct fx *fx)
{
    int error = vhost_port_create(fx->engine, &fx->opts, &fx->port);

    if (error) {
        TU_FAIL("vhost_port_create(%s): %s", fx->path, tu_strerror(error));
    }
    TU_CHECK_NONNULL(fx->port);
}

void
fx_wait_connected(struct fx *fx)
{
    if (!tu_wait_port(fx->port, tu_port_connected, NULL, TU_TIMEOUT_MS)) {
        TU_FAIL("the port did not report a connection");
    }
}

void
fx_wait_disconnected(struct fx *fx)
{
    if (!tu_wait_port(fx->port, tu_port_disconnected, NULL,
                      TU_TIMEOUT_MS)) {
        TU_FAIL("the port still reports a connection");
    }
}

/* Connects 'fe' to the server port of 'fx' and waits until the engine
 * has accepted it. */
void
fx_connect_fe(struct fx *fx, struct tfe *fe)
{
    TU_CHECK_OK(tfe_connect(fe, fx->path));
    fx_wait_connected(fx);
}

/* Starts the engine, creates the port and connects a frontend with the
 * default guest memory. */
void
fx_start(struct fx *fx)
{
    fx->engine = fx_start_engine();
    fx_create_port(fx);
    fx->fe = tfe_create(tfe_mem_create_default());
    if (fx->opts.mode == VHOST_PORT_SERVER) {
        fx_connect_fe(fx, fx->fe);
    }
}

/* Tears down 'fx' and checks that nothing leaked: fds, threads, guest
 * mappings, the socket file. */
void
fx_finish(struct fx *fx)
{
    struct stat st;

    tfe_destroy(fx->fe);
    fx->fe = NULL;
    if (fx->port) {
        vhost_port_destroy(fx->port);
        fx->port = NULL;
        if (fx->opts.mode == VHOST_PORT_SERVER) {
            tu_log("destroying a server port removes its socket file");
            TU_CHECK(stat(fx->path, &st) < 0 && errno == ENOENT);
        }
    }
    if (fx->engine) {
        vhost_engine_destroy(fx->engine);
        fx->engine = NULL;
    }
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), fx->fds0);
    TU_CHECK_EQ(tu_threads_settle(fx->threads0), fx->threads0);
    tu_events_destroy(&fx->ev);
    free(fx->path);
}

struct vhost_port_counters
fx_counters(struct fx *fx)
{
    return tu_port_info(fx->port).counters;
}

/* fds held by the engine (everything but what 'fx->fe' holds).
 *
 * The engine replies to a message before it closes the fds that came with
 * it (vhost_user_msg_release() runs after dispatch), so an ack does not
 * mean they are closed yet.  It does release them before it reads the next
 * message, so a round trip first makes the count exact. */
int
fx_engine_fds(const struct fx *fx)
{
    if (fx->fe && fx->fe->sock >= 0) {
        tfe_sync(fx->fe);       /* Fails harmlessly if disconnected. */
    }
    return tu_count_fds() - tfe_count_fds(fx->fe);
}

/* Guest memory mappings held by the engine. */
int
fx_engine_maps(const struct fx *fx)
{
    return tu_count_maps(TFE_MEM_NAME) - tfe_count_maps(fx->fe);
}

int
fx_temp_eventfd(void)
{
    return TU_SYS(eventfd(0, EFD_CLOEXEC));
}

const char *
fx_result_to_string(int r)
{
    return (r == 0 ? "accepted (ack 0)"
            : r == TFE_NACK ? "rejected (nonzero ack)"
            : tu_strerror(r));
}

/* Waits for the engine to close 'fe''s connection and for the port to
 * report it. */
void
fx_expect_disconnect(struct fx *fx, struct tfe *fe, const char *why)
{
    tu_log("  the engine disconnects the frontend (%s)", why);
    if (!tfe_wait_closed(fe, TU_TIMEOUT_MS)) {
        TU_FAIL("the engine did not close the connection after %s", why);
    }
    tfe_disconnect(fe);
    fx_wait_disconnected(fx);
}

/* Negotiates the default features with REPLY_ACK (tfe_negotiate()). */
void
fx_negotiate(struct tfe *fe)
{
    CHECK_ACK(tfe_negotiate(fe, NULL));
    TU_CHECK(fe->reply_ack);
}

/* After a disconnect, connects fx->fe again and negotiates. */
void
fx_reconnect(struct fx *fx)
{
    fx_wait_disconnected(fx);
    fx_connect_fe(fx, fx->fe);
    fx_negotiate(fx->fe);
}

/* Brings fx->fe's device to ready with 'n_pairs' queue pairs. */
void
fx_setup_ready(struct fx *fx, unsigned int n_pairs)
{
    CHECK_ACK(tfe_setup_device(fx->fe, n_pairs, NULL));
    TU_CHECK(tu_port_info(fx->port).ready);
}
