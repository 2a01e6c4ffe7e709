/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue tests: vhost_dequeue_burst() and vhost_enqueue_burst()
 * when VIRTIO_F_RING_PACKED is negotiated, against the model packed-ring
 * driver in test-frontend.h ("The guest driver of a packed virtqueue").
 *
 * The fixture is test-datapath.c's: one port with two queue pairs over
 * four regions, two of them adjacent in guest physical memory to force the
 * cross-region (cold) paths:
 *
 *     region 0   GPA  0 MB ..  8 MB   memfd offset 0
 *     (gap)      GPA  8 MB .. 16 MB
 *     region 1   GPA 16 MB .. 24 MB   memfd offset 64 kB
 *     region 2   GPA 24 MB .. 25 MB   memfd offset 4 kB   (adjacent to 1)
 *     region 3   GPA 25 MB .. 26 MB   memfd offset 0      (adjacent to 2)
 *
 * Vring i lives in region i; buffers come from arenas in regions 0 (receive
 * rings) and 1 (transmit rings).
 *
 * The tests check the engine against VIRTIO 1.2 §2.8 and the contract of
 * the packed data path (lib/virtq-packed.h, include/ovs-vhost/vhost.h
 * "Data path"): packet bytes both ways, used descriptors (id, length and
 * exact flags), the ring's wrap counters over many laps with chains that
 * straddle the end of the ring, the four-at-a-time batch and the
 * one-at-a-time path, every validation rule with its drop counter, event
 * suppression, SET/GET_VRING_BASE and reconnection, the dirty log, bounded
 * work, and, differentially, that a split and a packed ring given the same
 * stream produce the same packets and statistics.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
#define PK_REGION_SIZE (8 * MB)
#define PK_GPA1 (16 * MB)
#define PK_SMALL_REGION_SIZE MB
#define PK_GAP_GPA (12 * MB)            /* In no region. */
#define PK_FAR_GPA (UINT64_C(1) << 30)  /* Beyond every region. */
#define PK_ARENA_SIZE (2 * MB)
#define PK_LOG_SIZE 4096                /* Covers 128 MB of guest memory. */

#define F(BIT) FEATURE_BIT(BIT)

/* What the port offers: everything the contract names, the packed ring
 * (which vhost_default_features() offers too) and the offloads. */
#define PK_OFFERED                                                      \
    (F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MRG_RXBUF) | F(VIRTIO_NET_F_MQ) \
     | F(VIRTIO_RING_F_INDIRECT_DESC) | F(VIRTIO_RING_F_EVENT_IDX)      \
     | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM)                \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT) | F(VHOST_F_LOG_ALL)                      \
     | F(VIRTIO_NET_F_GUEST_ANNOUNCE) | F(VIRTIO_NET_F_MTU)             \
     | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_F_IN_ORDER))

/* What every test acks (the packed ring is a VIRTIO 1.x feature), and the
 * options most ack on top. */
#define PK_BASE                                                         \
    (F(VIRTIO_NET_F_MQ) | F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) \
     | F(VIRTIO_NET_F_HOST_TSO4) | F(VIRTIO_NET_F_HOST_TSO6)            \
     | F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6)          \
     | F(VIRTIO_F_ANY_LAYOUT) | F(VIRTIO_F_VERSION_1)                   \
     | F(VIRTIO_F_RING_PACKED))
#define PK_MRG F(VIRTIO_NET_F_MRG_RXBUF)
#define PK_IND F(VIRTIO_RING_F_INDIRECT_DESC)
#define PK_EVT F(VIRTIO_RING_F_EVENT_IDX)
#define PK_FULL (PK_BASE | PK_MRG | PK_IND | PK_EVT)
#define PK_INO F(VIRTIO_F_IN_ORDER)

#define RX(QP) (2 * (QP))
#define TX(QP) (2 * (QP) + 1)
#define REASON(X) (1u << VHOST_DROP_##X)

/* The used descriptor flags §2.8.1 asks for in a lap with wrap counter
 * 'W': AVAIL and USED both equal to it; WRITE with a nonzero length. */
#define USED_FLAGS(W, LEN)                                              \
    ((uint16_t) (((W) ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0)       \
                 | ((LEN) ? TFE_DESC_F_WRITE : 0)))

/* The embedder's buffers: malloc()ed, 'handle' is the block. */
struct palloc {
    unsigned int n_alloc;
    unsigned int n_failed;
    unsigned int n_free;
    int fail_after;             /* Refuse after this many more (-1: no). */
};

static bool
palloc_alloc(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    struct palloc *pa = aux;

    if (!pa->fail_after) {
        pa->n_failed++;
        return false;
    }
    if (pa->fail_after > 0) {
        pa->fail_after--;
    }
    pa->n_alloc++;
    pkt->data = malloc(len ? len : 1);
    if (!pkt->data) {
        abort();
    }
    pkt->size = len;
    pkt->handle = pkt->data;
    return true;
}

static void
palloc_free(void *aux, struct vhost_pkt *pkt)
{
    struct palloc *pa = aux;

    pa->n_free++;
    free(pkt->handle);
}

/* Fixture. */

struct pk_cfg {
    uint64_t features;          /* Acked (PK_OFFERED & this). */
    unsigned int queue_size;    /* 0: 256. */
    bool log_used;              /* VHOST_VRING_F_LOG on every vring. */
    uint64_t used_align;        /* 0: 64. */
    bool has_base;              /* SET_VRING_BASE 'base' on every vring,
                                 * not the initial TFE_PACKED_BASE_INIT. */
    uint32_t base;
    const char *state_path;     /* The port's ring position log, or NULL. */
};

struct pk {
    struct vhost_engine *engine;
    struct vhost_port *port;
    struct tu_events ev;
    char *path;
    struct tfe *fe;
    struct tfe_vq vq[4];        /* By vring: RX(0), TX(0), RX(1), TX(1). */
    unsigned int hdr_len;
    bool mrg;
    bool packed;
    struct palloc pa;
    struct vhost_pkt_alloc alloc;
    uint32_t seq;               /* Next packet's sequence number. */
    int fds0;
    int threads0;
};

static struct tfe_mem *
pk_mem_create(void)
{
    struct tfe_mem *mem = tfe_mem_create();

    TU_CHECK_EQ(tfe_mem_add(mem, 0, PK_REGION_SIZE, 0), 0);
    TU_CHECK_EQ(tfe_mem_add(mem, PK_GPA1, PK_REGION_SIZE, 64 << 10), 1);
    TU_CHECK_EQ(tfe_mem_add_adjacent(mem, PK_SMALL_REGION_SIZE, 4096), 2);
    TU_CHECK_EQ(tfe_mem_add_adjacent(mem, PK_SMALL_REGION_SIZE, 0), 3);
    return mem;
}

/* Boundaries between adjacent regions: 1|2 (transmit buffers) and 2|3
 * (receive buffers). */
static uint64_t
boundary_tx(const struct pk *pk)
{
    return tfe_mem_boundary(pk->fe->mem, 1);
}

static uint64_t
boundary_rx(const struct pk *pk)
{
    return tfe_mem_boundary(pk->fe->mem, 2);
}

static uint64_t
mem_end(const struct pk *pk)
{
    return tfe_mem_boundary(pk->fe->mem, 3);
}

/* Starts an engine with one server port of two queue pairs offering
 * PK_OFFERED, connects a frontend and brings the device up with 'cfg'. */
static void
pk_start(struct pk *pk, const char *name, const struct pk_cfg *cfg)
{
    struct vhost_port_options opts;
    struct tfe_setup setup;
    char features[512];

    memset(pk, 0, sizeof *pk);
    pk->fds0 = tu_count_fds();
    pk->threads0 = tu_count_threads();
    tu_events_init(&pk->ev);
    pk->path = tu_path(name);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = pk->path;
    opts.mode = VHOST_PORT_SERVER;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk->ev;
    opts.state_path = cfg->state_path;
    TU_CHECK_OK(vhost_engine_create(&pk->engine));
    TU_CHECK_OK(vhost_engine_start(pk->engine));
    TU_CHECK_OK(vhost_port_create(pk->engine, &opts, &pk->port));

    pk->fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk->fe, pk->path));
    TU_CHECK(tu_wait_port(pk->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));

    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features & ~F(VIRTIO_F_RING_PACKED);
    setup.packed = (cfg->features & F(VIRTIO_F_RING_PACKED)) != 0;
    setup.queue_size = cfg->queue_size;
    setup.log_used = cfg->log_used;
    setup.used_align = cfg->used_align;
    for (unsigned int q = 0; q < 4; q++) {
        pk->fe->vrings[q].has_base = cfg->has_base;
        pk->fe->vrings[q].base = cfg->base;
    }
    TU_CHECK_OK(tfe_setup_device(pk->fe, 2, &setup));
    TU_CHECK_EQ(pk->fe->features
                & ~FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES),
                cfg->features & PK_OFFERED);
    TU_CHECK(tu_port_info(pk->port).ready);
    tu_log("device up, features: %s",
           vhost_features_to_string(pk->fe->features, features,
                                    sizeof features));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(pk->port, q).ready);
        TU_CHECK_OK(tfe_vq_init(&pk->vq[q], pk->fe, q, q % 2,
                                PK_ARENA_SIZE));
        if (cfg->has_base && pk->vq[q].packed) {
            tfe_vq_pset_position(&pk->vq[q], cfg->base);
        }
    }
    pk->hdr_len = pk->vq[0].hdr_len;
    pk->mrg = pk->vq[0].mrg;
    pk->packed = pk->vq[0].packed;
    TU_CHECK_EQ(pk->packed, (cfg->features & F(VIRTIO_F_RING_PACKED)) != 0);
    pk->pa.fail_after = -1;
    pk->alloc = (struct vhost_pkt_alloc) {
        .alloc = palloc_alloc, .free = palloc_free, .aux = &pk->pa,
    };
}

/* Tears 'pk' down and checks that no fd, thread or mapping leaked.
 * Fixtures started one inside another must finish in reverse order. */
static void
pk_finish(struct pk *pk)
{
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_destroy(&pk->vq[q]);
    }
    tfe_destroy(pk->fe);
    vhost_port_destroy(pk->port);
    vhost_engine_destroy(pk->engine);
    TU_CHECK_EQ(tu_count_fds(), pk->fds0);
    TU_CHECK_EQ(tu_threads_settle(pk->threads0), pk->threads0);
    tu_events_destroy(&pk->ev);
    free(pk->path);
}

static struct pk_cfg
cfg_features(uint64_t features)
{
    return (struct pk_cfg) { .features = features };
}

static struct pk_cfg
cfg_sized(uint64_t features, unsigned int queue_size)
{
    return (struct pk_cfg) { .features = features, .queue_size = queue_size };
}

/* Packets. */

enum mac_kind { MAC_UNICAST, MAC_MULTICAST, MAC_BROADCAST };

/* Returns a new packet of 'len' bytes (at least 18): an Ethernet header to
 * a 'kind' destination, the packet's sequence number, then a pattern that
 * depends on both. */
static uint8_t *
new_pkt(struct pk *pk, size_t len, enum mac_kind kind)
{
    static const uint8_t dsts[][6] = {
        [MAC_UNICAST] = { 0x02, 0, 0, 0, 0, 0x01 },
        [MAC_MULTICAST] = { 0x01, 0x00, 0x5e, 0, 0, 0x01 },
        [MAC_BROADCAST] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
    };
    static const uint8_t src[6] = { 0x02, 0, 0, 0, 0, 0x02 };
    uint8_t *p = malloc(len);
    uint32_t seq = pk->seq++;

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
check_ol(const struct vhost_offload *got, const struct vhost_offload *exp,
         const char *what)
{
    static const struct vhost_offload zero;

    exp = exp ? exp : &zero;
    if (got->flags != exp->flags || got->gso_type != exp->gso_type
        || got->hdr_len != exp->hdr_len || got->gso_size != exp->gso_size
        || got->csum_start != exp->csum_start
        || got->csum_offset != exp->csum_offset) {
        TU_FAIL("%s: offload {flags %#x gso_type %#x hdr_len %u gso_size %u "
                "csum_start %u csum_offset %u}, expected {%#x %#x %u %u %u "
                "%u}", what, got->flags, got->gso_type, got->hdr_len,
                got->gso_size, got->csum_start, got->csum_offset,
                exp->flags, exp->gso_type, exp->hdr_len, exp->gso_size,
                exp->csum_start, exp->csum_offset);
    }
}

/* Frees the buffers in 'pkts[0..n)': every entry whose 'data' is not NULL
 * is the caller's again after a dequeue, packet or not. */
static void
release_pkts(struct vhost_pkt *pkts, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i].handle);
        pkts[i].handle = pkts[i].data = NULL;
    }
}

/* Guest side. */

static int
tx_post(struct pk *pk, unsigned int qp, const struct tfe_net_hdr *hdr,
        const uint8_t *pkt, size_t len, const struct tfe_buf_opts *opts)
{
    static const struct tfe_net_hdr zero;
    int id = tfe_vq_post_tx(&pk->vq[TX(qp)], hdr ? hdr : &zero,
                            pk->hdr_len, pkt, len, opts);

    if (id < 0) {
        TU_FAIL("posting a %zu-byte packet on vring %u: %s", len, TX(qp),
                tu_strerror(id));
    }
    return id;
}

static int
rx_post(struct pk *pk, unsigned int qp, uint32_t len,
        const struct tfe_buf_opts *opts)
{
    int id = tfe_vq_post_rx(&pk->vq[RX(qp)], len, opts);

    if (id < 0) {
        TU_FAIL("posting a %"PRIu32"-byte buffer on vring %u: %s", len,
                RX(qp), tu_strerror(id));
    }
    return id;
}

/* Dequeues up to 'n' packets from queue pair 'qp' into 'pkts' (emptied
 * first, so the engine allocates every buffer). */
static unsigned int
dq(struct pk *pk, unsigned int qp, struct vhost_pkt *pkts, unsigned int n)
{
    memset(pkts, 0, n * sizeof *pkts);
    return vhost_dequeue_burst(pk->port, qp, pkts, n, &pk->alloc);
}

static unsigned int
enq1(struct pk *pk, unsigned int qp, const uint8_t *pkt, size_t len,
     const struct vhost_offload *ol)
{
    struct vhost_pkt p = { .data = (uint8_t *) pkt, .len = len,
                           .size = len };

    if (ol) {
        p.ol = *ol;
    }
    return vhost_enqueue_burst(pk->port, qp, &p, 1);
}

/* Reads the next used element of 'vq' into '*e' and, on a packed ring,
 * checks its flags exactly (USED_FLAGS).  Returns tfe_vq_get_used()'s
 * result. */
static int
get_used(struct tfe_vq *vq, struct tfe_used_elem *e, const char *what)
{
    bool wrap = vq->used_wrap;
    bool in_batch = vq->batch_left > 0;     /* No descriptor of its own. */
    int error = tfe_vq_get_used(vq, e);

    if (vq->packed && error != -EAGAIN && !in_batch
        && vq->last_used_flags != USED_FLAGS(wrap, e->len)) {
        TU_FAIL("%s: vring %"PRIu32": used descriptor {id %"PRIu32", len "
                "%"PRIu32"} has flags %#x, expected %#x", what, vq->index,
                e->id, e->len, vq->last_used_flags,
                USED_FLAGS(wrap, e->len));
    }
    return error;
}

/* Checks that the next used element of 'vq' is 'id' with 'len'.  An 'id'
 * the driver cannot know (at or above the queue size, or in flight twice)
 * is accepted with -EPROTO. */
static void
expect_used(struct tfe_vq *vq, unsigned int id, uint32_t len)
{
    struct tfe_used_elem e;
    int error = get_used(vq, &e, "expect_used");

    if (error == -EAGAIN) {
        TU_FAIL("vring %"PRIu32": no used element, expected id %u",
                vq->index, id);
    }
    if (e.id != id || e.len != len) {
        TU_FAIL("vring %"PRIu32": used element {id %"PRIu32", len %"PRIu32
                "}, expected {id %u, len %"PRIu32"}", vq->index, e.id,
                e.len, id, len);
    }
    if (id < vq->size && error && error != -EPROTO) {
        TU_FAIL("vring %"PRIu32": used element %u: %s", vq->index, id,
                tu_strerror(error));
    }
}

static void
expect_no_used(struct tfe_vq *vq)
{
    struct tfe_used_elem e;

    if (!tfe_vq_peek_used(vq, &e)) {
        if (vq->packed) {
            tu_log("driver: used %u wrap %d, avail %u wrap %d; flags %#x",
                   vq->next_used, vq->used_wrap, vq->next_avail,
                   vq->avail_wrap, vq->pdesc[vq->next_used].flags);
        }
        TU_FAIL("vring %"PRIu32": unexpected used element {id %"PRIu32
                ", len %"PRIu32"}", vq->index, e.id, e.len);
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

/* Receives the next packet on 'vq': its used elements (checked one by one,
 * flags included), with MRG_RXBUF as many as num_buffers says.  Copies up
 * to 'size' bytes of header and packet into 'buf'; returns the total used
 * length and stores the buffers taken in '*n_bufsp' and the first id in
 * '*firstp'. */
static size_t
recv_pkt(struct tfe_vq *vq, uint8_t *buf, size_t size,
         unsigned int *n_bufsp, uint16_t *firstp, const char *what)
{
    unsigned int n_bufs = 1;
    size_t total = 0;

    for (unsigned int i = 0; i < n_bufs; i++) {
        struct tfe_used_elem e;
        int error = get_used(vq, &e, what);

        if (error) {
            TU_FAIL("%s: vring %"PRIu32": buffer %u of %u: %s", what,
                    vq->index, i + 1, n_bufs, tu_strerror(error));
        }
        if (!i) {
            *firstp = e.id;
        }
        if (total < size) {
            tfe_vq_read_chain(vq, e.id, MIN(e.len, size - total),
                              buf + total);
        }
        total += e.len;
        if (!i && vq->mrg) {
            uint16_t nb;

            if (e.len < 12 || size < 12) {
                TU_FAIL("%s: first buffer of %"PRIu32" bytes", what, e.len);
            }
            memcpy(&nb, buf + 10, sizeof nb);
            if (!nb) {
                TU_FAIL("%s: num_buffers is 0", what);
            }
            n_bufs = nb;
        }
    }
    *n_bufsp = n_bufs;
    return total;
}

/* Receives the next packet on queue pair 'qp' and checks it: header from
 * 'ol' (zero if null) with num_buffers, used lengths, the 'len' bytes of
 * 'pkt', and 'n_bufs' buffers if nonzero.  Without MRG_RXBUF, also checks
 * that the engine wrote nothing past the packet in its buffer. */
static void
rx_expect(struct pk *pk, unsigned int qp, const uint8_t *pkt, size_t len,
          const struct vhost_offload *ol, unsigned int n_bufs,
          const char *what)
{
    struct tfe_vq *vq = &pk->vq[RX(qp)];
    size_t cap = pk->hdr_len + len + 64, got_len;
    uint8_t *buf = malloc(cap);
    uint8_t hdr[12];
    unsigned int got_bufs;
    uint16_t first;

    if (!buf) {
        abort();
    }
    got_len = recv_pkt(vq, buf, cap, &got_bufs, &first, what);
    if (got_len != pk->hdr_len + len) {
        TU_FAIL("%s: used length %zu, expected %u + %zu", what, got_len,
                pk->hdr_len, len);
    }
    if (n_bufs && got_bufs != n_bufs) {
        TU_FAIL("%s: took %u buffers, expected %u", what, got_bufs, n_bufs);
    }
    build_hdr(hdr, ol, pk->mrg ? got_bufs : 1);
    check_bytes(buf, hdr, pk->hdr_len, what);
    check_bytes(buf + pk->hdr_len, pkt, len, what);

    if (!pk->mrg) {
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
get_stats(struct pk *pk, unsigned int vring)
{
    struct vhost_queue_stats s;

    memset(&s, 0, sizeof s);
    TU_CHECK_OK(vhost_port_get_queue_stats(pk->port, vring, &s));
    return s;
}

/* Adds a 'len'-byte packet to the expected statistics 'e'. */
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

/* Checks the packet counters, drops and 'broken' of 'got' against 'e'. */
static void
compare_stats(unsigned int vring, const struct vhost_queue_stats *s,
              const struct vhost_queue_stats *e, bool notifications)
{
    CHECK_STAT(vring, s, e, packets);
    CHECK_STAT(vring, s, e, bytes);
    CHECK_STAT(vring, s, e, multicast);
    CHECK_STAT(vring, s, e, broadcast);
    CHECK_STAT(vring, s, e, undersize);
    CHECK_STAT(vring, s, e, size_64);
    CHECK_STAT(vring, s, e, size_65_127);
    CHECK_STAT(vring, s, e, size_128_255);
    CHECK_STAT(vring, s, e, size_256_511);
    CHECK_STAT(vring, s, e, size_512_1023);
    CHECK_STAT(vring, s, e, size_1024_1518);
    CHECK_STAT(vring, s, e, size_1519_max);
    CHECK_STAT(vring, s, e, rarps_injected);
    if (notifications) {
        CHECK_STAT(vring, s, e, guest_notifications);
        CHECK_STAT(vring, s, e, notifications_suppressed);
    }
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s->drops[r] != e->drops[r]) {
            TU_FAIL("vring %u stats: drops[%s] is %"PRIu64", expected "
                    "%"PRIu64, vring, vhost_drop_reason_to_string(r),
                    s->drops[r], e->drops[r]);
        }
    }
    if (s->broken != e->broken) {
        TU_FAIL("vring %u stats: broken is %d, expected %d", vring,
                s->broken, e->broken);
    }
}

static void
check_stats(struct pk *pk, unsigned int vring,
            const struct vhost_queue_stats *e)
{
    struct vhost_queue_stats s = get_stats(pk, vring);

    compare_stats(vring, &s, e, false);
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

/* The engine polls, so it asks the driver not to kick it: device event
 * suppression flags DISABLE (§2.8.10). */
static void
check_no_kicks(const struct tfe_vq *vq)
{
    uint16_t flags = tfe_vq_pdevice_flags(vq);

    if (flags != TFE_PEVENT_DISABLE) {
        TU_FAIL("vring %"PRIu32": device event suppression flags %#x, "
                "expected DISABLE (1)", vq->index, flags);
    }
}

/* Logs what the engine has put in vring 'vring' beyond what the driver has
 * read, and its drop counters, to explain a failure. */
static void
dump_vring(struct pk *pk, unsigned int vring)
{
    const struct tfe_vq *vq = &pk->vq[vring];
    struct vhost_queue_stats s = get_stats(pk, vring);

    tu_log("vring %u: driver avail position %u wrap %d, used position %u "
           "wrap %d, %u used elements unread", vring, vq->next_avail,
           vq->avail_wrap, vq->next_used, vq->used_wrap,
           tfe_vq_n_used(vq));
    for (unsigned int i = 0; i < vq->size && i < 16; i++) {
        const struct tfe_pdesc *d = &vq->pdesc[(vq->next_used + i)
                                               % vq->size];
        tu_log("  ring[%u] = {addr %#"PRIx64", len %"PRIu32", id %u, "
               "flags %#x}", (vq->next_used + i) % vq->size, d->addr,
               d->len, d->id, d->flags);
    }
    tu_log("  packets %"PRIu64", broken %d", s.packets, s.broken);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s.drops[r]) {
            tu_log("  drops[%s] = %"PRIu64, vhost_drop_reason_to_string(r),
                   s.drops[r]);
        }
    }
}

/* What GET_VRING_BASE gives for 'vq' once the device has written back all
 * it took and the driver has seen it: the driver's used position, as both
 * the avail and the used half. */
static uint32_t
stopped_base(const struct tfe_vq *vq)
{
    uint32_t pos = vq->next_used | (uint32_t) vq->used_wrap << 15;

    return pos | pos << 16;
}

/* Shows that queue pair 'qp' works: two packets each way, one at a time
 * (the ring may have a single slot), checked. */
static void
roundtrip(struct pk *pk, unsigned int qp, const char *why)
{
    tu_log("  queue pair %u still works (%s)", qp, why);
    for (int i = 0; i < 2; i++) {
        struct vhost_pkt out[4];
        size_t len = 100 + 50 * i;
        uint8_t *pkt = new_pkt(pk, len, MAC_UNICAST);
        int id = tx_post(pk, qp, NULL, pkt, len, NULL);

        TU_CHECK_EQ(dq(pk, qp, out, 4), 1);
        check_pkt(&out[0], pkt, len, "round trip, dequeue");
        expect_used(&pk->vq[TX(qp)], id, 0);
        expect_no_used(&pk->vq[TX(qp)]);
        release_pkts(out, 4);

        rx_post(pk, qp, 2048, NULL);
        TU_CHECK_EQ(enq1(pk, qp, pkt, len, NULL), 1);
        rx_expect(pk, qp, pkt, len, NULL, 1, "round trip, enqueue");
        expect_no_used(&pk->vq[RX(qp)]);
        free(pkt);
    }
}

/* A buffer in the arena holding 'len' zero bytes (a zero header and some
 * packet). */
static uint64_t
arena_buf(struct tfe_vq *vq, uint32_t len)
{
    uint64_t gpa = tfe_vq_alloc(vq, len, 64);
    uint8_t *zero = calloc(1, len + 1);

    TU_CHECK(zero != NULL);
    TU_CHECK(tfe_mem_write(vq->mem, gpa, zero, len));
    free(zero);
    return gpa;
}

/* A tiny deterministic generator (xorshift64*). */
struct rng {
    uint64_t s;
};

static uint32_t
rng_next(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (r->s * UINT64_C(2685821657736338717)) >> 32;
}

static uint32_t
rng_range(struct rng *r, uint32_t lo, uint32_t hi)
{
    return lo + rng_next(r) % (hi - lo + 1);
}

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
    struct pk_cfg cfg = cfg_features(features);
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
            o.gpa = boundary_tx(&pk) - 700;
        }
        pkts[i] = new_pkt(&pk, combo_sizes[i], i % 3);
        ids[i] = tx_post(&pk, 0, NULL, pkts[i], combo_sizes[i], &o);
        stats_add(&e, pkts[i], combo_sizes[i]);
    }
    TU_CHECK_EQ(dq(&pk, 0, out, VHOST_MAX_BURST), N_COMBO);
    for (size_t i = 0; i < N_COMBO; i++) {
        check_pkt(&out[i], pkts[i], combo_sizes[i], "dequeued packet");
        check_ol(&out[i].ol, NULL, "dequeued packet");
        expect_used(&pk.vq[TX(0)], ids[i], 0);
    }
    expect_no_used(&pk.vq[TX(0)]);
    release_pkts(out, VHOST_MAX_BURST);
    check_stats(&pk, TX(0), &e);

    tu_log("the guest is notified once; the engine polls (device event "
           "flags DISABLE)");
    TU_CHECK_EQ(tfe_vq_calls(&pk.vq[TX(0)]), 1);
    s = get_stats(&pk, TX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    TU_CHECK_EQ(s.notifications_suppressed, 0);
    check_no_kicks(&pk.vq[TX(0)]);

    tu_log("host to guest: the same packets%s",
           mrg ? ", into 1536-byte buffers" : ", one chain each");
    if (mrg) {
        for (int i = 0; i < 64; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 2,
                                      .indirect = indirect };
            if (i == 3) {
                o.gpa = boundary_rx(&pk) - 700;
            }
            rx_post(&pk, 0, MRG_BUF_SIZE, &o);
        }
    } else {
        for (size_t i = 0; i < N_COMBO; i++) {
            struct tfe_buf_opts o = { .n_descs = 1 + i % 3,
                                      .indirect = indirect };
            if (i == 10) {
                o.gpa = boundary_rx(&pk) - 4000;
            }
            rx_post(&pk, 0, 9000 + pk.hdr_len + 100, &o);
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
        rx_expect(&pk, 0, pkts[i], combo_sizes[i], NULL, n_bufs,
                  "enqueued packet");
    }
    if (!mrg) {
        expect_no_used(&pk.vq[RX(0)]);
    }
    check_stats(&pk, RX(0), &e);
    TU_CHECK_EQ(tfe_vq_calls(&pk.vq[RX(0)]), 1);
    s = get_stats(&pk, RX(0));
    TU_CHECK_EQ(s.guest_notifications, 1);
    check_no_kicks(&pk.vq[RX(0)]);

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
        uint8_t *a = new_pkt(&pk, 3000, MAC_UNICAST);
        struct tfe_buf_opts o = { .n_descs = 2, .indirect = indirect };

        tx_post(&pk, 0, &h, a, 3000, &o);
        TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
        check_pkt(&out[0], a, 3000, "offload dequeue");
        check_ol(&out[0].ol, &exp, "offload dequeue");
        release_pkts(out, 4);
        TU_CHECK_EQ(get_used(&pk.vq[TX(0)], &(struct tfe_used_elem) { 0 },
                             "offload dequeue"), 0);
        rx_post(&pk, 0, 4000, &o);
        TU_CHECK_EQ(enq1(&pk, 0, a, 3000, &ol), 1);
        rx_expect(&pk, 0, a, 3000, &ol, 0, "offload enqueue");
        free(a);
    }

    for (size_t i = 0; i < N_COMBO; i++) {
        free(pkts[i]);
    }
    roundtrip(&pk, 1, "the other queue pair");
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

#define WRAP_MAX_PENDING 200

struct pending {
    uint8_t *pkt;
    size_t len;
    int id;
};

static void
run_wrap(const char *name, unsigned int size, uint64_t features,
         unsigned int laps)
{
    struct pk_cfg cfg = cfg_sized(features, size);
    struct pending *txp = calloc(WRAP_MAX_PENDING, sizeof *txp);
    uint32_t *rxb = calloc(WRAP_MAX_PENDING, sizeof *rxb);
    unsigned int n_txp = 0, n_rxb = 0;
    struct rng rng = { UINT64_C(0x9e3779b97f4a7c15) ^ size ^ features };
    uint64_t tx_slots = 0, rx_slots = 0;
    unsigned int tx_straddles = 0, rx_straddles = 0, rx_multi = 0;
    struct vhost_queue_stats e_tx, e_rx;
    struct vhost_pkt out[VHOST_MAX_BURST];
    bool indirect = features & PK_IND;
    unsigned int rounds = 0;
    struct tfe_vq *tx, *rx;
    struct pk pk;

    TU_CHECK(txp && rxb);
    pk_start(&pk, name, &cfg);
    tx = &pk.vq[TX(0)];
    rx = &pk.vq[RX(0)];
    /* Odd sizes: the buffer id in every descriptor of a chain, as Linux
     * writes it; others: only in the last, as §2.8.6 asks. */
    tx->same_ids = rx->same_ids = size % 2;
    memset(&e_tx, 0, sizeof e_tx);
    memset(&e_rx, 0, sizeof e_rx);
    tu_log("queue size %u: %u laps each way with chains of 1-%u "
           "descriptors%s", size, laps, MIN(4, size),
           indirect ? ", some indirect" : "");

    while (tx_slots < (uint64_t) laps * size
           || rx_slots < (uint64_t) laps * size) {
        unsigned int k, n, got;

        rounds++;
        /* Transmit: post some chains, dequeue a random burst. */
        k = rng_range(&rng, 0, MIN(size, 64));
        for (unsigned int i = 0; i < k && n_txp < WRAP_MAX_PENDING; i++) {
            struct tfe_buf_opts o = {
                .n_descs = rng_range(&rng, 1, MIN(4, size)),
                .indirect = indirect && !rng_range(&rng, 0, 3),
            };
            unsigned int slots = o.indirect ? 1 : o.n_descs;
            size_t len = rng_range(&rng, 18, 1500);

            if (tx->n_free < slots || !tx->n_free_ids) {
                break;
            }
            tx_straddles += tx->next_avail + slots > size;
            txp[n_txp].pkt = new_pkt(&pk, len, rng_range(&rng, 0, 2));
            txp[n_txp].len = len;
            txp[n_txp].id = tx_post(&pk, 0, NULL, txp[n_txp].pkt, len, &o);
            stats_add(&e_tx, txp[n_txp].pkt, len);
            n_txp++;
            tx_slots += slots;
        }
        n = rng_range(&rng, 1, VHOST_MAX_BURST);
        got = dq(&pk, 0, out, n);
        if (got != MIN(n, n_txp)) {
            dump_vring(&pk, TX(0));
            TU_FAIL("round %u: dequeue of %u returned %u, %u pending",
                    rounds, n, got, n_txp);
        }
        for (unsigned int i = 0; i < got; i++) {
            check_pkt(&out[i], txp[i].pkt, txp[i].len, "wrap dequeue");
            expect_used(tx, txp[i].id, 0);
            free(txp[i].pkt);
        }
        expect_no_used(tx);
        release_pkts(out, n);
        memmove(txp, txp + got, (n_txp - got) * sizeof *txp);
        n_txp -= got;

        /* Receive: post some buffers, enqueue a random burst. */
        k = rng_range(&rng, 0, MIN(size, 32));
        for (unsigned int i = 0; i < k && n_rxb < WRAP_MAX_PENDING; i++) {
            struct tfe_buf_opts o = {
                .n_descs = rng_range(&rng, 1, MIN(3, size)),
                .indirect = indirect && !rng_range(&rng, 0, 3),
            };
            unsigned int slots = o.indirect ? 1 : o.n_descs;
            uint32_t len = (pk.mrg && size >= 7
                            ? rng_range(&rng, 100, 2048)
                            : rng_range(&rng, 1600, 2048));

            if (rx->n_free < slots || !rx->n_free_ids) {
                break;
            }
            rx_straddles += rx->next_avail + slots > size;
            rx_post(&pk, 0, len, &o);
            rxb[n_rxb++] = len;
            rx_slots += slots;
        }
        k = rng_range(&rng, 1, 16);
        {
            struct vhost_pkt in[16];
            unsigned int bufs[16];
            unsigned int expect = 0, b = 0;

            for (unsigned int i = 0; i < k; i++) {
                size_t len = rng_range(&rng, 18, 1500);
                uint64_t have = 0;
                unsigned int first = b;

                in[i] = (struct vhost_pkt) {
                    .data = new_pkt(&pk, len, MAC_MULTICAST), .len = len,
                };
                /* What the engine should do: fill buffers in order. */
                if (expect == i) {
                    while (b < n_rxb && have < pk.hdr_len + len
                           && (pk.mrg || b == first)) {
                        have += rxb[b++];
                    }
                    if (have >= pk.hdr_len + len) {
                        bufs[i] = b - first;
                        expect++;
                    } else {
                        b = first;
                    }
                }
            }
            got = vhost_enqueue_burst(pk.port, 0, in, k);
            if (got != expect) {
                dump_vring(&pk, RX(0));
                TU_FAIL("round %u: enqueue of %u returned %u, expected %u "
                        "(%u buffers posted)", rounds, k, got, expect,
                        n_rxb);
            }
            for (unsigned int i = 0; i < got; i++) {
                rx_expect(&pk, 0, in[i].data, in[i].len, NULL, bufs[i],
                          "wrap enqueue");
                stats_add(&e_rx, in[i].data, in[i].len);
                rx_multi += bufs[i] > 1;
            }
            expect_no_used(rx);
            memmove(rxb, rxb + b, (n_rxb - b) * sizeof *rxb);
            n_rxb -= b;
            for (unsigned int i = 0; i < k; i++) {
                free(in[i].data);
            }
        }
    }
    tu_log("%u rounds: %"PRIu64" transmit and %"PRIu64" receive ring slots "
           "(%"PRIu64" and %"PRIu64" laps), %u and %u chains across the "
           "end of the ring, %u packets over several buffers", rounds,
           tx_slots, rx_slots, tx_slots / size, rx_slots / size,
           tx_straddles, rx_straddles, rx_multi);
    if (size > 1 && size <= 256) {
        TU_CHECK(tx_straddles > 0);
        TU_CHECK(rx_straddles > 0);
    }

    /* Drain what is left on transmit. */
    while (n_txp) {
        unsigned int got = dq(&pk, 0, out, VHOST_MAX_BURST);

        TU_CHECK(got > 0);
        for (unsigned int i = 0; i < got; i++) {
            check_pkt(&out[i], txp[i].pkt, txp[i].len, "wrap drain");
            expect_used(tx, txp[i].id, 0);
            free(txp[i].pkt);
        }
        release_pkts(out, VHOST_MAX_BURST);
        memmove(txp, txp + got, (n_txp - got) * sizeof *txp);
        n_txp -= got;
    }
    check_stats(&pk, TX(0), &e_tx);
    check_stats(&pk, RX(0), &e_rx);

    roundtrip(&pk, 1, "after the laps");
    tu_log("GET_VRING_BASE gives the driver's used position and wrap "
           "counter on both rings");
    {
        uint32_t base;

        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
        TU_CHECK_EQ(base, stopped_base(tx));
        TU_CHECK_EQ(base, tfe_vq_pbase(tx));
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, RX(0), &base));
        TU_CHECK_EQ(base, stopped_base(rx));
    }
    /* With IN_ORDER, every used descriptor named a chain in flight, in
     * order, and receive never batched. */
    TU_CHECK_EQ(tx->n_unordered, 0);
    TU_CHECK_EQ(rx->n_unordered, 0);
    free(txp);
    free(rxb);
    pk_finish(&pk);
}

static void
test_wrap_1(void)
{
    run_wrap("wrap-1", 1, PK_FULL, 300);
}

static void
test_wrap_2(void)
{
    run_wrap("wrap-2", 2, PK_FULL, 300);
}

static void
test_wrap_7(void)
{
    run_wrap("wrap-7", 7, PK_FULL, 200);
}

static void
test_wrap_7_nomrg(void)
{
    run_wrap("wrap-7-nm", 7, PK_BASE | PK_EVT, 200);
}

static void
test_wrap_33(void)
{
    run_wrap("wrap-33", 33, PK_FULL, 60);
}

static void
test_wrap_256(void)
{
    run_wrap("wrap-256", 256, PK_FULL, 12);
}

static void
test_wrap_256_nomrg(void)
{
    run_wrap("wrap-256-nm", 256, PK_BASE | PK_IND, 12);
}

static void
test_wrap_32768(void)
{
    run_wrap("wrap-32768", 32768, PK_FULL, 2);
}

/* The four-at-a-time batch and the one-at-a-time path. */

enum item_kind {
    IT_GOOD,                    /* One descriptor, 100..400 bytes. */
    IT_STRADDLE,                /* One descriptor across regions 1|2. */
    IT_OFFLOAD,                 /* One descriptor, NEEDS_CSUM header. */
    IT_HDR_ONLY,                /* One descriptor of just the header. */
    IT_CHAIN2,                  /* Two descriptors. */
    IT_INDIRECT,                /* An indirect table of two. */
    IT_BAD_CSUM,                /* csum_start + csum_offset past the end. */
    IT_BAD_ID,                  /* Buffer id = queue size. */
    IT_BAD_WRITE,               /* Device-writable. */
    IT_SHORT,                   /* 5 bytes: shorter than the header. */
    IT_TOO_BIG,                 /* 70000 bytes of packet. */
};

struct item {
    enum item_kind kind;
    uint8_t *pkt;               /* Good: the packet. */
    size_t len;
    struct vhost_offload ol;
    int id;
    int reason;                 /* -1 for a good packet. */
};

static const struct tfe_net_hdr offload_hdr = {
    .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = VHOST_GSO_UDP,
    .hdr_len = 42, .gso_size = 1000, .csum_start = 34, .csum_offset = 6,
};

/* Makes 'it' available on transmit ring 'qp' as its kind says. */
static void
post_item(struct pk *pk, unsigned int qp, struct item *it)
{
    struct tfe_vq *vq = &pk->vq[TX(qp)];
    static uint8_t zero18[18];

    it->pkt = NULL;
    it->reason = -1;
    memset(&it->ol, 0, sizeof it->ol);
    it->len = 100 + (pk->seq * 37) % 300;
    switch (it->kind) {
    case IT_GOOD:
    case IT_CHAIN2:
    case IT_INDIRECT: {
        struct tfe_buf_opts o = {
            .n_descs = it->kind == IT_GOOD ? 1 : 2,
            .indirect = it->kind == IT_INDIRECT,
        };
        it->pkt = new_pkt(pk, it->len, MAC_UNICAST);
        it->id = tx_post(pk, qp, NULL, it->pkt, it->len, &o);
        break;
    }
    case IT_STRADDLE: {
        struct tfe_buf_opts o = { .gpa = boundary_tx(pk) - 50 };
        it->pkt = new_pkt(pk, it->len, MAC_BROADCAST);
        it->id = tx_post(pk, qp, NULL, it->pkt, it->len, &o);
        break;
    }
    case IT_OFFLOAD:
        it->pkt = new_pkt(pk, it->len, MAC_MULTICAST);
        it->id = tx_post(pk, qp, &offload_hdr, it->pkt, it->len, NULL);
        it->ol = (struct vhost_offload) {
            .flags = VHOST_OL_NEEDS_CSUM, .gso_type = VHOST_GSO_UDP,
            .hdr_len = 42, .gso_size = 1000, .csum_start = 34,
            .csum_offset = 6,
        };
        break;
    case IT_HDR_ONLY:
        it->len = 0;
        it->pkt = malloc(1);
        it->id = tx_post(pk, qp, NULL, zero18, 0, NULL);
        break;
    case IT_BAD_CSUM: {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .csum_start = 90,
            .csum_offset = 16,
        };
        uint8_t *p = new_pkt(pk, 100, MAC_UNICAST);
        it->id = tx_post(pk, qp, &h, p, 100, NULL);
        it->reason = VHOST_DROP_BAD_CSUM;
        free(p);
        break;
    }
    case IT_BAD_ID:
        it->id = vq->size;
        tfe_vq_pwrite(vq, 0, arena_buf(vq, 100), 100, vq->size,
                      tfe_vq_pavail(vq, 0));
        tfe_vq_pclaim(vq, vq->size, 1);
        it->reason = VHOST_DROP_BAD_INDEX;
        break;
    case IT_BAD_WRITE: {
        struct tfe_seg seg = { arena_buf(vq, 100), 100 };
        it->id = tfe_vq_add_chain(vq, &seg, 1, true, NULL);
        it->reason = VHOST_DROP_BAD_DIRECTION;
        break;
    }
    case IT_SHORT: {
        struct tfe_seg seg = { arena_buf(vq, 5), 5 };
        it->id = tfe_vq_add_chain(vq, &seg, 1, false, NULL);
        it->reason = VHOST_DROP_SHORT_HDR;
        break;
    }
    case IT_TOO_BIG: {
        uint8_t *p = new_pkt(pk, 70000, MAC_UNICAST);
        it->id = tx_post(pk, qp, NULL, p, 70000, NULL);
        it->reason = VHOST_DROP_TOO_BIG;
        free(p);
        break;
    }
    }
    TU_CHECK(it->id >= 0);
}

/* Dequeues 'n_dq' from queue pair 0 and checks that the good items among
 * 'items' come out in order (the first 'expect' of them), that each item
 * is used in order with length 0, and the drop counters. */
static void
check_items(struct pk *pk, struct item *items, size_t n_items,
            unsigned int n_dq, unsigned int expect, const char *what)
{
    struct vhost_queue_stats s0 = get_stats(pk, TX(0)), s1;
    struct vhost_pkt out[VHOST_MAX_BURST];
    unsigned int got, k = 0;
    uint64_t drops[VHOST_N_DROP_REASONS] = { 0 };

    got = dq(pk, 0, out, n_dq);
    if (got != expect) {
        dump_vring(pk, TX(0));
        TU_FAIL("%s: dequeue of %u returned %u, expected %u", what, n_dq,
                got, expect);
    }
    for (size_t i = 0; i < n_items; i++) {
        struct item *it = &items[i];

        if (it->reason >= 0) {
            drops[it->reason]++;
        } else if (k < got) {
            check_pkt(&out[k], it->pkt, it->len, what);
            check_ol(&out[k].ol, &it->ol, what);
            k++;
        }
        expect_used(&pk->vq[TX(0)], it->id, 0);
        free(it->pkt);
        it->pkt = NULL;
    }
    expect_no_used(&pk->vq[TX(0)]);
    release_pkts(out, n_dq);
    s1 = get_stats(pk, TX(0));
    TU_CHECK_EQ(s1.packets - s0.packets, got);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (s1.drops[r] - s0.drops[r] != drops[r]) {
            TU_FAIL("%s: %"PRIu64" drops[%s], expected %"PRIu64, what,
                    s1.drops[r] - s0.drops[r],
                    vhost_drop_reason_to_string(r), drops[r]);
        }
    }
}

/* Moves the transmit ring of queue pair 0 to position 'pos' with simple
 * packets, dequeued and checked. */
static void
tx_advance_to(struct pk *pk, unsigned int pos)
{
    struct tfe_vq *vq = &pk->vq[TX(0)];

    while (vq->next_avail != pos) {
        struct item it = { .kind = IT_GOOD };

        post_item(pk, 0, &it);
        check_items(pk, &it, 1, 1, 1, "filler");
    }
}

static void
run_items(struct pk *pk, unsigned int pos, const enum item_kind *kinds,
          size_t n, unsigned int n_dq, const char *what)
{
    struct item items[16];
    unsigned int good = 0;

    tu_log("at position %u: %s", pos, what);
    tx_advance_to(pk, pos);
    for (size_t i = 0; i < n; i++) {
        items[i].kind = kinds[i];
        post_item(pk, 0, &items[i]);
        good += items[i].reason < 0;
    }
    check_items(pk, items, n, n_dq, MIN(good, n_dq), what);
}

#define ITEMS(...) ((const enum item_kind[]) { __VA_ARGS__ }),          \
        ARRAY_SIZE(((const enum item_kind[]) { __VA_ARGS__ }))

static void
test_batch(void)
{
    struct pk_cfg cfg = cfg_features(PK_FULL);
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

        tx_advance_to(&pk, 20);
        for (int i = 0; i < 4; i++) {
            items[i].kind = IT_GOOD;
            post_item(&pk, 0, &items[i]);
        }
        check_items(&pk, items, 3, 3, 3, "burst of 3");
        check_items(&pk, items + 3, 1, 4, 1, "the fourth");
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
        tx_advance_to(&pk, 20);
        for (int i = 0; i < 3; i++) {
            items[i].kind = IT_GOOD;
            post_item(&pk, 0, &items[i]);
        }
        check_items(&pk, items, 3, 4, 3, "three of four available");
        items[0].kind = IT_GOOD;
        post_item(&pk, 0, &items[0]);
        check_items(&pk, items, 1, 4, 1, "the fourth");
    }

    tu_log("the allocator fails after two of a batch of four: two come "
           "out, two stay");
    {
        struct item items[4];
        struct vhost_pkt out[4];

        tx_advance_to(&pk, 28);
        for (int i = 0; i < 4; i++) {
            items[i].kind = IT_GOOD;
            post_item(&pk, 0, &items[i]);
        }
        pk.pa.fail_after = 2;
        TU_CHECK_EQ(dq(&pk, 0, out, 4), 2);
        for (int i = 0; i < 2; i++) {
            check_pkt(&out[i], items[i].pkt, items[i].len, "before failure");
            expect_used(&pk.vq[TX(0)], items[i].id, 0);
        }
        expect_no_used(&pk.vq[TX(0)]);
        release_pkts(out, 4);
        pk.pa.fail_after = -1;
        TU_CHECK_EQ(dq(&pk, 0, out, 4), 2);
        for (int i = 2; i < 4; i++) {
            check_pkt(&out[i - 2], items[i].pkt, items[i].len,
                      "after failure");
            expect_used(&pk.vq[TX(0)], items[i].id, 0);
        }
        release_pkts(out, 4);
        for (int i = 0; i < 4; i++) {
            free(items[i].pkt);
        }
    }

    tu_log("pre-filled buffers: big ones are kept, small ones replaced");
    {
        struct item items[4];
        struct vhost_pkt out[4];
        unsigned int n_alloc = pk.pa.n_alloc, n_free = pk.pa.n_free;

        tx_advance_to(&pk, 32);
        for (int i = 0; i < 4; i++) {
            items[i].kind = IT_GOOD;
            post_item(&pk, 0, &items[i]);
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
            check_pkt(&out[i], items[i].pkt, items[i].len, "pre-filled");
            expect_used(&pk.vq[TX(0)], items[i].id, 0);
            free(items[i].pkt);
        }
        TU_CHECK_EQ(pk.pa.n_alloc - n_alloc, 1);
        TU_CHECK_EQ(pk.pa.n_free - n_free, 1);
        release_pkts(out, 4);
    }
    roundtrip(&pk, 0, "after the batches");
    roundtrip(&pk, 1, "the other queue pair");
    pk_finish(&pk);
}


/* Validation.  Hostile chains are written by hand at the driver's
 * position (tfe_vq_pwrite()) and claimed with the buffer id the engine
 * should return and the ring slots it should consume. */

/* Returns a buffer id not in flight on 'vq', from the top down. */
static uint16_t
free_id(const struct tfe_vq *vq)
{
    for (unsigned int id = vq->size; id-- > 0;) {
        if (!vq->chains[id].in_use) {
            return id;
        }
    }
    TU_FAIL("vring %"PRIu32": no free buffer id", vq->index);
}

/* Writes and claims a chain of 'n' descriptors, each {addr[i], len[i]}
 * with flags 'flags[i]' (NEXT is added to all but the last, and the bits
 * that make each available), buffer id 'id' in the last and the poison
 * in the others.  Returns 'id'. */
static uint16_t
post_raw(struct tfe_vq *vq, size_t n, const uint64_t *addr,
         const uint32_t *len, const uint16_t *flags, uint16_t id)
{
    for (size_t i = n; i-- > 0;) {
        uint16_t f = flags[i] | (i + 1 < n ? TFE_DESC_F_NEXT : 0);

        tfe_vq_pwrite(vq, i, addr[i], len[i],
                      i + 1 < n ? TFE_PACKED_ID_POISON : id,
                      f | tfe_vq_pavail(vq, i));
    }
    tfe_vq_pclaim(vq, id, n);
    return id;
}

static uint16_t
post_one(struct tfe_vq *vq, uint64_t addr, uint32_t len, uint16_t flags,
         uint16_t id)
{
    return post_raw(vq, 1, &addr, &len, &flags, id);
}

static uint16_t
post_two(struct tfe_vq *vq, uint64_t a0, uint32_t l0, uint16_t f0,
         uint64_t a1, uint32_t l1, uint16_t f1, uint16_t id)
{
    uint64_t addr[2] = { a0, a1 };
    uint32_t len[2] = { l0, l1 };
    uint16_t flags[2] = { f0, f1 };

    return post_raw(vq, 2, addr, len, flags, id);
}

/* The four-at-a-time enqueue batch: receive buffers posted from a ring
 * position that is a multiple of four.  Four packets that fit go in at
 * once (with offload headers and num_buffers 1); a buffer too small, a
 * chain of two or a short burst sends the packets one at a time instead,
 * with the same results.  The ring positions drift, so batches start at
 * every alignment.  With and without MRG_RXBUF. */
static void
run_batch_rx(uint64_t features)
{
    struct pk_cfg cfg = cfg_sized(features, 32);
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
            p[i] = new_pkt(&pk, len, i % 2 ? MAC_MULTICAST : MAC_UNICAST);
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
                ids[i] = rx_post(&pk, 0, room, &o);
            } else {
                ids[i] = rx_post(&pk, 0, room, NULL);
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
            rx_expect(&pk, 0, p[i], in[i].len, &ol[i],
                      kind == 1 && i == 2 ? 2 : 1, "batch rx");
        }
        /* Give back what is left. */
        while (vq->n_free < vq->size || tfe_vq_n_used(vq)) {
            struct tfe_used_elem u;
            uint8_t *f = new_pkt(&pk, 60, MAC_UNICAST);

            if (tfe_vq_n_used(vq)) {
                TU_CHECK_OK(get_used(vq, &u, "leftover"));
            } else {
                TU_CHECK_EQ(enq1(&pk, 0, f, 60, NULL), 1);
            }
            free(f);
        }
        for (unsigned int i = 0; i < n; i++) {
            free(p[i]);
        }
        (void) ids;
    }
    roundtrip(&pk, 0, "after the batches");
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
    struct pk_cfg cfg = cfg_features(features);
    struct vhost_queue_stats e, s;
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint16_t ids[16];
    uint8_t *a, *b;
    int ia, ib;
    unsigned int n;
    size_t k;
    struct pk pk;

    pk_start(&pk, name, &cfg);
    a = new_pkt(&pk, 100, MAC_UNICAST);
    b = new_pkt(&pk, 200, MAC_BROADCAST);
    ia = tx_post(&pk, 0, NULL, a, 100, NULL);
    k = build(&pk, &pk.vq[TX(0)], ids);
    ib = tx_post(&pk, 0, NULL, b, 200, NULL);
    tu_log("%zu bad chains between two good packets", k);

    n = dq(&pk, 0, out, VHOST_MAX_BURST);
    if (n != 2) {
        dump_vring(&pk, TX(0));
        TU_FAIL("dequeue returned %u packets, expected 2", n);
    }
    check_pkt(&out[0], a, 100, "packet before the bad chains");
    check_pkt(&out[1], b, 200, "packet after the bad chains");
    release_pkts(out, VHOST_MAX_BURST);

    tu_log("each bad chain is used with length 0, in order, and the ring "
           "positions line up");
    expect_used(&pk.vq[TX(0)], ia, 0);
    for (size_t i = 0; i < k; i++) {
        expect_used(&pk.vq[TX(0)], ids[i], 0);
    }
    expect_used(&pk.vq[TX(0)], ib, 0);
    expect_no_used(&pk.vq[TX(0)]);
    TU_CHECK_EQ(tfe_vq_pbase(&pk.vq[TX(0)]), stopped_base(&pk.vq[TX(0)]));

    tu_log("and counted under the right reason");
    s = get_stats(&pk, TX(0));
    memset(&e, 0, sizeof e);
    stats_add(&e, a, 100);
    stats_add(&e, b, 200);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (reasons & (1u << r)) {
            e.drops[r] = reasons & (reasons - 1) ? s.drops[r] : k;
        }
    }
    TU_CHECK_EQ(total_drops(&s), k);
    check_stats(&pk, TX(0), &e);
    free(a);
    free(b);

    roundtrip(&pk, 1, "the other queue pair");
    roundtrip(&pk, 0, "the same queue pair");
    pk_finish(&pk);
}

/* The same on a receive ring: bad chains ahead of a good one; a packet
 * enqueued lands in the good one, the bad ones are used with length 0. */
static void
run_bad_rx(const char *name, uint64_t features, bad_chain_fn *build,
           unsigned int reasons)
{
    struct pk_cfg cfg = cfg_features(features);
    struct vhost_queue_stats e, s;
    struct tfe_used_elem u;
    uint16_t ids[16];
    uint8_t *a;
    int ig;
    size_t k;
    struct pk pk;

    pk_start(&pk, name, &cfg);
    a = new_pkt(&pk, 300, MAC_MULTICAST);
    k = build(&pk, &pk.vq[RX(0)], ids);
    ig = rx_post(&pk, 0, 2048, NULL);
    tu_log("%zu bad chains, then a good one (id %d)", k, ig);

    if (enq1(&pk, 0, a, 300, NULL) != 1) {
        dump_vring(&pk, RX(0));
        TU_FAIL("the packet was not enqueued");
    }
    tu_log("each bad chain is used with length 0, in order");
    for (size_t i = 0; i < k; i++) {
        expect_used(&pk.vq[RX(0)], ids[i], 0);
    }
    tu_log("and the packet lands in the good chain");
    TU_CHECK_OK(tfe_vq_peek_used(&pk.vq[RX(0)], &u));
    TU_CHECK_EQ(u.id, ig);
    rx_expect(&pk, 0, a, 300, NULL, 1, "packet after the bad chains");
    expect_no_used(&pk.vq[RX(0)]);

    s = get_stats(&pk, RX(0));
    memset(&e, 0, sizeof e);
    stats_add(&e, a, 300);
    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (reasons & (1u << r)) {
            e.drops[r] = reasons & (reasons - 1) ? s.drops[r] : k;
        }
    }
    TU_CHECK_EQ(total_drops(&s), k);
    check_stats(&pk, RX(0), &e);
    free(a);

    roundtrip(&pk, 1, "the other queue pair");
    roundtrip(&pk, 0, "the same queue pair");
    pk_finish(&pk);
}

static size_t
bad_index(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;

    tu_log("buffer ids %u (the queue size), 0xffff, and %u in the last "
           "descriptor of a chain of two", vq->size, vq->size + 5);
    ids[0] = post_one(vq, arena_buf(vq, 100), 100, w, vq->size);
    ids[1] = post_one(vq, arena_buf(vq, 100), 100, w, 0xffff);
    ids[2] = post_two(vq, arena_buf(vq, 12), 12, w, arena_buf(vq, 100), 100,
                      w, vq->size + 5);
    return 3;
}

static size_t
bad_direction_tx(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    /* Not inside an indirect table: the engine accepts device-writable
     * entries in TX tables, which DPDK 22.11's virtio-user sends
     * (lib/virtq-packed.c). */
    tu_log("device-writable: one descriptor, and the second of two");
    ids[0] = post_one(vq, arena_buf(vq, 100), 100, TFE_DESC_F_WRITE,
                      free_id(vq));
    ids[1] = post_two(vq, arena_buf(vq, 12), 12, 0, arena_buf(vq, 100), 100,
                      TFE_DESC_F_WRITE, free_id(vq));
    return 2;
}

static size_t
bad_direction_rx(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    tu_log("read-only: one descriptor, the second of two, and in an "
           "indirect table");
    ids[0] = post_one(vq, arena_buf(vq, 2048), 2048, 0, free_id(vq));
    ids[1] = post_two(vq, arena_buf(vq, 12), 12, TFE_DESC_F_WRITE,
                      arena_buf(vq, 2048), 2048, 0, free_id(vq));
    {
        uint64_t t = tfe_vq_alloc(vq, 32, 16);
        struct tfe_pdesc table[2] = {
            { arena_buf(vq, 12), 12, 0, TFE_DESC_F_WRITE },
            { arena_buf(vq, 2048), 2048, 0, 0 },
        };
        write_table(vq, t, table, 2);
        ids[2] = post_one(vq, t, 32, TFE_DESC_F_INDIRECT, free_id(vq));
    }
    return 3;
}

static size_t
bad_addr(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;

    tu_log("buffers in the gap, beyond memory, wrapping 2^64, across the "
           "end of memory, and the second of two in the gap");
    ids[0] = post_one(vq, PK_GAP_GPA, 200, w, free_id(vq));
    ids[1] = post_one(vq, PK_FAR_GPA, 200, w, free_id(vq));
    ids[2] = post_one(vq, UINT64_MAX - 50, 200, w, free_id(vq));
    ids[3] = post_one(vq, mem_end(pk) - 100, 200, w, free_id(vq));
    ids[4] = post_two(vq, arena_buf(vq, 12), 12, w, PK_GAP_GPA, 200, w,
                      free_id(vq));
    return 5;
}

static size_t
bad_indirect(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;
    uint64_t buf = arena_buf(vq, 2048);
    struct tfe_pdesc good[2] = {
        { buf, 12, 0, w }, { buf + 12, 1000, 0, w },
    };
    uint64_t t = tfe_vq_alloc(vq, 32, 16);
    size_t k = 0;

    write_table(vq, t, good, 2);
    tu_log("INDIRECT with NEXT (chained to a plain descriptor)");
    ids[k++] = post_two(vq, t, 32, TFE_DESC_F_INDIRECT,
                        arena_buf(vq, 100), 100, w, free_id(vq));
    tu_log("tables of 0 and 8 bytes, of queue size + 1 entries, in the gap");
    ids[k++] = post_one(vq, t, 0, TFE_DESC_F_INDIRECT, free_id(vq));
    ids[k++] = post_one(vq, t, 8, TFE_DESC_F_INDIRECT, free_id(vq));
    {
        uint32_t len = 16 * (vq->size + 1);
        uint64_t big = tfe_vq_alloc(vq, len, 16);
        struct tfe_pdesc *tb = calloc(vq->size + 1, sizeof *tb);

        for (unsigned int i = 0; i <= vq->size; i++) {
            tb[i] = (struct tfe_pdesc) { buf, 1, 0, w };
        }
        write_table(vq, big, tb, vq->size + 1);
        free(tb);
        ids[k++] = post_one(vq, big, len, TFE_DESC_F_INDIRECT, free_id(vq));
    }
    ids[k++] = post_one(vq, PK_GAP_GPA, 32, TFE_DESC_F_INDIRECT,
                        free_id(vq));
    tu_log("a nested indirect descriptor, and a table entry in the gap");
    {
        uint64_t t2 = tfe_vq_alloc(vq, 32, 16);
        struct tfe_pdesc nested[2] = {
            { buf, 12, 0, w }, { t, 32, 0, TFE_DESC_F_INDIRECT },
        };
        write_table(vq, t2, nested, 2);
        ids[k++] = post_one(vq, t2, 32, TFE_DESC_F_INDIRECT, free_id(vq));
    }
    {
        uint64_t t3 = tfe_vq_alloc(vq, 32, 16);
        struct tfe_pdesc gap[2] = {
            { buf, 12, 0, w }, { PK_GAP_GPA, 1000, 0, w },
        };
        write_table(vq, t3, gap, 2);
        ids[k++] = post_one(vq, t3, 32, TFE_DESC_F_INDIRECT, free_id(vq));
    }
    return k;
}

static size_t
bad_indirect_unnegotiated(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint16_t w = vq == &pk->vq[RX(0)] ? TFE_DESC_F_WRITE : 0;
    uint64_t buf = arena_buf(vq, 2048);
    struct tfe_pdesc good[2] = {
        { buf, 12, 0, w }, { buf + 12, 1000, 0, w },
    };
    uint64_t t = tfe_vq_alloc(vq, 32, 16);

    tu_log("a well-formed indirect table without INDIRECT_DESC negotiated");
    write_table(vq, t, good, 2);
    ids[0] = post_one(vq, t, 32, TFE_DESC_F_INDIRECT, free_id(vq));
    return 1;
}

static size_t
bad_short_hdr(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint64_t t = tfe_vq_alloc(vq, 32, 16);
    struct tfe_pdesc table[2] = {
        { arena_buf(vq, 5), 5, 0, 0 }, { arena_buf(vq, 5), 5, 0, 0 },
    };

    tu_log("chains of 5, 4 + 4, 0 and (indirect) 5 + 5 bytes");
    ids[0] = post_one(vq, arena_buf(vq, 5), 5, 0, free_id(vq));
    ids[1] = post_two(vq, arena_buf(vq, 4), 4, 0, arena_buf(vq, 4), 4, 0,
                      free_id(vq));
    ids[2] = post_one(vq, arena_buf(vq, 8), 0, 0, free_id(vq));
    write_table(vq, t, table, 2);
    ids[3] = post_one(vq, t, 32, TFE_DESC_F_INDIRECT, free_id(vq));
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
        uint8_t *p = new_pkt(pk, 100, MAC_UNICAST);

        ids[k++] = tx_post(pk, 0, &h, p, 100, &o);
        free(p);
    }
    return k;
}

static size_t
bad_too_big(struct pk *pk, struct tfe_vq *vq, uint16_t ids[])
{
    uint8_t *p = new_pkt(pk, 80000, MAC_UNICAST);
    struct tfe_buf_opts two = { .n_descs = 2 };

    tu_log("packets of 65536 + 18 and 80000 bytes (the most is 65535 + 18)");
    ids[0] = tx_post(pk, 0, NULL, p, 65536 + 18, NULL);
    ids[1] = tx_post(pk, 0, NULL, p, 80000, &two);
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
    struct pk_cfg cfg = cfg_features(PK_FULL & ~(F(VIRTIO_NET_F_CSUM)
                                                 | F(VIRTIO_NET_F_HOST_TSO4)
                                                 | F(VIRTIO_NET_F_HOST_TSO6)));
    struct tfe_net_hdr h = {
        .flags = TFE_NET_HDR_F_NEEDS_CSUM, .gso_type = 1, .gso_size = 1,
        .hdr_len = 0xffff, .csum_start = 0xfff0, .csum_offset = 0x0e,
    };
    struct vhost_pkt out[8];
    struct pk pk;

    pk_start(&pk, "no-host-ol", &cfg);
    uint8_t *pkt = new_pkt(&pk, 100, MAC_UNICAST);
    tu_log("8 packets whose headers ask for a checksum past the end and "
           "for TSO, with neither negotiated");
    for (int i = 0; i < 8; i++) {
        tx_post(&pk, 0, &h, pkt, 100, NULL);
    }
    TU_CHECK_EQ(dq(&pk, 0, out, 8), 8);
    for (int i = 0; i < 8; i++) {
        check_pkt(&out[i], pkt, 100, "packet with an ignored header");
        check_ol(&out[i].ol, NULL, "packet with an ignored header");
    }
    release_pkts(out, 8);
    {
        struct vhost_queue_stats s = get_stats(&pk, TX(0));
        TU_CHECK_EQ(total_drops(&s), 0);
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
    struct pk_cfg cfg = cfg_features(PK_FULL);
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
        pkts[i] = new_pkt(&pk, sizes[i], MAC_UNICAST);
        ids[i] = tx_post(&pk, 0, NULL, pkts[i], sizes[i], NULL);
    }
    n = dq(&pk, 0, out, 16);
    TU_CHECK_EQ(n, 7);
    for (size_t i = 0, j = 0; i < ARRAY_SIZE(sizes); i++) {
        expect_used(&pk.vq[TX(0)], ids[i], 0);
        if (i != 1) {
            check_pkt(&out[j++], pkts[i], sizes[i], "max_len 1000");
            stats_add(&e, pkts[i], sizes[i]);
        }
    }
    expect_no_used(&pk.vq[TX(0)]);
    release_pkts(out, 16);
    e.drops[VHOST_DROP_TOO_BIG] = 1;
    check_stats(&pk, TX(0), &e);

    tu_log("a batch of four whose last is too long falls back, drops it");
    for (size_t i = 4; i < 8; i++) {
        ids[i] = tx_post(&pk, 0, NULL, pkts[i == 7 ? 1 : i],
                         sizes[i == 7 ? 1 : i], NULL);
    }
    TU_CHECK_EQ(dq(&pk, 0, out, 16), 3);
    for (size_t i = 4; i < 8; i++) {
        expect_used(&pk.vq[TX(0)], ids[i], 0);
        if (i != 7) {
            check_pkt(&out[i - 4], pkts[i], sizes[i], "batch fallback");
            stats_add(&e, pkts[i], sizes[i]);
        }
    }
    release_pkts(out, 16);
    e.drops[VHOST_DROP_TOO_BIG]++;
    check_stats(&pk, TX(0), &e);
    for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
        free(pkts[i]);
    }
    roundtrip(&pk, 0, "the same queue pair");
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
    struct vhost_queue_stats s0 = get_stats(pk, vring), s1;
    struct vhost_pkt out[8];
    uint16_t id = free_id(vq);
    uint8_t *a = new_pkt(pk, 100, MAC_UNICAST);

    tu_log("%s: %u available descriptors with NEXT, then %s (flags %#x)",
           tx ? "transmit" : "receive", n_avail, what, stale_flags);
    tfe_vq_pwrite(vq, n_avail, arena_buf(vq, 100), 100, id,
                  w | stale_flags);
    for (unsigned int i = n_avail; i-- > 0;) {
        tfe_vq_pwrite(vq, i, arena_buf(vq, 100), 100,
                      i + 1 == n_avail ? id : TFE_PACKED_ID_POISON,
                      w | TFE_DESC_F_NEXT | tfe_vq_pavail(vq, i));
    }
    tfe_vq_pclaim(vq, id, n_avail);

    if (tx) {
        TU_CHECK_EQ(dq(pk, 0, out, 8), 0);
        release_pkts(out, 8);
    } else {
        TU_CHECK_EQ(enq1(pk, 0, a, 100, NULL), 0);
    }
    expect_used(vq, id, 0);
    expect_no_used(vq);
    s1 = get_stats(pk, vring);
    TU_CHECK_EQ(s1.drops[VHOST_DROP_LOOP] - s0.drops[VHOST_DROP_LOOP], 1);
    TU_CHECK_EQ(total_drops(&s1) - total_drops(&s0), 1);

    tu_log("  the engine waits at the stale descriptor; the driver then "
           "writes a good chain there");
    if (tx) {
        int ia = tx_post(pk, 0, NULL, a, 100, NULL);

        TU_CHECK_EQ(dq(pk, 0, out, 8), 1);
        check_pkt(&out[0], a, 100, "after a partial chain");
        release_pkts(out, 8);
        expect_used(vq, ia, 0);
    } else {
        rx_post(pk, 0, 2048, NULL);
        TU_CHECK_EQ(enq1(pk, 0, a, 100, NULL), 1);
        rx_expect(pk, 0, a, 100, NULL, 1, "after a partial chain");
    }
    expect_no_used(vq);
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
    struct vhost_queue_stats s0 = get_stats(pk, vring), s1;
    struct vhost_pkt out[8];
    uint16_t id = free_id(vq);
    bool wrap = vq->used_wrap;
    uint8_t *a = new_pkt(pk, 100, MAC_UNICAST);

    tu_log("%s: all %u slots from position %u available with NEXT",
           tx ? "transmit" : "receive", vq->size, vq->next_avail);
    for (unsigned int i = vq->size; i-- > 0;) {
        tfe_vq_pwrite(vq, i, arena_buf(vq, 100), 100, id,
                      w | TFE_DESC_F_NEXT | tfe_vq_pavail(vq, i));
    }
    tfe_vq_pclaim(vq, id, vq->size);
    if (tx) {
        TU_CHECK_EQ(dq(pk, 0, out, 8), 0);
        release_pkts(out, 8);
    } else {
        TU_CHECK_EQ(enq1(pk, 0, a, 100, NULL), 0);
    }
    expect_used(vq, id, 0);
    expect_no_used(vq);
    TU_CHECK_EQ(vq->used_wrap, !wrap);
    s1 = get_stats(pk, vring);
    TU_CHECK_EQ(s1.drops[VHOST_DROP_LOOP] - s0.drops[VHOST_DROP_LOOP], 1);
    TU_CHECK_EQ(total_drops(&s1) - total_drops(&s0), 1);

    tu_log("  a chain of exactly the queue size, the last without NEXT, is "
           "a good one");
    {
        struct tfe_buf_opts o = { .n_descs = vq->size };
        size_t len = vq->size * 20;
        uint8_t *b = new_pkt(pk, len, MAC_UNICAST);

        if (tx) {
            int ib = tx_post(pk, 0, NULL, b, len, &o);

            TU_CHECK_EQ(dq(pk, 0, out, 8), 1);
            check_pkt(&out[0], b, len, "a chain of the queue size");
            release_pkts(out, 8);
            expect_used(vq, ib, 0);
        } else {
            rx_post(pk, 0, pk->hdr_len + len, &o);
            TU_CHECK_EQ(enq1(pk, 0, b, len, NULL), 1);
            rx_expect(pk, 0, b, len, NULL, 1, "a chain of the queue size");
        }
        expect_no_used(vq);
        TU_CHECK_EQ(vq->used_wrap, wrap);
        free(b);
    }
    free(a);
}

static void
run_loop(const char *name, uint64_t features)
{
    struct pk_cfg cfg = cfg_sized(features, 8);
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
    roundtrip(&pk, 1, "the other queue pair");
    roundtrip(&pk, 0, "the same queue pair");
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
    struct pk_cfg cfg = cfg_sized(PK_FULL, 16);
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
                uint8_t *a = new_pkt(&pk, 100, MAC_UNICAST);
                struct vhost_pkt out[4];
                uint16_t id = free_id(vq);

                tu_log("lap %d, %s, position %u (wrap %d): head flags %#x",
                       lap, tx ? "transmit" : "receive", vq->next_avail,
                       vq->avail_wrap, bad[i] | (tx ? 0 : TFE_DESC_F_WRITE));
                uint64_t buf = arena_buf(vq, 2048);
                uint16_t f = bad[i] | (tx ? 0 : TFE_DESC_F_WRITE);
                tfe_vq_pwrite(vq, 0, buf, 2048, id, f);
                if (tx) {
                    TU_CHECK_EQ(dq(&pk, 0, out, 4), 0);
                    release_pkts(out, 4);
                } else {
                    TU_CHECK_EQ(enq1(&pk, 0, a, 100, NULL), 0);
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
                    struct vhost_queue_stats s = get_stats(&pk, vring);
                    TU_CHECK_EQ(total_drops(&s), 0);
                }
                if (tx) {
                    int ia = tx_post(&pk, 0, NULL, a, 100, NULL);
                    TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
                    check_pkt(&out[0], a, 100, "once available");
                    release_pkts(out, 4);
                    expect_used(vq, ia, 0);
                } else {
                    rx_post(&pk, 0, 2048, NULL);
                    TU_CHECK_EQ(enq1(&pk, 0, a, 100, NULL), 1);
                    rx_expect(&pk, 0, a, 100, NULL, 1, "once available");
                }
                free(a);
            }
        }
        /* On to the next lap. */
        for (int tx = 1; tx >= 0; tx--) {
            struct tfe_vq *vq = &pk.vq[tx ? TX(0) : RX(0)];
            bool wrap = vq->avail_wrap;

            while (vq->avail_wrap == wrap) {
                roundtrip(&pk, 0, "moving on");
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
 * disturbed.  An id is in flight from the burst that takes it until that
 * burst writes it back as used, so the next burst may see it again. */

/* Posts on TX(0) a one-descriptor chain with buffer id 'id' holding a
 * zero header and 'len' bytes of 'pkt'. */
static void
tx_post_id(struct pk *pk, const uint8_t *pkt, size_t len, uint16_t id)
{
    struct tfe_vq *vq = &pk->vq[TX(0)];
    uint64_t b = arena_buf(vq, pk->hdr_len + len);

    TU_CHECK(tfe_mem_write(vq->mem, b + pk->hdr_len, pkt, len));
    post_one(vq, b, pk->hdr_len + len, 0, id);
}

static void
check_id_drops(struct pk *pk, unsigned int vring, uint64_t packets,
               uint64_t in_flight)
{
    struct vhost_queue_stats s = get_stats(pk, vring);

    TU_CHECK_EQ(s.packets, packets);
    TU_CHECK_EQ(s.drops[VHOST_DROP_ID_IN_FLIGHT], in_flight);
    TU_CHECK_EQ(total_drops(&s), in_flight);
}

/* Within one burst, both directions: an id made available twice (one
 * descriptor, then a chain of two) before the engine runs. */
static void
test_id_reuse(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 16);
    struct vhost_pkt out[8];
    struct pk pk;

    pk_start(&pk, "id-reuse", &cfg);
    for (int tx = 1; tx >= 0; tx--) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &pk.vq[vring];
        uint16_t w = tx ? 0 : TFE_DESC_F_WRITE;
        uint16_t id = free_id(vq);
        uint64_t b1 = arena_buf(vq, 2048), b2 = arena_buf(vq, 2048);
        uint8_t *a = new_pkt(&pk, 100, MAC_UNICAST);
        struct tfe_used_elem u;

        tu_log("%s: id %u at positions %u (one descriptor) and %u (two)",
               tx ? "transmit" : "receive", id, vq->next_avail,
               vq->next_avail + 1);
        if (tx) {
            TU_CHECK(tfe_mem_write(vq->mem, b1 + 12, a, 100));
            TU_CHECK(tfe_mem_write(vq->mem, b2 + 12, a, 100));
        }
        post_one(vq, b1, tx ? 112 : 2048, w, id);
        post_two(vq, b2, 12, w, b2 + 12, tx ? 100 : 2036, w, id);
        if (tx) {
            TU_CHECK_EQ(dq(&pk, 0, out, 8), 1);
            check_pkt(&out[0], a, 100, "the first of the same id");
            release_pkts(out, 8);
        } else {
            struct vhost_pkt in[2] = {
                { .data = a, .len = 100 }, { .data = a, .len = 100 },
            };
            /* The second packet finds only the dropped chain. */
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 1);
        }
        TU_CHECK_EQ(get_used(vq, &u, "first of the same id"), 0);
        TU_CHECK_EQ(u.id, id);
        TU_CHECK_EQ(u.len, tx ? 0 : 112);
        TU_CHECK_EQ(get_used(vq, &u, "second of the same id"), -EPROTO);
        TU_CHECK_EQ(u.id, id);
        TU_CHECK_EQ(u.len, 0);
        expect_no_used(vq);
        check_id_drops(&pk, vring, 1, 1);
        free(a);
    }
    roundtrip(&pk, 0, "after the reused ids");
    pk_finish(&pk);
}

/* The four-at-a-time dequeue batch: an id twice inside one batch, and an
 * id that an earlier batch of the same burst took.  Neither batch may
 * take them; the single path drops exactly the second use. */
static void
test_id_reuse_batch(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 64);
    struct vhost_pkt out[16];
    uint8_t *p[8];
    struct pk pk;

    pk_start(&pk, "id-reuse-batch", &cfg);
    for (int i = 0; i < 8; i++) {
        p[i] = new_pkt(&pk, 60 + i, MAC_UNICAST);
    }
    tx_advance_to(&pk, 4);

    tu_log("positions 4..7: ids 10 11 10 12 (10 twice in one batch)");
    tx_post_id(&pk, p[0], 60, 10);
    tx_post_id(&pk, p[1], 61, 11);
    tx_post_id(&pk, p[2], 62, 10);
    tx_post_id(&pk, p[3], 63, 12);
    TU_CHECK_EQ(dq(&pk, 0, out, 16), 3);
    check_pkt(&out[0], p[0], 60, "id 10");
    check_pkt(&out[1], p[1], 61, "id 11");
    check_pkt(&out[2], p[3], 63, "id 12");
    release_pkts(out, 16);
    expect_used(&pk.vq[TX(0)], 10, 0);
    expect_used(&pk.vq[TX(0)], 11, 0);
    expect_used(&pk.vq[TX(0)], 10, 0);     /* The kept-aside one. */
    expect_used(&pk.vq[TX(0)], 12, 0);
    expect_no_used(&pk.vq[TX(0)]);
    check_id_drops(&pk, TX(0), 4 + 3, 1);

    tu_log("positions 8..15: ids 20 21 22 23, then 24 21 25 26 (21 again, "
           "in the next batch of the same burst)");
    for (int i = 0; i < 8; i++) {
        static const uint16_t ids[8] = { 20, 21, 22, 23, 24, 21, 25, 26 };
        tx_post_id(&pk, p[i], 60 + i, ids[i]);
    }
    TU_CHECK_EQ(dq(&pk, 0, out, 16), 7);
    for (int i = 0, j = 0; i < 8; i++) {
        if (i != 5) {
            check_pkt(&out[j++], p[i], 60 + i, "second burst");
        }
    }
    release_pkts(out, 16);
    for (int i = 0; i < 8; i++) {
        static const uint16_t ids[8] = { 20, 21, 22, 23, 24, 21, 25, 26 };
        expect_used(&pk.vq[TX(0)], ids[i], 0);
    }
    expect_no_used(&pk.vq[TX(0)]);
    check_id_drops(&pk, TX(0), 4 + 3 + 7, 2);

    for (int i = 0; i < 8; i++) {
        free(p[i]);
    }
    roundtrip(&pk, 0, "after the batches");
    pk_finish(&pk);
}

/* Across bursts.  Every burst writes back what it took before it
 * returns, so an id used in one burst is free again in the next: taking
 * it again is no reuse, in either direction, including a chain that an
 * enqueue met but left available (a packet that did not fit) and meets
 * again, in the next burst or later in the same one. */
static void
test_id_reuse_bursts(void)
{
    struct pk_cfg cfg = cfg_sized(PK_BASE | PK_IND | PK_EVT, 16);
    struct vhost_pkt out[4];
    uint8_t *a, *big;
    struct pk pk;

    pk_start(&pk, "id-reuse-bursts", &cfg);
    a = new_pkt(&pk, 100, MAC_UNICAST);
    big = new_pkt(&pk, 3000, MAC_UNICAST);

    tu_log("transmit: id 9 in three bursts in a row");
    for (int i = 0; i < 3; i++) {
        tx_post_id(&pk, a, 100, 9);
        TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
        check_pkt(&out[0], a, 100, "id 9 again");
        release_pkts(out, 4);
        expect_used(&pk.vq[TX(0)], 9, 0);
    }
    tu_log("transmit: id 9 twice at once, taken one burst at a time: the "
           "first is written back before the second is read");
    tx_post_id(&pk, a, 100, 9);
    tx_post_id(&pk, a, 100, 9);
    TU_CHECK_EQ(dq(&pk, 0, out, 1), 1);
    release_pkts(out, 4);
    TU_CHECK_EQ(dq(&pk, 0, out, 1), 1);
    release_pkts(out, 4);
    expect_used(&pk.vq[TX(0)], 9, 0);
    {
        struct tfe_used_elem u;
        TU_CHECK_EQ(get_used(&pk.vq[TX(0)], &u, "second id 9"), -EPROTO);
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

        post_one(vq, arena_buf(vq, 2048), 2048, TFE_DESC_F_WRITE, 7);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
        expect_no_used(vq);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in + 1, 1), 1);
        expect_used(vq, 7, 112);
        expect_no_used(vq);
    }
    {
        struct vhost_queue_stats st = get_stats(&pk, RX(0));
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
    cfg = cfg_sized(PK_FULL, 16);
    pk_start(&pk, "id-reuse-bursts-mrg", &cfg);
    a = new_pkt(&pk, 3000, MAC_UNICAST);
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];

        post_one(vq, arena_buf(vq, 1024), 1024, TFE_DESC_F_WRITE, 3);
        post_one(vq, arena_buf(vq, 1024), 1024, TFE_DESC_F_WRITE, 4);
        TU_CHECK_EQ(enq1(&pk, 0, a, 3000, NULL), 0);
        TU_CHECK_EQ(enq1(&pk, 0, a, 3000, NULL), 0);
        expect_no_used(vq);
        post_one(vq, arena_buf(vq, 2048), 2048, TFE_DESC_F_WRITE, 5);
        TU_CHECK_EQ(enq1(&pk, 0, a, 3000, NULL), 1);
        expect_used(vq, 3, 1024);
        expect_used(vq, 4, 1024);
        expect_used(vq, 5, 3012 - 2048);
        expect_no_used(vq);
    }
    check_id_drops(&pk, RX(0), 1, 0);
    free(a);
    roundtrip(&pk, 0, "after the waits");
    pk_finish(&pk);
}

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

/* Dequeue writes a burst back as one used element, where the burst's
 * first chain's would go, naming the last chain, with length 0: split,
 * one used ring entry and used->idx moved on by the burst; packed, one
 * used descriptor, the driver's position moving past every chain of the
 * burst.  Nothing else of the ring is written.  Chains of every shape
 * (one descriptor, several, indirect, a dropped one) in bursts of 1 to
 * 8 chains over a ring of 32 that wraps many times.  'without' leaves
 * features out of PK_FULL, for the other specialised copies: EVENT_IDX,
 * or the host offloads, without which the header that asks for a
 * checksum outside the packet is not read, and the chain is not bad. */
static void
run_in_order_dequeue(bool packed, uint64_t without)
{
    struct pk_cfg cfg = cfg_sized(io_features(packed, PK_FULL & ~without),
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
        unsigned int n = 1 + round % 8;     /* Chains this burst. */
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
            pkts[i] = new_pkt(&pk, 60 + 10 * i, MAC_UNICAST);
            ids[i] = tx_post(&pk, 0, i == bad ? &h : NULL, pkts[i],
                             60 + 10 * i, &o);
            if (packed && i == 0) {
                slot_after = vq->next_avail;
            }
        }
        unsigned int good = n - (bad < n);
        TU_CHECK_EQ(dq(&pk, 0, out, 16), good);
        for (unsigned int i = 0, j = 0; i < n; i++) {
            if (i != bad) {
                check_pkt(&out[j++], pkts[i], 60 + 10 * i, "in order");
            }
        }
        release_pkts(out, 16);
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
            expect_used(vq, ids[i], 0);
            TU_CHECK_EQ(vq->last_batch, n);
        }
        expect_no_used(vq);
        TU_CHECK_EQ(vq->n_unordered, 0);
        for (unsigned int i = 0; i < n; i++) {
            free(pkts[i]);
        }
    }
    {
        struct vhost_queue_stats st = get_stats(&pk, TX(0));
        TU_CHECK_EQ(st.packets, n_pkts);
        TU_CHECK_EQ(st.drops[VHOST_DROP_BAD_CSUM], n_bad);
    }
    roundtrip(&pk, 0, "after the in-order bursts");
    roundtrip(&pk, 1, "the other queue pair");
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
    struct pk_cfg cfg = cfg_sized(io_features(packed, PK_FULL), 16);
    struct tfe_vq *vq;
    struct tfe_used_elem u;
    struct pk pk;
    uint8_t *a;
    int g1, g2, bad;

    pk_start(&pk, packed ? "io-enq-packed" : "io-enq-split", &cfg);
    vq = &pk.vq[RX(0)];
    a = new_pkt(&pk, 2000, MAC_UNICAST);

    tu_log("a 1000-byte buffer, a read-only chain, a 2048-byte buffer");
    g1 = rx_post(&pk, 0, 1000, NULL);
    if (packed) {
        bad = post_one(vq, arena_buf(vq, 2048), 2048, 0, free_id(vq));
    } else {
        struct tfe_seg seg = { arena_buf(vq, 2048), 2048 };
        struct tfe_chain_opts copts = { .indirect = false };
        bad = tfe_vq_add_chain(vq, &seg, 1, false, &copts);
        TU_CHECK(bad >= 0);
    }
    g2 = rx_post(&pk, 0, 2048, NULL);
    TU_CHECK_EQ(enq1(&pk, 0, a, 2000, NULL), 1);
    TU_CHECK_OK(get_used(vq, &u, "the buffer before the bad chain"));
    TU_CHECK_EQ(u.id, g1);
    TU_CHECK_EQ(u.len, 0);
    TU_CHECK_EQ(vq->last_batch, 1);
    TU_CHECK_OK(get_used(vq, &u, "the bad chain"));
    TU_CHECK_EQ(u.id, bad);
    TU_CHECK_EQ(u.len, 0);
    TU_CHECK_EQ(vq->last_batch, 1);
    TU_CHECK_OK(tfe_vq_peek_used(vq, &u));
    TU_CHECK_EQ(u.id, g2);
    rx_expect(&pk, 0, a, 2000, NULL, 1, "after the bad chain");
    TU_CHECK_EQ(vq->last_batch, 1);
    expect_no_used(vq);
    TU_CHECK_EQ(get_stats(&pk, RX(0)).drops[VHOST_DROP_BAD_DIRECTION], 1);

    tu_log("packets over several buffers, several per burst");
    for (int round = 0; round < 20; round++) {
        struct vhost_pkt in[3];
        uint8_t *p[3];

        for (int i = 0; i < 3; i++) {
            size_t len = 500 + 700 * ((round + i) % 4);
            p[i] = new_pkt(&pk, len, MAC_UNICAST);
            in[i] = (struct vhost_pkt) { .data = p[i], .len = len };
        }
        for (int i = 0; i < 12; i++) {
            rx_post(&pk, 0, 512 + 256 * (i % 3), NULL);
        }
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 3), 3);
        for (int i = 0; i < 3; i++) {
            rx_expect(&pk, 0, p[i], in[i].len, NULL, 0, "mergeable");
            TU_CHECK_EQ(vq->last_batch, 1);
            free(p[i]);
        }
        /* Give back what the packets did not use. */
        while (tfe_vq_n_used(vq) || vq->order_n) {
            if (!tfe_vq_n_used(vq)) {
                uint8_t *f = new_pkt(&pk, 60, MAC_UNICAST);
                TU_CHECK_EQ(enq1(&pk, 0, f, 60, NULL), 1);
                rx_expect(&pk, 0, f, 60, NULL, 1, "filler");
                free(f);
            } else {
                TU_CHECK_OK(get_used(vq, &u, "leftover"));
            }
        }
    }
    TU_CHECK_EQ(vq->n_unordered, 0);
    free(a);
    roundtrip(&pk, 0, "after the in-order enqueues");
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
    run_wrap("io-wrap-7", 7, PK_FULL | PK_INO, 100);
}

static void
test_in_order_wrap_33_nomrg(void)
{
    run_wrap("io-wrap-33-nomrg", 33, PK_BASE | PK_IND | PK_INO, 30);
}

/* Notifications and event suppression (§2.8.10). */

/* Checks that the last burst on 'vring' did ('notified') or did not
 * signal the guest, and the counters so far. */
static void
check_notify(struct pk *pk, unsigned int vring, bool notified,
             uint64_t n_notified, uint64_t n_suppressed, const char *what)
{
    struct vhost_queue_stats s = get_stats(pk, vring);
    uint64_t calls = tfe_vq_calls(&pk->vq[vring]);

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

/* Moves 'n' packets, each in a chain of 'descs' descriptors, through
 * queue pair 0 in direction 'tx' (dequeue) or not (enqueue), and checks
 * them.  Returns the ring slots used. */
static unsigned int
burst(struct pk *pk, bool tx, unsigned int n, unsigned int descs)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[VHOST_MAX_BURST];
    struct tfe_buf_opts o = { .n_descs = descs };
    unsigned int slots = 0;

    TU_CHECK(n <= VHOST_MAX_BURST);
    memset(out, 0, sizeof out);
    for (unsigned int i = 0; i < n; i++) {
        pkts[i] = new_pkt(pk, 64 + i, MAC_UNICAST);
        if (tx) {
            tx_post(pk, 0, NULL, pkts[i], 64 + i, &o);
        } else {
            rx_post(pk, 0, 2048, &o);
        }
        slots += descs;
    }
    if (tx) {
        TU_CHECK_EQ(dq(pk, 0, out, VHOST_MAX_BURST), n);
        for (unsigned int i = 0; i < n; i++) {
            struct tfe_used_elem u;
            check_pkt(&out[i], pkts[i], 64 + i, "dequeue");
            TU_CHECK_OK(get_used(&pk->vq[TX(0)], &u, "dequeue"));
        }
        release_pkts(out, VHOST_MAX_BURST);
    } else {
        for (unsigned int i = 0; i < n; i++) {
            out[i] = (struct vhost_pkt) { .data = pkts[i], .len = 64 + i };
        }
        TU_CHECK_EQ(vhost_enqueue_burst(pk->port, 0, out, n), n);
        for (unsigned int i = 0; i < n; i++) {
            rx_expect(pk, 0, pkts[i], 64 + i, NULL, 1, "enqueue");
        }
    }
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i]);
    }
    return slots;
}

static void
test_notify_flags(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL & ~PK_EVT, 16);
    struct pk pk;

    pk_start(&pk, "notify", &cfg);
    for (int tx = 0; tx < 2; tx++) {
        unsigned int vring = tx ? TX(0) : RX(0);
        struct tfe_vq *vq = &pk.vq[vring];

        tu_log("%s: an empty first burst signals nothing but writes "
               "DISABLE into the device event suppression flags",
               tx ? "dequeue" : "enqueue");
        burst(&pk, tx, 0, 1);
        check_notify(&pk, vring, false, 0, 0, "empty first burst");
        check_no_kicks(vq);

        tu_log("  a burst signals the guest (flags ENABLE)");
        burst(&pk, tx, 1, 1);
        check_notify(&pk, vring, true, 1, 0, "first burst");

        tu_log("  flags DISABLE suppress it");
        tfe_vq_pset_event(vq, TFE_PEVENT_DISABLE, 0);
        burst(&pk, tx, 3, 2);
        check_notify(&pk, vring, false, 1, 1, "DISABLE");

        tu_log("  an empty burst does neither");
        burst(&pk, tx, 0, 1);
        check_notify(&pk, vring, false, 1, 1, "empty burst");

        tu_log("  ENABLE brings signals back, across the end of the ring");
        tfe_vq_pset_event(vq, TFE_PEVENT_ENABLE, 0);
        for (int i = 0; i < 6; i++) {
            burst(&pk, tx, 3, 1 + i % 3);
            check_notify(&pk, vring, true, 2 + i, 1, "ENABLE");
        }
        tu_log("  DESC without EVENT_IDX negotiated is not DISABLE: the "
               "engine signals");
        tfe_vq_pset_event(vq, TFE_PEVENT_DESC,
                          (vq->next_used + 8) % vq->size);
        burst(&pk, tx, 1, 1);
        check_notify(&pk, vring, true, 8, 1, "DESC without EVENT_IDX");
        check_no_kicks(vq);
    }
    pk_finish(&pk);
}

/* Random bursts on ring 'tx' of queue pair 0 with random driver event
 * suppression, checked against a model that knows nothing of wrap
 * counters: positions are absolute (laps * size + position), the event
 * is a position near the burst, and with DESC the guest is signalled iff
 * the burst used the slot at the event (old <= event < new, §2.8.10). */
static void
run_notify_desc(struct pk *pk, bool tx, unsigned int steps, uint64_t seed)
{
    unsigned int vring = tx ? TX(0) : RX(0);
    struct tfe_vq *vq = &pk->vq[vring];
    unsigned int size = vq->size;
    struct vhost_queue_stats s0 = get_stats(pk, vring);
    uint64_t n_notified = s0.guest_notifications;
    uint64_t n_suppressed = s0.notifications_suppressed;
    struct rng rng = { seed };
    /* Absolute coordinates: R = lap * size + position, with the lap's
     * parity tied to the wrap counter (R / size even <=> wrap 1). */
    uint64_t r = (vq->used_wrap ? 0 : size) + vq->next_used + 2 * size;
    unsigned int laps = 0;

    for (unsigned int i = 0; i < steps; i++) {
        unsigned int descs = rng_range(&rng, 1, MIN(3, size / 4 + 1));
        unsigned int n = rng_range(&rng, 0, MIN(VHOST_MAX_BURST,
                                                (size - 1) / descs));
        unsigned int slots = n * descs;
        uint64_t old = r, new = r + slots;
        uint64_t lap = new / size * size;
        int64_t cand[8] = {
            -2, -1, 0, 1, (int64_t) slots - 1, slots, slots + 1,
            -(int64_t) size + 1,
        };
        int64_t d;
        uint64_t e;
        uint16_t off_wrap, flags = TFE_PEVENT_DESC;
        bool notify;
        char what[128];

        /* An event the ring can name from where it will be: within a lap
         * either side of the lap 'new' is in. */
        do {
            d = cand[rng_range(&rng, 0, 7)];
            e = old + d;
        } while (e + size < lap || e >= lap + size);
        off_wrap = (e % size) | (((e / size) % 2 == 0) << 15);
        notify = slots && e >= old && e < new;
        switch (rng_range(&rng, 0, 9)) {
        case 0:
            flags = TFE_PEVENT_ENABLE;
            notify = slots > 0;
            break;
        case 1:
            flags = TFE_PEVENT_DISABLE;
            notify = false;
            break;
        }
        snprintf(what, sizeof what, "step %u: flags %u, event at %u wrap %u "
                 "(used %"PRIu64"+%u), %u chains of %u", i, flags,
                 off_wrap & 0x7fff, off_wrap >> 15, old % size, slots, n,
                 descs);
        tfe_vq_pset_event(vq, flags, off_wrap);
        TU_CHECK_EQ(burst(pk, tx, n, descs), slots);
        n_notified += notify;
        n_suppressed += !notify && slots;
        check_notify(pk, vring, notify, n_notified, n_suppressed, what);
        TU_CHECK_EQ(vq->next_used, new % size);
        TU_CHECK_EQ(vq->used_wrap, (new / size) % 2 == 0);
        laps += new / size != old / size;
        r = new;
    }
    tu_log("  %u steps over %u laps", steps, laps);
    tfe_vq_pset_event(vq, TFE_PEVENT_ENABLE, 0);
}

static void
run_notify_event_idx(const char *name, unsigned int size, bool has_base,
                     uint32_t base)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, size);
    struct pk pk;

    cfg.has_base = has_base;
    cfg.base = base;
    pk_start(&pk, name, &cfg);
    for (int tx = 0; tx < 2; tx++) {
        tu_log("%s, queue size %u, from position %u wrap %d",
               tx ? "dequeue" : "enqueue", size,
               pk.vq[tx ? TX(0) : RX(0)].next_used,
               pk.vq[tx ? TX(0) : RX(0)].used_wrap);
        run_notify_desc(&pk, tx, 300, size * 7919 + tx);
        check_no_kicks(&pk.vq[tx ? TX(0) : RX(0)]);
    }
    pk_finish(&pk);
}

static void
test_notify_event_idx_7(void)
{
    run_notify_event_idx("notify-evt-7", 7, false, 0);
}

static void
test_notify_event_idx_33(void)
{
    run_notify_event_idx("notify-evt-33", 33, true, 20);
}

static void
test_notify_event_idx_256(void)
{
    run_notify_event_idx("notify-evt-256", 256, true, 0x8000 | 250);
}
/* SET_VRING_BASE / GET_VRING_BASE and reconnection. */

/* Traffic for the reconnect test: packets posted on the guest's TX ring
 * and buffers on its RX ring, some consumed, some left pending. */
struct flow {
    struct pending tx[64];      /* Posted, not yet dequeued. */
    unsigned int n_tx;
    uint32_t rx[64];            /* Buffers posted, not yet used. */
    unsigned int n_rx;
    uint32_t next_rx_seq;       /* Next enqueued packet to expect. */
    struct rng rng;
    uint64_t tx_done, rx_done;
};

/* Posts up to 'k' packets and 'k' receive buffers on queue pair 0. */
static void
flow_post(struct pk *pk, struct flow *f, unsigned int k)
{
    struct tfe_vq *tx = &pk->vq[TX(0)], *rx = &pk->vq[RX(0)];

    for (unsigned int i = 0; i < k && f->n_tx < ARRAY_SIZE(f->tx); i++) {
        struct tfe_buf_opts o = {
            .n_descs = rng_range(&f->rng, 1, 3),
            .indirect = !rng_range(&f->rng, 0, 4),
        };
        size_t len = rng_range(&f->rng, 60, 1500);

        if (tx->n_free < (o.indirect ? 1 : o.n_descs)) {
            break;
        }
        f->tx[f->n_tx].pkt = new_pkt(pk, len, MAC_UNICAST);
        f->tx[f->n_tx].len = len;
        f->tx[f->n_tx].id = tx_post(pk, 0, NULL, f->tx[f->n_tx].pkt, len,
                                    &o);
        f->n_tx++;
    }
    for (unsigned int i = 0; i < k && f->n_rx < ARRAY_SIZE(f->rx); i++) {
        struct tfe_buf_opts o = { .n_descs = rng_range(&f->rng, 1, 2) };

        if (rx->n_free < o.n_descs) {
            break;
        }
        rx_post(pk, 0, 2048, &o);
        f->rx[f->n_rx++] = 2048;
    }
}

/* Dequeues up to 'n' and enqueues up to 'n' packets on queue pair 0,
 * checking that every pending packet comes out once, in order. */
static void
flow_move(struct pk *pk, struct flow *f, unsigned int n)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    unsigned int got = dq(pk, 0, out, n);

    TU_CHECK_EQ(got, MIN(n, f->n_tx));
    for (unsigned int i = 0; i < got; i++) {
        check_pkt(&out[i], f->tx[i].pkt, f->tx[i].len, "flow dequeue");
        expect_used(&pk->vq[TX(0)], f->tx[i].id, 0);
    }
    expect_no_used(&pk->vq[TX(0)]);
    release_pkts(out, n);

    /* The dequeued packets go straight back to the guest. */
    {
        struct vhost_pkt in[VHOST_MAX_BURST];
        unsigned int m = MIN(got, f->n_rx), done;

        for (unsigned int i = 0; i < got; i++) {
            in[i] = (struct vhost_pkt) { .data = f->tx[i].pkt,
                                         .len = f->tx[i].len };
        }
        done = vhost_enqueue_burst(pk->port, 0, in, got);
        TU_CHECK_EQ(done, m);
        for (unsigned int i = 0; i < done; i++) {
            rx_expect(pk, 0, f->tx[i].pkt, f->tx[i].len, NULL, 1,
                      "flow enqueue");
        }
        expect_no_used(&pk->vq[RX(0)]);
        memmove(f->rx, f->rx + done, (f->n_rx - done) * sizeof *f->rx);
        f->n_rx -= done;
        f->rx_done += done;
    }
    for (unsigned int i = 0; i < got; i++) {
        free(f->tx[i].pkt);
    }
    memmove(f->tx, f->tx + got, (f->n_tx - got) * sizeof *f->tx);
    f->n_tx -= got;
    f->tx_done += got;
}

static void
flow_free(struct flow *f)
{
    for (unsigned int i = 0; i < f->n_tx; i++) {
        free(f->tx[i].pkt);
    }
    f->n_tx = 0;
}

/* Stops every vring with GET_VRING_BASE, checks the bases against the
 * driver's used positions, disconnects, reconnects and sets the device up
 * again from those bases. */
static void
reconnect(struct pk *pk, const struct pk_cfg *cfg)
{
    struct tfe_setup setup;
    uint32_t base[4];

    for (unsigned int q = 0; q < 4; q++) {
        const struct tfe_vq *vq = &pk->vq[q];

        TU_CHECK_OK(tfe_get_vring_base(pk->fe, q, &base[q]));
        tu_log("  vring %u: GET_VRING_BASE %#"PRIx32" (driver: avail %u "
               "wrap %d, used %u wrap %d)", q, base[q], vq->next_avail,
               vq->avail_wrap, vq->next_used, vq->used_wrap);
        TU_CHECK_EQ(base[q], stopped_base(vq));
    }
    tfe_disconnect(pk->fe);
    TU_CHECK(tu_wait_port(pk->port, tu_port_disconnected, NULL,
                          TU_TIMEOUT_MS));
    TU_CHECK_OK(tfe_connect(pk->fe, pk->path));
    TU_CHECK(tu_wait_port(pk->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        pk->fe->vrings[q].has_base = true;
        pk->fe->vrings[q].base = base[q];
    }
    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features & ~F(VIRTIO_F_RING_PACKED);
    setup.packed = true;
    setup.queue_size = cfg->queue_size;
    TU_CHECK_OK(tfe_setup_device(pk->fe, 2, &setup));
    TU_CHECK(tu_port_info(pk->port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(pk->port, q).ready);
    }
}

static void
test_reconnect(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    struct flow f;
    struct pk pk;

    pk_start(&pk, "reconnect", &cfg);
    memset(&f, 0, sizeof f);
    f.rng.s = 0x1234567;
    for (int round = 0; round < 4; round++) {
        struct tfe_vq *tx = &pk.vq[TX(0)];
        bool want_wrap = round % 2;

        tu_log("round %d: traffic until the transmit wrap counter is %d, "
               "with packets and buffers left pending", round, want_wrap);
        do {
            flow_post(&pk, &f, rng_range(&f.rng, 1, 12));
            flow_move(&pk, &f, rng_range(&f.rng, 1, 8));
        } while (tx->used_wrap != want_wrap || tx->next_used < 10);
        flow_post(&pk, &f, 10);
        TU_CHECK(f.n_tx > 0);
        tu_log("  %u packets and %u buffers pending; reconnect", f.n_tx,
               f.n_rx);
        reconnect(&pk, &cfg);
        tu_log("  traffic resumes: every pending packet once, in order");
        while (f.n_tx) {
            flow_move(&pk, &f, rng_range(&f.rng, 1, 8));
        }
        roundtrip(&pk, 1, "after the reconnect");
    }
    tu_log("%"PRIu64" packets out and %"PRIu64" back in", f.tx_done,
           f.rx_done);
    {
        struct vhost_queue_stats s0 = get_stats(&pk, TX(0));
        struct vhost_queue_stats s1 = get_stats(&pk, RX(0));
        TU_CHECK_EQ(s0.packets, f.tx_done);
        TU_CHECK_EQ(s1.packets, f.rx_done);
        TU_CHECK_EQ(total_drops(&s0) + total_drops(&s1), 0);
    }
    flow_free(&f);
    pk_finish(&pk);
}

/* Backend restarts: the ring position log (lib/virtq-poslog.h). */

/* The backend dies and a new one takes its place, as a killed
 * ovs-vswitchd's successor does: the port and engine go without a
 * GET_VRING_BASE, a new engine and port open the same socket and position
 * log, and the frontend, which keeps its rings and guest memory, sets the
 * device up again from the stale bases QEMU sends a packed ring's new
 * backend (the initial ones), or from 'base' if 'known'.  Returns how
 * many rings the new port recovered from the log. */
static uint64_t
backend_restart(struct pk *pk, const char *name, const struct pk_cfg *cfg,
                const uint32_t known[4])
{
    struct vhost_port_options opts;
    struct tfe_setup setup;

    vhost_port_destroy(pk->port);
    vhost_engine_destroy(pk->engine);
    TU_CHECK(tfe_wait_closed(pk->fe, TU_TIMEOUT_MS));
    tfe_disconnect(pk->fe);

    vhost_port_options_init(&opts);
    opts.name = name;
    opts.path = pk->path;
    opts.mode = VHOST_PORT_SERVER;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk->ev;
    opts.state_path = cfg->state_path;
    TU_CHECK_OK(vhost_engine_create(&pk->engine));
    TU_CHECK_OK(vhost_engine_start(pk->engine));
    TU_CHECK_OK(vhost_port_create(pk->engine, &opts, &pk->port));
    TU_CHECK_OK(tfe_connect(pk->fe, pk->path));
    TU_CHECK(tu_wait_port(pk->port, tu_port_connected, NULL,
                          TU_TIMEOUT_MS));
    for (unsigned int q = 0; q < 4; q++) {
        pk->fe->vrings[q].has_base = known != NULL;
        pk->fe->vrings[q].base = known ? known[q] : 0;
    }
    memset(&setup, 0, sizeof setup);
    setup.features_mask = cfg->features & ~F(VIRTIO_F_RING_PACKED);
    setup.packed = true;
    setup.queue_size = cfg->queue_size;
    TU_CHECK_OK(tfe_setup_device(pk->fe, 2, &setup));
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK(tu_queue_info(pk->port, q).ready);
    }
    return tu_port_info(pk->port).counters.rings_recovered;
}

/* Traffic, with packets and buffers pending and every chain length,
 * direct and indirect; then the backend dies and its successor is handed
 * the stale bases.  It resumes every ring where it stood: every pending
 * packet comes out once, in order, over laps with both wrap counters. */
static void
run_restart(const char *name, uint64_t features)
{
    struct pk_cfg cfg = cfg_sized(features, 33);
    char *state = tu_path("restart.rings");
    struct flow f;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, name, &cfg);
    memset(&f, 0, sizeof f);
    f.rng.s = 0x7654321;
    for (int round = 0; round < 4; round++) {
        struct tfe_vq *tx = &pk.vq[TX(0)];
        bool want_wrap = round % 2;

        tu_log("round %d: traffic until the transmit wrap counter is %d",
               round, want_wrap);
        do {
            flow_post(&pk, &f, rng_range(&f.rng, 1, 12));
            flow_move(&pk, &f, rng_range(&f.rng, 1, 8));
        } while (tx->used_wrap != want_wrap || tx->next_used < 10);
        roundtrip(&pk, 1, "before the restart");
        flow_post(&pk, &f, 10);
        TU_CHECK(f.n_tx > 0);
        tu_log("  %u packets and %u buffers pending; the backend dies",
               f.n_tx, f.n_rx);
        /* Every ring not back at its very first position (all have
         * moved, by the traffic or the round trips) is recovered. */
        unsigned int moved = 0;
        for (unsigned int q = 0; q < 4; q++) {
            moved += stopped_base(&pk.vq[q]) != TFE_PACKED_BASE_INIT2;
        }
        TU_CHECK(moved >= 3);
        uint64_t n = backend_restart(&pk, name, &cfg, NULL);
        tu_log("  its successor recovered %"PRIu64" rings of %u", n, moved);
        TU_CHECK_EQ(n, moved);
        while (f.n_tx) {
            flow_move(&pk, &f, rng_range(&f.rng, 1, 8));
        }
        roundtrip(&pk, 1, "after the restart");
    }
    {
        struct vhost_queue_stats s0 = get_stats(&pk, TX(0));
        TU_CHECK_EQ(total_drops(&s0), 0);
    }
    flow_free(&f);
    pk_finish(&pk);
    tu_log("the frontend went without stopping its rings: the log stays");
    TU_CHECK_OK(access(state, F_OK));
    unlink(state);
    free(state);
}

static void
test_restart(void)
{
    run_restart("restart", PK_FULL);
}

static void
test_restart_in_order(void)
{
    run_restart("restart-ino", PK_FULL | PK_INO);
}

/* The backend dies after a burst logged its positions but before the
 * store that hands its used descriptors to the driver (the head's flags,
 * put back here as the driver left them), for chains of three
 * descriptors.  Its successor makes that store and resumes at the burst's
 * end: the driver gets every chain back once, and nothing comes out
 * twice. */
static void
test_restart_unseen(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    char *state = tu_path("unseen.rings");
    struct tfe_vq *tx;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-unseen", &cfg);
    tx = &pk.vq[TX(0)];
    for (int round = 0; round < 12; round++) {
        struct tfe_buf_opts o = { .n_descs = 3 };
        struct vhost_pkt out[8];
        uint8_t *pkts[3];
        int ids[3];

        for (int i = 0; i < 3; i++) {
            pkts[i] = new_pkt(&pk, 200 + i, MAC_UNICAST);
            ids[i] = tx_post(&pk, 0, NULL, pkts[i], 200 + i, &o);
        }
        unsigned int head = tx->next_used;
        uint16_t flags = tx->pdesc[head].flags;
        TU_CHECK_EQ(dq(&pk, 0, out, 8), 3);
        release_pkts(out, 8);
        if (round % 3 == 2) {
            tu_log("round %d: the burst's head flags at %u put back: the "
                   "driver saw nothing", round, head);
            tx->pdesc[head].flags = flags;
            expect_no_used(tx);
            TU_CHECK_EQ(backend_restart(&pk, "restart-unseen", &cfg, NULL),
                        1);
            TU_CHECK_EQ(dq(&pk, 0, out, 8), 0);
            TU_CHECK_EQ(tu_port_info(pk.port)
                        .counters.rings_recovered_inexact, 0);
        }
        for (int i = 0; i < 3; i++) {
            expect_used(tx, ids[i], 0);
            free(pkts[i]);
        }
        expect_no_used(tx);
    }
    roundtrip(&pk, 0, "after the restarts");
    pk_finish(&pk);
    unlink(state);
    free(state);
}

/* A backend killed after a burst wrote some used descriptors back and
 * before it logged (here: one written by hand, ahead of the logged
 * position, as such a burst leaves it) cannot be resumed exactly: its
 * successor says so and counts it. */
static void
test_restart_stray(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    char *state = tu_path("stray.rings");
    struct tfe_vq *tx;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-stray", &cfg);
    tx = &pk.vq[TX(0)];
    for (int i = 0; i < 5; i++) {
        roundtrip(&pk, 0, "traffic");
    }
    unsigned int ahead = (tx->next_used + 4) % tx->size;
    bool wrap = tx->used_wrap ^ (ahead < tx->next_used);
    tx->pdesc[ahead].flags = wrap ? TFE_PDESC_F_AVAIL | TFE_PDESC_F_USED : 0;
    TU_CHECK_EQ(backend_restart(&pk, "restart-stray", &cfg, NULL), 2);
    TU_CHECK_EQ(tu_port_info(pk.port).counters.rings_recovered_inexact, 1);
    pk_finish(&pk);
    unlink(state);
    free(state);
}

/* A frontend that stopped its rings with GET_VRING_BASE knows where they
 * stand: its next backend takes the bases it sends, recovers nothing, and
 * once no ring is started the port's log is removed. */
static void
test_restart_clean(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    char *state = tu_path("clean.rings");
    uint32_t base[4];
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-clean", &cfg);
    for (int i = 0; i < 40; i++) {
        roundtrip(&pk, i % 2, "traffic");
    }
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, q, &base[q]));
        TU_CHECK_EQ(base[q], stopped_base(&pk.vq[q]));
    }
    TU_CHECK_EQ(backend_restart(&pk, "restart-clean", &cfg, base), 0);
    roundtrip(&pk, 0, "after the restart");
    roundtrip(&pk, 1, "after the restart");
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, q, &base[q]));
    }
    vhost_port_destroy(pk.port);
    pk.port = NULL;
    tu_log("every ring stopped: the port's log went with it");
    TU_CHECK(access(state, F_OK) && errno == ENOENT);
    pk_finish(&pk);
    free(state);
}

/* The backend dies and, while it is down, the guest resets the device
 * (a reboot, a driver reload): QEMU keeps the same memory file and the
 * driver allocates its rings at the same addresses, so the log's identity
 * still matches, but the rings are fresh (zeroed, QEMU's base the initial
 * one).  The successor must not move them to the old rings' positions:
 * the device would wait at a slot the new driver has not reached and the
 * queue would stall. */
static void
test_restart_guest_reset(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    char *state = tu_path("greset.rings");
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-greset", &cfg);
    for (int i = 0; i < 40; i++) {
        roundtrip(&pk, i % 2, "traffic");
    }
    tu_log("the backend dies; the guest resets its rings meanwhile");
    for (unsigned int q = 0; q < 4; q++) {
        tfe_vq_reset(&pk.vq[q]);
    }
    TU_CHECK_EQ(backend_restart(&pk, "restart-greset", &cfg, NULL), 0);
    roundtrip(&pk, 0, "after the restart");
    roundtrip(&pk, 1, "after the restart");
    pk_finish(&pk);
    unlink(state);
    free(state);
}

/* The backend dies in a one-chain burst after logging it and before
 * writing anything of its used descriptor into the head slot, which then
 * reads as the driver made it available: buffer length and all.  Its
 * successor hands it over as the dead burst would have, with the logged
 * id and length (0: a transmit chain), and the packet does not come out
 * twice.  (Before the head's id and length went after the log, a kill
 * between them and the log left a head slot the successor walked again
 * with the used length, 0, as its buffer length: the packet was lost and
 * the guest blamed, "chain shorter than the header".) */
static void
test_restart_head_unwritten(void)
{
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    char *state = tu_path("unwritten.rings");
    struct tfe_buf_opts o = { .n_descs = 1 };
    struct vhost_pkt out[8];
    struct tfe_vq *tx;
    struct pk pk;

    cfg.state_path = state;
    pk_start(&pk, "restart-unwritten", &cfg);
    tx = &pk.vq[TX(0)];
    for (int i = 0; i < 5; i++) {
        roundtrip(&pk, 0, "traffic");
    }
    uint8_t *pkt = new_pkt(&pk, 300, MAC_UNICAST);
    int id = tx_post(&pk, 0, NULL, pkt, 300, &o);
    unsigned int head = tx->next_used;
    struct tfe_pdesc avail = tx->pdesc[head];
    TU_CHECK_EQ(dq(&pk, 0, out, 8), 1);
    release_pkts(out, 8);
    tu_log("the head slot %u put back as the driver made it available "
           "(length %u)", head, avail.len);
    tx->pdesc[head] = avail;
    expect_no_used(tx);
    TU_CHECK(backend_restart(&pk, "restart-unwritten", &cfg, NULL) >= 1);
    TU_CHECK_EQ(dq(&pk, 0, out, 8), 0);
    expect_used(tx, id, 0);
    expect_no_used(tx);
    roundtrip(&pk, 0, "after the restart");
    free(pkt);
    pk_finish(&pk);
    unlink(state);
    free(state);
}

#define CHECK_ACK(EXPR) TU_CHECK_EQ((EXPR), 0)
#define CHECK_NACK(EXPR) TU_CHECK_EQ((EXPR), TFE_NACK)

/* Sets vring 'q' up again from SET_VRING_BASE 'base' on a zeroed ring. */
static void
resetup_vring(struct pk *pk, unsigned int q, uint32_t base)
{
    uint32_t old;

    TU_CHECK_OK(tfe_get_vring_base(pk->fe, q, &old));
    tfe_vq_reset(&pk->vq[q]);
    pk->fe->vrings[q].has_base = true;
    pk->fe->vrings[q].base = base;
    TU_CHECK_OK(tfe_vring_setup(pk->fe, q, pk->vq[q].size));
    tfe_vq_pset_position(&pk->vq[q], base);
    TU_CHECK(tu_queue_info(pk->port, q).ready);
}

static void
test_vring_base(void)
{
    /* Positions past the ring (in either half), and a used position
     * ahead of the avail one: 0x10000 is avail 0 in the second lap with
     * used 1 in the same lap, 0x80058000 avail 0 and used 5 both in the
     * first lap. */
    static const uint32_t bad[] = {
        0x10000, UINT32_MAX, 33, 0x8021, 0x7fff, 0xffff, 0x8000 | 40,
        0x80058000, 0x00218000, 0x80218000, 0x80008021, 0x80010000 | 0x1f,
    };
    /* The avail half alone (DPDK's virtio-user), both halves equal
     * (QEMU on a stopped ring), and used behind avail: 0x18000 is avail
     * 0 in the third lap, used 1 in the second (32 descriptors in
     * flight); 0x1001f avail 31 and used 1 in the second lap; 0x208005
     * avail 5 in the third lap, used 32 in the second. */
    static const uint32_t good[] = {
        0, 32, 0x8000, 0x8020, 17, 0x8011, 0x80008000, 0x80118011,
        0x00200020, 0x18000, 0x1001f, 0x208005,
    };
    struct pk_cfg cfg = cfg_sized(PK_FULL, 33);
    struct pk pk;
    uint32_t base;

    pk_start(&pk, "vring-base", &cfg);
    TU_CHECK(pk.fe->reply_ack);
    tu_log("a fresh ring: GET_VRING_BASE gives position 0, wrap counter 1");
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(1), &base));
    TU_CHECK_EQ(base, TFE_PACKED_BASE_INIT2);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("SET_VRING_BASE %#"PRIx32" on a ring of 33 is rejected",
               bad[i]);
        CHECK_NACK(tfe_set_vring_base(pk.fe, TX(1), bad[i]));
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(1), &base));
        TU_CHECK_EQ(base, TFE_PACKED_BASE_INIT2);
    }
    for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
        tu_log("SET_VRING_BASE %#"PRIx32" is taken and given back",
               good[i]);
        CHECK_ACK(tfe_set_vring_base(pk.fe, TX(1), good[i]));
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(1), &base));
        TU_CHECK_EQ(base, good[i] >> 16 ? good[i] : good[i] | good[i] << 16);
    }
    CHECK_ACK(tfe_set_vring_base(pk.fe, TX(1), TFE_PACKED_BASE_INIT));
    TU_CHECK_OK(tfe_vring_setup(pk.fe, TX(1), 33));

    tu_log("traffic from position 31 wrap 1, 5 wrap 0 and 32 wrap 0 on "
           "every vring");
    {
        static const uint32_t starts[] = { 0x8000 | 31, 5, 32 };

        for (size_t i = 0; i < ARRAY_SIZE(starts); i++) {
            for (unsigned int q = 0; q < 4; q++) {
                resetup_vring(&pk, q, starts[i]);
            }
            TU_CHECK(tu_port_info(pk.port).ready);
            for (int k = 0; k < 20; k++) {
                roundtrip(&pk, k % 2, "from a SET_VRING_BASE position");
            }
            for (unsigned int q = 0; q < 4; q++) {
                TU_CHECK_OK(tfe_get_vring_base(pk.fe, q, &base));
                TU_CHECK_EQ(base, tfe_vq_pbase(&pk.vq[q]));
                /* 10 round trips of 2 packets on each vring. */
                uint32_t pos = (((starts[i] & 0x7fff) + 20) % 33)
                               | ((uint32_t) (!!(starts[i] & 0x8000)
                                              ^ (((starts[i] & 0x7fff) + 20)
                                                 / 33 % 2)) << 15);
                TU_CHECK_EQ(base, pos | pos << 16);
            }
            for (unsigned int q = 0; q < 4; q++) {
                TU_CHECK_OK(tfe_vring_setup(pk.fe, q, 33));
            }
        }
    }
    pk_finish(&pk);
}

/* Without SET_VRING_BASE, both wrap counters start at 1 (§2.8.1). */
static void
test_no_vring_base(void)
{
    struct vhost_port_options opts;
    struct tfe_setup setup = {
        .features_mask = PK_FULL & ~F(VIRTIO_F_RING_PACKED), .packed = true,
    };
    struct pk pk;
    uint32_t base;

    memset(&pk, 0, sizeof pk);
    pk.fds0 = tu_count_fds();
    pk.threads0 = tu_count_threads();
    tu_events_init(&pk.ev);
    pk.path = tu_path("no-base");
    vhost_port_options_init(&opts);
    opts.name = "no-base";
    opts.path = pk.path;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk.ev;
    TU_CHECK_OK(vhost_engine_create(&pk.engine));
    TU_CHECK_OK(vhost_engine_start(pk.engine));
    TU_CHECK_OK(vhost_port_create(pk.engine, &opts, &pk.port));
    pk.fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk.fe, pk.path));

    tu_log("bring-up with SET_VRING_NUM, ADDR, KICK, CALL and ENABLE but no "
           "SET_VRING_BASE");
    TU_CHECK_OK(tfe_negotiate(pk.fe, &setup));
    TU_CHECK(pk.fe->features & F(VIRTIO_F_RING_PACKED));
    TU_CHECK_OK(tfe_set_mem_table(pk.fe));
    for (unsigned int q = 0; q < 4; q++) {
        struct tfe_vring *vr = &pk.fe->vrings[q];

        TU_CHECK_OK(tfe_vring_alloc(pk.fe, q, 7));
        vr->kick_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        vr->call_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        TU_CHECK_OK(tfe_set_vring_num(pk.fe, q, 7));
        TU_CHECK_OK(tfe_set_vring_addr(pk.fe, q));
        TU_CHECK_OK(tfe_set_vring_kick(pk.fe, q, vr->kick_fd));
        TU_CHECK_OK(tfe_set_vring_call(pk.fe, q, vr->call_fd));
        TU_CHECK_OK(tfe_set_vring_enable(pk.fe, q, true));
    }
    TU_CHECK(tu_port_info(pk.port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&pk.vq[q], pk.fe, q, q % 2, PK_ARENA_SIZE));
    }
    pk.hdr_len = 12;
    pk.mrg = true;
    pk.packed = true;
    pk.pa.fail_after = -1;
    pk.alloc = (struct vhost_pkt_alloc) {
        .alloc = palloc_alloc, .free = palloc_free, .aux = &pk.pa,
    };
    for (int k = 0; k < 9; k++) {
        roundtrip(&pk, k % 2, "from position 0, wrap counter 1");
    }
    tu_log("after 10 packets each way on a ring of 7: position 3, wrap 0");
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
    TU_CHECK_EQ(base, 0x00030003);
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, RX(0), &base));
    TU_CHECK_EQ(base, 0x00030003);
    pk_finish(&pk);
}
/* A frontend that sends SET_VRING_BASE while the split layout is still
 * negotiated, then negotiates the packed ring.  0x8003 is a valid split
 * base (an index); for the packed ring it means position 3, wrap counter
 * 1.  The engine may refuse either message, or read the base as packed
 * once the ring is packed; it must not run the ring from a position
 * outside it.  A descriptor planted where position 0x8003 would be (past
 * the 32-entry ring, still in guest memory) shows whether it does. */
static void
test_base_before_features(void)
{
    struct vhost_port_options opts;
    struct vhost_pkt out[4];
    uint64_t offered, protocol;
    struct pk pk;
    int error;

    memset(&pk, 0, sizeof pk);
    pk.fds0 = tu_count_fds();
    pk.threads0 = tu_count_threads();
    tu_events_init(&pk.ev);
    pk.path = tu_path("base-order");
    vhost_port_options_init(&opts);
    opts.name = "base-order";
    opts.path = pk.path;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk.ev;
    TU_CHECK_OK(vhost_engine_create(&pk.engine));
    TU_CHECK_OK(vhost_engine_start(pk.engine));
    TU_CHECK_OK(vhost_port_create(pk.engine, &opts, &pk.port));
    pk.fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk.fe, pk.path));

    TU_CHECK_OK(tfe_get_features(pk.fe, &offered));
    TU_CHECK_OK(tfe_get_protocol_features(pk.fe, &protocol));
    TU_CHECK_OK(tfe_set_protocol_features(pk.fe, protocol));
    TU_CHECK_OK(tfe_set_owner(pk.fe));
    TU_CHECK_OK(tfe_set_mem_table(pk.fe));
    tu_log("SET_VRING_NUM 32 and SET_VRING_BASE 0x8003 before "
           "SET_FEATURES");
    error = 0;
    for (unsigned int q = 0; q < 4 && !error; q++) {
        TU_CHECK_OK(tfe_vring_alloc(pk.fe, q, 32));
        TU_CHECK_OK(tfe_set_vring_num(pk.fe, q, 32));
        error = tfe_set_vring_base(pk.fe, q, 0x8003);
    }
    if (!error) {
        tu_log("SET_FEATURES with RING_PACKED");
        error = tfe_set_features(pk.fe, (PK_FULL & offered)
                                 | F(VHOST_USER_F_PROTOCOL_FEATURES));
    }
    if (error) {
        TU_CHECK_EQ(error, TFE_NACK);
        tu_log("the engine refused the sequence: fine");
        tfe_destroy(pk.fe);
        vhost_port_destroy(pk.port);
        vhost_engine_destroy(pk.engine);
        tu_events_destroy(&pk.ev);
        free(pk.path);
        return;
    }
    for (unsigned int q = 0; q < 4; q++) {
        struct tfe_vring *vr = &pk.fe->vrings[q];

        vr->kick_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        vr->call_fd = TU_SYS(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        TU_CHECK_OK(tfe_set_vring_addr(pk.fe, q));
        TU_CHECK_OK(tfe_set_vring_kick(pk.fe, q, vr->kick_fd));
        TU_CHECK_OK(tfe_set_vring_call(pk.fe, q, vr->call_fd));
        TU_CHECK_OK(tfe_set_vring_enable(pk.fe, q, true));
    }
    TU_CHECK(tu_port_info(pk.port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&pk.vq[q], pk.fe, q, q % 2, PK_ARENA_SIZE));
        tfe_vq_pset_position(&pk.vq[q], 0x8003);
    }
    pk.hdr_len = 12;
    pk.mrg = true;
    pk.packed = true;
    pk.pa.fail_after = -1;
    pk.alloc = (struct vhost_pkt_alloc) {
        .alloc = palloc_alloc, .free = palloc_free, .aux = &pk.pa,
    };

    {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        uint64_t planted = tfe_vq_ring_gpa(vq) + 16 * 0x8003;
        uint8_t *a = new_pkt(&pk, 100, MAC_UNICAST);
        uint8_t *b = new_pkt(&pk, 200, MAC_UNICAST);
        uint64_t buf = arena_buf(vq, 212);
        struct tfe_pdesc d = {
            .addr = buf, .len = 212, .id = 7, .flags = TFE_PDESC_F_USED,
        };
        struct tfe_pdesc after;
        unsigned int n;

        TU_CHECK(tfe_mem_write(vq->mem, buf + 12, b, 200));
        TU_CHECK(tfe_mem_gpa_to_va(vq->mem, planted, 16) != NULL);
        TU_CHECK(tfe_mem_write(vq->mem, planted, &d, sizeof d));
        tu_log("a packet at position 3 (wrap 1), and one planted %#"PRIx64
               " bytes past the start of the ring (available with wrap 0)",
               (uint64_t) 16 * 0x8003);
        tx_post(&pk, 0, NULL, a, 100, NULL);
        n = dq(&pk, 0, out, 4);
        TU_CHECK(tfe_mem_read(vq->mem, planted, &after, sizeof after));
        if (n && out[0].len == 200) {
            TU_FAIL("the engine ran the 32-entry ring from position 0x8003 "
                    "(wrap 0): it dequeued the descriptor planted past the "
                    "ring and wrote {id %u, len %"PRIu32", flags %#x} there",
                    after.id, after.len, after.flags);
        }
        TU_CHECK_EQ(after.flags, d.flags);
        TU_CHECK_EQ(n, 1);
        check_pkt(&out[0], a, 100, "from position 3");
        release_pkts(out, 4);
        free(a);
        free(b);
    }
    pk_finish(&pk);
}

/* A frontend that shrinks a packed ring below its base: SET_VRING_BASE
 * 200 on a ring of 256, then SET_VRING_NUM 33.  The engine may refuse the
 * size (or the base, or starting the ring), but must not run a 33-entry
 * ring from position 200. */
static void
test_num_after_base(void)
{
    struct pk_cfg cfg = cfg_features(PK_FULL);
    struct vhost_pkt out[4];
    struct tfe_vring *vr;
    uint32_t base;
    int error;
    struct pk pk;

    pk_start(&pk, "num-after-base", &cfg);
    vr = &pk.fe->vrings[TX(0)];
    TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
    CHECK_ACK(tfe_set_vring_base(pk.fe, TX(0), 0x8000 | 200));
    tu_log("SET_VRING_BASE 0x80c8 on a ring of 256, then SET_VRING_NUM 33");
    error = tfe_set_vring_num(pk.fe, TX(0), 33);
    if (!error) {
        error = tfe_set_vring_addr(pk.fe, TX(0));
    }
    if (!error) {
        error = tfe_set_vring_kick(pk.fe, TX(0), vr->kick_fd);
    }
    if (error) {
        TU_CHECK_EQ(error, TFE_NACK);
        tu_log("the engine refused: fine");
    } else if (tu_queue_info(pk.port, TX(0)).ready) {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        struct tfe_pdesc *slot = &vq->pdesc[200];
        uint64_t buf = arena_buf(vq, 212);
        struct tfe_pdesc planted = {
            .addr = buf, .len = 212, .id = 3, .flags = TFE_PDESC_F_AVAIL,
        };
        unsigned int n;

        tu_log("the ring runs: plant an available descriptor in slot 200, "
               "past the 33 entries");
        *slot = planted;
        n = dq(&pk, 0, out, 4);
        release_pkts(out, 4);
        if (n || slot->flags != planted.flags) {
            TU_FAIL("the engine ran a 33-entry ring from position 200: it "
                    "dequeued %u packets from slot 200, which now holds "
                    "{id %u, len %"PRIu32", flags %#x}", n, slot->id,
                    slot->len, slot->flags);
        }
        TU_CHECK_OK(tfe_get_vring_base(pk.fe, TX(0), &base));
        tu_log("GET_VRING_BASE now gives %#"PRIx32, base);
        TU_CHECK((base & 0x7fff) < 33);
        TU_CHECK((base >> 16 & 0x7fff) < 33);
    } else {
        tu_log("the engine did not start the ring: fine");
    }
    pk_finish(&pk);
}

/* VIRTIO_F_RING_PACKED without VIRTIO_F_VERSION_1 (nor MRG_RXBUF): the
 * packed ring is a VIRTIO 1.x feature.  The engine may refuse the
 * features; if it takes them, it must use one header layout for them, and
 * the one §5.1.6 gives without VERSION_1 and MRG_RXBUF is 10 bytes (as it
 * does on a split ring). */
static void
test_no_version1(void)
{
    struct vhost_port_options opts;
    struct tfe_setup setup = {
        .features_mask = PK_BASE & ~F(VIRTIO_F_VERSION_1)
                         & ~F(VIRTIO_F_RING_PACKED),
        .packed = true,
    };
    struct pk pk;
    int error;

    memset(&pk, 0, sizeof pk);
    pk.fds0 = tu_count_fds();
    pk.threads0 = tu_count_threads();
    tu_events_init(&pk.ev);
    pk.path = tu_path("no-v1");
    vhost_port_options_init(&opts);
    opts.name = "no-v1";
    opts.path = pk.path;
    opts.features = PK_OFFERED;
    opts.max_queue_pairs = 2;
    opts.cb = &tu_callbacks;
    opts.aux = &pk.ev;
    TU_CHECK_OK(vhost_engine_create(&pk.engine));
    TU_CHECK_OK(vhost_engine_start(pk.engine));
    TU_CHECK_OK(vhost_port_create(pk.engine, &opts, &pk.port));
    pk.fe = tfe_create(pk_mem_create());
    TU_CHECK_OK(tfe_connect(pk.fe, pk.path));
    tu_log("SET_FEATURES with RING_PACKED but not VERSION_1");
    error = tfe_setup_device(pk.fe, 2, &setup);
    if (error) {
        TU_CHECK_EQ(error, TFE_NACK);
        tu_log("the engine refused: fine");
        tfe_destroy(pk.fe);
        vhost_port_destroy(pk.port);
        vhost_engine_destroy(pk.engine);
        tu_events_destroy(&pk.ev);
        free(pk.path);
        return;
    }
    TU_CHECK(tu_port_info(pk.port).ready);
    for (unsigned int q = 0; q < 4; q++) {
        TU_CHECK_OK(tfe_vq_init(&pk.vq[q], pk.fe, q, q % 2, PK_ARENA_SIZE));
    }
    pk.hdr_len = pk.vq[0].hdr_len;
    pk.mrg = false;
    pk.packed = true;
    TU_CHECK_EQ(pk.hdr_len, 10);
    pk.pa.fail_after = -1;
    pk.alloc = (struct vhost_pkt_alloc) {
        .alloc = palloc_alloc, .free = palloc_free, .aux = &pk.pa,
    };
    tu_log("the engine took them: packets with a 10-byte header");
    roundtrip(&pk, 0, "10-byte header");
    pk_finish(&pk);
}

/* Dirty logging (vhost-user.rst, "Migration"): buffers written and, for
 * rings with VHOST_VRING_F_LOG, each used descriptor at log_guest_addr +
 * 16 * position (the descriptor ring's address). */

static void
mark_pages(uint8_t *bitmap, uint64_t gpa, uint64_t len)
{
    for (uint64_t page = gpa / PAGE; len && page <= (gpa + len - 1) / PAGE;
         page++) {
        bitmap[page / 8] |= 1u << (page % 8);
    }
}

struct dlog {
    uint8_t *log;
    uint8_t exp[PK_LOG_SIZE];
};

static uint64_t
read_eventfd(int fd)
{
    uint64_t n = 0;

    if (fd < 0 || read(fd, &n, sizeof n) != sizeof n) {
        return 0;
    }
    return n;
}

static void
dlog_start(struct pk *pk, struct dlog *dl)
{
    TU_CHECK_OK(tfe_log_create(pk->fe, PK_LOG_SIZE));
    TU_CHECK_OK(tfe_set_log_base(pk->fe, PK_LOG_SIZE, 0, pk->fe->log_fd,
                                 false));
    TU_CHECK_OK(tfe_set_log_fd(pk->fe));
    TU_CHECK(tu_port_info(pk->port).log_mapped);
    dl->log = mmap(NULL, PK_LOG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                   pk->fe->log_fd, 0);
    TU_CHECK(dl->log != MAP_FAILED);
    memset(dl->exp, 0, sizeof dl->exp);
}

/* Checks that the log marks exactly the pages expected, and that the log
 * eventfd was written if any was; then clears both. */
static void
dlog_check(struct pk *pk, struct dlog *dl, const char *what)
{
    bool any = false;

    for (uint64_t page = 0; page < PK_LOG_SIZE * 8; page++) {
        bool got = dl->log[page / 8] & (1u << (page % 8));
        bool want = dl->exp[page / 8] & (1u << (page % 8));

        if (got != want) {
            TU_FAIL("%s: page %#"PRIx64" (GPA %#"PRIx64") is %s the dirty "
                    "log", what, page, page * PAGE,
                    got ? "wrongly in" : "missing from");
        }
        any |= want;
    }
    if (any) {
        TU_CHECK(read_eventfd(pk->fe->log_call_fd) > 0);
    } else {
        TU_CHECK_EQ(read_eventfd(pk->fe->log_call_fd), 0);
    }
    memset(dl->log, 0, PK_LOG_SIZE);
    memset(dl->exp, 0, sizeof dl->exp);
}

/* The page of the used descriptor at driver position 'pos' of 'vq'. */
static void
mark_used(struct dlog *dl, const struct tfe_vq *vq, unsigned int pos)
{
    mark_pages(dl->exp, tfe_vq_ring_gpa(vq) + 16 * pos, 16);
}

static void
test_dirty_log(void)
{
    struct pk_cfg cfg = {
        .features = PK_FULL | F(VHOST_F_LOG_ALL), .log_used = true,
        .queue_size = 1024, .has_base = true, .base = 0x8000 | 300,
    };
    struct vhost_pkt out[4];
    struct dlog dl;
    struct pk pk;
    uint8_t *a;

    pk_start(&pk, "dirty-log", &cfg);
    dlog_start(&pk, &dl);

    tu_log("enqueue at position 300 into two buffers on different pages "
           "marks the bytes written and the ring's second page");
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];
        uint64_t base = tfe_vq_alloc(vq, 16 * PAGE, PAGE);
        struct tfe_seg segs[2] = {
            { base + 3 * PAGE - 100, 100 },
            { base + 10 * PAGE, 8192 },
        };

        TU_CHECK(tfe_vq_add_chain(vq, segs, 2, true, NULL) >= 0);
        a = new_pkt(&pk, 500, MAC_UNICAST);
        TU_CHECK_EQ(enq1(&pk, 0, a, 500, NULL), 1);
        mark_pages(dl.exp, segs[0].gpa, 100);
        mark_pages(dl.exp, segs[1].gpa, pk.hdr_len + 500 - 100);
        mark_used(&dl, vq, 300);
        /* The queue's first burst asks the driver not to kick: a write
         * to the device event area, logged at its own address. */
        mark_pages(dl.exp, tfe_vq_used_gpa(vq), 2);
        TU_CHECK_EQ((tfe_vq_ring_gpa(vq) + 16 * 300) / PAGE,
                    tfe_vq_ring_gpa(vq) / PAGE + 1);
        dlog_check(&pk, &dl, "enqueue");
        rx_expect(&pk, 0, a, 500, NULL, 1, "logged enqueue");
        free(a);
    }

    tu_log("dequeue at position 300 marks the ring's second page only");
    a = new_pkt(&pk, 300, MAC_UNICAST);
    tx_post(&pk, 0, NULL, a, 300, NULL);
    TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
    release_pkts(out, 4);
    mark_used(&dl, &pk.vq[TX(0)], 300);
    mark_pages(dl.exp, tfe_vq_used_gpa(&pk.vq[TX(0)]), 2);
    dlog_check(&pk, &dl, "dequeue");
    TU_CHECK_OK(get_used(&pk.vq[TX(0)], &(struct tfe_used_elem) { 0 },
                         "dequeue"));

    tu_log("a bad chain's used descriptor is logged too");
    {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        unsigned int pos = vq->next_avail;
        uint16_t id = post_one(vq, PK_GAP_GPA, 100, 0, free_id(vq));

        TU_CHECK_EQ(dq(&pk, 0, out, 4), 0);
        release_pkts(out, 4);
        mark_used(&dl, vq, pos);
        dlog_check(&pk, &dl, "dropped chain");
        expect_used(vq, id, 0);
    }

    tu_log("empty bursts mark nothing and do not signal");
    TU_CHECK_EQ(dq(&pk, 0, out, 4), 0);
    TU_CHECK_EQ(enq1(&pk, 0, a, 300, NULL), 0);
    dlog_check(&pk, &dl, "empty bursts");
    free(a);

    tu_log("a chain over positions 303..1 across the end of ring ... is "
           "logged where its used descriptor goes");
    {
        struct tfe_vq *vq = &pk.vq[TX(0)];
        struct tfe_buf_opts o = { .n_descs = 3 };

        /* To position 1022: whole bursts of 64. */
        while (vq->next_avail != 1022) {
            unsigned int n = MIN(64u, (1022 + 1024 - vq->next_avail)
                                      % 1024);
            for (unsigned int i = 0; i < n; i++) {
                uint8_t *p = new_pkt(&pk, 60, MAC_UNICAST);
                tx_post(&pk, 0, NULL, p, 60, NULL);
                free(p);
            }
            TU_CHECK_EQ(dq(&pk, 0, out, 4), MIN(4, n));
            release_pkts(out, 4);
            while (dq(&pk, 0, out, 4)) {
                release_pkts(out, 4);
            }
            while (!get_used(vq, &(struct tfe_used_elem) { 0 }, "fill")) {
                continue;
            }
        }
        memset(dl.log, 0, PK_LOG_SIZE);
        read_eventfd(pk.fe->log_call_fd);
        a = new_pkt(&pk, 300, MAC_UNICAST);
        tx_post(&pk, 0, NULL, a, 300, &o);
        TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
        check_pkt(&out[0], a, 300, "across the end of the ring");
        release_pkts(out, 4);
        mark_used(&dl, vq, 1022);
        dlog_check(&pk, &dl, "chain across the end of the ring");
        TU_CHECK_OK(get_used(vq, &(struct tfe_used_elem) { 0 }, "wrap"));
        TU_CHECK_EQ(vq->next_used, 1);
        free(a);
    }

    tu_log("a mergeable packet over a buffer across regions 2|3 and one "
           "8 kB buffer");
    {
        struct tfe_vq *vq = &pk.vq[RX(0)];
        struct tfe_buf_opts o = { .gpa = boundary_rx(&pk) - 2000 };
        uint64_t b2 = tfe_vq_alloc(vq, 8192, PAGE);
        struct tfe_seg seg = { b2, 8192 };
        unsigned int pos = vq->next_avail;

        rx_post(&pk, 0, 4000, &o);
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, true, NULL) >= 0);
        a = new_pkt(&pk, 5000, MAC_UNICAST);
        TU_CHECK_EQ(enq1(&pk, 0, a, 5000, NULL), 1);
        mark_pages(dl.exp, boundary_rx(&pk) - 2000, 4000);
        mark_pages(dl.exp, b2, pk.hdr_len + 5000 - 4000);
        mark_used(&dl, vq, pos);
        mark_used(&dl, vq, pos + 1);
        dlog_check(&pk, &dl, "mergeable enqueue across regions");
        rx_expect(&pk, 0, a, 5000, NULL, 2, "logged mergeable enqueue");
        free(a);
    }

    tu_log("a vring without VHOST_VRING_F_LOG: buffers only, not its ring");
    pk.fe->vrings[RX(1)].log_used = false;
    TU_CHECK_OK(tfe_set_vring_addr(pk.fe, RX(1)));
    TU_CHECK(!tu_queue_info(pk.port, RX(1)).log_used);
    {
        struct tfe_buf_opts o = { .gpa = boundary_rx(&pk) + 8 * PAGE };

        rx_post(&pk, 1, 2048, &o);
        a = new_pkt(&pk, 1000, MAC_UNICAST);
        TU_CHECK_EQ(enq1(&pk, 1, a, 1000, NULL), 1);
        mark_pages(dl.exp, o.gpa, pk.hdr_len + 1000);
        dlog_check(&pk, &dl, "enqueue on a vring without F_LOG");
        rx_expect(&pk, 1, a, 1000, NULL, 1, "enqueue without F_LOG");
        free(a);
    }

    munmap(dl.log, PK_LOG_SIZE);
    pk_finish(&pk);
}
/* Bounded work: at most VHOST_MAX_BURST chains per call. */

/* Reads every used element of 'vq'; returns how many. */
static unsigned int
drain_used(struct tfe_vq *vq)
{
    struct tfe_used_elem u;
    unsigned int n = 0;
    int error;

    while ((error = get_used(vq, &u, "drain")) != -EAGAIN) {
        n++;
    }
    return n;
}

static void
test_bounded(void)
{
    struct pk_cfg cfg = cfg_features(PK_FULL & ~PK_IND);
    struct vhost_pkt out[100];
    uint8_t *pkts[256];
    struct pk pk;
    struct tfe_vq *tx;

    pk_start(&pk, "bounded", &cfg);
    tx = &pk.vq[TX(0)];
    tu_log("256 packets fill a 256-entry ring; bursts of 32 take 32");
    for (int i = 0; i < 256; i++) {
        pkts[i] = new_pkt(&pk, 64, MAC_UNICAST);
        tx_post(&pk, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(tx->n_free, 0);
    roundtrip(&pk, 1, "while pair 0 is full");
    for (int call = 0; call < 8; call++) {
        TU_CHECK_EQ(dq(&pk, 0, out, 32), 32);
        for (int i = 0; i < 32; i++) {
            check_pkt(&out[i], pkts[call * 32 + i], 64, "bounded burst");
        }
        release_pkts(out, 32);
        TU_CHECK_EQ(drain_used(tx), 32);
    }
    TU_CHECK_EQ(dq(&pk, 0, out, 32), 0);
    for (int i = 0; i < 256; i++) {
        free(pkts[i]);
    }

    tu_log("n = 100 takes VHOST_MAX_BURST (%d)", VHOST_MAX_BURST);
    for (int i = 0; i < 100; i++) {
        pkts[i] = new_pkt(&pk, 64, MAC_UNICAST);
        tx_post(&pk, 0, NULL, pkts[i], 64, NULL);
    }
    TU_CHECK_EQ(dq(&pk, 0, out, 100), VHOST_MAX_BURST);
    release_pkts(out, 100);
    TU_CHECK_EQ(drain_used(tx), VHOST_MAX_BURST);
    TU_CHECK_EQ(dq(&pk, 0, out, 100), 100 - VHOST_MAX_BURST);
    for (int i = 0; i < 100 - VHOST_MAX_BURST; i++) {
        check_pkt(&out[i], pkts[VHOST_MAX_BURST + i], 64, "second burst");
    }
    release_pkts(out, 100);
    TU_CHECK_EQ(drain_used(tx), 100 - VHOST_MAX_BURST);
    for (int i = 0; i < 100; i++) {
        free(pkts[i]);
    }

    tu_log("a ring of bad chains is drained %d per call", VHOST_MAX_BURST);
    for (int i = 0; i < 200; i++) {
        post_one(tx, arena_buf(tx, 100), 100, TFE_DESC_F_WRITE,
                 free_id(tx));
    }
    for (int call = 0; call < 4; call++) {
        unsigned int used;

        TU_CHECK_EQ(dq(&pk, 0, out, 64), 0);
        release_pkts(out, 64);
        used = drain_used(tx);
        TU_CHECK_EQ(used, call < 3 ? 64 : 200 - 3 * 64);
    }
    TU_CHECK_EQ(get_stats(&pk, TX(0)).drops[VHOST_DROP_BAD_DIRECTION], 200);

    tu_log("receive: 256 read-only chains, %d dropped per call",
           VHOST_MAX_BURST);
    {
        struct tfe_vq *rx = &pk.vq[RX(0)];
        uint8_t *a = new_pkt(&pk, 100, MAC_UNICAST);

        for (int i = 0; i < 256; i++) {
            post_one(rx, arena_buf(rx, 200), 200, 0, free_id(rx));
        }
        for (int call = 0; call < 4; call++) {
            TU_CHECK_EQ(enq1(&pk, 0, a, 100, NULL), 0);
            TU_CHECK_EQ(drain_used(rx), VHOST_MAX_BURST);
        }
        TU_CHECK_EQ(get_stats(&pk, RX(0)).drops[VHOST_DROP_BAD_DIRECTION],
                    256);
        free(a);
    }
    roundtrip(&pk, 0, "after the floods");
    pk_finish(&pk);
}

/* Bad chains count against the bound too: two dropped two-descriptor
 * chains put the batch path out of step with the chain count, and a call
 * with n = 64 must still use at most 64 chains.  (The packed dequeue loop
 * checks the bound before a batch of four, so it can take 3 more.) */
static void
test_bounded_mixed(void)
{
    struct pk_cfg cfg = cfg_features(PK_FULL);
    struct vhost_pkt out[VHOST_MAX_BURST];
    uint8_t *pkts[80];
    struct pk pk;
    struct tfe_vq *tx;
    unsigned int got, used;

    pk_start(&pk, "bounded-mixed", &cfg);
    tx = &pk.vq[TX(0)];
    tu_log("two bad two-descriptor chains, then 80 simple packets");
    for (int i = 0; i < 2; i++) {
        post_two(tx, arena_buf(tx, 12), 12, 0, arena_buf(tx, 100), 100,
                 TFE_DESC_F_WRITE, free_id(tx));
    }
    for (int i = 0; i < 80; i++) {
        pkts[i] = new_pkt(&pk, 64, MAC_UNICAST);
        tx_post(&pk, 0, NULL, pkts[i], 64, NULL);
    }
    got = dq(&pk, 0, out, VHOST_MAX_BURST);
    used = drain_used(tx);
    tu_log("a call with n = %d returned %u packets and used %u chains",
           VHOST_MAX_BURST, got, used);
    for (unsigned int i = 0; i < got; i++) {
        check_pkt(&out[i], pkts[i], 64, "mixed burst");
    }
    release_pkts(out, VHOST_MAX_BURST);
    TU_CHECK_EQ(used, got + 2);
    if (used > VHOST_MAX_BURST) {
        TU_FAIL("one call used %u chains, more than VHOST_MAX_BURST (%d)",
                used, VHOST_MAX_BURST);
    }
    while ((got = dq(&pk, 0, out, VHOST_MAX_BURST)) > 0) {
        release_pkts(out, VHOST_MAX_BURST);
    }
    for (int i = 0; i < 80; i++) {
        free(pkts[i]);
    }
    pk_finish(&pk);
}

/* Receive rings that cannot take a packet. */
static void
test_rx_no_room(void)
{
    struct pk_cfg cfg = cfg_features(PK_FULL & ~PK_MRG);
    struct vhost_queue_stats e;
    struct pk pk;

    pk_start(&pk, "rx-no-room", &cfg);
    memset(&e, 0, sizeof e);
    tu_log("without MRG_RXBUF: a 500-byte packet and a 100-byte chain: the "
           "burst stops at the packet, the chain stays for the next "
           "packet");
    {
        uint8_t *big = new_pkt(&pk, 500, MAC_UNICAST);
        uint8_t *small = new_pkt(&pk, 50, MAC_UNICAST);
        struct vhost_pkt in[2] = {
            { .data = big, .len = 500 }, { .data = small, .len = 50 },
        };

        rx_post(&pk, 0, 100, NULL);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
        expect_no_used(&pk.vq[RX(0)]);
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in + 1, 1), 1);
        rx_expect(&pk, 0, small, 50, NULL, 1, "the small packet");
        expect_no_used(&pk.vq[RX(0)]);
        stats_add(&e, small, 50);
        check_stats(&pk, RX(0), &e);
        TU_CHECK_EQ(get_stats(&pk, RX(0)).small_buf_stops, 1);

        tu_log("  and an empty ring takes nothing and counts nothing");
        TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
        check_stats(&pk, RX(0), &e);
        free(big);
        free(small);
    }
    pk_finish(&pk);

    cfg = cfg_features(PK_FULL);
    pk_start(&pk, "rx-no-room-mrg", &cfg);
    memset(&e, 0, sizeof e);
    tu_log("with MRG_RXBUF: a 5000-byte packet and three 1000-byte buffers: "
           "nothing is taken until there are enough");
    {
        uint8_t *a = new_pkt(&pk, 5000, MAC_UNICAST);
        uint8_t *b = new_pkt(&pk, 9000, MAC_UNICAST);
        uint8_t *c = new_pkt(&pk, 1000, MAC_UNICAST);

        for (int i = 0; i < 3; i++) {
            rx_post(&pk, 0, 1000, NULL);
        }
        TU_CHECK_EQ(enq1(&pk, 0, a, 5000, NULL), 0);
        expect_no_used(&pk.vq[RX(0)]);
        check_stats(&pk, RX(0), &e);
        for (int i = 0; i < 3; i++) {
            rx_post(&pk, 0, 1000, NULL);
        }
        TU_CHECK_EQ(enq1(&pk, 0, a, 5000, NULL), 1);
        rx_expect(&pk, 0, a, 5000, NULL, 6, "six buffers");
        stats_add(&e, a, 5000);

        tu_log("  a 9000-byte packet over 100-byte buffers needs more than "
               "%d: the burst stops there; the buffers stay", 64);
        for (int i = 0; i < 100; i++) {
            rx_post(&pk, 0, 100, NULL);
        }
        {
            struct vhost_pkt in[2] = {
                { .data = b, .len = 9000 }, { .data = c, .len = 1000 },
            };
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in, 2), 0);
            expect_no_used(&pk.vq[RX(0)]);
            TU_CHECK_EQ(vhost_enqueue_burst(pk.port, 0, in + 1, 1), 1);
        }
        rx_expect(&pk, 0, c, 1000, NULL, 11, "after the too-big one");
        stats_add(&e, c, 1000);
        check_stats(&pk, RX(0), &e);
        TU_CHECK_EQ(get_stats(&pk, RX(0)).small_buf_stops, 1);
        free(a);
        free(b);
        free(c);
    }
    pk_finish(&pk);
}
/* Differential: a split ring and a packed ring given the same stream. */

/* One packet as a guest or the embedder saw it. */
struct seen {
    uint8_t *bytes;             /* Header (receive) and packet. */
    size_t len;
    struct vhost_offload ol;    /* Dequeue only. */
};

struct seen_list {
    struct seen *v;
    size_t n, cap;
};

static void
seen_add(struct seen_list *l, const uint8_t *bytes, size_t len,
         const struct vhost_offload *ol)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        TU_CHECK(l->v != NULL);
    }
    l->v[l->n].bytes = malloc(len + 1);
    TU_CHECK(l->v[l->n].bytes != NULL);
    memcpy(l->v[l->n].bytes, bytes, len);
    l->v[l->n].len = len;
    memset(&l->v[l->n].ol, 0, sizeof l->v[l->n].ol);
    if (ol) {
        l->v[l->n].ol = *ol;
    }
    l->n++;
}

static void
seen_compare(const struct seen_list *a, const struct seen_list *b,
             const char *what)
{
    if (a->n != b->n) {
        TU_FAIL("%s: split saw %zu packets, packed %zu", what, a->n, b->n);
    }
    for (size_t i = 0; i < a->n; i++) {
        char w[96];

        snprintf(w, sizeof w, "%s, packet %zu", what, i);
        if (a->v[i].len != b->v[i].len) {
            TU_FAIL("%s: split length %zu, packed %zu", w, a->v[i].len,
                    b->v[i].len);
        }
        check_bytes(b->v[i].bytes, a->v[i].bytes, a->v[i].len, w);
        check_ol(&b->v[i].ol, &a->v[i].ol, w);
    }
}

static void
seen_free(struct seen_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].bytes);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Dequeues everything on queue pair 0 in calls of 'n', recording the
 * packets and the calls' results. */
static void
diff_dequeue_all(struct pk *pk, struct rng *rng, struct seen_list *l,
                 unsigned int *calls, unsigned int *results)
{
    struct vhost_pkt out[VHOST_MAX_BURST];
    unsigned int got;

    *calls = 0;
    do {
        unsigned int n = rng_range(rng, 1, VHOST_MAX_BURST);

        got = dq(pk, 0, out, n);
        for (unsigned int i = 0; i < got; i++) {
            seen_add(l, out[i].data, out[i].len, &out[i].ol);
        }
        release_pkts(out, n);
        results[(*calls)++] = got;
    } while (got || *calls < 2);
    drain_used(&pk->vq[TX(0)]);
}

/* Receives everything used on the receive ring of queue pair 0: elements
 * of length 0 (dropped chains) are skipped, the others gathered into
 * packets by num_buffers. */
static void
diff_receive_all(struct pk *pk, struct seen_list *l, unsigned int *zero)
{
    struct tfe_vq *vq = &pk->vq[RX(0)];
    uint8_t *buf = malloc(128 * 1024);
    struct tfe_used_elem u;

    TU_CHECK(buf != NULL);
    while (!tfe_vq_peek_used(vq, &u)) {
        unsigned int n_bufs = 1;
        size_t total = 0;

        if (!u.len) {
            TU_CHECK_OK(get_used(vq, &u, "dropped chain"));
            (*zero)++;
            continue;
        }
        for (unsigned int i = 0; i < n_bufs; i++) {
            int error = get_used(vq, &u, "diff receive");

            if (error) {
                TU_FAIL("%s ring: buffer %u of %u (%zu bytes so far): %s",
                        pk->packed ? "packed" : "split", i + 1, n_bufs,
                        total, tu_strerror(error));
            }
            tfe_vq_read_chain(vq, u.id, u.len, buf + total);
            total += u.len;
            if (!i && vq->mrg) {
                uint16_t nb;
                memcpy(&nb, buf + 10, 2);
                n_bufs = nb;
            }
        }
        seen_add(l, buf, total, NULL);
    }
    free(buf);
}

/* Posts one transmit chain of kind 'k' with parameters from 'r' on the
 * transmit ring of both fixtures. */
static void
diff_post_tx(struct pk *pk, uint32_t k, uint32_t len, uint32_t n_descs,
             bool indirect, bool offload, bool straddle, const uint8_t *pkt)
{
    struct tfe_vq *vq = &pk->vq[TX(0)];
    struct tfe_buf_opts o = {
        .n_descs = n_descs, .indirect = indirect,
        .gpa = straddle ? boundary_tx(pk) - len / 2 : 0,
    };

    switch (k) {
    case 0: {
        TU_CHECK(tfe_vq_post_tx(vq, offload ? &offload_hdr
                                : &(struct tfe_net_hdr) { 0 }, 12, pkt,
                                len, &o) >= 0);
        break;
    }
    case 1: {
        struct tfe_seg seg = { arena_buf(vq, 5), 5 };
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, false, NULL) >= 0);
        break;
    }
    case 2: {
        struct tfe_net_hdr h = {
            .flags = TFE_NET_HDR_F_NEEDS_CSUM, .csum_start = len,
            .csum_offset = 0,
        };
        TU_CHECK(tfe_vq_post_tx(vq, &h, 12, pkt, len, &o) >= 0);
        break;
    }
    case 3: {
        struct tfe_seg seg = { arena_buf(vq, 100), 100 };
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, true, NULL) >= 0);
        break;
    }
    default: {
        struct tfe_seg segs[2] = {
            { arena_buf(vq, 12), 12 }, { PK_GAP_GPA, 100 },
        };
        TU_CHECK(tfe_vq_add_chain(vq, segs, 2, false, NULL) >= 0);
        break;
    }
    }
}

static void
diff_post_rx(struct pk *pk, uint32_t k, uint32_t len, uint32_t n_descs,
             bool indirect, bool straddle)
{
    struct tfe_vq *vq = &pk->vq[RX(0)];
    struct tfe_buf_opts o = {
        .n_descs = n_descs, .indirect = indirect,
        .gpa = straddle ? boundary_rx(pk) - len / 2 : 0,
    };

    if (k == 0) {
        TU_CHECK(tfe_vq_post_rx(vq, len, &o) >= 0);
    } else {
        struct tfe_seg seg = { k == 1 ? arena_buf(vq, len) : PK_GAP_GPA,
                               len };
        TU_CHECK(tfe_vq_add_chain(vq, &seg, 1, k != 1, NULL) >= 0);
    }
}

static void
run_diff(const char *name, uint64_t features, unsigned int size,
         unsigned int rounds, uint64_t seed)
{
    struct pk_cfg cs = cfg_sized(features & ~F(VIRTIO_F_RING_PACKED), size);
    struct pk_cfg ck = cfg_sized(features | F(VIRTIO_F_RING_PACKED), size);
    struct seen_list tx_s = { 0 }, tx_k = { 0 }, rx_s = { 0 }, rx_k = { 0 };
    unsigned int zero_s = 0, zero_k = 0, call_diffs = 0;
    bool indirect = features & PK_IND;
    struct rng rng = { seed };
    struct pk ps, pk;
    char nk[64];

    snprintf(nk, sizeof nk, "%s-p", name);
    pk_start(&ps, name, &cs);
    pk_start(&pk, nk, &ck);
    TU_CHECK(!ps.packed && pk.packed);
    TU_CHECK_EQ(ps.hdr_len, pk.hdr_len);
    tu_log("%u rounds over a split and a packed ring of %u", rounds, size);

    for (unsigned int round = 0; round < rounds; round++) {
        unsigned int k = rng_range(&rng, 0, size);
        bool straddled = false;

        /* Transmit: the same chains on both, as long as both have room. */
        for (unsigned int i = 0; i < k; i++) {
            uint32_t kind = rng_range(&rng, 0, 19);
            uint32_t len = (rng_range(&rng, 0, 3)
                            ? rng_range(&rng, 18, 1600)
                            : rng_range(&rng, 18, 9000));
            uint32_t n_descs = rng_range(&rng, 1, 4);
            bool ind = indirect && !rng_range(&rng, 0, 2);
            bool offload = !rng_range(&rng, 0, 3);
            bool straddle = !straddled && !rng_range(&rng, 0, 15);
            unsigned int slots = ind ? 1 : n_descs;
            uint8_t *p;

            kind = kind < 16 ? 0 : kind - 15;
            if (kind == 4) {
                slots = 2;
            } else if (kind == 1 || kind == 3) {
                slots = 1;
            }
            if (ps.vq[TX(0)].n_free < slots || pk.vq[TX(0)].n_free < slots
                || !pk.vq[TX(0)].n_free_ids) {
                break;
            }
            straddled |= straddle;
            p = new_pkt(&pk, len, rng_range(&rng, 0, 2));
            diff_post_tx(&ps, kind, len, n_descs, ind, offload, straddle, p);
            diff_post_tx(&pk, kind, len, n_descs, ind, offload, straddle, p);
            free(p);
        }
        {
            unsigned int calls_s, calls_k;
            unsigned int res_s[300], res_k[300];
            uint64_t s = rng.s;

            diff_dequeue_all(&ps, &rng, &tx_s, &calls_s, res_s);
            rng.s = s;
            diff_dequeue_all(&pk, &rng, &tx_k, &calls_k, res_k);
            if (calls_s != calls_k
                || memcmp(res_s, res_k, calls_s * sizeof *res_s)) {
                call_diffs++;
            }
        }
        seen_compare(&tx_s, &tx_k, "dequeue");

        /* Receive: the same buffers on both, then the same packets. */
        k = rng_range(&rng, 0, size / 2);
        /* One buffer across regions at a time: only into an empty ring. */
        straddled = pk.vq[RX(0)].n_free != size
                    || ps.vq[RX(0)].n_free != size;
        for (unsigned int i = 0; i < k; i++) {
            uint32_t kind = rng_range(&rng, 0, 15);
            uint32_t n_descs = rng_range(&rng, 1, 3);
            bool ind = indirect && !rng_range(&rng, 0, 2);
            bool straddle = !straddled && !rng_range(&rng, 0, 15);
            uint32_t len = (pk.mrg ? rng_range(&rng, 64, 2048)
                            : rng_range(&rng, 0, 5) ? 9200
                            : rng_range(&rng, 64, 600));
            unsigned int slots = ind ? 1 : n_descs;

            kind = kind < 14 ? 0 : kind - 13;
            if (kind) {
                slots = 1;
            }
            if (ps.vq[RX(0)].n_free < slots || pk.vq[RX(0)].n_free < slots
                || !pk.vq[RX(0)].n_free_ids) {
                break;
            }
            straddled |= straddle && !kind;
            diff_post_rx(&ps, kind, len, n_descs, ind, straddle && !kind);
            diff_post_rx(&pk, kind, len, n_descs, ind, straddle && !kind);
        }
        {
            struct vhost_pkt in[32];
            unsigned int m = rng_range(&rng, 0, 32), ds, dk;

            for (unsigned int i = 0; i < m; i++) {
                uint32_t len = (rng_range(&rng, 0, 3)
                                ? rng_range(&rng, 18, 1600)
                                : rng_range(&rng, 18, 9000));
                in[i] = (struct vhost_pkt) {
                    .data = new_pkt(&pk, len, rng_range(&rng, 0, 2)),
                    .len = len,
                    .ol = {
                        .flags = rng_range(&rng, 0, 3),
                        .gso_type = rng_range(&rng, 0, 1) ? VHOST_GSO_TCPV4
                                                          : 0,
                        .hdr_len = rng_range(&rng, 0, 100),
                        .gso_size = rng_range(&rng, 0, 1500),
                        .csum_start = rng_range(&rng, 0, 50),
                        .csum_offset = rng_range(&rng, 0, 20),
                    },
                };
            }
            ds = vhost_enqueue_burst(ps.port, 0, in, m);
            dk = vhost_enqueue_burst(pk.port, 0, in, m);
            if (ds != dk) {
                TU_FAIL("round %u: enqueue of %u: split took %u, packed %u",
                        round, m, ds, dk);
            }
            for (unsigned int i = 0; i < m; i++) {
                free(in[i].data);
            }
        }
        diff_receive_all(&ps, &rx_s, &zero_s);
        diff_receive_all(&pk, &rx_k, &zero_k);
        TU_CHECK_EQ(zero_s, zero_k);
        seen_compare(&rx_s, &rx_k, "enqueue");
    }

    tu_log("%zu packets out, %zu in, %u dropped receive chains; %u rounds "
           "where the calls of a dequeue returned different counts",
           tx_s.n, rx_s.n, zero_s, call_diffs);
    {
        /* Notification counts match only where the rings were asked the
         * same (no EVENT_IDX: the split used_event and the packed off_wrap
         * say different things) and the calls matched one for one. */
        bool same_events = !(features & PK_EVT);

        for (unsigned int q = 0; q < 2; q++) {
            struct vhost_queue_stats a = get_stats(&ps, q);
            struct vhost_queue_stats b = get_stats(&pk, q);

            tu_log("vring %u: %"PRIu64" packets, %"PRIu64" drops; split "
                   "%"PRIu64"/%"PRIu64" and packed %"PRIu64"/%"PRIu64
                   " notified/suppressed", q, a.packets, total_drops(&a),
                   a.guest_notifications, a.notifications_suppressed,
                   b.guest_notifications, b.notifications_suppressed);
            compare_stats(q, &b, &a,
                          same_events && (q == RX(0) || !call_diffs));
        }
    }
    seen_free(&tx_s);
    seen_free(&tx_k);
    seen_free(&rx_s);
    seen_free(&rx_k);
    pk_finish(&pk);
    pk_finish(&ps);
}

static void
test_diff_full(void)
{
    run_diff("diff-full", PK_FULL & ~PK_EVT, 64, 150, 0x5eed0001);
}

static void
test_diff_nomrg(void)
{
    run_diff("diff-nomrg", PK_BASE | PK_IND, 128, 100, 0x5eed0002);
}

static void
test_diff_direct_evt(void)
{
    run_diff("diff-evt", PK_BASE | PK_MRG | PK_EVT, 256, 60, 0x5eed0003);
}
/* Cold paths: buffers, headers and indirect tables across the boundary of
 * two regions adjacent in guest memory, and headers over several
 * descriptors. */
static void
test_straddle(void)
{
    static const struct {
        int64_t offset;         /* From the boundary. */
        unsigned int n_descs;
        bool indirect;
        const char *what;
    } cases[] = {
        { -300, 1, false, "1000 bytes, 300 before the boundary" },
        { -5, 1, false, "the header across the boundary (5 + 7)" },
        { -11, 1, false, "num_buffers across the boundary" },
        { -1, 1, false, "1 byte before the boundary" },
        { -500, 3, false, "the middle of three descriptors" },
        { -300, 2, true, "in an indirect table" },
    };
    struct pk_cfg cfg = cfg_sized(PK_FULL, 16);
    struct vhost_pkt out[4];
    struct pk pk;

    pk_start(&pk, "straddle", &cfg);
    for (int lap = 0; lap < 2; lap++) {
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
            struct tfe_buf_opts o = {
                .gpa = boundary_tx(&pk) + cases[i].offset,
                .n_descs = cases[i].n_descs, .indirect = cases[i].indirect,
            };
            struct vhost_offload ol = {
                .flags = VHOST_OL_DATA_VALID, .csum_start = 0x1234,
                .csum_offset = 0x5678, .hdr_len = 0x9abc,
                .gso_size = 0xdef0, .gso_type = VHOST_GSO_TCPV6,
            };
            uint8_t *a = new_pkt(&pk, 1000, MAC_UNICAST);
            int id;

            tu_log("lap %d: across regions: %s", lap, cases[i].what);
            id = tx_post(&pk, 0, &offload_hdr, a, 1000, &o);
            TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
            check_pkt(&out[0], a, 1000, cases[i].what);
            TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
            TU_CHECK_EQ(out[0].ol.csum_start, 34);
            release_pkts(out, 4);
            expect_used(&pk.vq[TX(0)], id, 0);

            o.gpa = boundary_rx(&pk) + cases[i].offset;
            rx_post(&pk, 0, 2000, &o);
            TU_CHECK_EQ(enq1(&pk, 0, a, 1000, &ol), 1);
            rx_expect(&pk, 0, a, 1000, &ol, 1, cases[i].what);
            free(a);
        }
        for (int off = -64; off <= 0; off += 8) {
            struct tfe_buf_opts o = {
                .n_descs = 4, .indirect = true,
                .indirect_gpa = boundary_tx(&pk) + off,
            };
            uint8_t *a = new_pkt(&pk, 700, MAC_UNICAST);
            int id;

            tu_log("lap %d: a 4-entry indirect table %d bytes from the "
                   "boundary", lap, off);
            id = tx_post(&pk, 0, NULL, a, 700, &o);
            TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
            check_pkt(&out[0], a, 700, "indirect table across regions");
            release_pkts(out, 4);
            expect_used(&pk.vq[TX(0)], id, 0);
            o.indirect_gpa = boundary_rx(&pk) + off;
            rx_post(&pk, 0, 2048, &o);
            TU_CHECK_EQ(enq1(&pk, 0, a, 700, NULL), 1);
            rx_expect(&pk, 0, a, 700, NULL, 1, "indirect across regions");
            free(a);
        }
    }
    {
        struct vhost_queue_stats s0 = get_stats(&pk, RX(0));
        struct vhost_queue_stats s1 = get_stats(&pk, TX(0));
        TU_CHECK_EQ(total_drops(&s0) + total_drops(&s1), 0);
        TU_CHECK_EQ(s0.packets, 2 * (ARRAY_SIZE(cases) + 9));
        TU_CHECK_EQ(s1.packets, 2 * (ARRAY_SIZE(cases) + 9));
    }
    pk_finish(&pk);
}

/* The 12-byte header over several descriptors, both ways. */
static void
test_hdr_split(void)
{
    static const uint32_t splits[][13] = {
        { 5, 7 }, { 4, 6 }, { 3, 3, 4 }, { 7, 100 }, { 11, 1 }, { 2, 10 },
        { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, { 12 }, { 10 },
    };
    static const unsigned int n_splits[] = { 3, 3, 4, 3, 3, 3, 13, 2, 2 };
    struct pk_cfg cfg = cfg_sized(PK_FULL, 13);
    struct vhost_pkt out[4];
    struct pk pk;

    pk_start(&pk, "hdr-split", &cfg);
    for (int lap = 0; lap < 3; lap++) {
        for (size_t i = 0; i < ARRAY_SIZE(splits); i++) {
            struct tfe_buf_opts o = { .n_descs = n_splits[i],
                                      .split = splits[i],
                                      .indirect = n_splits[i] > 4 };
            struct vhost_offload ol = {
                .flags = VHOST_OL_NEEDS_CSUM, .gso_type = VHOST_GSO_TCPV4,
                .hdr_len = 66, .gso_size = 1448, .csum_start = 34,
                .csum_offset = 16,
            };
            uint8_t *a = new_pkt(&pk, 500, MAC_BROADCAST);
            int id;

            id = tx_post(&pk, 0, &offload_hdr, a, 500, &o);
            TU_CHECK_EQ(dq(&pk, 0, out, 4), 1);
            check_pkt(&out[0], a, 500, "header over several descriptors");
            TU_CHECK_EQ(out[0].ol.flags, VHOST_OL_NEEDS_CSUM);
            TU_CHECK_EQ(out[0].ol.gso_type, VHOST_GSO_UDP);
            TU_CHECK_EQ(out[0].ol.gso_size, 1000);
            release_pkts(out, 4);
            expect_used(&pk.vq[TX(0)], id, 0);

            rx_post(&pk, 0, 600, &o);
            TU_CHECK_EQ(enq1(&pk, 0, a, 500, &ol), 1);
            rx_expect(&pk, 0, a, 500, &ol, 1, "header over several buffers");
            free(a);
        }
    }
    pk_finish(&pk);
}
const struct tu_test tu_packed_tests[] = {
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
    { "pk-notify", test_notify_flags,
      "call eventfd and the driver event suppression flags" },
    { "pk-notify-event-idx-7", test_notify_event_idx_7,
      "EVENT_IDX: DESC off_wrap over many laps, queue size 7" },
    { "pk-notify-event-idx-33", test_notify_event_idx_33,
      "EVENT_IDX: DESC off_wrap, queue size 33, from wrap counter 0" },
    { "pk-notify-event-idx-256", test_notify_event_idx_256,
      "EVENT_IDX: DESC off_wrap, queue size 256, near the end" },
    { "pk-reconnect", test_reconnect,
      "reconnect mid-traffic from GET_VRING_BASE: no loss, no duplicate" },
    { "pk-restart", test_restart,
      "backend killed: its successor resumes from the position log" },
    { "pk-restart-in-order", test_restart_in_order,
      "backend killed, IN_ORDER: resumes from the position log" },
    { "pk-restart-unseen", test_restart_unseen,
      "backend killed mid-write-back: resumes where the burst began" },
    { "pk-restart-stray", test_restart_stray,
      "backend killed before logging a write-back: said and counted" },
    { "pk-restart-clean", test_restart_clean,
      "after GET_VRING_BASE nothing is recovered; the log is removed" },
    { "pk-restart-guest-reset", test_restart_guest_reset,
      "guest resets while the backend is down: nothing is recovered" },
    { "pk-restart-head-unwritten", test_restart_head_unwritten,
      "killed after the log, before the head's id/len: handed over" },
    { "pk-vring-base", test_vring_base,
      "SET_VRING_BASE: bad values rejected, good ones start traffic" },
    { "pk-no-vring-base", test_no_vring_base,
      "without SET_VRING_BASE the wrap counters start at 1" },
    { "pk-base-before-features", test_base_before_features,
      "SET_VRING_BASE sent before SET_FEATURES(RING_PACKED)" },
    { "pk-num-after-base", test_num_after_base,
      "SET_VRING_NUM shrinking the ring below its base" },
    { "pk-no-version1", test_no_version1,
      "RING_PACKED without VERSION_1: one header layout" },
    { "pk-dirty-log", test_dirty_log,
      "dirty log: buffers and used descriptors, exactly" },
    { "pk-bounded", test_bounded, "bursts take at most n, at most 64" },
    { "pk-bounded-mixed", test_bounded_mixed,
      "at most 64 chains per call with bad chains and batches" },
    { "pk-rx-no-room", test_rx_no_room,
      "RX: chains too small, not enough buffers" },
    { "pk-diff-full", test_diff_full,
      "differential split vs packed: MRG, indirect" },
    { "pk-diff-nomrg", test_diff_nomrg,
      "differential split vs packed: no MRG, indirect" },
    { "pk-diff-evt", test_diff_direct_evt,
      "differential split vs packed: MRG, direct, EVENT_IDX" },
    { "pk-straddle", test_straddle,
      "buffers, headers and indirect tables across regions" },
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
    { "pk-hdr-split", test_hdr_split,
      "the header over several descriptors, across the ring end" },
};
const size_t tu_n_packed_tests = ARRAY_SIZE(tu_packed_tests);
