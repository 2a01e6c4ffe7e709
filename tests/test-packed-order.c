/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: VIRTIO_F_IN_ORDER (fixture in test-packed.h).
 *
 * In-order dequeue and enqueue (§2.7.9 split, §2.8.8 packed) on both ring
 * layouts, with and without EVENT_IDX and offloads, and over many laps.
 */

#include <config.h>

#include "test-packed.h"

/* VIRTIO_F_IN_ORDER (§2.7.9 split, §2.8.8 packed), on both layouts.  The
 * driver model keeps the order chains were made available in and checks
 * each used element against it ('n_unordered', 'last_batch'). */

/* The features of an in-order test on the split ('packed' false) or the
 * packed ring. */
static uint64_t
io_features(bool packed, uint64_t features)
{
    features |= PK_INO;
    return packed ? features | F(VIRTIO_F_RING_PACKED)
                  : features & ~F(VIRTIO_F_RING_PACKED);
}

/* Dequeue writes a pk_burst back as one used element, where the pk_burst's
 * first chain's would go, naming the last chain, with length 0: split,
 * one used ring entry and used->idx moved on by the pk_burst; packed, one
 * used descriptor, the driver's position moving past every chain of the
 * pk_burst.  Nothing else of the ring is written.  Chains of every shape
 * (one descriptor, several, indirect, a dropped one) in bursts of 1 to
 * 8 chains over a ring of 32 that wraps many times.  'without' leaves
 * features out of PK_FULL, for the other specialised copies: EVENT_IDX,
 * or the host offloads, without which the header that asks for a
 * checksum outside the packet is not read, and the chain is not bad. */
static void
run_in_order_dequeue(bool packed, uint64_t without)
{
    struct pk_cfg cfg = pk_cfg_sized(io_features(packed, PK_FULL & ~without),
                                     32);
    const bool host_ol = !(without & (F(VIRTIO_NET_F_CSUM)
                                      | F(VIRTIO_NET_F_HOST_TSO4)
                                      | F(VIRTIO_NET_F_HOST_TSO6)));
    struct vhost_pkt out[16];
    unsigned int n_pkts = 0, n_bad = 0;
    struct pk pk;

    pk_start(&pk, packed ? "io-dq-packed" : "io-dq-split", &cfg);
    struct tfe_vq *vq = &pk.vq[TX(0)];
    TU_CHECK(vq->in_order);
    for (unsigned int round = 0; round < 40; round++) {
        unsigned int n = 1 + round % 8;     /* Chains this pk_burst. */
        /* Which is bad, if any (none without host offloads). */
        unsigned int bad = round % 3 || !host_ol ? n : round % n;
        uint8_t *pkts[8];
        int ids[8];
        uint16_t used0 = 0, slot_after = 0;
        bool wrap0 = false;

        if (!packed) {
            /* Poison the used ring: only one entry may change. */
            used0 = tfe_vq_used_idx(vq);
            for (unsigned int i = 0; i < vq->size; i++) {
                vq->used_ring[i].id = 0xdead;
                vq->used_ring[i].len = 0xbeef;
            }
        } else {
            used0 = vq->next_avail;
            wrap0 = vq->avail_wrap;
        }
        for (unsigned int i = 0; i < n; i++) {
            struct tfe_buf_opts o = {
                .n_descs = 1 + (round + i) % 3,
                .indirect = (round + i) % 4 == 3,
            };
            struct tfe_net_hdr h = { .csum_start = 2000, .csum_offset = 6,
                                     .flags = TFE_NET_HDR_F_NEEDS_CSUM };

            if (o.indirect) {
                o.n_descs = 2;
            }
            pkts[i] = pk_new_pkt(&pk, 60 + 10 * i, MAC_UNICAST);
            ids[i] = pk_tx_post(&pk, 0, i == bad ? &h : NULL, pkts[i],
                                60 + 10 * i, &o);
            if (packed && i == 0) {
                slot_after = vq->next_avail;
            }
        }
        unsigned int good = n - (bad < n);
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 16), good);
        for (unsigned int i = 0, j = 0; i < n; i++) {
            if (i != bad) {
                pk_check_pkt(&out[j++], pkts[i], 60 + 10 * i, "in order");
            }
        }
        pk_release_pkts(out, 16);
        n_pkts += good;
        n_bad += bad < n;

        if (!packed) {
            uint16_t slot = used0 % vq->size;

            TU_CHECK_EQ(tfe_vq_used_idx(vq), (uint16_t) (used0 + n));
            TU_CHECK_EQ(vq->used_ring[slot].id, ids[n - 1]);
            TU_CHECK_EQ(vq->used_ring[slot].len, 0);
            for (unsigned int i = 0; i < vq->size; i++) {
                if (i != slot) {
                    TU_CHECK_EQ(vq->used_ring[i].id, 0xdead);
                }
            }
        } else {
            const struct tfe_pdesc *d = &vq->pdesc[used0];
            uint16_t f = __atomic_load_n(&d->flags, __ATOMIC_ACQUIRE);

            TU_CHECK_EQ(f, USED_FLAGS(wrap0, 0));
            TU_CHECK_EQ(d->id, ids[n - 1]);
            TU_CHECK_EQ(d->len, 0);
            if (n > 1) {
                /* The second chain's head was not written back. */
                f = __atomic_load_n(&vq->pdesc[slot_after].flags,
                                    __ATOMIC_ACQUIRE);
                TU_CHECK(!(f & TFE_PDESC_F_USED) != !(f & TFE_PDESC_F_AVAIL));
            }
        }
        /* The driver takes the batch apart, in order. */
        for (unsigned int i = 0; i < n; i++) {
            pk_expect_used(vq, ids[i], 0);
            TU_CHECK_EQ(vq->last_batch, n);
        }
        pk_expect_no_used(vq);
        TU_CHECK_EQ(vq->n_unordered, 0);
        for (unsigned int i = 0; i < n; i++) {
            free(pkts[i]);
        }
    }
    {
        struct vhost_queue_stats st = pk_get_stats(&pk, TX(0));
        TU_CHECK_EQ(st.packets, n_pkts);
        TU_CHECK_EQ(st.drops[VHOST_DROP_BAD_CSUM], n_bad);
    }
    pk_roundtrip(&pk, 0, "after the in-order bursts");
    pk_roundtrip(&pk, 1, "the other queue pair");
    pk_finish(&pk);
}

#define PK_HOST_OL \
    (F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_HOST_TSO4) \
     | F(VIRTIO_NET_F_HOST_TSO6))

static void
test_in_order_dequeue_split(void)
{
    run_in_order_dequeue(false, 0);
}

static void
test_in_order_dequeue_packed(void)
{
    run_in_order_dequeue(true, 0);
}

static void
test_in_order_dequeue_split_noevt(void)
{
    run_in_order_dequeue(false, PK_EVT);
}

static void
test_in_order_dequeue_packed_noevt(void)
{
    run_in_order_dequeue(true, PK_EVT);
}

static void
test_in_order_dequeue_split_nool(void)
{
    run_in_order_dequeue(false, PK_HOST_OL);
}

static void
test_in_order_dequeue_packed_nool(void)
{
    run_in_order_dequeue(true, PK_HOST_OL);
}

static void
test_in_order_dequeue_split_nool_noevt(void)
{
    run_in_order_dequeue(false, PK_HOST_OL | PK_EVT);
}

static void
test_in_order_dequeue_packed_nool_noevt(void)
{
    run_in_order_dequeue(true, PK_HOST_OL | PK_EVT);
}

/* Enqueue with IN_ORDER and MRG_RXBUF: one used element per chain, each
 * with its length, in the order the chains were made available, even
 * when a bad chain comes between two buffers a packet could use: the
 * buffer before it is returned empty, the bad one dropped, and the
 * packet goes after them.  Then ordinary multi-buffer packets. */
static void
run_in_order_enqueue(bool packed)
{
    struct pk_cfg cfg = pk_cfg_sized(io_features(packed, PK_FULL), 16);
    struct tfe_vq *vq;
    struct tfe_used_elem u;
    struct pk pk;
    uint8_t *a;
    int g1, g2, bad;

    pk_start(&pk, packed ? "io-enq-packed" : "io-enq-split", &cfg);
    vq = &pk.vq[RX(0)];
    a = pk_new_pkt(&pk, 2000, MAC_UNICAST);

    tu_log("a 1000-byte buffer, a read-only chain, a 2048-byte buffer");
    g1 = pk_rx_post(&pk, 0, 1000, NULL);
    if (packed) {
        bad = pk_post_one(vq, pk_arena_buf(vq, 2048), 2048, 0, pk_free_id(vq));
    } else {
        struct tfe_seg seg = { pk_arena_buf(vq, 2048), 2048 };
        struct tfe_chain_opts copts = { .indirect = false };
        bad = tfe_vq_add_chain(vq, &seg, 1, false, &copts);
        TU_CHECK(bad >= 0);
    }
    g2 = pk_rx_post(&pk, 0, 2048, NULL);
    TU_CHECK_EQ(pk_enq1(&pk, 0, a, 2000, NULL), 1);
    TU_CHECK_OK(pk_get_used(vq, &u, "the buffer before the bad chain"));
    TU_CHECK_EQ(u.id, g1);
    TU_CHECK_EQ(u.len, 0);
    TU_CHECK_EQ(vq->last_batch, 1);
    TU_CHECK_OK(pk_get_used(vq, &u, "the bad chain"));
    TU_CHECK_EQ(u.id, bad);
    TU_CHECK_EQ(u.len, 0);
    TU_CHECK_EQ(vq->last_batch, 1);
    TU_CHECK_OK(tfe_vq_peek_used(vq, &u));
    TU_CHECK_EQ(u.id, g2);
    pk_rx_expect(&pk, 0, a, 2000, NULL, 1, "after the bad chain");
    TU_CHECK_EQ(vq->last_batch, 1);
    pk_expect_no_used(vq);
    TU_CHECK_EQ(pk_get_stats(&pk, RX(0)).drops[VHOST_DROP_BAD_DIRECTION], 1);

    tu_log("packets over several buffers, several per burst");
    for (int round = 0; round < 20; round++) {
        struct vhost_pkt in[3];
        uint8_t *p[3];

        for (int i = 0; i < 3; i++) {
            size_t len = 500 + 700 * ((round + i) % 4);
            p[i] = pk_new_pkt(&pk, len, MAC_UNICAST);
            in[i] = (struct vhost_pkt) { .data = p[i], .len = len };
        }
        for (int i = 0; i < 12; i++) {
            pk_rx_post(&pk, 0, 512 + 256 * (i % 3), NULL);
        }
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 3), 3);
        for (int i = 0; i < 3; i++) {
            pk_rx_expect(&pk, 0, p[i], in[i].len, NULL, 0, "mergeable");
            TU_CHECK_EQ(vq->last_batch, 1);
            free(p[i]);
        }
        /* Give back what the packets did not use. */
        while (tfe_vq_n_used(vq) || vq->order_n) {
            if (!tfe_vq_n_used(vq)) {
                uint8_t *f = pk_new_pkt(&pk, 60, MAC_UNICAST);
                TU_CHECK_EQ(pk_enq1(&pk, 0, f, 60, NULL), 1);
                pk_rx_expect(&pk, 0, f, 60, NULL, 1, "filler");
                free(f);
            } else {
                TU_CHECK_OK(pk_get_used(vq, &u, "leftover"));
            }
        }
    }
    TU_CHECK_EQ(vq->n_unordered, 0);
    free(a);
    pk_roundtrip(&pk, 0, "after the in-order enqueues");
    pk_finish(&pk);
}

static void
test_in_order_enqueue_split(void)
{
    run_in_order_enqueue(false);
}

static void
test_in_order_enqueue_packed(void)
{
    run_in_order_enqueue(true);
}

static void
test_in_order_wrap_7(void)
{
    pk_run_wrap("io-wrap-7", 7, PK_FULL | PK_INO, 100);
}

static void
test_in_order_wrap_33_nomrg(void)
{
    pk_run_wrap("io-wrap-33-nomrg", 33, PK_BASE | PK_IND | PK_INO, 30);
}

const struct tu_test tu_packed_order_tests[] = {
    { "io-dequeue-split", test_in_order_dequeue_split,
      "split: one used entry per dequeue burst, in order" },
    { "io-dequeue-packed", test_in_order_dequeue_packed,
      "packed: one used descriptor per dequeue burst, in order" },
    { "io-dequeue-split-noevt", test_in_order_dequeue_split_noevt,
      "split: in-order dequeue without EVENT_IDX" },
    { "io-dequeue-packed-noevt", test_in_order_dequeue_packed_noevt,
      "packed: in-order dequeue without EVENT_IDX" },
    { "io-dequeue-split-nool", test_in_order_dequeue_split_nool,
      "split: in-order dequeue without host offloads" },
    { "io-dequeue-packed-nool", test_in_order_dequeue_packed_nool,
      "packed: in-order dequeue without host offloads" },
    { "io-dequeue-split-nool-noevt", test_in_order_dequeue_split_nool_noevt,
      "split: in-order dequeue without host offloads or EVENT_IDX" },
    { "io-dequeue-packed-nool-noevt", test_in_order_dequeue_packed_nool_noevt,
      "packed: in-order dequeue without host offloads or EVENT_IDX" },
    { "io-enqueue-split", test_in_order_enqueue_split,
      "split: enqueue used entries in avail order, MRG and a bad chain" },
    { "io-enqueue-packed", test_in_order_enqueue_packed,
      "packed: enqueue used descriptors in ring order, MRG and a bad chain" },
    { "io-wrap-7", test_in_order_wrap_7,
      "packed: queue size 7, 100 laps" },
    { "io-wrap-33-nomrg", test_in_order_wrap_33_nomrg,
      "packed: queue size 33, 30 laps, no MRG" },
};

const size_t tu_n_packed_order_tests = ARRAY_SIZE(tu_packed_order_tests);
