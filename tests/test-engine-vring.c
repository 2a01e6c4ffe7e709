/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Engine tests: vring messages and readiness (fixture in test-engine.h).
 *
 * The vring messages, out-of-range vring indices in every one of them
 * (CVE-2020-10723), when a port becomes ready, the callbacks around a
 * disconnect, and SET_VRING_KICK/CALL without an fd (the no-fd bit).
 */

#include <config.h>

#include "test-engine.h"

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
    fx_negotiate(fx.fe);

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
    fx_wait_disconnected(&fx);
    vhost_port_destroy(fx.port);
    fx.opts.features = vhost_default_features()
                       | FEATURE_BIT(VIRTIO_F_RING_PACKED);
    fx_create_port(&fx);
    fx_connect_fe(&fx, fx.fe);
    fx_negotiate(fx.fe);
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
    fx_negotiate(fx.fe);
    CHECK_ACK(tfe_set_mem_table(fx.fe));
    TU_CHECK_OK(tfe_vring_alloc(fx.fe, 3, 64));
    e0 = fx_engine_fds(&fx);

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
            int fd = nofd ? -1 : fx_temp_eventfd();

            tu_log("%s payload %#"PRIx64"%s rejected",
                   vhost_user_request_to_string(req), u64,
                   nofd ? "" : " with an fd");
            CHECK_NACK(&fx, tfe_set_vring_fd_raw(fx.fe, req, u64, &fd,
                                                 !nofd));
            if (fd >= 0) {
                close(fd);
            }
            TU_CHECK_EQ(fx_engine_fds(&fx), e0);
        }
    }
    tu_log("index 255 with the no-fd bit");
    CHECK_NACK(&fx, tfe_set_vring_kick(fx.fe, 255, -1));
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

    tu_log("GET_VRING_BASE of a bad index disconnects (it is a GET)");
    {
        static const uint32_t get_bad[] = { 4, 0x10000, UINT32_MAX };
        for (size_t i = 0; i < ARRAY_SIZE(get_bad); i++) {
            uint32_t base;
            tu_log("GET_VRING_BASE %#"PRIx32, get_bad[i]);
            TU_CHECK(tfe_get_vring_base(fx.fe, get_bad[i], &base) < 0);
            fx_expect_disconnect(&fx, fx.fe, "GET_VRING_BASE of a bad index");
            fx_reconnect(&fx);
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
    fx_negotiate(fx.fe);
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

    tu_log("a memory table whose userspace_addr is 8 bytes off where its "
           "fd maps: a descriptor table at an aligned address lands "
           "unaligned, and is refused");
    {
        const struct tfe_mem *m = fx.fe->mem;
        struct vhost_user_mem_region regions[TFE_MAX_REGIONS];
        int fds[TFE_MAX_REGIONS];

        for (size_t i = 0; i < m->n_regions; i++) {
            tfe_mem_region_desc(m, i, &regions[i]);
            regions[i].userspace_addr -= 8;
            fds[i] = m->regions[i].fd;
        }
        CHECK_ACK(tfe_set_mem_table_raw(fx.fe, regions, m->n_regions, fds,
                                        m->n_regions));
        CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &good));
        CHECK_ACK(tfe_set_mem_table(fx.fe));
    }

    tu_log("the last good address stays after a rejection");
    CHECK_ACK(tfe_set_vring_addr_raw(fx.fe, &good));
    addr = good;
    addr.desc_user_addr = 0x1000;
    CHECK_NACK(&fx, tfe_set_vring_addr_raw(fx.fe, &addr));
    TU_CHECK(tu_queue_info(fx.port, 0).has_addr);
    tu_log("  and the device can still become ready");
    fx_setup_ready(&fx, 1);
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
    fx_negotiate(fx.fe);

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
    fx_setup_ready(&fx, 1);
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
    fx_setup_ready(&fx, 1);
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
    TU_CHECK_EQ(fx_engine_maps(&fx), 1);

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
    TU_CHECK_EQ(fx_engine_maps(&fx), 1);

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
    fx_negotiate(fx.fe);

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
    fx_reconnect(&fx);
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
    fx.fe->vrings[0].kick_fd = fx_temp_eventfd();
    fx.fe->vrings[1].kick_fd = fx_temp_eventfd();
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
    fx_wait_disconnected(&fx);
    fx_connect_fe(&fx, fx.fe);
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
    fx_setup_ready(&fx, 2);
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
    e0 = fx_engine_fds(&fx);
    fx_setup_ready(&fx, 2);
    CHECK_ACK(tfe_set_backend_req_fd(fx.fe));
    CHECK_ACK(tfe_set_log_fd(fx.fe));
    CHECK_ACK(tfe_log_create(fx.fe, 4096));
    CHECK_ACK(tfe_set_log_base(fx.fe, 4096, 0, fx.fe->log_fd, false));
    {
        int fd = fx_temp_eventfd();
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
    fx_wait_disconnected(&fx);
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
    TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 - 1);      /* The connection. */

    tu_log("a frontend that hangs up with requests and fds unread");
    tu_events_clear(&fx.ev);
    fx_connect_fe(&fx, fx.fe);
    TU_CHECK_OK(tfe_negotiate(fx.fe, NULL));
    fx.fe->reply_ack = false;
    TU_CHECK_OK(tfe_set_mem_table(fx.fe));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vring_setup(fx.fe, q, 256));
        TU_CHECK_OK(tfe_set_mem_table(fx.fe));
    }
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    fx_wait_disconnected(&fx);
    TU_CHECK_EQ(fx_engine_maps(&fx), 0);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 - 1);

    tu_log("a frontend that never got ready: only disconnected");
    tu_events_clear(&fx.ev);
    fx_connect_fe(&fx, fx.fe);
    fx_negotiate(fx.fe);
    tfe_disconnect(fx.fe);
    TU_CHECK(tu_events_wait(&fx.ev, TU_EV_DISCONNECTED, 1, TU_TIMEOUT_MS));
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_GONE), 0);
    TU_CHECK_EQ(tu_events_count(&fx.ev, TU_EV_CONNECTED), 1);
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
    fx_negotiate(fx.fe);
    e0 = fx_engine_fds(&fx);

    tu_log("the no-fd bit with an fd attached is rejected, fd closed");
    fd = fx_temp_eventfd();
    CHECK_NACK(&fx, tfe_set_vring_fd_raw(fx.fe, VHOST_USER_SET_VRING_KICK,
                                         VHOST_USER_VRING_NOFD_MASK | 0,
                                         &fd, 1));
    close(fd);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);
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
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);

    tu_log("a call fd given then taken away is closed");
    fd = fx_temp_eventfd();
    CHECK_ACK(tfe_set_vring_call(fx.fe, 0, fd));
    close(fd);
    TU_CHECK(tu_queue_info(fx.port, 0).has_call);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0 + 1);
    CHECK_ACK(tfe_set_vring_call(fx.fe, 0, -1));
    TU_CHECK(!tu_queue_info(fx.port, 0).has_call);
    TU_CHECK_EQ(fx_engine_fds(&fx), e0);
    fx_finish(&fx);
}

const struct tu_test tu_engine_vring_tests[] = {
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
    { "kick-nofd", test_kick_nofd, "the no-fd bit of SET_VRING_KICK/CALL" },
};

const size_t tu_n_engine_vring_tests = ARRAY_SIZE(tu_engine_vring_tests);
