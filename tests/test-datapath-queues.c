/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: queues (fixture in test-datapath.h).
 *
 * Packets both ways for every combination of MRG_RXBUF, INDIRECT_DESC,
 * EVENT_IDX and VERSION_1; queue sizes other than 256; queue pair and vring
 * numbers the port does not have; guest memory replaced under traffic.
 */

#include <config.h>

#include "test-datapath.h"

/* Feature combinations. */

static const size_t combo_sizes[] = {
    42, 60, 64, 65, 127, 128, 255, 256, 511, 512, 1023, 1024, 1500, 1518,
    1519, 4000, 9000,
};

#define N_COMBO ARRAY_SIZE(combo_sizes)
#define MRG_BUF_SIZE 1536

static void
run_combo(bool mrg, bool indirect, bool event_idx, bool v1)
{
    uint64_t features = (DP_BASE
                         | (mrg ? F(VIRTIO_NET_F_MRG_RXBUF) : 0)
                         | (indirect ? F(VIRTIO_RING_F_INDIRECT_DESC) : 0)
                         | (event_idx ? F(VIRTIO_RING_F_EVENT_IDX) : 0)
                         | (v1 ? F(VIRTIO_F_VERSION_1) : 0));
    struct dp_cfg cfg = dp_cfg_features(features);
    struct vhost_pkt out[VHOST_MAX_BURST], in[N_COMBO];
    struct vhost_queue_stats e, s;
    uint8_t *pkts[N_COMBO];
    int heads[N_COMBO];
    struct dp dp;

    dp_start(&dp, "combo", &cfg);
    tu_log("header is %u bytes", dp.hdr_len);
    TU_CHECK_EQ(dp.hdr_len, mrg || v1 ? 12 : 10);

    tu_log("guest to host: %zu packets of 42..9000 bytes, each over 1-4 "
           "descriptors%s", N_COMBO, indirect ? " in an indirect table" : "");
    memset(&e, 0, sizeof e);
    dp_poison_avail_event(&dp.vq[TX(0)]);
    dp_poison_avail_event(&dp.vq[RX(0)]);
    for (size_t i = 0; i < N_COMBO; i++) {
        struct tfe_buf_opts o = { .n_descs = 1 + i % 4,
                                  .indirect = indirect };

        pkts[i] = dp_new_pkt(&dp, combo_sizes[i], i % 3);
        heads[i] = dp_tx_post(&dp, 0, NULL, pkts[i], combo_sizes[i], &o);
        dp_stats_add(&e, pkts[i], combo_sizes[i]);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, VHOST_MAX_BURST), N_COMBO);
    for (size_t i = 0; i < N_COMBO; i++) {
        dp_check_pkt(&out[i], pkts[i], combo_sizes[i], "dequeued packet");
        dp_check_ol_zero(&out[i], "dequeued packet");
        dp_expect_used(&dp.vq[TX(0)], heads[i], 0);
    }
    dp_expect_no_used(&dp.vq[TX(0)]);
    dp_release_pkts(out, VHOST_MAX_BURST);
    dp_check_stats(&dp, TX(0), &e);

    tu_log("the guest is notified once; the engine polls");
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[TX(0)]), 1);
    s = dp_get_stats(&dp, TX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    TU_CHECK_EQ(s.notifications_suppressed, 0);
    dp_check_no_kicks(&dp.vq[TX(0)], event_idx);

    tu_log("host to guest: the same packets%s",
           mrg ? ", into 1536-byte buffers" : ", one chain each");
    if (mrg) {
        for (int i = 0; i < 64; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 2,
                                      .indirect = indirect };
            dp_rx_post(&dp, 0, MRG_BUF_SIZE, &o);
        }
    } else {
        for (size_t i = 0; i < N_COMBO; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 3,
                                      .indirect = indirect };
            dp_rx_post(&dp, 0, 9000 + dp.hdr_len + 100, &o);
        }
    }
    for (size_t i = 0; i < N_COMBO; i++) {
        in[i] = (struct vhost_pkt) { .data = pkts[i], .len = combo_sizes[i],
                                     .size = combo_sizes[i] };
    }
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in, N_COMBO), N_COMBO);
    for (size_t i = 0; i < N_COMBO; i++) {
        unsigned int n_bufs = (mrg ? DIV_ROUND_UP(dp.hdr_len + combo_sizes[i],
                                                  MRG_BUF_SIZE)
                               : 1);
        dp_rx_expect(&dp, 0, pkts[i], combo_sizes[i], NULL, n_bufs,
                     "enqueued packet");
    }
    if (!mrg) {
        dp_expect_no_used(&dp.vq[RX(0)]);
    }
    dp_check_stats(&dp, RX(0), &e);
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[RX(0)]), 1);
    s = dp_get_stats(&dp, RX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    dp_check_no_kicks(&dp.vq[RX(0)], event_idx);

    for (size_t i = 0; i < N_COMBO; i++) {
        free(pkts[i]);
    }
    dp_roundtrip(&dp, 1, "the other queue pair");
    dp_finish(&dp);
}

#define COMBO(NAME, MRG, IND, EVT, V1)                                  \
    static void                                                         \
    test_combo_##NAME(void)                                             \
    {                                                                   \
        run_combo(MRG, IND, EVT, V1);                                   \
    }
COMBO(0000, false, false, false, false)
COMBO(0001, false, false, false, true)
COMBO(0010, false, false, true, false)
COMBO(0011, false, false, true, true)
COMBO(0100, false, true, false, false)
COMBO(0101, false, true, false, true)
COMBO(0110, false, true, true, false)
COMBO(0111, false, true, true, true)
COMBO(1000, true, false, false, false)
COMBO(1001, true, false, false, true)
COMBO(1010, true, false, true, false)
COMBO(1011, true, false, true, true)
COMBO(1100, true, true, false, false)
COMBO(1101, true, true, false, true)
COMBO(1110, true, true, true, false)
COMBO(1111, true, true, true, true)

/* Queue sizes other than 256. */

static void
run_ring_size(unsigned int size)
{
    struct dp_cfg cfg = { .features = DP_FULL, .queue_size = size };
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[1024];
    struct dp dp;
    char name[32];
    unsigned int got = 0;

    snprintf(name, sizeof name, "size-%u", size);
    dp_start(&dp, name, &cfg);
    TU_CHECK_EQ(dp.vq[TX(0)].size, size);
    TU_CHECK_EQ(tu_queue_info(dp.port, TX(0)).size, size);

    tu_log("queue size %u: a full ring, dequeued in bursts of at most %d",
           size, VHOST_MAX_BURST);
    for (unsigned int i = 0; i < size; i++) {
        pkts[i] = dp_new_pkt(&dp, 60 + i % 200, MAC_UNICAST);
        dp_tx_post(&dp, 0, NULL, pkts[i], 60 + i % 200, NULL);
    }
    while (got < size) {
        unsigned int k = dp_dq(&dp, 0, out, VHOST_MAX_BURST);

        TU_CHECK_EQ(k, MIN(size - got, VHOST_MAX_BURST));
        for (unsigned int i = 0; i < k; i++) {
            struct tfe_used_elem u;
            dp_check_pkt(&out[i], pkts[got + i], 60 + (got + i) % 200,
                         "full ring");
            TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        }
        dp_release_pkts(out, VHOST_MAX_BURST);
        got += k;
    }
    for (unsigned int i = 0; i < size; i++) {
        free(pkts[i]);
    }

    if (size <= TFE_VQ_MAX_SEGS) {
        struct tfe_buf_opts o = { .n_descs = size };
        uint8_t *a = dp_new_pkt(&dp, 300, MAC_UNICAST);

        tu_log("a chain of exactly %u descriptors (the queue size) is "
               "fine, and so is an indirect table of %u entries", size,
               size);
        int head = dp_tx_post(&dp, 0, NULL, a, 300, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 300, "chain as long as the queue");
        dp_release_pkts(out, 4);
        dp_expect_used(&dp.vq[TX(0)], head, 0);
        o.indirect = true;
        head = dp_tx_post(&dp, 0, NULL, a, 300, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 300, "indirect table as long as the queue");
        dp_release_pkts(out, 4);
        dp_expect_used(&dp.vq[TX(0)], head, 0);

        tu_log("a cycle through every descriptor is a loop");
        {
            struct tfe_vq *vq = &dp.vq[TX(0)];
            uint64_t buf = dp_arena_buf(vq, 64);
            uint16_t ids[TFE_VQ_MAX_SEGS];
            uint16_t loop_head = dp_take_chain(vq, ids, size);

            for (unsigned int i = 0; i < size; i++) {
                dp_set_desc(vq, ids[i], buf, 20, TFE_DESC_F_NEXT,
                            ids[(i + 1) % size]);
            }
            tfe_vq_push_avail(vq, loop_head);
            TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
            dp_release_pkts(out, 4);
            dp_expect_used(vq, loop_head, 0);
            TU_CHECK_EQ(dp_get_stats(&dp, TX(0)).drops[VHOST_DROP_LOOP], 1);
        }
        free(a);
    }
    dp_roundtrip(&dp, 0, "after the full ring");
    dp_roundtrip(&dp, 1, "the other queue pair");
    dp_finish(&dp);
}

static void
test_ring_sizes(void)
{
    static const unsigned int sizes[] = { 2, 8, 64, 1024 };

    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        run_ring_size(sizes[i]);
    }
}

/* Queue pair and vring numbers the port does not have. */
static void
test_bad_qp(void)
{
    static const unsigned int bad[] = {
        2, 3, 127, 128, 129, 0x7fffffff, 0x80000000, 0x80000001, UINT_MAX,
    };
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_queue_stats st;
    struct vhost_pkt out[4];
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "bad-qp", &cfg);
    a = dp_new_pkt(&dp, 100, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, a, 100, NULL);
    dp_rx_post(&dp, 0, 2048, NULL);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("queue pair %#x: nothing moves (pair 0 has a packet and a "
               "buffer waiting)", bad[i]);
        TU_CHECK_EQ(dp_dq(&dp, bad[i], out, 4), 0);
        dp_release_pkts(out, 4);
        TU_CHECK_EQ(dp_enq1(&dp, bad[i], a, 100, NULL), 0);
        dp_expect_no_used(&dp.vq[TX(0)]);
        dp_expect_no_used(&dp.vq[RX(0)]);
    }
    tu_log("statistics of vrings the port does not have: EINVAL");
    TU_CHECK_EQ(vhost_port_get_queue_stats(dp.port, 4, &st), EINVAL);
    TU_CHECK_EQ(vhost_port_get_queue_stats(dp.port, VHOST_MAX_QUEUES, &st),
                EINVAL);
    TU_CHECK_EQ(vhost_port_get_queue_stats(dp.port, UINT_MAX, &st), EINVAL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_check_pkt(&out[0], a, 100, "pair 0 after the bad pairs");
    dp_release_pkts(out, 4);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 1);
    dp_rx_expect(&dp, 0, a, 100, NULL, 1, "pair 0 after the bad pairs");
    free(a);
    dp_finish(&dp);
}

/* Guest memory replaced under traffic. */

struct traffic {
    struct dp *dp;
    atomic_bool stop;
    atomic_uint rounds;
};

/* Dequeues 'n' packets from queue pair 0, retrying while the control
 * plane holds the vring (a dp_burst then returns 0). */
static void
dq_all(struct dp *dp, struct vhost_pkt *out, unsigned int n)
{
    long long deadline = tu_now_ms() + TU_TIMEOUT_MS;
    unsigned int got = 0;

    while (got < n) {
        struct vhost_pkt tmp[VHOST_MAX_BURST];
        unsigned int k = dp_dq(dp, 0, tmp, n - got);

        memcpy(&out[got], tmp, k * sizeof *tmp);
        dp_release_pkts(&tmp[k], n - got - k);
        got += k;
        if (tu_now_ms() > deadline) {
            TU_FAIL("dequeue made no progress for %d ms (%u of %u)",
                    TU_TIMEOUT_MS, got, n);
        }
    }
}

static void *
traffic_main(void *t_)
{
    struct traffic *t = t_;
    struct dp *dp = t->dp;

    while (!atomic_load(&t->stop)) {
        struct vhost_pkt out[8], in[8];
        uint8_t *pkts[8];
        long long deadline;
        unsigned int done;

        for (int i = 0; i < 8; i++) {
            size_t len = 60 + 200 * i;
            pkts[i] = dp_new_pkt(dp, len, i % 3);
            dp_tx_post(dp, 0, NULL, pkts[i], len, NULL);
        }
        dq_all(dp, out, 8);
        for (int i = 0; i < 8; i++) {
            struct tfe_used_elem u;
            dp_check_pkt(&out[i], pkts[i], 60 + 200 * i, "dequeue under "
                         "SET_MEM_TABLE");
            TU_CHECK_OK(tfe_vq_get_used(&dp->vq[TX(0)], &u));
        }
        dp_release_pkts(out, 8);

        for (int i = 0; i < 8; i++) {
            dp_rx_post(dp, 0, 2048, NULL);
            in[i] = (struct vhost_pkt) { .data = pkts[i],
                                         .len = 60 + 200 * i };
        }
        deadline = tu_now_ms() + TU_TIMEOUT_MS;
        for (done = 0; done < 8; ) {
            done += vhost_enqueue_burst(dp->port, 0, &in[done], 8 - done);
            if (tu_now_ms() > deadline) {
                TU_FAIL("enqueue made no progress for %d ms",
                        TU_TIMEOUT_MS);
            }
        }
        for (int i = 0; i < 8; i++) {
            dp_rx_expect(dp, 0, pkts[i], 60 + 200 * i, NULL, 1,
                         "enqueue under SET_MEM_TABLE");
            free(pkts[i]);
        }
        atomic_fetch_add(&t->rounds, 1);
    }
    return NULL;
}

static void
test_mem_table_live(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct traffic t;
    pthread_t thread;
    struct dp dp;
    unsigned int r0;

    dp_start(&dp, "mem-live", &cfg);
    t.dp = &dp;
    atomic_init(&t.stop, false);
    atomic_init(&t.rounds, 0);

    tu_log("a thread moves packets both ways on queue pair 0 while the "
           "frontend sends SET_MEM_TABLE (the same memfds) 200 times");
    TU_CHECK(!pthread_create(&thread, NULL, traffic_main, &t));
    for (int i = 0; i < 200; i++) {
        TU_CHECK_OK(tfe_set_mem_table(dp.fe));
        if (i % 50 == 0) {
            r0 = atomic_load(&t.rounds);
            long long deadline = tu_now_ms() + TU_TIMEOUT_MS;
            while (atomic_load(&t.rounds) < r0 + 2) {
                if (tu_now_ms() > deadline) {
                    TU_FAIL("traffic stalled after %d SET_MEM_TABLEs", i);
                }
                tu_sleep_ms(1);
            }
        }
    }
    atomic_store(&t.stop, true);
    TU_CHECK(!pthread_join(thread, NULL));
    tu_log("%u rounds of 16 packets; the device is still ready",
           atomic_load(&t.rounds));
    TU_CHECK(tu_port_info(dp.port).ready);
    TU_CHECK_EQ(tu_port_info(dp.port).counters.mem_table_updates, 201);
    {
        struct vhost_queue_stats s0 = dp_get_stats(&dp, RX(0));
        struct vhost_queue_stats s1 = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s0) + dp_total_drops(&s1), 0);
        TU_CHECK_EQ(s0.packets, 8 * atomic_load(&t.rounds));
        TU_CHECK_EQ(s1.packets, 8 * atomic_load(&t.rounds));
    }
    dp_roundtrip(&dp, 0, "after the memory table changes");
    dp_roundtrip(&dp, 1, "after the memory table changes");
    dp_finish(&dp);
}

const struct tu_test tu_datapath_queue_tests[] = {
    { "dp-combo-0000", test_combo_0000,
      "no MRG, direct, no EVENT_IDX, legacy header" },
    { "dp-combo-0001", test_combo_0001,
      "no MRG, direct, no EVENT_IDX, VERSION_1" },
    { "dp-combo-0010", test_combo_0010,
      "no MRG, direct, EVENT_IDX, legacy header" },
    { "dp-combo-0011", test_combo_0011,
      "no MRG, direct, EVENT_IDX, VERSION_1" },
    { "dp-combo-0100", test_combo_0100,
      "no MRG, indirect, no EVENT_IDX, legacy header" },
    { "dp-combo-0101", test_combo_0101,
      "no MRG, indirect, no EVENT_IDX, VERSION_1" },
    { "dp-combo-0110", test_combo_0110,
      "no MRG, indirect, EVENT_IDX, legacy header" },
    { "dp-combo-0111", test_combo_0111,
      "no MRG, indirect, EVENT_IDX, VERSION_1" },
    { "dp-combo-1000", test_combo_1000,
      "MRG, direct, no EVENT_IDX, legacy" },
    { "dp-combo-1001", test_combo_1001,
      "MRG, direct, no EVENT_IDX, VERSION_1" },
    { "dp-combo-1010", test_combo_1010, "MRG, direct, EVENT_IDX, legacy" },
    { "dp-combo-1011", test_combo_1011, "MRG, direct, EVENT_IDX, VERSION_1" },
    { "dp-combo-1100", test_combo_1100,
      "MRG, indirect, no EVENT_IDX, legacy" },
    { "dp-combo-1101", test_combo_1101,
      "MRG, indirect, no EVENT_IDX, VERSION_1" },
    { "dp-combo-1110", test_combo_1110, "MRG, indirect, EVENT_IDX, legacy" },
    { "dp-combo-1111", test_combo_1111,
      "MRG, indirect, EVENT_IDX, VERSION_1" },
    { "dp-mem-table-live", test_mem_table_live,
      "SET_MEM_TABLE while traffic flows" },
    { "dp-ring-sizes", test_ring_sizes,
      "queue sizes 2, 8, 64, 1024: full rings, longest chains" },
    { "dp-bad-qp", test_bad_qp, "queue pairs the port does not have" },
};

const size_t tu_n_datapath_queue_tests = ARRAY_SIZE(tu_datapath_queue_tests);
