/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: validation (fixture in test-packed.h).
 *
 * Hostile chains on both directions, each dropped with its counter while
 * the good packets around it pass: bad indices, directions, addresses,
 * indirect tables, headers, checksums and sizes; the embedder's max_len;
 * chains that never end or are not available in this lap (§2.8.1, §2.8.6);
 * buffer ids in flight twice (§2.8.6).
 */

#include <config.h>

#include "test-packed.h"

/* Validation.  Hostile chains are written by hand at the driver's
 * position (tfe_vq_pwrite()) and claimed with the buffer id the engine
 * should return and the ring slots it should consume. */

/* The four-at-a-time enqueue batch: receive buffers posted from a ring
 * position that is a multiple of four.  Four packets that fit go in at
 * once (with offload headers and num_buffers 1); a buffer too small, a
 * chain of two or a short pk_burst sends the packets one at a time instead,
 * with the same results.  The ring positions drift, so batches start at
 * every alignment.  With and without MRG_RXBUF. */
static void
run_batch_rx(uint64_t features)
{
    struct pk_cfg cfg = pk_cfg_sized(features, 32);
    struct pk pk;

    pk_start(&pk, "batch-rx", &cfg);
    struct tfe_vq *vq = &pk.vq[RX(0)];
    for (int round = 0; round < 24; round++) {
        struct vhost_pkt in[8];
        struct vhost_offload ol[8];
        uint8_t *p[8];
        int kind = round % 6;
        if (kind == 1 && !pk.mrg) {
            kind = 0;   /* Without MRG_RXBUF a small buffer blocks. */
        }
        unsigned int n = kind == 5 ? 3 : 8;
        int ids[8];

        tu_log("round %d at position %u: %s", round, vq->next_avail,
               (const char *[]) { "all simple", "one too small",
                                  "a chain of two", "all simple again",
                                  "all simple, big", "a short burst" }[kind]);
        for (unsigned int i = 0; i < n; i++) {
            size_t len = kind == 4 ? 1500 + i : 60 + 37 * i;
            p[i] = pk_new_pkt(&pk, len, i % 2 ? MAC_MULTICAST : MAC_UNICAST);
            memset(&ol[i], 0, sizeof ol[i]);
            if (i % 3 == 1) {
                ol[i] = (struct vhost_offload) {
                    .flags = VHOST_OL_NEEDS_CSUM, .csum_start = 34,
                    .csum_offset = 6,
                };
            }
            in[i] = (struct vhost_pkt) { .data = p[i], .len = len,
                                         .ol = ol[i] };
        }
        for (unsigned int i = 0; i < n; i++) {
            uint32_t room = pk.hdr_len + in[i].len;
            if (kind == 1 && i == 2) {
                /* Too small for the batch; with MRG_RXBUF the packet
                 * also takes the next buffer. */
                room -= 10;
            } else if (!(kind == 1 && i != 2)) {
                room += 64;
            }
            if (kind == 2 && i == 1) {
                struct tfe_buf_opts o = { .n_descs = 2 };
                ids[i] = pk_rx_post(&pk, 0, room, &o);
            } else {
                ids[i] = pk_rx_post(&pk, 0, room, NULL);
            }
        }
        if (kind == 1) {
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, n), n - 1);
        } else {
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, n), n);
        }
        for (unsigned int i = 0; i < n; i++) {
            if (kind == 1 && i == n - 1) {
                continue;   /* Packet 2 took two buffers: no room left. */
            }
            pk_rx_expect(&pk, 0, p[i], in[i].len, &ol[i],
                         kind == 1 && i == 2 ? 2 : 1, "batch rx");
        }
        /* Give back what is left. */
        while (vq->n_free < vq->size || tfe_vq_n_used(vq)) {
            struct tfe_used_elem u;
            uint8_t *f = pk_new_pkt(&pk, 60, MAC_UNICAST);

            if (tfe_vq_n_used(vq)) {
                TU_CHECK_OK(pk_get_used(vq, &u, "leftover"));
            } else {
                TU_CHECK_EQ(pk_enq1(&pk, 0, f, 60, NULL), 1);
            }
            free(f);
        }
        for (unsigned int i = 0; i < n; i++) {
            free(p[i]);
        }
        (void) ids;
    }
    pk_roundtrip(&pk, 0, "after the batches");
    pk_finish(&pk);
}

static void
test_batch_rx(void)
{
    run_batch_rx(PK_FULL);
}

static void
test_batch_rx_nomrg(void)
{
    run_batch_rx(PK_BASE | PK_IND | PK_EVT);
}

/* Writes an indirect table of 'n' packed descriptors at 'gpa'. */
static void
write_table(struct tfe_vq *vq, uint64_t gpa, const struct tfe_pdesc *t,
            size_t n)
{
    TU_CHECK(tfe_mem_write(vq->mem, gpa, t, n * sizeof *t));
}

/* Bad chains between two good packets on a transmit ring: each is
 * returned as used with length 0, in order, and counted under one of
 * 'reasons' (exactly 'k' under it when 'reasons' has one bit); the good
 * packets, the other vrings and the other queue pair go on working. */
typedef size_t bad_chain_fn(struct pk *, struct tfe_vq *, uint16_t ids[]);

static void
run_bad_tx(const char *name, uint64_t features, bad_chain_fn *build,
           unsigned int reasons)
{
    struct pk_cfg cfg = pk_cfg_features(features);
    struct vhost_queue_stats e, s;
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint16_t ids[16];
    uint8_t *a, *b;
    int ia, ib;
    unsigned int n;
    size_t k;
    struct pk pk;

    pk_start(&pk, name, &cfg);
    a = pk_new_pkt(&pk, 100, MAC_UNICAST);
    b = pk_new_pkt(&pk, 200, MAC_BROADCAST);
    ia = pk_tx_post(&pk, 0, NULL, a, 100, NULL);
    k = build(&pk, &pk.vq[TX(0)], ids);
    ib = pk_tx_post(&pk, 0, NULL, b, 200, NULL);
    tu_log("%zu bad chains between two good packets", k);

    n = pk_dq(&pk, 0, out, VHOST_MAX_BURST);
    if (n != 2) {
        pk_dump_vring(&pk, TX(0));
        TU_FAIL("dequeue returned %u packets, expected 2", n);
    }
    pk_check_pkt(&out[0], a, 100, "packet before the bad chains");
    pk_check_pkt(&out[1], b, 200, "packet after the bad chains");
    pk_release_pkts(out, VHOST_MAX_BURST);

    tu_log("each bad chain is used with length 0, in order, and the ring "
           "positions line up");
    pk_expect_used(&pk.vq[TX(0)], ia, 0);
    for (size_t i = 0; i < k; i++) {
        pk_expect_used(&pk.vq[TX(0)], ids[i], 0);
    }
    pk_expect_used(&pk.vq[TX(0)], ib, 0);
    pk_expect_no_used(&pk.vq[TX(0)]);
    TU_CHECK_EQ(tfe_vq_pbase(&pk.vq[TX(0)]), pk_stopped_base(&pk.vq[TX(0)]));

    tu_log("and counted under the right reason");
    s = pk_get_stats(&pk, TX(0));
    memset(&e, 0, sizeof e);
    pk_stats_add(&e, a, 100);
    pk_stats_add(&e, b, 200);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (reasons & (1u << r)) {
            e.drops[r] = reasons & (reasons - 1) ? s.drops[r] : k;
        }
    }
    TU_CHECK_EQ(pk_total_drops(&s), k);
    pk_check_stats(&pk, TX(0), &e);
    free(a);
    free(b);

    pk_roundtrip(&pk, 1, "the other queue pair");
    pk_roundtrip(&pk, 0, "the same queue pair");
    pk_finish(&pk);
}

/* The same on a receive ring: bad chains ahead of a good one; a packet
 * enqueued lands in the good one, the bad ones are used with length 0. */
static void
run_bad_rx(const char *name, uint64_t features, bad_chain_fn *build,
           unsigned int reasons)
{
    struct pk_cfg cfg = pk_cfg_features(features);
    struct vhost_queue_stats e, s;
    struct tfe_used_elem u;
    uint16_t ids[16];
    uint8_t *a;
    int ig;
    size_t k;
    struct pk pk;

    pk_start(&pk, name, &cfg);
    a = pk_new_pkt(&pk, 300, MAC_MULTICAST);
    k = build(&pk, &pk.vq[RX(0)], ids);
    ig = pk_rx_post(&pk, 0, 2048, NULL);
    tu_log("%zu bad chains, then a good one (id %d)", k, ig);

    if (pk_enq1(&pk, 0, a, 300, NULL) != 1) {
        pk_dump_vring(&pk, RX(0));
        TU_FAIL("the packet was not enqueued");
    }
    tu_log("each bad chain is used with length 0, in order");
    for (size_t i = 0; i < k; i++) {
        pk_expect_used(&pk.vq[RX(0)], ids[i], 0);
    }
    tu_log("and the packet lands in the good chain");
    TU_CHECK_OK(tfe_vq_peek_used(&pk.vq[RX(0)], &u));
    TU_CHECK_EQ(u.id, ig);
    pk_rx_expect(&pk, 0, a, 300, NULL, 1, "packet after the bad chains");
    pk_expect_no_used(&pk.vq[RX(0)]);

    s = pk_get_stats(&pk, RX(0));
    memset(&e, 0, sizeof e);
    pk_stats_add(&e, a, 300);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (reasons & (1u << r)) {
            e.drops[r] = reasons & (reasons - 1) ? s.drops[r] : k;
        }
    }
    TU_CHECK_EQ(pk_total_drops(&s), k);
    pk_check_stats(&pk, RX(0), &e);
    free(a);

    pk_roundtrip(&pk, 1, "the other queue pair");
    pk_roundtrip(&pk, 0, "the same queue pair");
    pk_finish(&pk);
}

static size_t
bad_index(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;

    tu_log("buffer ids %u (the queue size), 0xffff, and %u in the last "
           "descriptor of a chain of two", vq->size, vq->size + 5);
    ids[0] = pk_post_one(vq, pk_arena_buf(vq, 100), 100, w, vq->size);
    ids[1] = pk_post_one(vq, pk_arena_buf(vq, 100), 100, w, 0xffff);
    ids[2] = pk_post_two(vq, pk_arena_buf(vq, 12), 12, w,
                         pk_arena_buf(vq, 100), 100, w, vq->size + 5);
    return 3;
}

static size_t
bad_direction_tx(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    /* Not inside an indirect table: the engine accepts device-writable
     * entries in TX tables, which DPDK 22.11's virtio-user sends
     * (lib/virtq-packed.c). */
    tu_log("device-writable: one descriptor, and the second of two");
    ids[0] = pk_post_one(vq, pk_arena_buf(vq, 100), 100, TFE_DESC_F_WRITE,
                         pk_free_id(vq));
    ids[1] = pk_post_two(vq, pk_arena_buf(vq, 12), 12, 0,
                         pk_arena_buf(vq, 100), 100, TFE_DESC_F_WRITE,
                         pk_free_id(vq));
    return 2;
}

static size_t
bad_direction_rx(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    tu_log("read-only: one descriptor, the second of two, and in an "
           "indirect table");
    ids[0] = pk_post_one(vq, pk_arena_buf(vq, 2048), 2048, 0, pk_free_id(vq));
    ids[1] = pk_post_two(vq, pk_arena_buf(vq, 12), 12, TFE_DESC_F_WRITE,
                         pk_arena_buf(vq, 2048), 2048, 0, pk_free_id(vq));
    {
        uint64_t t = tfe_vq_alloc(vq, 32, 16);
        struct tfe_pdesc table[2] = {
            { pk_arena_buf(vq, 12), 12, 0, TFE_DESC_F_WRITE },
            { pk_arena_buf(vq, 2048), 2048, 0, 0 },
        };
        write_table(vq, t, table, 2);
        ids[2] = pk_post_one(vq, t, 32, TFE_DESC_F_INDIRECT, pk_free_id(vq));
    }
    return 3;
}

static size_t
bad_addr(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;

    tu_log("buffers in the gap, beyond memory, wrapping 2^64, across the "
           "end of memory, and the second of two in the gap");
    ids[0] = pk_post_one(vq, PK_GAP_GPA, 200, w, pk_free_id(vq));
    ids[1] = pk_post_one(vq, PK_FAR_GPA, 200, w, pk_free_id(vq));
    ids[2] = pk_post_one(vq, UINT64_MAX - 50, 200, w, pk_free_id(vq));
    ids[3] = pk_post_one(vq, pk_mem_end(pk) - 100, 200, w, pk_free_id(vq));
    ids[4] = pk_post_two(vq, pk_arena_buf(vq, 12), 12, w, PK_GAP_GPA, 200, w,
                         pk_free_id(vq));
    return 5;
}

static size_t
bad_indirect(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;
    uint64_t buf = pk_arena_buf(vq, 2048);
    struct tfe_pdesc good[2] = {
        { buf, 12, 0, w }, { buf + 12, 1000, 0, w },
    };
    uint64_t t = tfe_vq_alloc(vq, 32, 16);
    size_t k = 0;

    write_table(vq, t, good, 2);
    tu_log("INDIRECT with NEXT (chained to a plain descriptor)");
    ids[k++] = pk_post_two(vq, t, 32, TFE_DESC_F_INDIRECT,
                           pk_arena_buf(vq, 100), 100, w, pk_free_id(vq));
    tu_log("tables of 0 and 8 bytes, of queue size + 1 entries, in the gap");
    ids[k++] = pk_post_one(vq, t, 0, TFE_DESC_F_INDIRECT, pk_free_id(vq));
    ids[k++] = pk_post_one(vq, t, 8, TFE_DESC_F_INDIRECT, pk_free_id(vq));
    {
        uint32_t len = 16 * (vq->size + 1);
        uint64_t big = tfe_vq_alloc(vq, len, 16);
        struct tfe_pdesc *tb = calloc(vq->size + 1, sizeof *tb);

        for (unsigned int i = 0; i <= vq->size; i++) {
            tb[i] = (struct tfe_pdesc) { buf, 1, 0, w };
        }
        write_table(vq, big, tb, vq->size + 1);
        free(tb);
        ids[k++] = pk_post_one(vq, big, len, TFE_DESC_F_INDIRECT,
                               pk_free_id(vq));
    }
    ids[k++] = pk_post_one(vq, PK_GAP_GPA, 32, TFE_DESC_F_INDIRECT,
                           pk_free_id(vq));
    tu_log("a nested indirect descriptor, and a table entry in the gap");
    {
        uint64_t t2 = tfe_vq_alloc(vq, 32, 16);
        struct tfe_pdesc nested[2] = {
            { buf, 12, 0, w }, { t, 32, 0, TFE_DESC_F_INDIRECT },
        };
        write_table(vq, t2, nested, 2);
        ids[k++] = pk_post_one(vq, t2, 32, TFE_DESC_F_INDIRECT,
                               pk_free_id(vq));
    }
    {
        uint64_t t3 = tfe_vq_alloc(vq, 32, 16);
        struct tfe_pdesc gap[2] = {
            { buf, 12, 0, w }, { PK_GAP_GPA, 1000, 0, w },
        };
        write_table(vq, t3, gap, 2);
        ids[k++] = pk_post_one(vq, t3, 32, TFE_DESC_F_INDIRECT,
                               pk_free_id(vq));
    }
    return k;
}

static size_t
bad_indirect_unnegotiated(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;
    uint64_t buf = pk_arena_buf(vq, 2048);
    struct tfe_pdesc good[2] = {
        { buf, 12, 0, w }, { buf + 12, 1000, 0, w },
    };
    uint64_t t = tfe_vq_alloc(vq, 32, 16);

    tu_log("a well-formed indirect table without INDIRECT_DESC negotiated");
    write_table(vq, t, good, 2);
    ids[0] = pk_post_one(vq, t, 32, TFE_DESC_F_INDIRECT, pk_free_id(vq));
    return 1;
}

static size_t
bad_short_hdr(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint64_t t = tfe_vq_alloc(vq, 32, 16);
    struct tfe_pdesc table[2] = {
        { pk_arena_buf(vq, 5), 5, 0, 0 }, { pk_arena_buf(vq, 5), 5, 0, 0 },
    };

    tu_log("chains of 5, 4 + 4, 0 and (indirect) 5 + 5 bytes");
    ids[0] = pk_post_one(vq, pk_arena_buf(vq, 5), 5, 0, pk_free_id(vq));
    ids[1] = pk_post_two(vq, pk_arena_buf(vq, 4), 4, 0,
                         pk_arena_buf(vq, 4), 4, 0, pk_free_id(vq));
    ids[2] = pk_post_one(vq, pk_arena_buf(vq, 8), 0, 0, pk_free_id(vq));
    write_table(vq, t, table, 2);
    ids[3] = pk_post_one(vq, t, 32, TFE_DESC_F_INDIRECT, pk_free_id(vq));
    return 4;
}

static size_t
bad_csum(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    static const struct { uint16_t start, offset; } bad[] = {
        { 90, 16 },             /* 106 + 2 > 100 */
        { 99, 0 },              /* 99 + 2 > 100 */
        { 0xffff, 0xffff },
    };
    size_t k = 0;

    tu_log("NEEDS_CSUM with csum_start + csum_offset + 2 beyond a "
           "100-byte packet");
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .csum_start = bad[i].start,
            .csum_offset = bad[i].offset,
        };
        struct tfe_buf_opts o = { .n_descs = 1 + i };
        uint8_t *p = pk_new_pkt(pk, 100, MAC_UNICAST);

        ids[k++] = pk_tx_post(pk, 0, &h, p, 100, &o);
        free(p);
    }
    return k;
}

static size_t
bad_too_big(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint8_t *p = pk_new_pkt(pk, 80000, MAC_UNICAST);
    struct tfe_buf_opts two = { .n_descs = 2 };

    tu_log("packets of 65536 + 18 and 80000 bytes (the most is 65535 + 18)");
    ids[0] = pk_tx_post(pk, 0, NULL, p, 65536 + 18, NULL);
    ids[1] = pk_tx_post(pk, 0, NULL, p, 80000, &two);
    free(p);
    return 2;
}

static void
test_bad_index_tx(void)
{
    run_bad_tx("bad-index-tx", PK_FULL, bad_index, REASON(BAD_INDEX));
}

static void
test_bad_index_rx(void)
{
    run_bad_rx("bad-index-rx", PK_FULL, bad_index, REASON(BAD_INDEX));
}

static void
test_bad_direction_tx(void)
{
    run_bad_tx("bad-dir-tx", PK_FULL, bad_direction_tx,
               REASON(BAD_DIRECTION));
}

static void
test_bad_direction_rx(void)
{
    run_bad_rx("bad-dir-rx", PK_FULL, bad_direction_rx,
               REASON(BAD_DIRECTION));
}

static void
test_bad_direction_rx_nomrg(void)
{
    run_bad_rx("bad-dir-rx-nm", PK_FULL & ~PK_MRG, bad_direction_rx,
               REASON(BAD_DIRECTION));
}

static void
test_bad_addr_tx(void)
{
    run_bad_tx("bad-addr-tx", PK_FULL, bad_addr, REASON(BAD_ADDR));
}

static void
test_bad_addr_rx(void)
{
    run_bad_rx("bad-addr-rx", PK_FULL, bad_addr, REASON(BAD_ADDR));
}

static void
test_bad_indirect_tx(void)
{
    run_bad_tx("bad-ind-tx", PK_FULL, bad_indirect,
               REASON(BAD_INDIRECT) | REASON(BAD_ADDR));
}

static void
test_bad_indirect_rx(void)
{
    run_bad_rx("bad-ind-rx", PK_FULL, bad_indirect,
               REASON(BAD_INDIRECT) | REASON(BAD_ADDR));
}

static void
test_indirect_unnegotiated(void)
{
    run_bad_tx("ind-unneg-tx", PK_FULL & ~PK_IND, bad_indirect_unnegotiated,
               REASON(BAD_INDIRECT));
    run_bad_rx("ind-unneg-rx", PK_FULL & ~PK_IND, bad_indirect_unnegotiated,
               REASON(BAD_INDIRECT));
}

static void
test_short_hdr_tx(void)
{
    run_bad_tx("short-hdr-tx", PK_FULL, bad_short_hdr, REASON(SHORT_HDR));
}

/* Without VIRTIO_NET_F_CSUM and HOST_TSO4/6 the driver's TX header says
 * nothing (§5.1.6.2.1) and dequeue does not read it: a header that breaks
 * the rule anyway is ignored, not dropped, and its packets come with no
 * offload metadata.  Eight packets: the batch and the one-at-a-time
 * paths. */
static void
test_no_host_offloads_tx(void)
{
    struct pk_cfg cfg = pk_cfg_features(PK_FULL
                                        & ~(F(VIRTIO_NET_F_CSUM)
                                            | F(VIRTIO_NET_F_HOST_TSO4)
                                            | F(VIRTIO_NET_F_HOST_TSO6)));
    struct tfe_net_hdr h = {
        .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = 1, .gso_size = 1,
        .hdr_len = 0xffff, .csum_start = 0xfff0, .csum_offset = 0x0e,
    };
    struct vhost_pkt out[8];
    struct pk pk;

    pk_start(&pk, "no-host-ol", &cfg);
    uint8_t *pkt = pk_new_pkt(&pk, 100, MAC_UNICAST);
    tu_log("8 packets whose headers ask for a checksum past the end and "
           "for TSO, with neither negotiated");
    for (int i = 0; i < 8; i++) {
        pk_tx_post(&pk, 0, &h, pkt, 100, NULL);
    }
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 8), 8);
    for (int i = 0; i < 8; i++) {
        pk_check_pkt(&out[i], pkt, 100, "packet with an ignored header");
        pk_check_ol(&out[i].ol, NULL, "packet with an ignored header");
    }
    pk_release_pkts(out, 8);
    {
        struct vhost_queue_stats s = pk_get_stats(&pk, TX(0));
        TU_CHECK_EQ(pk_total_drops(&s), 0);
        TU_CHECK_EQ(s.packets, 8);
    }
    free(pkt);
    pk_finish(&pk);
}

static void
test_bad_csum_tx(void)
{
    run_bad_tx("bad-csum-tx", PK_FULL, bad_csum, REASON(BAD_CSUM));
}

static void
test_too_big_tx(void)
{
    run_bad_tx("too-big-tx", PK_FULL, bad_too_big, REASON(TOO_BIG));
}

/* The embedder's 'max_len', in a four-descriptor batch and alone. */
static void
test_alloc_max_len(void)
{
    static const size_t sizes[] = { 100, 1001, 1000, 60,
                                    200, 300, 400, 1000 };
    struct pk_cfg cfg = pk_cfg_features(PK_FULL);
    struct vhost_pkt out[16];
    struct vhost_queue_stats e;
    uint8_t *pkts[8];
    int ids[8];
    unsigned int n;
    struct pk pk;

    pk_start(&pk, "alloc-max-len", &cfg);
    pk.alloc.max_len = 1000;
    tu_log("max_len 1000, eight single descriptors from slot 0: the "
           "1001-byte one is dropped as too big, used with length 0; the "
           "first four go one by one, the next four as a batch");
    memset(&e, 0, sizeof e);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        pkts[i] = pk_new_pkt(&pk, sizes[i], MAC_UNICAST);
        ids[i] = pk_tx_post(&pk, 0, NULL, pkts[i], sizes[i], NULL);
    }
    n = pk_dq(&pk, 0, out, 16);
    TU_CHECK_EQ(n, 7);
    for (size_t i = 0, j = 0; i < ARRAY_SIZE(sizes); i++) {
        pk_expect_used(&pk.vq[TX(0)], ids[i], 0);
        if (i != 1) {
            pk_check_pkt(&out[j++], pkts[i], sizes[i], "max_len 1000");
            pk_stats_add(&e, pkts[i], sizes[i]);
        }
    }
    pk_expect_no_used(&pk.vq[TX(0)]);
    pk_release_pkts(out, 16);
    e.drops[VHOST_DROP_TOO_BIG] = 1;
    pk_check_stats(&pk, TX(0), &e);

    tu_log("a batch of four whose last is too long falls back, drops it");
    for (size_t i = 4; i < 8; i++) {
        ids[i] = pk_tx_post(&pk, 0, NULL, pkts[i == 7 ? 1 : i],
                            sizes[i == 7 ? 1 : i], NULL);
    }
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 16), 3);
    for (size_t i = 4; i < 8; i++) {
        pk_expect_used(&pk.vq[TX(0)], ids[i], 0);
        if (i != 7) {
            pk_check_pkt(&out[i - 4], pkts[i], sizes[i], "batch fallback");
            pk_stats_add(&e, pkts[i], sizes[i]);
        }
    }
    pk_release_pkts(out, 16);
    e.drops[VHOST_DROP_TOO_BIG]++;
    pk_check_stats(&pk, TX(0), &e);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        free(pkts[i]);
    }
    pk_roundtrip(&pk, 0, "the same queue pair");
    pk_finish(&pk);
}

/* Chains that do not end where they should (§2.8.6, §2.8.1). */

/* On ring 'vring' of queue pair 0, a chain of 'n_avail' available
 * descriptors with NEXT whose next descriptor has 'stale_flags' (not
 * available in this lap): it is dropped as a loop after consuming the
 * available ones; the stale descriptor is where the engine waits. */
static void
run_loop_partial(struct pk *pk, unsigned int vring, unsigned int n_avail,
                 uint16_t stale_flags, const char *what)
{
    struct tfe_vq *vq = &pk->vq[vring];
    bool tx = vring == TX(0);
    uint16_t w = tx ? 0 : TFE_DESC_F_WRITE;
    struct vhost_queue_stats s0 = pk_get_stats(pk, vring), s1;
    struct vhost_pkt out[8];
    uint16_t id = pk_free_id(vq);
    uint8_t *a = pk_new_pkt(pk, 100, MAC_UNICAST);

    tu_log("%s: %u available descriptors with NEXT, then %s (flags %#x)",
           tx ? "transmit" : "receive", n_avail, what, stale_flags);
    tfe_vq_pwrite(vq, n_avail, pk_arena_buf(vq, 100), 100, id,
                  w | stale_flags);
    for (unsigned int i = n_avail; i-- > 0;) {
        tfe_vq_pwrite(vq, i, pk_arena_buf(vq, 100), 100,
                      i + 1 == n_avail ? id : TFE_PACKED_ID_POISON,
                      w | TFE_DESC_F_NEXT | tfe_vq_pavail(vq, i));
    }
    tfe_vq_pclaim(vq, id, n_avail);

    if (tx) {
        TU_CHECK_EQ(pk_dq(pk, 0, out, 8), 0);
        pk_release_pkts(out, 8);
    } else {
        TU_CHECK_EQ(pk_enq1(pk, 0, a, 100, NULL), 0);
    }
    pk_expect_used(vq, id, 0);
    pk_expect_no_used(vq);
    s1 = pk_get_stats(pk, vring);
    TU_CHECK_EQ(s1.drops[VHOST_DROP_LOOP] - s0.drops[VHOST_DROP_LOOP], 1);
    TU_CHECK_EQ(pk_total_drops(&s1) - pk_total_drops(&s0), 1);

    tu_log("  the engine waits at the stale descriptor; the driver then "
           "writes a good chain there");
    if (tx) {
        int ia = pk_tx_post(pk, 0, NULL, a, 100, NULL);

        TU_CHECK_EQ(pk_dq(pk, 0, out, 8), 1);
        pk_check_pkt(&out[0], a, 100, "after a partial chain");
        pk_release_pkts(out, 8);
        pk_expect_used(vq, ia, 0);
    } else {
        pk_rx_post(pk, 0, 2048, NULL);
        TU_CHECK_EQ(pk_enq1(pk, 0, a, 100, NULL), 1);
        pk_rx_expect(pk, 0, a, 100, NULL, 1, "after a partial chain");
    }
    pk_expect_no_used(vq);
    free(a);
}

/* On ring 'vring' of queue pair 0 of size 'size', every slot made
 * available with NEXT: a chain that never ends.  It is dropped as a loop
 * and takes the whole ring. */
static void
run_loop_forever(struct pk *pk, unsigned int vring)
{
    struct tfe_vq *vq = &pk->vq[vring];
    bool tx = vring == TX(0);
    uint16_t w = tx ? 0 : TFE_DESC_F_WRITE;
    struct vhost_queue_stats s0 = pk_get_stats(pk, vring), s1;
    struct vhost_pkt out[8];
    uint16_t id = pk_free_id(vq);
    bool wrap = vq->used_wrap;
    uint8_t *a = pk_new_pkt(pk, 100, MAC_UNICAST);

    tu_log("%s: all %u slots from position %u available with NEXT",
           tx ? "transmit" : "receive", vq->size, vq->next_avail);
    for (unsigned int i = vq->size; i-- > 0;) {
        tfe_vq_pwrite(vq, i, pk_arena_buf(vq, 100), 100, id,
                      w | TFE_DESC_F_NEXT | tfe_vq_pavail(vq, i));
    }
    tfe_vq_pclaim(vq, id, vq->size);
    if (tx) {
        TU_CHECK_EQ(pk_dq(pk, 0, out, 8), 0);
        pk_release_pkts(out, 8);
    } else {
        TU_CHECK_EQ(pk_enq1(pk, 0, a, 100, NULL), 0);
    }
    pk_expect_used(vq, id, 0);
    pk_expect_no_used(vq);
    TU_CHECK_EQ(vq->used_wrap, !wrap);
    s1 = pk_get_stats(pk, vring);
    TU_CHECK_EQ(s1.drops[VHOST_DROP_LOOP] - s0.drops[VHOST_DROP_LOOP], 1);
    TU_CHECK_EQ(pk_total_drops(&s1) - pk_total_drops(&s0), 1);

    tu_log("  a chain of exactly the queue size, the last without NEXT, is "
           "a good one");
    {
        struct tfe_buf_opts o = { .n_descs = vq->size };
        size_t len = vq->size * 20;
        uint8_t *b = pk_new_pkt(pk, len, MAC_UNICAST);

        if (tx) {
            int ib = pk_tx_post(pk, 0, NULL, b, len, &o);

            TU_CHECK_EQ(pk_dq(pk, 0, out, 8), 1);
            pk_check_pkt(&out[0], b, len, "a chain of the queue size");
            pk_release_pkts(out, 8);
            pk_expect_used(vq, ib, 0);
        } else {
            pk_rx_post(pk, 0, pk->hdr_len + len, &o);
            TU_CHECK_EQ(pk_enq1(pk, 0, b, len, NULL), 1);
            pk_rx_expect(pk, 0, b, len, NULL, 1, "a chain of the queue size");
        }
        pk_expect_no_used(vq);
        TU_CHECK_EQ(vq->used_wrap, wrap);
        free(b);
    }
    free(a);
}

static void
run_loop(const char *name, uint64_t features)
{
    struct pk_cfg cfg = pk_cfg_sized(features, 8);
    struct pk pk;

    pk_start(&pk, name, &cfg);
    for (int tx = 1; tx >= 0; tx--) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &pk.vq[vring];

        run_loop_partial(&pk, vring, 1, 0, "a never-written descriptor");
        run_loop_partial(&pk, vring, 2, tfe_vq_pavail(vq, 2)
                         ^ (TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED),
                         "one marked for the other lap");
        run_loop_partial(&pk, vring, 3,
                         vq->avail_wrap
                         ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0,
                         "one that looks used in this lap");
        run_loop_forever(&pk, vring);
        run_loop_partial(&pk, vring, 7, 0, "across the end of the ring, "
                         "a never-written descriptor");
    }
    pk_roundtrip(&pk, 1, "the other queue pair");
    pk_roundtrip(&pk, 0, "the same queue pair");
    pk_finish(&pk);
}

static void
test_loop(void)
{
    run_loop("loop", PK_FULL);
}

static void
test_loop_nomrg(void)
{
    run_loop("loop-nm", PK_FULL & ~PK_MRG);
}

/* A head that is not available in this lap (§2.8.1) is not taken: the
 * engine waits there, dropping nothing, until the driver makes it
 * available. */
static void
test_not_avail(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 16);
    struct pk pk;

    pk_start(&pk, "not-avail", &cfg);
    for (int lap = 0; lap < 3; lap++) {
        for (int tx = 1; tx >= 0; tx--) {
            unsigned int vring = tx ? TX(0) : RX(0);
            struct tfe_vq *vq = &pk.vq[vring];
            uint16_t av = tfe_vq_pavail(vq, 0);
            const uint16_t bad[] = {
                0,
                TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED,
                av ^ (TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED),
            };

            for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                uint8_t *a = pk_new_pkt(&pk, 100, MAC_UNICAST);
                struct vhost_pkt out[4];
                uint16_t id = pk_free_id(vq);

                tu_log("lap %d, %s, position %u (wrap %d): head flags %#x",
                       lap, tx ? "transmit" : "receive", vq->next_avail,
                       vq->avail_wrap, bad[i] | (tx ? 0 : TFE_DESC_F_WRITE));
                uint64_t buf = pk_arena_buf(vq, 2048);
                uint16_t f = bad[i] | (tx ? 0 : TFE_DESC_F_WRITE);
                tfe_vq_pwrite(vq, 0, buf, 2048, id, f);
                if (tx) {
                    TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 0);
                    pk_release_pkts(out, 4);
                } else {
                    TU_CHECK_EQ(pk_enq1(&pk, 0, a, 100, NULL), 0);
                }
                /* The engine wrote nothing there (the driver may see its
                 * own "used"-looking flags: it wrote them). */
                {
                    const struct tfe_pdesc *d = tfe_vq_pdesc(vq, 0);
                    TU_CHECK_EQ(d->addr, buf);
                    TU_CHECK_EQ(d->len, 2048);
                    TU_CHECK_EQ(d->id, id);
                    TU_CHECK_EQ(d->flags, f);
                }
                {
                    struct vhost_queue_stats s = pk_get_stats(&pk, vring);
                    TU_CHECK_EQ(pk_total_drops(&s), 0);
                }
                if (tx) {
                    int ia = pk_tx_post(&pk, 0, NULL, a, 100, NULL);
                    TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
                    pk_check_pkt(&out[0], a, 100, "once available");
                    pk_release_pkts(out, 4);
                    pk_expect_used(vq, ia, 0);
                } else {
                    pk_rx_post(&pk, 0, 2048, NULL);
                    TU_CHECK_EQ(pk_enq1(&pk, 0, a, 100, NULL), 1);
                    pk_rx_expect(&pk, 0, a, 100, NULL, 1, "once available");
                }
                free(a);
            }
        }
        /* On to the next lap. */
        for (int tx = 1; tx >= 0; tx--) {
            struct tfe_vq *vq = &pk.vq[tx ? TX(0) : RX(0)];
            bool wrap = vq->avail_wrap;

            while (vq->avail_wrap == wrap) {
                pk_roundtrip(&pk, 0, "moving on");
            }
        }
    }
    pk_finish(&pk);
}

/* Buffer ids in flight (§2.8.6: "Buffer ID ... unique among buffers in
 * flight").  A chain whose id is in flight already is dropped, counted
 * under VHOST_DROP_ID_IN_FLIGHT and returned used with length 0 and the
 * id it gave (the driver model keeps such a chain aside and answers
 * -EPROTO when it comes back); the first chain with that id is not
 * disturbed.  An id is in flight from the pk_burst that takes it until that
 * pk_burst writes it back as used, so the next pk_burst may see it again. */

/* Posts on TX(0) a one-descriptor chain with buffer id 'id' holding a
 * zero header and 'len' bytes of 'pkt'. */
static void
tx_post_id(struct pk *pk, const uint8_t *pkt, size_t len, uint16_t id)
{
    struct tfe_vq *vq = &pk->vq[TX(0)];
    uint64_t b = pk_arena_buf(vq, pk->hdr_len + len);

    TU_CHECK(tfe_mem_write(vq->mem, b + pk->hdr_len, pkt, len));
    pk_post_one(vq, b, pk->hdr_len + len, 0, id);
}

static void
check_id_drops(struct pk *pk, unsigned int vring, uint64_t packets,
               uint64_t in_flight)
{
    struct vhost_queue_stats s = pk_get_stats(pk, vring);

    TU_CHECK_EQ(s.packets, packets);
    TU_CHECK_EQ(s.drops[VHOST_DROP_ID_IN_FLIGHT], in_flight);
    TU_CHECK_EQ(pk_total_drops(&s), in_flight);
}

/* Within one pk_burst, both directions: an id made available twice (one
 * descriptor, then a chain of two) before the engine runs. */
static void
test_id_reuse(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 16);
    struct vhost_pkt out[8];
    struct pk pk;

    pk_start(&pk, "id-reuse", &cfg);
    for (int tx = 1; tx >= 0; tx--) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &pk.vq[vring];
        uint16_t w = tx ? 0 : TFE_DESC_F_WRITE;
        uint16_t id = pk_free_id(vq);
        uint64_t b1 = pk_arena_buf(vq, 2048), b2 = pk_arena_buf(vq, 2048);
        uint8_t *a = pk_new_pkt(&pk, 100, MAC_UNICAST);
        struct tfe_used_elem u;

        tu_log("%s: id %u at positions %u (one descriptor) and %u (two)",
               tx ? "transmit" : "receive", id, vq->next_avail,
               vq->next_avail + 1);
        if (tx) {
            TU_CHECK(tfe_mem_write(vq->mem, b1 + 12, a, 100));
            TU_CHECK(tfe_mem_write(vq->mem, b2 + 12, a, 100));
        }
        pk_post_one(vq, b1, tx ? 112 : 2048, w, id);
        pk_post_two(vq, b2, 12, w, b2 + 12, tx ? 100 : 2036, w, id);
        if (tx) {
            TU_CHECK_EQ(pk_dq(&pk, 0, out, 8), 1);
            pk_check_pkt(&out[0], a, 100, "the first of the same id");
            pk_release_pkts(out, 8);
        } else {
            struct vhost_pkt in[2] = {
                { .data = a, .len = 100 }, { .data = a, .len = 100 },
            };
            /* The second packet finds only the dropped chain. */
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 1);
        }
        TU_CHECK_EQ(pk_get_used(vq, &u, "first of the same id"), 0);
        TU_CHECK_EQ(u.id, id);
        TU_CHECK_EQ(u.len, tx ? 0 : 112);
        TU_CHECK_EQ(pk_get_used(vq, &u, "second of the same id"), -EPROTO);
        TU_CHECK_EQ(u.id, id);
        TU_CHECK_EQ(u.len, 0);
        pk_expect_no_used(vq);
        check_id_drops(&pk, vring, 1, 1);
        free(a);
    }
    pk_roundtrip(&pk, 0, "after the reused ids");
    pk_finish(&pk);
}

/* The four-at-a-time dequeue batch: an id twice inside one batch, and an
 * id that an earlier batch of the same pk_burst took.  Neither batch may
 * take them; the single path drops exactly the second use. */
static void
test_id_reuse_batch(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_FULL, 64);
    struct vhost_pkt out[16];
    uint8_t *p[8];
    struct pk pk;

    pk_start(&pk, "id-reuse-batch", &cfg);
    for (int i = 0; i < 8; i++) {
        p[i] = pk_new_pkt(&pk, 60 + i, MAC_UNICAST);
    }
    pk_tx_advance_to(&pk, 4);

    tu_log("positions 4..7: ids 10 11 10 12 (10 twice in one batch)");
    tx_post_id(&pk, p[0], 60, 10);
    tx_post_id(&pk, p[1], 61, 11);
    tx_post_id(&pk, p[2], 62, 10);
    tx_post_id(&pk, p[3], 63, 12);
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 16), 3);
    pk_check_pkt(&out[0], p[0], 60, "id 10");
    pk_check_pkt(&out[1], p[1], 61, "id 11");
    pk_check_pkt(&out[2], p[3], 63, "id 12");
    pk_release_pkts(out, 16);
    pk_expect_used(&pk.vq[TX(0)], 10, 0);
    pk_expect_used(&pk.vq[TX(0)], 11, 0);
    pk_expect_used(&pk.vq[TX(0)], 10, 0);     /* The kept-aside one. */
    pk_expect_used(&pk.vq[TX(0)], 12, 0);
    pk_expect_no_used(&pk.vq[TX(0)]);
    check_id_drops(&pk, TX(0), 4 + 3, 1);

    tu_log("positions 8..15: ids 20 21 22 23, then 24 21 25 26 (21 again, "
           "in the next batch of the same burst)");
    for (int i = 0; i < 8; i++) {
        static const uint16_t ids[8] = { 20, 21, 22, 23, 24, 21, 25, 26 };
        tx_post_id(&pk, p[i], 60 + i, ids[i]);
    }
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 16), 7);
    for (int i = 0, j = 0; i < 8; i++) {
        if (i != 5) {
            pk_check_pkt(&out[j++], p[i], 60 + i, "second burst");
        }
    }
    pk_release_pkts(out, 16);
    for (int i = 0; i < 8; i++) {
        static const uint16_t ids[8] = { 20, 21, 22, 23, 24, 21, 25, 26 };
        pk_expect_used(&pk.vq[TX(0)], ids[i], 0);
    }
    pk_expect_no_used(&pk.vq[TX(0)]);
    check_id_drops(&pk, TX(0), 4 + 3 + 7, 2);

    for (int i = 0; i < 8; i++) {
        free(p[i]);
    }
    pk_roundtrip(&pk, 0, "after the batches");
    pk_finish(&pk);
}

/* Across bursts.  Every pk_burst writes back what it took before it
 * returns, so an id used in one pk_burst is free again in the next: taking
 * it again is no reuse, in either direction, including a chain that an
 * enqueue met but left available (a packet that did not fit) and meets
 * again, in the next pk_burst or later in the same one. */
static void
test_id_reuse_bursts(void)
{
    struct pk_cfg cfg = pk_cfg_sized(PK_BASE | PK_IND | PK_EVT, 16);
    struct vhost_pkt out[4];
    uint8_t *a, *big;
    struct pk pk;

    pk_start(&pk, "id-reuse-bursts", &cfg);
    a = pk_new_pkt(&pk, 100, MAC_UNICAST);
    big = pk_new_pkt(&pk, 3000, MAC_UNICAST);

    tu_log("transmit: id 9 in three bursts in a row");
    for (int i = 0; i < 3; i++) {
        tx_post_id(&pk, a, 100, 9);
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
        pk_check_pkt(&out[0], a, 100, "id 9 again");
        pk_release_pkts(out, 4);
        pk_expect_used(&pk.vq[TX(0)], 9, 0);
    }
    tu_log("transmit: id 9 twice at once, taken one burst at a time: the "
           "first is written back before the second is read");
    tx_post_id(&pk, a, 100, 9);
    tx_post_id(&pk, a, 100, 9);
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 1), 1);
    pk_release_pkts(out, 4);
    TU_CHECK_EQ(pk_dq(&pk, 0, out, 1), 1);
    pk_release_pkts(out, 4);
    pk_expect_used(&pk.vq[TX(0)], 9, 0);
    {
        struct tfe_used_elem u;
        TU_CHECK_EQ(pk_get_used(&pk.vq[TX(0)], &u, "second id 9"), -EPROTO);
        TU_CHECK_EQ(u.id, 9);
    }
    check_id_drops(&pk, TX(0), 5, 0);

    tu_log("receive: a 3000-byte packet without MRG_RXBUF does not fit "
           "the 2048-byte chain with id 7, which stays available, and "
           "ends the burst; the next burst takes it");
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];
        struct vhost_pkt in[2] = {
            { .data = big, .len = 3000 }, { .data = a, .len = 100 },
        };

        pk_post_one(vq, pk_arena_buf(vq, 2048), 2048, TFE_DESC_F_WRITE, 7);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
        pk_expect_no_used(vq);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in + 1, 1), 1);
        pk_expect_used(vq, 7, 112);
        pk_expect_no_used(vq);
    }
    {
        struct vhost_queue_stats st = pk_get_stats(&pk, RX(0));
        TU_CHECK_EQ(st.packets, 1);
        TU_CHECK_EQ(st.drops[VHOST_DROP_ID_IN_FLIGHT], 0);
        TU_CHECK_EQ(st.drops[VHOST_DROP_TOO_BIG], 0);
        TU_CHECK_EQ(st.small_buf_stops, 1);
    }

    free(a);
    free(big);
    pk_finish(&pk);

    tu_log("receive with MRG_RXBUF: a packet that does not fit the chains "
           "there (ids 3, 4) leaves them available; after one more (id 5) "
           "the next burst takes all three");
    cfg = pk_cfg_sized(PK_FULL, 16);
    pk_start(&pk, "id-reuse-bursts-mrg", &cfg);
    a = pk_new_pkt(&pk, 3000, MAC_UNICAST);
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];

        pk_post_one(vq, pk_arena_buf(vq, 1024), 1024, TFE_DESC_F_WRITE, 3);
        pk_post_one(vq, pk_arena_buf(vq, 1024), 1024, TFE_DESC_F_WRITE, 4);
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 3000, NULL), 0);
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 3000, NULL), 0);
        pk_expect_no_used(vq);
        pk_post_one(vq, pk_arena_buf(vq, 2048), 2048, TFE_DESC_F_WRITE, 5);
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 3000, NULL), 1);
        pk_expect_used(vq, 3, 1024);
        pk_expect_used(vq, 4, 1024);
        pk_expect_used(vq, 5, 3012 - 2048);
        pk_expect_no_used(vq);
    }
    check_id_drops(&pk, RX(0), 1, 0);
    free(a);
    pk_roundtrip(&pk, 0, "after the waits");
    pk_finish(&pk);
}

const struct tu_test tu_packed_validate_tests[] = {
    { "pk-batch-rx", test_batch_rx,
      "RX: four-at-a-time enqueue batch and single path" },
    { "pk-batch-rx-nomrg", test_batch_rx_nomrg,
      "RX: the same without MRG_RXBUF" },
    { "pk-bad-index-tx", test_bad_index_tx, "TX: buffer id >= queue size" },
    { "pk-bad-index-rx", test_bad_index_rx, "RX: buffer id >= queue size" },
    { "pk-bad-direction-tx", test_bad_direction_tx,
      "TX: device-writable descriptors" },
    { "pk-bad-direction-rx", test_bad_direction_rx,
      "RX: read-only descriptors" },
    { "pk-bad-direction-rx-nomrg", test_bad_direction_rx_nomrg,
      "RX: read-only descriptors, no MRG_RXBUF" },
    { "pk-bad-addr-tx", test_bad_addr_tx, "TX: buffers outside memory" },
    { "pk-bad-addr-rx", test_bad_addr_rx, "RX: buffers outside memory" },
    { "pk-bad-indirect-tx", test_bad_indirect_tx, "TX: bad indirect tables" },
    { "pk-bad-indirect-rx", test_bad_indirect_rx, "RX: bad indirect tables" },
    { "pk-indirect-unnegotiated", test_indirect_unnegotiated,
      "INDIRECT without INDIRECT_DESC negotiated" },
    { "pk-short-hdr-tx", test_short_hdr_tx,
      "TX: chains shorter than the header" },
    { "pk-bad-csum-tx", test_bad_csum_tx,
      "TX: csum_start/csum_offset beyond the packet" },
    { "pk-no-host-ol-tx", test_no_host_offloads_tx,
      "TX: without host offloads the header is ignored" },
    { "pk-too-big-tx", test_too_big_tx, "TX: packets over 64 KiB" },
    { "pk-alloc-max-len", test_alloc_max_len,
      "TX: a packet longer than the allocator's max_len is dropped" },
    { "pk-loop", test_loop,
      "chains into unavailable descriptors, and never-ending ones" },
    { "pk-loop-nomrg", test_loop_nomrg,
      "the same without MRG_RXBUF" },
    { "pk-not-avail", test_not_avail,
      "heads whose flags do not match the wrap counter" },
    { "pk-id-reuse", test_id_reuse,
      "a buffer id in flight twice in one burst, both directions" },
    { "pk-id-reuse-batch", test_id_reuse_batch,
      "a buffer id in flight twice in and across dequeue batches" },
    { "pk-id-reuse-bursts", test_id_reuse_bursts,
      "ids free again after write-back; chains left available" },
};

const size_t tu_n_packed_validate_tests = ARRAY_SIZE(tu_packed_validate_tests);
