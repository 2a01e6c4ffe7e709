/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Data path tests: vhost_dequeue_burst() and vhost_enqueue_burst() on split
 * virtqueues, against the model guest driver in test-frontend.h.
 *
 * Every test brings up one port with two queue pairs (so that a test can
 * show that a guest's misbehaviour on one queue leaves the others alone)
 * over this guest memory:
 *
 *     region 0   GPA  0 MB ..  8 MB   memfd offset 0
 *     (gap)      GPA  8 MB .. 16 MB
 *     region 1   GPA 16 MB .. 24 MB   memfd offset 64 kB
 *     region 2   GPA 24 MB .. 25 MB   memfd offset 4 kB   (adjacent to 1)
 *     region 3   GPA 25 MB .. 26 MB   memfd offset 0      (adjacent to 2)
 *
 * Regions 1-2 and 2-3 are contiguous in guest physical memory but are
 * separate memfds, so a buffer or indirect table placed across 24 MB or
 * 25 MB forces the engine's cross-region (cold) path.  Vring i lives in
 * region i; buffers come from arenas in regions 0 (receive rings) and 1
 * (transmit rings).
 *
 * The tests check the engine against its contract (include/ovs-vhost/
 * vhost.h, "Data path") and VIRTIO 1.2 §2.7 and §5.1.6: packet bytes,
 * lengths and offload metadata in both directions, used ring entries,
 * per-vring statistics and drop reasons, notifications, the dirty log,
 * and that nothing leaks.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ovs-vhost/vhost.h"
#include "test-frontend.h"
#include "test-util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

#define MB (UINT64_C(1) << 20)
#define PAGE 4096
#define DIV_ROUND_UP(X, Y) (((X) + (Y) - 1) / (Y))

/* Guest memory layout (see above). */
#define DP_REGION_SIZE (8 * MB)
#define DP_GPA1 (16 * MB)
#define DP_SMALL_REGION_SIZE MB
#define DP_GAP_GPA (12 * MB)            /* In no region. */
#define DP_FAR_GPA (UINT64_C(1) << 30)  /* Beyond every region. */
#define DP_ARENA_SIZE (2 * MB)
#define DP_LOG_SIZE 4096                /* Covers 128 MB of guest memory. */

#define F(BIT) FEATURE_BIT(BIT)

/* What the port offers: everything the contract names. */
#define DP_OFFERED                                                      \
    (F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF) | F(VIRTIO_NET_F_MQ) \
     | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX)      \
     | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM)                \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT) | F(VHOST_F_LOG_ALL)                      \
     | F(VIRTIO_NET_F_GUEST_ANNOUNCE) | F(VIRTIO_NET_F_MTU))

/* What every test acks, and what most ack on top. */
#define DP_BASE                                                         \
    (F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT))
#define DP_FULL                                                         \
    (DP_BASE | F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF)        \
     | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX))

#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)
#define REASON(X) (1u << VHOST_DROP_##X)

/* The embedder's buffers: malloc()ed, 'handle' is the block. */
struct dalloc {
    unsigned int n_alloc;       /* Successful alloc() calls. */
    unsigned int n_failed;      /* alloc() calls refused. */
    unsigned int n_free;        /* free() calls. */
    uint32_t max_len;           /* Largest 'len' asked for. */
    int fail_after;             /* Refuse after this many more (-1: no). */
    void *freed[VHOST_MAX_BURST]; /* Handles free() was given. */
};

static bool
dalloc_alloc(void *aux, struct vhost_pkt *pkt, uint32_t len)
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

static void
dalloc_free(void *aux, struct vhost_pkt *pkt)
{
    struct dalloc *da = aux;

    if (da->n_free < ARRAY_SIZE(da->freed)) {
        da->freed[da->n_free] = pkt->handle;
    }
    da->n_free++;
    free(pkt->handle);
}

/* Fixture. */

struct dp_cfg {
    uint64_t features;          /* Acked (DP_OFFERED & this). */
    unsigned int queue_size;    /* 0: 256. */
    bool log_used;              /* VHOST_VRING_F_LOG on every vring. */
    uint64_t used_align;        /* 0: 64. */
};

struct dp {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq vq[4];        /* By vring: RX(0), TX(0), RX(1), TX(1). */
    unsigned int hdr_len;       /* 10 or 12. */
    bool mrg;
    struct dalloc da;
    struct vhost_pkt_alloc alloc;
    uint32_t seq;               /* Next packet's sequence number. */
    int fds0;
    int threads0;
};

static struct tfe_mem *
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
static uint64_t
boundary_tx(const struct dp *dp)
{
    return tfe_mem_boundary(dp->fe->mem, 1);
}

static uint64_t
boundary_rx(const struct dp *dp)
{
    return tfe_mem_boundary(dp->fe->mem, 2);
}

static uint64_t
mem_end(const struct dp *dp)
{
    return tfe_mem_boundary(dp->fe->mem, 3);
}

/* Starts an engine with one server port of two queue pairs offering
 * DP_OFFERED, connects a frontend with the guest memory above, and brings
 * the device up with 'cfg'. */
static void
dp_start(struct dp *dp, const char *name, const struct dp_cfg *cfg)
{
    struct vhost_port_options opts;
    struct tfe_setup setup;
    char features[512];

    memset(dp, 0, sizeof *dp);
    dp->fds0 = tu_count_fds();
    dp->threads0 = tu_count_threads();
    tu_events_init(&dp->ev);
    dp->path = tu_path(name);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = dp->path;
    opts.mode = VHOST_PORT_SERVER;
    opts.features = DP_OFFERED;
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
    TU_CHECK_OK(tfe_setup_device(dp->fe, 2, &setup));
    TU_CHECK_EQ(dp->fe->features
                & ~FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES),
                cfg->features & DP_OFFERED);
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
        .alloc = dalloc_alloc, .free = dalloc_free, .aux = &dp->da,
    };
}

/* Tears 'dp' down and checks that no fd, thread or mapping leaked. */
static void
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

static struct dp_cfg
cfg_features(uint64_t features)
{
    return (struct dp_cfg) { .features = features };
}

/* Packets. */

enum mac_kind { MAC_UNICAST, MAC_MULTICAST, MAC_BROADCAST };

/* Returns a new packet of 'len' bytes (at least 18): an Ethernet header to
 * a 'kind' destination, the packet's sequence number, then a pattern that
 * depends on both, so no two packets of a test are alike. */
static uint8_t *
new_pkt(struct dp *dp, size_t len, enum mac_kind kind)
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

static void
check_bytes(const uint8_t *got, const uint8_t *exp, size_t len,
            const char *what)
{
    for (size_t i = 0; i < len; i++) {
        if (got[i] != exp[i]) {
            TU_FAIL("%s: byte %zu of %zu is %#x, expected %#x", what, i,
                    len, got[i], exp[i]);
        }
    }
}

static void
check_pkt(const struct vhost_pkt *got, const uint8_t *exp, size_t len,
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
    check_bytes(got->data, exp, len, what);
}

static void
check_ol_zero(const struct vhost_pkt *pkt, const char *what)
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
static void
release_pkts(struct vhost_pkt *pkts, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i].handle);
        pkts[i].handle = pkts[i].data = NULL;
    }
}

/* Guest side. */

/* Makes a transmit packet available on queue pair 'qp': header 'hdr' (zero
 * if null) and 'len' bytes of 'pkt'.  Returns the chain's head. */
static int
tx_post(struct dp *dp, unsigned int qp, const struct tfe_net_hdr *hdr,
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

static int
rx_post(struct dp *dp, unsigned int qp, uint32_t len,
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
static unsigned int
dq(struct dp *dp, unsigned int qp, struct vhost_pkt *pkts, unsigned int n)
{
    memset(pkts, 0, n * sizeof *pkts);
    return vhost_dequeue_burst(dp->port, qp, pkts, n, &dp->alloc);
}

static unsigned int
enq1(struct dp *dp, unsigned int qp, const uint8_t *pkt, size_t len,
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
static void
expect_used(struct tfe_vq *vq, unsigned int head, uint32_t len)
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

static void
expect_no_used(struct tfe_vq *vq)
{
    if (tfe_vq_n_used(vq)) {
        TU_FAIL("vring %"PRIu32": %u unexpected used entries (first id "
                "%"PRIu32")", vq->index, tfe_vq_n_used(vq),
                vq->used_ring[vq->next_used % vq->size].id);
    }
}

/* The header the engine should write for 'ol' and 'num_buffers'. */
static void
build_hdr(uint8_t hdr[12], const struct vhost_offload *ol,
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
static void
rx_expect(struct dp *dp, unsigned int qp, const uint8_t *pkt, size_t len,
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
    build_hdr(hdr, ol, dp->mrg ? got_bufs : 1);
    check_bytes(buf, hdr, dp->hdr_len, what);
    check_bytes(buf + dp->hdr_len, pkt, len, what);

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

static struct vhost_queue_stats
get_stats(struct dp *dp, unsigned int vring)
{
    struct vhost_queue_stats s;

    memset(&s, 0, sizeof s);
    TU_CHECK_OK(vhost_port_get_queue_stats(dp->port, vring, &s));
    return s;
}

/* Adds a 'len'-byte packet to the expected statistics 'e', as DPDK's vhost
 * PMD counts it: by destination MAC (broadcast is not also multicast) and
 * by length without the virtio-net header. */
static void
stats_add(struct vhost_queue_stats *e, const uint8_t *pkt, size_t len)
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

#define CHECK_STAT(VRING, GOT, EXP, FIELD)                              \
    do {                                                                \
        if ((GOT)->FIELD != (EXP)->FIELD) {                             \
            TU_FAIL("vring %u stats: %s is %"PRIu64", expected %"PRIu64, \
                    VRING, #FIELD, (uint64_t) (GOT)->FIELD,             \
                    (uint64_t) (EXP)->FIELD);                           \
        }                                                               \
    } while (0)

/* Checks the packet counters, drops and 'broken' of vring 'vring' against
 * 'e' (notification counters are checked where they matter). */
static void
check_stats(struct dp *dp, unsigned int vring,
            const struct vhost_queue_stats *e)
{
    struct vhost_queue_stats s = get_stats(dp, vring);

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

static uint64_t
total_drops(const struct vhost_queue_stats *s)
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
static void
check_no_kicks(const struct tfe_vq *vq, bool event_idx)
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
 * next index.  The engine must overwrite it on its first burst. */
static void
poison_avail_event(struct tfe_vq *vq)
{
    uint16_t *ev = (uint16_t *) &vq->used_ring[vq->size];

    __atomic_store_n(ev, (uint16_t) (vq->next_avail + 1), __ATOMIC_RELEASE);
}

/* Round trips. */

/* Shows that queue pair 'qp' works: two packets each way, checked. */
static void
roundtrip(struct dp *dp, unsigned int qp, const char *why)
{
    struct vhost_pkt out[4];
    uint8_t *pkts[2];
    int heads[2];

    tu_log("  queue pair %u still works (%s)", qp, why);
    for (int i = 0; i < 2; i++) {
        pkts[i] = new_pkt(dp, 100 + 50 * i, MAC_UNICAST);
        heads[i] = tx_post(dp, qp, NULL, pkts[i], 100 + 50 * i, NULL);
    }
    TU_CHECK_EQ(dq(dp, qp, out, 4), 2);
    for (int i = 0; i < 2; i++) {
        check_pkt(&out[i], pkts[i], 100 + 50 * i, "round trip, dequeue");
        expect_used(&dp->vq[TX(qp)], heads[i], 0);
    }
    expect_no_used(&dp->vq[TX(qp)]);
    release_pkts(out, 4);

    for (int i = 0; i < 2; i++) {
        rx_post(dp, qp, 2048, NULL);
    }
    for (int i = 0; i < 2; i++) {
        TU_CHECK_EQ(enq1(dp, qp, pkts[i], 100 + 50 * i, NULL), 1);
        rx_expect(dp, qp, pkts[i], 100 + 50 * i, NULL, 1,
                  "round trip, enqueue");
        free(pkts[i]);
    }
    expect_no_used(&dp->vq[RX(qp)]);
}

/* Hand-built chains. */

/* Takes 'n' free descriptors of 'vq' into 'ids' and claims them as a chain
 * headed by the first.  Returns the head. */
static uint16_t
take_chain(struct tfe_vq *vq, uint16_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int d = tfe_vq_take_desc(vq);

        TU_CHECK(d >= 0);
        ids[i] = d;
    }
    tfe_vq_claim(vq, ids[0], ids, n);
    return ids[0];
}

static void
set_desc(struct tfe_vq *vq, uint16_t i, uint64_t addr, uint32_t len,
         uint16_t flags, uint16_t next)
{
    *tfe_vq_desc(vq, i) = (struct tfe_desc) {
        .addr = addr, .len = len, .flags = flags, .next = next,
    };
}

/* Makes available a one-descriptor chain. */
static uint16_t
post_one(struct tfe_vq *vq, uint64_t addr, uint32_t len, uint16_t flags)
{
    uint16_t id;

    take_chain(vq, &id, 1);
    set_desc(vq, id, addr, len, flags, 0);
    tfe_vq_push_avail(vq, id);
    return id;
}

/* Makes available a two-descriptor chain. */
static uint16_t
post_two(struct tfe_vq *vq, uint64_t a0, uint32_t l0, uint16_t f0,
         uint64_t a1, uint32_t l1, uint16_t f1)
{
    uint16_t ids[2];

    take_chain(vq, ids, 2);
    set_desc(vq, ids[0], a0, l0, f0 | TFE_DESC_F_NEXT, ids[1]);
    set_desc(vq, ids[1], a1, l1, f1, 0);
    tfe_vq_push_avail(vq, ids[0]);
    return ids[0];
}

/* Writes an indirect table of 'n' entries at 'gpa'. */
static void
write_table(struct tfe_vq *vq, uint64_t gpa, const struct tfe_desc *t,
            size_t n)
{
    TU_CHECK(tfe_mem_write(vq->mem, gpa, t, n * sizeof *t));
}

/* Makes available a chain of one descriptor pointing to an indirect table
 * at 'table' of 'len' bytes. */
static uint16_t
post_indirect(struct tfe_vq *vq, uint64_t table, uint32_t len)
{
    return post_one(vq, table, len, TFE_DESC_F_INDIRECT);
}

/* A buffer in the arena holding a zero header and some bytes. */
static uint64_t
arena_buf(struct tfe_vq *vq, uint32_t len)
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
static void
dump_vring(struct dp *dp, unsigned int vring)
{
    const struct tfe_vq *vq = &dp->vq[vring];
    struct vhost_queue_stats s = get_stats(dp, vring);

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
    struct dp_cfg cfg = cfg_features(features);
    struct vhost_queue_stats e, s;
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint16_t heads[16];
    uint8_t *a, *b;
    int ha, hb;
    unsigned int n;
    size_t k;
    struct dp dp;

    dp_start(&dp, name, &cfg);
    a = new_pkt(&dp, 100, MAC_UNICAST);
    b = new_pkt(&dp, 200, MAC_BROADCAST);
    ha = tx_post(&dp, 0, NULL, a, 100, NULL);
    k = build(&dp, &dp.vq[TX(0)], heads);
    hb = tx_post(&dp, 0, NULL, b, 200, NULL);
    tu_log("%zu bad chains between two good packets", k);

    /* As in run_bad_rx(): a loop of a whole ring may end a burst by its
     * work budget; every burst consumes the chain it starts with. */
    n = 0;
    for (size_t bursts = 0; n < 2 && bursts <= k; bursts++) {
        n += dq(&dp, 0, out + n, VHOST_MAX_BURST - n);
    }
    if (n != 2) {
        dump_vring(&dp, TX(0));
        TU_FAIL("dequeue returned %u packets, expected 2", n);
    }
    check_pkt(&out[0], a, 100, "packet before the bad chains");
    check_pkt(&out[1], b, 200, "packet after the bad chains");
    release_pkts(out, VHOST_MAX_BURST);

    tu_log("each bad chain is used with length 0, in order");
    expect_used(&dp.vq[TX(0)], ha, 0);
    for (size_t i = 0; i < k; i++) {
        expect_used(&dp.vq[TX(0)], heads[i], 0);
    }
    expect_used(&dp.vq[TX(0)], hb, 0);
    expect_no_used(&dp.vq[TX(0)]);

    tu_log("and counted under the right reason");
    s = get_stats(&dp, TX(0));
    memset(&e, 0, sizeof e);
    stats_add(&e, a, 100);
    stats_add(&e, b, 200);
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
    TU_CHECK_EQ(total_drops(&s), k);
    check_stats(&dp, TX(0), &e);
    free(a);
    free(b);

    roundtrip(&dp, 1, "the other queue pair");
    roundtrip(&dp, 0, "the same queue pair");
    dp_finish(&dp);
}

/* The same for receive rings: hostile chains ahead of a good one; a packet
 * enqueued lands in the good one, the bad ones are used with length 0. */
static void
run_bad_rx(const char *name, uint64_t features, bad_chain_fn *build,
           unsigned int reasons)
{
    struct dp_cfg cfg = cfg_features(features);
    struct vhost_queue_stats e, s;
    uint16_t heads[16];
    uint8_t *a;
    int hg;
    size_t k;
    struct dp dp;

    dp_start(&dp, name, &cfg);
    a = new_pkt(&dp, 300, MAC_MULTICAST);
    k = build(&dp, &dp.vq[RX(0)], heads);
    hg = rx_post(&dp, 0, 2048, NULL);
    tu_log("%zu bad chains, then a good one (head %d)", k, hg);

    /* A burst of one packet has a budget of one long chain
     * (VIRTQ_CHAIN_VISITS_MAX descriptors): a loop of a whole ring may
     * end it, and then the next burst goes on from there.  Each burst
     * consumes at least the chain it starts with. */
    {
        unsigned int got = 0, bursts = 0;

        while (!got && bursts++ <= k) {
            got = enq1(&dp, 0, a, 300, NULL);
        }
        TU_CHECK_EQ(got, 1);
    }
    tu_log("each bad chain is used with length 0, in order");
    for (size_t i = 0; i < k; i++) {
        expect_used(&dp.vq[RX(0)], heads[i], 0);
    }
    tu_log("and the packet lands in the good chain");
    TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                       % dp.vq[RX(0)].size].id, hg);
    rx_expect(&dp, 0, a, 300, NULL, 1, "packet after the bad chains");
    expect_no_used(&dp.vq[RX(0)]);

    s = get_stats(&dp, RX(0));
    memset(&e, 0, sizeof e);
    stats_add(&e, a, 300);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (reasons & (1u << r)) {
            e.drops[r] = reasons & (reasons - 1) ? s.drops[r] : k;
        }
    }
    TU_CHECK_EQ(total_drops(&s), k);
    check_stats(&dp, RX(0), &e);
    free(a);

    roundtrip(&dp, 1, "the other queue pair");
    roundtrip(&dp, 0, "the same queue pair");
    dp_finish(&dp);
}

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
    struct dp_cfg cfg = cfg_features(features);
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
    poison_avail_event(&dp.vq[TX(0)]);
    poison_avail_event(&dp.vq[RX(0)]);
    for (size_t i = 0; i < N_COMBO; i++) {
        struct tfe_buf_opts o = { .n_descs = 1 + i % 4,
                                  .indirect = indirect };

        pkts[i] = new_pkt(&dp, combo_sizes[i], i % 3);
        heads[i] = tx_post(&dp, 0, NULL, pkts[i], combo_sizes[i], &o);
        stats_add(&e, pkts[i], combo_sizes[i]);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, VHOST_MAX_BURST), N_COMBO);
    for (size_t i = 0; i < N_COMBO; i++) {
        check_pkt(&out[i], pkts[i], combo_sizes[i], "dequeued packet");
        check_ol_zero(&out[i], "dequeued packet");
        expect_used(&dp.vq[TX(0)], heads[i], 0);
    }
    expect_no_used(&dp.vq[TX(0)]);
    release_pkts(out, VHOST_MAX_BURST);
    check_stats(&dp, TX(0), &e);

    tu_log("the guest is notified once; the engine polls");
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[TX(0)]), 1);
    s = get_stats(&dp, TX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    TU_CHECK_EQ(s.notifications_suppressed, 0);
    check_no_kicks(&dp.vq[TX(0)], event_idx);

    tu_log("host to guest: the same packets%s",
           mrg ? ", into 1536-byte buffers" : ", one chain each");
    if (mrg) {
        for (int i = 0; i < 64; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 2,
                                      .indirect = indirect };
            rx_post(&dp, 0, MRG_BUF_SIZE, &o);
        }
    } else {
        for (size_t i = 0; i < N_COMBO; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 3,
                                      .indirect = indirect };
            rx_post(&dp, 0, 9000 + dp.hdr_len + 100, &o);
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
        rx_expect(&dp, 0, pkts[i], combo_sizes[i], NULL, n_bufs,
                  "enqueued packet");
    }
    if (!mrg) {
        expect_no_used(&dp.vq[RX(0)]);
    }
    check_stats(&dp, RX(0), &e);
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[RX(0)]), 1);
    s = get_stats(&dp, RX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    check_no_kicks(&dp.vq[RX(0)], event_idx);

    for (size_t i = 0; i < N_COMBO; i++) {
        free(pkts[i]);
    }
    roundtrip(&dp, 1, "the other queue pair");
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
    uint64_t buf = arena_buf(vq, 256);
    uint16_t ids[2];

    tu_log("next = queue size; next = 0xffff after a good descriptor");
    heads[0] = take_chain(vq, ids, 1);
    set_desc(vq, ids[0], buf, 100, TFE_DESC_F_NEXT | (vq->index % 2 ? 0
                                                      : TFE_DESC_F_WRITE),
             vq->size);
    tfe_vq_push_avail(vq, heads[0]);

    heads[1] = take_chain(vq, ids, 2);
    set_desc(vq, ids[0], buf, 50, TFE_DESC_F_NEXT | (vq->index % 2 ? 0
                                                     : TFE_DESC_F_WRITE),
             ids[1]);
    set_desc(vq, ids[1], buf + 50, 50, TFE_DESC_F_NEXT
             | (vq->index % 2 ? 0 : TFE_DESC_F_WRITE), 0xffff);
    tfe_vq_push_avail(vq, heads[1]);
    return 2;
}

static size_t
bad_loop(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint16_t w = vq->index % 2 ? 0 : TFE_DESC_F_WRITE;
    uint16_t nx = TFE_DESC_F_NEXT | w;
    uint64_t buf = arena_buf(vq, 256);
    uint16_t ids[3];

    tu_log("a two-descriptor cycle of 60-byte buffers");
    heads[0] = take_chain(vq, ids, 2);
    set_desc(vq, ids[0], buf, 60, nx, ids[1]);
    set_desc(vq, ids[1], buf + 60, 60, nx, ids[0]);
    tfe_vq_push_avail(vq, heads[0]);

    tu_log("a descriptor that is its own next");
    heads[1] = take_chain(vq, ids, 1);
    set_desc(vq, ids[0], buf, 60, nx, ids[0]);
    tfe_vq_push_avail(vq, heads[1]);

    tu_log("a header, then a cycle of zero-length descriptors");
    heads[2] = take_chain(vq, ids, 3);
    set_desc(vq, ids[0], buf, dp->hdr_len, nx, ids[1]);
    set_desc(vq, ids[1], buf, 0, nx, ids[2]);
    set_desc(vq, ids[2], buf, 0, nx, ids[1]);
    tfe_vq_push_avail(vq, heads[2]);

    tu_log("a cycle of nothing but zero-length descriptors");
    heads[3] = take_chain(vq, ids, 2);
    set_desc(vq, ids[0], buf, 0, nx, ids[1]);
    set_desc(vq, ids[1], buf, 0, nx, ids[0]);
    tfe_vq_push_avail(vq, heads[3]);
    return 4;
}

static size_t
bad_direction_tx(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = arena_buf(vq, 512);
    uint64_t table = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc t[2] = {
        { buf, 100, TFE_DESC_F_NEXT, 1 },
        { buf + 100, 100, TFE_DESC_F_WRITE, 0 },
    };

    tu_log("a device-writable descriptor; a readable one then a writable "
           "one; the same in an indirect table");
    heads[0] = post_one(vq, buf, 100, TFE_DESC_F_WRITE);
    heads[1] = post_two(vq, buf, 100, 0, buf + 100, 100, TFE_DESC_F_WRITE);
    write_table(vq, table, t, 2);
    heads[2] = post_indirect(vq, table, sizeof t);
    return 3;
}

static size_t
bad_addr_tx(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = arena_buf(vq, 256);
    uint64_t r0_end = tfe_mem_boundary(vq->mem, 0);
    uint64_t table = tfe_vq_alloc(vq, 32, 16);
    struct tfe_desc t[2] = {
        { buf, 50, TFE_DESC_F_NEXT, 1 },
        { DP_GAP_GPA, 100, 0, 0 },
    };

    tu_log("a buffer in the gap; beyond memory; wrapping 2^64; running "
           "into the gap; past the end of memory; 4 GB long; a bad second "
           "descriptor; a bad entry in an indirect table");
    heads[0] = post_one(vq, DP_GAP_GPA, 100, 0);
    heads[1] = post_one(vq, DP_FAR_GPA, 100, 0);
    heads[2] = post_one(vq, UINT64_MAX - 50, 100, 0);
    heads[3] = post_one(vq, r0_end - 50, 100, 0);
    heads[4] = post_one(vq, mem_end(dp) - 50, 100, 0);
    heads[5] = post_one(vq, buf, UINT32_MAX, 0);
    heads[6] = post_two(vq, buf, 50, 0, DP_GAP_GPA, 100, 0);
    write_table(vq, table, t, 2);
    heads[7] = post_indirect(vq, table, sizeof t);
    return 8;
}

static size_t
bad_indirect(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint16_t w = vq->index % 2 ? 0 : TFE_DESC_F_WRITE;
    uint64_t buf = arena_buf(vq, 256);
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
    write_table(vq, t_big, bigt, vq->size + 1);
    free(bigt);
    write_table(vq, t_ok, ok, 2);
    write_table(vq, t_nest, nest, 2);

    tu_log("table length 24 (not a multiple of 16); 16 * (size + 1); a "
           "nested table; a table in the gap; running into the gap; "
           "wrapping 2^64");
    heads[0] = post_indirect(vq, t_ok, 24);
    heads[1] = post_indirect(vq, t_big, big);
    heads[2] = post_indirect(vq, t_nest, sizeof nest);
    heads[3] = post_indirect(vq, DP_GAP_GPA, 32);
    heads[4] = post_indirect(vq, r0_end - 16, 32);
    heads[5] = post_indirect(vq, UINT64_MAX - 15, 32);
    return 6;
}

static size_t
bad_indirect_chain(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint16_t w = vq->index % 2 ? 0 : TFE_DESC_F_WRITE;
    uint64_t buf = arena_buf(vq, 256);
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
    write_table(vq, t1, out_of_table, 2);
    write_table(vq, t2, cycle, 2);
    heads[0] = post_indirect(vq, t1, sizeof out_of_table);
    heads[1] = post_indirect(vq, t2, sizeof cycle);
    return 2;
}

static size_t
bad_short_hdr(struct dp *dp, struct tfe_vq *vq, uint16_t heads[])
{
    uint64_t buf = arena_buf(vq, 256);
    uint64_t table = tfe_vq_alloc(vq, 16, 16);
    struct tfe_desc t[1] = { { buf, dp->hdr_len - 1, 0, 0 } };

    tu_log("chains of %u - 1 bytes: one descriptor, two (5 + %u), in an "
           "indirect table; and a zero-length descriptor",
           dp->hdr_len, dp->hdr_len - 6);
    heads[0] = post_one(vq, buf, dp->hdr_len - 1, 0);
    heads[1] = post_two(vq, buf, 5, 0, buf + 64, dp->hdr_len - 6, 0);
    write_table(vq, table, t, 1);
    heads[2] = post_indirect(vq, table, sizeof t);
    heads[3] = post_one(vq, buf, 0, 0);
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
    uint8_t *pkt = new_pkt(dp, 100, MAC_UNICAST);

    tu_log("NEEDS_CSUM with csum_start + csum_offset + 2 beyond a 100-byte "
           "packet, including sums that wrap 16 bits");
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM,
            .csum_start = bad[i].start, .csum_offset = bad[i].offset,
        };
        heads[i] = tx_post(dp, vq->index / 2, &h, pkt, 100, NULL);
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
 * but only a burst of messages (20, then 1 a second), with the number
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
            heads[i] = post_one(&dp.vq[TX(0)], DP_GAP_GPA, 100, 0);
        }
        /* Bounded work: each call takes at most a burst of them. */
        for (int calls = 0; calls < 10; calls++) {
            TU_CHECK_EQ(dq(&dp, 0, out, VHOST_MAX_BURST), 0);
        }
        n_bad += 200;
        TU_CHECK_EQ(get_stats(&dp, TX(0)).drops[VHOST_DROP_BAD_ADDR], n_bad);
        for (int i = 0; i < 200; i++) {
            expect_used(&dp.vq[TX(0)], heads[i], 0);
        }
    }
    tu_log("%u messages for 600 drops", c.drops);
    TU_CHECK(c.drops >= 20 && c.drops <= 25);

    tu_log("queue pair 1's first drop is logged all the same");
    c.drops = 0;
    uint16_t h = post_one(&dp.vq[TX(1)], DP_GAP_GPA, 100, 0);
    TU_CHECK_EQ(dq(&dp, 1, out, VHOST_MAX_BURST), 0);
    TU_CHECK_EQ(get_stats(&dp, TX(1)).drops[VHOST_DROP_BAD_ADDR], 1);
    TU_CHECK_EQ(c.drops, 1);
    expect_used(&dp.vq[TX(1)], h, 0);

    tu_log("a second later, queue pair 0 logs again and says how many it "
           "held back");
    usleep(1100 * 1000);
    c.drops = c.suppressed = 0;
    h = post_one(&dp.vq[TX(0)], DP_GAP_GPA, 100, 0);
    TU_CHECK_EQ(dq(&dp, 0, out, VHOST_MAX_BURST), 0);
    TU_CHECK_EQ(c.drops, 1);
    TU_CHECK_EQ(c.suppressed, 1);
    expect_used(&dp.vq[TX(0)], h, 0);

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
    struct dp_cfg cfg = cfg_features(DP_FULL & ~(F(VIRTIO_NET_F_CSUM)
                                                 | F(VIRTIO_NET_F_HOST_TSO4)
                                                 | F(VIRTIO_NET_F_HOST_TSO6)));
    struct tfe_net_hdr h = {
        .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = 1, .gso_size = 1,
        .hdr_len = 0xffff, .csum_start = 0xfff0, .csum_offset = 0x0e,
    };
    struct vhost_pkt out[8];
    struct dp dp;

    dp_start(&dp, "no-host-ol", &cfg);
    uint8_t *pkt = new_pkt(&dp, 100, MAC_UNICAST);
    tu_log("8 packets whose headers ask for a checksum past the end and "
           "for TSO, with neither negotiated");
    for (int i = 0; i < 8; i++) {
        tx_post(&dp, 0, &h, pkt, 100, NULL);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 8), 8);
    for (int i = 0; i < 8; i++) {
        check_pkt(&out[i], pkt, 100, "packet with an ignored header");
        check_ol_zero(&out[i], "packet with an ignored header");
    }
    release_pkts(out, 8);
    {
        struct vhost_queue_stats s = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s), 0);
        TU_CHECK_EQ(s.packets, 8);
    }
    free(pkt);
    dp_finish(&dp);
}

/* A chain exactly as long as the header holds a packet of length 0. */
static void
test_hdr_only_tx(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_pkt out[4];
    struct dp dp;
    uint8_t *a;
    int h0, h1;

    dp_start(&dp, "hdr-only", &cfg);
    a = new_pkt(&dp, 64, MAC_UNICAST);
    tu_log("a chain of exactly the header, then a 64-byte packet");
    h0 = tx_post(&dp, 0, NULL, a, 0, NULL);
    h1 = tx_post(&dp, 0, NULL, a, 64, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 2);
    TU_CHECK_EQ(out[0].len, 0);
    check_pkt(&out[1], a, 64, "packet after a header-only chain");
    release_pkts(out, 4);
    expect_used(&dp.vq[TX(0)], h0, 0);
    expect_used(&dp.vq[TX(0)], h1, 0);
    {
        struct vhost_queue_stats s = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s), 0);
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
    heads[0] = post_one(vq, buf, 2048, 0);
    heads[1] = post_two(vq, buf, 100, TFE_DESC_F_WRITE, buf + 128, 2000, 0);
    write_table(vq, table, t, 2);
    heads[2] = post_indirect(vq, table, sizeof t);
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
    heads[0] = post_one(vq, DP_GAP_GPA, 2048, w);
    heads[1] = post_one(vq, UINT64_MAX - 50, 2048, w);
    heads[2] = post_one(vq, r0_end - 50, 2048, w);
    heads[3] = post_one(vq, mem_end(dp) - 50, 2048, w);
    heads[4] = post_two(vq, buf, 6, w, DP_GAP_GPA, 2048, w);
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
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct vhost_pkt out[4];
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "jump-tx", &cfg);
    vq = &dp.vq[TX(0)];
    a = new_pkt(&dp, 100, MAC_UNICAST);
    tx_post(&dp, 0, NULL, a, 100, NULL);

    tu_log("avail->idx = size + 1 ahead of the engine: the queue breaks");
    tfe_vq_set_avail_idx(vq, vq->size + 1);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 0);
    memset(&e, 0, sizeof e);
    e.drops[VHOST_DROP_AVAIL_IDX] = 1;
    e.broken = true;
    check_stats(&dp, TX(0), &e);
    expect_no_used(vq);

    tu_log("it stays broken when avail->idx comes back");
    tfe_vq_set_avail_idx(vq, vq->next_avail);
    for (int i = 0; i < 3; i++) {
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 0);
    }
    check_stats(&dp, TX(0), &e);
    expect_no_used(vq);

    tu_log("the other vrings work");
    rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 1);
    rx_expect(&dp, 0, a, 100, NULL, 1, "enqueue beside a broken vring");
    roundtrip(&dp, 1, "beside a broken vring");

    tu_log("setting the vring up again repairs it");
    resetup_vring(&dp, TX(0));
    TU_CHECK(!get_stats(&dp, TX(0)).broken);
    roundtrip(&dp, 0, "after the vring was set up again");
    free(a);
    dp_finish(&dp);
}

static void
test_avail_jump_rx(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "jump-rx", &cfg);
    vq = &dp.vq[RX(0)];
    a = new_pkt(&dp, 100, MAC_UNICAST);
    for (int i = 0; i < 3; i++) {
        rx_post(&dp, 0, 2048, NULL);
        TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 1);
        rx_expect(&dp, 0, a, 100, NULL, 1, "enqueue");
    }

    tu_log("avail->idx going backwards (to %u, with %u seen) breaks the "
           "queue", vq->next_avail - 1u, vq->next_avail);
    rx_post(&dp, 0, 2048, NULL);
    tfe_vq_set_avail_idx(vq, vq->next_avail - 2);
    TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 0);
    memset(&e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        stats_add(&e, a, 100);
    }
    e.drops[VHOST_DROP_AVAIL_IDX] = 1;
    e.broken = true;
    check_stats(&dp, RX(0), &e);
    tfe_vq_set_avail_idx(vq, vq->next_avail);
    TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 0);
    check_stats(&dp, RX(0), &e);
    expect_no_used(vq);

    roundtrip(&dp, 1, "beside a broken vring");
    tu_log("setting the vring up again repairs it");
    resetup_vring(&dp, RX(0));
    TU_CHECK(!get_stats(&dp, RX(0)).broken);
    roundtrip(&dp, 0, "after the vring was set up again");
    free(a);
    dp_finish(&dp);
}

/* A broken vring comes back when the frontend reconnects and sets the
 * device up from scratch. */
static void
test_avail_jump_reconnect(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct tfe_setup setup = { .features_mask = DP_FULL };
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, "jump-reconn", &cfg);
    tu_log("break vring 1 with avail->idx size + 1 ahead");
    tfe_vq_set_avail_idx(&dp.vq[TX(0)], dp.vq[TX(0)].size + 1);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 0);
    release_pkts(out, 4);
    TU_CHECK(get_stats(&dp, TX(0)).broken);

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
    TU_CHECK(!get_stats(&dp, TX(0)).broken);
    roundtrip(&dp, 0, "after the reconnect");
    roundtrip(&dp, 1, "after the reconnect");
    dp_finish(&dp);
}

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
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, "straddle-tx", &cfg);
    memset(&e, 0, sizeof e);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct tfe_buf_opts o = {
            .gpa = boundary_tx(&dp) + cases[i].offset,
            .n_descs = cases[i].n_descs, .indirect = cases[i].indirect,
        };
        uint8_t *a = new_pkt(&dp, 1000, MAC_UNICAST);
        int head;

        tu_log("buffer across regions 1|2: %s", cases[i].what);
        head = tx_post(&dp, 0, NULL, a, 1000, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 1000, cases[i].what);
        check_ol_zero(&out[0], cases[i].what);
        release_pkts(out, 4);
        expect_used(&dp.vq[TX(0)], head, 0);
        stats_add(&e, a, 1000);
        free(a);
    }
    tu_log("a header with NEEDS_CSUM across the boundary parses");
    {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
            .hdr_len = 54, .gso_size = 1448, .csum_start = 34,
            .csum_offset = 16,
        };
        struct tfe_buf_opts o = { .gpa = boundary_tx(&dp) - 7 };
        uint8_t *a = new_pkt(&dp, 3000, MAC_UNICAST);

        tx_post(&dp, 0, &h, a, 3000, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 3000, "offload header across regions");
        TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
        TU_CHECK_EQ(out[0].ol.gso_type, VHOST_GSO_TCPV4);
        TU_CHECK_EQ(out[0].ol.hdr_len, 54);
        TU_CHECK_EQ(out[0].ol.gso_size, 1448);
        TU_CHECK_EQ(out[0].ol.csum_start, 34);
        TU_CHECK_EQ(out[0].ol.csum_offset, 16);
        release_pkts(out, 4);
        stats_add(&e, a, 3000);
        free(a);
    }
    tu_log("the same across regions 2|3");
    {
        struct tfe_buf_opts o = { .gpa = boundary_rx(&dp) - 100 };
        uint8_t *a = new_pkt(&dp, 1500, MAC_UNICAST);

        tx_post(&dp, 0, NULL, a, 1500, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 1500, "buffer across regions 2|3");
        release_pkts(out, 4);
        stats_add(&e, a, 1500);
        free(a);
    }
    check_stats(&dp, TX(0), &e);
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
    struct dp_cfg cfg = cfg_features(features);
    struct vhost_queue_stats e;
    struct dp dp;

    dp_start(&dp, name, &cfg);
    memset(&e, 0, sizeof e);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct tfe_buf_opts o = {
            .gpa = boundary_rx(&dp) + cases[i].offset,
            .n_descs = cases[i].n_descs, .indirect = cases[i].indirect,
        };
        struct vhost_offload ol = {
            .flags = VHOST_OL_DATA_VALID, .csum_start = 0x1234,
            .csum_offset = 0x5678, .hdr_len = 0x9abc, .gso_size = 0xdef0,
            .gso_type = VHOST_GSO_TCPV6,
        };
        uint8_t *a = new_pkt(&dp, 1000, MAC_UNICAST);

        tu_log("buffer across regions 2|3: %s", cases[i].what);
        rx_post(&dp, 0, 2000, &o);
        TU_CHECK_EQ(enq1(&dp, 0, a, 1000, &ol), 1);
        rx_expect(&dp, 0, a, 1000, &ol, 1, cases[i].what);
        stats_add(&e, a, 1000);
        free(a);
    }
    check_stats(&dp, RX(0), &e);
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
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_pkt out[4];
    struct dp dp;

    dp_start(&dp, "ind-straddle", &cfg);
    for (int off = -64; off <= 0; off += 8) {
        struct tfe_buf_opts o = {
            .n_descs = 4, .indirect = true,
            .indirect_gpa = boundary_tx(&dp) + off,
        };
        uint8_t *a = new_pkt(&dp, 700, MAC_UNICAST);
        int head;

        tu_log("transmit: a 4-entry table %d bytes from the 1|2 boundary",
               off);
        head = tx_post(&dp, 0, NULL, a, 700, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 700, "indirect table across regions");
        release_pkts(out, 4);
        expect_used(&dp.vq[TX(0)], head, 0);

        tu_log("receive: the same at the 2|3 boundary");
        o.indirect_gpa = boundary_rx(&dp) + off;
        rx_post(&dp, 0, 2048, &o);
        TU_CHECK_EQ(enq1(&dp, 0, a, 700, NULL), 1);
        rx_expect(&dp, 0, a, 700, NULL, 1, "indirect table across regions");
        free(a);
    }
    {
        struct vhost_queue_stats s0 = get_stats(&dp, RX(0));
        struct vhost_queue_stats s1 = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s0) + total_drops(&s1), 0);
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
    struct dp_cfg cfg = cfg_features(features);
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
        uint8_t *a = new_pkt(&dp, 500, MAC_BROADCAST);
        int head;

        tu_log("%u bytes split %"PRIu32" + %"PRIu32"%s over %u descriptors",
               dp.hdr_len, splits[i][0], splits[i][1],
               n_splits[i] > 3 ? " + ..." : "", n_splits[i]);
        head = tx_post(&dp, 0, &h, a, 500, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 500, "header over several descriptors");
        TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
        TU_CHECK_EQ(out[0].ol.gso_type, VHOST_GSO_TCPV6);
        TU_CHECK_EQ(out[0].ol.hdr_len, 74);
        TU_CHECK_EQ(out[0].ol.gso_size, 1400);
        TU_CHECK_EQ(out[0].ol.csum_start, 54);
        TU_CHECK_EQ(out[0].ol.csum_offset, 16);
        release_pkts(out, 4);
        expect_used(&dp.vq[TX(0)], head, 0);
        stats_add(&e_tx, a, 500);

        tu_log("  and a receive buffer split the same way");
        o.split = splits[i];
        rx_post(&dp, 0, 600, &o);
        TU_CHECK_EQ(enq1(&dp, 0, a, 500, &ol), 1);
        rx_expect(&dp, 0, a, 500, &ol, 1, "header over several buffers");
        stats_add(&e_rx, a, 500);
        free(a);
    }
    check_stats(&dp, TX(0), &e_tx);
    check_stats(&dp, RX(0), &e_rx);
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
        a = new_pkt(&dp, 500, MAC_UNICAST);
        TU_CHECK_EQ(enq1(&dp, 0, a, 500, NULL), 1);
        mark_pages(dl.exp, segs[0].gpa, 100);
        mark_pages(dl.exp, segs[1].gpa, dp.hdr_len + 500 - 100);
        mark_pages(dl.exp, tfe_vq_used_gpa(vq), 4);
        dlog_check(&dp, &dl, "enqueue");
        rx_expect(&dp, 0, a, 500, NULL, 1, "logged enqueue");
        free(a);
    }

    tu_log("dequeue marks the used ring's page only");
    a = new_pkt(&dp, 300, MAC_UNICAST);
    tx_post(&dp, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    release_pkts(out, 4);
    mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[TX(0)]), 4);
    dlog_check(&dp, &dl, "dequeue");

    tu_log("empty bursts mark nothing and do not signal");
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 0);
    TU_CHECK_EQ(enq1(&dp, 0, a, 300, NULL), 0);
    dlog_check(&dp, &dl, "empty bursts");
    free(a);

    tu_log("a mergeable packet over a buffer across regions 2|3 and one "
           "8 kB buffer marks both sides of the boundary and one page");
    {
        struct tfe_vq *vq = &dp.vq[RX(0)];
        struct tfe_buf_opts o = { .gpa = boundary_rx(&dp) - 2000 };
        uint64_t b2 = tfe_vq_alloc(vq, 8192, PAGE);
        struct tfe_seg seg = { b2, 8192 };

        rx_post(&dp, 0, 4000, &o);
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, true, NULL) >= 0);
        a = new_pkt(&dp, 5000, MAC_UNICAST);
        TU_CHECK_EQ(enq1(&dp, 0, a, 5000, NULL), 1);
        mark_pages(dl.exp, boundary_rx(&dp) - 2000, 4000);
        mark_pages(dl.exp, b2, dp.hdr_len + 5000 - 4000);
        mark_pages(dl.exp, tfe_vq_used_gpa(vq), 4);
        dlog_check(&dp, &dl, "mergeable enqueue across regions");
        rx_expect(&dp, 0, a, 5000, NULL, 2, "logged mergeable enqueue");
        free(a);
    }

    tu_log("a vring without VHOST_VRING_F_LOG: buffers only, not its used "
           "ring");
    dp.fe->vrings[RX(1)].log_used = false;
    TU_CHECK_OK(tfe_set_vring_addr(dp.fe, RX(1)));
    TU_CHECK(!tu_queue_info(dp.port, RX(1)).log_used);
    {
        struct tfe_buf_opts o = { .gpa = boundary_rx(&dp) + 8 * PAGE };

        rx_post(&dp, 1, 2048, &o);
        a = new_pkt(&dp, 1000, MAC_UNICAST);
        TU_CHECK_EQ(enq1(&dp, 1, a, 1000, NULL), 1);
        mark_pages(dl.exp, o.gpa, dp.hdr_len + 1000);
        dlog_check(&dp, &dl, "enqueue on a vring without F_LOG");
        rx_expect(&dp, 1, a, 1000, NULL, 1, "enqueue without F_LOG");
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
    a = new_pkt(&dp, 300, MAC_UNICAST);
    tx_post(&dp, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    release_pkts(out, 4);
    {
        uint64_t used = tfe_vq_used_gpa(&dp.vq[TX(0)]);

        mark_pages(dl.exp, used, 4 + 8);
        mark_pages(dl.exp, used + 4 + 8 * 1024, 2);
        TU_CHECK_EQ(used % PAGE, 0);
    }
    dlog_check(&dp, &dl, "first dequeue, avail_event");

    tu_log("later bursts leave avail_event as it is: the used page only");
    tx_post(&dp, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    release_pkts(out, 4);
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
    a = new_pkt(&dp, 400, MAC_UNICAST);

    tu_log("a log without VHOST_F_LOG_ALL stays clean");
    rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, a, 400, NULL), 1);
    rx_expect(&dp, 0, a, 400, NULL, 1, "enqueue before logging");
    tx_post(&dp, 0, NULL, a, 400, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    release_pkts(out, 4);
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
        struct tfe_buf_opts o = { .gpa = boundary_rx(&dp) - 100 };

        rx_post(&dp, 0, 2048, &o);
        TU_CHECK_EQ(enq1(&dp, 0, a, 400, NULL), 1);
        mark_pages(dl.exp, o.gpa, dp.hdr_len + 400);
        mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[RX(0)]), 4);
        dlog_check(&dp, &dl, "enqueue while logging");
        rx_expect(&dp, 0, a, 400, NULL, 1, "enqueue while logging");
    }
    tx_post(&dp, 0, NULL, a, 400, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    release_pkts(out, 4);
    mark_pages(dl.exp, tfe_vq_used_gpa(&dp.vq[TX(0)]), 4);
    dlog_check(&dp, &dl, "dequeue while logging");

    free(a);
    dlog_finish(&dl);
    dp_finish(&dp);
}

/* Notifications. */

/* Checks that the last burst on 'vring' did ('notified') or did not
 * signal the guest, and the counters so far. */
static void
check_notify(struct dp *dp, unsigned int vring, bool notified,
             uint64_t n_notified, uint64_t n_suppressed, const char *what)
{
    struct vhost_queue_stats s = get_stats(dp, vring);
    uint64_t calls = tfe_vq_calls(&dp->vq[vring]);

    if (notified != (calls > 0)) {
        TU_FAIL("%s: vring %u call eventfd %s", what, vring,
                notified ? "not written" : "written");
    }
    if (s.guest_notifications != n_notified
        || s.notifications_suppressed != n_suppressed) {
        TU_FAIL("%s: vring %u guest_notifications %"PRIu64
                " (expected %"PRIu64"), notifications_suppressed %"PRIu64
                " (expected %"PRIu64")", what, vring, s.guest_notifications,
                n_notified, s.notifications_suppressed, n_suppressed);
    }
}

/* Moves 'n' packets through queue pair 0 in direction 'tx' (dequeue) or
 * not (enqueue) and checks them. */
static void
burst(struct dp *dp, bool tx, unsigned int n)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[VHOST_MAX_BURST];

    TU_CHECK(n <= VHOST_MAX_BURST);
    memset(out, 0, sizeof out);
    for (unsigned int i = 0; i < n; i++) {
        pkts[i] = new_pkt(dp, 64 + i, MAC_UNICAST);
        if (tx) {
            tx_post(dp, 0, NULL, pkts[i], 64 + i, NULL);
        } else {
            rx_post(dp, 0, 2048, NULL);
        }
    }
    if (tx) {
        TU_CHECK_EQ(dq(dp, 0, out, VHOST_MAX_BURST), n);
        for (unsigned int i = 0; i < n; i++) {
            struct tfe_used_elem u;
            check_pkt(&out[i], pkts[i], 64 + i, "dequeue");
            TU_CHECK_OK(tfe_vq_get_used(&dp->vq[TX(0)], &u));
        }
        release_pkts(out, VHOST_MAX_BURST);
    } else {
        for (unsigned int i = 0; i < n; i++) {
            out[i] = (struct vhost_pkt) { .data = pkts[i], .len = 64 + i };
        }
        TU_CHECK_EQ(vhost_enqueue_burst(dp->port, 0, out, n), n);
        for (unsigned int i = 0; i < n; i++) {
            rx_expect(dp, 0, pkts[i], 64 + i, NULL, 1, "enqueue");
        }
    }
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i]);
    }
}

static void
test_notify_flags(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL & ~F(VIRTIO_RING_F_EVENT_IDX));
    struct dp dp;

    dp_start(&dp, "notify", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &dp.vq[vring];

        tu_log("%s: a burst signals the guest", tx ? "dequeue" : "enqueue");
        burst(&dp, tx, 1);
        check_notify(&dp, vring, true, 1, 0, "first burst");
        tu_log("  and the engine sets VRING_USED_F_NO_NOTIFY: it polls");
        check_no_kicks(vq, false);

        tu_log("  VRING_AVAIL_F_NO_INTERRUPT suppresses it");
        tfe_vq_set_avail_flags(vq, TFE_AVAIL_F_NO_INTERRUPT);
        burst(&dp, tx, 3);
        check_notify(&dp, vring, false, 1, 1, "NO_INTERRUPT");

        tu_log("  an empty burst does neither");
        burst(&dp, tx, 0);
        check_notify(&dp, vring, false, 1, 1, "empty burst");

        tu_log("  clearing the flag brings signals back");
        tfe_vq_set_avail_flags(vq, 0);
        burst(&dp, tx, 2);
        check_notify(&dp, vring, true, 2, 1, "flag cleared");
    }
    dp_finish(&dp);
}

static void
run_notify_event_idx(struct dp *dp, bool tx, uint16_t start)
{
    unsigned int vring = tx ? TX(0) : RX(0);
    struct tfe_vq *vq = &dp->vq[vring];
    uint64_t n0 = get_stats(dp, vring).guest_notifications;
    uint64_t s0 = get_stats(dp, vring).notifications_suppressed;
    static const struct {
        uint16_t used_event;    /* Relative to 'start'. */
        unsigned int n;         /* Packets in the burst. */
        bool notify;
    } steps[] = {
        { 0, 1, true },         /* [0, 1) holds 0. */
        { 5, 2, false },        /* [1, 3) lacks 5. */
        { 5, 3, true },         /* [3, 6) holds 5. */
        { 5, 1, false },        /* [6, 7) lacks 5. */
        { 7, 1, true },         /* [7, 8) holds 7. */
        { 6, 4, false },        /* [8, 12) lacks 6 (behind). */
        { 15, 4, true },        /* [12, 16) holds 15, the last. */
        { 16, 0, false },       /* Nothing used: no signal. */
    };

    for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
        uint16_t ev = start + steps[i].used_event;
        char what[80];

        snprintf(what, sizeof what, "used_event %u, used %u..%u", ev,
                 vq->next_used, (uint16_t) (vq->next_used + steps[i].n));
        tu_log("  %s: %s", what, steps[i].notify ? "signal" : "no signal");
        tfe_vq_set_used_event(vq, ev);
        burst(dp, tx, steps[i].n);
        n0 += steps[i].notify;
        s0 += !steps[i].notify && steps[i].n;
        check_notify(dp, vring, steps[i].notify, n0, s0, what);
        if (tx || steps[i].n) {
            check_no_kicks(vq, true);
        }
    }
}

static void
test_notify_event_idx(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct dp dp;

    dp_start(&dp, "notify-evt", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &dp.vq[vring];

        tu_log("%s, from index 0", tx ? "dequeue" : "enqueue");
        poison_avail_event(vq);
        run_notify_event_idx(&dp, tx, 0);

        tu_log("%s, across the 16-bit wrap (base 65530)",
               tx ? "dequeue" : "enqueue");
        {
            uint32_t base;
            TU_CHECK_OK(tfe_get_vring_base(dp.fe, vring, &base));
            TU_CHECK_EQ(base, vq->next_avail);
        }
        tfe_vq_reset(vq);
        /* The ring as a driver leaves it: the used index in guest memory
         * agrees with the base (the engine resumes from the used index
         * when they differ, as after a backend restart). */
        vq->next_avail = vq->next_used = 65530;
        *vq->avail_idx = 65530;
        *vq->used_idx = 65530;
        TU_CHECK_OK(tfe_set_vring_num(dp.fe, vring, vq->size));
        TU_CHECK_OK(tfe_set_vring_base(dp.fe, vring, 65530));
        TU_CHECK_OK(tfe_set_vring_addr(dp.fe, vring));
        TU_CHECK_OK(tfe_set_vring_kick(dp.fe, vring,
                                       dp.fe->vrings[vring].kick_fd));
        TU_CHECK(tu_queue_info(dp.port, vring).ready);
        run_notify_event_idx(&dp, tx, 65530);
    }
    dp_finish(&dp);
}

/* SEND_RARP: the next dequeue on queue pair 0 starts with one RARP request
 * for the MAC, then the guest's packets; once only, and again after the
 * frontend reconnects with the MAC still stored. */
static void
check_rarp(const struct vhost_pkt *p, const uint8_t mac[6])
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

    TU_CHECK_EQ(p->len, 60);
    TU_CHECK(!memcmp(p->data, bcast, 6));
    TU_CHECK(!memcmp(p->data + 6, mac, 6));
    TU_CHECK_EQ(p->data[12], 0x80);             /* ETH_TYPE_RARP */
    TU_CHECK_EQ(p->data[13], 0x35);
    TU_CHECK_EQ(p->data[21], 3);                /* Reverse request. */
    TU_CHECK(!memcmp(p->data + 22, mac, 6));
    TU_CHECK(!memcmp(p->data + 32, mac, 6));
}

static void
test_rarp(void)
{
    static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct tfe_setup setup = { .features_mask = DP_FULL };
    struct vhost_pkt out[4];
    struct vhost_queue_stats st;
    struct dp dp;

    dp_start(&dp, "rarp", &cfg);
    tu_log("no RARP before SEND_RARP");
    uint8_t *pkt = new_pkt(&dp, 64, MAC_UNICAST);
    tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    check_pkt(&out[0], pkt, 64, "before SEND_RARP");
    release_pkts(out, 4);
    free(pkt);

    tu_log("SEND_RARP: one RARP ahead of the guest's packet, on pair 0");
    TU_CHECK_OK(tfe_send_rarp(dp.fe, mac));
    TU_CHECK(tu_port_info(dp.port).rarp_pending);
    TU_CHECK_EQ(dq(&dp, 1, out, 4), 0);         /* Not on pair 1. */
    release_pkts(out, 4);
    pkt = new_pkt(&dp, 64, MAC_UNICAST);
    tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 2);
    check_rarp(&out[0], mac);
    check_pkt(&out[1], pkt, 64, "after the RARP");
    release_pkts(out, 4);
    free(pkt);
    TU_CHECK(!tu_port_info(dp.port).rarp_pending);
    TU_CHECK_OK(vhost_port_get_queue_stats(dp.port, TX(0), &st));
    TU_CHECK_EQ(st.rarps_injected, 1);

    tu_log("once only");
    pkt = new_pkt(&dp, 64, MAC_UNICAST);
    tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    check_pkt(&out[0], pkt, 64, "second burst");
    release_pkts(out, 4);
    free(pkt);

    tu_log("a burst of 1 carries just the RARP; the packet waits");
    TU_CHECK_OK(tfe_send_rarp(dp.fe, mac));
    pkt = new_pkt(&dp, 64, MAC_UNICAST);
    tx_post(&dp, 0, NULL, pkt, 64, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 1), 1);
    check_rarp(&out[0], mac);
    release_pkts(out, 1);
    TU_CHECK_EQ(dq(&dp, 0, out, 1), 1);
    check_pkt(&out[0], pkt, 64, "after a RARP-only burst");
    release_pkts(out, 1);
    free(pkt);

    tu_log("the MAC survives a reconnect, and is announced again");
    TU_CHECK(tu_port_info(dp.port).has_rarp);
    tfe_disconnect(dp.fe);
    TU_CHECK(tu_wait_port(dp.port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK(!tu_port_info(dp.port).rarp_pending);
    TU_CHECK_OK(tfe_connect(dp.fe, dp.path));
    TU_CHECK(tu_wait_port(dp.port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_reset(&dp.vq[q]);
    }
    TU_CHECK_OK(tfe_setup_device(dp.fe, 2, &setup));
    TU_CHECK(tu_port_info(dp.port).ready);
    TU_CHECK(tu_port_info(dp.port).rarp_pending);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    check_rarp(&out[0], mac);
    release_pkts(out, 4);
    TU_CHECK_OK(vhost_port_get_queue_stats(dp.port, TX(0), &st));
    TU_CHECK_EQ(st.rarps_injected, 3);
    dp_finish(&dp);
}

/* Bounded work. */

static void
test_bounded(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL
                                     & ~F(VIRTIO_RING_F_INDIRECT_DESC));
    struct vhost_pkt out[100];
    uint8_t *pkts[256];
    struct dp dp;
    unsigned int got = 0;

    dp_start(&dp, "bounded", &cfg);
    tu_log("256 chains available on a 256-entry ring (avail->idx exactly "
           "the size ahead); bursts of 32 take exactly 32");
    for (int i = 0; i < 256; i++) {
        pkts[i] = new_pkt(&dp, 64, MAC_UNICAST);
        tx_post(&dp, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(dp.vq[TX(0)].n_free, 0);

    tu_log("queue pair 1 is not held up by the flood on pair 0");
    roundtrip(&dp, 1, "while pair 0 is flooded");

    for (int call = 0; call < 8; call++) {
        uint16_t used0 = tfe_vq_used_idx(&dp.vq[TX(0)]);

        TU_CHECK_EQ(dq(&dp, 0, out, 32), 32);
        TU_CHECK_EQ((uint16_t) (tfe_vq_used_idx(&dp.vq[TX(0)]) - used0), 32);
        for (int i = 0; i < 32; i++) {
            check_pkt(&out[i], pkts[got + i], 64, "bounded burst");
        }
        release_pkts(out, 32);
        got += 32;
        if (call == 3) {
            roundtrip(&dp, 1, "halfway through the flood");
        }
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 32), 0);
    for (int i = 0; i < 256; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        free(pkts[i]);
    }

    tu_log("n = 100 takes at most VHOST_MAX_BURST (%d)", VHOST_MAX_BURST);
    for (int i = 0; i < 100; i++) {
        pkts[i] = new_pkt(&dp, 64, MAC_UNICAST);
        tx_post(&dp, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 100), VHOST_MAX_BURST);
    release_pkts(out, 100);
    TU_CHECK_EQ(dq(&dp, 0, out, 100), 100 - VHOST_MAX_BURST);
    for (int i = 0; i < 100 - VHOST_MAX_BURST; i++) {
        check_pkt(&out[i], pkts[VHOST_MAX_BURST + i], 64, "second burst");
    }
    release_pkts(out, 100);
    for (int i = 0; i < 100; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
    }

    tu_log("enqueue: 100 packets into 200 buffers, n = 100, takes %d; "
           "n = 10 takes 10", VHOST_MAX_BURST);
    for (int i = 0; i < 200; i++) {
        rx_post(&dp, 0, 2048, NULL);
    }
    for (int i = 0; i < 100; i++) {
        out[i] = (struct vhost_pkt) { .data = pkts[i], .len = 64 };
    }
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, out, 100), VHOST_MAX_BURST);
    TU_CHECK_EQ(tfe_vq_n_used(&dp.vq[RX(0)]), VHOST_MAX_BURST);
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, out, 10), 10);
    for (int i = 0; i < VHOST_MAX_BURST; i++) {
        rx_expect(&dp, 0, pkts[i], 64, NULL, 1, "bounded enqueue");
    }
    for (int i = 0; i < 10; i++) {
        rx_expect(&dp, 0, pkts[i], 64, NULL, 1, "bounded enqueue");
    }
    for (int i = 0; i < 100; i++) {
        free(pkts[i]);
    }
    dp_finish(&dp);
}

/* Dequeue buffers from the embedder. */

static void
test_alloc(void)
{
    static const size_t sizes[] = { 60, 100, 9000, 128, 64 };
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_pkt out[8];
    uint8_t *pkts[8];
    void *prefilled[8];
    struct dp dp;

    dp_start(&dp, "alloc", &cfg);
    tu_log("pre-filled 128-byte buffers: packets that fit use them, a "
           "9000-byte packet gets a new one and its buffer is freed");
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        pkts[i] = new_pkt(&dp, sizes[i], MAC_UNICAST);
        tx_post(&dp, 0, NULL, pkts[i], sizes[i], NULL);
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
        check_pkt(&out[i], pkts[i], sizes[i], "pre-filled buffers");
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
    release_pkts(out, 8);       /* Unused pre-filled ones included. */
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
        pkts[i] = new_pkt(&dp, 200 + i, MAC_UNICAST);
        tx_post(&dp, 0, NULL, pkts[i], 200 + i, NULL);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 8), 1);
    check_pkt(&out[0], pkts[0], 200, "before the refusal");
    release_pkts(out, 8);
    TU_CHECK_EQ(dp.da.n_failed, 1);
    TU_CHECK_EQ(tfe_vq_n_used(&dp.vq[TX(0)]), 1);
    {
        struct vhost_queue_stats s = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s), 0);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 8), 0);
    dp.da.fail_after = -1;
    TU_CHECK_EQ(dq(&dp, 0, out, 8), 2);
    check_pkt(&out[0], pkts[1], 201, "after the refusal");
    check_pkt(&out[1], pkts[2], 202, "after the refusal");
    release_pkts(out, 8);
    for (int i = 0; i < 3; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        free(pkts[i]);
    }
    expect_no_used(&dp.vq[TX(0)]);
    dp_finish(&dp);
}

/* The embedder's 'max_len': a longer guest packet is dropped, not left
 * blocking the ring. */

static void
test_alloc_max_len(void)
{
    static const size_t sizes[] = { 100, 1001, 1000, 60 };
    struct dp_cfg cfg = cfg_features(DP_FULL);
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
        pkts[i] = new_pkt(&dp, sizes[i], MAC_UNICAST);
        heads[i] = tx_post(&dp, 0, NULL, pkts[i], sizes[i], NULL);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 8), 3);
    check_pkt(&out[0], pkts[0], 100, "before the long packet");
    check_pkt(&out[1], pkts[2], 1000, "exactly max_len");
    check_pkt(&out[2], pkts[3], 60, "after the long packet");
    TU_CHECK_CMP(dp.da.max_len, <=, 1000);
    release_pkts(out, 8);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        expect_used(&dp.vq[TX(0)], heads[i], 0);
    }
    expect_no_used(&dp.vq[TX(0)]);
    memset(&e, 0, sizeof e);
    stats_add(&e, pkts[0], 100);
    stats_add(&e, pkts[2], 1000);
    stats_add(&e, pkts[3], 60);
    e.drops[VHOST_DROP_TOO_BIG] = 1;
    check_stats(&dp, TX(0), &e);

    tu_log("max_len 0 is the engine's own limit: 1001 bytes arrive");
    dp.alloc.max_len = 0;
    heads[1] = tx_post(&dp, 0, NULL, pkts[1], 1001, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 8), 1);
    check_pkt(&out[0], pkts[1], 1001, "no max_len");
    release_pkts(out, 8);
    expect_used(&dp.vq[TX(0)], heads[1], 0);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        free(pkts[i]);
    }
    roundtrip(&dp, 0, "the same queue pair");
    dp_finish(&dp);
}

/* Receive buffers too small. */

static void
test_too_big(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL & ~F(VIRTIO_NET_F_MRG_RXBUF));
    struct vhost_queue_stats e;
    struct dp dp;
    uint8_t *big, *small;
    int head;

    dp_start(&dp, "too-big", &cfg);
    big = new_pkt(&dp, 1000, MAC_UNICAST);
    small = new_pkt(&dp, 100, MAC_UNICAST);

    tu_log("without MRG_RXBUF, a packet larger than the chain stops the "
           "burst, as DPDK's: not taken, the chain stays for the next "
           "packet, counted in small_buf_stops");
    head = rx_post(&dp, 0, 500, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, big, 1000, NULL), 0);
    expect_no_used(&dp.vq[RX(0)]);
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[RX(0)]), 0);
    memset(&e, 0, sizeof e);
    check_stats(&dp, RX(0), &e);
    TU_CHECK_EQ(get_stats(&dp, RX(0)).small_buf_stops, 1);
    TU_CHECK_EQ(enq1(&dp, 0, small, 100, NULL), 1);
    TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                       % dp.vq[RX(0)].size].id, head);
    rx_expect(&dp, 0, small, 100, NULL, 1, "after a packet too big");
    stats_add(&e, small, 100);
    check_stats(&dp, RX(0), &e);

    tu_log("in one burst: small, too big, small: the burst stops at the "
           "big one; the next burst without it takes the last");
    {
        struct vhost_pkt in[3] = {
            { .data = small, .len = 100 },
            { .data = big, .len = 1000 },
            { .data = small, .len = 60 },
        };
        int h1 = rx_post(&dp, 0, 500, NULL);
        int h2 = rx_post(&dp, 0, 500, NULL);

        TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in, 3), 1);
        TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in + 1, 2), 0);
        TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, in + 2, 1), 1);
        TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                           % dp.vq[RX(0)].size].id, h1);
        rx_expect(&dp, 0, small, 100, NULL, 1, "before a packet too big");
        TU_CHECK_EQ(dp.vq[RX(0)].used_ring[dp.vq[RX(0)].next_used
                                           % dp.vq[RX(0)].size].id, h2);
        rx_expect(&dp, 0, small, 60, NULL, 1, "after a packet too big");
        expect_no_used(&dp.vq[RX(0)]);
        stats_add(&e, small, 100);
        stats_add(&e, small, 60);
        check_stats(&dp, RX(0), &e);
        TU_CHECK_EQ(get_stats(&dp, RX(0)).small_buf_stops, 3);
    }

    tu_log("header + packet exactly the chain's size fits");
    rx_post(&dp, 0, dp.hdr_len + 1000, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, big, 1000, NULL), 1);
    rx_expect(&dp, 0, big, 1000, NULL, 1, "exact fit");
    stats_add(&e, big, 1000);

    tu_log("an empty ring takes nothing and counts nothing");
    TU_CHECK_EQ(enq1(&dp, 0, small, 100, NULL), 0);
    check_stats(&dp, RX(0), &e);
    {
        struct vhost_queue_stats s = get_stats(&dp, RX(0));
        TU_CHECK_EQ(s.guest_notifications + s.notifications_suppressed, 4);
    }
    free(big);
    free(small);
    dp_finish(&dp);
}

static void
test_ring_full_mrg(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct dp dp;
    uint8_t *big;

    dp_start(&dp, "ring-full", &cfg);
    big = new_pkt(&dp, 5000, MAC_UNICAST);

    tu_log("with MRG_RXBUF, a packet larger than all the buffers "
           "available takes none of them and is not counted as a drop");
    rx_post(&dp, 0, 2048, NULL);
    rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, big, 5000, NULL), 0);
    expect_no_used(&dp.vq[RX(0)]);
    memset(&e, 0, sizeof e);
    check_stats(&dp, RX(0), &e);
    TU_CHECK_EQ(tfe_vq_calls(&dp.vq[RX(0)]), 0);

    tu_log("one more buffer and it goes, over all three");
    rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, big, 5000, NULL), 1);
    rx_expect(&dp, 0, big, 5000, NULL, 3, "over three buffers");
    stats_add(&e, big, 5000);
    check_stats(&dp, RX(0), &e);
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
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_pkt out[16];
    uint8_t *pkts[ARRAY_SIZE(good)];
    struct dp dp;

    dp_start(&dp, "offload", &cfg);
    tu_log("dequeue parses the header into 'ol'");
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        pkts[i] = new_pkt(&dp, good[i].len, MAC_UNICAST);
        tx_post(&dp, 0, &good[i].hdr, pkts[i], good[i].len, NULL);
    }
    TU_CHECK_EQ(dq(&dp, 0, out, 16), ARRAY_SIZE(good));
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        const struct tfe_net_hdr *h = &good[i].hdr;
        const struct vhost_offload *ol = &out[i].ol;

        tu_log("  %s", good[i].what);
        check_pkt(&out[i], pkts[i], good[i].len, good[i].what);
        TU_CHECK_EQ(ol->flags, h->flags);
        TU_CHECK_EQ(ol->gso_type, h->gso_type);
        TU_CHECK_EQ(ol->hdr_len, h->hdr_len);
        TU_CHECK_EQ(ol->gso_size, h->gso_size);
        TU_CHECK_EQ(ol->csum_start, h->csum_start);
        TU_CHECK_EQ(ol->csum_offset, h->csum_offset);
    }
    release_pkts(out, 16);
    {
        struct vhost_queue_stats s = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s), 0);
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
        rx_post(&dp, 0, 4096, NULL);
        TU_CHECK_EQ(enq1(&dp, 0, pkts[i], good[i].len, &ol), 1);
        rx_expect(&dp, 0, pkts[i], good[i].len, &ol, 1, good[i].what);
        free(pkts[i]);
    }
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
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_queue_stats e;
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;
    int g1, g2, bad;

    dp_start(&dp, "mrg-bad-between", &cfg);
    vq = &dp.vq[RX(0)];
    a = new_pkt(&dp, 2000, MAC_UNICAST);

    tu_log("a 1000-byte buffer, then a read-only one: a 2000-byte packet "
           "does not fit yet, and nothing is used or counted");
    g1 = rx_post(&dp, 0, 1000, NULL);
    bad = post_one(vq, arena_buf(vq, 2048), 2048, 0);
    TU_CHECK_EQ(enq1(&dp, 0, a, 2000, NULL), 0);
    expect_no_used(vq);
    memset(&e, 0, sizeof e);
    check_stats(&dp, RX(0), &e);

    tu_log("one more buffer: the packet goes into the two good ones, "
           "adjacent in the used ring; the bad one is counted once");
    g2 = rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, a, 2000, NULL), 1);
    TU_CHECK_EQ(tfe_vq_n_used(vq), 3);
    if (vq->used_ring[vq->next_used % vq->size].id == bad) {
        expect_used(vq, bad, 0);
        TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].id, g1);
        TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].id, g2);
        rx_expect(&dp, 0, a, 2000, NULL, 2, "around a bad chain");
    } else {
        TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].id, g1);
        TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].id, g2);
        rx_expect(&dp, 0, a, 2000, NULL, 2, "around a bad chain");
        expect_used(vq, bad, 0);
    }
    e.drops[VHOST_DROP_BAD_DIRECTION] = 1;
    stats_add(&e, a, 2000);
    check_stats(&dp, RX(0), &e);
    free(a);
    roundtrip(&dp, 0, "after the bad chain");
    dp_finish(&dp);
}

/* A guest that fills its rings with bad chains gets no more work out of
 * one call than one with good ones: the contract bounds a call to 'n'
 * chains and never more than VHOST_MAX_BURST. */
static void
test_bounded_bad(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_pkt out[32];
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "bounded-bad", &cfg);
    a = new_pkt(&dp, 100, MAC_UNICAST);

    tu_log("n = 0 takes nothing");
    tx_post(&dp, 0, NULL, a, 100, NULL);
    rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(vhost_dequeue_burst(dp.port, 0, out, 0, &dp.alloc), 0);
    TU_CHECK_EQ(vhost_enqueue_burst(dp.port, 0, NULL, 0), 0);
    expect_no_used(&dp.vq[TX(0)]);
    expect_no_used(&dp.vq[RX(0)]);
    TU_CHECK_EQ(dq(&dp, 0, out, 32), 1);
    release_pkts(out, 32);
    TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &(struct tfe_used_elem) {
                                    0 }));
    TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 1);
    rx_expect(&dp, 0, a, 100, NULL, 1, "after n = 0");

    tu_log("transmit: 256 bad chains, bursts of 32 drop exactly 32");
    for (int i = 0; i < 256; i++) {
        post_one(&dp.vq[TX(0)], DP_GAP_GPA, 100, 0);
    }
    for (int call = 0; call < 8; call++) {
        uint16_t used0 = tfe_vq_used_idx(&dp.vq[TX(0)]);

        TU_CHECK_EQ(dq(&dp, 0, out, 32), 0);
        release_pkts(out, 32);
        TU_CHECK_EQ((uint16_t) (tfe_vq_used_idx(&dp.vq[TX(0)]) - used0), 32);
    }
    for (int i = 0; i < 256; i++) {
        struct tfe_used_elem u;
        TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
    }

    tu_log("receive: 256 bad chains, one packet: at most %d chains per "
           "call", VHOST_MAX_BURST);
    for (int i = 0; i < 256; i++) {
        post_one(&dp.vq[RX(0)], DP_GAP_GPA, 2048, TFE_DESC_F_WRITE);
    }
    for (int call = 0; call < 256 / VHOST_MAX_BURST; call++) {
        uint16_t used0 = tfe_vq_used_idx(&dp.vq[RX(0)]);
        uint16_t took;

        TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 0);
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
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct dp dp;

    dp_start(&dp, "used-scribble", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        struct tfe_vq *vq = &dp.vq[tx ? TX(0) : RX(0)];

        tu_log("%s: the guest writes junk over used->idx and the used ring",
               tx ? "transmit" : "receive");
        burst(&dp, tx, 3);
        __atomic_store_n(vq->used_idx, (uint16_t) 12345, __ATOMIC_RELEASE);
        memset(vq->used_ring, 0xee, sizeof *vq->used_ring * vq->size);
        *vq->used_idx = vq->next_used;  /* Ours, so burst() can read. */
        burst(&dp, tx, 2);
        TU_CHECK_EQ(tfe_vq_used_idx(vq), 5);
        __atomic_store_n(vq->used_idx, (uint16_t) 40000, __ATOMIC_RELEASE);
        tu_log("  used->idx follows the engine's count, not the guest's");
        {
            uint8_t *a = new_pkt(&dp, 80, MAC_UNICAST);
            struct vhost_pkt out[4];

            if (tx) {
                tx_post(&dp, 0, NULL, a, 80, NULL);
                TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
                release_pkts(out, 4);
            } else {
                rx_post(&dp, 0, 2048, NULL);
                TU_CHECK_EQ(enq1(&dp, 0, a, 80, NULL), 1);
            }
            TU_CHECK_EQ(tfe_vq_used_idx(vq), 6);
            if (tx) {
                expect_used(vq, vq->used_ring[5].id, 0);
            } else {
                rx_expect(&dp, 0, a, 80, NULL, 1, "after the scribbles");
            }
            free(a);
        }
    }
    dp_finish(&dp);
}

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
        pkts[i] = new_pkt(&dp, 60 + i % 200, MAC_UNICAST);
        tx_post(&dp, 0, NULL, pkts[i], 60 + i % 200, NULL);
    }
    while (got < size) {
        unsigned int k = dq(&dp, 0, out, VHOST_MAX_BURST);

        TU_CHECK_EQ(k, MIN(size - got, VHOST_MAX_BURST));
        for (unsigned int i = 0; i < k; i++) {
            struct tfe_used_elem u;
            check_pkt(&out[i], pkts[got + i], 60 + (got + i) % 200,
                      "full ring");
            TU_CHECK_OK(tfe_vq_get_used(&dp.vq[TX(0)], &u));
        }
        release_pkts(out, VHOST_MAX_BURST);
        got += k;
    }
    for (unsigned int i = 0; i < size; i++) {
        free(pkts[i]);
    }

    if (size <= TFE_VQ_MAX_SEGS) {
        struct tfe_buf_opts o = { .n_descs = size };
        uint8_t *a = new_pkt(&dp, 300, MAC_UNICAST);

        tu_log("a chain of exactly %u descriptors (the queue size) is "
               "fine, and so is an indirect table of %u entries", size,
               size);
        int head = tx_post(&dp, 0, NULL, a, 300, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 300, "chain as long as the queue");
        release_pkts(out, 4);
        expect_used(&dp.vq[TX(0)], head, 0);
        o.indirect = true;
        head = tx_post(&dp, 0, NULL, a, 300, &o);
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 300, "indirect table as long as the queue");
        release_pkts(out, 4);
        expect_used(&dp.vq[TX(0)], head, 0);

        tu_log("a cycle through every descriptor is a loop");
        {
            struct tfe_vq *vq = &dp.vq[TX(0)];
            uint64_t buf = arena_buf(vq, 64);
            uint16_t ids[TFE_VQ_MAX_SEGS];
            uint16_t loop_head = take_chain(vq, ids, size);

            for (unsigned int i = 0; i < size; i++) {
                set_desc(vq, ids[i], buf, 20, TFE_DESC_F_NEXT,
                         ids[(i + 1) % size]);
            }
            tfe_vq_push_avail(vq, loop_head);
            TU_CHECK_EQ(dq(&dp, 0, out, 4), 0);
            release_pkts(out, 4);
            expect_used(vq, loop_head, 0);
            TU_CHECK_EQ(get_stats(&dp, TX(0)).drops[VHOST_DROP_LOOP], 1);
        }
        free(a);
    }
    roundtrip(&dp, 0, "after the full ring");
    roundtrip(&dp, 1, "the other queue pair");
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

/* VIRTIO 1.2 §2.7.5.3.2: "The device MUST ignore the write-only flag
 * (VIRTQ_DESC_F_WRITE) in the descriptor that refers to an indirect
 * table."  And an RX table needs no F_WRITE on that descriptor either. */
static void
test_indirect_write_flag(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_pkt out[4];
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "ind-write", &cfg);
    a = new_pkt(&dp, 400, MAC_UNICAST);
    tu_log("transmit: an indirect descriptor with F_WRITE set");
    {
        struct tfe_vq *vq = &dp.vq[TX(0)];
        struct tfe_buf_opts o = { .n_descs = 2, .indirect = true };
        int head = tx_post(&dp, 0, NULL, a, 400, &o);

        tfe_vq_desc(vq, head)->flags |= TFE_DESC_F_WRITE;
        TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
        check_pkt(&out[0], a, 400, "F_WRITE on an indirect descriptor");
        release_pkts(out, 4);
        expect_used(vq, head, 0);
    }
    tu_log("receive: an indirect descriptor with and without F_WRITE");
    for (int w = 0; w < 2; w++) {
        struct tfe_vq *vq = &dp.vq[RX(0)];
        struct tfe_buf_opts o = { .n_descs = 3, .indirect = true };
        int head = rx_post(&dp, 0, 2048, &o);

        if (w) {
            tfe_vq_desc(vq, head)->flags |= TFE_DESC_F_WRITE;
        }
        TU_CHECK_EQ(enq1(&dp, 0, a, 400, NULL), 1);
        rx_expect(&dp, 0, a, 400, NULL, 1, "indirect receive buffer");
    }
    {
        struct vhost_queue_stats s0 = get_stats(&dp, RX(0));
        struct vhost_queue_stats s1 = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s0) + total_drops(&s1), 0);
    }
    free(a);
    dp_finish(&dp);
}

/* With MRG_RXBUF each buffer must hold at least the header (VIRTIO 1.2
 * §5.1.6.3.1); one that holds exactly the header is fine. */
static void
test_mrg_hdr_buffer(void)
{
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct tfe_vq *vq;
    struct dp dp;
    uint8_t *a;
    int h0, h1;

    dp_start(&dp, "mrg-hdr-buf", &cfg);
    vq = &dp.vq[RX(0)];
    a = new_pkt(&dp, 100, MAC_UNICAST);
    tu_log("a 12-byte buffer then a 2048-byte one: the header, then the "
           "packet (num_buffers 2)");
    h0 = rx_post(&dp, 0, 12, NULL);
    h1 = rx_post(&dp, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 1);
    TU_CHECK_EQ(tfe_vq_n_used(vq), 2);
    TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].id, h0);
    TU_CHECK_EQ(vq->used_ring[vq->next_used % vq->size].len, 12);
    TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].id, h1);
    TU_CHECK_EQ(vq->used_ring[(vq->next_used + 1) % vq->size].len, 100);
    rx_expect(&dp, 0, a, 100, NULL, 2, "header-only first buffer");
    free(a);
    dp_finish(&dp);
}

/* Queue pair and vring numbers the port does not have. */
static void
test_bad_qp(void)
{
    static const unsigned int bad[] = {
        2, 3, 127, 128, 129, 0x7fffffff, 0x80000000, 0x80000001, UINT_MAX,
    };
    struct dp_cfg cfg = cfg_features(DP_FULL);
    struct vhost_queue_stats st;
    struct vhost_pkt out[4];
    struct dp dp;
    uint8_t *a;

    dp_start(&dp, "bad-qp", &cfg);
    a = new_pkt(&dp, 100, MAC_UNICAST);
    tx_post(&dp, 0, NULL, a, 100, NULL);
    rx_post(&dp, 0, 2048, NULL);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("queue pair %#x: nothing moves (pair 0 has a packet and a "
               "buffer waiting)", bad[i]);
        TU_CHECK_EQ(dq(&dp, bad[i], out, 4), 0);
        release_pkts(out, 4);
        TU_CHECK_EQ(enq1(&dp, bad[i], a, 100, NULL), 0);
        expect_no_used(&dp.vq[TX(0)]);
        expect_no_used(&dp.vq[RX(0)]);
    }
    tu_log("statistics of vrings the port does not have: EINVAL");
    TU_CHECK_EQ(vhost_port_get_queue_stats(dp.port, 4, &st), EINVAL);
    TU_CHECK_EQ(vhost_port_get_queue_stats(dp.port, VHOST_MAX_QUEUES, &st),
                EINVAL);
    TU_CHECK_EQ(vhost_port_get_queue_stats(dp.port, UINT_MAX, &st), EINVAL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    check_pkt(&out[0], a, 100, "pair 0 after the bad pairs");
    release_pkts(out, 4);
    TU_CHECK_EQ(enq1(&dp, 0, a, 100, NULL), 1);
    rx_expect(&dp, 0, a, 100, NULL, 1, "pair 0 after the bad pairs");
    free(a);
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
    a = new_pkt(&dp, 1000, MAC_UNICAST);

    tu_log("a %d-byte log covers GPA 0..2 MB; buffers at 16 MB+ and 25 MB "
           "and vring 1's used ring (at 16 MB+) are beyond it", SMALL);
    {
        struct tfe_buf_opts o = { .gpa = DP_GPA1 + 7 * MB };
        struct tfe_buf_opts o2 = { .gpa = boundary_rx(&dp) - 100 };
        struct tfe_buf_opts o3 = { .gpa = MB };

        TU_CHECK_CMP(tfe_vq_used_gpa(&dp.vq[RX(0)]), <, 2 * MB);
        rx_post(&dp, 0, 2048, &o);
        rx_post(&dp, 0, 2048, &o2);
        rx_post(&dp, 0, 2048, &o3);
        for (int i = 0; i < 3; i++) {
            TU_CHECK_EQ(enq1(&dp, 0, a, 1000, NULL), 1);
            rx_expect(&dp, 0, a, 1000, NULL, 1, "enqueue with a small log");
        }
        mark_pages(exp, o3.gpa, dp.hdr_len + 1000);
        mark_pages(exp, tfe_vq_used_gpa(&dp.vq[RX(0)]), 4);
    }
    tx_post(&dp, 0, NULL, a, 1000, NULL);
    TU_CHECK_EQ(dq(&dp, 0, out, 4), 1);
    release_pkts(out, 4);
    check_log(log, exp, "small log");
    TU_CHECK(read_eventfd(dp.fe->log_call_fd) > 0);
    munmap(log, DP_LOG_SIZE);
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
 * plane holds the vring (a burst then returns 0). */
static void
dq_all(struct dp *dp, struct vhost_pkt *out, unsigned int n)
{
    long long deadline = tu_now_ms() + TU_TIMEOUT_MS;
    unsigned int got = 0;

    while (got < n) {
        struct vhost_pkt tmp[VHOST_MAX_BURST];
        unsigned int k = dq(dp, 0, tmp, n - got);

        memcpy(&out[got], tmp, k * sizeof *tmp);
        release_pkts(&tmp[k], n - got - k);
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
            pkts[i] = new_pkt(dp, len, i % 3);
            tx_post(dp, 0, NULL, pkts[i], len, NULL);
        }
        dq_all(dp, out, 8);
        for (int i = 0; i < 8; i++) {
            struct tfe_used_elem u;
            check_pkt(&out[i], pkts[i], 60 + 200 * i, "dequeue under "
                      "SET_MEM_TABLE");
            TU_CHECK_OK(tfe_vq_get_used(&dp->vq[TX(0)], &u));
        }
        release_pkts(out, 8);

        for (int i = 0; i < 8; i++) {
            rx_post(dp, 0, 2048, NULL);
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
            rx_expect(dp, 0, pkts[i], 60 + 200 * i, NULL, 1,
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
    struct dp_cfg cfg = cfg_features(DP_FULL);
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
        struct vhost_queue_stats s0 = get_stats(&dp, RX(0));
        struct vhost_queue_stats s1 = get_stats(&dp, TX(0));
        TU_CHECK_EQ(total_drops(&s0) + total_drops(&s1), 0);
        TU_CHECK_EQ(s0.packets, 8 * atomic_load(&t.rounds));
        TU_CHECK_EQ(s1.packets, 8 * atomic_load(&t.rounds));
    }
    roundtrip(&dp, 0, "after the memory table changes");
    roundtrip(&dp, 1, "after the memory table changes");
    dp_finish(&dp);
}

const struct tu_test tu_datapath_tests[] = {
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
    { "dp-drop-log-rate", test_drop_log_rate,
      "a drop is counted every time, logged at a limited rate" },
    { "dp-dirty-log", test_dirty_log,
      "dirty log: exactly the pages written" },
    { "dp-dirty-log-event", test_dirty_log_event,
      "dirty log: avail_event is a used-ring write too" },
    { "dp-dirty-log-migration", test_dirty_log_migration,
      "dirty log starts with VHOST_F_LOG_ALL mid-run" },
    { "dp-notify", test_notify_flags,
      "call eventfd and VRING_AVAIL_F_NO_INTERRUPT" },
    { "dp-rarp", test_rarp,
      "SEND_RARP: one RARP on queue pair 0, once, and again after a "
      "reconnect" },
    { "dp-notify-event-idx", test_notify_event_idx,
      "call eventfd with EVENT_IDX, across the index wrap" },
    { "dp-bounded", test_bounded, "bursts take at most n, at most 64" },
    { "dp-alloc", test_alloc, "pre-filled and allocated dequeue buffers" },
    { "dp-alloc-max-len", test_alloc_max_len,
      "TX: a packet longer than the allocator's max_len is dropped" },
    { "dp-too-big", test_too_big,
      "RX without MRG_RXBUF: chains too small" },
    { "dp-ring-full", test_ring_full_mrg,
      "RX with MRG_RXBUF: not enough buffers" },
    { "dp-offload", test_offload, "offload metadata both ways" },
    { "dp-mem-table-live", test_mem_table_live,
      "SET_MEM_TABLE while traffic flows" },
    { "dp-ring-sizes", test_ring_sizes,
      "queue sizes 2, 8, 64, 1024: full rings, longest chains" },
    { "dp-indirect-write-flag", test_indirect_write_flag,
      "F_WRITE on an indirect descriptor is ignored" },
    { "dp-mrg-hdr-buffer", test_mrg_hdr_buffer,
      "RX with MRG_RXBUF: a buffer of exactly the header" },
    { "dp-bad-qp", test_bad_qp, "queue pairs the port does not have" },
    { "dp-bounded-bad", test_bounded_bad,
      "bad chains get no more work per call than good ones" },
    { "dp-used-scribble", test_used_scribble,
      "the engine ignores what the guest writes into the used ring" },
    { "dp-mrg-bad-between", test_mrg_bad_between,
      "RX with MRG_RXBUF: a bad chain between a packet's buffers" },
    { "dp-dirty-log-small", test_dirty_log_small,
      "a dirty log smaller than guest memory" },
};
const size_t tu_n_datapath_tests = ARRAY_SIZE(tu_datapath_tests);
