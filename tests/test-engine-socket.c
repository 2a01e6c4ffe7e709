/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests: sockets and scale (fixture in test-engine.h).
 *
 * Server and client sockets, reconnects, many ports on one engine with no
 * thread per port, isolation between ports, frontends that stall or never
 * read replies, the engine driven from the embedder's main loop, and every
 * request number with junk payloads and fds.
 */

#include <config.h>

#include "test-engine.h"

/* Sockets, server mode. */

static void
test_server_stale_socket(void)
{
    struct fx fx;
    struct sockaddr_un sun;
    int fd;

    fx_init(&fx, "stale");
    tu_log("a stale socket file (bound, then closed) is replaced");
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, fx.path);
    fd = TU_SYS(socket(AF_UNIX, SOCK_STREAM, 0));
    TU_SYS(bind(fd, (struct sockaddr *) &sun, sizeof sun));
    close(fd);
    TU_CHECK(access(fx.path, F_OK) == 0);

    fx_start(&fx);
    fx_setup_ready(&fx, 1);
    fx_finish(&fx);
}

static bool
port_settled(const struct vhost_port_info *info, void *aux)
{
    return !info->connected
           && info->counters.connects == info->counters.disconnects;
}

static void
test_server_live_socket(void)
{
    struct fx fx;
    struct vhost_port *port2 = NULL;
    struct sockaddr_un sun;
    int lfd, cfd, error;

    fx_init(&fx, "live");
    fx.engine = fx_start_engine();

    tu_log("a regular file at the path is not replaced");
    {
        FILE *f = fopen(fx.path, "w");
        struct stat st;
        TU_CHECK_NONNULL(f);
        fputs("keep me\n", f);
        fclose(f);
        error = vhost_port_create(fx.engine, &fx.opts, &fx.port);
        TU_CHECK_CMP(error, >, 0);
        TU_CHECK(stat(fx.path, &st) == 0 && S_ISREG(st.st_mode));
        unlink(fx.path);
        fx.port = NULL;
    }

    tu_log("a live listener at the path: vhost_port_create refuses");
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, fx.path);
    lfd = TU_SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    TU_SYS(bind(lfd, (struct sockaddr *) &sun, sizeof sun));
    TU_SYS(listen(lfd, 4));
    error = vhost_port_create(fx.engine, &fx.opts, &fx.port);
    tu_log("  vhost_port_create: %s", tu_strerror(error));
    TU_CHECK_CMP(error, >, 0);
    tu_log("  and the other listener still works");
    cfd = TU_SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    TU_SYS(connect(cfd, (struct sockaddr *) &sun, sizeof sun));
    close(cfd);
    close(lfd);
    unlink(fx.path);
    fx.port = NULL;

    tu_log("a second port at the path of a live port is refused");
    fx_create_port(&fx);
    error = vhost_port_create(fx.engine, &fx.opts, &port2);
    TU_CHECK_CMP(error, >, 0);
    tu_log("  and the live port is not disturbed: no connection seen");
    /* The engine knows its own ports' paths; probing the socket with a
     * connect() shows up on the live port as a frontend that comes and
     * goes, and a real frontend that connects meanwhile is refused as a
     * second one. */
    tu_sleep_ms(100);
    TU_CHECK(tu_wait_port(fx.port, port_settled, NULL, TU_TIMEOUT_MS));
    TU_CHECK_EQ(fx_counters(&fx).connects, 0);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 0);
    tu_log("  and the first port still works");
    fx.fe = tfe_create(tfe_mem_create_default());
    fx_connect_fe(&fx, fx.fe);
    fx_setup_ready(&fx, 1);
    fx_finish(&fx);
}

struct create_ctx {
    struct fx *fx;
    atomic_bool done;
    int error;
};

static void *
create_port_thread(void *ctx_)
{
    struct create_ctx *ctx = ctx_;
    struct vhost_port *port = NULL;

    ctx->error = vhost_port_create(ctx->fx->engine, &ctx->fx->opts, &port);
    atomic_store(&ctx->done, true);
    return NULL;
}

/* A live listener that does not accept (its backlog full, as a hung
 * process's would be): checking whether it is live must not block the
 * caller, or the engine, whose lock vhost_port_create() holds. */
static void
test_server_busy_listener(void)
{
    struct fx fx;
    struct create_ctx ctx;
    struct sockaddr_un sun;
    pthread_t thread;
    int lfd, cfds[4];
    long long deadline;

    fx_init(&fx, "busy");
    fx.engine = fx_start_engine();

    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, fx.path);
    lfd = TU_SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    TU_SYS(bind(lfd, (struct sockaddr *) &sun, sizeof sun));
    TU_SYS(listen(lfd, 0));
    tu_log("fill the listener's backlog");
    for (size_t i = 0; i < ARRAY_SIZE(cfds); i++) {
        cfds[i] = TU_SYS(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC
                                | SOCK_NONBLOCK, 0));
        if (connect(cfds[i], (struct sockaddr *) &sun, sizeof sun)) {
            TU_CHECK(errno == EAGAIN);
        }
    }

    tu_log("vhost_port_create at its path returns promptly with an error");
    ctx.fx = &fx;
    ctx.error = 0;
    atomic_init(&ctx.done, false);
    TU_CHECK_OK(pthread_create(&thread, NULL, create_port_thread, &ctx));
    deadline = tu_now_ms() + 3000;
    while (!atomic_load(&ctx.done)) {
        if (tu_now_ms() > deadline) {
            TU_FAIL("vhost_port_create() blocked for 3 s on a listener "
                    "with a full backlog");
        }
        tu_sleep_ms(5);
    }
    TU_CHECK_OK(pthread_join(thread, NULL));
    tu_log("  vhost_port_create: %s", tu_strerror(ctx.error));
    TU_CHECK_CMP(ctx.error, >, 0);

    for (size_t i = 0; i < ARRAY_SIZE(cfds); i++) {
        close(cfds[i]);
    }
    close(lfd);
    unlink(fx.path);
    fx_finish(&fx);
}

static void
test_server_reaccept(void)
{
    struct fx fx;
    struct vhost_port_counters c;

    fx_init(&fx, "reacc");
    fx_start(&fx);
    for (int i = 0; i < 5; i++) {
        tu_log("frontend %d: connect, ready, hang up", i + 1);
        if (i) {
            fx_connect_fe(&fx, fx.fe);
        }
        fx_setup_ready(&fx, 2);
        tfe_disconnect(fx.fe);
        fx_wait_disconnected(&fx);
        TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    }
    c = fx_counters(&fx);
    TU_CHECK_EQ(c.connects, 5);
    TU_CHECK_EQ(c.disconnects, 5);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 5);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 5);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 5);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_DISCONNECTED), 5);
    fx_finish(&fx);
}

static void
test_server_second_frontend(void)
{
    struct fx fx;
    struct tfe *fe2;

    fx_init(&fx, "second");
    fx_start(&fx);
    fx_setup_ready(&fx, 1);

    tu_log("a second frontend is refused while the first is connected");
    fe2 = tfe_create(NULL);
    for (int i = 0; i < 3; i++) {
        uint64_t f;
        TU_CHECK_OK(tfe_connect(fe2, fx.path));
        TU_CHECK(tfe_get_features(fe2, &f) < 0);
        TU_CHECK(tfe_wait_closed(fe2, TU_TIMEOUT_MS));
        tfe_disconnect(fe2);
    }
    TU_CHECK_EQ(fx_counters(&fx).extra_conns_refused, 3);

    tu_log("the first keeps working");
    TU_CHECK_OK(tfe_sync(fx.fe));
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 2000));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(fx_counters(&fx).connects, 1);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 1);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_DISCONNECTED), 0);

    tu_log("once the first is gone, the next is accepted");
    tfe_disconnect(fx.fe);
    fx_wait_disconnected(&fx);
    fx_connect_fe(&fx, fe2);
    TU_CHECK_OK(tfe_sync(fe2));
    tfe_destroy(fe2);
    fx_finish(&fx);
}

/* Sockets, client mode. */

static bool
has_connect_failures(const struct vhost_port_info *info, void *aux)
{
    return info->counters.connect_failures >= *(uint64_t *) aux;
}

static void
test_client_retry(void)
{
    struct fx fx;
    uint64_t want = 3;

    fx_init(&fx, "cli");
    fx.opts.mode = VHOST_PORT_CLIENT;
    fx_start(&fx);

    tu_log("nothing listens: the engine retries");
    TU_CHECK(tu_wait_port(fx.port, has_connect_failures, &want,
                          TU_TIMEOUT_MS));
    TU_CHECK(!tu_port_info(fx.port).connected);

    tu_log("the frontend listens: the engine connects");
    TU_CHECK_OK(tfe_listen(fx.fe, fx.path));
    TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
    fx_wait_connected(&fx);
    fx_setup_ready(&fx, 2);
    TU_CHECK_EQ(fx_counters(&fx).connects, 1);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_CONNECTED, 1, TU_TIMEOUT_MS));
    fx_finish(&fx);
}

static void
test_client_reconnect(void)
{
    struct fx fx;

    fx_init(&fx, "recon");
    fx.opts.mode = VHOST_PORT_CLIENT;
    fx.engine = fx_start_engine();
    fx.fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_listen(fx.fe, fx.path));
    fx_create_port(&fx);

    for (int i = 0; i < 3; i++) {
        tu_log("connection %d: accept, ready, hang up", i + 1);
        TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
        fx_wait_connected(&fx);
        fx_setup_ready(&fx, 1);
        tfe_disconnect(fx.fe);
        TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, i + 1,
                                TU_TIMEOUT_MS));
    }
    tu_log("the engine reconnected each time");
    TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
    fx_wait_connected(&fx);
    TU_CHECK_EQ(fx_counters(&fx).connects, 4);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 3);

    tu_log("the frontend goes away entirely; the engine keeps trying");
    tfe_disconnect(fx.fe);
    tfe_stop_listening(fx.fe);
    {
        uint64_t want = fx_counters(&fx).connect_failures + 2;
        TU_CHECK(tu_wait_port(fx.port, has_connect_failures, &want,
                              TU_TIMEOUT_MS));
    }
    tu_log("and connects when it is back");
    TU_CHECK_OK(tfe_listen(fx.fe, fx.path));
    TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
    fx_wait_connected(&fx);
    fx_setup_ready(&fx, 1);
    fx_finish(&fx);
    tu_log("a client port does not remove the frontend's socket");
}

/* Scale: many ports on one engine, no thread per port. */
static void
test_many_ports(void)
{
    enum { N = 300 };
    static const int picks[] = { 0, 1, 150, N - 1 };
    struct vhost_engine *engine;
    struct vhost_port *ports[N];
    struct tu_events ev[ARRAY_SIZE(picks)];
    char *paths[N];
    int fds0 = tu_count_fds(), threads0 = tu_count_threads(), threads1;
    struct tfe *fes[ARRAY_SIZE(picks)];

    engine = fx_start_engine();
    threads1 = tu_count_threads();
    TU_CHECK_EQ(threads1, threads0 + 1);

    tu_log("creating %d server ports", N);
    for (size_t i = 0; i < ARRAY_SIZE(picks); i++) {
        tu_events_init(&ev[i]);
    }
    for (int i = 0; i < N; i++) {
        struct vhost_port_options opts;
        char name[32];
        int error;

        snprintf(name, sizeof name, "m%d", i);
        paths[i] = tu_path(name);
        vhost_port_options_init(&opts);
        opts.name = name;
        opts.path = paths[i];
        opts.max_queue_pairs = 1;
        opts.cb = &tu_callbacks;
        opts.aux = NULL;
        for (size_t k = 0; k < ARRAY_SIZE(picks); k++) {
            if (picks[k] == i) {
                opts.aux = &ev[k];
            }
        }
        error = vhost_port_create(engine, &opts, &ports[i]);
        if (error) {
            TU_FAIL("vhost_port_create(%d): %s", i, tu_strerror(error));
        }
    }
    tu_log("the thread count did not grow with ports");
    TU_CHECK_EQ(tu_threads_settle(threads1), threads1);

    tu_log("frontends on ports 0, 1, 150 and %d become ready", N - 1);
    for (size_t k = 0; k < ARRAY_SIZE(picks); k++) {
        fes[k] = tfe_create(tfe_mem_create_default());
        TU_CHECK_OK(tfe_connect(fes[k], paths[picks[k]]));
        CHECK_ACK(tfe_setup_device(fes[k], 1, NULL));
    }
    for (size_t k = 0; k < ARRAY_SIZE(picks); k++) {
        TU_CHECK(tu_events_wait(&ev[k], TU_EV_READY, 1, TU_TIMEOUT_MS));
        TU_CHECK(tu_port_info(ports[picks[k]]).ready);
        TU_CHECK_OK(tfe_sync(fes[k]));
    }
    TU_CHECK(!tu_port_info(ports[2]).connected);
    TU_CHECK_EQ(tu_threads_settle(threads1), threads1);

    tu_log("destroying every port, frontends still connected");
    for (int i = 0; i < N; i++) {
        vhost_port_destroy(ports[i]);
    }
    for (size_t k = 0; k < ARRAY_SIZE(picks); k++) {
        TU_CHECK(tfe_wait_closed(fes[k], TU_TIMEOUT_MS));
        tfe_destroy(fes[k]);
    }
    tu_log("no socket file is left");
    for (int i = 0; i < N; i++) {
        struct stat st;
        if (stat(paths[i], &st) == 0) {
            TU_FAIL("%s still exists after its port was destroyed",
                    paths[i]);
        }
        free(paths[i]);
    }
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    vhost_engine_destroy(engine);
    TU_CHECK_EQ(tu_count_fds(), fds0);
    TU_CHECK_EQ(tu_threads_settle(threads0), threads0);
    for (size_t k = 0; k < ARRAY_SIZE(picks); k++) {
        tu_events_destroy(&ev[k]);
    }
}

/* A misbehaving frontend on one port does not affect another. */
static void
test_isolation(void)
{
    struct fx a, b;
    uint64_t zero = 0;

    fx_init(&a, "isoA");
    fx_init(&b, "isoB");
    a.engine = fx_start_engine();
    b.engine = a.engine;
    fx_create_port(&a);
    fx_create_port(&b);
    a.fe = tfe_create(tfe_mem_create_default());
    b.fe = tfe_create(tfe_mem_create_default());
    fx_connect_fe(&a, a.fe);
    fx_connect_fe(&b, b.fe);
    fx_setup_ready(&a, 2);
    fx_setup_ready(&b, 2);

    tu_log("A sends a bad header and is disconnected");
    TU_CHECK_OK(tfe_send_hdr(a.fe, VHOST_USER_SET_FEATURES, 0x7, 100000,
                             &zero, sizeof zero, NULL, 0));
    fx_expect_disconnect(&a, a.fe, "a bad header");
    TU_CHECK(tu_events_wait(&a.ev, TU_EV_GONE, 1, TU_TIMEOUT_MS));

    tu_log("A reconnects and sends garbage requests with fds");
    fx_connect_fe(&a, a.fe);
    fx_negotiate(a.fe);
    for (uint32_t req = 0; req < 50; req++) {
        int fd = fx_temp_eventfd();
        uint8_t junk[48];
        memset(junk, 0xa5, sizeof junk);
        if (req == VHOST_USER_RESET_OWNER) {
            close(fd);
            continue;
        }
        int r = tfe_request(a.fe, req, true, junk, sizeof junk, &fd, 1);
        close(fd);
        if (r < 0) {
            break;
        }
    }
    tfe_disconnect(a.fe);

    tu_log("B's device is still ready and answering");
    TU_CHECK_OK(tfe_sync(b.fe));
    CHECK_ACK(tfe_net_set_mtu(b.fe, 1400));
    TU_CHECK(tu_port_info(b.port).ready);
    TU_CHECK_EQ(fx_counters(&b).msgs_rejected, 0);
    TU_CHECK_EQ(fx_counters(&b).msgs_bad_header, 0);
    TU_CHECK_EQ(fx_counters(&b).disconnects, 0);
    TU_CHECK_EQ(tu_events_count(&b.ev, TU_EV_GONE), 0);
    TU_CHECK_EQ(tu_events_count(&b.ev, TU_EV_READY), 1);

    fx_wait_disconnected(&a);
    tfe_destroy(a.fe);
    a.fe = NULL;
    vhost_port_destroy(a.port);
    a.port = NULL;
    a.engine = NULL;
    tu_events_destroy(&a.ev);
    free(a.path);
    fx_finish(&b);
}

/* A frontend that sends requests without reading the replies (QEMU
 * CVE-2016-5403 is the backend-side memory version of this), and one that
 * stops in the middle of a message: the engine neither buffers without
 * bound nor stalls other ports for long. */
static void
test_slow_frontend(void)
{
    struct fx a, b;
    struct vhost_user_hdr get = { VHOST_USER_GET_FEATURES,
                                  VHOST_USER_VERSION, 0 };
    long long t_end, worst = 0;

    fx_init(&a, "slowA");
    fx_init(&b, "slowB");
    a.engine = fx_start_engine();
    b.engine = a.engine;
    fx_create_port(&a);
    fx_create_port(&b);
    a.fe = tfe_create(tfe_mem_create_default());
    b.fe = tfe_create(tfe_mem_create_default());
    fx_connect_fe(&a, a.fe);
    fx_connect_fe(&b, b.fe);
    fx_setup_ready(&b, 1);

    tu_log("A stops in the middle of a message: B is not held up");
    TU_CHECK_OK(tfe_sock_send(a.fe->sock, &get, 7, NULL, 0, TU_TIMEOUT_MS));
    for (int i = 0; i < 20; i++) {
        long long t0 = tu_now_ms();
        TU_CHECK_OK(tfe_sync(b.fe));
        worst = MAX(worst, tu_now_ms() - t0);
    }
    tu_log("  worst B round trip: %lld ms", worst);
    TU_CHECK_CMP(worst, <, 500);
    TU_CHECK_OK(tfe_sock_send(a.fe->sock, (uint8_t *) &get + 7, 5, NULL, 0,
                              TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_recv_reply(a.fe, VHOST_USER_GET_FEATURES,
                               &(struct tfe_reply) { .n_fds = 0 },
                               TU_TIMEOUT_MS));

    /* The engine writes replies with a 1 s timeout; if it waits in the
     * loop thread, every port stalls.  The stall happens in most floods,
     * not all (it depends on where the socket buffers fill), so flood a
     * few times. */
    tu_log("A floods GET_FEATURES and never reads a reply, 3 times");
    worst = 0;
    for (int round = 0; round < 3; round++) {
        bool closed = false;
        int n_sent = 0;

        if (round) {
            tfe_disconnect(a.fe);
            fx_wait_disconnected(&a);
            fx_connect_fe(&a, a.fe);
        }
        t_end = tu_now_ms() + 4000;
        while (tu_now_ms() < t_end && !closed) {
            long long t0;

            for (int i = 0; i < 2000; i++) {
                int error = tfe_sock_send(a.fe->sock, &get, sizeof get,
                                          NULL, 0, 0);
                if (error == -ETIMEDOUT) {
                    break;
                } else if (error) {
                    closed = true;
                    break;
                }
                n_sent++;
            }
            /* Let the engine get to A's backlog, then time B: a round trip
             * and a status read, which an embedder does from its own
             * thread. */
            tu_sleep_ms(50);
            t0 = tu_now_ms();
            TU_CHECK_OK(tfe_sync(b.fe));
            TU_CHECK(tu_port_info(b.port).ready);
            worst = MAX(worst, tu_now_ms() - t0);
            if (!tu_port_info(a.port).connected) {
                closed = true;
            }
        }
        tu_log("  round %d: sent %d requests; A %s; worst B round trip "
               "so far %lld ms", round + 1, n_sent,
               closed ? "was disconnected" : "is still connected", worst);
    }
    tu_log("B answers, and its status is readable, promptly throughout "
           "(under 250 ms)");
    TU_CHECK_CMP(worst, <, 250);
    TU_CHECK(tu_port_info(b.port).ready);

    tfe_destroy(a.fe);
    a.fe = NULL;
    fx_wait_disconnected(&a);
    vhost_port_destroy(a.port);
    a.port = NULL;
    a.engine = NULL;
    tu_events_destroy(&a.ev);
    free(a.path);
    fx_finish(&b);
}

/* Embedder main loop: the engine runs on this thread through
 * vhost_engine_get_fd() / next_timeout() / run(); a frontend thread talks
 * to it. */
struct loop_ctx {
    const char *path;
    struct vhost_port *port;
    struct tu_events *ev;
    atomic_bool done;
};

static void *
loop_frontend(void *ctx_)
{
    struct loop_ctx *ctx = ctx_;
    struct tfe *fe = tfe_create(NULL);
    uint64_t zero = 0;

    tu_log("[frontend thread] connect and bring 2 pairs up");
    TU_CHECK_OK(tfe_connect_retry(fe, ctx->path, TU_TIMEOUT_MS));
    CHECK_ACK(tfe_setup_device(fe, 2, NULL));
    TU_CHECK(tu_events_wait(ctx->ev, TU_EV_READY, 1, TU_TIMEOUT_MS));
    TU_CHECK(tu_port_info(ctx->port).ready);

    tu_log("[frontend thread] a rejected message is acked, not fatal");
    if (tfe_set_vring_num(fe, 0, 3) != TFE_NACK) {
        TU_FAIL("SET_VRING_NUM 3 was not rejected");
    }
    TU_CHECK_OK(tfe_sync(fe));

    tu_log("[frontend thread] a bad header ends the connection");
    TU_CHECK_OK(tfe_send_hdr(fe, VHOST_USER_SET_OWNER, 0, 0, &zero,
                             sizeof zero, NULL, 0));
    TU_CHECK(tfe_wait_closed(fe, TU_TIMEOUT_MS));
    TU_CHECK(tu_events_wait(ctx->ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));

    tu_log("[frontend thread] again, and a clean hang-up");
    TU_CHECK_OK(tfe_connect_retry(fe, ctx->path, TU_TIMEOUT_MS));
    CHECK_ACK(tfe_setup_device(fe, 1, NULL));
    TU_CHECK(tu_events_wait(ctx->ev, TU_EV_READY, 2, TU_TIMEOUT_MS));
    tfe_destroy(fe);
    TU_CHECK(tu_events_wait(ctx->ev, TU_EV_DISCONNECTED, 2, TU_TIMEOUT_MS));
    atomic_store(&ctx->done, true);
    return NULL;
}

static void
test_embedder_loop(void)
{
    struct fx fx;
    struct vhost_port_options copts;
    struct vhost_port *client;
    char *cpath = tu_path("loopcli");
    struct loop_ctx ctx;
    pthread_t thread;
    long long deadline;
    int efd, n_runs = 0;
    uint64_t want = 2;

    fx_init(&fx, "loop");
    tu_log("the engine is not started: no thread of its own");
    TU_CHECK_OK(vhost_engine_create(&fx.engine));
    fx_create_port(&fx);
    vhost_port_options_init(&copts);
    copts.path = cpath;
    copts.mode = VHOST_PORT_CLIENT;
    copts.reconnect_min_ms = 10;
    copts.reconnect_max_ms = 40;
    TU_CHECK_OK(vhost_port_create(fx.engine, &copts, &client));
    TU_CHECK_EQ(tu_threads_settle(fx.threads0), fx.threads0);
    efd = vhost_engine_get_fd(fx.engine);
    TU_CHECK_CMP(efd, >=, 0);

    ctx.path = fx.path;
    ctx.port = fx.port;
    ctx.ev = &fx.ev;
    atomic_init(&ctx.done, false);
    TU_CHECK_OK(pthread_create(&thread, NULL, loop_frontend, &ctx));

    tu_log("running the loop on the main thread");
    deadline = tu_now_ms() + 4 * TU_TIMEOUT_MS;
    while (!atomic_load(&ctx.done)) {
        struct pollfd pfd = { .fd = efd, .events = POLLIN };
        int timeout = vhost_engine_next_timeout(fx.engine);

        if (timeout < 0 || timeout > 100) {
            timeout = 100;
        }
        TU_SYS(poll(&pfd, 1, timeout) < 0 && errno != EINTR ? -1 : 0);
        TU_SYS(vhost_engine_run(fx.engine, 0) < 0 ? -1 : 0);
        n_runs++;
        if (tu_now_ms() > deadline) {
            TU_FAIL("the frontend thread did not finish");
        }
    }
    TU_CHECK_OK(pthread_join(thread, NULL));
    tu_log("the loop ran %d times", n_runs);

    tu_log("timers run from the loop: the client port retries");
    while (tu_port_info(client).counters.connect_failures < want) {
        struct pollfd pfd = { .fd = efd, .events = POLLIN };
        int timeout = vhost_engine_next_timeout(fx.engine);

        if (timeout >= 0) {
            /* A pending fx_reconnect is due within reconnect_max_ms. */
            TU_CHECK_CMP(timeout, <=, 1000);
        }
        poll(&pfd, 1, timeout < 0 ? 100 : timeout);
        TU_SYS(vhost_engine_run(fx.engine, 0) < 0 ? -1 : 0);
        if (tu_now_ms() > deadline) {
            TU_FAIL("the client port did not retry");
        }
    }

    tu_log("vhost_engine_run() with a timeout returns within it");
    {
        long long t0 = tu_now_ms();
        TU_SYS(vhost_engine_run(fx.engine, 50) < 0 ? -1 : 0);
        TU_CHECK_CMP(tu_now_ms() - t0, <, 1000);
    }
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 2);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 2);
    TU_CHECK_EQ(fx_counters(&fx).msgs_bad_header, 1);
    vhost_port_destroy(client);
    free(cpath);
    fx_finish(&fx);
}

/* A sweep of malformed requests: every request number, several payload
 * sizes, with and without fds.  Whatever the engine does with each, the
 * process survives and nothing leaks. */
static void
test_garbage_sweep(void)
{
    static const uint32_t sizes[] = { 0, 4, 8, 40, 264, 4096 };
    static uint8_t junk[VHOST_USER_MAX_PAYLOAD];
    struct fx fx;
    int e0, n_disconnects = 0;

    fx_init(&fx, "sweep");
    fx_start(&fx);
    for (size_t i = 0; i < sizeof junk; i++) {
        junk[i] = (uint8_t) (i * 131 + 7);
    }
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);
    fx.fe->timeout_ms = 2000;

    for (uint32_t req = 0; req <= VHOST_USER_N_REQUESTS + 1; req++) {
        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
            for (size_t n_fds = 0; n_fds <= 2; n_fds++) {
                int fds[2];
                int r;

                for (size_t j = 0; j < n_fds; j++) {
                    fds[j] = fx_temp_eventfd();
                }
                r = tfe_request(fx.fe, req, true, junk, sizes[s], fds,
                                n_fds);
                if (!r && req == VHOST_USER_RESET_OWNER) {
                    /* The device forgot REPLY_ACK. */
                    fx.fe->reply_ack = false;
                    fx_negotiate(fx.fe);
                }
                if (r >= 0 && req < VHOST_USER_N_REQUESTS
                    && (req == VHOST_USER_GET_FEATURES
                        || req == VHOST_USER_GET_PROTOCOL_FEATURES
                        || req == VHOST_USER_GET_VRING_BASE
                        || req == VHOST_USER_GET_QUEUE_NUM
                        || req == VHOST_USER_GET_MAX_MEM_SLOTS
                        || req == VHOST_USER_GET_STATUS
                        || req == VHOST_USER_SET_LOG_BASE)) {
                    /* Answered with its own reply, which tfe_request()
                     * may have taken for an ack; resynchronise. */
                    r = tfe_sync(fx.fe);
                }
                for (size_t j = 0; j < n_fds; j++) {
                    close(fds[j]);
                }
                if (r < 0 || (r = tfe_sync(fx.fe)) < 0) {
                    n_disconnects++;
                    tfe_disconnect(fx.fe);
                    fx_reconnect(&fx);
                }
            }
        }
    }
    tu_log("%d disconnects along the way", n_disconnects);
    TU_CHECK_OK(tfe_sync(fx.fe));
    tfe_disconnect(fx.fe);
    fx_wait_disconnected(&fx);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 - 1);
    TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    fx_finish(&fx);
}

const struct tu_test tu_engine_socket_tests[] = {
    { "server-stale-socket", test_server_stale_socket,
      "a stale socket file is replaced" },
    { "server-live-socket", test_server_live_socket,
      "a live listener is not stolen" },
    { "server-busy-listener", test_server_busy_listener,
      "a live listener that does not accept does not block the engine" },
    { "server-reaccept", test_server_reaccept,
      "a server port accepts again after a frontend leaves" },
    { "server-second-frontend", test_server_second_frontend,
      "a second simultaneous frontend is refused" },
    { "client-retry", test_client_retry,
      "a client port retries until the frontend listens" },
    { "client-reconnect", test_client_reconnect,
      "a client port reconnects after the frontend hangs up" },
    { "many-ports", test_many_ports,
      "300 ports on one engine: no thread per port, nothing left" },
    { "isolation", test_isolation,
      "a misbehaving frontend does not affect another port" },
    { "slow-frontend", test_slow_frontend,
      "a frontend that stalls or never reads replies" },
    { "embedder-loop", test_embedder_loop,
      "the engine driven from the embedder's main loop" },
    { "garbage-sweep", test_garbage_sweep,
      "every request number with junk payloads and fds" },
};

const size_t tu_n_engine_socket_tests = ARRAY_SIZE(tu_engine_socket_tests);
