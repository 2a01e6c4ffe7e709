/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: the fixture shared by test-datapath-*.c (see
 * test-datapath.h): the embedder's buffers, a port with two queue pairs,
 * packets, the guest side of both directions, statistics, round trips and
 * hand-built chains.
 */

#include <config.h>

#include "test-datapath.h"

bool
dp_dalloc_alloc(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    struct dalloc *da = aux;

    if (!da->fail_after) {
        da->n_failed++;
        return false;
    }
    if (da->fail_after > 0) {
        da->fail_after--;
    }
    da->n_alloc++;
    da->max_len = MAX(da->max_len, len);
    pkt->data = malloc(len ? len : 1);
    if (!pkt->data) {
        abort();
    }
    pkt->size = len;
    pkt->handle = pkt->data;
    return true;
}

void
dp_dalloc_free(void *aux, struct vhost_pkt *pkt)
{
    struct dalloc *da = aux;

    if (da->n_free < ARRAY_SIZE(da->freed)) {
        da->freed[da->n_free] = pkt->handle;
    }
    da->n_free++;
    free(pkt->handle);
}

/* Fixture. */

struct tfe_mem *
dp_mem_create(void)
{
    struct tfe_mem *mem = tfe_mem_create();

    TU_CHECK_EQ(tfe_mem_add(mem, 0, DP_REGION_SIZE, 0), 0);
    TU_CHECK_EQ(tfe_mem_add(mem, DP_GPA1, DP_REGION_SIZE, 64 << 10), 1);
    TU_CHECK_EQ(tfe_mem_add_adjacent(mem, DP_SMALL_REGION_SIZE, 4096), 2);
    TU_CHECK_EQ(tfe_mem_add_adjacent(mem, DP_SMALL_REGION_SIZE, 0), 3);
    TU_CHECK_EQ(tfe_mem_boundary(mem, 1), DP_GPA1 + DP_REGION_SIZE);
    TU_CHECK_EQ(mem->regions[2].gpa, tfe_mem_boundary(mem, 1));
    TU_CHECK_EQ(mem->regions[3].gpa, tfe_mem_boundary(mem, 2));
    return mem;
}

/* Boundaries between adjacent regions: 1|2 (used for transmit buffers)
 * and 2|3 (receive buffers). */
uint64_t
dp_boundary_tx(const struct dp *dp)
{
    return tfe_mem_boundary(dp->fe->mem, 1);
}

uint64_t
dp_boundary_rx(const struct dp *dp)
{
    return tfe_mem_boundary(dp->fe->mem, 2);
}

uint64_t
dp_mem_end(const struct dp *dp)
{
    return tfe_mem_boundary(dp->fe->mem, 3);
}

/* Starts an engine with one server port of two queue pairs offering
 * DP_OFFERED, connects a frontend with the guest memory above, and brings
 * the device up with 'cfg'. */
void
dp_start(struct dp *dp, const char *name, const struct dp_cfg *cfg)
{
    struct vhost_port_options opts;
    struct tfe_setup setup;
    char features[512];

    memset(dp, 0, sizeof *dp);
    dp->fds0 = tu_count_fds();
    dp->threads0 = tu_thread_baseline();
    tu_events_init(&dp->ev);
    dp->path = tu_path(name);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = dp->path;
    opts.mode = VHOST_PORT_SERVER;
    uint64_t offered = DP_OFFERED
                       | (cfg->packed ? F(VIRTIO_F_RING_PACKED) : 0)
                       | (cfg->iova_offset ? F(VIRTIO_F_ACCESS_PLATFORM) : 0);
    opts.features = offered;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &dp->ev;
    TU_CHECK_OK(vhost_engine_create(&dp->engine));
    TU_CHECK_OK(vhost_engine_start(dp->engine));
    TU_CHECK_OK(vhost_port_create(dp->engine, &opts, &dp->port));

    dp->fe = tfe_create(dp_mem_create());
    TU_CHECK_OK(tfe_connect(dp->fe, dp->path));
    TU_CHECK(tu_wait_port(dp->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));

    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features;
    setup.queue_size = cfg->queue_size;
    setup.log_used = cfg->log_used;
    setup.used_align = cfg->used_align;
    setup.packed = cfg->packed;
    dp->fe->iova_offset = cfg->iova_offset;
    TU_CHECK_OK(tfe_setup_device(dp->fe, 2, &setup));
    TU_CHECK_EQ(dp->fe->features
                & ~FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES),
                (cfg->features | (cfg->packed ? F(VIRTIO_F_RING_PACKED) : 0))
                & offered);
    if (cfg->iova_offset) {
        uint64_t iova;
        uint8_t perm;

        tu_log("vIOMMU: the rings wait for their translations");
        TU_CHECK(!tu_port_info(dp->port).ready);
        TU_CHECK_OK(tfe_set_backend_req_fd(dp->fe));
        TU_CHECK_OK(tfe_iotlb_recv_miss(dp->fe, &iova, &perm,
                                        TU_TIMEOUT_MS));
        tu_log("  a miss for IOVA %#"PRIx64", perm %u: map all memory",
               iova, perm);
        TU_CHECK(iova >= cfg->iova_offset);
        TU_CHECK_OK(tfe_iotlb_map_mem(dp->fe, VHOST_ACCESS_RW));
        TU_CHECK(tu_wait_port(dp->port, tu_port_ready, NULL,
                              TU_TIMEOUT_MS));
        /* The other rings' misses: one each, answered by the map. */
        unsigned int n = 1;
        while (!tfe_iotlb_recv_miss(dp->fe, &iova, &perm, 50)) {
            n++;
        }
        tu_log("  %u ring misses in all", n);
        TU_CHECK_EQ(n, 4);
    }
    TU_CHECK(tu_port_info(dp->port).ready);
    tu_log("device up, features: %s",
           vhost_features_to_string(dp->fe->features, features,
                                    sizeof features));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(dp->port, q).ready);
        TU_CHECK_OK(tfe_vq_init(&dp->vq[q], dp->fe, q, q % 2,
                                DP_ARENA_SIZE));
    }
    dp->hdr_len = dp->vq[0].hdr_len;
    dp->mrg = dp->vq[0].mrg;
    dp->da.fail_after = -1;
    dp->alloc = (struct vhost_pkt_alloc) {
        .alloc = dp_dalloc_alloc, .free = dp_dalloc_free, .aux = &dp->da,
    };
}

/* Tears 'dp' down and checks that no fd, thread or mapping leaked. */
void
dp_finish(struct dp *dp)
{
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_destroy(&dp->vq[q]);
    }
    tfe_destroy(dp->fe);
    vhost_port_destroy(dp->port);
    vhost_engine_destroy(dp->engine);
    tu_log("no fd, thread or guest mapping left behind");
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), 0);
    TU_CHECK_EQ(tu_count_maps(TFE_LOG_NAME), 0);
    TU_CHECK_EQ(tu_count_fds(), dp->fds0);
    TU_CHECK_EQ(tu_threads_settle(dp->threads0), dp->threads0);
    tu_events_destroy(&dp->ev);
    free(dp->path);
}

struct dp_cfg
dp_cfg_features(uint64_t features)
{
    return (struct dp_cfg) { .features = features };
}

/* Packets. */

/* Returns a new packet of 'len' bytes (at least 18): an Ethernet header to
 * a 'kind' destination, the packet's sequence number, then a pattern that
 * depends on both, so no two packets of a test are alike. */
uint8_t *
dp_new_pkt(struct dp *dp, size_t len, enum mac_kind kind)
{
    static const uint8_t dsts[][6] = {
        [MAC_UNICAST] = { 0x02, 0, 0, 0, 0, 0x01 },
        [MAC_MULTICAST] = { 0x01, 0x00, 0x5e, 0, 0, 0x01 },
        [MAC_BROADCAST] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
    };
    static const uint8_t src[6] = { 0x02, 0, 0, 0, 0, 0x02 };
    uint8_t *p = malloc(len);
    uint32_t seq = dp->seq++;

    if (!p || len < 18) {
        abort();
    }
    memcpy(p, dsts[kind], 6);
    memcpy(p + 6, src, 6);
    p[12] = 0x08;
    p[13] = 0x00;
    memcpy(p + 14, &seq, sizeof seq);
    for (size_t i = 18; i < len; i++) {
        p[i] = (uint8_t) (seq * 131 + i * 7 + (i >> 8));
    }
    return p;
}

void
dp_check_bytes(const uint8_t *got, const uint8_t *exp, size_t len,
               const char *what)
{
    for (size_t i = 0; i < len; i++) {
        if (got[i] != exp[i]) {
            TU_FAIL("%s: byte %zu of %zu is %#x, expected %#x", what, i,
                    len, got[i], exp[i]);
        }
    }
}

void
dp_check_pkt(const struct vhost_pkt *got, const uint8_t *exp, size_t len,
             const char *what)
{
    if (got->len != len) {
        TU_FAIL("%s: length %"PRIu32", expected %zu", what, got->len, len);
    }
    if (len && !got->data) {
        TU_FAIL("%s: no data", what);
    }
    if (got->size < got->len) {
        TU_FAIL("%s: length %"PRIu32" in a buffer of %"PRIu32, what,
                got->len, got->size);
    }
    dp_check_bytes(got->data, exp, len, what);
}

void
dp_check_ol_zero(const struct vhost_pkt *pkt, const char *what)
{
    const struct vhost_offload *ol = &pkt->ol;

    if (ol->flags || ol->gso_type || ol->hdr_len || ol->gso_size
        || ol->csum_start || ol->csum_offset) {
        TU_FAIL("%s: offload metadata from a zero header is not zero "
                "(flags %#x gso_type %#x hdr_len %u gso_size %u "
                "csum_start %u csum_offset %u)", what, ol->flags,
                ol->gso_type, ol->hdr_len, ol->gso_size, ol->csum_start,
                ol->csum_offset);
    }
}

/* Frees the buffers in 'pkts[0..n)': after a dequeue, every entry whose
 * 'data' is not NULL is the caller's again, packet or not (vhost.h), so
 * callers pass the 'n' they gave the dequeue, not what it returned. */
void
dp_release_pkts(struct vhost_pkt *pkts, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i].handle);
        pkts[i].handle = pkts[i].data = NULL;
    }
}

/* Guest side. */

/* Makes a transmit packet available on queue pair 'qp': header 'hdr' (zero
 * if null) and 'len' bytes of 'pkt'.  Returns the chain's head. */
int
dp_tx_post(struct dp *dp, unsigned int qp, const struct tfe_net_hdr *hdr,
           const uint8_t *pkt, size_t len, const struct tfe_buf_opts *opts)
{
    static const struct tfe_net_hdr zero;
    int head = tfe_vq_post_tx(&dp->vq[TX(qp)], hdr ? hdr : &zero,
                              dp->hdr_len, pkt, len, opts);

    if (head < 0) {
        TU_FAIL("posting a %zu-byte packet on vring %u: %s", len, TX(qp),
                tu_strerror(head));
    }
    return head;
}

int
dp_rx_post(struct dp *dp, unsigned int qp, uint32_t len,
           const struct tfe_buf_opts *opts)
{
    int head = tfe_vq_post_rx(&dp->vq[RX(qp)], len, opts);

    if (head < 0) {
        TU_FAIL("posting a %"PRIu32"-byte buffer on vring %u: %s", len,
                RX(qp), tu_strerror(head));
    }
    return head;
}

/* Dequeues up to 'n' packets from queue pair 'qp' into 'pkts' (emptied
 * first, so the engine allocates every buffer). */
unsigned int
dp_dq(struct dp *dp, unsigned int qp, struct vhost_pkt *pkts, unsigned int n)
{
    memset(pkts, 0, n * sizeof *pkts);
    return vhost_dequeue_burst(dp->port, qp, pkts, n, &dp->alloc);
}

unsigned int
dp_enq1(struct dp *dp, unsigned int qp, const uint8_t *pkt, size_t len,
        const struct vhost_offload *ol)
{
    struct vhost_pkt p = { .data = (uint8_t *) pkt, .len = len,
                           .size = len };

    if (ol) {
        p.ol = *ol;
    }
    return vhost_enqueue_burst(dp->port, qp, &p, 1);
}

/* Checks that the next used entry of 'vq' is 'head' with 'len'. */
void
dp_expect_used(struct tfe_vq *vq, unsigned int head, uint32_t len)
{
    struct tfe_used_elem e;
    int error = tfe_vq_get_used(vq, &e);

    if (error == -EAGAIN) {
        TU_FAIL("vring %"PRIu32": no used entry, expected head %u",
                vq->index, head);
    }
    if (e.id != head || e.len != len) {
        TU_FAIL("vring %"PRIu32": used entry {id %"PRIu32", len %"PRIu32
                "}, expected {id %u, len %"PRIu32"}", vq->index, e.id,
                e.len, head, len);
    }
    if (head < vq->size && error) {
        TU_FAIL("vring %"PRIu32": used entry %u: %s", vq->index, head,
                tu_strerror(error));
    }
}

void
dp_expect_no_used(struct tfe_vq *vq)
{
    if (tfe_vq_n_used(vq)) {
        TU_FAIL("vring %"PRIu32": %u unexpected used entries (first id "
                "%"PRIu32")", vq->index, tfe_vq_n_used(vq),
                vq->used_ring[vq->next_used % vq->size].id);
    }
}

/* The header the engine should write for 'ol' and 'num_buffers'. */
void
dp_build_hdr(uint8_t hdr[12], const struct vhost_offload *ol,
             uint16_t num_buffers)
{
    struct tfe_net_hdr h = {
        .flags = ol ? ol->flags : 0,
        .gso_type = ol ? ol->gso_type : 0,
        .hdr_len = ol ? ol->hdr_len : 0,
        .gso_size = ol ? ol->gso_size : 0,
        .csum_start = ol ? ol->csum_start : 0,
        .csum_offset = ol ? ol->csum_offset : 0,
        .num_buffers = num_buffers,
    };

    BUILD_ASSERT_DECL(sizeof h == 12);
    memcpy(hdr, &h, 12);
}

/* Receives the next packet on queue pair 'qp' and checks it: header from
 * 'ol' (zero if null) with num_buffers, used length, and the 'len' bytes
 * of 'pkt'.  If 'n_bufs' is nonzero, the packet must have taken exactly
 * that many buffers.  Without MRG_RXBUF, also checks that the engine wrote
 * nothing past the packet in its buffer. */
void
dp_rx_expect(struct dp *dp, unsigned int qp, const uint8_t *pkt, size_t len,
             const struct vhost_offload *ol, unsigned int n_bufs,
             const char *what)
{
    struct tfe_vq *vq = &dp->vq[RX(qp)];
    size_t cap = dp->hdr_len + len + 64, got_len;
    uint8_t *buf = malloc(cap);
    uint8_t hdr[12];
    unsigned int got_bufs;
    uint16_t first = 0;
    int error;

    if (!buf) {
        abort();
    }
    if (tfe_vq_n_used(vq)) {
        first = vq->used_ring[vq->next_used % vq->size].id;
    }
    error = tfe_vq_recv(vq, buf, cap, &got_len, &got_bufs);
    if (error) {
        TU_FAIL("%s: receiving on vring %u: %s", what, RX(qp),
                tu_strerror(error));
    }
    if (got_len != dp->hdr_len + len) {
        TU_FAIL("%s: used length %zu, expected %u + %zu", what, got_len,
                dp->hdr_len, len);
    }
    if (n_bufs && got_bufs != n_bufs) {
        TU_FAIL("%s: took %u buffers, expected %u", what, got_bufs, n_bufs);
    }
    /* VIRTIO 1.2 §5.1.6.4.1: "If VIRTIO_NET_F_MRG_RXBUF has not been
     * negotiated, the device MUST set num_buffers to 1." */
    dp_build_hdr(hdr, ol, dp->mrg ? got_bufs : 1);
    dp_check_bytes(buf, hdr, dp->hdr_len, what);
    dp_check_bytes(buf + dp->hdr_len, pkt, len, what);

    if (!dp->mrg) {
        const struct tfe_vq_chain *c = &vq->chains[first];
        size_t total = 0, tail;
        uint8_t *all;

        for (size_t i = 0; i < c->n_segs; i++) {
            total += c->segs[i].len;
        }
        tail = MIN(total - got_len, 64);
        all = malloc(got_len + tail + 1);
        if (!all) {
            abort();
        }
        tfe_vq_read_chain(vq, first, got_len + tail, all);
        for (size_t i = got_len; i < got_len + tail; i++) {
            if (all[i] != 0xa5) {
                TU_FAIL("%s: the engine wrote byte %zu of the buffer, past "
                        "the %zu it reported", what, i, got_len);
            }
        }
        free(all);
    }
    free(buf);
}

/* Statistics. */

struct vhost_queue_stats
dp_get_stats(struct dp *dp, unsigned int vring)
{
    struct vhost_queue_stats s;

    memset(&s, 0, sizeof s);
    TU_CHECK_OK(vhost_port_get_queue_stats(dp->port, vring, &s));
    return s;
}

/* Adds a 'len'-byte packet to the expected statistics 'e', as DPDK's vhost
 * PMD counts it: by destination MAC (broadcast is not also multicast) and
 * by length without the virtio-net header. */
void
dp_stats_add(struct vhost_queue_stats *e, const uint8_t *pkt, size_t len)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    e->packets++;
    e->bytes += len;
    if (len >= 6 && !memcmp(pkt, bcast, 6)) {
        e->broadcast++;
    } else if (len >= 6 && pkt[0] & 1) {
        e->multicast++;
    }
    if (len < 64) {
        e->undersize++;
    } else if (len == 64) {
        e->size_64++;
    } else if (len <= 127) {
        e->size_65_127++;
    } else if (len <= 255) {
        e->size_128_255++;
    } else if (len <= 511) {
        e->size_256_511++;
    } else if (len <= 1023) {
        e->size_512_1023++;
    } else if (len <= 1518) {
        e->size_1024_1518++;
    } else {
        e->size_1519_max++;
    }
}

/* Checks the packet counters, drops and 'broken' of vring 'vring' against
 * 'e' (notification counters are checked where they matter). */
void
dp_check_stats(struct dp *dp, unsigned int vring,
               const struct vhost_queue_stats *e)
{
    struct vhost_queue_stats s = dp_get_stats(dp, vring);

    CHECK_STAT(vring, &s, e, packets);
    CHECK_STAT(vring, &s, e, bytes);
    CHECK_STAT(vring, &s, e, multicast);
    CHECK_STAT(vring, &s, e, broadcast);
    CHECK_STAT(vring, &s, e, undersize);
    CHECK_STAT(vring, &s, e, size_64);
    CHECK_STAT(vring, &s, e, size_65_127);
    CHECK_STAT(vring, &s, e, size_128_255);
    CHECK_STAT(vring, &s, e, size_256_511);
    CHECK_STAT(vring, &s, e, size_512_1023);
    CHECK_STAT(vring, &s, e, size_1024_1518);
    CHECK_STAT(vring, &s, e, size_1519_max);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s.drops[r] != e->drops[r]) {
            TU_FAIL("vring %u stats: drops[%s] is %"PRIu64", expected "
                    "%"PRIu64, vring, vhost_drop_reason_to_string(r),
                    s.drops[r], e->drops[r]);
        }
    }
    if (s.broken != e->broken) {
        TU_FAIL("vring %u stats: broken is %d, expected %d", vring,
                s.broken, e->broken);
    }
}

uint64_t
dp_total_drops(const struct vhost_queue_stats *s)
{
    uint64_t n = 0;

    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        n += s->drops[r];
    }
    return n;
}

/* Kick suppression.  The engine polls, so it asks the guest not to kick
 * it: without EVENT_IDX with VRING_USED_F_NO_NOTIFY (VIRTIO 1.2 §2.7.7),
 * with EVENT_IDX by an avail_event (§2.7.10) that the driver cannot reach
 * with the next ring's worth of buffers, that is, at least the queue size
 * ahead of the avail index the engine has seen.  (The engine writes it
 * half the index space ahead and rewrites it each quarter.) */
void
dp_check_no_kicks(const struct tfe_vq *vq, bool event_idx)
{
    if (event_idx) {
        uint16_t ev = tfe_vq_avail_event(vq);
        uint16_t ahead = ev - vq->next_avail;

        if (ahead < vq->size) {
            TU_FAIL("vring %"PRIu32": avail_event %u is only %u ahead of "
                    "avail->idx %u: the guest will kick", vq->index, ev,
                    ahead, vq->next_avail);
        }
    } else if (!(tfe_vq_used_flags(vq) & TFE_USED_F_NO_NOTIFY)) {
        TU_FAIL("vring %"PRIu32": VRING_USED_F_NO_NOTIFY not set",
                vq->index);
    }
}

/* Writes into avail_event what a device that wants every kick would: the
 * next index.  The engine must overwrite it on its first dp_burst. */
void
dp_poison_avail_event(struct tfe_vq *vq)
{
    uint16_t *ev = (uint16_t *) &vq->used_ring[vq->size];

    __atomic_store_n(ev, (uint16_t) (vq->next_avail + 1), __ATOMIC_RELEASE);
}

/* Round trips. */

/* Shows that queue pair 'qp' works: two packets each way, checked. */
void
dp_roundtrip(struct dp *dp, unsigned int qp, const char *why)
{
    struct vhost_pkt out[4];
    uint8_t *pkts[2];
    int heads[2];

    tu_log("  queue pair %u still works (%s)", qp, why);
    for (int i = 0; i < 2; i++) {
        pkts[i] = dp_new_pkt(dp, 100 + 50 * i, MAC_UNICAST);
        heads[i] = dp_tx_post(dp, qp, NULL, pkts[i], 100 + 50 * i, NULL);
    }
    TU_CHECK_EQ(dp_dq(dp, qp, out, 4), 2);
    for (int i = 0; i < 2; i++) {
        dp_check_pkt(&out[i], pkts[i], 100 + 50 * i, "round trip, dequeue");
        dp_expect_used(&dp->vq[TX(qp)], heads[i], 0);
    }
    dp_expect_no_used(&dp->vq[TX(qp)]);
    dp_release_pkts(out, 4);

    for (int i = 0; i < 2; i++) {
        dp_rx_post(dp, qp, 2048, NULL);
    }
    for (int i = 0; i < 2; i++) {
        TU_CHECK_EQ(dp_enq1(dp, qp, pkts[i], 100 + 50 * i, NULL), 1);
        dp_rx_expect(dp, qp, pkts[i], 100 + 50 * i, NULL, 1,
                     "round trip, enqueue");
        free(pkts[i]);
    }
    dp_expect_no_used(&dp->vq[RX(qp)]);
}

/* Hand-built chains. */

/* Takes 'n' free descriptors of 'vq' into 'ids' and claims them as a chain
 * headed by the first.  Returns the head. */
uint16_t
dp_take_chain(struct tfe_vq *vq, uint16_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int d = tfe_vq_take_desc(vq);

        TU_CHECK(d >= 0);
        ids[i] = d;
    }
    tfe_vq_claim(vq, ids[0], ids, n);
    return ids[0];
}

void
dp_set_desc(struct tfe_vq *vq, uint16_t i, uint64_t addr, uint32_t len,
            uint16_t flags, uint16_t next)
{
    *tfe_vq_desc(vq, i) = (struct tfe_desc) {
        .addr = addr, .len = len, .flags = flags, .next = next,
    };
}

/* Makes available a one-descriptor chain. */
uint16_t
dp_post_one(struct tfe_vq *vq, uint64_t addr, uint32_t len, uint16_t flags)
{
    uint16_t id;

    dp_take_chain(vq, &id, 1);
    dp_set_desc(vq, id, addr, len, flags, 0);
    tfe_vq_push_avail(vq, id);
    return id;
}

/* Makes available a two-descriptor chain. */
uint16_t
dp_post_two(struct tfe_vq *vq, uint64_t a0, uint32_t l0, uint16_t f0,
            uint64_t a1, uint32_t l1, uint16_t f1)
{
    uint16_t ids[2];

    dp_take_chain(vq, ids, 2);
    dp_set_desc(vq, ids[0], a0, l0, f0 | TFE_DESC_F_NEXT, ids[1]);
    dp_set_desc(vq, ids[1], a1, l1, f1, 0);
    tfe_vq_push_avail(vq, ids[0]);
    return ids[0];
}

/* Writes an indirect table of 'n' entries at 'gpa'. */
void
dp_write_table(struct tfe_vq *vq, uint64_t gpa, const struct tfe_desc *t,
               size_t n)
{
    TU_CHECK(tfe_mem_write(vq->mem, gpa, t, n * sizeof *t));
}

/* Makes available a chain of one descriptor pointing to an indirect table
 * at 'table' of 'len' bytes. */
uint16_t
dp_post_indirect(struct tfe_vq *vq, uint64_t table, uint32_t len)
{
    return dp_post_one(vq, table, len, TFE_DESC_F_INDIRECT);
}

/* A buffer in the arena holding a zero header and some bytes. */
uint64_t
dp_arena_buf(struct tfe_vq *vq, uint32_t len)
{
    uint64_t gpa = tfe_vq_alloc(vq, len, 64);
    uint8_t *zero = calloc(1, len);

    TU_CHECK(zero != NULL);
    TU_CHECK(tfe_mem_write(vq->mem, gpa, zero, len));
    free(zero);
    return gpa;
}

/* Logs what the engine has put in vring 'vring''s used ring and its drop
 * counters, to explain a failure. */
void
dp_dump_vring(struct dp *dp, unsigned int vring)
{
    const struct tfe_vq *vq = &dp->vq[vring];
    struct vhost_queue_stats s = dp_get_stats(dp, vring);

    tu_log("vring %u: avail->idx %u, used->idx %u, we have read %u",
           vring, *vq->avail_idx, tfe_vq_used_idx(vq), vq->next_used);
    for (uint16_t i = vq->next_used; i != tfe_vq_used_idx(vq); i++) {
        const struct tfe_used_elem *e = &vq->used_ring[i % vq->size];
        tu_log("  used[%u] = {id %"PRIu32", len %"PRIu32"}", i, e->id,
               e->len);
    }
    tu_log("  packets %"PRIu64", broken %d", s.packets, s.broken);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s.drops[r]) {
            tu_log("  drops[%s] = %"PRIu64, vhost_drop_reason_to_string(r),
                   s.drops[r]);
        }
    }
}

/* Moves 'n' packets through queue pair 0 in direction 'tx' (dequeue) or
 * not (enqueue) and checks them. */
void
dp_burst(struct dp *dp, bool tx, unsigned int n)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[VHOST_MAX_BURST];

    TU_CHECK(n <= VHOST_MAX_BURST);
    memset(out, 0, sizeof out);
    for (unsigned int i = 0; i < n; i++) {
        pkts[i] = dp_new_pkt(dp, 64 + i, MAC_UNICAST);
        if (tx) {
            dp_tx_post(dp, 0, NULL, pkts[i], 64 + i, NULL);
        } else {
            dp_rx_post(dp, 0, 2048, NULL);
        }
    }
    if (tx) {
        TU_CHECK_EQ(dp_dq(dp, 0, out, VHOST_MAX_BURST), n);
        for (unsigned int i = 0; i < n; i++) {
            struct tfe_used_elem u;
            dp_check_pkt(&out[i], pkts[i], 64 + i, "dequeue");
            TU_CHECK_OK(tfe_vq_get_used(&dp->vq[TX(0)], &u));
        }
        dp_release_pkts(out, VHOST_MAX_BURST);
    } else {
        for (unsigned int i = 0; i < n; i++) {
            out[i] = (struct vhost_pkt) { .data = pkts[i], .len = 64 + i };
        }
        TU_CHECK_EQ(vhost_enqueue_burst(dp->port, 0, out, n), n);
        for (unsigned int i = 0; i < n; i++) {
            dp_rx_expect(dp, 0, pkts[i], 64 + i, NULL, 1, "enqueue");
        }
    }
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i]);
    }
}
