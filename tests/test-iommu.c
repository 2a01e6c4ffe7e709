/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path behind a vIOMMU (lib/virtq-iommu.h): a model frontend
 * whose driver addresses are I/O virtual addresses (test-frontend.h,
 * 'iova_offset'), on both ring layouts, through the data path fixture of
 * test-datapath.h.  Every guest address the engine sees is an IOVA, the
 * rings' too; the frontend answers the engine's misses with IOTLB_MSG
 * updates, or does not.
 */

#include <config.h>

#include <sched.h>
#include <time.h>
#include "test-datapath.h"
#include "vhost-iotlb.h"
#include "virtq-iommu.h"

/* Far from every guest physical address: an engine that used an IOVA as
 * a GPA would find no region there. */
#define IOVA_OFF (UINT64_C(1) << 40)

static const char *
layout_name(bool packed)
{
    return packed ? "packed" : "split";
}

static void
iommu_start(struct dp *dp, const char *name, bool packed, bool mrg)
{
    struct dp_cfg cfg = dp_cfg_features(mrg ? DP_FULL
                                        : DP_FULL & ~F(VIRTIO_NET_F_MRG_RXBUF));

    cfg.features |= F(VIRTIO_F_ACCESS_PLATFORM);
    cfg.packed = packed;
    cfg.iova_offset = IOVA_OFF;
    dp_start(dp, name, &cfg);
}

/* A page of its own in 'vq''s arena, for a buffer whose translation a
 * test takes away without touching any other chain's. */
static uint64_t
iommu_page(struct tfe_vq *vq)
{
    uint64_t gpa = dp_arena_buf(vq, 3 * PAGE);

    return DIV_ROUND_UP(gpa, PAGE) * PAGE;
}

/* Receives the next packet on 'qp''s RX vring and checks it is 'pkt'. */
static void
iommu_rx_expect(struct dp *dp, unsigned int qp, const uint8_t *pkt,
                size_t len, const char *what)
{
    uint8_t buf[4096];
    unsigned int n_bufs;
    size_t got;
    int error = tfe_vq_recv(&dp->vq[RX(qp)], buf, sizeof buf, &got, &n_bufs);

    if (error) {
        TU_FAIL("%s: receiving on vring %u: %s", what, RX(qp),
                tu_strerror(error));
    }
    TU_CHECK_EQ(got, dp->hdr_len + len);
    dp_check_bytes(buf + dp->hdr_len, pkt, len, what);
}

/* Sends a packet of 'len' bytes each way on 'qp', with 'opts' for the
 * guest's buffers, and checks both arrive intact. */
static void
iommu_roundtrip(struct dp *dp, unsigned int qp, size_t len,
                const struct tfe_buf_opts *opts, const char *what)
{
    struct vhost_pkt out;
    uint8_t *pkt = dp_new_pkt(dp, len, MAC_UNICAST);

    int head = dp_tx_post(dp, qp, NULL, pkt, len, opts);
    TU_CHECK_EQ(dp_dq(dp, qp, &out, 1), 1);
    dp_check_pkt(&out, pkt, len, what);
    dp_release_pkts(&out, 1);
    dp_expect_used(&dp->vq[TX(qp)], head, 0);

    dp_rx_post(dp, qp, 2048, opts);
    TU_CHECK_EQ(dp_enq1(dp, qp, pkt, len, NULL), 1);
    iommu_rx_expect(dp, qp, pkt, len, what);
    free(pkt);
}

/* Both layouts, with and without mergeable buffers, both queue pairs:
 * direct, chained and indirect buffers go through the IOTLB. */
static void
test_iommu_traffic(void)
{
    static const uint32_t split3[] = { 12, 40, 0 };

    for (int packed = 0; packed < 2; packed++) {
        for (int mrg = 0; mrg < 2; mrg++) {
            struct dp dp;

            tu_log("%s ring, mrg_rxbuf=%d", layout_name(packed), mrg);
            iommu_start(&dp, "iommu", packed, mrg);
            for (unsigned int qp = 0; qp < 2; qp++) {
                struct tfe_buf_opts chained = { .n_descs = 3,
                                                .split = split3 };
                struct tfe_buf_opts indirect = { .indirect = true,
                                                 .n_descs = 2 };

                iommu_roundtrip(&dp, qp, 60, NULL, "direct");
                iommu_roundtrip(&dp, qp, 1000, &chained, "chained");
                iommu_roundtrip(&dp, qp, 1400, &indirect, "indirect");
            }
            for (unsigned int v = 0; v < 4; v++) {
                struct vhost_queue_stats s = dp_get_stats(&dp, v);

                TU_CHECK(s.iotlb_hits >= 3);
                TU_CHECK_EQ(s.iotlb_misses, 0);
                TU_CHECK_EQ(s.iotlb_denied, 0);
                TU_CHECK_EQ(dp_total_drops(&s), 0);
            }
            dp_finish(&dp);
        }
    }
}

/* Reads the misses the engine sent for rings whose entry an invalidation
 * dropped (sent before it acknowledged the message that dropped it): the
 * updates that followed have answered them. */
static void
iommu_drain(struct dp *dp)
{
    uint64_t iova;
    uint8_t perm;

    while (!tfe_iotlb_recv_miss(dp->fe, &iova, &perm, 10)) {
        tu_log("  (ring miss for IOVA %#"PRIx64", answered)", iova);
    }
}

/* Takes the translation of the page(s) of [gpa, gpa + len), inside one
 * region, away.  An invalidation drops every entry it overlaps, whole (as
 * Linux's and DPDK's IOTLBs do), so the rest of the region is mapped
 * again around the hole, as a vIOMMU would answer its misses. */
static void
iommu_unmap(struct dp *dp, uint64_t gpa, uint64_t len)
{
    uint64_t first = gpa & ~(uint64_t) (PAGE - 1);
    uint64_t end = DIV_ROUND_UP(gpa + len, PAGE) * PAGE;
    const struct tfe_region *r = NULL;

    for (size_t i = 0; i < dp->fe->mem->n_regions; i++) {
        const struct tfe_region *ri = &dp->fe->mem->regions[i];

        if (first >= ri->gpa && end <= ri->gpa + ri->size) {
            r = ri;
        }
    }
    TU_CHECK(r != NULL);
    TU_CHECK_OK(tfe_iotlb_msg(dp->fe, VHOST_IOTLB_INVALIDATE,
                              first + IOVA_OFF, end - first, 0, 0));
    if (first > r->gpa) {
        TU_CHECK_OK(tfe_iotlb_map(dp->fe, r->gpa, first - r->gpa,
                                  VHOST_ACCESS_RW));
    }
    if (end < r->gpa + r->size) {
        TU_CHECK_OK(tfe_iotlb_map(dp->fe, end, r->gpa + r->size - end,
                                  VHOST_ACCESS_RW));
    }
    iommu_drain(dp);
}

/* ...and gives it back, one page an entry. */
static void
iommu_remap(struct dp *dp, uint64_t gpa, uint64_t len)
{
    uint64_t first = gpa & ~(uint64_t) (PAGE - 1);

    for (uint64_t p = first; p < gpa + len; p += PAGE) {
        TU_CHECK_OK(tfe_iotlb_map(dp->fe, p, PAGE, VHOST_ACCESS_RW));
    }
}

/* Expects the engine's next miss to be for 'iova' with 'perm'. */
static void
iommu_expect_miss(struct dp *dp, uint64_t iova, uint8_t perm)
{
    uint64_t got;
    uint8_t got_perm;

    TU_CHECK_OK(tfe_iotlb_recv_miss(dp->fe, &got, &got_perm, TU_TIMEOUT_MS));
    tu_log("  miss for IOVA %#"PRIx64", perm %u", got, got_perm);
    TU_CHECK_EQ(got, iova);
    TU_CHECK_EQ(got_perm, perm);
}

static void
iommu_expect_no_miss(struct dp *dp)
{
    uint64_t got;
    uint8_t perm;

    TU_CHECK_EQ(tfe_iotlb_recv_miss(dp->fe, &got, &perm, 50), -EAGAIN);
}

/* A miss is not a drop: the burst stops at the chain whose buffer has no
 * translation, asks the frontend once, and takes the chain once the
 * update comes.  Both directions, both layouts. */
static void
test_iommu_miss(void)
{
    for (int packed = 0; packed < 2; packed++) {
        struct vhost_queue_stats s;
        struct vhost_pkt out[4];
        struct dp dp;

        tu_log("%s ring", layout_name(packed));
        iommu_start(&dp, "iommu-miss", packed, true);

        tu_log("TX: the second packet's buffer is unmapped");
        uint8_t *p0 = dp_new_pkt(&dp, 100, MAC_UNICAST);
        uint8_t *p1 = dp_new_pkt(&dp, 200, MAC_UNICAST);
        uint64_t gpa = iommu_page(&dp.vq[TX(0)]);
        struct tfe_buf_opts at = { .gpa = gpa };
        dp_tx_post(&dp, 0, NULL, p0, 100, NULL);
        dp_tx_post(&dp, 0, NULL, p1, 200, &at);
        iommu_unmap(&dp, gpa, PAGE);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], p0, 100, "before the miss");
        dp_release_pkts(out, 4);
        iommu_expect_miss(&dp, gpa + IOVA_OFF, VHOST_ACCESS_RO);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
        iommu_expect_no_miss(&dp);
        s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(s.iotlb_misses, 1);
        TU_CHECK_EQ(s.iotlb_waits, 2);
        TU_CHECK_EQ(dp_total_drops(&s), 0);

        tu_log("the other queue pair is not held up");
        iommu_roundtrip(&dp, 1, 80, NULL, "queue pair 1");

        tu_log("the update comes: the chain is taken");
        iommu_remap(&dp, gpa, PAGE);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], p1, 200, "after the update");
        dp_release_pkts(out, 4);

        tu_log("RX: the buffer is unmapped: the packets are held, in "
               "order, not refused");
        gpa = iommu_page(&dp.vq[RX(0)]);
        at.gpa = gpa;
        dp_rx_post(&dp, 0, 2048, &at);
        dp_rx_post(&dp, 0, 2048, NULL);
        iommu_unmap(&dp, gpa, 2048);
        TU_CHECK_EQ(dp_enq1(&dp, 0, p0, 100, NULL), 1);
        iommu_expect_miss(&dp, gpa + IOVA_OFF, VHOST_ACCESS_WO);
        TU_CHECK_EQ(dp_enq1(&dp, 0, p1, 200, NULL), 1);
        iommu_expect_no_miss(&dp);
        TU_CHECK_EQ(tfe_vq_n_used(&dp.vq[RX(0)]), 0);
        s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.iotlb_held, 2);
        TU_CHECK_EQ(s.iotlb_misses, 1);
        TU_CHECK_EQ(dp_total_drops(&s), 0);
        tu_log("the update comes: the next poll of the queue pair places "
               "them");
        iommu_remap(&dp, gpa, 2048);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
        iommu_rx_expect(&dp, 0, p0, 100, "the first held packet");
        iommu_rx_expect(&dp, 0, p1, 200, "the second held packet");
        s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.packets, 2);
        TU_CHECK_EQ(dp_total_drops(&s), 0);

        free(p0);
        free(p1);
        dp_finish(&dp);
    }
}

/* Enqueues the 'n' packets of 100, 101, ... bytes in 'pkts' on queue
 * pair 0 of 'dp', in one burst, and checks that it took them all. */
static void
iommu_enq(struct dp *dp, uint8_t *const *pkts, unsigned int n)
{
    struct vhost_pkt p[32];

    TU_CHECK(n <= ARRAY_SIZE(p));
    for (unsigned int i = 0; i < n; i++) {
        p[i] = (struct vhost_pkt) {
            .data = pkts[i], .len = 100 + i, .size = 100 + i,
        };
    }
    TU_CHECK_EQ(vhost_enqueue_burst(dp->port, 0, p, n), n);
}

/* Ask ahead (virtq-iommu.h): a guest that maps each buffer afresh as it
 * posts it (Linux with iommu.strict=1) has every chain miss.  The burst
 * that misses at the first asks for the next chains' pages too, in ring
 * order, so one round trip answers them all; a later burst that meets a
 * page asked for ahead waits for that answer rather than asking again.
 * Both layouts, both directions. */
#define AHEAD_N 8

static void
test_iommu_ahead(void)
{
    for (int packed = 0; packed < 2; packed++) {
        uint64_t gpa[AHEAD_N];
        uint8_t *pkts[AHEAD_N];
        struct vhost_queue_stats s;
        struct vhost_pkt out[AHEAD_N];
        struct dp dp;

        tu_log("%s ring", layout_name(packed));
        iommu_start(&dp, "iommu-ahead", packed, true);

        tu_log("RX: %d buffers, each on a page with no entry", AHEAD_N);
        for (int i = 0; i < AHEAD_N; i++) {
            gpa[i] = iommu_page(&dp.vq[RX(0)]);
            pkts[i] = dp_new_pkt(&dp, 100 + i, MAC_UNICAST);
        }
        iommu_unmap(&dp, gpa[0], gpa[AHEAD_N - 1] + PAGE - gpa[0]);
        for (int i = 0; i < AHEAD_N; i++) {
            struct tfe_buf_opts at = { .gpa = gpa[i] };
            dp_rx_post(&dp, 0, 2048, &at);
        }

        tu_log("a burst of %d packets: the first buffer's miss, and the "
               "next %d chains' pages asked for ahead, at once", AHEAD_N,
               AHEAD_N - 1);
        iommu_enq(&dp, pkts, AHEAD_N);
        for (int i = 0; i < AHEAD_N; i++) {
            iommu_expect_miss(&dp, gpa[i] + IOVA_OFF, VHOST_ACCESS_WO);
        }
        iommu_expect_no_miss(&dp);
        s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.iotlb_misses, 1);
        TU_CHECK_EQ(s.iotlb_misses_ahead, AHEAD_N - 1);
        TU_CHECK_EQ(s.iotlb_held, AHEAD_N);

        tu_log("they are held; nothing is asked again");
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 0);
        iommu_expect_no_miss(&dp);

        tu_log("the first answer alone: the first packet goes, the second "
               "waits for the answer on its way, unasked");
        iommu_remap(&dp, gpa[0], PAGE);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 0);
        iommu_rx_expect(&dp, 0, pkts[0], 100, "the first held packet");
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 0);
        iommu_expect_no_miss(&dp);
        s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.iotlb_misses, 1);
        TU_CHECK_EQ(s.iotlb_misses_ahead, AHEAD_N - 1);
        TU_CHECK(tfe_vq_n_used(&dp.vq[RX(0)]) == 0);

        tu_log("the other answers: every held packet goes, in order");
        for (int i = 1; i < AHEAD_N; i++) {
            iommu_remap(&dp, gpa[i], PAGE);
        }
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 0);
        for (int i = 1; i < AHEAD_N; i++) {
            iommu_rx_expect(&dp, 0, pkts[i], 100 + i, "a held packet");
        }
        iommu_expect_no_miss(&dp);
        s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.packets, AHEAD_N);
        TU_CHECK_EQ(s.iotlb_held, AHEAD_N);
        TU_CHECK_EQ(dp_total_drops(&s), 0);

        tu_log("a packet alone asks for the next %d buffers too: after a "
               "lazy guest's flush every buffer misses again",
               AHEAD_N - 1);
        for (int i = 0; i < AHEAD_N; i++) {
            gpa[i] = iommu_page(&dp.vq[RX(0)]);
        }
        iommu_unmap(&dp, gpa[0], gpa[AHEAD_N - 1] + PAGE - gpa[0]);
        for (int i = 0; i < AHEAD_N; i++) {
            struct tfe_buf_opts at = { .gpa = gpa[i] };
            dp_rx_post(&dp, 0, 2048, &at);
        }
        TU_CHECK_EQ(dp_enq1(&dp, 0, pkts[0], 100, NULL), 1);
        for (int i = 0; i < AHEAD_N; i++) {
            iommu_expect_miss(&dp, gpa[i] + IOVA_OFF, VHOST_ACCESS_WO);
        }
        iommu_expect_no_miss(&dp);
        iommu_remap(&dp, gpa[0], gpa[AHEAD_N - 1] + PAGE - gpa[0]);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 1), 0);
        iommu_rx_expect(&dp, 0, pkts[0], 100, "the packet alone");
        s = dp_get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.iotlb_misses, 2);
        TU_CHECK_EQ(s.iotlb_misses_ahead, 2 * (AHEAD_N - 1));

        tu_log("TX: %d packets, each on a page with no entry", AHEAD_N);
        for (int i = 0; i < AHEAD_N; i++) {
            gpa[i] = iommu_page(&dp.vq[TX(0)]);
        }
        iommu_unmap(&dp, gpa[0], gpa[AHEAD_N - 1] + PAGE - gpa[0]);
        for (int i = 0; i < AHEAD_N; i++) {
            struct tfe_buf_opts at = { .gpa = gpa[i] };
            dp_tx_post(&dp, 0, NULL, pkts[i], 100 + i, &at);
        }
        TU_CHECK_EQ(dp_dq(&dp, 0, out, AHEAD_N), 0);
        for (int i = 0; i < AHEAD_N; i++) {
            iommu_expect_miss(&dp, gpa[i] + IOVA_OFF, VHOST_ACCESS_RO);
        }
        iommu_expect_no_miss(&dp);
        for (int i = 0; i < AHEAD_N; i++) {
            iommu_remap(&dp, gpa[i], PAGE);
        }
        TU_CHECK_EQ(dp_dq(&dp, 0, out, AHEAD_N), AHEAD_N);
        for (int i = 0; i < AHEAD_N; i++) {
            dp_check_pkt(&out[i], pkts[i], 100 + i, "after the answers");
        }
        dp_release_pkts(out, AHEAD_N);
        iommu_expect_no_miss(&dp);
        s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(s.iotlb_misses, 1);
        TU_CHECK_EQ(s.iotlb_misses_ahead, AHEAD_N - 1);
        TU_CHECK_EQ(dp_total_drops(&s), 0);

        for (int i = 0; i < AHEAD_N; i++) {
            free(pkts[i]);
        }
        dp_finish(&dp);
    }
}

/* Ask ahead on hostile rings: the look-ahead reads what the guest wrote,
 * checks it as the walk does, never reads an indirect table, and stops
 * at its bounds (VIRTQ_IOMMU_AHEAD_WORK reads and lookups,
 * VIRTQ_IOMMU_AHEAD_PAGES pages) whatever the ring holds.  The buffers'
 * IOVAs are in a hole no update will ever fill. */
static void
test_iommu_ahead_hostile(void)
{
    const uint64_t hole = UINT64_C(1) << 44;
    uint8_t *pkts[16];
    struct dp dp;

    tu_log("split: garbage, then a loop that eats the work");
    iommu_start(&dp, "iommu-ahead-hostile", false, true);
    struct tfe_vq *vq = &dp.vq[RX(0)];
    uint16_t loop[8], self;
    dp_post_one(vq, hole, 2048, TFE_DESC_F_WRITE);
    tfe_vq_push_avail(vq, vq->size + 7);                /* Out of range. */
    dp_post_one(vq, hole + 100 * PAGE, 64, 0);          /* Read-only. */
    dp_post_indirect(vq, hole + 101 * PAGE, 17);        /* Bad length. */
    dp_post_indirect(vq, hole + 102 * PAGE, 64);        /* Table: asked. */
    dp_take_chain(vq, loop, ARRAY_SIZE(loop));
    for (size_t k = 0; k < ARRAY_SIZE(loop); k++) {
        dp_set_desc(vq, loop[k], hole + (2 + k) * PAGE, 2048,
                    TFE_DESC_F_WRITE | TFE_DESC_F_NEXT,
                    loop[(k + 1) % ARRAY_SIZE(loop)]);
    }
    tfe_vq_push_avail(vq, loop[0]);
    dp_take_chain(vq, &self, 1);
    dp_set_desc(vq, self, hole + PAGE, 2048,
                TFE_DESC_F_WRITE | TFE_DESC_F_NEXT, self);
    tfe_vq_push_avail(vq, self);
    dp_post_one(vq, hole + 200 * PAGE, 2048, TFE_DESC_F_WRITE);

    for (int i = 0; i < 16; i++) {
        pkts[i] = dp_new_pkt(&dp, 100 + i, MAC_UNICAST);
    }
    iommu_enq(&dp, pkts, 16);
    iommu_expect_miss(&dp, hole, VHOST_ACCESS_WO);
    iommu_expect_miss(&dp, hole + 102 * PAGE, VHOST_ACCESS_RO);
    for (unsigned int k = 0; k < ARRAY_SIZE(loop); k++) {
        iommu_expect_miss(&dp, hole + (2 + k) * PAGE, VHOST_ACCESS_WO);
    }
    tu_log("  the loop spent the work: nothing after it is read");
    iommu_expect_no_miss(&dp);
    struct vhost_queue_stats s = dp_get_stats(&dp, RX(0));
    TU_CHECK_EQ(s.iotlb_misses, 1);
    TU_CHECK_EQ(s.iotlb_misses_ahead, 1 + ARRAY_SIZE(loop));
    TU_CHECK_EQ(dp_total_drops(&s), 0);
    TU_CHECK(!s.broken);
    iommu_roundtrip(&dp, 1, 100, NULL, "the other queue pair");
    dp_finish(&dp);

    tu_log("packed: one chain the length of the ring, a page a slot");
    iommu_start(&dp, "iommu-ahead-hostile", true, true);
    vq = &dp.vq[RX(0)];
    tfe_vq_pwrite(vq, 0, hole, 2048, 0,
                  TFE_DESC_F_WRITE | tfe_vq_pavail(vq, 0));
    for (unsigned int k = 1; k < vq->size; k++) {
        tfe_vq_pwrite(vq, k, hole + k * PAGE, 2048, 1,
                      TFE_DESC_F_WRITE | TFE_DESC_F_NEXT
                      | tfe_vq_pavail(vq, k));
    }
    tfe_vq_pclaim(vq, 0, 1);
    tfe_vq_pclaim(vq, 1, vq->size - 1);
    iommu_enq(&dp, pkts, 16);
    iommu_expect_miss(&dp, hole, VHOST_ACCESS_WO);
    for (unsigned int k = 1; k <= VIRTQ_IOMMU_AHEAD_PAGES; k++) {
        iommu_expect_miss(&dp, hole + k * PAGE, VHOST_ACCESS_WO);
    }
    tu_log("  %d pages, no more", VIRTQ_IOMMU_AHEAD_PAGES);
    iommu_expect_no_miss(&dp);
    s = dp_get_stats(&dp, RX(0));
    TU_CHECK_EQ(s.iotlb_misses, 1);
    TU_CHECK_EQ(s.iotlb_misses_ahead, VIRTQ_IOMMU_AHEAD_PAGES);
    TU_CHECK_EQ(dp_total_drops(&s), 0);
    iommu_roundtrip(&dp, 1, 100, NULL, "the other queue pair");
    for (int i = 0; i < 16; i++) {
        free(pkts[i]);
    }
    dp_finish(&dp);
}

/* A buffer and an indirect table that cross IOTLB entries (one per page)
 * are taken piecewise, the table copied. */
static void
test_iommu_cross(void)
{
    for (int packed = 0; packed < 2; packed++) {
        struct dp dp;

        tu_log("%s ring", layout_name(packed));
        iommu_start(&dp, "iommu-cross", packed, true);
        uint64_t page = iommu_page(&dp.vq[TX(0)]);
        iommu_unmap(&dp, page, 2 * PAGE);
        iommu_remap(&dp, page, 2 * PAGE);

        tu_log("a 1400-byte packet across two entries");
        struct tfe_buf_opts across = { .gpa = page + PAGE - 700 };
        iommu_roundtrip(&dp, 0, 1400, &across, "across entries");

        tu_log("an indirect table across two entries");
        struct tfe_buf_opts table = {
            .indirect = true, .indirect_gpa = page + PAGE - 16, .n_descs = 3,
        };
        iommu_roundtrip(&dp, 0, 300, &table, "table across entries");
        struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s), 0);
        TU_CHECK(s.iotlb_hits >= 4);
        dp_finish(&dp);
    }
}

/* §2.6.4 and vhost-user "IOTLB message": the access a buffer needs must
 * be in its entry's permissions.  A device-writable buffer in a read-only
 * mapping is dropped and counted; the queue goes on. */
static void
test_iommu_denied(void)
{
    struct dp dp;

    iommu_start(&dp, "iommu-denied", false, false);
    uint64_t gpa = iommu_page(&dp.vq[RX(0)]);
    struct tfe_buf_opts at = { .gpa = gpa };
    int head = dp_rx_post(&dp, 0, 2048, &at);
    iommu_unmap(&dp, gpa, PAGE);
    TU_CHECK_OK(tfe_iotlb_map(dp.fe, gpa, PAGE, VHOST_ACCESS_RO));

    uint8_t *pkt = dp_new_pkt(&dp, 100, MAC_UNICAST);
    TU_CHECK_EQ(dp_enq1(&dp, 0, pkt, 100, NULL), 0);
    dp_expect_used(&dp.vq[RX(0)], head, 0);
    struct vhost_queue_stats s = dp_get_stats(&dp, RX(0));
    TU_CHECK_EQ(s.iotlb_denied, 1);
    TU_CHECK_EQ(s.drops[VHOST_DROP_BAD_ADDR], 1);
    iommu_expect_no_miss(&dp);
    free(pkt);
    iommu_roundtrip(&dp, 0, 100, NULL, "after the denied chain");
    dp_finish(&dp);
}

/* True if [gpa, gpa + len) lies in one of vring 'index''s three parts. */
static bool
iommu_in_ring(struct dp *dp, unsigned int index, uint64_t gpa, uint64_t len)
{
    const struct tfe_vring *vr = &dp->fe->vrings[index];
    const struct {
        const void *va;
        size_t size;
    } parts[3] = {
        { vr->desc, tfe_vring_desc_size(vr->size) },
        { vr->avail, tfe_vring_avail_size(vr->size) },
        { vr->used, tfe_vring_used_size(vr->size) },
    };

    for (int i = 0; i < 3; i++) {
        uint64_t start = tfe_mem_va_to_gpa(dp->fe->mem, parts[i].va);

        if (gpa >= start && gpa + len <= start + parts[i].size) {
            return true;
        }
    }
    return false;
}

static uint64_t
iommu_misses_ahead(struct dp *dp, unsigned int vring)
{
    struct vhost_queue_stats st;

    TU_CHECK_OK(vhost_port_get_queue_stats(dp->port, vring, &st));
    return st.iotlb_misses_ahead;
}

/* The ring's own translation invalidated: the queue stays ready (a lazy
 * guest flushes its whole IOVA space every few milliseconds, and the
 * device must not flap), its bursts do nothing, and the engine asks for
 * the translation once: the page it missed first, and at the first burst
 * the pages of the ring's other parts, ahead, so that one round trip
 * brings the whole ring back rather than one per part.  The ring takes up
 * again when the updates come, each for just a page asked for. */
static void
test_iommu_ring(void)
{
    for (int packed = 0; packed < 2; packed++) {
        struct dp dp;

        tu_log("%s ring", layout_name(packed));
        iommu_start(&dp, "iommu-ring", packed, true);
        uint64_t desc = tfe_mem_va_to_gpa(dp.fe->mem,
                                          dp.fe->vrings[TX(1)].desc);
        /* Vring 3 has region 3 to itself: its one entry goes. */
        unsigned int readies = tu_events_count(&dp.ev, TU_EV_READY);
        unsigned int gones = tu_events_count(&dp.ev, TU_EV_GONE);
        TU_CHECK_OK(tfe_iotlb_msg(dp.fe, VHOST_IOTLB_INVALIDATE,
                                  desc + IOVA_OFF, 1, 0, 0));
        iommu_expect_miss(&dp, desc + IOVA_OFF,
                          packed ? VHOST_ACCESS_RW : VHOST_ACCESS_RO);
        TU_CHECK(tu_queue_info(dp.port, TX(1)).ready);
        TU_CHECK(tu_port_info(dp.port).ready);

        uint8_t *pkt = dp_new_pkt(&dp, 64, MAC_UNICAST);
        struct vhost_pkt out;
        int head = dp_tx_post(&dp, 1, NULL, pkt, 64, NULL);
        uint64_t pages[16] = { desc & ~(uint64_t) (PAGE - 1) };
        uint8_t perms[16] = { packed ? VHOST_ACCESS_RW : VHOST_ACCESS_RO };
        size_t n_pages = 1;
        uint64_t ahead0 = iommu_misses_ahead(&dp, TX(1));
        TU_CHECK_EQ(dp_dq(&dp, 1, &out, 1), 0);
        uint64_t iova;
        uint8_t perm;
        while (n_pages < ARRAY_SIZE(pages)
               && !tfe_iotlb_recv_miss(dp.fe, &iova, &perm, 100)) {
            tu_log("  asked ahead: IOVA %#"PRIx64", perm %u", iova, perm);
            TU_CHECK(iommu_in_ring(&dp, TX(1), iova - IOVA_OFF, 1));
            uint64_t page = (iova - IOVA_OFF) / PAGE * PAGE;
            for (size_t i = 0; i < n_pages; i++) {
                TU_CHECK(pages[i] != page || perms[i] != perm);
            }
            pages[n_pages] = page;
            perms[n_pages++] = perm;
        }
        /* The device area is written, the descriptors read (a split
         * ring's): another access, asked for even on the same page. */
        TU_CHECK_CMP(n_pages, >=, 2);
        TU_CHECK_EQ(iommu_misses_ahead(&dp, TX(1)) - ahead0, n_pages - 1);
        for (int i = 0; i < 2; i++) {
            TU_CHECK_EQ(dp_dq(&dp, 1, &out, 1), 0);
        }
        iommu_expect_no_miss(&dp);
        iommu_roundtrip(&dp, 0, 64, NULL, "queue pair 0 meanwhile");

        tu_log("  the pages asked for, and nothing else, come back");
        for (size_t i = 0; i < n_pages; i++) {
            TU_CHECK_OK(tfe_iotlb_map(dp.fe, pages[i], PAGE,
                                      VHOST_ACCESS_RW));
        }
        unsigned int got = dp_dq(&dp, 1, &out, 1);
        if (!got) {
            /* The ring is back; the packet's buffer, in the same region,
             * is not. */
            TU_CHECK_OK(tfe_iotlb_recv_miss(dp.fe, &iova, &perm,
                                            TU_TIMEOUT_MS));
            tu_log("  then a miss for the buffer: IOVA %#"PRIx64, iova);
            TU_CHECK(!iommu_in_ring(&dp, TX(1), iova - IOVA_OFF, 1));
            TU_CHECK_OK(tfe_iotlb_map(dp.fe, dp.fe->mem->regions[3].gpa,
                                      dp.fe->mem->regions[3].size,
                                      VHOST_ACCESS_RW));
            got = dp_dq(&dp, 1, &out, 1);
        }
        TU_CHECK_EQ(got, 1);
        dp_check_pkt(&out, pkt, 64, "after the update");
        dp_release_pkts(&out, 1);
        dp_expect_used(&dp.vq[TX(1)], head, 0);
        free(pkt);
        tu_log("  the device never went down");
        TU_CHECK_EQ(tu_events_count(&dp.ev, TU_EV_READY), readies);
        TU_CHECK_EQ(tu_events_count(&dp.ev, TU_EV_GONE), gones);
        tu_log("  no part of the ring was asked for twice");
        iommu_expect_no_miss(&dp);
        iommu_roundtrip(&dp, 1, 64, NULL, "after the update");
        dp_finish(&dp);
    }
}

/* Frontend messages the IOTLB refuses, and a frontend that never answers:
 * each refused and counted, and the data path unharmed. */
static void
test_iommu_reject(void)
{
    static const struct {
        const char *what;
        uint8_t type, perm;
        uint64_t iova, size;
    } bad[] = {
        { "IOVA + size wraps", VHOST_IOTLB_UPDATE, VHOST_ACCESS_RW,
          UINT64_MAX - 4095, 2 * PAGE },
        { "huge size", VHOST_IOTLB_UPDATE, VHOST_ACCESS_RW, 1, UINT64_MAX },
        { "zero size", VHOST_IOTLB_UPDATE, VHOST_ACCESS_RW, 0, 0 },
        { "no permission", VHOST_IOTLB_UPDATE, 0, 0, PAGE },
        { "unknown permission", VHOST_IOTLB_UPDATE, 4, 0, PAGE },
        { "a miss, backwards", VHOST_IOTLB_MISS, VHOST_ACCESS_RW, 0, PAGE },
        { "access fail", VHOST_IOTLB_ACCESS_FAIL, VHOST_ACCESS_RW, 0, PAGE },
        { "unknown type", 99, VHOST_ACCESS_RW, 0, PAGE },
    };
    struct vhost_port_counters c;
    struct dp dp;

    tu_log("without VIRTIO_F_IOMMU_PLATFORM: refused");
    dp_start(&dp, "iommu-reject", &(struct dp_cfg) { .features = DP_FULL });
    TU_CHECK_EQ(tfe_iotlb_msg(dp.fe, VHOST_IOTLB_UPDATE, 0, PAGE, 0,
                              VHOST_ACCESS_RW), TFE_NACK);
    TU_CHECK_EQ(tu_port_info(dp.port).counters.iotlb_rejected, 1);
    dp_roundtrip(&dp, 0, "after an IOTLB message it did not negotiate");
    dp_finish(&dp);

    iommu_start(&dp, "iommu-reject", false, true);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("  %s: refused", bad[i].what);
        TU_CHECK_EQ(tfe_iotlb_msg(dp.fe, bad[i].type, bad[i].iova,
                                  bad[i].size, 0x1000, bad[i].perm),
                    TFE_NACK);
    }
    tu_log("an invalidation whose range wraps: to the end of the space");
    TU_CHECK_OK(tfe_iotlb_msg(dp.fe, VHOST_IOTLB_INVALIDATE,
                              UINT64_MAX - 4095, 2 * PAGE, 0, 0));
    c = tu_port_info(dp.port).counters;
    TU_CHECK_EQ(c.iotlb_rejected, ARRAY_SIZE(bad));
    TU_CHECK(c.iotlb_updates >= 4);
    iommu_roundtrip(&dp, 0, 100, NULL, "after the refusals");

    tu_log("a miss nobody answers stalls its queue alone, asked once a "
           "second");
    uint64_t gpa = iommu_page(&dp.vq[TX(0)]);
    struct tfe_buf_opts at = { .gpa = gpa };
    uint8_t *pkt = dp_new_pkt(&dp, 100, MAC_UNICAST);
    struct vhost_pkt out;
    dp_tx_post(&dp, 0, NULL, pkt, 100, &at);
    iommu_unmap(&dp, gpa, 100);
    long long int start = tu_now_ms();
    unsigned int bursts = 0;
    while (tu_now_ms() - start < 300) {
        TU_CHECK_EQ(dp_dq(&dp, 0, &out, 1), 0);
        bursts++;
        tu_sleep_ms(1);
    }
    iommu_expect_miss(&dp, gpa + IOVA_OFF, VHOST_ACCESS_RO);
    iommu_expect_no_miss(&dp);
    struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
    TU_CHECK_EQ(s.iotlb_misses, 1);
    TU_CHECK_EQ(s.iotlb_waits, bursts);
    iommu_roundtrip(&dp, 1, 100, NULL, "the other queue pair");
    tu_sleep_ms(VIRTQ_IOMMU_MISS_RETRY_MS + 100);
    TU_CHECK_EQ(dp_dq(&dp, 0, &out, 1), 0);
    iommu_expect_miss(&dp, gpa + IOVA_OFF, VHOST_ACCESS_RO);
    iommu_remap(&dp, gpa, 100);
    TU_CHECK_EQ(dp_dq(&dp, 0, &out, 1), 1);
    dp_check_pkt(&out, pkt, 100, "answered at last");
    dp_release_pkts(&out, 1);
    free(pkt);
    dp_finish(&dp);
}

/* Invalidations and updates racing bursts: the control plane changes the
 * IOTLB only with every queue's lock held, so a burst never uses a
 * translation an invalidation removed (the sanitizer builds watch the
 * accesses); every packet arrives intact. */
struct iommu_race {
    struct dp *dp;
    atomic_bool stop;
    unsigned int flips;
};

static void *
iommu_race_main(void *race_)
{
    struct iommu_race *race = race_;
    struct tfe *fe = race->dp->fe;

    const struct tfe_vq *vq = &race->dp->vq[TX(0)];

    while (!atomic_load(&race->stop)) {
        /* The TX arena: take it away and give it back. */
        int error = tfe_iotlb_msg(fe, VHOST_IOTLB_INVALIDATE,
                                  vq->arena_gpa + IOVA_OFF, vq->arena_size,
                                  0, 0);
        if (!error) {
            /* Long enough for bursts to meet the hole. */
            tu_sleep_ms(1);
            error = tfe_iotlb_map(fe, vq->arena_gpa, vq->arena_size,
                                  VHOST_ACCESS_RW);
        }
        if (error) {
            tu_log("race thread: %s", tu_strerror(error));
            break;
        }
        __atomic_fetch_add(&race->flips, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void
test_iommu_race(void)
{
    struct iommu_race race = { .flips = 0 };
    struct dp dp;
    pthread_t thread;

    iommu_start(&dp, "iommu-race", false, true);
    /* The arena an entry of its own, so that the thread's invalidations
     * leave the rings alone. */
    iommu_unmap(&dp, dp.vq[TX(0)].arena_gpa, dp.vq[TX(0)].arena_size);
    TU_CHECK_OK(tfe_iotlb_map(dp.fe, dp.vq[TX(0)].arena_gpa,
                              dp.vq[TX(0)].arena_size, VHOST_ACCESS_RW));
    race.dp = &dp;
    atomic_init(&race.stop, false);
    TU_CHECK_OK(pthread_create(&thread, NULL, iommu_race_main, &race));
    unsigned int got = 0, tries = 0;
    long long int start = tu_now_ms();
    while (!__atomic_load_n(&race.flips, __ATOMIC_RELAXED)) {
        TU_CHECK(tu_now_ms() - start < TU_TIMEOUT_MS);
        tu_sleep_ms(1);
    }
    /* Enough packets, and enough flips under them, however the two
     * threads share the CPUs. */
    for (unsigned int i = 0; i < 3000 || race.flips < 50; i++) {
        TU_CHECK(tu_now_ms() - start < 60000);
        uint8_t *pkt = dp_new_pkt(&dp, 64 + i % 1000, MAC_UNICAST);
        struct vhost_pkt out;

        int head = dp_tx_post(&dp, 0, NULL, pkt, 64 + i % 1000, NULL);
        long long int t0 = tu_now_ms();
        while (dp_dq(&dp, 0, &out, 1) != 1) {
            TU_CHECK(tu_now_ms() - t0 < TU_TIMEOUT_MS);
            tries++;
            sched_yield();
        }
        dp_expect_used(&dp.vq[TX(0)], head, 0);
        dp_check_pkt(&out, pkt, 64 + i % 1000, "under invalidations");
        dp_release_pkts(&out, 1);
        free(pkt);
        got++;
    }
    atomic_store(&race.stop, true);
    pthread_join(thread, NULL);
    tu_log("%u packets, %u invalidate/update pairs, %u empty bursts", got,
           race.flips, tries);
    TU_CHECK(race.flips > 10);
    TU_CHECK(tries > 0);
    struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
    TU_CHECK_EQ(dp_total_drops(&s), 0);
    dp_finish(&dp);
}

/* A second frontend on a port whose first one used its queues: a reset
 * leaves the queues allocated, the new frontend's SET_FEATURES hands every
 * one of them the IOTLB, and an IOTLB message that comes before any vring
 * message must still move them all to the new table (the old one is
 * freed).  ASan saw the queue translate its ring through the freed table
 * when only the queues below 'n_vqs' (0 after the reset) were moved. */
static void
test_iommu_reconnect(void)
{
    struct dp dp;

    iommu_start(&dp, "iommu-reconnect", false, true);
    iommu_roundtrip(&dp, 0, 64, NULL, "the first frontend");
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_destroy(&dp.vq[q]);
    }
    tfe_destroy(dp.fe);
    TU_CHECK(tu_wait_port(dp.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));

    tu_log("a second frontend: IOTLB messages before any vring message");
    dp.fe = tfe_create(dp_mem_create());
    TU_CHECK_OK(tfe_connect(dp.fe, dp.path));
    TU_CHECK(tu_wait_port(dp.port, tu_port_connected, NULL, TU_TIMEOUT_MS));
    struct tfe_setup setup = {
        .features_mask = DP_FULL | F(VIRTIO_F_ACCESS_PLATFORM),
    };
    TU_CHECK_OK(tfe_negotiate(dp.fe, &setup));
    uint64_t uva = tfe_va_to_uva(dp.fe->mem->regions[0].va);
    TU_CHECK_OK(tfe_iotlb_msg(dp.fe, VHOST_IOTLB_UPDATE, IOVA_OFF, PAGE, uva,
                              VHOST_ACCESS_RW));
    TU_CHECK_OK(tfe_iotlb_msg(dp.fe, VHOST_IOTLB_INVALIDATE, IOVA_OFF, PAGE,
                              0, 0));

    dp.fe->iova_offset = IOVA_OFF;
    TU_CHECK_OK(tfe_set_backend_req_fd(dp.fe));
    TU_CHECK_OK(tfe_set_mem_table(dp.fe));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vring_setup(dp.fe, q, 256));
        TU_CHECK_OK(tfe_set_vring_enable(dp.fe, q, true));
    }
    TU_CHECK_OK(tfe_iotlb_map_mem(dp.fe, VHOST_ACCESS_RW));
    TU_CHECK(tu_wait_port(dp.port, tu_port_ready, NULL, TU_TIMEOUT_MS));
    iommu_drain(&dp);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&dp.vq[q], dp.fe, q, q % 2, DP_ARENA_SIZE));
    }
    iommu_roundtrip(&dp, 0, 64, NULL, "the second frontend");
    iommu_roundtrip(&dp, 1, 64, NULL, "the second frontend");
    dp_finish(&dp);
}

/* The benchmark (`make bench-iommu`): not part of the testsuite, and it
 * asserts nothing on time. */

#define IOMMU_BENCH_REPS 2000
#define IOMMU_BENCH_BURST 32

static uint64_t
iommu_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

static int
iommu_cmp_u64(const void *a_, const void *b_)
{
    uint64_t a = *(const uint64_t *) a_, b = *(const uint64_t *) b_;

    return a < b ? -1 : a > b;
}

/* Median cycles per packet of a burst of IOMMU_BENCH_BURST 64-byte packets
 * on queue pair 0 of 'dp', guest TX (dequeue) or RX (enqueue). */
static double
iommu_bench_burst(struct dp *dp, bool tx)
{
    static uint64_t cycles[IOMMU_BENCH_REPS];
    uint8_t *pkt = dp_new_pkt(dp, 64, MAC_UNICAST);
    struct vhost_pkt p[IOMMU_BENCH_BURST];
    struct tfe_vq *vq = &dp->vq[tx ? TX(0) : RX(0)];
    struct tfe_used_elem e;

    for (int r = 0; r < IOMMU_BENCH_REPS; r++) {
        for (int i = 0; i < IOMMU_BENCH_BURST; i++) {
            if (tx) {
                dp_tx_post(dp, 0, NULL, pkt, 64, NULL);
                p[i] = (struct vhost_pkt) { .data = NULL };
            } else {
                dp_rx_post(dp, 0, 2048, NULL);
                p[i] = (struct vhost_pkt) { .data = pkt, .len = 64,
                                            .size = 64 };
            }
        }
        uint64_t t0 = iommu_cycles();
        unsigned int n = (tx ? vhost_dequeue_burst(dp->port, 0, p,
                                                   IOMMU_BENCH_BURST,
                                                   &dp->alloc)
                          : vhost_enqueue_burst(dp->port, 0, p,
                                                IOMMU_BENCH_BURST));
        cycles[r] = iommu_cycles() - t0;
        TU_CHECK_EQ(n, IOMMU_BENCH_BURST);
        if (tx) {
            dp_release_pkts(p, n);
        }
        for (int i = 0; i < IOMMU_BENCH_BURST; i++) {
            TU_CHECK_OK(tfe_vq_get_used(vq, &e));
        }
    }
    free(pkt);
    qsort(cycles, IOMMU_BENCH_REPS, sizeof cycles[0], iommu_cmp_u64);
    return (double) cycles[IOMMU_BENCH_REPS / 2] / IOMMU_BENCH_BURST;
}

/* Prints, for both layouts and directions, the cycles per packet of a
 * burst without an IOMMU and with one whose buffers' IOTLB entries are a
 * page each, as a Linux guest's DMA mappings make them (the arenas, 2 MB
 * each: 512 entries a queue), and their ratio. */
/* Cycles per packet of guest TX and RX bursts (the best of two runs of
 * IOMMU_BENCH_REPS) on a fresh port, with an IOMMU whose buffers' entries
 * are a page each if 'iommu'. */
static void
iommu_bench_port(bool packed, bool iommu, double cpp[2])
{
    struct dp dp;

    if (iommu) {
        iommu_start(&dp, "bench-iommu", packed, true);
        for (unsigned int q = 0; q < 2; q++) {
            const struct tfe_vq *vq = &dp.vq[q];

            iommu_unmap(&dp, vq->arena_gpa, vq->arena_size);
            for (uint64_t a = 0; a < vq->arena_size; a += PAGE) {
                TU_CHECK_OK(tfe_iotlb_map(dp.fe, vq->arena_gpa + a, PAGE,
                                          VHOST_ACCESS_RW));
            }
        }
    } else {
        struct dp_cfg cfg = dp_cfg_features(DP_FULL);

        cfg.packed = packed;
        dp_start(&dp, "bench-plain", &cfg);
    }
    for (int tx = 0; tx < 2; tx++) {
        iommu_bench_burst(&dp, tx);                 /* Warm up. */
        cpp[tx] = MIN(iommu_bench_burst(&dp, tx), iommu_bench_burst(&dp, tx));
    }
    struct vhost_queue_stats s = dp_get_stats(&dp, TX(0));
    TU_CHECK_EQ(s.iotlb_misses, 0);
    dp_finish(&dp);
}

/* Prints, for both layouts and directions, the cycles per packet of a
 * burst without an IOMMU and with one whose buffers' IOTLB entries are a
 * page each, as a Linux guest's DMA mappings make them (the arenas, 2 MB
 * each: 512 entries a queue), and their ratio.  Ports alternate, twice,
 * and each figure is the best it had. */
static void
test_iommu_bench(void)
{
    printf("%-7s %-3s %14s %14s %7s\n", "ring", "dir", "no-iommu",
           "iommu", "ratio");
    for (int packed = 0; packed < 2; packed++) {
        double best[2][2] = { { 1e9, 1e9 }, { 1e9, 1e9 } };

        for (int round = 0; round < 2; round++) {
            for (int iommu = 0; iommu < 2; iommu++) {
                double cpp[2];

                iommu_bench_port(packed, iommu, cpp);
                for (int tx = 0; tx < 2; tx++) {
                    best[iommu][tx] = MIN(best[iommu][tx], cpp[tx]);
                }
            }
        }
        for (int tx = 1; tx >= 0; tx--) {
            printf("%-7s %-3s %14.1f %14.1f %7.2f\n", layout_name(packed),
                   tx ? "tx" : "rx", best[0][tx], best[1][tx],
                   best[1][tx] / best[0][tx]);
        }
    }
    printf("(cycles per 64-byte packet in bursts of %d, median of %d; "
           "'tx' is the guest's TX ring, dequeued)\n", IOMMU_BENCH_BURST,
           IOMMU_BENCH_REPS);
}

const struct tu_test tu_iommu_tests[] = {
    { "iommu-traffic", test_iommu_traffic,
      "vIOMMU: both layouts, mrg on and off, direct, chained, indirect" },
    { "iommu-miss", test_iommu_miss,
      "vIOMMU: a miss stops the burst, asks once, resumes on update" },
    { "iommu-ahead", test_iommu_ahead,
      "vIOMMU: a miss asks ahead for the next chains' pages" },
    { "iommu-ahead-hostile", test_iommu_ahead_hostile,
      "vIOMMU: asking ahead on hostile rings stays bounded" },
    { "iommu-cross", test_iommu_cross,
      "vIOMMU: buffers and indirect tables across IOTLB entries" },
    { "iommu-denied", test_iommu_denied,
      "vIOMMU: a writable buffer in a read-only mapping is dropped" },
    { "iommu-ring", test_iommu_ring,
      "vIOMMU: an invalidated ring stops, asks, and comes back" },
    { "iommu-reject", test_iommu_reject,
      "vIOMMU: refused IOTLB messages, and misses never answered" },
    { "iommu-race", test_iommu_race,
      "vIOMMU: invalidations and updates racing bursts" },
    { "iommu-reconnect", test_iommu_reconnect,
      "vIOMMU: IOTLB messages from a second frontend before its vrings" },
    { "iommu-bench", test_iommu_bench,
      "benchmark: cycles per packet with and without an IOMMU "
      "(make bench-iommu)" },
};

const size_t tu_n_iommu_tests = ARRAY_SIZE(tu_iommu_tests);
