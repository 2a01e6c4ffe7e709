/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: validation (fixture in test-datapath.h).
 *
 * Hostile chains on transmit and receive rings, each dropped with its
 * reason and counter while the good packets around it pass and the other
 * queues go on working (VIRTIO 1.2 §2.7): bad indices, loops, directions,
 * addresses, indirect tables and headers, avail->idx jumps, the drop log's
 * rate limit, bad chains between a packet's merged buffers, rings full of
 * bad chains, a guest writing the used ring, the write-only flag in
 * indirect tables and merged buffers shorter than the header.
 */

#include <config.h>

#include "test-datapath.h"

/* Bad chains on a transmit ring: between two good packets, the hostile
 * chains that 'build' makes available are dropped one by one, each
 * returned in the used ring with length 0 and counted under a reason in
 * 'reasons' (exactly 'n' of them under 'reason' when 'reasons' has one
 * bit), and the good packets, the other vrings and the other queue pair go
 * on working. */
typedef size_t bad_chain_fn(struct dp *, struct tfe_vq *, uint16_t heads[]);

static void
run_bad_tx(const char *name, uint64_t features, bad_chain_fn *build,
           unsigned int reasons)
{
    struct dp_cfg cfg = dp_cfg_features(features);
    struct vhost_queue_stats e, s;
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint16_t heads[16];
    uint8_t *a, *b;
    int ha, hb;
    unsigned int n;
    size_t k;
    struct dp dp;

    dp_start(&dp, name, &cfg);
    a = dp_new_pkt(&dp, 100, MAC_UNICAST);
    b = dp_new_pkt(&dp, 200, MAC_BROADCAST);
    ha = dp_tx_post(&dp, 0, NULL, a, 100, NULL);
    k = build(&dp, &dp.vq[TX(0)], heads);
    hb = dp_tx_post(&dp, 0, NULL, b, 200, NULL);
    tu_log("%zu bad chains between two good packets", k);

    /* As in run_bad_rx(): a loop of a whole ring may end a dp_burst by its
     * work budget; every dp_burst consumes the chain it starts with. */
    n = 0;
    for (size_t bursts = 0; n < 2 && bursts <= k; bursts++) {
        n += dp_dq(&dp, 0, out + n, VHOST_MAX_BURST - n);
    }
    if (n != 2) {
        dp_dump_vring(&dp, TX(0));
        TU_FAIL("dequeue returned %u packets, expected 2", n);
    }
    dp_check_pkt(&out[0], a, 100, "packet before the bad chains");
    dp_check_pkt(&out[1], b, 200, "packet after the bad chains");
    dp_release_pkts(out, VHOST_MAX_BURST);

    tu_log("each bad chain is used with length 0, in order");
    dp_expect_used(&dp.vq[TX(0)], ha, 0);
    for (size_t i = 0; i < k; i++) {
        dp_expect_used(&dp.vq[TX(0)], heads[i], 0);
    }
    dp_expect_used(&dp.vq[TX(0)], hb, 0);
    dp_expect_no_used(&dp.vq[TX(0)]);

    tu_log("and counted under the right reason");
    s = dp_get_stats(&dp, TX(0));
    memset(&e, 0, sizeof e);
    dp_stats_add(&e, a, 100);
    dp_stats_add(&e, b, 200);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (!(reasons & (1u << r))) {
            continue;
        }
        if (!(reasons & (reasons - 1))) {
            e.drops[r] = k;
        } else {
            e.drops[r] = s.drops[r];    /* Any of these will do. */
        }
    }
    TU_CHECK_EQ(dp_total_drops(&s), k);
    dp_check_stats(&dp, TX(0), &e);
    free(a);
    free(b);

    dp_roundtrip(&dp, 1, "the other queue pair");
    dp_roundtrip(&dp, 0, "the same queue pair");
    dp_finish(&dp);
}

/* The same for receive rings: hostile chains ahead of a good one; a packet
 * enqueued lands in the good one, the bad ones are used with length 0. */
static void
run_bad_rx(const char *name, uint64_t features, bad_chain_fn *build,
           unsigned int reasons)
{
    struct dp_cfg cfg = dp_cfg_features(features);
    struct vhost_queue_stats e, s;
    uint16_t heads[16];
    uint8_t *a;
    int hg;
    size_t k;
    struct dp dp;

    dp_start(&dp, name, &cfg);
    a = dp_new_pkt(&dp, 300, MAC_MULTICAST);
    k = build(&dp, &dp.vq[RX(0)], heads);
    hg = dp_rx_post(&dp, 0, 2048, NULL);
    tu_log("%zu bad chains, then a good one (head %d)", k, hg);

    /* A dp_burst of one packet has a budget of one long chain
     * (VIRTQ_CHAIN_VISITS_MAX descriptors): a loop of a whole ring may
     * end it, and then the next dp_burst goes on from there.  Each dp_burst
     * consumes at least the chain it starts with. */
    {
        unsigned int got = 0, bursts = 0;

        while (!got && bursts++ <= k) {
            got = dp_enq1(&dp, 0, a, 300, NULL);
        }
        TU_CHECK_EQ(got, 1);
    }
    tu_log("each bad chain is used with length 0, in order");
    for (size_t i = 0; i < k; i++) {
        dp_expect_used(&dp.vq[RX(0)], heads[i], 0);
    }
    tu_log("and the packet lands in the good chain");
    TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                       % dp.vq[RX(0)].size].id, hg);
    dp_rx_expect(&dp, 0, a, 300, NULL, 1, "packet after the bad chains");
    dp_expect_no_used(&dp.vq[RX(0)]);

    s = dp_get_stats(&dp, RX(0));
    memset(&e, 0, sizeof e);
    dp_stats_add(&e, a, 300);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (reasons & (1u << r)) {
            e.drops[r] = reasons & (reasons - 1) ? s.drops[r] : k;
        }
    }
    TU_CHECK_EQ(dp_total_drops(&s), k);
    dp_check_stats(&dp, RX(0), &e);
    free(a);

    dp_roundtrip(&dp, 1, "the other queue pair");
    dp_roundtrip(&dp, 0, "the same queue pair");
    dp_finish(&dp);
}

/* Validation, transmit side. */

static size_t
bad_head(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    tu_log("heads %u (the queue size) and 0xffff", vq->size);
    heads[0] = vq->size;
    heads[1] = 0xffff;
    tfe_vq_push_avail(vq, heads[0]);
    tfe_vq_push_avail(vq, heads[1]);
    return 2;
}

static size_t
bad_next(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = dp_arena_buf(vq, 256);
    uint16_t ids[2];

    tu_log("next = queue size; next = 0xffff after a good descriptor");
    heads[0] = dp_take_chain(vq, ids, 1);
    dp_set_desc(vq, ids[0], buf, 100, TFE_DESC_F_NEXT | (vq->index % 2 ? 0
                                                         : TFE_DESC_F_WRITE),
             vq->size);
    tfe_vq_push_avail(vq, heads[0]);

    heads[1] = dp_take_chain(vq, ids, 2);
    dp_set_desc(vq, ids[0], buf, 50, TFE_DESC_F_NEXT | (vq->index % 2 ? 0
                                                        : TFE_DESC_F_WRITE),
             ids[1]);
    dp_set_desc(vq, ids[1], buf + 50, 50, TFE_DESC_F_NEXT
                | (vq->index % 2 ? 0 : TFE_DESC_F_WRITE), 0xffff);
    tfe_vq_push_avail(vq, heads[1]);
    return 2;
}

static size_t
bad_loop(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint16_t w = vq->index % 2 ? 0 : TFE_DESC_F_WRITE;
    uint16_t nx = TFE_DESC_F_NEXT | w;
    uint64_t buf = dp_arena_buf(vq, 256);
    uint16_t ids[3];

    tu_log("a two-descriptor cycle of 60-byte buffers");
    heads[0] = dp_take_chain(vq, ids, 2);
    dp_set_desc(vq, ids[0], buf, 60, nx, ids[1]);
    dp_set_desc(vq, ids[1], buf + 60, 60, nx, ids[0]);
    tfe_vq_push_avail(vq, heads[0]);

    tu_log("a descriptor that is its own next");
    heads[1] = dp_take_chain(vq, ids, 1);
    dp_set_desc(vq, ids[0], buf, 60, nx, ids[0]);
    tfe_vq_push_avail(vq, heads[1]);

    tu_log("a header, then a cycle of zero-length descriptors");
    heads[2] = dp_take_chain(vq, ids, 3);
    dp_set_desc(vq, ids[0], buf, dp->hdr_len, nx, ids[1]);
    dp_set_desc(vq, ids[1], buf, 0, nx, ids[2]);
    dp_set_desc(vq, ids[2], buf, 0, nx, ids[1]);
    tfe_vq_push_avail(vq, heads[2]);

    tu_log("a cycle of nothing but zero-length descriptors");
    heads[3] = dp_take_chain(vq, ids, 2);
    dp_set_desc(vq, ids[0], buf, 0, nx, ids[1]);
    dp_set_desc(vq, ids[1], buf, 0, nx, ids[0]);
    tfe_vq_push_avail(vq, heads[3]);
    return 4;
}

static size_t
bad_direction_tx(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = dp_arena_buf(vq, 512);
    uint64_t table = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc t[2] = {
        { buf, 100, TFE_DESC_F_NEXT, 1 },
        { buf + 100, 100, TFE_DESC_F_WRITE, 0 },
    };

    tu_log("a device-writable descriptor; a readable one then a writable "
           "one; the same in an indirect table");
    heads[0] = dp_post_one(vq, buf, 100, TFE_DESC_F_WRITE);
    heads[1] = dp_post_two(vq, buf, 100, 0, buf + 100, 100, TFE_DESC_F_WRITE);
    dp_write_table(vq, table, t, 2);
    heads[2] = dp_post_indirect(vq, table, sizeof t);
    return 3;
}

static size_t
bad_addr_tx(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = dp_arena_buf(vq, 256);
    uint64_t r0_end = tfe_mem_boundary(vq->mem, 0);
    uint64_t table = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc t[2] = {
        { buf, 50, TFE_DESC_F_NEXT, 1 },
        { DP_GAP_GPA, 100, 0, 0 },
    };

    tu_log("a buffer in the gap; beyond memory; wrapping 2^64; running "
           "into the gap; past the end of memory; 4 GB long; a bad second "
           "descriptor; a bad entry in an indirect table");
    heads[0] = dp_post_one(vq, DP_GAP_GPA, 100, 0);
    heads[1] = dp_post_one(vq, DP_FAR_GPA, 100, 0);
    heads[2] = dp_post_one(vq, UINT64_MAX - 50, 100, 0);
    heads[3] = dp_post_one(vq, r0_end - 50, 100, 0);
    heads[4] = dp_post_one(vq, dp_mem_end(dp) - 50, 100, 0);
    heads[5] = dp_post_one(vq, buf, UINT32_MAX, 0);
    heads[6] = dp_post_two(vq, buf, 50, 0, DP_GAP_GPA, 100, 0);
    dp_write_table(vq, table, t, 2);
    heads[7] = dp_post_indirect(vq, table, sizeof t);
    return 8;
}

static size_t
bad_indirect(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint16_t w = vq->index % 2 ? 0 : TFE_DESC_F_WRITE;
    uint64_t buf = dp_arena_buf(vq, 256);
    uint64_t r0_end = tfe_mem_boundary(vq->mem, 0);
    size_t big = (size_t) (vq->size + 1) * sizeof(struct tfe_desc);
    uint64_t t_big = tfe_vq_alloc(vq, big, 16);
    uint64_t t_ok = tfe_vq_alloc(vq, 32, 16);
    uint64_t t_nest = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc ok[2] = {
        { buf, 100, TFE_DESC_F_NEXT | w, 1 },
        { buf + 100, 100, w, 0 },
    };
    struct tfe_desc nest[2] = {
        { buf, 100, TFE_DESC_F_NEXT | w, 1 },
        { t_ok, sizeof ok, TFE_DESC_F_INDIRECT, 0 },
    };
    struct tfe_desc *bigt = calloc(vq->size + 1, sizeof *bigt);

    TU_CHECK(bigt != NULL);
    for (size_t i = 0; i < vq->size + 1u; i++) {
        bigt[i] = (struct tfe_desc) { buf, 1, TFE_DESC_F_NEXT | w, i + 1 };
    }
    bigt[vq->size].flags = w;
    dp_write_table(vq, t_big, bigt, vq->size + 1);
    free(bigt);
    dp_write_table(vq, t_ok, ok, 2);
    dp_write_table(vq, t_nest, nest, 2);

    tu_log("table length 24 (not a multiple of 16); 16 * (size + 1); a "
           "nested table; a table in the gap; running into the gap; "
           "wrapping 2^64");
    heads[0] = dp_post_indirect(vq, t_ok, 24);
    heads[1] = dp_post_indirect(vq, t_big, big);
    heads[2] = dp_post_indirect(vq, t_nest, sizeof nest);
    heads[3] = dp_post_indirect(vq, DP_GAP_GPA, 32);
    heads[4] = dp_post_indirect(vq, r0_end - 16, 32);
    heads[5] = dp_post_indirect(vq, UINT64_MAX - 15, 32);
    return 6;
}

static size_t
bad_indirect_chain(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint16_t w = vq->index % 2 ? 0 : TFE_DESC_F_WRITE;
    uint64_t buf = dp_arena_buf(vq, 256);
    uint64_t t1 = tfe_vq_alloc(vq, 32, 16);
    uint64_t t2 = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc out_of_table[2] = {
        { buf, 100, TFE_DESC_F_NEXT | w, 2 },
        { buf + 100, 100, w, 0 },
    };
    struct tfe_desc cycle[2] = {
        { buf, 100, TFE_DESC_F_NEXT | w, 1 },
        { buf + 100, 100, TFE_DESC_F_NEXT | w, 0 },
    };

    tu_log("inside an indirect table: next past its end; a cycle");
    dp_write_table(vq, t1, out_of_table, 2);
    dp_write_table(vq, t2, cycle, 2);
    heads[0] = dp_post_indirect(vq, t1, sizeof out_of_table);
    heads[1] = dp_post_indirect(vq, t2, sizeof cycle);
    return 2;
}

static size_t
bad_short_hdr(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = dp_arena_buf(vq, 256);
    uint64_t table = tfe_vq_alloc(vq, 16, 16);
    struct tfe_desc t[1] = { { buf, dp->hdr_len - 1, 0, 0 } };

    tu_log("chains of %u - 1 bytes: one descriptor, two (5 + %u), in an "
           "indirect table; and a zero-length descriptor",
           dp->hdr_len, dp->hdr_len - 6);
    heads[0] = dp_post_one(vq, buf, dp->hdr_len - 1, 0);
    heads[1] = dp_post_two(vq, buf, 5, 0, buf + 64, dp->hdr_len - 6, 0);
    dp_write_table(vq, table, t, 1);
    heads[2] = dp_post_indirect(vq, table, sizeof t);
    heads[3] = dp_post_one(vq, buf, 0, 0);
    return 4;
}

static size_t
bad_csum(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    static const struct { uint16_t start, offset; } bad[] = {
        { 90, 16 },             /* 90 + 16 + 2 > 100. */
        { 100, 0 },             /* 102 > 100. */
        { 0xffff, 0xffff },     /* Wraps 16 bits to 0. */
        { 0xfff0, 0x0e },       /* Wraps 16 bits to 0. */
    };
    uint8_t *pkt = dp_new_pkt(dp, 100, MAC_UNICAST);

    tu_log("NEEDS_CSUM with csum_start + csum_offset + 2 beyond a 100-byte "
           "packet, including sums that wrap 16 bits");
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM,
            .csum_start = bad[i].start, .csum_offset = bad[i].offset,
        };
        heads[i] = dp_tx_post(dp, vq->index / 2, &h, pkt, 100, NULL);
    }
    free(pkt);
    return ARRAY_SIZE(bad);
}

static void
test_bad_index_tx(void)
{
    run_bad_tx("bad-index-tx", DP_FULL, bad_head, REASON(BAD_INDEX));
}

static void
test_bad_next_tx(void)
{
    run_bad_tx("bad-next-tx", DP_FULL, bad_next, REASON(BAD_INDEX));
}

static void
test_loop_tx(void)
{
    run_bad_tx("loop-tx", DP_FULL, bad_loop, REASON(LOOP));
}

static void
test_bad_direction_tx(void)
{
    run_bad_tx("bad-dir-tx", DP_FULL, bad_direction_tx,
               REASON(BAD_DIRECTION));
}

/* The engine's log, counted: messages about dropped chains, and how many
 * of them said others were suppressed. */
struct rl_count {
    unsigned int drops;
    unsigned int suppressed;
};

static void
rl_count_handler(enum vhost_log_level level, const char *msg, void *aux)
{
    struct rl_count *c = aux;

    if (level == VHOST_LOG_WARN
        && strstr(msg, "dropping a descriptor chain: buffer outside guest "
                       "memory")) {
        c->drops++;
        if (strstr(msg, "similar messages suppressed")) {
            c->suppressed++;
        }
    }
}

/* A guest that sends bad chains as fast as it can gets each one counted,
 * but only a dp_burst of messages (20, then 1 a second), with the number
 * suppressed in the next one; another queue's messages have their own
 * budget. */
static void
test_drop_log_rate(void)
{
    struct dp_cfg cfg = { .features = DP_FULL };
    struct vhost_pkt out[VHOST_MAX_BURST];
    struct rl_count c = { 0, 0 };
    struct dp dp;
    unsigned int n_bad = 0;

    dp_start(&dp, "drop-log-rate", &cfg);
    vhost_log_set_handler(rl_count_handler, &c);

    tu_log("600 chains in the gap on queue pair 0, 200 at a time");
    for (int round = 0; round < 3; round++) {
        uint16_t heads[200];

        for (int i = 0; i < 200; i++) {
            heads[i] = dp_post_one(&dp.vq[TX(0)], DP_GAP_GPA, 100, 0);
        }
        /* Bounded work: each call takes at most a dp_burst of them. */
        for (int calls = 0; calls < 10; calls++) {
            TU_CHECK_EQ(dp_dq(&dp, 0, out, VHOST_MAX_BURST), 0);
        }
        n_bad += 200;
        TU_CHECK_EQ(dp_get_stats(&dp, TX(0)).drops[VHOST_DROP_BAD_ADDR],
                    n_bad);
        for (int i = 0; i < 200; i++) {
            dp_expect_used(&dp.vq[TX(0)], heads[i], 0);
        }
    }
    tu_log("%u messages for 600 drops", c.drops);
    TU_CHECK(c.drops >= 20 && c.drops <= 25);

    tu_log("queue pair 1's first drop is logged all the same");
    c.drops = 0;
    uint16_t h = dp_post_one(&dp.vq[TX(1)], DP_GAP_GPA, 100, 0);
    TU_CHECK_EQ(dp_dq(&dp, 1, out, VHOST_MAX_BURST), 0);
    TU_CHECK_EQ(dp_get_stats(&dp, TX(1)).drops[VHOST_DROP_BAD_ADDR], 1);
    TU_CHECK_EQ(c.drops, 1);
    dp_expect_used(&dp.vq[TX(1)], h, 0);

    tu_log("a second later, queue pair 0 logs again and says how many it "
           "held back");
    usleep(1100 * 1000);
    c.drops = c.suppressed = 0;
    h = dp_post_one(&dp.vq[TX(0)], DP_GAP_GPA, 100, 0);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, VHOST_MAX_BURST), 0);
    TU_CHECK_EQ(c.drops, 1);
    TU_CHECK_EQ(c.suppressed, 1);
    dp_expect_used(&dp.vq[TX(0)], h, 0);

    vhost_log_set_handler(NULL, NULL);
    dp_finish(&dp);
}

static void
test_bad_addr_tx(void)
{
    run_bad_tx("bad-addr-tx", DP_FULL, bad_addr_tx, REASON(BAD_ADDR));
}

static void
test_bad_indirect_tx(void)
{
    run_bad_tx("bad-ind-tx", DP_FULL, bad_indirect, REASON(BAD_INDIRECT));
}

static void
test_bad_indirect_chain_tx(void)
{
    run_bad_tx("bad-indc-tx", DP_FULL, bad_indirect_chain,
               REASON(BAD_INDEX) | REASON(LOOP) | REASON(BAD_INDIRECT));
}

static void
test_short_hdr_tx(void)
{
    run_bad_tx("short-hdr", DP_FULL, bad_short_hdr, REASON(SHORT_HDR));
}

static void
test_short_hdr_legacy_tx(void)
{
    run_bad_tx("short-hdr-l", DP_BASE | F(VIRTIO_RING_F_INDIRECT_DESC),
               bad_short_hdr, REASON(SHORT_HDR));
}

static void
test_bad_csum_tx(void)
{
    run_bad_tx("bad-csum", DP_FULL, bad_csum, REASON(BAD_CSUM));
}

/* Without VIRTIO_NET_F_CSUM and HOST_TSO4/6 the driver's TX header says
 * nothing (§5.1.6.2.1) and dequeue does not read it: a header that breaks
 * the rule anyway is ignored, not dropped, and its packets come with no
 * offload metadata.  Eight packets: the batch and the one-at-a-time
 * paths. */
static void
test_no_host_offloads_tx(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL
                                        & ~(F(VIRTIO_NET_F_CSUM)
                                            | F(VIRTIO_NET_F_HOST_TSO4)
                                            | F(VIRTIO_NET_F_HOST_TSO6)));
    struct tfe_net_hdr h = {
        .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = 1, .gso_size = 1,
        .hdr_len = 0xffff, .csum_start = 0xfff0, .csum_offset = 0x0e,
    };
    struct vhost_pkt out[8];
    struct dp dp;

    dp_start(&dp, "no-host-ol", &cfg);
    uint8_t *pkt = dp_new_pkt(&dp, 100, MAC_UNICAST);
    tu_log("8 packets whose headers ask for a checksum past the end and "
           "for TSO, with neither negotiated");
    for (int i = 0; i < 8; i++) {
        dp_tx_post(&dp, 0, &h, pkt, 100, NULL);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 8), 8);
    for (int i = 0; i < 8; i++) {
        dp_check_pkt(&out[i], pkt, 100, "packet with an ignored header");
        dp_check_ol_zero(&out[i], "packet with an ignored header");
    }
    dp_release_pkts(out, 8);
    {
        struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s), 0);
        TU_CHECK_EQ(s.packets, 8);
    }
    free(pkt);
    dp_finish(&dp);
}

/* A chain exactly as long as the header holds a packet of length 0. */
static void
test_hdr_only_tx(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[4];
    struct dp dp;
    uint8_t *a;
    int h0, h1;

    dp_start(&dp, "hdr-only", &cfg);
    a = dp_new_pkt(&dp, 64, MAC_UNICAST);
    tu_log("a chain of exactly the header, then a 64-byte packet");
    h0 = dp_tx_post(&dp, 0, NULL, a, 0, NULL);
    h1 = dp_tx_post(&dp, 0, NULL, a, 64, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 2);
    TU_CHECK_EQ(out[0].len, 0);
    dp_check_pkt(&out[1], a, 64, "packet after a header-only chain");
    dp_release_pkts(out, 4);
    dp_expect_used(&dp.vq[TX(0)], h0, 0);
    dp_expect_used(&dp.vq[TX(0)], h1, 0);
    {
        struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s), 0);
        TU_CHECK_EQ(s.packets, 2);
        TU_CHECK_EQ(s.undersize, 1);
        TU_CHECK_EQ(s.size_64, 1);
    }
    free(a);
    dp_finish(&dp);
}

/* Validation, receive side. */

static size_t
bad_direction_rx(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = tfe_vq_alloc(vq, 4096, 64);
    uint64_t table = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc t[2] = {
        { buf, 6, TFE_DESC_F_NEXT | TFE_DESC_F_WRITE, 1 },
        { buf + 64, 2048, 0, 0 },
    };

    tu_log("a read-only buffer; a writable 100 bytes then a read-only "
           "2000; a read-only entry in an indirect table");
    heads[0] = dp_post_one(vq, buf, 2048, 0);
    heads[1] = dp_post_two(vq, buf, 100, TFE_DESC_F_WRITE, buf + 128, 2000, 0);
    dp_write_table(vq, table, t, 2);
    heads[2] = dp_post_indirect(vq, table, sizeof t);
    return 3;
}

static size_t
bad_addr_rx(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = tfe_vq_alloc(vq, 64, 64);
    uint64_t r0_end = tfe_mem_boundary(vq->mem, 0);
    uint16_t w = TFE_DESC_F_WRITE;

    tu_log("a buffer in the gap; wrapping 2^64; running into the gap; "
           "past the end of memory; 6 good bytes then the gap");
    heads[0] = dp_post_one(vq, DP_GAP_GPA, 2048, w);
    heads[1] = dp_post_one(vq, UINT64_MAX - 50, 2048, w);
    heads[2] = dp_post_one(vq, r0_end - 50, 2048, w);
    heads[3] = dp_post_one(vq, dp_mem_end(dp) - 50, 2048, w);
    heads[4] = dp_post_two(vq, buf, 6, w, DP_GAP_GPA, 2048, w);
    return 5;
}

static void
test_bad_index_rx(void)
{
    run_bad_rx("bad-index-rx", DP_FULL, bad_head, REASON(BAD_INDEX));
}

static void
test_bad_next_rx(void)
{
    run_bad_rx("bad-next-rx", DP_FULL, bad_next, REASON(BAD_INDEX));
}

static void
test_loop_rx(void)
{
    run_bad_rx("loop-rx", DP_FULL, bad_loop, REASON(LOOP));
}

static void
test_bad_direction_rx(void)
{
    run_bad_rx("bad-dir-rx", DP_FULL, bad_direction_rx,
               REASON(BAD_DIRECTION));
}

static void
test_bad_direction_rx_nomrg(void)
{
    run_bad_rx("bad-dir-rx-nm", DP_FULL & ~F(VIRTIO_NET_F_MRG_RXBUF),
               bad_direction_rx, REASON(BAD_DIRECTION));
}

static void
test_bad_addr_rx(void)
{
    run_bad_rx("bad-addr-rx", DP_FULL, bad_addr_rx, REASON(BAD_ADDR));
}

static void
test_bad_indirect_rx(void)
{
    run_bad_rx("bad-ind-rx", DP_FULL, bad_indirect, REASON(BAD_INDIRECT));
}

static void
test_bad_indirect_chain_rx(void)
{
    run_bad_rx("bad-indc-rx", DP_FULL, bad_indirect_chain,
               REASON(BAD_INDEX) | REASON(LOOP) | REASON(BAD_INDIRECT));
}

/* avail->idx running away. */

/* Sets vring 'vring' up again as QEMU does after a stop: GET_VRING_BASE,
 * then SET_VRING_NUM/BASE (0)/ADDR/KICK/CALL on a zeroed ring. */
static void
resetup_vring(struct dp *dp, unsigned int vring)
{
    uint32_t base;

    TU_CHECK_OK(tfe_get_vring_base(dp->fe, vring, &base));
    tfe_vq_reset(&dp->vq[vring]);
    TU_CHECK_OK(tfe_vring_setup(dp->fe, vring, dp->vq[vring].size));
    TU_CHECK(tu_queue_info(dp->port, vring).ready);
}

static void
test_avail_jump_tx(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct vhost_pkt out[4];
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "jump-tx", &cfg);
    vq = &dp.vq[TX(0)];
    a = dp_new_pkt(&dp, 100, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, a, 100, NULL);

    tu_log("avail->idx = size + 1 ahead of the engine: the queue breaks");
    tfe_vq_set_avail_idx(vq, vq->size + 1);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
    memset(&e, 0, sizeof e);
    e.drops[VHOST_DROP_AVAIL_IDX] = 1;
    e.broken = true;
    dp_check_stats(&dp, TX(0), &e);
    dp_expect_no_used(vq);

    tu_log("it stays broken when avail->idx comes back");
    tfe_vq_set_avail_idx(vq, vq->next_avail);
    for (int i = 0; i < 3; i++) {
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
    }
    dp_check_stats(&dp, TX(0), &e);
    dp_expect_no_used(vq);

    tu_log("the other vrings work");
    dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 1);
    dp_rx_expect(&dp, 0, a, 100, NULL, 1, "enqueue beside a broken vring");
    dp_roundtrip(&dp, 1, "beside a broken vring");

    tu_log("setting the vring up again repairs it");
    resetup_vring(&dp, TX(0));
    TU_CHECK(!dp_get_stats(&dp, TX(0)).broken);
    dp_roundtrip(&dp, 0, "after the vring was set up again");
    free(a);
    dp_finish(&dp);
}

static void
test_avail_jump_rx(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "jump-rx", &cfg);
    vq = &dp.vq[RX(0)];
    a = dp_new_pkt(&dp, 100, MAC_UNICAST);
    for (int i = 0; i < 3; i++) {
        dp_rx_post(&dp, 0, 2048, NULL);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 1);
        dp_rx_expect(&dp, 0, a, 100, NULL, 1, "enqueue");
    }

    tu_log("avail->idx going backwards (to %u, with %u seen) breaks the "
           "queue", vq->next_avail - 1u, vq->next_avail);
    dp_rx_post(&dp, 0, 2048, NULL);
    tfe_vq_set_avail_idx(vq, vq->next_avail - 2);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 0);
    memset(&e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        dp_stats_add(&e, a, 100);
    }
    e.drops[VHOST_DROP_AVAIL_IDX] = 1;
    e.broken = true;
    dp_check_stats(&dp, RX(0), &e);
    tfe_vq_set_avail_idx(vq, vq->next_avail);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 0);
    dp_check_stats(&dp, RX(0), &e);
    dp_expect_no_used(vq);

    dp_roundtrip(&dp, 1, "beside a broken vring");
    tu_log("setting the vring up again repairs it");
    resetup_vring(&dp, RX(0));
    TU_CHECK(!dp_get_stats(&dp, RX(0)).broken);
    dp_roundtrip(&dp, 0, "after the vring was set up again");
    free(a);
    dp_finish(&dp);
}

/* A broken vring comes back when the frontend reconnects and sets the
 * device up from scratch. */
static void
test_avail_jump_reconnect(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct tfe_setup setup = { .features_mask = DP_FULL };
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, "jump-reconn", &cfg);
    tu_log("break vring 1 with avail->idx size + 1 ahead");
    tfe_vq_set_avail_idx(&dp.vq[TX(0)], dp.vq[TX(0)].size + 1);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
    dp_release_pkts(out, 4);
    TU_CHECK(dp_get_stats(&dp, TX(0)).broken);

    tu_log("the frontend disconnects, reconnects and sets the device up");
    tfe_disconnect(dp.fe);
    TU_CHECK(tu_wait_port(dp.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_connect(dp.fe, dp.path));
    TU_CHECK(tu_wait_port(dp.port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_reset(&dp.vq[q]);
    }
    TU_CHECK_OK(tfe_setup_device(dp.fe, 2, &setup));
    TU_CHECK(tu_port_info(dp.port).ready);
    TU_CHECK(!dp_get_stats(&dp, TX(0)).broken);
    dp_roundtrip(&dp, 0, "after the reconnect");
    dp_roundtrip(&dp, 1, "after the reconnect");
    dp_finish(&dp);
}

/* With MRG_RXBUF a packet's buffers are consecutive used entries: the
 * driver takes the num_buffers entries after the first as the rest of the
 * packet (VIRTIO 1.2 §5.1.6.4).  A bad chain met between two of them must
 * not end up between them in the used ring, and a packet that has to wait
 * for more buffers must not count the bad chain twice. */
static void
test_mrg_bad_between(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;
    int g1, g2, bad;

    dp_start(&dp, "mrg-bad-between", &cfg);
    vq = &dp.vq[RX(0)];
    a = dp_new_pkt(&dp, 2000, MAC_UNICAST);

    tu_log("a 1000-byte buffer, then a read-only one: a 2000-byte packet "
           "does not fit yet, and nothing is used or counted");
    g1 = dp_rx_post(&dp, 0, 1000, NULL);
    bad = dp_post_one(vq, dp_arena_buf(vq, 2048), 2048, 0);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 2000, NULL), 0);
    dp_expect_no_used(vq);
    memset(&e, 0, sizeof e);
    dp_check_stats(&dp, RX(0), &e);

    tu_log("one more buffer: the packet goes into the two good ones, "
           "adjacent in the used ring; the bad one is counted once");
    g2 = dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 2000, NULL), 1);
    TU_CHECK_EQ(tfe_vq_n_used(vq), 3);
    if (vq->used_ring[vq->next_used % vq->size].id == bad) {
        dp_expect_used(vq, bad, 0);
        TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].id, g1);
        TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].id, g2);
        dp_rx_expect(&dp, 0, a, 2000, NULL, 2, "around a bad chain");
    } else {
        TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].id, g1);
        TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].id, g2);
        dp_rx_expect(&dp, 0, a, 2000, NULL, 2, "around a bad chain");
        dp_expect_used(vq, bad, 0);
    }
    e.drops[VHOST_DROP_BAD_DIRECTION] = 1;
    dp_stats_add(&e, a, 2000);
    dp_check_stats(&dp, RX(0), &e);
    free(a);
    dp_roundtrip(&dp, 0, "after the bad chain");
    dp_finish(&dp);
}

/* A guest that fills its rings with bad chains gets no more work out of
 * one call than one with good ones: the contract bounds a call to 'n'
 * chains and never more than VHOST_MAX_BURST. */
static void
test_bounded_bad(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[32];
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "bounded-bad", &cfg);
    a = dp_new_pkt(&dp, 100, MAC_UNICAST);

    tu_log("n = 0 takes nothing");
    dp_tx_post(&dp, 0, NULL, a, 100, NULL);
    dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(vhost_dequeue_burst(dp.port, 0, out, 0, &dp.alloc), 0);
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, NULL, 0), 0);
    dp_expect_no_used(&dp.vq[TX(0)]);
    dp_expect_no_used(&dp.vq[RX(0)]);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 32), 1);
    dp_release_pkts(out, 32);
    TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &(struct tfe_used_elem) {
                                    0 }));
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 1);
    dp_rx_expect(&dp, 0, a, 100, NULL, 1, "after n = 0");

    tu_log("transmit: 256 bad chains, bursts of 32 drop exactly 32");
    for (int i = 0; i < 256; i++) {
        dp_post_one(&dp.vq[TX(0)], DP_GAP_GPA, 100, 0);
    }
    for (int call = 0; call < 8; call++) {
        uint16_t used0 = tfe_vq_used_idx(&dp.vq[TX(0)]);

        TU_CHECK_EQ(dp_dq(&dp, 0, out, 32), 0);
        dp_release_pkts(out, 32);
        TU_CHECK_EQ((uint16_t) (tfe_vq_used_idx(&dp.vq[TX(0)]) - used0), 32);
    }
    for (int i = 0; i < 256; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
    }

    tu_log("receive: 256 bad chains, one packet: at most %d chains per "
           "call", VHOST_MAX_BURST);
    for (int i = 0; i < 256; i++) {
        dp_post_one(&dp.vq[RX(0)], DP_GAP_GPA, 2048, TFE_DESC_F_WRITE);
    }
    for (int call = 0; call < 256 / VHOST_MAX_BURST; call++) {
        uint16_t used0 = tfe_vq_used_idx(&dp.vq[RX(0)]);
        uint16_t took;

        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 0);
        took = tfe_vq_used_idx(&dp.vq[RX(0)]) - used0;
        if (took > VHOST_MAX_BURST) {
            TU_FAIL("one enqueue of one packet consumed %u bad chains",
                    took);
        }
    }
    free(a);
    dp_finish(&dp);
}

/* The used ring is the device's (VIRTIO 1.2 §2.7.8): the engine keeps its
 * own index and does not read back what a guest scribbles there. */
static void
test_used_scribble(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct dp dp;

    dp_start(&dp, "used-scribble", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        struct tfe_vq *vq = &dp.vq[tx ? TX(0) : RX(0)];

        tu_log("%s: the guest writes junk over used->idx and the used ring",
               tx ? "transmit" : "receive");
        dp_burst(&dp, tx, 3);
        __atomic_store_n(vq->used_idx, (uint16_t) 12345, __ATOMIC_RELEASE);
        memset(vq->used_ring, 0xee, sizeof *vq->used_ring * vq->size);
        *vq->used_idx = vq->next_used;  /* Ours, so dp_burst() can read. */
        dp_burst(&dp, tx, 2);
        TU_CHECK_EQ(tfe_vq_used_idx(vq), 5);
        __atomic_store_n(vq->used_idx, (uint16_t) 40000, __ATOMIC_RELEASE);
        tu_log("  used->idx follows the engine's count, not the guest's");
        {
            uint8_t *a = dp_new_pkt(&dp, 80, MAC_UNICAST);
            struct vhost_pkt out[4];

            if (tx) {
                dp_tx_post(&dp, 0, NULL, a, 80, NULL);
                TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
                dp_release_pkts(out, 4);
            } else {
                dp_rx_post(&dp, 0, 2048, NULL);
                TU_CHECK_EQ(dp_enq1(&dp, 0, a, 80, NULL), 1);
            }
            TU_CHECK_EQ(tfe_vq_used_idx(vq), 6);
            if (tx) {
                dp_expect_used(vq, vq->used_ring[5].id, 0);
            } else {
                dp_rx_expect(&dp, 0, a, 80, NULL, 1, "after the scribbles");
            }
            free(a);
        }
    }
    dp_finish(&dp);
}

/* VIRTIO 1.2 §2.7.5.3.2: "The device MUST ignore the write-only flag
 * (VIRTQ_DESC_F_WRITE) in the descriptor that refers to an indirect
 * table."  And an RX table needs no F_WRITE on that descriptor either. */
static void
test_indirect_write_flag(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[4];
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "ind-write", &cfg);
    a = dp_new_pkt(&dp, 400, MAC_UNICAST);
    tu_log("transmit: an indirect descriptor with F_WRITE set");
    {
        struct tfe_vq *vq = &dp.vq[TX(0)];
        struct tfe_buf_opts o = { .n_descs = 2, .indirect = true };
        int head = dp_tx_post(&dp, 0, NULL, a, 400, &o);

        tfe_vq_desc(vq, head)->flags |= TFE_DESC_F_WRITE;
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 400, "F_WRITE on an indirect descriptor");
        dp_release_pkts(out, 4);
        dp_expect_used(vq, head, 0);
    }
    tu_log("receive: an indirect descriptor with and without F_WRITE");
    for (int w = 0; w < 2; w++) {
        struct tfe_vq *vq = &dp.vq[RX(0)];
        struct tfe_buf_opts o = { .n_descs = 3, .indirect = true };
        int head = dp_rx_post(&dp, 0, 2048, &o);

        if (w) {
            tfe_vq_desc(vq, head)->flags |= TFE_DESC_F_WRITE;
        }
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 400, NULL), 1);
        dp_rx_expect(&dp, 0, a, 400, NULL, 1, "indirect receive buffer");
    }
    {
        struct vhost_queue_stats s0 = dp_get_stats(&dp, RX(0));
        struct vhost_queue_stats s1 = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s0) + dp_total_drops(&s1), 0);
    }
    free(a);
    dp_finish(&dp);
}

/* With MRG_RXBUF each buffer must hold at least the header (VIRTIO 1.2
 * §5.1.6.3.1); one that holds exactly the header is fine. */
static void
test_mrg_hdr_buffer(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;
    int h0, h1;

    dp_start(&dp, "mrg-hdr-buf", &cfg);
    vq = &dp.vq[RX(0)];
    a = dp_new_pkt(&dp, 100, MAC_UNICAST);
    tu_log("a 12-byte buffer then a 2048-byte one: the header, then the "
           "packet (num_buffers 2)");
    h0 = dp_rx_post(&dp, 0, 12, NULL);
    h1 = dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 100, NULL), 1);
    TU_CHECK_EQ(tfe_vq_n_used(vq), 2);
    TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].id, h0);
    TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].len, 12);
    TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].id, h1);
    TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].len, 100);
    dp_rx_expect(&dp, 0, a, 100, NULL, 2, "header-only first buffer");
    free(a);
    dp_finish(&dp);
}

const struct tu_test tu_datapath_validate_tests[] = {
    { "dp-bad-index-tx", test_bad_index_tx, "TX: head >= queue size" },
    { "dp-bad-next-tx", test_bad_next_tx, "TX: next >= queue size" },
    { "dp-loop-tx", test_loop_tx, "TX: descriptor loops" },
    { "dp-bad-direction-tx", test_bad_direction_tx,
      "TX: device-writable descriptors" },
    { "dp-bad-addr-tx", test_bad_addr_tx, "TX: buffers outside memory" },
    { "dp-bad-indirect-tx", test_bad_indirect_tx, "TX: bad indirect tables" },
    { "dp-bad-indirect-chain-tx", test_bad_indirect_chain_tx,
      "TX: bad chains inside an indirect table" },
    { "dp-short-hdr-tx", test_short_hdr_tx,
      "TX: chains shorter than the 12-byte header" },
    { "dp-short-hdr-legacy-tx", test_short_hdr_legacy_tx,
      "TX: chains shorter than the 10-byte header" },
    { "dp-hdr-only-tx", test_hdr_only_tx,
      "TX: a header-only chain is a 0-byte packet" },
    { "dp-bad-csum-tx", test_bad_csum_tx,
      "TX: csum_start/csum_offset beyond the packet" },
    { "dp-no-host-ol-tx", test_no_host_offloads_tx,
      "TX: without host offloads the header is ignored" },
    { "dp-bad-index-rx", test_bad_index_rx, "RX: head >= queue size" },
    { "dp-bad-next-rx", test_bad_next_rx, "RX: next >= queue size" },
    { "dp-loop-rx", test_loop_rx, "RX: descriptor loops" },
    { "dp-bad-direction-rx", test_bad_direction_rx,
      "RX: read-only descriptors" },
    { "dp-bad-direction-rx-nomrg", test_bad_direction_rx_nomrg,
      "RX: read-only descriptors, no MRG_RXBUF" },
    { "dp-bad-addr-rx", test_bad_addr_rx, "RX: buffers outside memory" },
    { "dp-bad-indirect-rx", test_bad_indirect_rx, "RX: bad indirect tables" },
    { "dp-bad-indirect-chain-rx", test_bad_indirect_chain_rx,
      "RX: bad chains inside an indirect table" },
    { "dp-avail-jump-tx", test_avail_jump_tx,
      "TX: avail->idx too far ahead breaks the vring" },
    { "dp-avail-jump-rx", test_avail_jump_rx,
      "RX: avail->idx going back breaks the vring" },
    { "dp-avail-jump-reconnect", test_avail_jump_reconnect,
      "a broken vring works again after a reconnect" },
    { "dp-drop-log-rate", test_drop_log_rate,
      "a drop is counted every time, logged at a limited rate" },
    { "dp-indirect-write-flag", test_indirect_write_flag,
      "F_WRITE on an indirect descriptor is ignored" },
    { "dp-mrg-hdr-buffer", test_mrg_hdr_buffer,
      "RX with MRG_RXBUF: a buffer of exactly the header" },
    { "dp-bounded-bad", test_bounded_bad,
      "bad chains get no more work per call than good ones" },
    { "dp-used-scribble", test_used_scribble,
      "the engine ignores what the guest writes into the used ring" },
    { "dp-mrg-bad-between", test_mrg_bad_between,
      "RX with MRG_RXBUF: a bad chain between a packet's buffers" },
};

const size_t tu_n_datapath_validate_tests
    = ARRAY_SIZE(tu_datapath_validate_tests);
