/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test-engine: the C test driver.  "test-engine NAME" runs one test;
 * "test-engine --list" lists them; "test-engine --all" runs each in a child
 * process and summarises.  The autotest files (guest-mem.at,
 * vhost-user.at, engine.at, datapath.at, packed.at) run one test each
 * through ENGINE_TEST.
 *
 * This file holds the engine tests: the engine runs in-process (in its own
 * thread, or driven from this thread in the embedder-loop test) and the
 * test plays the frontend with tfe (test-frontend.h).  Every test ends with
 * the same leak check: the fds, threads and guest mappings of the process
 * are back where they were before the engine was created.
 *
 * Counting fds: the test process holds both ends of everything.  The
 * engine's share is what /proc/self/fd holds minus what the frontends hold
 * (tfe_count_fds()), so a test takes that figure before sending a message
 * with fds, closes the frontend's copies afterwards, and compares.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-dirty-log.h"
#include "vhost-user-msg.h"
#include "virtio.h"

/* The protocol features the engine implements (the contract). */
#define SUPPORTED_PROTOCOL_FEATURES                                     \
    (FEATURE_BIT(VHOST_USER_PROTOCOL_F_MQ)                              \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_LOG_SHMFD)                     \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_RARP)                          \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)                     \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_NET_MTU)                       \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ)                   \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)           \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_STATUS)                        \
     | FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIG))

#define PF(NAME) FEATURE_BIT(VHOST_USER_PROTOCOL_F_##NAME)

/* Fixture: one engine in its own thread, one port, one frontend. */
struct fx {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct vhost_port_options opts;
    struct tu_events ev;
    char *path;
    struct tfe *fe;

    /* Process baseline, taken before the engine exists. */
    int fds0;
    int threads0;
};

/* Sets up 'fx' with default options (server mode, 2 queue pairs, callbacks
 * recorded in 'fx->ev'); the caller may change 'fx->opts' before
 * fx_start(). */
static void
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

static struct vhost_engine *
start_engine(void)
{
    struct vhost_engine *engine = NULL;

    TU_CHECK_OK(vhost_engine_create(&engine));
    TU_CHECK_NONNULL(engine);
    TU_CHECK_OK(vhost_engine_start(engine));
    return engine;
}

static void
create_port(struct fx *fx)
{
    int error = vhost_port_create(fx->engine, &fx->opts, &fx->port);

    if (error) {
        TU_FAIL("vhost_port_create(%s): %s", fx->path, tu_strerror(error));
    }
    TU_CHECK_NONNULL(fx->port);
}

static void
wait_connected(struct fx *fx)
{
    if (!tu_wait_port(fx->port, tu_port_connected, NULL, TU_TIMEOUT_MS)) {
        TU_FAIL("the port did not report a connection");
    }
}

static void
wait_disconnected(struct fx *fx)
{
    if (!tu_wait_port(fx->port, tu_port_disconnected, NULL,
                      TU_TIMEOUT_MS)) {
        TU_FAIL("the port still reports a connection");
    }
}

/* Connects 'fe' to the server port of 'fx' and waits until the engine
 * has accepted it. */
static void
connect_fe(struct fx *fx, struct tfe *fe)
{
    TU_CHECK_OK(tfe_connect(fe, fx->path));
    wait_connected(fx);
}

/* Starts the engine, creates the port and connects a frontend with the
 * default guest memory. */
static void
fx_start(struct fx *fx)
{
    fx->engine = start_engine();
    create_port(fx);
    fx->fe = tfe_create(tfe_mem_create_default());
    if (fx->opts.mode == VHOST_PORT_SERVER) {
        connect_fe(fx, fx->fe);
    }
}

/* Tears down 'fx' and checks that nothing leaked: fds, threads, guest
 * mappings, the socket file. */
static void
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

static struct vhost_port_counters
counters(struct fx *fx)
{
    return tu_port_info(fx->port).counters;
}

/* fds held by the engine (everything but what 'fx->fe' holds).
 *
 * The engine replies to a message before it closes the fds that came with
 * it (vhost_user_msg_release() runs after dispatch), so an ack does not
 * mean they are closed yet.  It does release them before it reads the next
 * message, so a round trip first makes the count exact. */
static int
engine_fds(const struct fx *fx)
{
    if (fx->fe && fx->fe->sock >= 0) {
        tfe_sync(fx->fe);       /* Fails harmlessly if disconnected. */
    }
    return tu_count_fds() - tfe_count_fds(fx->fe);
}

/* Guest memory mappings held by the engine. */
static int
engine_maps(const struct fx *fx)
{
    return tu_count_maps(TFE_MEM_NAME) - tfe_count_maps(fx->fe);
}

static int
temp_eventfd(void)
{
    return TU_SYS(eventfd(0, EFD_CLOEXEC));
}

static const char *
result_to_string(int r)
{
    return (r == 0 ? "accepted (ack 0)"
            : r == TFE_NACK ? "rejected (nonzero ack)"
            : tu_strerror(r));
}

/* Checks that EXPR, a typed tfe request with NEED_REPLY, was rejected with
 * a nonzero ack, that msgs_rejected grew by one, and that the connection
 * is still up. */
#define CHECK_NACK(FX, EXPR)                                            \
    do {                                                                \
        uint64_t rej_ = counters(FX).msgs_rejected;                     \
        int r_ = (EXPR);                                                \
        if (r_ != TFE_NACK) {                                           \
            TU_FAIL("%s: expected a nonzero ack, got %s", #EXPR,        \
                    result_to_string(r_));                              \
        }                                                               \
        TU_CHECK_EQ(counters(FX).msgs_rejected, rej_ + 1);              \
    } while (0)

/* Checks that EXPR, a typed tfe request, was accepted (ack 0). */
#define CHECK_ACK(EXPR)                                                 \
    do {                                                                \
        int r_ = (EXPR);                                                \
        if (r_) {                                                       \
            TU_FAIL("%s: expected success, got %s", #EXPR,              \
                    result_to_string(r_));                              \
        }                                                               \
    } while (0)

/* Waits for the engine to close 'fe''s connection and for the port to
 * report it. */
static void
expect_disconnect(struct fx *fx, struct tfe *fe, const char *why)
{
    tu_log("  the engine disconnects the frontend (%s)", why);
    if (!tfe_wait_closed(fe, TU_TIMEOUT_MS)) {
        TU_FAIL("the engine did not close the connection after %s", why);
    }
    tfe_disconnect(fe);
    wait_disconnected(fx);
}

/* Negotiates the default features with REPLY_ACK (tfe_negotiate()). */
static void
negotiate(struct tfe *fe)
{
    CHECK_ACK(tfe_negotiate(fe, NULL));
    TU_CHECK(fe->reply_ack);
}

/* After a disconnect, connects fx->fe again and negotiates. */
static void
reconnect(struct fx *fx)
{
    wait_disconnected(fx);
    connect_fe(fx, fx->fe);
    negotiate(fx->fe);
}

/* Brings fx->fe's device to ready with 'n_pairs' queue pairs. */
static void
setup_ready(struct fx *fx, unsigned int n_pairs)
{
    CHECK_ACK(tfe_setup_device(fx->fe, n_pairs, NULL));
    TU_CHECK(tu_port_info(fx->port).ready);
}

/* Engine lifecycle. */

static void
test_lifecycle(void)
{
    int fds0 = tu_count_fds(), threads0 = tu_count_threads();
    struct vhost_engine *engine = NULL;
    struct vhost_port_options opts;
    struct vhost_port *port = NULL;
    char *path = tu_path("lc");

    tu_log("create and destroy without starting");
    TU_CHECK_OK(vhost_engine_create(&engine));
    TU_CHECK_EQ(tu_threads_settle(threads0), threads0);
    vhost_engine_destroy(engine);
    TU_CHECK_EQ(tu_count_fds(), fds0);

    tu_log("start creates one thread, stop joins it");
    TU_CHECK_OK(vhost_engine_create(&engine));
    TU_CHECK_OK(vhost_engine_start(engine));
    TU_CHECK_EQ(tu_threads_settle(threads0 + 1), threads0 + 1);
    vhost_port_options_init(&opts);
    TU_CHECK_EQ(opts.features, vhost_default_features());
    TU_CHECK_EQ(opts.protocol_features, vhost_default_protocol_features());
    tu_log("the default offers every supported protocol feature but CONFIG");
    TU_CHECK_EQ(opts.protocol_features,
                vhost_supported_protocol_features() & ~PF(CONFIG));
    TU_CHECK_CMP(opts.max_queue_pairs, >=, 1);
    TU_CHECK_CMP(opts.max_queue_pairs, <=, VHOST_MAX_QUEUE_PAIRS);
    opts.path = path;
    tu_log("a port without a name takes its path as name");
    TU_CHECK_OK(vhost_port_create(engine, &opts, &port));
    TU_CHECK(!strcmp(vhost_port_get_name(port), path));
    vhost_engine_stop(engine);
    TU_CHECK_EQ(tu_threads_settle(threads0), threads0);

    tu_log("a port without a path is refused");
    {
        struct vhost_port *p2 = NULL;
        opts.path = NULL;
        TU_CHECK(vhost_port_create(engine, &opts, &p2) != 0);
    }
    tu_log("max_queue_pairs 0 and above VHOST_MAX_QUEUE_PAIRS are refused");
    {
        struct vhost_port *p2 = NULL;
        char *p2path = tu_path("lc2");
        opts.path = p2path;
        opts.max_queue_pairs = 0;
        TU_CHECK(vhost_port_create(engine, &opts, &p2) != 0);
        opts.max_queue_pairs = VHOST_MAX_QUEUE_PAIRS + 1;
        TU_CHECK(vhost_port_create(engine, &opts, &p2) != 0);
        free(p2path);
    }

    tu_log("a socket path too long for sockaddr_un is refused");
    {
        struct vhost_port *p2 = NULL;
        char longpath[300];
        memset(longpath, 'x', sizeof longpath - 1);
        longpath[0] = '/';
        longpath[sizeof longpath - 1] = '\0';
        opts.path = longpath;
        opts.max_queue_pairs = 1;
        TU_CHECK(vhost_port_create(engine, &opts, &p2) != 0);
    }

    tu_log("restart, destroy a port and the engine while running");
    TU_CHECK_OK(vhost_engine_start(engine));
    vhost_port_destroy(port);
    vhost_engine_destroy(engine);
    TU_CHECK_EQ(tu_threads_settle(threads0), threads0);
    TU_CHECK_EQ(tu_count_fds(), fds0);
    free(path);

    tu_log("vhost_features_to_string names features");
    {
        char buf[256];
        vhost_features_to_string(FEATURE_BIT(VIRTIO_F_VERSION_1), buf,
                                 sizeof buf);
        TU_CHECK(strlen(buf) > 0);
        vhost_features_to_string(UINT64_MAX, buf, 16);
        TU_CHECK(strlen(buf) < 16);
    }
}

/* Features. */

static void
test_features(void)
{
    struct fx fx;
    uint64_t f;

    fx_init(&fx, "feat");
    fx_start(&fx);

    tu_log("GET_FEATURES returns the default features plus "
           "PROTOCOL_FEATURES");
    TU_CHECK_OK(tfe_get_features(fx.fe, &f));
    TU_CHECK_EQ(f, vhost_default_features()
                   | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES));
    TU_CHECK(f & FEATURE_BIT(VIRTIO_F_VERSION_1));
    tu_log("the packed ring is offered by default, as DPDK's vhost "
           "library offers it: the frontend decides");
    TU_CHECK(f & FEATURE_BIT(VIRTIO_F_RING_PACKED));

    tu_log("a port offering fewer features");
    tfe_disconnect(fx.fe);
    vhost_port_destroy(fx.port);
    fx.opts.features = FEATURE_BIT(VIRTIO_F_VERSION_1)
                       | FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF);
    create_port(&fx);
    connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_get_features(fx.fe, &f));
    TU_CHECK_EQ(f, fx.opts.features
                   | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES));

    tu_log("with REPLY_ACK: SET_FEATURES of offered bits is acked");
    CHECK_ACK(tfe_get_protocol_features(fx.fe, &f));
    CHECK_ACK(tfe_set_protocol_features(fx.fe, f));
    CHECK_ACK(tfe_set_features(fx.fe, FEATURE_BIT(VIRTIO_F_VERSION_1)));
    TU_CHECK_EQ(tu_port_info(fx.port).features,
                FEATURE_BIT(VIRTIO_F_VERSION_1));
    CHECK_ACK(tfe_set_features(fx.fe, fx.opts.features
                               | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES)));
    TU_CHECK_EQ(tu_port_info(fx.port).features,
                fx.opts.features
                | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES));

    tu_log("SET_FEATURES with a bit not offered is rejected");
    CHECK_NACK(&fx, tfe_set_features(fx.fe, FEATURE_BIT(VIRTIO_NET_F_CSUM)
                                     | FEATURE_BIT(VIRTIO_F_VERSION_1)));
    CHECK_NACK(&fx, tfe_set_features(fx.fe, FEATURE_BIT(63)));
    TU_CHECK_EQ(tu_port_info(fx.port).features,
                fx.opts.features
                | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES));
    TU_CHECK_OK(tfe_sync(fx.fe));

    tu_log("...and without NEED_REPLY it ends the connection");
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_set_features(fx.fe, FEATURE_BIT(VIRTIO_NET_F_CSUM)));
    expect_disconnect(&fx, fx.fe, "an unoffered feature");
    TU_CHECK_EQ(counters(&fx).disconnects, 1);

    fx_finish(&fx);
}

static void
test_protocol_features(void)
{
    struct fx fx;
    uint64_t pf;

    tu_log("the engine supports exactly the contract's protocol features");
    TU_CHECK_EQ(vhost_supported_protocol_features(),
                SUPPORTED_PROTOCOL_FEATURES);

    fx_init(&fx, "pf");
    fx_start(&fx);
    tu_log("GET_PROTOCOL_FEATURES with the default options: no CONFIG, "
           "which QEMU's virtio-net warns of");
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK_EQ(pf, SUPPORTED_PROTOCOL_FEATURES & ~PF(CONFIG));

    tu_log("options.protocol_features is intersected with the supported "
           "set");
    tfe_disconnect(fx.fe);
    vhost_port_destroy(fx.port);
    fx.opts.protocol_features = PF(MQ) | PF(REPLY_ACK) | PF(CONFIG)
                                | PF(INFLIGHT_SHMFD) | FEATURE_BIT(40);
    create_port(&fx);
    connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK_EQ(pf, PF(MQ) | PF(REPLY_ACK) | PF(CONFIG));

    tu_log("SET_PROTOCOL_FEATURES with a subset is accepted");
    CHECK_ACK(tfe_set_protocol_features(fx.fe, PF(REPLY_ACK)));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK_EQ(tu_port_info(fx.port).protocol_features, PF(REPLY_ACK));

    tu_log("with REPLY_ACK, SET_PROTOCOL_FEATURES with an unsupported bit "
           "is rejected");
    {
        uint64_t bad = PF(REPLY_ACK) | PF(INFLIGHT_SHMFD);
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_PROTOCOL_FEATURES,
                                    true, &bad, sizeof bad, NULL, 0));
        bad = PF(REPLY_ACK) | PF(LOG_SHMFD);    /* Supported, not offered. */
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_PROTOCOL_FEATURES,
                                    true, &bad, sizeof bad, NULL, 0));
    }
    TU_CHECK_EQ(tu_port_info(fx.port).protocol_features, PF(REPLY_ACK));

    tu_log("before REPLY_ACK, a rejected SET_PROTOCOL_FEATURES disconnects");
    tfe_disconnect(fx.fe);
    wait_disconnected(&fx);
    connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_set_protocol_features(fx.fe, PF(REPLY_ACK)
                                          | PF(INFLIGHT_SHMFD)));
    expect_disconnect(&fx, fx.fe, "unsupported protocol features");

    fx_finish(&fx);
}

/* REPLY_ACK: acks only when negotiated and asked for. */
static void
test_reply_ack(void)
{
    struct fx fx;
    uint64_t pf;

    fx_init(&fx, "ack");
    fx_start(&fx);

    tu_log("before REPLY_ACK is negotiated, NEED_REPLY gets no reply");
    TU_CHECK_OK(tfe_request(fx.fe, VHOST_USER_SET_OWNER, false, NULL, 0,
                            NULL, 0));
    TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_SET_OWNER,
                         VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                         NULL, 0, NULL, 0));
    /* tfe_sync() fails with -EPROTO if an ack arrives first. */
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK(tu_port_info(fx.port).owned);

    tu_log("after REPLY_ACK, success with NEED_REPLY is acked with 0");
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK_OK(tfe_set_protocol_features(fx.fe, pf));
    TU_CHECK(fx.fe->reply_ack);
    CHECK_ACK(tfe_set_owner(fx.fe));
    TU_CHECK_EQ(fx.fe->last_ack, 0);
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 1500));
    CHECK_ACK(tfe_set_vring_num(fx.fe, 0, 256));
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 1, false));
    CHECK_ACK(tfe_set_status(fx.fe, VIRTIO_CONFIG_S_ACKNOWLEDGE));

    tu_log("success without NEED_REPLY gets no reply");
    fx.fe->reply_ack = false;
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 9000));
    CHECK_ACK(tfe_set_owner(fx.fe));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK_EQ(tu_port_info(fx.port).mtu, 9000);

    tu_log("GET requests with NEED_REPLY get their own reply, once");
    {
        uint64_t f;
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_FEATURES,
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             NULL, 0, NULL, 0));
        TU_CHECK_OK(tfe_recv_u64(fx.fe, VHOST_USER_GET_FEATURES, &f));
        TU_CHECK_EQ(f, fx.fe->offered_features);
        TU_CHECK_OK(tfe_sync(fx.fe));
    }

    TU_CHECK_EQ(counters(&fx).msgs_rejected, 0);
    fx_finish(&fx);
}

/* The rejection policy: no ack asked for, or a GET, means disconnect. */
static void
test_reject_disconnects(void)
{
    struct fx fx;
    struct vhost_port_counters c;

    fx_init(&fx, "rejdc");
    fx_start(&fx);

    tu_log("without REPLY_ACK, a rejected SET_VRING_NUM disconnects");
    TU_CHECK_OK(tfe_set_owner(fx.fe));
    TU_CHECK_OK(tfe_set_vring_num(fx.fe, 0, 3));
    expect_disconnect(&fx, fx.fe, "a bad vring size");
    c = counters(&fx);
    TU_CHECK_EQ(c.msgs_rejected, 1);
    TU_CHECK_EQ(c.disconnects, 1);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 0);

    tu_log("with REPLY_ACK but no NEED_REPLY: disconnects");
    reconnect(&fx);
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_set_vring_num(fx.fe, 0, 3));
    expect_disconnect(&fx, fx.fe, "a bad vring size, no NEED_REPLY");

    tu_log("with REPLY_ACK and NEED_REPLY: nonzero ack, still connected");
    reconnect(&fx);
    CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, 0, 3));
    TU_CHECK_OK(tfe_sync(fx.fe));

    tu_log("a failed GET always disconnects, even with NEED_REPLY");
    {
        struct vhost_user_vring_state st = { .index = 1000 };
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_VRING_BASE,
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             &st, sizeof st, NULL, 0));
        expect_disconnect(&fx, fx.fe, "GET_VRING_BASE of a bad index");
    }
    tu_log("...also a GET with a bad payload size");
    reconnect(&fx);
    {
        uint8_t junk[16] = { 0 };
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_FEATURES,
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             junk, sizeof junk, NULL, 0));
        expect_disconnect(&fx, fx.fe, "GET_FEATURES with 16 bytes");
    }

    c = counters(&fx);
    TU_CHECK_EQ(c.disconnects, 4);
    TU_CHECK_EQ(c.connects, 4);
    TU_CHECK_EQ(c.msgs_bad_size, 1);
    fx_finish(&fx);
}

/* Payload sizes outside the dispatch table's range. */
static void
test_bad_size(void)
{
    static const struct {
        uint32_t request;
        uint32_t size;
    } cases[] = {
        { VHOST_USER_SET_FEATURES, 4 },
        { VHOST_USER_SET_FEATURES, 16 },
        { VHOST_USER_SET_FEATURES, 0 },
        { VHOST_USER_SET_OWNER, 16 },
        { VHOST_USER_SET_OWNER, 4096 },
        { VHOST_USER_SET_VRING_NUM, 4 },
        { VHOST_USER_SET_VRING_NUM, 12 },
        { VHOST_USER_SET_VRING_ADDR, 39 },
        { VHOST_USER_SET_VRING_ADDR, 41 },
        { VHOST_USER_SET_VRING_KICK, 4 },
        { VHOST_USER_SET_VRING_ENABLE, 0 },
        { VHOST_USER_NET_SET_MTU, 2 },
        { VHOST_USER_SEND_RARP, 6 },
        { VHOST_USER_SET_MEM_TABLE, 8 },
        { VHOST_USER_SET_MEM_TABLE, 4000 },
        { VHOST_USER_ADD_MEM_REG, 32 },
        { VHOST_USER_SET_STATUS, 1 },
        { VHOST_USER_SET_CONFIG, 269 },
    };
    static uint8_t zeros[VHOST_USER_MAX_PAYLOAD];
    struct fx fx;
    int e0;

    fx_init(&fx, "size");
    fx_start(&fx);
    negotiate(fx.fe);
    e0 = engine_fds(&fx);

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        uint64_t bad0 = counters(&fx).msgs_bad_size;
        bool with_fd = i % 2;
        int fd = with_fd ? temp_eventfd() : -1;

        tu_log("%s with %"PRIu32" payload bytes%s: rejected",
               vhost_user_request_to_string(cases[i].request),
               cases[i].size, with_fd ? " and an fd" : "");
        CHECK_NACK(&fx, tfe_request(fx.fe, cases[i].request, true, zeros,
                                    cases[i].size, &fd, with_fd));
        TU_CHECK_EQ(counters(&fx).msgs_bad_size, bad0 + 1);
        if (fd >= 0) {
            close(fd);
        }
        TU_CHECK_EQ(engine_fds(&fx), e0);
    }
    TU_CHECK_OK(tfe_sync(fx.fe));

    tu_log("without NEED_REPLY a bad size disconnects");
    TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION,
                         zeros, 4, NULL, 0));
    expect_disconnect(&fx, fx.fe, "SET_FEATURES with 4 bytes");
    TU_CHECK_EQ(counters(&fx).msgs_bad_size, ARRAY_SIZE(cases) + 1);
    fx_finish(&fx);
}

/* Wrong numbers of fds; every fd is closed by the engine. */
static void
test_bad_fds(void)
{
    static const struct {
        uint32_t request;
        uint32_t size;
        size_t n_fds;
    } cases[] = {
        { VHOST_USER_SET_FEATURES, 8, 1 },
        { VHOST_USER_SET_OWNER, 0, 3 },
        { VHOST_USER_GET_FEATURES, 0, 0 },      /* Placeholder, skipped. */
        { VHOST_USER_SET_VRING_NUM, 8, 1 },
        { VHOST_USER_SET_VRING_KICK, 8, 2 },
        { VHOST_USER_SET_VRING_CALL, 8, 8 },
        { VHOST_USER_SET_LOG_FD, 0, 0 },
        { VHOST_USER_SET_LOG_FD, 0, 2 },
        { VHOST_USER_SET_BACKEND_REQ_FD, 0, 0 },
        { VHOST_USER_SET_BACKEND_REQ_FD, 0, 2 },
        { VHOST_USER_ADD_MEM_REG, 40, 0 },
        { VHOST_USER_ADD_MEM_REG, 40, 2 },
        { VHOST_USER_REM_MEM_REG, 40, 2 },
        { VHOST_USER_SET_MEM_TABLE, 40, 0 },
        { VHOST_USER_SET_MEM_TABLE, 40, 12 },   /* More than 8. */
        { VHOST_USER_SET_STATUS, 8, 1 },
    };
    static uint8_t zeros[VHOST_USER_MAX_PAYLOAD];
    struct fx fx;
    int e0;

    fx_init(&fx, "fds");
    fx_start(&fx);
    negotiate(fx.fe);
    e0 = engine_fds(&fx);

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int fds[16];
        uint64_t bad0, closed0;

        if (cases[i].request == VHOST_USER_GET_FEATURES) {
            continue;
        }
        bad0 = counters(&fx).msgs_bad_fds;
        closed0 = counters(&fx).fds_closed;
        tu_log("%s with %zu fds: rejected, fds closed",
               vhost_user_request_to_string(cases[i].request),
               cases[i].n_fds);
        for (size_t j = 0; j < cases[i].n_fds; j++) {
            fds[j] = temp_eventfd();
        }
        CHECK_NACK(&fx, tfe_request(fx.fe, cases[i].request, true, zeros,
                                    cases[i].size, fds, cases[i].n_fds));
        TU_CHECK_EQ(counters(&fx).msgs_bad_fds, bad0 + 1);
        for (size_t j = 0; j < cases[i].n_fds; j++) {
            close(fds[j]);
        }
        TU_CHECK_EQ(engine_fds(&fx), e0);
        /* The kernel drops fds beyond VHOST_USER_MAX_FDS itself. */
        TU_CHECK_EQ(counters(&fx).fds_closed,
                    closed0 + MIN(cases[i].n_fds, VHOST_USER_MAX_FDS));
    }

    tu_log("fds on a GET are a bad fd count too, and a GET disconnects");
    {
        int fd = temp_eventfd();
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_FEATURES,
                             VHOST_USER_VERSION, NULL, 0, &fd, 1));
        close(fd);
        expect_disconnect(&fx, fx.fe, "GET_FEATURES with an fd");
    }
    TU_CHECK_EQ(engine_fds(&fx), e0 - 1);       /* The connection. */
    fx_finish(&fx);
}

/* Unknown and unimplemented requests. */
static void
test_unknown_requests(void)
{
    static const uint32_t requests[] = {
        99, 0, VHOST_USER_IOTLB_MSG, VHOST_USER_SET_VRING_ENDIAN,
        VHOST_USER_SET_INFLIGHT_FD, VHOST_USER_POSTCOPY_ADVISE,
        VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_N_REQUESTS, 0x10000,
        UINT32_MAX,
    };
    static uint8_t zeros[64];
    struct fx fx;
    struct vhost_port_counters c;
    int e0;

    fx_init(&fx, "unk");
    fx_start(&fx);
    e0 = engine_fds(&fx);

    tu_log("before REPLY_ACK: ignored, the connection stays up");
    for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
        int fd = temp_eventfd();
        tu_log("  request %"PRIu32" with an fd", requests[i]);
        TU_CHECK_OK(tfe_send(fx.fe, requests[i],
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             zeros, 8, &fd, 1));
        close(fd);
        TU_CHECK_OK(tfe_sync(fx.fe));
        TU_CHECK_EQ(engine_fds(&fx), e0);
    }
    c = counters(&fx);
    TU_CHECK_EQ(c.msgs_unknown, ARRAY_SIZE(requests));
    TU_CHECK_EQ(c.msgs_rejected, ARRAY_SIZE(requests));

    tu_log("with REPLY_ACK and NEED_REPLY: a nonzero ack");
    negotiate(fx.fe);
    for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
        tu_log("  request %"PRIu32, requests[i]);
        CHECK_NACK(&fx, tfe_request(fx.fe, requests[i], true, zeros, 0,
                                    NULL, 0));
    }
    tu_log("with REPLY_ACK and no NEED_REPLY: ignored");
    for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
        TU_CHECK_OK(tfe_request(fx.fe, requests[i], false, zeros, 16,
                                NULL, 0));
    }
    TU_CHECK_OK(tfe_sync(fx.fe));
    c = counters(&fx);
    TU_CHECK_EQ(c.msgs_unknown, 3 * ARRAY_SIZE(requests));
    TU_CHECK_EQ(c.msgs_rejected, 3 * ARRAY_SIZE(requests));
    TU_CHECK_EQ(c.disconnects, 0);
    TU_CHECK(tu_port_info(fx.port).connected);
    fx_finish(&fx);
}

/* Framing errors disconnect. */
static void
test_bad_header(void)
{
    static const struct {
        uint32_t flags;
        uint32_t size;
        const char *what;
    } cases[] = {
        { 0, 8, "version 0" },
        { 2, 8, "version 2" },
        { 3 | VHOST_USER_NEED_REPLY_MASK, 8, "version 3" },
        { VHOST_USER_VERSION, VHOST_USER_MAX_PAYLOAD + 1, "size 4097" },
        { VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK, UINT32_MAX,
          "size 2^32 - 1" },
    };
    struct fx fx;
    int e0;

    fx_init(&fx, "hdr");
    fx_start(&fx);
    e0 = engine_fds(&fx);

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        uint64_t payload = 0;
        int fd = temp_eventfd();

        tu_log("%s, with an fd", cases[i].what);
        negotiate(fx.fe);
        TU_CHECK_OK(tfe_send_hdr(fx.fe, VHOST_USER_SET_FEATURES,
                                 cases[i].flags, cases[i].size, &payload,
                                 sizeof payload, &fd, 1));
        close(fd);
        expect_disconnect(&fx, fx.fe, cases[i].what);
        TU_CHECK_EQ(counters(&fx).msgs_bad_header, i + 1);
        tu_log("  the fd and the connection are closed");
        TU_CHECK_EQ(engine_fds(&fx), e0 - 1);
        connect_fe(&fx, fx.fe);
    }

    tu_log("a header cut short, then the frontend hangs up");
    {
        struct vhost_user_hdr hdr = { VHOST_USER_SET_OWNER,
                                      VHOST_USER_VERSION, 0 };
        TU_CHECK_OK(tfe_sock_send(fx.fe->sock, &hdr, 7, NULL, 0,
                                  TU_TIMEOUT_MS));
        tfe_disconnect(fx.fe);
        wait_disconnected(&fx);
    }
    TU_CHECK_EQ(counters(&fx).msgs_bad_header, ARRAY_SIZE(cases));
    fx_finish(&fx);
}

/* Ownership and reset. */
static void
test_owner_reset(void)
{
    struct fx fx;
    struct vhost_port_info info;
    int e0;

    fx_init(&fx, "own");
    fx_start(&fx);
    e0 = engine_fds(&fx);

    TU_CHECK(!tu_port_info(fx.port).owned);
    tu_log("SET_OWNER sets owned; a full bring-up makes the device ready");
    setup_ready(&fx, 2);
    info = tu_port_info(fx.port);
    TU_CHECK(info.owned);
    TU_CHECK_EQ(info.n_mem_regions, 2);
    TU_CHECK_EQ(info.n_queues, 4);
    TU_CHECK_EQ(info.n_enabled_queues, 4);
    TU_CHECK_EQ(engine_maps(&fx), 2);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 1);
    tu_log("the engine holds a kick and a call fd per queue");
    TU_CHECK_EQ(engine_fds(&fx), e0 + 8);

    tu_log("RESET_OWNER: device_gone, memory unmapped, queue fds closed");
    CHECK_ACK(tfe_reset_owner(fx.fe));
    /* RESET_OWNER may forget REPLY_ACK: sync either way. */
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_GONE, 1, TU_TIMEOUT_MS));
    info = tu_port_info(fx.port);
    TU_CHECK(!info.ready);
    TU_CHECK(!info.owned);
    TU_CHECK_EQ(info.n_mem_regions, 0);
    TU_CHECK_EQ(info.mem_size, 0);
    TU_CHECK_EQ(engine_maps(&fx), 0);
    TU_CHECK_EQ(engine_fds(&fx), e0);
    for (unsigned int q = 0; q < 4; q++) {
        struct vhost_queue_info qi = tu_queue_info(fx.port, q);
        TU_CHECK(!qi.ready);
        TU_CHECK(!qi.has_kick);
        TU_CHECK(!qi.has_call);
    }
    TU_CHECK(info.connected);

    tu_log("the device can be brought up again on the same connection");
    fx.fe->reply_ack = false;
    setup_ready(&fx, 2);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 2);

    tu_log("RESET_OWNER again: device_gone; once more: nothing");
    CHECK_ACK(tfe_reset_owner(fx.fe));
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_sync(fx.fe));
    CHECK_ACK(tfe_reset_owner(fx.fe));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 2);
    TU_CHECK_EQ(engine_maps(&fx), 0);
    fx_finish(&fx);
}

/* Memory tables. */

static void
test_mem_table(void)
{
    struct fx fx;
    struct vhost_port_info info;
    struct tfe_mem *other;
    struct vhost_user_mem_region regions[3];
    int fds[3], e0;

    fx_init(&fx, "mem");
    fx_start(&fx);
    negotiate(fx.fe);
    e0 = engine_fds(&fx);

    tu_log("SET_MEM_TABLE with two regions, a gap and a nonzero offset");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    info = tu_port_info(fx.port);
    TU_CHECK_EQ(info.n_mem_regions, 2);
    TU_CHECK_EQ(info.mem_size, 2 * TFE_DEFAULT_REGION_SIZE);
    TU_CHECK_EQ(info.counters.mem_table_updates, 1);
    TU_CHECK_EQ(engine_maps(&fx), 2);
    tu_log("the engine keeps mappings, not fds");
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("replacing it with three other regions unmaps the old ones");
    other = tfe_mem_create();
    TU_CHECK_EQ(tfe_mem_add(other, 0, 1u << 20, 0), 0);
    TU_CHECK_EQ(tfe_mem_add(other, 16u << 20, 1u << 20, 8192), 1);
    TU_CHECK_EQ(tfe_mem_add(other, 64u << 20, 4096, 0), 2);
    for (size_t i = 0; i < 3; i++) {
        tfe_mem_region_desc(other, i, &regions[i]);
        fds[i] = other->regions[i].fd;
    }
    CHECK_ACK(tfe_set_mem_table_raw(fx.fe, regions, 3, fds, 3));
    info = tu_port_info(fx.port);
    TU_CHECK_EQ(info.n_mem_regions, 3);
    TU_CHECK_EQ(info.mem_size, (2u << 20) + 4096);
    TU_CHECK_EQ(engine_maps(&fx) - (int) other->n_regions, 3);

    tu_log("50 replacements leak neither fds nor mappings");
    for (int i = 0; i < 50; i++) {
        CHECK_ACK(i % 2 ? tfe_set_mem_table(fx.fe)
                        : tfe_set_mem_table_raw(fx.fe, regions, 3, fds, 3));
    }
    TU_CHECK_EQ(engine_maps(&fx) - (int) other->n_regions, 2);
    TU_CHECK_EQ(engine_fds(&fx) - (int) other->n_regions, e0);
    TU_CHECK_EQ(counters(&fx).mem_table_updates, 52);
    tfe_mem_destroy(other);

    tu_log("eight regions, the most SET_MEM_TABLE carries");
    other = tfe_mem_create();
    {
        struct vhost_user_mem_region r8[8];
        int f8[8];
        for (int i = 0; i < 8; i++) {
            TU_CHECK_EQ(tfe_mem_add(other, (uint64_t) i << 24, 65536,
                                    i * 4096), i);
            tfe_mem_region_desc(other, i, &r8[i]);
            f8[i] = other->regions[i].fd;
        }
        CHECK_ACK(tfe_set_mem_table_raw(fx.fe, r8, 8, f8, 8));
        TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 8);
        TU_CHECK_EQ(engine_maps(&fx) - 8, 8);
    }
    tfe_mem_destroy(other);
    tu_log("the engine's mappings outlive the frontend's");
    TU_CHECK_EQ(engine_maps(&fx), 8);

    tu_log("disconnecting unmaps guest memory");
    tfe_disconnect(fx.fe);
    wait_disconnected(&fx);
    TU_CHECK_EQ(engine_maps(&fx), 0);
    fx_finish(&fx);
}

static void
test_mem_table_reject(void)
{
    struct fx fx;
    struct vhost_user_mem_region good[2], r[9];
    int fds[9], e0, maps0;
    const struct tfe_region *t0;

    fx_init(&fx, "memrej");
    fx_start(&fx);
    negotiate(fx.fe);
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    t0 = &fx.fe->mem->regions[0];
    tfe_mem_region_desc(fx.fe->mem, 0, &good[0]);
    tfe_mem_region_desc(fx.fe->mem, 1, &good[1]);
    fds[0] = fx.fe->mem->regions[0].fd;
    fds[1] = fx.fe->mem->regions[1].fd;
    e0 = engine_fds(&fx);
    maps0 = engine_maps(&fx);
    TU_CHECK_EQ(maps0, 2);

#define CHECK_TABLE_KEPT()                                              \
    do {                                                                \
        struct vhost_port_info i_ = tu_port_info(fx.port);              \
        TU_CHECK_EQ(i_.n_mem_regions, 2);                               \
        TU_CHECK_EQ(i_.mem_size, 2 * TFE_DEFAULT_REGION_SIZE);          \
        TU_CHECK_EQ(engine_maps(&fx), maps0);                           \
        TU_CHECK_EQ(engine_fds(&fx), e0);                               \
    } while (0)

    tu_log("zero regions");
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 0, NULL, 0));
    CHECK_TABLE_KEPT();
    tu_log("zero regions in the header, one region's payload and fd");
    {
        struct vhost_user_mem_table t = { .nregions = 0 };
        t.regions[0] = good[0];
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_MEM_TABLE, true,
                                    &t, 40, fds, 1));
    }
    CHECK_TABLE_KEPT();
    tu_log("two regions, one fd");
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 2, fds, 1));
    CHECK_TABLE_KEPT();
    tu_log("one region, two fds");
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 1, fds, 2));
    CHECK_TABLE_KEPT();
    tu_log("nine regions in the header (eight sent, eight fds)");
    for (int i = 0; i < 8; i++) {
        r[i] = good[0];
        r[i].guest_phys_addr = (uint64_t) i << 30;
        fds[i] = t0->fd;
    }
    CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, r, 9, fds, 8));
    CHECK_TABLE_KEPT();
    fds[1] = fx.fe->mem->regions[1].fd;
    tu_log("payload size not 8 + 32 * nregions");
    {
        struct vhost_user_mem_table t = { .nregions = 1 };
        t.regions[0] = good[0];
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_MEM_TABLE, true,
                                    &t, 44, fds, 1));
        t.nregions = 2;
        t.regions[1] = good[1];
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_MEM_TABLE, true,
                                    &t, 40, fds, 2));
    }
    CHECK_TABLE_KEPT();

#define BAD_PAIR(WHAT, STMT)                                            \
    do {                                                                \
        r[0] = good[0];                                                 \
        r[1] = good[1];                                                 \
        STMT;                                                           \
        tu_log("%s", WHAT);                                             \
        CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, r, 2, fds, 2));    \
        CHECK_TABLE_KEPT();                                             \
    } while (0)

    BAD_PAIR("overlapping guest physical ranges",
             r[1].guest_phys_addr = r[0].guest_phys_addr + 4096);
    BAD_PAIR("overlapping frontend virtual ranges",
             r[1].userspace_addr = r[0].userspace_addr + 4096);
    BAD_PAIR("a zero-sized region", r[1].memory_size = 0);
    BAD_PAIR("gpa + size overflows",
             r[1].guest_phys_addr = UINT64_MAX - 4095);
    BAD_PAIR("uva + size overflows",
             r[1].userspace_addr = UINT64_MAX - 4095);
    BAD_PAIR("mmap_offset + size overflows",
             r[1].mmap_offset = UINT64_MAX - 4095);
    BAD_PAIR("mmap_offset + size beyond the memfd",
             r[1].mmap_offset += 4096);
    BAD_PAIR("size beyond the memfd", r[0].memory_size += 4096);
    BAD_PAIR("size 2^64 - 1", r[0].memory_size = UINT64_MAX);
#undef BAD_PAIR

    tu_log("a pipe instead of a memfd");
    {
        int p[2];
        TU_SYS(pipe(p));
        r[0] = good[0];
        CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, r, 1, &p[0], 1));
        close(p[0]);
        close(p[1]);
    }
    CHECK_TABLE_KEPT();
    tu_log("an eventfd instead of a memfd");
    {
        int efd = temp_eventfd();
        CHECK_NACK(&fx, tfe_set_mem_table_raw(fx.fe, good, 1, &efd, 1));
        close(efd);
    }
    CHECK_TABLE_KEPT();

    tu_log("a good table is still accepted after all that");
    fds[0] = fx.fe->mem->regions[0].fd;
    CHECK_ACK(tfe_set_mem_table_raw(fx.fe, good, 1, fds, 1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
    TU_CHECK_EQ(engine_maps(&fx), 1);
    TU_CHECK_EQ(counters(&fx).disconnects, 0);
#undef CHECK_TABLE_KEPT
    fx_finish(&fx);
}

/* GET_MAX_MEM_SLOTS, ADD_MEM_REG, REM_MEM_REG. */
static void
test_mem_slots(void)
{
    struct fx fx;
    struct tfe_mem *mem, *extra;
    struct vhost_user_mem_region desc;
    uint64_t n;
    int e0;
    const uint64_t rsize = 65536;

    fx_init(&fx, "slots");
    fx.engine = start_engine();
    create_port(&fx);
    mem = tfe_mem_create();
    for (int i = 0; i < VHOST_MAX_MEM_REGIONS; i++) {
        TU_CHECK_EQ(tfe_mem_add(mem, (uint64_t) i * 2 * rsize, rsize,
                                i % 3 ? 4096 * i : 0), i);
    }
    extra = tfe_mem_create();
    TU_CHECK_EQ(tfe_mem_add(extra, (uint64_t) VHOST_MAX_MEM_REGIONS * 2
                                   * rsize, rsize, 0), 0);
    fx.fe = tfe_create(mem);
    connect_fe(&fx, fx.fe);
    negotiate(fx.fe);
    e0 = engine_fds(&fx);

    tu_log("GET_MAX_MEM_SLOTS is %d", VHOST_MAX_MEM_REGIONS);
    TU_CHECK_OK(tfe_get_max_mem_slots(fx.fe, &n));
    TU_CHECK_EQ(n, VHOST_MAX_MEM_REGIONS);

    tu_log("ADD_MEM_REG %d regions one at a time", VHOST_MAX_MEM_REGIONS);
    for (int i = 0; i < VHOST_MAX_MEM_REGIONS; i++) {
        CHECK_ACK(tfe_add_mem_region(fx.fe, i));
        TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, i + 1);
        if (i == 0) {
            tu_log("an overlapping region is rejected");
            tfe_mem_region_desc(mem, 0, &desc);
            desc.guest_phys_addr += 4096;
            desc.userspace_addr = tfe_va_to_uva(extra->regions[0].va);
            desc.mmap_offset = 0;
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            extra->regions[0].fd));
            tu_log("the same region again is accepted, as QEMU 7.2 sends "
                   "it once per queue pair, and mapped once");
            int maps0 = engine_maps(&fx);
            CHECK_ACK(tfe_add_mem_region(fx.fe, 0));
            CHECK_ACK(tfe_add_mem_region(fx.fe, 0));
            TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
            TU_CHECK_EQ(tu_port_info(fx.port).mem_size, rsize);
            TU_CHECK_EQ(engine_maps(&fx), maps0);
            tu_log("REM_MEM_REG of one instance keeps it mapped while "
                   "another holds it");
            tfe_mem_region_desc(mem, 0, &desc);
            CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
            CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
            TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
            TU_CHECK_EQ(engine_maps(&fx), maps0);
            tu_log("an identical region from another file is refused");
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            extra->regions[0].fd));
            tu_log("a region identical but for its offset overlaps: "
                   "refused");
            desc.mmap_offset += 4096;
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            mem->regions[0].fd));
            TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
            tu_log("a region beyond its memfd is rejected");
            tfe_mem_region_desc(extra, 0, &desc);
            desc.memory_size += 1;
            CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc,
                                            extra->regions[0].fd));
        }
    }
    TU_CHECK_EQ(tu_port_info(fx.port).mem_size,
                VHOST_MAX_MEM_REGIONS * rsize);
    TU_CHECK_EQ(engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS);
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("region %d is one too many", VHOST_MAX_MEM_REGIONS + 1);
    tfe_mem_region_desc(extra, 0, &desc);
    CHECK_NACK(&fx, tfe_add_mem_reg(fx.fe, &desc, extra->regions[0].fd));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, VHOST_MAX_MEM_REGIONS);

    tu_log("region 5 added twice: the first REM_MEM_REG keeps it");
    CHECK_ACK(tfe_add_mem_region(fx.fe, 5));
    tfe_mem_region_desc(mem, 5, &desc);
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, VHOST_MAX_MEM_REGIONS);
    TU_CHECK_EQ(engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS);
    tu_log("REM_MEM_REG without an fd removes and unmaps region 5");
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, -1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions,
                VHOST_MAX_MEM_REGIONS - 1);
    TU_CHECK_EQ(engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS - 1);
    tu_log("REM_MEM_REG with the region's fd removes region 6");
    tfe_mem_region_desc(mem, 6, &desc);
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &desc, mem->regions[6].fd));
    TU_CHECK_EQ(engine_maps(&fx) - 1, VHOST_MAX_MEM_REGIONS - 2);
    TU_CHECK_EQ(tu_port_info(fx.port).mem_size,
                (VHOST_MAX_MEM_REGIONS - 2) * rsize);
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("removing it again, or a region that does not match, fails");
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    tfe_mem_region_desc(mem, 7, &desc);
    desc.memory_size -= 4096;
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    tfe_mem_region_desc(mem, 7, &desc);
    desc.userspace_addr += 4096;
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    tfe_mem_region_desc(mem, 7, &desc);
    desc.guest_phys_addr += 4096;
    CHECK_NACK(&fx, tfe_rem_mem_reg(fx.fe, &desc, -1));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions,
                VHOST_MAX_MEM_REGIONS - 2);

    tu_log("now the extra region fits");
    tfe_mem_region_desc(extra, 0, &desc);
    CHECK_ACK(tfe_add_mem_reg(fx.fe, &desc, extra->regions[0].fd));
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions,
                VHOST_MAX_MEM_REGIONS - 1);

    tu_log("SET_MEM_TABLE replaces all of them");
    {
        struct vhost_user_mem_region r0;
        tfe_mem_region_desc(mem, 0, &r0);
        CHECK_ACK(tfe_set_mem_table_raw(fx.fe, &r0, 1, &mem->regions[0].fd,
                                        1));
    }
    TU_CHECK_EQ(tu_port_info(fx.port).n_mem_regions, 1);
    TU_CHECK_EQ(engine_maps(&fx) - 1, 1);
    tfe_mem_destroy(extra);
    TU_CHECK_EQ(engine_maps(&fx), 1);
    fx_finish(&fx);
}

/* Vrings. */

static void
test_vring_num(void)
{
    static const uint32_t good[] = { 1, 2, 256, 1024, 32768 };
    static const uint32_t bad[] = { 0, 3, 255, 257, 32767, 32769, 65536,
                                    UINT32_MAX };
    struct fx fx;

    fx_init(&fx, "num");
    fx_start(&fx);
    negotiate(fx.fe);

    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        tu_log("SET_VRING_NUM %"PRIu32" accepted", good[i]);
        CHECK_ACK(tfe_set_vring_num(fx.fe, 1, good[i]));
        TU_CHECK_EQ(tu_queue_info(fx.port, 1).size, good[i]);
    }
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("SET_VRING_NUM %"PRIu32" rejected", bad[i]);
        CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, 1, bad[i]));
        TU_CHECK_EQ(tu_queue_info(fx.port, 1).size, 32768);
    }

    tu_log("with VIRTIO_F_RING_PACKED negotiated, any size 1..32768");
    tfe_disconnect(fx.fe);
    wait_disconnected(&fx);
    vhost_port_destroy(fx.port);
    fx.opts.features = vhost_default_features()
                       | FEATURE_BIT(VIRTIO_F_RING_PACKED);
    create_port(&fx);
    connect_fe(&fx, fx.fe);
    negotiate(fx.fe);
    CHECK_ACK(tfe_set_features(fx.fe, fx.fe->features
                                      | FEATURE_BIT(VIRTIO_F_RING_PACKED)));
    CHECK_ACK(tfe_set_vring_num(fx.fe, 0, 3));
    TU_CHECK_EQ(tu_queue_info(fx.port, 0).size, 3);
    CHECK_ACK(tfe_set_vring_num(fx.fe, 0, 32767));
    CHECK_ACK(tfe_set_vring_num(fx.fe, 0, 1));
    CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, 0, 0));
    CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, 0, 32769));
    CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, 0, UINT32_MAX));
    fx_finish(&fx);
}

/* Out-of-range vring indices in every vring message (CVE-2020-10723). */
static void
test_vring_index(void)
{
    /* The port has 2 queue pairs: vrings 0..3. */
    static const uint32_t bad[] = {
        4, 5, 255, 256, 0x10000, 0x10000 + 1, 0x7fffffff, UINT32_MAX,
    };
    static const uint64_t bad_fd_payloads[] = {
        4, 255, 0x10000, 0x10000 + 1, 1u << 9, 1 | (1u << 9),
        UINT64_C(1) << 32, UINT64_C(1) << 63, 0xffffffff, UINT64_MAX,
        0x80000001,
    };
    static const uint32_t fd_requests[] = {
        VHOST_USER_SET_VRING_KICK, VHOST_USER_SET_VRING_CALL,
        VHOST_USER_SET_VRING_ERR,
    };
    struct fx fx;
    int e0;

    fx_init(&fx, "idx");
    fx_start(&fx);
    negotiate(fx.fe);
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    TU_CHECK_OK(tfe_vring_alloc(fx.fe, 3, 64));
    e0 = engine_fds(&fx);

    tu_log("vring 3, the last one, is accepted by every message");
    CHECK_ACK(tfe_set_vring_num(fx.fe, 3, 64));
    CHECK_ACK(tfe_set_vring_base(fx.fe, 3, 0));
    CHECK_ACK(tfe_set_vring_addr(fx.fe, 3));
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 3, true));
    CHECK_ACK(tfe_set_vring_kick(fx.fe, 3, -1));
    CHECK_ACK(tfe_set_vring_call(fx.fe, 3, -1));
    CHECK_ACK(tfe_set_vring_err(fx.fe, 3, -1));

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct vhost_user_vring_addr addr;
        uint32_t idx = bad[i];

        tu_log("vring index %#"PRIx32" rejected by NUM, ADDR, BASE, ENABLE",
               idx);
        CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, idx, 64));
        CHECK_NACK(&fx, tfe_set_vring_base(fx.fe, idx, 0));
        memset(&addr, 0, sizeof addr);
        addr.index = idx;
        addr.desc_user_addr = tfe_va_to_uva(fx.fe->vrings[3].desc);
        addr.avail_user_addr = tfe_va_to_uva(fx.fe->vrings[3].avail);
        addr.used_user_addr = tfe_va_to_uva(fx.fe->vrings[3].used);
        CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
        CHECK_NACK(&fx, tfe_set_vring_enable(fx.fe, idx, true));
        CHECK_NACK(&fx, tfe_set_vring_enable(fx.fe, idx, false));
    }

    for (size_t i = 0; i < ARRAY_SIZE(bad_fd_payloads); i++) {
        uint64_t u64 = bad_fd_payloads[i];

        for (size_t j = 0; j < ARRAY_SIZE(fd_requests); j++) {
            uint32_t req = fd_requests[j];
            bool nofd = u64 & VHOST_USER_VRING_NOFD_MASK;
            int fd = nofd ? -1 : temp_eventfd();

            tu_log("%s payload %#"PRIx64"%s rejected",
                   vhost_user_request_to_string(req), u64,
                   nofd ? "" : " with an fd");
            CHECK_NACK(&fx, tfe_set_vring_fd_raw(fx.fe, req, u64, &fd,
                                                 !nofd));
            if (fd >= 0) {
                close(fd);
            }
            TU_CHECK_EQ(engine_fds(&fx), e0);
        }
    }
    tu_log("index 255 with the no-fd bit");
    CHECK_NACK(&fx, tfe_set_vring_kick(fx.fe, 255, -1));
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("GET_VRING_BASE of a bad index disconnects (it is a GET)");
    {
        static const uint32_t get_bad[] = { 4, 0x10000, UINT32_MAX };
        for (size_t i = 0; i < ARRAY_SIZE(get_bad); i++) {
            uint32_t base;
            tu_log("GET_VRING_BASE %#"PRIx32, get_bad[i]);
            TU_CHECK(tfe_get_vring_base(fx.fe, get_bad[i], &base) < 0);
            expect_disconnect(&fx, fx.fe, "GET_VRING_BASE of a bad index");
            reconnect(&fx);
        }
    }
    fx_finish(&fx);
}

static void
test_vring_addr(void)
{
    struct fx fx;
    struct vhost_user_vring_addr addr, good;
    struct tfe_vring *vr;
    const struct tfe_region *r0;

    fx_init(&fx, "addr");
    fx_start(&fx);
    negotiate(fx.fe);
    TU_CHECK_OK(tfe_vring_alloc(fx.fe, 0, 256));
    vr = &fx.fe->vrings[0];
    r0 = &fx.fe->mem->regions[0];
    memset(&good, 0, sizeof good);
    good.index = 0;
    good.desc_user_addr = tfe_va_to_uva(vr->desc);
    good.avail_user_addr = tfe_va_to_uva(vr->avail);
    good.used_user_addr = tfe_va_to_uva(vr->used);

    tu_log("misaligned rings are rejected (desc 16, avail 2, used 4)");
    CHECK_ACK(tfe_set_vring_num(fx.fe, 0, 256));
    addr = good;
    addr.desc_user_addr += 8;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    addr = good;
    addr.avail_user_addr += 1;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    addr = good;
    addr.used_user_addr += 2;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(!tu_queue_info(fx.port, 0).has_addr);

    tu_log("minimal alignment is enough");
    addr = good;
    addr.avail_user_addr += 2;
    addr.used_user_addr += 4;
    addr.desc_user_addr += 16;
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &addr));

    tu_log("before memory is present, any aligned address is accepted");
    addr.desc_user_addr = 0x1000;
    addr.avail_user_addr = 0x2000;
    addr.used_user_addr = 0x3000;
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(tu_queue_info(fx.port, 0).has_addr);

    tu_log("with memory: rings must translate, each within one region");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &good));

    addr = good;
    addr.desc_user_addr = 0x1000;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    tu_log("  a ring part in the gap after region 0");
    addr = good;
    addr.used_user_addr = tfe_va_to_uva(r0->va) + r0->size + 4096;
    if (tfe_mem_va_to_gpa(fx.fe->mem, (void *) (uintptr_t)
                          addr.used_user_addr) == TFE_BAD_GPA) {
        CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    }
    tu_log("  a descriptor table that runs past the end of region 0");
    addr = good;
    addr.desc_user_addr = tfe_va_to_uva(r0->va) + r0->size
                          - tfe_vring_desc_size(256) / 2;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    tu_log("  a used ring that runs past the end of region 0");
    addr = good;
    addr.used_user_addr = tfe_va_to_uva(r0->va) + r0->size - 64;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    tu_log("  an avail ring whose last byte is past the end");
    addr = good;
    addr.avail_user_addr = tfe_va_to_uva(r0->va) + r0->size
                           - tfe_vring_avail_size(256) + 2;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    tu_log("  rings at addresses that wrap around");
    addr = good;
    addr.desc_user_addr = UINT64_MAX - 15;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    addr = good;
    addr.used_user_addr = UINT64_MAX - 3;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));

    tu_log("  ring parts may sit in different regions");
    {
        struct tfe_mem *m = fx.fe->mem;
        void *desc1 = tfe_mem_alloc(m, 1, tfe_vring_desc_size(256), 4096);
        void *used1 = tfe_mem_alloc(m, 1, tfe_vring_used_size(256), 64);
        TU_CHECK_NONNULL(desc1);
        TU_CHECK_NONNULL(used1);
        addr = good;
        addr.desc_user_addr = tfe_va_to_uva(desc1);
        addr.used_user_addr = tfe_va_to_uva(used1);
        CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &addr));
    }
    tu_log("  a ring that ends exactly at the end of a region is fine");
    addr = good;
    addr.avail_user_addr = tfe_va_to_uva(r0->va) + r0->size
                           - tfe_vring_avail_size(256);
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &addr));

    tu_log("VHOST_VRING_F_LOG sets log_used; unknown flags are refused");
    addr = good;
    addr.flags = 1u << VHOST_VRING_F_LOG;
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(tu_queue_info(fx.port, 0).log_used);
    addr.flags = 0;
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(!tu_queue_info(fx.port, 0).log_used);

    tu_log("the last good address stays after a rejection");
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &good));
    addr = good;
    addr.desc_user_addr = 0x1000;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(tu_queue_info(fx.port, 0).has_addr);
    tu_log("  and the device can still become ready");
    setup_ready(&fx, 1);
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(tu_port_info(fx.port).ready);
    fx_finish(&fx);
}

static void
test_vring_base(void)
{
    struct fx fx;
    uint32_t base;

    fx_init(&fx, "base");
    fx_start(&fx);
    negotiate(fx.fe);

    tu_log("SET_VRING_BASE: split ring bases up to 0xffff");
    CHECK_ACK(tfe_set_vring_base(fx.fe, 1, 0xffff));
    TU_CHECK_EQ(tu_queue_info(fx.port, 1).base, 0xffff);
    CHECK_NACK(&fx, tfe_set_vring_base(fx.fe, 1, 0x10000));
    CHECK_NACK(&fx, tfe_set_vring_base(fx.fe, 1, UINT32_MAX));
    TU_CHECK_EQ(tu_queue_info(fx.port, 1).base, 0xffff);

    tu_log("GET_VRING_BASE answers the base that was set");
    CHECK_ACK(tfe_set_vring_base(fx.fe, 1, 1234));
    TU_CHECK_OK(tfe_get_vring_base(fx.fe, 1, &base));
    TU_CHECK_EQ(base, 1234);

    tu_log("on a ready device it answers and stops the queue");
    setup_ready(&fx, 1);
    TU_CHECK(tu_queue_info(fx.port, 0).ready);
    TU_CHECK_OK(tfe_get_vring_base(fx.fe, 0, &base));
    TU_CHECK_EQ(base, 0);
    TU_CHECK(!tu_queue_info(fx.port, 0).ready);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_GONE, 1, TU_TIMEOUT_MS));
    TU_CHECK(!tu_port_info(fx.port).ready);

    tu_log("restarting the queue (BASE, KICK) makes the device ready "
           "again");
    CHECK_ACK(tfe_set_vring_base(fx.fe, 0, 77));
    CHECK_ACK(tfe_set_vring_kick(fx.fe, 0, fx.fe->vrings[0].kick_fd));
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_READY, 2, TU_TIMEOUT_MS));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_OK(tfe_get_vring_base(fx.fe, 0, &base));
    TU_CHECK_EQ(base, 77);
    fx_finish(&fx);
}

/* Guest memory changing under a running device: a queue whose rings lose
 * their region stops before the region is unmapped, and comes back when
 * the memory does. */
static void
test_mem_change_running(void)
{
    struct fx fx;
    struct vhost_user_mem_region r1;

    fx_init(&fx, "memrun");
    fx_start(&fx);
    setup_ready(&fx, 1);
    tfe_mem_region_desc(fx.fe->mem, 1, &r1);

    tu_log("the same table again: the device stays ready");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK(tu_queue_info(fx.port, 1).ready);

    tu_log("REM_MEM_REG of the region holding vring 1: the device goes");
    TU_CHECK(tfe_mem_va_to_gpa(fx.fe->mem, fx.fe->vrings[1].desc)
             >= TFE_DEFAULT_GPA1);
    CHECK_ACK(tfe_rem_mem_reg(fx.fe, &r1, -1));
    TU_CHECK(!tu_queue_info(fx.port, 1).ready);
    TU_CHECK(!tu_port_info(fx.port).ready);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_GONE, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(engine_maps(&fx), 1);

    tu_log("ADD_MEM_REG puts it back: the device is ready again");
    CHECK_ACK(tfe_add_mem_region(fx.fe, 1));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_READY, 2, TU_TIMEOUT_MS));

    tu_log("SET_MEM_TABLE without that region: the device goes again");
    {
        struct vhost_user_mem_region r0;
        tfe_mem_region_desc(fx.fe->mem, 0, &r0);
        CHECK_ACK(tfe_set_mem_table_raw(fx.fe, &r0, 1,
                                        &fx.fe->mem->regions[0].fd, 1));
    }
    TU_CHECK(!tu_port_info(fx.port).ready);
    TU_CHECK(!tu_queue_info(fx.port, 1).ready);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_GONE, 2, TU_TIMEOUT_MS));
    TU_CHECK_EQ(engine_maps(&fx), 1);

    tu_log("and the full table brings it back");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    TU_CHECK(tu_port_info(fx.port).ready);
    fx_finish(&fx);
}

/* Readiness. */

static void
check_not_ready(struct fx *fx)
{
    TU_CHECK_OK(tfe_sync(fx->fe));
    TU_CHECK(!tu_port_info(fx->port).ready);
    TU_CHECK_EQ(tu_events_count(&fx->ev, TU_EV_READY), 0);
}

static void
test_ready_protocol(void)
{
    struct fx fx;
    struct vhost_port_info info;

    fx_init(&fx, "rdy");
    fx_start(&fx);
    negotiate(fx.fe);

    tu_log("with PROTOCOL_FEATURES: rings set up but not enabled");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    CHECK_ACK(tfe_vring_setup(fx.fe, 0, 256));
    CHECK_ACK(tfe_vring_setup(fx.fe, 1, 256));
    TU_CHECK(!tu_queue_info(fx.port, 0).enabled);
    TU_CHECK(tu_queue_info(fx.port, 0).has_kick);
    TU_CHECK(tu_queue_info(fx.port, 0).has_addr);
    TU_CHECK(tu_queue_info(fx.port, 0).has_call);
    check_not_ready(&fx);

    tu_log("enabling vring 0 alone is not enough");
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 0, true));
    TU_CHECK(tu_queue_info(fx.port, 0).enabled);
    check_not_ready(&fx);

    tu_log("enabling vring 1 makes the device ready, once");
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 1, true));
    info = tu_port_info(fx.port);
    TU_CHECK(info.ready);
    TU_CHECK_EQ(info.n_enabled_queues, 2);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 1);
    TU_CHECK(tu_queue_info(fx.port, 0).ready);
    TU_CHECK(tu_queue_info(fx.port, 1).ready);
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 1, true));
    CHECK_ACK(tfe_set_vring_kick(fx.fe, 1, fx.fe->vrings[1].kick_fd));
    CHECK_ACK(tfe_set_vring_call(fx.fe, 1, fx.fe->vrings[1].call_fd));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 1);
    TU_CHECK(tu_port_info(fx.port).ready);

    tu_log("disabling vring 1 (pair 0) takes the device down");
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 1, false));
    TU_CHECK(!tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 1);
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 1, true));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 2);

    tu_log("memory last: rings addressed before SET_MEM_TABLE");
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    tu_events_clear(&fx.ev);
    reconnect(&fx);
    CHECK_ACK(tfe_vring_setup(fx.fe, 0, 256));
    CHECK_ACK(tfe_vring_setup(fx.fe, 1, 256));
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 0, true));
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 1, true));
    check_not_ready(&fx);
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 1);
    fx_finish(&fx);
}

static void
test_ready_legacy(void)
{
    struct fx fx;
    struct tfe_setup setup = { .legacy = true };

    fx_init(&fx, "legacy");
    fx_start(&fx);

    tu_log("without PROTOCOL_FEATURES a ring is enabled by its kick");
    TU_CHECK_OK(tfe_negotiate(fx.fe, &setup));
    TU_CHECK(!fx.fe->reply_ack);
    TU_CHECK(!(tu_port_info(fx.port).features
               & FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES)));
    TU_CHECK_OK(tfe_set_mem_table(fx.fe));
    TU_CHECK_OK(tfe_vring_alloc(fx.fe, 0, 128));
    TU_CHECK_OK(tfe_vring_alloc(fx.fe, 1, 128));
    for (unsigned int q = 0; q < 2; q++) {
        TU_CHECK_OK(tfe_set_vring_num(fx.fe, q, 128));
        TU_CHECK_OK(tfe_set_vring_addr(fx.fe, q));
    }
    check_not_ready(&fx);
    TU_CHECK(!tu_queue_info(fx.port, 0).enabled);
    fx.fe->vrings[0].kick_fd = temp_eventfd();
    fx.fe->vrings[1].kick_fd = temp_eventfd();
    TU_CHECK_OK(tfe_set_vring_kick(fx.fe, 0, fx.fe->vrings[0].kick_fd));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK(tu_queue_info(fx.port, 0).enabled);
    check_not_ready(&fx);
    TU_CHECK_OK(tfe_set_vring_kick(fx.fe, 1, fx.fe->vrings[1].kick_fd));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK(tu_queue_info(fx.port, 1).enabled);
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 1);

    tu_log("the full legacy bring-up from tfe_setup_device");
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    wait_disconnected(&fx);
    connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_setup_device(fx.fe, 1, &setup));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 2);
    fx_finish(&fx);
}

static void
test_multiqueue(void)
{
    struct fx fx;
    struct tfe_setup setup = { .n_enabled_pairs = 1 };
    uint64_t n;

    fx_init(&fx, "mq");
    fx.opts.max_queue_pairs = 4;
    fx_start(&fx);

    tu_log("four pairs set up, one enabled: ready with 2 queues enabled");
    CHECK_ACK(tfe_setup_device(fx.fe, 4, &setup));
    TU_CHECK_OK(tfe_get_queue_num(fx.fe, &n));
    TU_CHECK_EQ(n, 4);
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_port_info(fx.port).n_enabled_queues, 2);
    TU_CHECK_EQ(tu_port_info(fx.port).n_queues, 8);
    TU_CHECK(!tu_queue_info(fx.port, 2).enabled);
    TU_CHECK(!tu_queue_info(fx.port, 2).ready);

    tu_log("enabling pair 1: queue_state(2, true), queue_state(3, true)");
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 2, true));
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 3, true));
    TU_CHECK(tu_events_wait_queue(&fx.ev, 2, true, TU_TIMEOUT_MS));
    TU_CHECK(tu_events_wait_queue(&fx.ev, 3, true, TU_TIMEOUT_MS));
    TU_CHECK(tu_queue_info(fx.port, 2).ready);
    TU_CHECK_EQ(tu_port_info(fx.port).n_enabled_queues, 4);

    tu_log("disabling queue 3: queue_state(3, false), device stays ready");
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 3, false));
    TU_CHECK(tu_events_wait_queue(&fx.ev, 3, false, TU_TIMEOUT_MS));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(tu_port_info(fx.port).n_enabled_queues, 3);

    tu_log("GET_VRING_BASE on queue 2 stops it: queue_state(2, false)");
    {
        uint32_t base;
        TU_CHECK_OK(tfe_get_vring_base(fx.fe, 2, &base));
        TU_CHECK(tu_events_wait_queue(&fx.ev, 2, false, TU_TIMEOUT_MS));
        TU_CHECK(!tu_queue_info(fx.port, 2).ready);
        TU_CHECK(tu_port_info(fx.port).ready);
    }

    tu_log("pair 3 enabled without pair 2: its queues come up alone");
    tu_events_clear(&fx.ev);
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 6, true));
    CHECK_ACK(tfe_set_vring_enable(fx.fe, 7, true));
    TU_CHECK(tu_events_wait_queue(&fx.ev, 6, true, TU_TIMEOUT_MS));
    TU_CHECK(tu_events_wait_queue(&fx.ev, 7, true, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 0);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 0);

    tu_log("disconnect: device_gone then disconnected");
    tu_events_clear(&fx.ev);
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 1);
    fx_finish(&fx);
}

/* VHOST_MAX_QUEUE_PAIRS pairs: vring 255 is the last valid one, and the
 * 8-bit index of SET_VRING_KICK/CALL/ERR reaches it. */
static void
test_max_queues(void)
{
    struct fx fx;
    struct tfe_setup setup = { .queue_size = 64 };
    struct vhost_port_info info;
    struct rlimit rl;
    uint64_t n;

    /* Each vring holds a kick and a call eventfd on each side. */
    TU_SYS(getrlimit(RLIMIT_NOFILE, &rl));
    if (rl.rlim_cur < 4096 && rl.rlim_max > rl.rlim_cur) {
        rl.rlim_cur = MIN(rl.rlim_max, 4096);
        TU_SYS(setrlimit(RLIMIT_NOFILE, &rl));
    }

    fx_init(&fx, "maxq");
    fx.opts.max_queue_pairs = VHOST_MAX_QUEUE_PAIRS;
    fx_start(&fx);

    tu_log("%d queue pairs, all enabled", VHOST_MAX_QUEUE_PAIRS);
    CHECK_ACK(tfe_setup_device(fx.fe, VHOST_MAX_QUEUE_PAIRS, &setup));
    TU_CHECK_OK(tfe_get_queue_num(fx.fe, &n));
    TU_CHECK_EQ(n, VHOST_MAX_QUEUE_PAIRS);
    info = tu_port_info(fx.port);
    TU_CHECK(info.ready);
    TU_CHECK_EQ(info.n_queues, VHOST_MAX_QUEUES);
    TU_CHECK_EQ(info.n_enabled_queues, VHOST_MAX_QUEUES);
    TU_CHECK(tu_queue_info(fx.port, VHOST_MAX_QUEUES - 1).ready);
    TU_CHECK(vhost_port_get_queue_info(fx.port, VHOST_MAX_QUEUES,
                                       &(struct vhost_queue_info) { 0 })
             != 0);

    tu_log("vring %d: out of range for every message",
           VHOST_MAX_QUEUES);
    CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, VHOST_MAX_QUEUES, 64));
    CHECK_NACK(&fx, tfe_set_vring_enable(fx.fe, VHOST_MAX_QUEUES, true));
    /* (SET_VRING_KICK/CALL/ERR cannot even name it: 8 bits.) */
    tu_log("vring 255 by SET_VRING_CALL's 8-bit index");
    CHECK_ACK(tfe_set_vring_call(fx.fe, 255, -1));
    TU_CHECK(!tu_queue_info(fx.port, 255).has_call);

    tu_log("hang up: all %d queues released", VHOST_MAX_QUEUES);
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    fx_finish(&fx);
}

/* Callbacks may call back into the engine (its mutex is recursive), and
 * see the state they announce. */
static void
test_callback_reentry(void)
{
    struct fx fx;

    fx_init(&fx, "reent");
    fx.ev.query = true;
    fx_start(&fx);

    tu_log("callbacks read port and queue info while the engine runs them");
    setup_ready(&fx, 2);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_READY, 1, TU_TIMEOUT_MS));
    tu_log("inside device_ready the device and queue 0 are ready");
    TU_CHECK(fx.ev.ready_at_ready);
    TU_CHECK(fx.ev.queue0_ready_at_ready);

    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    tu_log("inside device_gone the device is no longer ready");
    TU_CHECK(!fx.ev.ready_at_gone);
    TU_CHECK(fx.ev.info_ok);
    fx_finish(&fx);
}

/* Callbacks around a disconnect. */
static void
test_disconnect(void)
{
    struct fx fx;
    struct tu_event log[64];
    size_t n, i_gone = SIZE_MAX, i_disc = SIZE_MAX;
    int e0;

    fx_init(&fx, "disc");
    fx_start(&fx);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_CONNECTED, 1, TU_TIMEOUT_MS));
    e0 = engine_fds(&fx);
    setup_ready(&fx, 2);
    CHECK_ACK(tfe_set_backend_req_fd(fx.fe));
    CHECK_ACK(tfe_set_log_fd(fx.fe));
    CHECK_ACK(tfe_log_create(fx.fe, 4096));
    CHECK_ACK(tfe_set_log_base(fx.fe, 4096, 0, fx.fe->log_fd, false));
    {
        int fd = temp_eventfd();
        CHECK_ACK(tfe_set_vring_err(fx.fe, 0, fd));
        close(fd);
    }

    tu_log("a ready device's frontend hangs up");
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    n = tu_events_snapshot(&fx.ev, log, ARRAY_SIZE(log));
    for (size_t i = 0; i < n; i++) {
        tu_log("  event %zu: %s", i, tu_event_type_to_string(log[i].type));
        if (log[i].type == TU_EV_GONE) {
            TU_CHECK_EQ(i_gone, SIZE_MAX);
            i_gone = i;
        } else if (log[i].type == TU_EV_DISCONNECTED) {
            TU_CHECK_EQ(i_disc, SIZE_MAX);
            i_disc = i;
        }
    }
    tu_log("device_gone comes once, before disconnected");
    TU_CHECK(i_gone != SIZE_MAX);
    TU_CHECK(i_gone < i_disc);
    TU_CHECK_EQ(log[0].type, TU_EV_CONNECTED);

    tu_log("everything the frontend gave is released");
    wait_disconnected(&fx);
    {
        struct vhost_port_info info = tu_port_info(fx.port);
        TU_CHECK(!info.ready);
        TU_CHECK(!info.owned);
        TU_CHECK_EQ(info.n_mem_regions, 0);
        TU_CHECK(!info.log_mapped);
        TU_CHECK(!info.has_log_call);
        TU_CHECK(!info.has_backend_req);
        TU_CHECK_EQ(info.counters.disconnects, 1);
    }
    TU_CHECK_EQ(engine_maps(&fx), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(engine_fds(&fx), e0 - 1);      /* The connection. */

    tu_log("a frontend that hangs up with requests and fds unread");
    tu_events_clear(&fx.ev);
    connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_negotiate(fx.fe, NULL));
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_set_mem_table(fx.fe));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vring_setup(fx.fe, q, 256));
        TU_CHECK_OK(tfe_set_mem_table(fx.fe));
    }
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    wait_disconnected(&fx);
    TU_CHECK_EQ(engine_maps(&fx), 0);
    TU_CHECK_EQ(engine_fds(&fx), e0 - 1);

    tu_log("a frontend that never got ready: only disconnected");
    tu_events_clear(&fx.ev);
    connect_fe(&fx, fx.fe);
    negotiate(fx.fe);
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 0);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 1);
    fx_finish(&fx);
}

/* Device configuration messages. */
static void
test_device_config(void)
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    struct fx fx;
    struct vhost_port_info info;
    uint64_t v;

    fx_init(&fx, "cfg");
    fx.opts.max_queue_pairs = 3;
    fx_start(&fx);
    negotiate(fx.fe);

    tu_log("GET_QUEUE_NUM returns max_queue_pairs");
    TU_CHECK_OK(tfe_get_queue_num(fx.fe, &v));
    TU_CHECK_EQ(v, 3);

    tu_log("NET_SET_MTU: 68..65535");
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 68));
    TU_CHECK_EQ(tu_port_info(fx.port).mtu, 68);
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 65535));
    TU_CHECK_EQ(tu_port_info(fx.port).mtu, 65535);
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 1500));
    CHECK_NACK(&fx, tfe_net_set_mtu(fx.fe, 67));
    CHECK_NACK(&fx, tfe_net_set_mtu(fx.fe, 0));
    CHECK_NACK(&fx, tfe_net_set_mtu(fx.fe, 65536));
    CHECK_NACK(&fx, tfe_net_set_mtu(fx.fe, UINT64_C(1) << 32 | 1500));
    CHECK_NACK(&fx, tfe_net_set_mtu(fx.fe, UINT64_MAX));
    TU_CHECK_EQ(tu_port_info(fx.port).mtu, 1500);

    tu_log("SEND_RARP stores the MAC");
    TU_CHECK(!tu_port_info(fx.port).has_rarp);
    CHECK_ACK(tfe_send_rarp(fx.fe, mac));
    info = tu_port_info(fx.port);
    TU_CHECK(info.has_rarp);
    TU_CHECK(!memcmp(info.rarp_mac, mac, 6));

    tu_log("SET_STATUS / GET_STATUS round trip");
    CHECK_ACK(tfe_set_status(fx.fe, VIRTIO_CONFIG_S_ACKNOWLEDGE
                                    | VIRTIO_CONFIG_S_DRIVER));
    TU_CHECK_OK(tfe_get_status(fx.fe, &v));
    TU_CHECK_EQ(v, VIRTIO_CONFIG_S_ACKNOWLEDGE | VIRTIO_CONFIG_S_DRIVER);
    CHECK_ACK(tfe_set_status(fx.fe, 0x0f));
    TU_CHECK_OK(tfe_get_status(fx.fe, &v));
    TU_CHECK_EQ(v, 0x0f);
    TU_CHECK_EQ(tu_port_info(fx.port).status, 0x0f);
    CHECK_ACK(tfe_set_status(fx.fe, 0));
    TU_CHECK_OK(tfe_get_status(fx.fe, &v));
    TU_CHECK_EQ(v, 0);
    fx_finish(&fx);
}

/* The mtu field of fx's config space, read alone (2 bytes at offset 10)
 * with GET_CONFIG; the reply must echo the window. */
static unsigned int
config_mtu(struct fx *fx)
{
    struct tfe_reply r;

    TU_CHECK_OK(tfe_get_config(fx->fe, 10, 2, 14, &r));
    TU_CHECK_EQ(r.hdr.size, 14);
    TU_CHECK_EQ(r.payload.bytes[0], 10);             /* offset, echoed. */
    TU_CHECK_EQ(r.payload.bytes[4], 2);              /* size, echoed. */
    return r.payload.bytes[12] | r.payload.bytes[13] << 8;
}

/* GET_CONFIG answers the virtio-net configuration space, with the
 * embedder's MTU; SET_CONFIG is refused. */
static void
test_net_config(void)
{
    struct virtio_net_config cfg;
    struct tfe_reply r;
    struct fx fx;
    uint64_t pf;

    fx_init(&fx, "ncfg");
    fx.opts.max_queue_pairs = 4;
    fx.opts.protocol_features |= PF(CONFIG);        /* Not by default. */
    fx_start(&fx);
    tu_log("no MTU set: the field reads 0");
    negotiate(fx.fe);
    TU_CHECK_EQ(config_mtu(&fx), 0);
    TU_CHECK_EQ(vhost_port_set_mtu(fx.port, 67), EINVAL);
    TU_CHECK_EQ(vhost_port_set_mtu(fx.port, 1), EINVAL);
    TU_CHECK_OK(vhost_port_set_mtu(fx.port, 9000));
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK(pf & PF(CONFIG));

    tu_log("the whole space: link up, 4 pairs, MTU 9000, speed unknown");
    TU_CHECK_OK(tfe_get_config(fx.fe, 0, sizeof cfg, 12 + sizeof cfg, &r));
    TU_CHECK_EQ(r.hdr.size, 12 + sizeof cfg);
    TU_CHECK_EQ(r.payload.bytes[4], sizeof cfg);     /* size, echoed. */
    memcpy(&cfg, r.payload.bytes + 12, sizeof cfg);
    TU_CHECK_EQ(cfg.status, VIRTIO_NET_S_LINK_UP);
    TU_CHECK_EQ(cfg.max_virtqueue_pairs, 4);
    TU_CHECK_EQ(cfg.mtu, 9000);
    TU_CHECK_EQ(cfg.speed, UINT32_MAX);
    TU_CHECK_EQ(cfg.duplex, 0xff);
    for (int i = 0; i < 6; i++) {
        TU_CHECK_EQ(cfg.mac[i], 0);                  /* No VIRTIO_NET_F_MAC. */
    }

    tu_log("a window: the mtu field alone, at offset 10");
    TU_CHECK_EQ(config_mtu(&fx), 9000);

    tu_log("vhost_port_set_mtu() changes what later reads see");
    TU_CHECK_OK(vhost_port_set_mtu(fx.port, 1500));
    TU_CHECK_EQ(config_mtu(&fx), 1500);

    tu_log("past our fields, up to 256 bytes, the space reads as zero");
    TU_CHECK_OK(tfe_get_config(fx.fe, 0, 256, 12 + 256, &r));
    TU_CHECK_EQ(r.hdr.size, 12 + 256);
    for (size_t i = sizeof cfg; i < 256; i++) {
        TU_CHECK_EQ(r.payload.bytes[12 + i], 0);
    }

    tu_log("out of range or mis-sized: an empty reply, the connection "
           "stays");
    uint64_t rej = tu_port_info(fx.port).counters.msgs_rejected;
    static const struct { uint32_t offset, size, payload; } bad[] = {
        { 0, 257, 12 + 256 },           /* More than the space. */
        { 250, 8, 12 + 8 },             /* Runs past it. */
        { UINT32_MAX, 2, 14 },          /* offset + size wraps. */
        { 0, UINT32_MAX, 12 },          /* So does size. */
        { 0, 8, 12 + 4 },               /* The payload is short. */
        { 0, 4, 12 + 8 },               /* ... or long. */
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        TU_CHECK_OK(tfe_get_config(fx.fe, bad[i].offset, bad[i].size,
                                   bad[i].payload, &r));
        TU_CHECK_EQ(r.hdr.size, 12);
        TU_CHECK_EQ(r.payload.bytes[4], 0);
    }
    TU_CHECK_EQ(tu_port_info(fx.port).counters.msgs_rejected,
                rej + ARRAY_SIZE(bad));
    TU_CHECK(tu_port_info(fx.port).connected);

    tu_log("SET_CONFIG: the space is read-only");
    {
        uint8_t buf[12 + 6] = { 0 };
        buf[4] = 6;
        CHECK_NACK(&fx, tfe_request(fx.fe, VHOST_USER_SET_CONFIG, true, buf,
                                    sizeof buf, NULL, 0));
    }
    TU_CHECK_OK(tfe_sync(fx.fe));

    tu_log("a GET_CONFIG too short for its header cannot be answered");
    {
        uint8_t buf[11] = { 0 };
        uint64_t bad0 = tu_port_info(fx.port).counters.msgs_bad_size;
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION,
                             buf, sizeof buf, NULL, 0));
        expect_disconnect(&fx, fx.fe, "GET_CONFIG with 11 bytes");
        TU_CHECK_EQ(tu_port_info(fx.port).counters.msgs_bad_size, bad0 + 1);
    }

    tu_log("without PROTOCOL_F_CONFIG negotiated, GET_CONFIG is refused");
    vhost_port_destroy(fx.port);
    fx.opts.protocol_features = PF(REPLY_ACK) | PF(MQ);
    create_port(&fx);
    connect_fe(&fx, fx.fe);
    negotiate(fx.fe);
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK(!(pf & PF(CONFIG)));
    {
        uint8_t buf[12 + 2] = { 10, 0, 0, 0, 2 };
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION,
                             buf, sizeof buf, NULL, 0));
        expect_disconnect(&fx, fx.fe, "GET_CONFIG without PROTOCOL_F_CONFIG");
    }
    connect_fe(&fx, fx.fe);
    fx_finish(&fx);
}

/* Dirty log, log call fd and backend channel. */
static void
test_log(void)
{
    struct fx fx;
    struct vhost_port_info info;
    int e0, fd;

    fx_init(&fx, "log");
    fx_start(&fx);
    negotiate(fx.fe);
    e0 = engine_fds(&fx);

    tu_log("SET_LOG_BASE maps the log and replies with a bare header");
    TU_CHECK_OK(tfe_log_create(fx.fe, 65536));
    e0 = engine_fds(&fx);
    CHECK_ACK(tfe_set_log_base(fx.fe, 65536, 0, fx.fe->log_fd, false));
    info = tu_port_info(fx.port);
    TU_CHECK(info.log_mapped);
    TU_CHECK_EQ(info.log_size, 65536);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 1);
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("replacing it (offset 4096) unmaps the old log");
    TU_CHECK_OK(tfe_log_create(fx.fe, 3 * 65536));
    CHECK_ACK(tfe_set_log_base(fx.fe, 2 * 65536, 4096, fx.fe->log_fd,
                               false));
    info = tu_port_info(fx.port);
    TU_CHECK_EQ(info.log_size, 2 * 65536);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 1);
    for (int i = 0; i < 20; i++) {
        CHECK_ACK(tfe_set_log_base(fx.fe, 65536 + 4096 * i, 0,
                                   fx.fe->log_fd, false));
    }
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 1);
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("bad logs are rejected with NEED_REPLY and leave the old log");
    {
        static const struct {
            uint64_t size, offset;
            const char *what;
        } bad[] = {
            { UINT64_MAX - 100, 4096, "size + offset overflows" },
            { 4096, UINT64_MAX - 100, "offset + size overflows" },
            { 3 * 65536 + 1, 0, "size beyond the fd" },
            { 65536, 2 * 65536 + 4096, "offset + size beyond the fd" },
            { UINT64_MAX, 0, "size 2^64 - 1" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
            tu_log("  %s", bad[i].what);
            CHECK_NACK(&fx, tfe_set_log_base(fx.fe, bad[i].size,
                                             bad[i].offset, fx.fe->log_fd,
                                             true));
            info = tu_port_info(fx.port);
            TU_CHECK(info.log_mapped);
            TU_CHECK_EQ(info.log_size, 65536 + 4096 * 19);
            TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 1);
            TU_CHECK_EQ(engine_fds(&fx), e0);
        }
        tu_log("  a pipe");
        {
            int p[2];
            TU_SYS(pipe(p));
            CHECK_NACK(&fx, tfe_set_log_base(fx.fe, 4096, 0, p[0], true));
            close(p[0]);
            close(p[1]);
            TU_CHECK_EQ(engine_fds(&fx), e0);
        }
    }

    tu_log("SET_LOG_FD keeps an eventfd; a second one replaces it");
    CHECK_ACK(tfe_set_log_fd(fx.fe));
    TU_CHECK(tu_port_info(fx.port).has_log_call);
    TU_CHECK_EQ(engine_fds(&fx), e0 + 1);
    CHECK_ACK(tfe_set_log_fd(fx.fe));
    TU_CHECK_EQ(engine_fds(&fx), e0 + 1);

    tu_log("SET_BACKEND_REQ_FD keeps a socket; a second one replaces it");
    CHECK_ACK(tfe_set_backend_req_fd(fx.fe));
    TU_CHECK(tu_port_info(fx.port).has_backend_req);
    TU_CHECK_EQ(engine_fds(&fx), e0 + 2);
    CHECK_ACK(tfe_set_backend_req_fd(fx.fe));
    TU_CHECK_EQ(engine_fds(&fx), e0 + 2);

    tu_log("SET_VRING_ERR keeps an eventfd per queue, replaced likewise");
    fd = temp_eventfd();
    CHECK_ACK(tfe_set_vring_err(fx.fe, 1, fd));
    close(fd);
    TU_CHECK(tu_queue_info(fx.port, 1).has_err);
    TU_CHECK_EQ(engine_fds(&fx), e0 + 3);
    fd = temp_eventfd();
    CHECK_ACK(tfe_set_vring_err(fx.fe, 1, fd));
    close(fd);
    TU_CHECK_EQ(engine_fds(&fx), e0 + 3);

    tu_log("a rejected SET_LOG_BASE without NEED_REPLY disconnects");
    TU_CHECK(tfe_set_log_base(fx.fe, UINT64_MAX, 0, fx.fe->log_fd, false)
             < 0);
    expect_disconnect(&fx, fx.fe, "a bad SET_LOG_BASE");
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(engine_fds(&fx), e0 - 1);
    fx_finish(&fx);
}

/* SET_VRING_KICK/CALL without an fd (the no-fd bit). */
static void
test_kick_nofd(void)
{
    struct fx fx;
    int e0, fd;

    fx_init(&fx, "nofd");
    fx_start(&fx);
    negotiate(fx.fe);
    e0 = engine_fds(&fx);

    tu_log("the no-fd bit with an fd attached is rejected, fd closed");
    fd = temp_eventfd();
    CHECK_NACK(&fx, tfe_set_vring_fd_raw(fx.fe, VHOST_USER_SET_VRING_KICK,
                                         VHOST_USER_VRING_NOFD_MASK | 0,
                                         &fd, 1));
    close(fd);
    TU_CHECK_EQ(engine_fds(&fx), e0);
    TU_CHECK(!tu_queue_info(fx.port, 0).has_kick);
    tu_log("no fd and no no-fd bit is rejected");
    CHECK_NACK(&fx, tfe_set_vring_fd_raw(fx.fe, VHOST_USER_SET_VRING_KICK,
                                         0, NULL, 0));
    CHECK_NACK(&fx, tfe_set_vring_fd_raw(fx.fe, VHOST_USER_SET_VRING_CALL,
                                         1, NULL, 0));

    tu_log("a polled ring (kick without fd) can make the device ready");
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    for (unsigned int q = 0; q < 2; q++) {
        CHECK_ACK(tfe_vring_alloc(fx.fe, q, 256));
        CHECK_ACK(tfe_set_vring_num(fx.fe, q, 256));
        CHECK_ACK(tfe_set_vring_addr(fx.fe, q));
        CHECK_ACK(tfe_set_vring_kick(fx.fe, q, -1));
        CHECK_ACK(tfe_set_vring_call(fx.fe, q, -1));
        CHECK_ACK(tfe_set_vring_enable(fx.fe, q, true));
        TU_CHECK(tu_queue_info(fx.port, q).has_kick);
        TU_CHECK(!tu_queue_info(fx.port, q).has_call);
    }
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(engine_fds(&fx), e0);

    tu_log("a call fd given then taken away is closed");
    fd = temp_eventfd();
    CHECK_ACK(tfe_set_vring_call(fx.fe, 0, fd));
    close(fd);
    TU_CHECK(tu_queue_info(fx.port, 0).has_call);
    TU_CHECK_EQ(engine_fds(&fx), e0 + 1);
    CHECK_ACK(tfe_set_vring_call(fx.fe, 0, -1));
    TU_CHECK(!tu_queue_info(fx.port, 0).has_call);
    TU_CHECK_EQ(engine_fds(&fx), e0);
    fx_finish(&fx);
}

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
    setup_ready(&fx, 1);
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
    fx.engine = start_engine();

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
    create_port(&fx);
    error = vhost_port_create(fx.engine, &fx.opts, &port2);
    TU_CHECK_CMP(error, >, 0);
    tu_log("  and the live port is not disturbed: no connection seen");
    /* The engine knows its own ports' paths; probing the socket with a
     * connect() shows up on the live port as a frontend that comes and
     * goes, and a real frontend that connects meanwhile is refused as a
     * second one. */
    tu_sleep_ms(100);
    TU_CHECK(tu_wait_port(fx.port, port_settled, NULL, TU_TIMEOUT_MS));
    TU_CHECK_EQ(counters(&fx).connects, 0);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 0);
    tu_log("  and the first port still works");
    fx.fe = tfe_create(tfe_mem_create_default());
    connect_fe(&fx, fx.fe);
    setup_ready(&fx, 1);
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
    fx.engine = start_engine();

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
            connect_fe(&fx, fx.fe);
        }
        setup_ready(&fx, 2);
        tfe_disconnect(fx.fe);
        wait_disconnected(&fx);
        TU_CHECK_EQ(engine_maps(&fx), 0);
    }
    c = counters(&fx);
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
    setup_ready(&fx, 1);

    tu_log("a second frontend is refused while the first is connected");
    fe2 = tfe_create(NULL);
    for (int i = 0; i < 3; i++) {
        uint64_t f;
        TU_CHECK_OK(tfe_connect(fe2, fx.path));
        TU_CHECK(tfe_get_features(fe2, &f) < 0);
        TU_CHECK(tfe_wait_closed(fe2, TU_TIMEOUT_MS));
        tfe_disconnect(fe2);
    }
    TU_CHECK_EQ(counters(&fx).extra_conns_refused, 3);

    tu_log("the first keeps working");
    TU_CHECK_OK(tfe_sync(fx.fe));
    CHECK_ACK(tfe_net_set_mtu(fx.fe, 2000));
    TU_CHECK(tu_port_info(fx.port).ready);
    TU_CHECK_EQ(counters(&fx).connects, 1);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 1);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_DISCONNECTED), 0);

    tu_log("once the first is gone, the next is accepted");
    tfe_disconnect(fx.fe);
    wait_disconnected(&fx);
    connect_fe(&fx, fe2);
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
    wait_connected(&fx);
    setup_ready(&fx, 2);
    TU_CHECK_EQ(counters(&fx).connects, 1);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_CONNECTED, 1, TU_TIMEOUT_MS));
    fx_finish(&fx);
}

static void
test_client_reconnect(void)
{
    struct fx fx;

    fx_init(&fx, "recon");
    fx.opts.mode = VHOST_PORT_CLIENT;
    fx.engine = start_engine();
    fx.fe = tfe_create(tfe_mem_create_default());
    TU_CHECK_OK(tfe_listen(fx.fe, fx.path));
    create_port(&fx);

    for (int i = 0; i < 3; i++) {
        tu_log("connection %d: accept, ready, hang up", i + 1);
        TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
        wait_connected(&fx);
        setup_ready(&fx, 1);
        tfe_disconnect(fx.fe);
        TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, i + 1,
                                TU_TIMEOUT_MS));
    }
    tu_log("the engine reconnected each time");
    TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
    wait_connected(&fx);
    TU_CHECK_EQ(counters(&fx).connects, 4);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 3);

    tu_log("the frontend goes away entirely; the engine keeps trying");
    tfe_disconnect(fx.fe);
    tfe_stop_listening(fx.fe);
    {
        uint64_t want = counters(&fx).connect_failures + 2;
        TU_CHECK(tu_wait_port(fx.port, has_connect_failures, &want,
                              TU_TIMEOUT_MS));
    }
    tu_log("and connects when it is back");
    TU_CHECK_OK(tfe_listen(fx.fe, fx.path));
    TU_CHECK_OK(tfe_accept(fx.fe, TU_TIMEOUT_MS));
    wait_connected(&fx);
    setup_ready(&fx, 1);
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

    engine = start_engine();
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
    a.engine = start_engine();
    b.engine = a.engine;
    create_port(&a);
    create_port(&b);
    a.fe = tfe_create(tfe_mem_create_default());
    b.fe = tfe_create(tfe_mem_create_default());
    connect_fe(&a, a.fe);
    connect_fe(&b, b.fe);
    setup_ready(&a, 2);
    setup_ready(&b, 2);

    tu_log("A sends a bad header and is disconnected");
    TU_CHECK_OK(tfe_send_hdr(a.fe, VHOST_USER_SET_FEATURES, 0x7, 100000,
                             &zero, sizeof zero, NULL, 0));
    expect_disconnect(&a, a.fe, "a bad header");
    TU_CHECK(tu_events_wait(&a.ev, TU_EV_GONE, 1, TU_TIMEOUT_MS));

    tu_log("A reconnects and sends garbage requests with fds");
    connect_fe(&a, a.fe);
    negotiate(a.fe);
    for (uint32_t req = 0; req < 50; req++) {
        int fd = temp_eventfd();
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
    TU_CHECK_EQ(counters(&b).msgs_rejected, 0);
    TU_CHECK_EQ(counters(&b).msgs_bad_header, 0);
    TU_CHECK_EQ(counters(&b).disconnects, 0);
    TU_CHECK_EQ(tu_events_count(&b.ev, TU_EV_GONE), 0);
    TU_CHECK_EQ(tu_events_count(&b.ev, TU_EV_READY), 1);

    wait_disconnected(&a);
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
    a.engine = start_engine();
    b.engine = a.engine;
    create_port(&a);
    create_port(&b);
    a.fe = tfe_create(tfe_mem_create_default());
    b.fe = tfe_create(tfe_mem_create_default());
    connect_fe(&a, a.fe);
    connect_fe(&b, b.fe);
    setup_ready(&b, 1);

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
            wait_disconnected(&a);
            connect_fe(&a, a.fe);
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
    wait_disconnected(&a);
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
    create_port(&fx);
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
            /* A pending reconnect is due within reconnect_max_ms. */
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
    TU_CHECK_EQ(counters(&fx).msgs_bad_header, 1);
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
    negotiate(fx.fe);
    e0 = engine_fds(&fx);
    fx.fe->timeout_ms = 2000;

    for (uint32_t req = 0; req <= VHOST_USER_N_REQUESTS + 1; req++) {
        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
            for (size_t n_fds = 0; n_fds <= 2; n_fds++) {
                int fds[2];
                int r;

                for (size_t j = 0; j < n_fds; j++) {
                    fds[j] = temp_eventfd();
                }
                r = tfe_request(fx.fe, req, true, junk, sizes[s], fds,
                                n_fds);
                if (!r && req == VHOST_USER_RESET_OWNER) {
                    /* The device forgot REPLY_ACK. */
                    fx.fe->reply_ack = false;
                    negotiate(fx.fe);
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
                    reconnect(&fx);
                }
            }
        }
    }
    tu_log("%d disconnects along the way", n_disconnects);
    TU_CHECK_OK(tfe_sync(fx.fe));
    tfe_disconnect(fx.fe);
    wait_disconnected(&fx);
    TU_CHECK_EQ(engine_fds(&fx), e0 - 1);
    TU_CHECK_EQ(engine_maps(&fx), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    fx_finish(&fx);
}

static const struct tu_test engine_tests[] = {
    { "engine-lifecycle", test_lifecycle,
      "create, start, stop, destroy; options defaults" },
    { "features", test_features,
      "GET_FEATURES offers the option plus PROTOCOL_FEATURES; "
      "SET_FEATURES checks" },
    { "protocol-features", test_protocol_features,
      "GET/SET_PROTOCOL_FEATURES and the supported set" },
    { "reply-ack", test_reply_ack, "acks only with REPLY_ACK + NEED_REPLY" },
    { "reject-disconnects", test_reject_disconnects,
      "rejected without an ack, or a failed GET: disconnect" },
    { "bad-size", test_bad_size, "payload sizes out of range" },
    { "bad-fds", test_bad_fds, "wrong fd counts; every fd closed" },
    { "unknown-requests", test_unknown_requests,
      "unknown and unimplemented requests are counted and ignored" },
    { "bad-header", test_bad_header, "framing errors disconnect" },
    { "owner-reset", test_owner_reset, "SET_OWNER and RESET_OWNER" },
    { "mem-table", test_mem_table, "SET_MEM_TABLE and its replacement" },
    { "mem-table-reject", test_mem_table_reject,
      "bad memory tables leave the old one" },
    { "mem-slots", test_mem_slots,
      "GET_MAX_MEM_SLOTS, ADD_MEM_REG, REM_MEM_REG" },
    { "vring-num", test_vring_num, "SET_VRING_NUM sizes" },
    { "vring-index", test_vring_index,
      "vring indices out of range in every message (CVE-2020-10723)" },
    { "vring-addr", test_vring_addr,
      "ring alignment and translation into one region" },
    { "vring-base", test_vring_base,
      "SET/GET_VRING_BASE; GET stops the queue" },
    { "mem-change-running", test_mem_change_running,
      "memory removed under a running queue stops it first" },
    { "ready-protocol", test_ready_protocol,
      "readiness with PROTOCOL_FEATURES: SET_VRING_ENABLE" },
    { "ready-legacy", test_ready_legacy,
      "readiness without PROTOCOL_FEATURES: the kick enables" },
    { "multiqueue", test_multiqueue, "queue_state for pairs beyond 0" },
    { "max-queues", test_max_queues,
      "VHOST_MAX_QUEUE_PAIRS pairs; vring 255 and 256" },
    { "callback-reentry", test_callback_reentry,
      "callbacks may call the engine and see the state they announce" },
    { "disconnect", test_disconnect,
      "device_gone then disconnected; everything released" },
    { "device-config", test_device_config,
      "GET_QUEUE_NUM, NET_SET_MTU, SEND_RARP, SET/GET_STATUS" },
    { "net-config", test_net_config,
      "GET_CONFIG: the virtio-net config space and its MTU; SET_CONFIG" },
    { "log", test_log,
      "SET_LOG_BASE, SET_LOG_FD, SET_BACKEND_REQ_FD, SET_VRING_ERR" },
    { "kick-nofd", test_kick_nofd, "the no-fd bit of SET_VRING_KICK/CALL" },
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

/* Driver. */

struct test_table {
    const struct tu_test *tests;
    size_t n;
};

/* The data path tests live in test-datapath-*.c (split rings) and
 * test-packed-*.c (packed rings). */
extern const struct tu_test tu_datapath_queue_tests[];
extern const size_t tu_n_datapath_queue_tests;
extern const struct tu_test tu_datapath_validate_tests[];
extern const size_t tu_n_datapath_validate_tests;
extern const struct tu_test tu_datapath_cold_tests[];
extern const size_t tu_n_datapath_cold_tests;
extern const struct tu_test tu_datapath_notify_tests[];
extern const size_t tu_n_datapath_notify_tests;
extern const struct tu_test tu_datapath_buffer_tests[];
extern const size_t tu_n_datapath_buffer_tests;
extern const struct tu_test tu_packed_ring_tests[];
extern const size_t tu_n_packed_ring_tests;
extern const struct tu_test tu_packed_validate_tests[];
extern const size_t tu_n_packed_validate_tests;
extern const struct tu_test tu_packed_order_tests[];
extern const size_t tu_n_packed_order_tests;
extern const struct tu_test tu_packed_notify_tests[];
extern const size_t tu_n_packed_notify_tests;
extern const struct tu_test tu_packed_state_tests[];
extern const size_t tu_n_packed_state_tests;
extern const struct tu_test tu_packed_diff_tests[];
extern const size_t tu_n_packed_diff_tests;
extern const struct tu_test tu_adversarial_tests[];
extern const size_t tu_n_adversarial_tests;
extern const struct tu_test tu_adv_ctrl_tests[];
extern const size_t tu_n_adv_ctrl_tests;
extern const struct tu_test tu_adv_stall_tests[];
extern const size_t tu_n_adv_stall_tests;
extern const struct tu_test tu_sigbus_tests[];
extern const size_t tu_n_sigbus_tests;
extern const struct tu_test tu_concurrency_tests[];
extern const size_t tu_n_concurrency_tests;
extern const struct tu_test tu_adv_budget_tests[];
extern const size_t tu_n_adv_budget_tests;
extern const struct tu_test tu_dirty_log_tests[];
extern const size_t tu_n_dirty_log_tests;
extern const struct tu_test tu_lifecycle_tests[];
extern const size_t tu_n_lifecycle_tests;
extern const struct tu_test tu_iotlb_tests[];
extern const size_t tu_n_iotlb_tests;

/* Room for every table below; unused entries stay empty. */
#define N_TEST_TABLES 48

static void
collect_tables(struct test_table tables[N_TEST_TABLES])
{
    size_t n = 0;

    memset(tables, 0, N_TEST_TABLES * sizeof *tables);
    tables[n++] = (struct test_table) { tu_guest_mem_tests,
                                        tu_n_guest_mem_tests };
    tables[n++] = (struct test_table) { tu_vhost_user_tests,
                                        tu_n_vhost_user_tests };
    tables[n++] = (struct test_table) { engine_tests,
                                        ARRAY_SIZE(engine_tests) };
    tables[n++] = (struct test_table) { tu_datapath_queue_tests,
                                        tu_n_datapath_queue_tests };
    tables[n++] = (struct test_table) { tu_datapath_validate_tests,
                                        tu_n_datapath_validate_tests };
    tables[n++] = (struct test_table) { tu_datapath_cold_tests,
                                        tu_n_datapath_cold_tests };
    tables[n++] = (struct test_table) { tu_datapath_notify_tests,
                                        tu_n_datapath_notify_tests };
    tables[n++] = (struct test_table) { tu_datapath_buffer_tests,
                                        tu_n_datapath_buffer_tests };
    tables[n++] = (struct test_table) { tu_packed_ring_tests,
                                        tu_n_packed_ring_tests };
    tables[n++] = (struct test_table) { tu_packed_validate_tests,
                                        tu_n_packed_validate_tests };
    tables[n++] = (struct test_table) { tu_packed_order_tests,
                                        tu_n_packed_order_tests };
    tables[n++] = (struct test_table) { tu_packed_notify_tests,
                                        tu_n_packed_notify_tests };
    tables[n++] = (struct test_table) { tu_packed_state_tests,
                                        tu_n_packed_state_tests };
    tables[n++] = (struct test_table) { tu_packed_diff_tests,
                                        tu_n_packed_diff_tests };
    tables[n++] = (struct test_table) { tu_adversarial_tests,
                                        tu_n_adversarial_tests };
    tables[n++] = (struct test_table) { tu_adv_ctrl_tests,
                                        tu_n_adv_ctrl_tests };
    tables[n++] = (struct test_table) { tu_adv_stall_tests,
                                        tu_n_adv_stall_tests };
    tables[n++] = (struct test_table) { tu_sigbus_tests, tu_n_sigbus_tests };
    tables[n++] = (struct test_table) { tu_concurrency_tests, tu_n_concurrency_tests };
    tables[n++] = (struct test_table) { tu_adv_budget_tests, tu_n_adv_budget_tests };
    tables[n++] = (struct test_table) { tu_dirty_log_tests,
                                        tu_n_dirty_log_tests };
    tables[n++] = (struct test_table) { tu_lifecycle_tests,
                                        tu_n_lifecycle_tests };
    tables[n++] = (struct test_table) { tu_iotlb_tests, tu_n_iotlb_tests };
}

/* Every test of an audit build is audited: returns false, after saying
 * so, if any page a logged burst wrote was not marked in the dirty log
 * (lib/vhost-dirty-log.h).  Always true in other builds. */
static bool
audit_ok(const struct tu_test *test)
{
#ifdef VHOST_DIRTY_LOG_AUDIT
    uint64_t bad = vhost_dirty_log_audit_violations();

    tu_log("dirty-log audit: %"PRIu64" pages written while logging, "
           "%"PRIu64" not marked", vhost_dirty_log_audit_pages(), bad);
    if (bad) {
        tu_log("%s: FAILED: the dirty log missed pages", test->name);
        return false;
    }
#endif
    (void) test;
    return true;
}

static const struct tu_test *
find_test(const char *name)
{
    struct test_table tables[N_TEST_TABLES];

    collect_tables(tables);
    for (size_t t = 0; t < N_TEST_TABLES; t++) {
        for (size_t i = 0; i < tables[t].n; i++) {
            if (!strcmp(tables[t].tests[i].name, name)) {
                return &tables[t].tests[i];
            }
        }
    }
    return NULL;
}

static int
run_all(void)
{
    struct test_table tables[N_TEST_TABLES];
    int n_failed = 0, n = 0;

    collect_tables(tables);
    for (size_t t = 0; t < N_TEST_TABLES; t++) {
        for (size_t i = 0; i < tables[t].n; i++) {
            const struct tu_test *test = &tables[t].tests[i];
            pid_t pid = fork();
            int status;

            if (pid < 0) {
                perror("fork");
                return 1;
            } else if (!pid) {
                alarm(120);
                test->run();
                exit(audit_ok(test) ? 0 : 1);
            }
            waitpid(pid, &status, 0);
            n++;
            if (WIFEXITED(status) && !WEXITSTATUS(status)) {
                printf("%-28s ok\n", test->name);
            } else {
                printf("%-28s FAILED\n", test->name);
                n_failed++;
            }
            fflush(stdout);
        }
    }
    printf("%d tests, %d failed\n", n, n_failed);
    return n_failed != 0;
}

/* "get-config SOCKET": for tests of an embedder (the OVS provider).  As
 * a frontend on the server socket SOCKET, negotiates
 * VHOST_USER_PROTOCOL_F_CONFIG, reads the virtio-net configuration space
 * and prints its fields; exits 1 if any step fails. */
static int
get_config_main(const char *path)
{
    struct tfe *fe = tfe_create(tfe_mem_create_default());
    struct virtio_net_config cfg;
    struct tfe_reply r;
    uint64_t pf;

    if (tfe_connect_retry(fe, path, 5000)
        || tfe_get_protocol_features(fe, &pf)
        || !(pf & PF(CONFIG))
        || tfe_set_protocol_features(fe, PF(CONFIG))
        || tfe_get_config(fe, 0, sizeof cfg, 12 + sizeof cfg, &r)
        || r.hdr.size != 12 + sizeof cfg) {
        fprintf(stderr, "get-config: %s: no config space\n", path);
        return 1;
    }
    memcpy(&cfg, r.payload.bytes + 12, sizeof cfg);
    printf("status=%u max_virtqueue_pairs=%u mtu=%u\n", cfg.status,
           cfg.max_virtqueue_pairs, cfg.mtu);
    tfe_disconnect(fe);
    return 0;
}

int
main(int argc, char *argv[])
{
    const struct tu_test *test;
    const char *level = getenv("TEST_ENGINE_LOG");

    if (level && !strcmp(level, "dbg")) {
        vhost_log_set_level(VHOST_LOG_DBG);
    }
    if (argc == 3 && !strcmp(argv[1], "get-config")) {
        return get_config_main(argv[2]);
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s TEST | --list | --all | get-config SOCKET"
                "\n", argv[0]);
        return 2;
    }
    if (!strcmp(argv[1], "--list")) {
        struct test_table tables[N_TEST_TABLES];
        collect_tables(tables);
        for (size_t t = 0; t < N_TEST_TABLES; t++) {
            for (size_t i = 0; i < tables[t].n; i++) {
                printf("%-28s %s\n", tables[t].tests[i].name,
                       tables[t].tests[i].doc);
            }
        }
        return 0;
    }
    if (!strcmp(argv[1], "--all")) {
        return run_all();
    }
    test = find_test(argv[1]);
    if (!test) {
        fprintf(stderr, "%s: no test named %s (try --list)\n", argv[0],
                argv[1]);
        return 2;
    }
    /* A hung test fails rather than stalling the testsuite. */
    alarm(120);
    tu_log("%s: %s", test->name, test->doc);
    test->run();
    if (!audit_ok(test)) {
        return 1;
    }
    tu_log("%s: passed", test->name);
    return 0;
}
