/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: the ring itself (fixture in test-packed.h).
 *
 * Packet bytes both ways for every combination of MRG_RXBUF, INDIRECT_DESC
 * and EVENT_IDX; the wrap counters over many laps of rings of every size
 * with chains that straddle the end of the ring (VIRTIO 1.2 §2.8.1); the
 * four-at-a-time batch and the one-at-a-time path.
 */

#include <config.h>

#include "test-packed.h"

/* Feature combinations: MRG_RXBUF x INDIRECT_DESC x EVENT_IDX. */

static const size_t combo_sizes[] = {
    42, 60, 64, 65, 127, 128, 255, 256, 511, 512, 1023, 1024, 1500, 1518,
    1519, 4000, 9000,
};

#define N_COMBO ARRAY_SIZE(combo_sizes)
#define MRG_BUF_SIZE 1536

static void
run_combo(bool mrg, bool indirect, bool event_idx)
{
    uint64_t features = (PK_BASE | (mrg ? PK_MRG : 0)
                         | (indirect ? PK_IND : 0)
                         | (event_idx ? PK_EVT : 0));
    struct pk_cfg cfg = pk_cfg_features(features);
    struct vhost_pkt out[VHOST_MAX_BURST], in[N_COMBO];
    struct vhost_queue_stats e, s;
    uint8_t *pkts[N_COMBO];
    int ids[N_COMBO];
    struct pk pk;

    pk_start(&pk, "combo", &cfg);
    TU_CHECK_EQ(pk.hdr_len, 12);
    TU_CHECK(pk.packed);

    tu_log("guest to host: %zu packets of 42..9000 bytes, each over 1-4 "
           "descriptors%s, one of them across regions 1|2", N_COMBO,
           indirect ? " in an indirect table" : "");
    memset(&e, 0, sizeof e);
    for (size_t i = 0; i < N_COMBO; i++) {
        struct tfe_buf_opts o = { .n_descs = 1 + i % 4,
                                  .indirect = indirect };

        if (i == 14) {
            o.gpa = pk_boundary_tx(&pk) - 700;
        }
        pkts[i] = pk_new_pkt(&pk, combo_sizes[i], i % 3);
        ids[i] = pk_tx_post(&pk, 0, NULL, pkts[i], combo_sizes[i], &o);
        pk_stats_add(&e, pkts[i], combo_sizes[i]);
    }
    TU_CHECK_EQ(pk_dq(&pk, 0, out, VHOST_MAX_BURST), N_COMBO);
    for (size_t i = 0; i < N_COMBO; i++) {
        pk_check_pkt(&out[i], pkts[i], combo_sizes[i], "dequeued packet");
        pk_check_ol(&out[i].ol, NULL, "dequeued packet");
        pk_expect_used(&pk.vq[TX(0)], ids[i], 0);
    }
    pk_expect_no_used(&pk.vq[TX(0)]);
    pk_release_pkts(out, VHOST_MAX_BURST);
    pk_check_stats(&pk, TX(0), &e);

    tu_log("the guest is notified once; the engine polls (device event "
           "flags DISABLE)");
    TU_CHECK_EQ(tfe_vq_calls(&pk.vq[TX(0)]), 1);
    s = pk_get_stats(&pk, TX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    TU_CHECK_EQ(s.notifications_suppressed, 0);
    pk_check_no_kicks(&pk.vq[TX(0)]);

    tu_log("host to guest: the same packets%s",
           mrg ? ", into 1536-byte buffers" : ", one chain each");
    if (mrg) {
        for (int i = 0; i < 64; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 2,
                                      .indirect = indirect };
            if (i == 3) {
                o.gpa = pk_boundary_rx(&pk) - 700;
            }
            pk_rx_post(&pk, 0, MRG_BUF_SIZE, &o);
        }
    } else {
        for (size_t i = 0; i < N_COMBO; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 3,
                                      .indirect = indirect };
            if (i == 10) {
                o.gpa = pk_boundary_rx(&pk) - 4000;
            }
            pk_rx_post(&pk, 0, 9000 + pk.hdr_len + 100, &o);
        }
    }
    for (size_t i = 0; i < N_COMBO; i++) {
        in[i] = (struct vhost_pkt) { .data = pkts[i], .len = combo_sizes[i],
                                     .size = combo_sizes[i] };
    }
    TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, N_COMBO), N_COMBO);
    for (size_t i = 0; i < N_COMBO; i++) {
        unsigned int n_bufs = (mrg ? DIV_ROUND_UP(pk.hdr_len + combo_sizes[i],
                                                  MRG_BUF_SIZE)
                               : 1);
        pk_rx_expect(&pk, 0, pkts[i], combo_sizes[i], NULL, n_bufs,
                     "enqueued packet");
    }
    if (!mrg) {
        pk_expect_no_used(&pk.vq[RX(0)]);
    }
    pk_check_stats(&pk, RX(0), &e);
    TU_CHECK_EQ(tfe_vq_calls(&pk.vq[RX(0)]), 1);
    s = pk_get_stats(&pk, RX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    pk_check_no_kicks(&pk.vq[RX(0)]);

    tu_log("offload metadata both ways");
    {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
            .hdr_len = 54, .gso_size = 1448, .csum_start = 34,
            .csum_offset = 16,
        };
        struct vhost_offload exp = {
            .flags = VHOST_OL_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
            .hdr_len = 54, .gso_size = 1448, .csum_start = 34,
            .csum_offset = 16,
        };
        struct vhost_offload ol = {
            .flags = VHOST_OL_DATA_VALID, .gso_type = VHOST_GSO_TCPV6,
            .hdr_len = 74, .gso_size = 1400, .csum_start = 54,
            .csum_offset = 16,
        };
        uint8_t *a = pk_new_pkt(&pk, 3000, MAC_UNICAST);
        struct tfe_buf_opts o = { .n_descs = 2, .indirect = indirect };

        pk_tx_post(&pk, 0, &h, a, 3000, &o);
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 1);
        pk_check_pkt(&out[0], a, 3000, "offload dequeue");
        pk_check_ol(&out[0].ol, &exp, "offload dequeue");
        pk_release_pkts(out, 4);
        TU_CHECK_EQ(pk_get_used(&pk.vq[TX(0)], &(struct tfe_used_elem) { 0 },
                                "offload dequeue"), 0);
        pk_rx_post(&pk, 0, 4000, &o);
        TU_CHECK_EQ(pk_enq1(&pk, 0, a, 3000, &ol), 1);
        pk_rx_expect(&pk, 0, a, 3000, &ol, 0, "offload enqueue");
        free(a);
    }

    for (size_t i = 0; i < N_COMBO; i++) {
        free(pkts[i]);
    }
    pk_roundtrip(&pk, 1, "the other queue pair");
    pk_finish(&pk);
}

#define COMBO(NAME, MRG, IND, EVT)                                      \
    static void                                                         \
    test_combo_##NAME(void)                                             \
    {                                                                   \
        run_combo(MRG, IND, EVT);                                       \
    }
COMBO(000, false, false, false)
COMBO(001, false, false, true)
COMBO(010, false, true, false)
COMBO(011, false, true, true)
COMBO(100, true, false, false)
COMBO(101, true, false, true)
COMBO(110, true, true, false)
COMBO(111, true, true, true)

/* Wrap-around: many laps of the ring with chains of random length that
 * straddle its end, both ways. */

static void
test_wrap_1(void)
{
    pk_run_wrap("wrap-1", 1, PK_FULL, 300);
}

static void
test_wrap_2(void)
{
    pk_run_wrap("wrap-2", 2, PK_FULL, 300);
}

static void
test_wrap_7(void)
{
    pk_run_wrap("wrap-7", 7, PK_FULL, 200);
}

static void
test_wrap_7_nomrg(void)
{
    pk_run_wrap("wrap-7-nm", 7, PK_BASE | PK_EVT, 200);
}

static void
test_wrap_33(void)
{
    pk_run_wrap("wrap-33", 33, PK_FULL, 60);
}

static void
test_wrap_256(void)
{
    pk_run_wrap("wrap-256", 256, PK_FULL, 12);
}

static void
test_wrap_256_nomrg(void)
{
    pk_run_wrap("wrap-256-nm", 256, PK_BASE | PK_IND, 12);
}

static void
test_wrap_32768(void)
{
    pk_run_wrap("wrap-32768", 32768, PK_FULL, 2);
}

/* The four-at-a-time batch and the one-at-a-time path. */

static void
run_items(struct pk *pk, unsigned int pos, const enum item_kind *kinds,
          size_t n, unsigned int n_dq, const char *what)
{
    struct item items[16];
    unsigned int good = 0;

    tu_log("at position %u: %s", pos, what);
    pk_tx_advance_to(pk, pos);
    for (size_t i = 0; i < n; i++) {
        items[i].kind = kinds[i];
        pk_post_item(pk, 0, &items[i]);
        good += items[i].reason < 0;
    }
    pk_check_items(pk, items, n, n_dq, MIN(good, n_dq), what);
}

#define ITEMS(...) ((const enum item_kind[]) { __VA_ARGS__ }),          \
        ARRAY_SIZE(((const enum item_kind[]) { __VA_ARGS__ }))

static void
test_batch(void)
{
    struct pk_cfg cfg = pk_cfg_features(PK_FULL);
    struct pk pk;

    pk_start(&pk, "batch", &cfg);
    run_items(&pk, 0, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD), 4,
              "four simple descriptors, a burst of 4 (batch)");
    run_items(&pk, 4, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD,
                            IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD,
                            IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD,
                            IT_GOOD), 16,
              "sixteen simple descriptors (four batches)");
    tu_log("at position 20: four simple descriptors, a burst of 3 (too "
           "few for a batch), then 1");
    {
        struct item items[4];

        pk_tx_advance_to(&pk, 20);
        for (int i = 0; i < 4; i++) {
            items[i].kind = IT_GOOD;
            pk_post_item(&pk, 0, &items[i]);
        }
        pk_check_items(&pk, items, 3, 3, 3, "burst of 3");
        pk_check_items(&pk, items + 3, 1, 4, 1, "the fourth");
    }
    run_items(&pk, 25, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD,
                             IT_GOOD, IT_GOOD, IT_GOOD), 8,
              "eight simple descriptors from an unaligned position");
    run_items(&pk, 34, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD,
                             IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD),
              10, "ten simple descriptors from position 2 mod 4");
    run_items(&pk, 44, ITEMS(IT_GOOD, IT_CHAIN2, IT_GOOD, IT_GOOD), 4,
              "a two-descriptor chain in the group");
    run_items(&pk, 52, ITEMS(IT_GOOD, IT_INDIRECT, IT_GOOD, IT_GOOD), 4,
              "an indirect descriptor in the group");
    run_items(&pk, 56, ITEMS(IT_GOOD, IT_STRADDLE, IT_GOOD, IT_GOOD), 4,
              "a buffer across regions in the group");
    run_items(&pk, 60, ITEMS(IT_OFFLOAD, IT_HDR_ONLY, IT_OFFLOAD, IT_GOOD),
              4, "offload headers and a header-only packet (batch)");
    run_items(&pk, 64, ITEMS(IT_GOOD, IT_GOOD, IT_BAD_CSUM, IT_GOOD), 4,
              "a bad checksum offset in the group");
    run_items(&pk, 68, ITEMS(IT_BAD_ID, IT_GOOD, IT_GOOD, IT_GOOD), 4,
              "a buffer id = queue size in the group");
    run_items(&pk, 72, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_BAD_WRITE), 4,
              "a device-writable descriptor in the group");
    run_items(&pk, 76, ITEMS(IT_GOOD, IT_SHORT, IT_GOOD, IT_GOOD), 4,
              "a short descriptor in the group");
    run_items(&pk, 80, ITEMS(IT_GOOD, IT_GOOD, IT_TOO_BIG, IT_GOOD), 4,
              "a 70000-byte packet in the group");
    run_items(&pk, 84, ITEMS(IT_BAD_CSUM, IT_BAD_ID, IT_BAD_WRITE,
                             IT_SHORT, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD),
              8, "a group of four bad ones, then four good ones");
    run_items(&pk, 254, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD,
                              IT_GOOD), 6,
              "six simple descriptors across the end of the ring");
    TU_CHECK(!pk.vq[TX(0)].avail_wrap);
    run_items(&pk, 8, ITEMS(IT_GOOD, IT_GOOD, IT_GOOD, IT_GOOD), 4,
              "in the second lap (wrap counter 0), a batch");
    run_items(&pk, 12, ITEMS(IT_GOOD, IT_BAD_ID, IT_CHAIN2, IT_OFFLOAD,
                             IT_GOOD), 4,
              "in the second lap, a mix");

    tu_log("the fourth not yet available: three, then one");
    {
        struct item items[4];
        pk_tx_advance_to(&pk, 20);
        for (int i = 0; i < 3; i++) {
            items[i].kind = IT_GOOD;
            pk_post_item(&pk, 0, &items[i]);
        }
        pk_check_items(&pk, items, 3, 4, 3, "three of four available");
        items[0].kind = IT_GOOD;
        pk_post_item(&pk, 0, &items[0]);
        pk_check_items(&pk, items, 1, 4, 1, "the fourth");
    }

    tu_log("the allocator fails after two of a batch of four: two come "
           "out, two stay");
    {
        struct item items[4];
        struct vhost_pkt out[4];

        pk_tx_advance_to(&pk, 28);
        for (int i = 0; i < 4; i++) {
            items[i].kind = IT_GOOD;
            pk_post_item(&pk, 0, &items[i]);
        }
        pk.pa.fail_after = 2;
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 2);
        for (int i = 0; i < 2; i++) {
            pk_check_pkt(&out[i], items[i].pkt, items[i].len,
                         "before failure");
            pk_expect_used(&pk.vq[TX(0)], items[i].id, 0);
        }
        pk_expect_no_used(&pk.vq[TX(0)]);
        pk_release_pkts(out, 4);
        pk.pa.fail_after = -1;
        TU_CHECK_EQ(pk_dq(&pk, 0, out, 4), 2);
        for (int i = 2; i < 4; i++) {
            pk_check_pkt(&out[i - 2], items[i].pkt, items[i].len,
                         "after failure");
            pk_expect_used(&pk.vq[TX(0)], items[i].id, 0);
        }
        pk_release_pkts(out, 4);
        for (int i = 0; i < 4; i++) {
            free(items[i].pkt);
        }
    }

    tu_log("pre-filled buffers: big ones are kept, small ones replaced");
    {
        struct item items[4];
        struct vhost_pkt out[4];
        unsigned int n_alloc = pk.pa.n_alloc, n_free = pk.pa.n_free;

        pk_tx_advance_to(&pk, 32);
        for (int i = 0; i < 4; i++) {
            items[i].kind = IT_GOOD;
            pk_post_item(&pk, 0, &items[i]);
        }
        memset(out, 0, sizeof out);
        for (int i = 0; i < 4; i++) {
            uint32_t size = i == 2 ? 10 : 2048;
            out[i].data = malloc(size);
            out[i].size = size;
            out[i].handle = out[i].data;
        }
        TU_CHECK_EQ(vhost_dequeue_burst(pk.port, 0, out, 4, &pk.alloc), 4);
        for (int i = 0; i < 4; i++) {
            pk_check_pkt(&out[i], items[i].pkt, items[i].len, "pre-filled");
            pk_expect_used(&pk.vq[TX(0)], items[i].id, 0);
            free(items[i].pkt);
        }
        TU_CHECK_EQ(pk.pa.n_alloc - n_alloc, 1);
        TU_CHECK_EQ(pk.pa.n_free - n_free, 1);
        pk_release_pkts(out, 4);
    }
    pk_roundtrip(&pk, 0, "after the batches");
    pk_roundtrip(&pk, 1, "the other queue pair");
    pk_finish(&pk);
}

const struct tu_test tu_packed_ring_tests[] = {
    { "pk-combo-000", test_combo_000, "no MRG, direct, no EVENT_IDX" },
    { "pk-combo-001", test_combo_001, "no MRG, direct, EVENT_IDX" },
    { "pk-combo-010", test_combo_010, "no MRG, indirect, no EVENT_IDX" },
    { "pk-combo-011", test_combo_011, "no MRG, indirect, EVENT_IDX" },
    { "pk-combo-100", test_combo_100, "MRG, direct, no EVENT_IDX" },
    { "pk-combo-101", test_combo_101, "MRG, direct, EVENT_IDX" },
    { "pk-combo-110", test_combo_110, "MRG, indirect, no EVENT_IDX" },
    { "pk-combo-111", test_combo_111, "MRG, indirect, EVENT_IDX" },
    { "pk-wrap-1", test_wrap_1, "queue size 1, 300 laps" },
    { "pk-wrap-2", test_wrap_2, "queue size 2, 300 laps" },
    { "pk-wrap-7", test_wrap_7, "queue size 7, 200 laps" },
    { "pk-wrap-7-nomrg", test_wrap_7_nomrg,
      "queue size 7, 200 laps, no MRG, no indirect" },
    { "pk-wrap-33", test_wrap_33, "queue size 33, 60 laps" },
    { "pk-wrap-256", test_wrap_256, "queue size 256, 12 laps" },
    { "pk-wrap-256-nomrg", test_wrap_256_nomrg,
      "queue size 256, 12 laps, no MRG" },
    { "pk-wrap-32768", test_wrap_32768, "queue size 32768, 2 laps" },
    { "pk-batch", test_batch, "four-at-a-time batch and single path" },
};

const size_t tu_n_packed_ring_tests = ARRAY_SIZE(tu_packed_ring_tests);
