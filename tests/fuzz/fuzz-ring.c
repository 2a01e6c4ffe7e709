/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring fuzzers' harness: see fuzz-ring.h.
 */

#include <config.h>
#include "fuzz-ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include "guest-mem.h"
#include "util.h"
#include "virtio-net-hdr.h"
#include "virtio-ring-packed.h"
#include "virtio-ring.h"
#include "virtio.h"
#include "virtq-segs.h"

/* The virtio features for the harness's feature bits: a plain virtio-net
 * device plus the ones the bits select. */
uint64_t
fuzz_ring_features(uint8_t bits, bool packed)
{
    uint64_t f = FEATURE_BIT(VIRTIO_NET_F_CSUM)
                 | FEATURE_BIT(VIRTIO_NET_F_GUEST_CSUM)
                 | FEATURE_BIT(VIRTIO_NET_F_HOST_TSO4)
                 | FEATURE_BIT(VIRTIO_NET_F_GUEST_TSO4)
                 | FEATURE_BIT(VIRTIO_F_ANY_LAYOUT);

    f |= bits & FUZZ_RING_F_MRG ? FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF) : 0;
    f |= bits & FUZZ_RING_F_INDIRECT
         ? FEATURE_BIT(VIRTIO_RING_F_INDIRECT_DESC) : 0;
    f |= bits & FUZZ_RING_F_EVENT_IDX
         ? FEATURE_BIT(VIRTIO_RING_F_EVENT_IDX) : 0;
    f |= bits & FUZZ_RING_F_V1 ? FEATURE_BIT(VIRTIO_F_VERSION_1) : 0;
    f |= bits & FUZZ_RING_F_LOG ? FEATURE_BIT(VHOST_F_LOG_ALL) : 0;
    f |= bits & FUZZ_RING_F_IN_ORDER ? FEATURE_BIT(VIRTIO_F_IN_ORDER) : 0;
    f |= packed ? FEATURE_BIT(VIRTIO_F_RING_PACKED) : 0;
    return f;
}

/* A call eventfd, so that notifications run their real code. */
static int
fuzz_ring_call_fd__(void)
{
    static int fd = -1;

    if (fd < 0) {
        fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    return fd;
}

/* Sets up 'vq' as the control plane would after SET_FEATURES,
 * SET_VRING_NUM 'size', SET_VRING_BASE 'base', SET_VRING_ADDR (the three
 * parts at the given guest physical addresses, in region 0), SET_VRING_KICK
 * and SET_VRING_ENABLE.  Returns true if the queue may run, as the
 * handlers would have let it. */
bool
fuzz_ring_vq_init(struct virtq *vq, const struct fuzz_mem *fm,
                  uint64_t features, unsigned int size, uint32_t base,
                  uint64_t desc_gpa, uint64_t avail_gpa, uint64_t used_gpa)
{
    virtq_init(vq, 1);
    virtq_configure(vq, features, fm->gm, NULL);
    vq->size = size;
    virtq_set_base(vq, base);
    vq->desc_uva = fuzz_mem_uva(fm, desc_gpa);
    vq->avail_uva = fuzz_mem_uva(fm, avail_gpa);
    vq->used_uva = fuzz_mem_uva(fm, used_gpa);
    vq->log_gpa = used_gpa;
    vq->log_used = true;
    vq->has_addr = true;
    vq->has_kick = true;
    vq->enabled = true;
    vq->call_fd = fuzz_ring_call_fd__();
    if (!virtq_map(vq, fm->gm)) {
        abort();                /* The harness's rings always fit. */
    }
    vq->ready = virtq_can_run(vq);
    return vq->ready;
}

static void
fuzz_ring_log__(enum vhost_log_level level, const char *msg, void *aux)
{
    /* Quiet: the engine logs every dropped chain (rate limited, but the
     * limit starts afresh with each input's queue). */
}

/* Verbose output (FUZZ_VERBOSE set in the environment), for working out
 * what an input does. */
static bool
fuzz_ring_verbose__(void)
{
    static int verbose = -1;

    if (verbose < 0) {
        verbose = getenv("FUZZ_VERBOSE") != NULL;
        if (!verbose) {
            vhost_log_set_handler(fuzz_ring_log__, NULL);
        }
    }
    return verbose;
}

bool
fuzz_ring_setup(struct fuzz_ring *fr, bool packed, struct fuzz_input *in)
{
    memset(fr, 0, sizeof *fr);
    fuzz_ring_verbose__();

    uint8_t bits = fuzz_input_u8(in);
    uint8_t layout = fuzz_input_u8(in);
    uint8_t size_sel = fuzz_input_u8(in);
    uint16_t base = fuzz_input_u16(in);
    uint8_t log_size = fuzz_input_u8(in);
    unsigned int size = packed ? size_sel + 1u : 1u << (size_sel % 9);

    fr->features = fuzz_ring_features(bits, packed);
    fuzz_mem_build(&fr->fm, layout);

    /* The rings, straight from the input. */
    fuzz_input_bytes(in, fuzz_mem_va(&fr->fm, FUZZ_RING_DESC_GPA, 16 * size),
                     16 * size);
    if (packed) {
        fuzz_input_bytes(in, fuzz_mem_va(&fr->fm, FUZZ_RING_AVAIL_GPA, 4), 4);
    } else {
        fuzz_input_bytes(in, fuzz_mem_va(&fr->fm, FUZZ_RING_AVAIL_GPA,
                                         6 + 2 * size), 6 + 2 * size);
        fuzz_input_bytes(in, fuzz_mem_va(&fr->fm, FUZZ_RING_USED_GPA, 4), 4);
    }

    fr->log_size = log_size;
    fr->log_buf = malloc(log_size ? log_size : 1);
    memset(fr->log_buf, 0, log_size ? log_size : 1);

    if (packed) {
        /* SET_VRING_BASE would be refused for a position past the ring;
         * keep what the handler accepts. */
        base = (base & 0x8000) | ((base & 0x7fff) % size);
        fr->drv_pos = base & 0x7fff;
        fr->drv_wrap = base >> 15;
    }
    return fuzz_ring_vq_init(&fr->vq, &fr->fm, fr->features, size, base,
                             FUZZ_RING_DESC_GPA, FUZZ_RING_AVAIL_GPA,
                             FUZZ_RING_USED_GPA);
}

/* The embedder's buffers on dequeue: exactly the size asked for, so that
 * ASan catches a write past what the engine asked for. */
static bool
fuzz_ring_alloc__(void *aux, struct vhost_pkt *pkt, uint32_t len)
{
    pkt->data = malloc(len ? len : 1);
    pkt->size = len;
    pkt->handle = pkt->data;
    return pkt->data != NULL;
}

static void
fuzz_ring_free__(void *aux, struct vhost_pkt *pkt)
{
    free(pkt->handle);
    pkt->data = NULL;
    pkt->handle = NULL;
}

static const struct vhost_pkt_alloc fuzz_ring_allocator = {
    .alloc = fuzz_ring_alloc__,
    .free = fuzz_ring_free__,
};

static void
fuzz_ring_check_drops__(const struct vhost_queue_stats *before,
                        const struct vhost_queue_stats *after)
{
    for (int i = 0; i < VHOST_N_DROP_REASONS; i++) {
        FUZZ_CHECK(after->drops[i] >= before->drops[i]);
    }
    FUZZ_CHECK(after->packets >= before->packets);
}

/* The device's own used index: the one in guest memory starts wherever
 * the input put it, and a guest buffer may alias it. */
static uint16_t
fuzz_ring_used_idx__(const struct virtq *vq)
{
    return vq->packed ? 0 : vq->last_used_idx;
}

/* Dequeues up to 'n' packets from 'vq' into 'pkts' (zeroed by the
 * caller) and checks the contract (ovs-vhost/vhost.h, "Data path"): at
 * most 'n' and VHOST_MAX_BURST packets, each in a buffer that holds it,
 * checksum offsets inside the packet, at most VHOST_MAX_BURST chains
 * consumed, nothing at all from a broken queue.  The caller frees the
 * buffers with fuzz_ring_free_pkts(). */
unsigned int
fuzz_ring_dequeue(struct virtq *vq, struct virtq_ctx *ctx,
                  struct vhost_pkt *pkts, unsigned int n)
{
    struct vhost_queue_stats before = vq->stats;
    uint16_t used0 = fuzz_ring_used_idx__(vq);
    bool broken = vq->broken;

    FUZZ_CHECK(virtq_trylock(vq));
    unsigned int got = vq->dequeue(vq, ctx, pkts, n, &fuzz_ring_allocator);
    virtq_unlock(vq);

    FUZZ_CHECK(got <= n && got <= VHOST_MAX_BURST);
    FUZZ_CHECK(!broken || !got);
    if (!vq->packed) {
        FUZZ_CHECK((uint16_t) (fuzz_ring_used_idx__(vq) - used0)
                   <= VHOST_MAX_BURST);
    }
    for (unsigned int i = 0; i < got; i++) {
        const struct vhost_pkt *p = &pkts[i];

        FUZZ_CHECK(p->data);
        FUZZ_CHECK(p->len <= p->size);
        FUZZ_CHECK(p->len <= VIRTQ_MAX_PKT_LEN);
        FUZZ_CHECK(!(p->ol.flags & VHOST_OL_NEEDS_CSUM)
                   || (uint32_t) p->ol.csum_start + p->ol.csum_offset + 2
                      <= p->len);
    }
    fuzz_ring_check_drops__(&before, &vq->stats);
    FUZZ_CHECK(vq->stats.packets - before.packets <= got);
    if (fuzz_ring_verbose__()) {
        fprintf(stderr, "%s dequeue %u: got %u\n",
                vq->packed ? "packed" : "split", n, got);
    }
    return got;
}

void
fuzz_ring_free_pkts(struct vhost_pkt *pkts, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        free(pkts[i].handle);
        pkts[i].data = pkts[i].handle = NULL;
    }
}

/* Enqueues 'n' packets of assorted sizes, picked by 'arg', and checks
 * that at most 'n' were taken and the work done was bounded. */
unsigned int
fuzz_ring_enqueue(struct virtq *vq, struct virtq_ctx *ctx, unsigned int n,
                  unsigned int arg)
{
    static const uint32_t lens[] = {
        0, 1, 14, 60, 64, 1514, 1518, 4000, 9018, VIRTQ_MAX_PKT_LEN,
    };
    static uint8_t payload[VIRTQ_MAX_PKT_LEN];
    struct vhost_pkt pkts[8];
    struct vhost_queue_stats before = vq->stats;
    uint16_t used0 = fuzz_ring_used_idx__(vq);
    bool broken = vq->broken;

    n = MIN(n, ARRAY_SIZE(pkts));
    for (unsigned int i = 0; i < n; i++) {
        struct vhost_pkt *p = &pkts[i];

        memset(p, 0, sizeof *p);
        p->len = lens[(arg + i) % ARRAY_SIZE(lens)];
        p->data = payload;
        p->size = p->len;
        if (arg & 1) {
            p->ol.flags = VHOST_OL_NEEDS_CSUM;
            p->ol.csum_start = 34;
            p->ol.csum_offset = 16;
        }
        if (arg & 2) {
            p->ol.gso_type = VHOST_GSO_TCPV4;
            p->ol.gso_size = 1448;
            p->ol.hdr_len = 54;
        }
    }
    memset(payload, arg, 64);

    FUZZ_CHECK(virtq_trylock(vq));
    unsigned int done = vq->enqueue(vq, ctx, pkts, n);
    virtq_unlock(vq);

    FUZZ_CHECK(done <= n);
    FUZZ_CHECK(!broken || !done);
    if (!vq->packed) {
        /* With mergeable buffers one packet may take up to
         * VIRTQ_MAX_CHAINS_PER_PKT chains; the burst as a whole is
         * bounded by the shadow used ring. */
        FUZZ_CHECK((uint16_t) (fuzz_ring_used_idx__(vq) - used0)
                   <= 5 * VHOST_MAX_BURST);
    }
    fuzz_ring_check_drops__(&before, &vq->stats);
    if (fuzz_ring_verbose__()) {
        fprintf(stderr, "%s enqueue %u: done %u\n",
                vq->packed ? "packed" : "split", n, done);
    }
    return done;
}

/* Operation 2 on a packed ring: the driver flags 'k' more descriptors
 * available from its position, keeping whatever else the input wrote
 * into them. */
static void
fuzz_ring_packed_avail__(struct fuzz_ring *fr, unsigned int k)
{
    struct vring_packed_desc *ring = fr->vq.desc;
    unsigned int size = fr->vq.size;

    for (unsigned int i = 0; i < k; i++) {
        uint16_t flags = ring[fr->drv_pos].flags;

        flags &= ~(VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED);
        flags |= fr->drv_wrap ? VRING_PACKED_DESC_F_AVAIL
                              : VRING_PACKED_DESC_F_USED;
        __atomic_store_n(&ring[fr->drv_pos].flags, flags, __ATOMIC_RELEASE);
        if (++fr->drv_pos >= size) {
            fr->drv_pos = 0;
            fr->drv_wrap = !fr->drv_wrap;
        }
    }
}

void
fuzz_ring_run(struct fuzz_ring *fr, struct fuzz_input *in)
{
    uint8_t ops[16];
    struct virtq_ctx ctx = { .mem = fr->fm.gm };

    fuzz_input_bytes(in, ops, sizeof ops);
    fuzz_mem_fill(&fr->fm, FUZZ_RING_BUF_GPA, in);

    for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
        unsigned int a = ops[i] >> 2;

        ctx.log = NULL;
        if (fr->vq.log_all) {
            fr->log = (struct vhost_dirty_log) {
                .base = fr->log_buf, .size = fr->log_size,
            };
            ctx.log = &fr->log;
        }
        switch (ops[i] & 3) {
        case 0: {
            struct vhost_pkt pkts[VHOST_MAX_BURST];

            memset(pkts, 0, sizeof pkts);
            unsigned int got = fuzz_ring_dequeue(&fr->vq, &ctx, pkts, a + 1);
            fuzz_ring_free_pkts(pkts, VHOST_MAX_BURST);
            (void) got;
            break;
        }
        case 1:
            fuzz_ring_enqueue(&fr->vq, &ctx, a % 8 + 1, a);
            break;
        case 2:
            if (fr->vq.packed) {
                fuzz_ring_packed_avail__(fr, a % 8 + 1);
            } else {
                struct vring_avail *avail = fr->vq.avail;
                __atomic_store_n(&avail->idx, (uint16_t) (avail->idx + a),
                                 __ATOMIC_RELEASE);
            }
            break;
        case 3:
            fr->features ^= FEATURE_BIT(VHOST_F_LOG_ALL);
            virtq_configure(&fr->vq, fr->features, fr->fm.gm, NULL);
            break;
        }
    }
}

void
fuzz_ring_destroy(struct fuzz_ring *fr)
{
    /* The packed ring's buffer-id table (virtq_reset() would also close
     * the shared call fd). */
    free(fr->vq.id_gen);
    fr->vq.id_gen = NULL;
    free(fr->log_buf);
    fuzz_mem_destroy(&fr->fm);
}
