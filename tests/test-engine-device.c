/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests: device messages (fixture in test-engine.h).
 *
 * Device configuration messages, the dirty log, the log call fd and the
 * backend channel.
 */

#include <config.h>

#include "test-engine.h"

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
    fx_negotiate(fx.fe);

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
    fx_negotiate(fx.fe);
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
        fx_expect_disconnect(&fx, fx.fe, "GET_CONFIG with 11 bytes");
        TU_CHECK_EQ(tu_port_info(fx.port).counters.msgs_bad_size, bad0 + 1);
    }

    tu_log("without PROTOCOL_F_CONFIG negotiated, GET_CONFIG is refused");
    vhost_port_destroy(fx.port);
    fx.opts.protocol_features = PF(REPLY_ACK) | PF(MQ);
    fx_create_port(&fx);
    fx_connect_fe(&fx, fx.fe);
    fx_negotiate(fx.fe);
    TU_CHECK_OK(tfe_get_protocol_features(fx.fe, &pf));
    TU_CHECK(!(pf & PF(CONFIG)));
    {
        uint8_t buf[12 + 2] = { 10, 0, 0, 0, 2 };
        TU_CHECK_OK(tfe_send(fx.fe, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION,
                             buf, sizeof buf, NULL, 0));
        fx_expect_disconnect(&fx, fx.fe,
                             "GET_CONFIG without PROTOCOL_F_CONFIG");
    }
    fx_connect_fe(&fx, fx.fe);
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
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);

    tu_log("SET_LOG_BASE maps the log and replies with a bare header");
    TU_CHECK_OK(tfe_log_create(fx.fe, 65536));
    e0 = fx_engine_fds(&fx);
    CHECK_ACK(tfe_set_log_base(fx.fe, 65536, 0, fx.fe->log_fd, false));
    info = tu_port_info(fx.port);
    TU_CHECK(info.log_mapped);
    TU_CHECK_EQ(info.log_size, 65536);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 1);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

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
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

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
            TU_CHECK_EQ(fx_engine_fds(&fx), e0);
        }
        tu_log("  a pipe");
        {
            int p[2];
            TU_SYS(pipe(p));
            CHECK_NACK(&fx, tfe_set_log_base(fx.fe, 4096, 0, p[0], true));
            close(p[0]);
            close(p[1]);
            TU_CHECK_EQ(fx_engine_fds(&fx), e0);
        }
    }

    tu_log("SET_LOG_FD keeps an eventfd; a second one replaces it");
    CHECK_ACK(tfe_set_log_fd(fx.fe));
    TU_CHECK(tu_port_info(fx.port).has_log_call);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 1);
    CHECK_ACK(tfe_set_log_fd(fx.fe));
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 1);

    tu_log("SET_BACKEND_REQ_FD keeps a socket; a second one replaces it");
    CHECK_ACK(tfe_set_backend_req_fd(fx.fe));
    TU_CHECK(tu_port_info(fx.port).has_backend_req);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 2);
    CHECK_ACK(tfe_set_backend_req_fd(fx.fe));
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 2);

    tu_log("SET_VRING_ERR keeps an eventfd per queue, replaced likewise");
    fd = fx_temp_eventfd();
    CHECK_ACK(tfe_set_vring_err(fx.fe, 1, fd));
    close(fd);
    TU_CHECK(tu_queue_info(fx.port, 1).has_err);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 3);
    fd = fx_temp_eventfd();
    CHECK_ACK(tfe_set_vring_err(fx.fe, 1, fd));
    close(fd);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 3);

    tu_log("a rejected SET_LOG_BASE without NEED_REPLY disconnects");
    TU_CHECK(tfe_set_log_base(fx.fe, UINT64_MAX, 0, fx.fe->log_fd, false)
             < 0);
    fx_expect_disconnect(&fx, fx.fe, "a bad SET_LOG_BASE");
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 - 1);
    fx_finish(&fx);
}

const struct tu_test tu_engine_device_tests[] = {
    { "device-config", test_device_config,
      "GET_QUEUE_NUM, NET_SET_MTU, SEND_RARP, SET/GET_STATUS" },
    { "net-config", test_net_config,
      "GET_CONFIG: the virtio-net config space and its MTU; SET_CONFIG" },
    { "log", test_log,
      "SET_LOG_BASE, SET_LOG_FD, SET_BACKEND_REQ_FD, SET_VRING_ERR" },
};

const size_t tu_n_engine_device_tests = ARRAY_SIZE(tu_engine_device_tests);
