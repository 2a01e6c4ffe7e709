/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: the cold paths and the dirty log (fixture in
 * test-datapath.h).
 *
 * Buffers, receive buffers and indirect tables across the boundary of
 * adjacent regions, the virtio-net header over several descriptors, and the
 * pages the dirty log marks, a log smaller than guest memory included
 * (vhost-user.rst, "Migration").
 */

#include <config.h>

#include "test-datapath.h"

/* Cold paths. */

/* A transmit buffer, a virtio-net header, and an indirect table across
 * the boundary of two regions adjacent in guest memory. */
static void
test_straddle_tx(void)
{
    static const struct {
        int64_t offset;         /* From the boundary. */
        unsigned int n_descs;
        bool indirect;
        const char *what;
    } cases[] = {
        { -300, 1, false, "1000 bytes, 300 before the boundary" },
        { -5, 1, false, "the header across the boundary (5 + 7)" },
        { -1, 1, false, "1 byte before the boundary" },
        { -500, 3, false, "the middle of three descriptors" },
        { -300, 2, true, "in an indirect table" },
    };
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, "straddle-tx", &cfg);
    memset(&e, 0, sizeof e);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct tfe_buf_opts o = {
            .gpa = dp_boundary_tx(&dp) + cases[i].offset,
            .n_descs = cases[i].n_descs, .indirect = cases[i].indirect,
        };
        uint8_t *a = dp_new_pkt(&dp, 1000, MAC_UNICAST);
        int head;

        tu_log("buffer across regions 1|2: %s", cases[i].what);
        head = dp_tx_post(&dp, 0, NULL, a, 1000, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 1000, cases[i].what);
        dp_check_ol_zero(&out[0], cases[i].what);
        dp_release_pkts(out, 4);
        dp_expect_used(&dp.vq[TX(0)], head, 0);
        dp_stats_add(&e, a, 1000);
        free(a);
    }
    tu_log("a header with NEEDS_CSUM across the boundary parses");
    {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
            .hdr_len = 54, .gso_size = 1448, .csum_start = 34,
            .csum_offset = 16,
        };
        struct tfe_buf_opts o = { .gpa = dp_boundary_tx(&dp) - 7 };
        uint8_t *a = dp_new_pkt(&dp, 3000, MAC_UNICAST);

        dp_tx_post(&dp, 0, &h, a, 3000, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 3000, "offload header across regions");
        TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
        TU_CHECK_EQ(out[0].ol.gso_type, VHOST_GSO_TCPV4);
        TU_CHECK_EQ(out[0].ol.hdr_len, 54);
        TU_CHECK_EQ(out[0].ol.gso_size, 1448);
        TU_CHECK_EQ(out[0].ol.csum_start, 34);
        TU_CHECK_EQ(out[0].ol.csum_offset, 16);
        dp_release_pkts(out, 4);
        dp_stats_add(&e, a, 3000);
        free(a);
    }
    tu_log("the same across regions 2|3");
    {
        struct tfe_buf_opts o = { .gpa = dp_boundary_rx(&dp) - 100 };
        uint8_t *a = dp_new_pkt(&dp, 1500, MAC_UNICAST);

        dp_tx_post(&dp, 0, NULL, a, 1500, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 1500, "buffer across regions 2|3");
        dp_release_pkts(out, 4);
        dp_stats_add(&e, a, 1500);
        free(a);
    }
    dp_check_stats(&dp, TX(0), &e);
    dp_finish(&dp);
}

/* The same for receive buffers, with and without MRG_RXBUF. */
static void
run_straddle_rx(const char *name, uint64_t features)
{
    static const struct {
        int64_t offset;
        unsigned int n_descs;
        bool indirect;
        const char *what;
    } cases[] = {
        { -500, 1, false, "2000 bytes, 500 before the boundary" },
        { -6, 1, false, "the header across the boundary (6 + 6)" },
        { -11, 1, false, "num_buffers across the boundary" },
        { -900, 3, false, "the middle of three descriptors" },
        { -500, 2, true, "in an indirect table" },
    };
    struct dp_cfg cfg = dp_cfg_features(features);
    struct vhost_queue_stats e;
    struct dp dp;

    dp_start(&dp, name, &cfg);
    memset(&e, 0, sizeof e);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct tfe_buf_opts o = {
            .gpa = dp_boundary_rx(&dp) + cases[i].offset,
            .n_descs = cases[i].n_descs, .indirect = cases[i].indirect,
        };
        struct vhost_offload ol = {
            .flags = VHOST_OL_DATA_VALID, .csum_start = 0x1234,
            .csum_offset = 0x5678, .hdr_len = 0x9abc, .gso_size = 0xdef0,
            .gso_type = VHOST_GSO_TCPV6,
        };
        uint8_t *a = dp_new_pkt(&dp, 1000, MAC_UNICAST);

        tu_log("buffer across regions 2|3: %s", cases[i].what);
        dp_rx_post(&dp, 0, 2000, &o);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 1000, &ol), 1);
        dp_rx_expect(&dp, 0, a, 1000, &ol, 1, cases[i].what);
        dp_stats_add(&e, a, 1000);
        free(a);
    }
    dp_check_stats(&dp, RX(0), &e);
    dp_finish(&dp);
}

static void
test_straddle_rx(void)
{
    run_straddle_rx("straddle-rx", DP_FULL);
}

static void
test_straddle_rx_nomrg(void)
{
    run_straddle_rx("straddle-rx-nm", DP_FULL & ~F(VIRTIO_NET_F_MRG_RXBUF));
}

/* Indirect tables across the boundary, every entry position. */
static void
test_indirect_straddle(void)
{
    struct dp_cfg cfg = dp_cfg_features(DP_FULL);
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, "ind-straddle", &cfg);
    for (int off = -64; off <= 0; off += 8) {
        struct tfe_buf_opts o = {
            .n_descs = 4, .indirect = true,
            .indirect_gpa = dp_boundary_tx(&dp) + off,
        };
        uint8_t *a = dp_new_pkt(&dp, 700, MAC_UNICAST);
        int head;

        tu_log("transmit: a 4-entry table %d bytes from the 1|2 boundary",
               off);
        head = dp_tx_post(&dp, 0, NULL, a, 700, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 700, "indirect table across regions");
        dp_release_pkts(out, 4);
        dp_expect_used(&dp.vq[TX(0)], head, 0);

        tu_log("receive: the same at the 2|3 boundary");
        o.indirect_gpa = dp_boundary_rx(&dp) + off;
        dp_rx_post(&dp, 0, 2048, &o);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 700, NULL), 1);
        dp_rx_expect(&dp, 0, a, 700, NULL, 1, "indirect table across regions");
        free(a);
    }
    {
        struct vhost_queue_stats s0 = dp_get_stats(&dp, RX(0));
        struct vhost_queue_stats s1 = dp_get_stats(&dp, TX(0));
        TU_CHECK_EQ(dp_total_drops(&s0) + dp_total_drops(&s1), 0);
        TU_CHECK_EQ(s0.packets, 9);
        TU_CHECK_EQ(s1.packets, 9);
    }
    dp_finish(&dp);
}

/* The virtio-net header over several descriptors. */
static void
run_hdr_split(const char *name, uint64_t features)
{
    static const uint32_t splits[][13] = {
        { 5, 7 },
        { 4, 6 },
        { 3, 3, 4 },
        { 7, 100 },
        { 11, 1 },
        { 2, 10 },
        { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
        { 12 },
        { 10 },
    };
    static const unsigned int n_splits[] = { 3, 3, 4, 3, 3, 3, 13, 2, 2 };
    struct dp_cfg cfg = dp_cfg_features(features);
    struct vhost_queue_stats e_tx, e_rx;
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, name, &cfg);
    memset(&e_tx, 0, sizeof e_tx);
    memset(&e_rx, 0, sizeof e_rx);
    for (size_t i = 0; i < ARRAY_SIZE(splits); i++) {
        struct tfe_buf_opts o = { .n_descs = n_splits[i],
                                  .split = splits[i] };
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV6,
            .hdr_len = 74, .gso_size = 1400, .csum_start = 54,
            .csum_offset = 16,
        };
        struct vhost_offload ol = {
            .flags = VHOST_OL_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
            .hdr_len = 66, .gso_size = 1448, .csum_start = 34,
            .csum_offset = 16,
        };
        uint8_t *a = dp_new_pkt(&dp, 500, MAC_BROADCAST);
        int head;

        tu_log("%u bytes split %"PRIu32" + %"PRIu32"%s over %u descriptors",
               dp.hdr_len, splits[i][0], splits[i][1],
               n_splits[i] > 3 ? " + ..." : "", n_splits[i]);
        head = dp_tx_post(&dp, 0, &h, a, 500, &o);
        TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
        dp_check_pkt(&out[0], a, 500, "header over several descriptors");
        TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
        TU_CHECK_EQ(out[0].ol.gso_type, VHOST_GSO_TCPV6);
        TU_CHECK_EQ(out[0].ol.hdr_len, 74);
        TU_CHECK_EQ(out[0].ol.gso_size, 1400);
        TU_CHECK_EQ(out[0].ol.csum_start, 54);
        TU_CHECK_EQ(out[0].ol.csum_offset, 16);
        dp_release_pkts(out, 4);
        dp_expect_used(&dp.vq[TX(0)], head, 0);
        dp_stats_add(&e_tx, a, 500);

        tu_log("  and a receive buffer split the same way");
        o.split = splits[i];
        dp_rx_post(&dp, 0, 600, &o);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 500, &ol), 1);
        dp_rx_expect(&dp, 0, a, 500, &ol, 1, "header over several buffers");
        dp_stats_add(&e_rx, a, 500);
        free(a);
    }
    dp_check_stats(&dp, TX(0), &e_tx);
    dp_check_stats(&dp, RX(0), &e_rx);
    dp_finish(&dp);
}

static void
test_hdr_split(void)
{
    run_hdr_split("hdr-split", DP_FULL);
}

static void
test_hdr_split_legacy(void)
{
    run_hdr_split("hdr-split-l", DP_BASE);
}

static void
test_hdr_split_v1_nomrg(void)
{
    run_hdr_split("hdr-split-v1", DP_BASE | F(VIRTIO_F_VERSION_1));
}

/* Dirty logging. */

static void
mark_pages(uint8_t *bitmap, uint64_t gpa, uint64_t len)
{
    for (uint64_t page = gpa / PAGE; len && page <= (gpa + len - 1) / PAGE;
         page++) {
        bitmap[page / 8] |= 1u << (page % 8);
    }
}

/* Checks that 'log' marks exactly the pages in 'exp'. */
static void
check_log(const uint8_t *log, const uint8_t *exp, const char *what)
{
    for (uint64_t page = 0; page < DP_LOG_SIZE * 8; page++) {
        bool got = log[page / 8] & (1u << (page % 8));
        bool want = exp[page / 8] & (1u << (page % 8));

        if (got != want) {
            TU_FAIL("%s: page %#"PRIx64" (GPA %#"PRIx64") is %s the dirty "
                    "log", what, page, page * PAGE,
                    got ? "wrongly in" : "missing from");
        }
    }
}

static uint64_t
read_eventfd(int fd)
{
    uint64_t n = 0;

    if (fd < 0 || read(fd, &n, sizeof n) != sizeof n) {
        return 0;
    }
    return n;
}

struct dlog {
    uint8_t *log;               /* The frontend's mapping of the log. */
    uint8_t exp[DP_LOG_SIZE];
};

static void
dlog_start(struct dp *dp, struct dlog *dl)
{
    TU_CHECK_OK(tfe_log_create(dp->fe, DP_LOG_SIZE));
    TU_CHECK_OK(tfe_set_log_base(dp->fe, DP_LOG_SIZE, 0, dp->fe->log_fd,
                                 false));
    TU_CHECK_OK(tfe_set_log_fd(dp->fe));
    TU_CHECK(tu_port_info(dp->port).log_mapped);
    dl->log = mmap(NULL, DP_LOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                   dp->fe->log_fd, 0);
    TU_CHECK(dl->log != MAP_FAILED);
    memset(dl->exp, 0, sizeof dl->exp);
}

/* Checks the log against what is expected, and that the log eventfd was
 * written if anything was; then clears both. */
static void
dlog_check(struct dp *dp, struct dlog *dl, const char *what)
{
    bool any = false;

    check_log(dl->log, dl->exp, what);
    for (size_t i = 0; i < sizeof dl->exp; i++) {
        any |= dl->exp[i] != 0;
    }
    if (any) {
        TU_CHECK(read_eventfd(dp->fe->log_call_fd) > 0);
    } else {
        TU_CHECK_EQ(read_eventfd(dp->fe->log_call_fd), 0);
    }
    memset(dl->log, 0, DP_LOG_SIZE);
    memset(dl->exp, 0, sizeof dl->exp);
}

static void
dlog_finish(struct dlog *dl)
{
    munmap(dl->log, DP_LOG_SIZE);
}

static void
test_dirty_log(void)
{
    struct dp_cfg cfg = {
        .features = DP_FULL | F(VHOST_F_LOG_ALL),
        .log_used = true, .used_align = PAGE,
    };
    struct vhost_pkt out[4];
    struct dlog dl;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "dirty-log", &cfg);
    dlog_start(&dp, &dl);

    tu_log("enqueue into two buffers on different pages marks the bytes "
           "written and the used ring's page, and nothing else");
    {
        struct tfe_vq *vq = &dp.vq[RX(0)];
        uint64_t base = tfe_vq_alloc(vq, 16 * PAGE, PAGE);
        struct tfe_seg segs[2] = {
            { base + 3 * PAGE - 100, 100 },
            { base + 10 * PAGE, 8192 },
        };

        TU_CHECK(tfe_vq_add_chain(vq, segs, 2, true, NULL) >= 0);
        a = dp_new_pkt(&dp, 500, MAC_UNICAST);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 500, NULL), 1);
        mark_pages(dl.exp, segs[0].gpa, 100);
        mark_pages(dl.exp, segs[1].gpa, dp.hdr_len + 500 - 100);
        mark_pages(dl.exp, tfe_vq_used_gpa(vq), 4);
        dlog_check(&dp, &dl, "enqueue");
        dp_rx_expect(&dp, 0, a, 500, NULL, 1, "logged enqueue");
        free(a);
    }

    tu_log("dequeue marks the used ring's page only");
    a = dp_new_pkt(&dp, 300, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_release_pkts(out, 4);
    mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[TX(0)]), 4);
    dlog_check(&dp, &dl, "dequeue");

    tu_log("empty bursts mark nothing and do not signal");
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 0);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 300, NULL), 0);
    dlog_check(&dp, &dl, "empty bursts");
    free(a);

    tu_log("a mergeable packet over a buffer across regions 2|3 and one "
           "8 kB buffer marks both sides of the boundary and one page");
    {
        struct tfe_vq *vq = &dp.vq[RX(0)];
        struct tfe_buf_opts o = { .gpa = dp_boundary_rx(&dp) - 2000 };
        uint64_t b2 = tfe_vq_alloc(vq, 8192, PAGE);
        struct tfe_seg seg = { b2, 8192 };

        dp_rx_post(&dp, 0, 4000, &o);
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, true, NULL) >= 0);
        a = dp_new_pkt(&dp, 5000, MAC_UNICAST);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 5000, NULL), 1);
        mark_pages(dl.exp, dp_boundary_rx(&dp) - 2000, 4000);
        mark_pages(dl.exp, b2, dp.hdr_len + 5000 - 4000);
        mark_pages(dl.exp, tfe_vq_used_gpa(vq), 4);
        dlog_check(&dp, &dl, "mergeable enqueue across regions");
        dp_rx_expect(&dp, 0, a, 5000, NULL, 2, "logged mergeable enqueue");
        free(a);
    }

    tu_log("a vring without VHOST_VRING_F_LOG: buffers only, not its used "
           "ring");
    dp.fe->vrings[RX(1)].log_used = false;
    TU_CHECK_OK(tfe_set_vring_addr(dp.fe, RX(1)));
    TU_CHECK(!tu_queue_info(dp.port, RX(1)).log_used);
    {
        struct tfe_buf_opts o = { .gpa = dp_boundary_rx(&dp) + 8 * PAGE };

        dp_rx_post(&dp, 1, 2048, &o);
        a = dp_new_pkt(&dp, 1000, MAC_UNICAST);
        TU_CHECK_EQ(dp_enq1(&dp, 1, a, 1000, NULL), 1);
        mark_pages(dl.exp, o.gpa, dp.hdr_len + 1000);
        dlog_check(&dp, &dl, "enqueue on a vring without F_LOG");
        dp_rx_expect(&dp, 1, a, 1000, NULL, 1, "enqueue without F_LOG");
        free(a);
    }

    dlog_finish(&dl);
    dp_finish(&dp);
}

/* The device's other writes to the used ring are logged too: with
 * EVENT_IDX, avail_event (after the ring's last entry), which a ring of
 * 1024 puts on the page after the one with the index and the first
 * entries. */
static void
test_dirty_log_event(void)
{
    struct dp_cfg cfg = {
        .features = DP_FULL | F(VHOST_F_LOG_ALL),
        .queue_size = 1024, .log_used = true, .used_align = PAGE,
    };
    struct vhost_pkt out[4];
    struct dlog dl;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "dirty-log-event", &cfg);
    dlog_start(&dp, &dl);

    tu_log("the first dequeue burst writes avail_event, 8 KiB past the "
           "used index: both pages are marked");
    a = dp_new_pkt(&dp, 300, MAC_UNICAST);
    dp_tx_post(&dp, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_release_pkts(out, 4);
    {
        uint64_t used = tfe_vq_used_gpa(&dp.vq[TX(0)]);

        mark_pages(dl.exp, used, 4 + 8);
        mark_pages(dl.exp, used + 4 + 8 * 1024, 2);
        TU_CHECK_EQ(used % PAGE, 0);
    }
    dlog_check(&dp, &dl, "first dequeue, avail_event");

    tu_log("later bursts leave avail_event as it is: the used page only");
    dp_tx_post(&dp, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_release_pkts(out, 4);
    mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[TX(0)]), 4 + 16);
    dlog_check(&dp, &dl, "second dequeue");
    free(a);

    dlog_finish(&dl);
    dp_finish(&dp);
}

/* Logging starts when VHOST_F_LOG_ALL is negotiated mid-run, as QEMU does
 * at the start of a migration. */
static void
test_dirty_log_migration(void)
{
    struct dp_cfg cfg = { .features = DP_FULL, .used_align = PAGE };
    struct vhost_pkt out[4];
    struct dlog dl;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "dirty-log-mig", &cfg);
    dlog_start(&dp, &dl);
    a = dp_new_pkt(&dp, 400, MAC_UNICAST);

    tu_log("a log without VHOST_F_LOG_ALL stays clean");
    dp_rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(dp_enq1(&dp, 0, a, 400, NULL), 1);
    dp_rx_expect(&dp, 0, a, 400, NULL, 1, "enqueue before logging");
    dp_tx_post(&dp, 0, NULL, a, 400, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_release_pkts(out, 4);
    dlog_check(&dp, &dl, "before VHOST_F_LOG_ALL");

    tu_log("SET_FEATURES with VHOST_F_LOG_ALL and SET_VRING_ADDR with "
           "F_LOG start it");
    TU_CHECK_OK(tfe_set_features(dp.fe, dp.fe->features
                                        | F(VHOST_F_LOG_ALL)));
    for (unsigned int q = 0; q < 4; q++) {
        dp.fe->vrings[q].log_used = true;
        TU_CHECK_OK(tfe_set_vring_addr(dp.fe, q));
    }
    {
        struct tfe_buf_opts o = { .gpa = dp_boundary_rx(&dp) - 100 };

        dp_rx_post(&dp, 0, 2048, &o);
        TU_CHECK_EQ(dp_enq1(&dp, 0, a, 400, NULL), 1);
        mark_pages(dl.exp, o.gpa, dp.hdr_len + 400);
        mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[RX(0)]), 4);
        dlog_check(&dp, &dl, "enqueue while logging");
        dp_rx_expect(&dp, 0, a, 400, NULL, 1, "enqueue while logging");
    }
    dp_tx_post(&dp, 0, NULL, a, 400, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_release_pkts(out, 4);
    mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[TX(0)]), 4);
    dlog_check(&dp, &dl, "dequeue while logging");

    free(a);
    dlog_finish(&dl);
    dp_finish(&dp);
}

/* A dirty log smaller than guest memory (the frontend chooses its size):
 * pages beyond it are not logged, and nothing is written past it. */
static void
test_dirty_log_small(void)
{
    struct dp_cfg cfg = {
        .features = DP_FULL | F(VHOST_F_LOG_ALL),
        .log_used = true, .used_align = PAGE,
    };
    enum { SMALL = 64 };        /* Bytes: 512 pages, 2 MB. */
    uint8_t exp[DP_LOG_SIZE];
    struct vhost_pkt out[4];
    uint8_t *log;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "dirty-log-small", &cfg);
    TU_CHECK_OK(tfe_log_create(dp.fe, DP_LOG_SIZE));
    TU_CHECK_OK(tfe_set_log_base(dp.fe, SMALL, 0, dp.fe->log_fd, false));
    TU_CHECK_OK(tfe_set_log_fd(dp.fe));
    log = mmap(NULL, DP_LOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
               dp.fe->log_fd, 0);
    TU_CHECK(log != MAP_FAILED);
    memset(exp, 0, sizeof exp);
    a = dp_new_pkt(&dp, 1000, MAC_UNICAST);

    tu_log("a %d-byte log covers GPA 0..2 MB; buffers at 16 MB+ and 25 MB "
           "and vring 1's used ring (at 16 MB+) are beyond it", SMALL);
    {
        struct tfe_buf_opts o = { .gpa = DP_GPA1 + 7 * MB };
        struct tfe_buf_opts o2 = { .gpa = dp_boundary_rx(&dp) - 100 };
        struct tfe_buf_opts o3 = { .gpa = MB };

        TU_CHECK_CMP(tfe_vq_used_gpa(&dp.vq[RX(0)]), <, 2 * MB);
        dp_rx_post(&dp, 0, 2048, &o);
        dp_rx_post(&dp, 0, 2048, &o2);
        dp_rx_post(&dp, 0, 2048, &o3);
        for (int i = 0; i < 3; i++) {
            TU_CHECK_EQ(dp_enq1(&dp, 0, a, 1000, NULL), 1);
            dp_rx_expect(&dp, 0, a, 1000, NULL, 1, "enqueue with a small log");
        }
        mark_pages(exp, o3.gpa, dp.hdr_len + 1000);
        mark_pages(exp, tfe_vq_used_gpa(&dp.vq[RX(0)]), 4);
    }
    dp_tx_post(&dp, 0, NULL, a, 1000, NULL);
    TU_CHECK_EQ(dp_dq(&dp, 0, out, 4), 1);
    dp_release_pkts(out, 4);
    check_log(log, exp, "small log");
    TU_CHECK(read_eventfd(dp.fe->log_call_fd) > 0);
    munmap(log, DP_LOG_SIZE);
    free(a);
    dp_finish(&dp);
}

const struct tu_test tu_datapath_cold_tests[] = {
    { "dp-straddle-tx", test_straddle_tx,
      "TX: buffers across adjacent regions" },
    { "dp-straddle-rx", test_straddle_rx,
      "RX: buffers across adjacent regions" },
    { "dp-straddle-rx-nomrg", test_straddle_rx_nomrg,
      "RX: buffers across adjacent regions, no MRG_RXBUF" },
    { "dp-indirect-straddle", test_indirect_straddle,
      "indirect tables across adjacent regions" },
    { "dp-hdr-split", test_hdr_split,
      "the 12-byte header over several descriptors" },
    { "dp-hdr-split-legacy", test_hdr_split_legacy,
      "the 10-byte header over several descriptors" },
    { "dp-hdr-split-v1-nomrg", test_hdr_split_v1_nomrg,
      "the 12-byte header without MRG_RXBUF over several descriptors" },
    { "dp-dirty-log", test_dirty_log,
      "dirty log: exactly the pages written" },
    { "dp-dirty-log-event", test_dirty_log_event,
      "dirty log: avail_event is a used-ring write too" },
    { "dp-dirty-log-migration", test_dirty_log_migration,
      "dirty log starts with VHOST_F_LOG_ALL mid-run" },
    { "dp-dirty-log-small", test_dirty_log_small,
      "a dirty log smaller than guest memory" },
};

const size_t tu_n_datapath_cold_tests = ARRAY_SIZE(tu_datapath_cold_tests);
