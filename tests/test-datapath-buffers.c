/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: buffers and offloads (fixture in test-datapath.h).
 *
 * Dequeue buffers from the embedder (pre-filled, allocated, its
 * 'max_len'), receive buffers too small for the packet, and the offload
 * metadata both ways (VIRTIO 1.2 §5.1.6).
 */

#include <config.h>

#include "test-datapath.h"

/* Dequeue buffers from the embedder. */

static void
test_alloc(void)
{
    static const size_t sizes[] = { 60, 100, 9000, 128, 64 };
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[8];
    uint8_t *pkts[8];
    void *prefilled[8];
    struct dp dp;

    dp_start(&dp, "alloc", &cfg);
    tu_log("pre-filled 128-byte buffers: packets that fit use them, a "
           "9000-byte packet gets a new one and its buffer is freed");
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        pkts[i] = dp_new_pkt(&dp, sizes[i], MAC_UNICAST);
        dp_tx_post(&dp, 0, NULL, pkts[i], sizes[i], NULL);
    }
    memset(out, 0, sizeof out);
    for (size_t i = 0; i < 8; i++) {
        out[i].data = prefilled[i] = malloc(128);
        out[i].size = 128;
        out[i].handle = out[i].data;
    }
    TU_CHECK_EQ(vhost_dequeue_burst(dp.port, 0, out, 8, &dp.alloc),
                ARRAY_SIZE(sizes));
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        dp_check_pkt(&out[i], pkts[i], sizes[i], "pre-filled buffers");
        if (sizes[i] <= 128) {
            TU_CHECK(out[i].data == prefilled[i]);
            TU_CHECK(out[i].handle == prefilled[i]);
        } else {
            TU_CHECK(out[i].data != prefilled[i]);
        }
    }
    TU_CHECK_EQ(dp.da.n_alloc, 1);
    TU_CHECK_CMP(dp.da.max_len, >=, 9000);
    TU_CHECK_EQ(dp.da.n_free, 1);
    TU_CHECK(dp.da.freed[0] == prefilled[2]);
    dp_release_pkts(out, 8);       /* Unused pre-filled ones included. */
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        free(pkts[i]);
    }

    tu_log("alloc() refusing the second packet leaves it and the rest in "
           "the ring for the next call");
    memset(&dp.da, 0, sizeof dp.da);
    dp.da.fail_after = 1;
    for (int i = 0; i < 3; i++) {
        pkts[i] = dp_new_pkt(&dp, 200 + i, MAC_UNICAST);
        dp_tx_post(&dp, 0, NULL, pkts[i], 200 + i, NULL);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 8), 1);
    dp_check_pkt(&out[0], pkts[0], 200, "before the refusal");
    dp_release_pkts(out, 8);
    TU_CHECK_EQ(dp.da.n_failed, 1);
    TU_CHECK_EQ(tfe_vq_n_used(&dp.vq[TX(0)]), 1);
    {
        struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s), 0);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 8), 0);
    dp.da.fail_after = -1;
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 8), 2);
    dp_check_pkt(&out[0], pkts[1], 201, "after the refusal");
    dp_check_pkt(&out[1], pkts[2], 202, "after the refusal");
    dp_release_pkts(out, 8);
    for (int i = 0; i < 3; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        free(pkts[i]);
    }
    dp_expect_no_used(&dp.vq[TX(0)]);
    dp_finish(&dp);
}

/* The embedder's 'max_len': a longer guest packet is dropped, not left
 * blocking the ring. */

static void
test_alloc_max_len(void)
{
    static const size_t sizes[] = { 100, 1001, 1000, 60 };
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[8];
    struct vhost_queue_stats e;
    uint8_t *pkts[4];
    int heads[4];
    struct dp dp;

    dp_start(&dp, "alloc-max-len", &cfg);
    dp.alloc.max_len = 1000;
    tu_log("max_len 1000: 100, 1001, 1000, 60 bytes: the 1001-byte packet "
           "is dropped as too big and used with length 0, the rest arrive");
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        pkts[i] = dp_new_pkt(&dp, sizes[i], MAC_UNICAST);
        heads[i] = dp_tx_post(&dp, 0, NULL, pkts[i], sizes[i], NULL);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 8), 3);
    dp_check_pkt(&out[0], pkts[0], 100, "before the long packet");
    dp_check_pkt(&out[1], pkts[2], 1000, "exactly max_len");
    dp_check_pkt(&out[2], pkts[3], 60, "after the long packet");
    TU_CHECK_CMP(dp.da.max_len, <=, 1000);
    dp_release_pkts(out, 8);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        dp_expect_used(&dp.vq[TX(0)], heads[i], 0);
    }
    dp_expect_no_used(&dp.vq[TX(0)]);
    memset(&e, 0, sizeof e);
    dp_stats_add(&e, pkts[0], 100);
    dp_stats_add(&e, pkts[2], 1000);
    dp_stats_add(&e, pkts[3], 60);
    e.drops[VHOST_DROP_TOO_BIG] = 1;
    dp_check_stats(&dp, TX(0), &e);

    tu_log("max_len 0 is the engine's own limit: 1001 bytes arrive");
    dp.alloc.max_len = 0;
    heads[1] = dp_tx_post(&dp, 0, NULL, pkts[1], 1001, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 8), 1);
    dp_check_pkt(&out[0], pkts[1], 1001, "no max_len");
    dp_release_pkts(out, 8);
    dp_expect_used(&dp.vq[TX(0)], heads[1], 0);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        free(pkts[i]);
    }
    dp_roundtrip(&dp, 0, "the same queue pair");
    dp_finish(&dp);
}

/* Receive buffers too small. */

static void
test_too_big(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL & ~F(VIRTIO_NET_F_MRG_RXBUF));
    struct vhost_queue_stats e;
    struct dp dp;
    uint8_t *big, *small;
    int head;

    dp_start(&dp, "too-big", &cfg);
    big = dp_new_pkt(&dp, 1000, MAC_UNICAST);
    small = dp_new_pkt(&dp, 100, MAC_UNICAST);

    tu_log("without MRG_RXBUF, a packet larger than the chain stops the "
           "burst, as DPDK's: not taken, the chain stays for the next "
           "packet, counted in small_buf_stops");
    head = dp_rx_post(&dp, 0, 500, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, big, 1000, NULL), 0);
    dp_expect_no_used(&dp.vq[RX(0)]);
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[RX(0)]), 0);
    memset(&e, 0, sizeof e);
    dp_check_stats(&dp, RX(0), &e);
    TU_CHECK_EQ(dp_get_stats(&dp, RX(0)).small_buf_stops, 1);
    TU_CHECK_EQ(dp_enq1(&dp, 0, small, 100, NULL), 1);
    TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                       % dp.vq[RX(0)].size].id, head);
    dp_rx_expect(&dp, 0, small, 100, NULL, 1, "after a packet too big");
    dp_stats_add(&e, small, 100);
    dp_check_stats(&dp, RX(0), &e);

    tu_log("in one burst: small, too big, small: the burst stops at the "
           "big one; the next burst without it takes the last");
    {
        struct vhost_pkt in[3] = {
            { .data = small, .len = 100 },
            { .data = big, .len = 1000 },
            { .data = small, .len = 60 },
        };
        int h1 = dp_rx_post(&dp, 0, 500, NULL);
        int h2 = dp_rx_post(&dp, 0, 500, NULL);

        TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in, 3), 1);
        TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in + 1, 2), 0);
        TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in + 2, 1), 1);
        TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                           % dp.vq[RX(0)].size].id, h1);
        dp_rx_expect(&dp, 0, small, 100, NULL, 1, "before a packet too big");
        TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                           % dp.vq[RX(0)].size].id, h2);
        dp_rx_expect(&dp, 0, small, 60, NULL, 1, "after a packet too big");
        dp_expect_no_used(&dp.vq[RX(0)]);
        dp_stats_add(&e, small, 100);
        dp_stats_add(&e, small, 60);
        dp_check_stats(&dp, RX(0), &e);
        TU_CHECK_EQ(dp_get_stats(&dp, RX(0)).small_buf_stops, 3);
    }

    tu_log("header + packet exactly the chain's size fits");
    dp_rx_post(&dp, 0, dp.hdr_len + 1000, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, big, 1000, NULL), 1);
    dp_rx_expect(&dp, 0, big, 1000, NULL, 1, "exact fit");
    dp_stats_add(&e, big, 1000);

    tu_log("an empty ring takes nothing and counts nothing");
    TU_CHECK_EQ(dp_enq1(&dp, 0, small, 100, NULL), 0);
    dp_check_stats(&dp, RX(0), &e);
    {
        struct vhost_queue_stats s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.guest_notifications + s.notifications_suppressed, 4);
    }
    free(big);
    free(small);
    dp_finish(&dp);
}

static void
test_ring_full_mrg(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct dp dp;
    uint8_t *big;

    dp_start(&dp, "ring-full", &cfg);
    big = dp_new_pkt(&dp, 5000, MAC_UNICAST);

    tu_log("with MRG_RXBUF, a packet larger than all the buffers "
           "available takes none of them and is not counted as a drop");
    dp_rx_post(&dp, 0, 2048, NULL);
    dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, big, 5000, NULL), 0);
    dp_expect_no_used(&dp.vq[RX(0)]);
    memset(&e, 0, sizeof e);
    dp_check_stats(&dp, RX(0), &e);
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[RX(0)]), 0);

    tu_log("one more buffer and it goes, over all three");
    dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, big, 5000, NULL), 1);
    dp_rx_expect(&dp, 0, big, 5000, NULL, 3, "over three buffers");
    dp_stats_add(&e, big, 5000);
    dp_check_stats(&dp, RX(0), &e);
    free(big);
    dp_finish(&dp);
}

/* Offload metadata. */

static void
test_offload(void)
{
    static const struct {
        struct tfe_net_hdr hdr;
        size_t len;
        const char *what;
    } good[] = {
        { { TFE_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 34, 16, 0 }, 100,
          "NEEDS_CSUM at 34 + 16" },
        { { TFE_NET_HDR_F_NEEDS_CSUM, 0, 0, 0, 98, 0, 0 }, 100,
          "NEEDS_CSUM ending exactly at the end" },
        { { TFE_NET_HDR_F_NEEDS_CSUM, VHOST_GSO_TCPV4, 54, 1448, 34, 16, 0 },
          3000, "TSO over IPv4" },
        { { TFE_NET_HDR_F_NEEDS_CSUM, VHOST_GSO_TCPV6, 74, 1428, 54, 16, 0 },
          3000, "TSO over IPv6" },
        { { TFE_NET_HDR_F_DATA_VALID, 0, 0, 0, 0, 0, 0 }, 100,
          "DATA_VALID" },
    };
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[16];
    uint8_t *pkts[ARRAY_SIZE(good)];
    struct dp dp;

    dp_start(&dp, "offload", &cfg);
    tu_log("dequeue parses the header into 'ol'");
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        pkts[i] = dp_new_pkt(&dp, good[i].len, MAC_UNICAST);
        dp_tx_post(&dp, 0, &good[i].hdr, pkts[i], good[i].len, NULL);
    }
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 16), ARRAY_SIZE(good));
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        const struct tfe_net_hdr *h = &good[i].hdr;
        const struct vhost_offload *ol = &out[i].ol;

        tu_log("  %s", good[i].what);
        dp_check_pkt(&out[i], pkts[i], good[i].len, good[i].what);
        TU_CHECK_EQ(ol->flags, h->flags);
        TU_CHECK_EQ(ol->gso_type, h->gso_type);
        TU_CHECK_EQ(ol->hdr_len, h->hdr_len);
        TU_CHECK_EQ(ol->gso_size, h->gso_size);
        TU_CHECK_EQ(ol->csum_start, h->csum_start);
        TU_CHECK_EQ(ol->csum_offset, h->csum_offset);
    }
    dp_release_pkts(out, 16);
    {
        struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s), 0);
    }

    tu_log("enqueue builds the header from 'ol'");
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        const struct tfe_net_hdr *h = &good[i].hdr;
        struct vhost_offload ol = {
            .flags = h->flags, .gso_type = h->gso_type,
            .hdr_len = h->hdr_len, .gso_size = h->gso_size,
            .csum_start = h->csum_start, .csum_offset = h->csum_offset,
        };

        tu_log("  %s", good[i].what);
        dp_rx_post(&dp, 0, 4096, NULL);
        TU_CHECK_EQ(dp_enq1(&dp, 0, pkts[i], good[i].len, &ol), 1);
        dp_rx_expect(&dp, 0, pkts[i], good[i].len, &ol, 1, good[i].what);
        free(pkts[i]);
    }
    dp_finish(&dp);
}

const struct tu_test tu_datapath_buffer_tests[] = {
    { "dp-alloc", test_alloc, "pre-filled and allocated dequeue buffers" },
    { "dp-alloc-max-len", test_alloc_max_len,
      "TX: a packet longer than the allocator's max_len is dropped" },
    { "dp-too-big", test_too_big,
      "RX without MRG_RXBUF: chains too small" },
    { "dp-ring-full", test_ring_full_mrg,
      "RX with MRG_RXBUF: not enough buffers" },
    { "dp-offload", test_offload, "offload metadata both ways" },
};

const size_t tu_n_datapath_buffer_tests = ARRAY_SIZE(tu_datapath_buffer_tests);
