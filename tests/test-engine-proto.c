/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests: the vhost-user protocol (fixture in test-engine.h).
 *
 * Engine lifecycle; feature negotiation; REPLY_ACK; the rejection policy
 * (no ack asked for, or a GET, means disconnect); payload sizes outside the
 * dispatch table's range; wrong numbers of fds, each closed by the engine;
 * unknown and unimplemented requests; framing errors; ownership and
 * reset.
 */

#include <config.h>

#include "test-engine.h"

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
    tu_log("the default offers every supported protocol feature but CONFIG "
           "and PAGEFAULT");
    TU_CHECK_EQ(opts.protocol_features,
                vhost_supported_protocol_features()
                & ~(PF(CONFIG) | PF(PAGEFAULT)));
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
    fx_create_port(&fx);
    fx_connect_fe(&fx, fx.fe);
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
    fx_expect_disconnect(&fx, fx.fe, "an unoffered feature");
    TU_CHECK_EQ(fx_counters(&fx).disconnects, 1);

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
           "which QEMU's virtio-net warns of, nor PAGEFAULT (postcopy, "
           "which the embedder turns on)");
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK_EQ(pf, SUPPORTED_PROTOCOL_FEATURES
                    & ~(PF(CONFIG) | PF(PAGEFAULT)));

    tu_log("options.protocol_features is intersected with the supported "
           "set");
    tfe_disconnect(fx.fe);
    vhost_port_destroy(fx.port);
    fx.opts.protocol_features = PF(MQ) | PF(REPLY_ACK) | PF(CONFIG)
                                | PF(INFLIGHT_SHMFD) | FEATURE_BIT(40);
    fx_create_port(&fx);
    fx_connect_fe(&fx, fx.fe);
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
    fx_wait_disconnected(&fx);
    fx_connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_set_protocol_features(fx.fe, PF(REPLY_ACK)
                                          | PF(INFLIGHT_SHMFD)));
    fx_expect_disconnect(&fx, fx.fe, "unsupported protocol features");

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

    TU_CHECK_EQ(fx_counters(&fx).msgs_rejected, 0);
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
    fx_expect_disconnect(&fx, fx.fe, "a bad vring size");
    c = fx_counters(&fx);
    TU_CHECK_EQ(c.msgs_rejected, 1);
    TU_CHECK_EQ(c.disconnects, 1);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 0);

    tu_log("with REPLY_ACK but no NEED_REPLY: disconnects");
    fx_reconnect(&fx);
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_set_vring_num(fx.fe, 0, 3));
    fx_expect_disconnect(&fx, fx.fe, "a bad vring size, no NEED_REPLY");

    tu_log("with REPLY_ACK and NEED_REPLY: nonzero ack, still connected");
    fx_reconnect(&fx);
    CHECK_NACK(&fx, tfe_set_vring_num(fx.fe, 0, 3));
    TU_CHECK_OK(tfe_sync(fx.fe));

    tu_log("a failed GET always disconnects, even with NEED_REPLY");
    {
        struct vhost_user_vring_state st = { .index = 1000 };
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_VRING_BASE,
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             &st, sizeof st, NULL, 0));
        fx_expect_disconnect(&fx, fx.fe, "GET_VRING_BASE of a bad index");
    }
    tu_log("...also a GET with a bad payload size");
    fx_reconnect(&fx);
    {
        uint8_t junk[16] = { 0 };
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_FEATURES,
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             junk, sizeof junk, NULL, 0));
        fx_expect_disconnect(&fx, fx.fe, "GET_FEATURES with 16 bytes");
    }

    c = fx_counters(&fx);
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
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        uint64_t bad0 = fx_counters(&fx).msgs_bad_size;
        bool with_fd = i % 2;
        int fd = with_fd ? fx_temp_eventfd() : -1;

        tu_log("%s with %"PRIu32" payload bytes%s: rejected",
               vhost_user_request_to_string(cases[i].request),
               cases[i].size, with_fd ? " and an fd" : "");
        CHECK_NACK(&fx, tfe_request(fx.fe, cases[i].request, true, zeros,
                                    cases[i].size, &fd, with_fd));
        TU_CHECK_EQ(fx_counters(&fx).msgs_bad_size, bad0 + 1);
        if (fd >= 0) {
            close(fd);
        }
        TU_CHECK_EQ(fx_engine_fds(&fx), e0);
    }
    TU_CHECK_OK(tfe_sync(fx.fe));

    tu_log("without NEED_REPLY a bad size disconnects");
    TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION,
                         zeros, 4, NULL, 0));
    fx_expect_disconnect(&fx, fx.fe, "SET_FEATURES with 4 bytes");
    TU_CHECK_EQ(fx_counters(&fx).msgs_bad_size, ARRAY_SIZE(cases) + 1);
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
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int fds[16];
        uint64_t bad0, closed0;

        if (cases[i].request == VHOST_USER_GET_FEATURES) {
            continue;
        }
        bad0 = fx_counters(&fx).msgs_bad_fds;
        closed0 = fx_counters(&fx).fds_closed;
        tu_log("%s with %zu fds: rejected, fds closed",
               vhost_user_request_to_string(cases[i].request),
               cases[i].n_fds);
        for (size_t j = 0; j < cases[i].n_fds; j++) {
            fds[j] = fx_temp_eventfd();
        }
        CHECK_NACK(&fx, tfe_request(fx.fe, cases[i].request, true, zeros,
                                    cases[i].size, fds, cases[i].n_fds));
        TU_CHECK_EQ(fx_counters(&fx).msgs_bad_fds, bad0 + 1);
        for (size_t j = 0; j < cases[i].n_fds; j++) {
            close(fds[j]);
        }
        TU_CHECK_EQ(fx_engine_fds(&fx), e0);
        /* The kernel drops fds beyond VHOST_USER_MAX_FDS itself. */
        TU_CHECK_EQ(fx_counters(&fx).fds_closed,
                    closed0 + MIN(cases[i].n_fds, VHOST_USER_MAX_FDS));
    }

    tu_log("fds on a GET are a bad fd count too, and a GET disconnects");
    {
        int fd = fx_temp_eventfd();
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_FEATURES,
                             VHOST_USER_VERSION, NULL, 0, &fd, 1));
        close(fd);
        fx_expect_disconnect(&fx, fx.fe, "GET_FEATURES with an fd");
    }
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 - 1);       /* The connection. */
    fx_finish(&fx);
}

/* Unknown and unimplemented requests. */
static void
test_unknown_requests(void)
{
    static const uint32_t requests[] = {
        99, 0, VHOST_USER_CREATE_CRYPTO_SESSION, VHOST_USER_SET_VRING_ENDIAN,
        VHOST_USER_SET_INFLIGHT_FD, VHOST_USER_GPU_SET_SOCKET,
        VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_N_REQUESTS, 0x10000,
        UINT32_MAX,
    };
    static uint8_t zeros[64];
    struct fx fx;
    struct vhost_port_counters c;
    int e0;

    fx_init(&fx, "unk");
    fx_start(&fx);
    e0 = fx_engine_fds(&fx);

    tu_log("before REPLY_ACK: ignored, the connection stays up");
    for (size_t i = 0; i < ARRAY_SIZE(requests); i++) {
        int fd = fx_temp_eventfd();
        tu_log("  request %"PRIu32" with an fd", requests[i]);
        TU_CHECK_OK(tfe_send(fx.fe, requests[i],
                             VHOST_USER_VERSION | VHOST_USER_NEED_REPLY_MASK,
                             zeros, 8, &fd, 1));
        close(fd);
        TU_CHECK_OK(tfe_sync(fx.fe));
        TU_CHECK_EQ(fx_engine_fds(&fx), e0);
    }
    c = fx_counters(&fx);
    TU_CHECK_EQ(c.msgs_unknown, ARRAY_SIZE(requests));
    TU_CHECK_EQ(c.msgs_rejected, ARRAY_SIZE(requests));

    tu_log("with REPLY_ACK and NEED_REPLY: a nonzero ack");
    fx_negotiate(fx.fe);
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
    c = fx_counters(&fx);
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
    e0 = fx_engine_fds(&fx);

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        uint64_t payload = 0;
        int fd = fx_temp_eventfd();

        tu_log("%s, with an fd", cases[i].what);
        fx_negotiate(fx.fe);
        TU_CHECK_OK(tfe_send_hdr(fx.fe, VHOST_USER_SET_FEATURES,
                                 cases[i].flags, cases[i].size, &payload,
                                 sizeof payload, &fd, 1));
        close(fd);
        fx_expect_disconnect(&fx, fx.fe, cases[i].what);
        TU_CHECK_EQ(fx_counters(&fx).msgs_bad_header, i + 1);
        tu_log("  the fd and the connection are closed");
        TU_CHECK_EQ(fx_engine_fds(&fx), e0 - 1);
        fx_connect_fe(&fx, fx.fe);
    }

    tu_log("a header cut short, then the frontend hangs up");
    {
        struct vhost_user_hdr hdr = { VHOST_USER_SET_OWNER,
                                      VHOST_USER_VERSION, 0 };
        TU_CHECK_OK(tfe_sock_send(fx.fe->sock, &hdr, 7, NULL, 0,
                                  TU_TIMEOUT_MS));
        tfe_disconnect(fx.fe);
        fx_wait_disconnected(&fx);
    }
    TU_CHECK_EQ(fx_counters(&fx).msgs_bad_header, ARRAY_SIZE(cases));
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
    e0 = fx_engine_fds(&fx);

    TU_CHECK(!tu_port_info(fx.port).owned);
    tu_log("SET_OWNER sets owned; a full bring-up makes the device ready");
    fx_setup_ready(&fx, 2);
    info = tu_port_info(fx.port);
    TU_CHECK(info.owned);
    TU_CHECK_EQ(info.n_mem_regions, 2);
    TU_CHECK_EQ(info.n_queues, 4);
    TU_CHECK_EQ(info.n_enabled_queues, 4);
    TU_CHECK_EQ(fx_engine_maps(&fx), 2);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 1);
    tu_log("the engine holds a kick and a call fd per queue");
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 8);

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
    TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);
    for (unsigned int q = 0; q < 4; q++) {
        struct vhost_queue_info qi = tu_queue_info(fx.port, q);
        TU_CHECK(!qi.ready);
        TU_CHECK(!qi.has_kick);
        TU_CHECK(!qi.has_call);
    }
    TU_CHECK(info.connected);

    tu_log("the device can be brought up again on the same connection");
    fx.fe->reply_ack = false;
    fx_setup_ready(&fx, 2);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_READY), 2);

    tu_log("RESET_OWNER again: device_gone; once more: nothing");
    CHECK_ACK(tfe_reset_owner(fx.fe));
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_sync(fx.fe));
    CHECK_ACK(tfe_reset_owner(fx.fe));
    TU_CHECK_OK(tfe_sync(fx.fe));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 2);
    TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    fx_finish(&fx);
}

const struct tu_test tu_engine_proto_tests[] = {
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
};

const size_t tu_n_engine_proto_tests = ARRAY_SIZE(tu_engine_proto_tests);
