/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ring fuzzers' harness: see fuzz-ring.h.
 */

#include <config.h>
#include "fuzz-ring.h"

#include <inttypes.h>
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
#include "virtq-iommu.h"
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
    f |= bits & FUZZ_RING_F_IOMMU
         ? FEATURE_BIT(VIRTIO_F_ACCESS_PLATFORM) : 0;
    f |= packed ? FEATURE_BIT(VIRTIO_F_RING_PACKED) : 0;
    if (bits & FUZZ_RING_F_NO_HOST_OL) {
        f &= ~(FEATURE_BIT(VIRTIO_NET_F_CSUM)
               | FEATURE_BIT(VIRTIO_NET_F_HOST_TSO4));
    }
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
 * and SET_VRING_ENABLE.  With 'iotlb' (and VIRTIO_F_ACCESS_PLATFORM in
 * 'features') the three addresses are I/O virtual addresses, which the
 * engine gets as they are and translates through 'iotlb'.  Returns true
 * if the queue may run, as the handlers would have let it. */
bool
fuzz_ring_vq_init(struct virtq *vq, const struct fuzz_mem *fm,
                  uint64_t features, unsigned int size, uint32_t base,
                  uint64_t desc, uint64_t avail, uint64_t used,
                  const struct vhost_iotlb *iotlb)
{
    virtq_init(vq, 1);
    virtq_configure(vq, features, fm->gm, iotlb);
    vq->size = size;
    virtq_set_base(vq, base);
    vq->desc_uva = iotlb ? desc : fuzz_mem_uva(fm, desc);
    vq->avail_uva = iotlb ? avail : fuzz_mem_uva(fm, avail);
    vq->used_uva = iotlb ? used : fuzz_mem_uva(fm, used);
    vq->log_gpa = used;     /* With an IOTLB, virtq_map() translates it. */
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

/* IOMMU: the IOTLB (see fuzz-ring.h, "IOMMU"). */

/* Whether vhost_iotlb_apply() must take 'msg': vhost-iotlb.h, "Trust
 * model". */
static bool
fuzz_ring_iotlb_msg_ok__(const struct vhost_iotlb_msg *msg)
{
    if (msg->type == VHOST_IOTLB_INVALIDATE) {
        return true;
    }
    return msg->type == VHOST_IOTLB_UPDATE && msg->size
           && range_fits(msg->iova, msg->size)
           && range_fits(msg->uaddr, msg->size)
           && msg->perm && !(msg->perm & ~VHOST_ACCESS_RW);
}

/* Reads one pool entry from 'in' into 'msg', an UPDATE. */
static void
fuzz_ring_read_pool__(const struct fuzz_mem *fm, struct fuzz_input *in,
                      struct vhost_iotlb_msg *msg)
{
    int32_t iova = (int32_t) fuzz_input_u32(in);
    uint32_t size = fuzz_input_u32(in);
    unsigned int target = fuzz_input_u8(in) & 15;
    uint32_t off = fuzz_input_u32(in);
    uint8_t perm = fuzz_input_u8(in);

    memset(msg, 0, sizeof *msg);
    msg->type = VHOST_IOTLB_UPDATE;
    msg->iova = perm & 4 ? UINT64_MAX - (uint32_t) iova
                         : FUZZ_RING_IOVA_OFF + (uint64_t) (int64_t) iova;
    msg->size = size;
    msg->uaddr = (target < fm->n ? fm->r[target].uva
                                   + (uint64_t) (int64_t) (int32_t) off
                  : target == 15 ? UINT64_MAX - off
                  : off);
    msg->perm = (perm & VHOST_ACCESS_RW) | (perm & 8 ? 4 : 0);
}

/* The region of 'fm' that holds guest physical address 'gpa', or NULL. */
static const struct fuzz_mem_region *
fuzz_ring_region_gpa__(const struct fuzz_mem *fm, uint64_t gpa)
{
    for (size_t i = 0; i < fm->n; i++) {
        if (gpa - fm->r[i].gpa < fm->r[i].size) {
            return &fm->r[i];
        }
    }
    return NULL;
}

/* The region of 'fm' that holds frontend virtual address 'uva', or NULL. */
static const struct fuzz_mem_region *
fuzz_ring_region_uva__(const struct fuzz_mem *fm, uint64_t uva)
{
    for (size_t i = 0; i < fm->n; i++) {
        if (uva - fm->r[i].uva < fm->r[i].size) {
            return &fm->r[i];
        }
    }
    return NULL;
}

/* The bytes of each ring part, as virtq_map() counts them. */
static void
fuzz_ring_part_sizes__(bool packed, unsigned int size, uint64_t *desc,
                       uint64_t *avail, uint64_t *used)
{
    *desc = 16 * size;
    *avail = packed ? 4 : 6 + 2 * size;
    *used = packed ? 4 : 6 + 8 * size;
}

/* An UPDATE that maps 'size' bytes of guest physical memory from 'gpa'
 * (in one region of 'fm') at IOVA 'gpa' + FUZZ_RING_IOVA_OFF. */
static struct vhost_iotlb_msg
fuzz_ring_linear__(const struct fuzz_mem *fm, uint64_t gpa, uint64_t size,
                   uint8_t perm)
{
    const struct fuzz_mem_region *r = fuzz_ring_region_gpa__(fm, gpa);

    return (struct vhost_iotlb_msg) {
        .iova = gpa + FUZZ_RING_IOVA_OFF, .size = size,
        .uaddr = r->uva + (gpa - r->gpa), .perm = perm,
        .type = VHOST_IOTLB_UPDATE,
    };
}

/* Reads the IOTLB part of the input (fuzz-ring.h, "IOMMU") and fills
 * 'fr''s IOTLB for a ring of 'size' entries: the linear map, the first
 * pool entries, then the rings' entries.  Its capacity is the most
 * entries that takes at any point (so that setup evicts nothing and the
 * rings translate) plus what the input says. */
static void
fuzz_ring_iommu_setup__(struct fuzz_ring *fr, bool packed, unsigned int size,
                        struct fuzz_input *in)
{
    struct vhost_iotlb_msg msgs[FUZZ_MEM_MAX_REGIONS + FUZZ_RING_IOTLB_POOL
                                + ARRAY_SIZE(fr->ring_msgs)];
    uint8_t flags = fuzz_input_u8(in);
    size_t n = 0;

    fr->iommu = true;
    for (size_t i = 0; i < FUZZ_RING_IOTLB_POOL; i++) {
        fuzz_ring_read_pool__(&fr->fm, in, &fr->pool[i]);
    }
    if (flags & FUZZ_RING_IOMMU_LINEAR) {
        for (size_t i = 0; i < fr->fm.n; i++) {
            const struct fuzz_mem_region *r = &fr->fm.r[i];
            uint64_t skip = r->gpa < FUZZ_RING_BUF_GPA
                            ? MIN(FUZZ_RING_BUF_GPA - r->gpa, r->size) : 0;

            if (skip < r->size) {
                msgs[n++] = fuzz_ring_linear__(&fr->fm, r->gpa + skip,
                                               r->size - skip,
                                               VHOST_ACCESS_RW);
            }
        }
    }
    for (size_t i = 0; i < MIN(flags & 15, FUZZ_RING_IOTLB_POOL); i++) {
        msgs[n++] = fr->pool[i];
    }

    /* §2.8.5: used descriptors overwrite available ones: a packed
     * ring's descriptors are written too. */
    uint64_t desc_len, avail_len, used_len;
    fuzz_ring_part_sizes__(packed, size, &desc_len, &avail_len, &used_len);
    uint8_t desc_perm = packed ? VHOST_ACCESS_RW : VHOST_ACCESS_RO;
    if (flags & FUZZ_RING_IOMMU_SPLIT_DESC && desc_len > 1) {
        uint64_t half = desc_len / 2;

        fr->ring_msgs[fr->n_ring_msgs++]
            = fuzz_ring_linear__(&fr->fm, FUZZ_RING_DESC_GPA, half,
                                 desc_perm);
        fr->ring_msgs[fr->n_ring_msgs++]
            = fuzz_ring_linear__(&fr->fm, FUZZ_RING_DESC_GPA + half,
                                 desc_len - half, desc_perm);
    } else {
        fr->ring_msgs[fr->n_ring_msgs++]
            = fuzz_ring_linear__(&fr->fm, FUZZ_RING_DESC_GPA, desc_len,
                                 desc_perm);
    }
    fr->ring_msgs[fr->n_ring_msgs++]
        = fuzz_ring_linear__(&fr->fm, FUZZ_RING_AVAIL_GPA, avail_len,
                             VHOST_ACCESS_RO);
    fr->ring_msgs[fr->n_ring_msgs++]
        = fuzz_ring_linear__(&fr->fm, FUZZ_RING_USED_GPA, used_len,
                             VHOST_ACCESS_WO);
    for (size_t i = 0; i < fr->n_ring_msgs; i++) {
        msgs[n++] = fr->ring_msgs[i];
    }

    struct vhost_iotlb tmp;
    unsigned int peak = 0;
    vhost_iotlb_init(&tmp, VHOST_IOTLB_MAX_ENTRIES);
    for (size_t i = 0; i < n; i++) {
        vhost_iotlb_apply(&tmp, &msgs[i]);
        peak = MAX(peak, tmp.n);
    }
    vhost_iotlb_destroy(&tmp);

    static const unsigned int extra[4] = { VHOST_IOTLB_MAX_ENTRIES, 0, 1, 3 };
    vhost_iotlb_init(&fr->iotlb, peak + extra[flags >> 6]);
    for (size_t i = 0; i < n; i++) {
        int error = vhost_iotlb_apply(&fr->iotlb, &msgs[i]);
        FUZZ_CHECK(!error == fuzz_ring_iotlb_msg_ok__(&msgs[i]));
    }
    FUZZ_CHECK(!fr->iotlb.n_evicted);
    fr->now_ms = 1000000;
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
    if (bits & FUZZ_RING_F_IOMMU) {
        fuzz_ring_iommu_setup__(fr, packed, size, in);
    }

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

    fr->drv_desc = fuzz_mem_va(&fr->fm, FUZZ_RING_DESC_GPA, 16 * size);
    fr->drv_avail = fuzz_mem_va(&fr->fm, FUZZ_RING_AVAIL_GPA, 4);
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
    uint64_t off = fr->iommu ? FUZZ_RING_IOVA_OFF : 0;
    return fuzz_ring_vq_init(&fr->vq, &fr->fm, fr->features, size, base,
                             FUZZ_RING_DESC_GPA + off,
                             FUZZ_RING_AVAIL_GPA + off,
                             FUZZ_RING_USED_GPA + off,
                             fr->iommu ? &fr->iotlb : NULL);
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

/* The device's positions in 'vq' before a burst. */
struct fuzz_ring_pos {
    uint16_t avail, used;
    bool avail_wrap, used_wrap;
};

static struct fuzz_ring_pos
fuzz_ring_pos__(const struct virtq *vq)
{
    return (struct fuzz_ring_pos) {
        .avail = vq->last_avail_idx, .used = vq->last_used_idx,
        .avail_wrap = vq->avail_wrap_counter,
        .used_wrap = vq->used_wrap_counter,
    };
}

/* Checks what holds after every burst of 'vq', which started at 'pos'
 * with counters 'before' and 'ctx': every chain it took it returned
 * before it ended (vhost.h, "Data path"), so the used position moved
 * exactly as far as the avail one; and a queue without an IOTLB neither
 * missed nor hit nor was denied a translation. */
static void
fuzz_ring_check_burst__(const struct virtq *vq, const struct virtq_ctx *ctx,
                        const struct fuzz_ring_pos *pos,
                        const struct vhost_queue_stats *before)
{
    if (vq->packed) {
        if (pos->avail == pos->used && pos->avail_wrap == pos->used_wrap) {
            FUZZ_CHECK(vq->last_used_idx == vq->last_avail_idx);
            FUZZ_CHECK(vq->used_wrap_counter == vq->avail_wrap_counter);
        }
    } else {
        FUZZ_CHECK((uint16_t) (vq->last_used_idx - pos->used)
                   == (uint16_t) (vq->last_avail_idx - pos->avail));
    }
    if (!vq->iotlb) {
        FUZZ_CHECK(!ctx->miss);
        FUZZ_CHECK(vq->stats.iotlb_hits == before->iotlb_hits);
        FUZZ_CHECK(vq->stats.iotlb_denied == before->iotlb_denied);
    }
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
    struct fuzz_ring_pos pos = fuzz_ring_pos__(vq);
    uint16_t used0 = fuzz_ring_used_idx__(vq);
    bool broken = vq->broken;

    FUZZ_CHECK(virtq_trylock(vq));
    unsigned int got = vq->dequeue(vq, ctx, pkts, n, &fuzz_ring_allocator);
    virtq_unlock(vq);

    fuzz_ring_check_burst__(vq, ctx, &pos, &before);

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
    struct fuzz_ring_pos pos = fuzz_ring_pos__(vq);
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

    fuzz_ring_check_burst__(vq, ctx, &pos, &before);

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
    struct vring_packed_desc *ring = fr->drv_desc;
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

/* IOMMU: the control plane's side. */

static void
fuzz_ring_print_msg__(const struct vhost_iotlb_msg *msg, int error)
{
    if (fuzz_ring_verbose__()) {
        fprintf(stderr, "iotlb: %s iova %#"PRIx64" size %#"PRIx64" uaddr %#"
                PRIx64" perm %u: %s\n",
                msg->type == VHOST_IOTLB_UPDATE ? "update" : "invalidate",
                msg->iova, msg->size, msg->uaddr, msg->perm,
                error ? "refused" : "applied");
    }
}

/* Checks that the ring of 'fr''s queue, which runs, is where its IOTLB
 * and memory table now put it: no burst uses a ring translation that an
 * invalidation removed (vhost-iotlb.h, "Thread-safety"). */
static void
fuzz_ring_check_ring_map__(const struct fuzz_ring *fr)
{
    const struct virtq *vq = &fr->vq;
    const struct {
        uint64_t iova;
        const void *hva;
        uint8_t perm;
    } parts[3] = {
        { vq->desc_uva, vq->desc,
          vq->packed ? VHOST_ACCESS_RW : VHOST_ACCESS_RO },
        { vq->avail_uva, vq->avail, VHOST_ACCESS_RO },
        { vq->used_uva, vq->used, VHOST_ACCESS_WO },
    };

    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        uint64_t uva, n;

        FUZZ_CHECK(vhost_iotlb_translate(&fr->iotlb, parts[i].iova,
                                         parts[i].perm, &uva, &n)
                   == VHOST_IOTLB_HIT);
        const struct guest_mem_region *r = guest_mem_find_uva(fr->fm.gm,
                                                              uva);
        FUZZ_CHECK(r && r->hva + (uva - r->uva) == parts[i].hva);
    }
}

/* Notes, as virtq_iommu_note_asked() does for the queue, that the
 * frontend was just asked for 'iova' for 'perm'. */
static void
fuzz_ring_note_asked__(struct fuzz_ring *fr, uint64_t iova, uint8_t perm)
{
    fr->asked = true;
    fr->asked_iova = iova;
    fr->asked_perm = perm;
    fr->asked_ms = fr->now_ms;
}

/* Returns the model's entry for the page of 'iova' asked for ahead for
 * 'perm', live and less than VIRTQ_IOMMU_MISS_RETRY_MS ago, or -1. */
static int
fuzz_ring_ahead_find__(const struct fuzz_ring *fr, uint64_t iova,
                       uint8_t perm)
{
    for (unsigned int i = 0; i < fr->n_ahead; i++) {
        if (fr->ahead[i].live && fr->ahead[i].perm == perm
            && fr->ahead[i].iova / 4096 == iova / 4096
            && fr->now_ms - fr->ahead[i].ms < VIRTQ_IOMMU_MISS_RETRY_MS) {
            return i;
        }
    }
    return -1;
}

/* An update 'msg' answers the pages asked for ahead that it covers, with
 * the access asked for. */
static void
fuzz_ring_ahead_answered__(struct fuzz_ring *fr,
                           const struct vhost_iotlb_msg *msg)
{
    for (unsigned int i = 0; i < fr->n_ahead; i++) {
        if (fr->ahead[i].iova - msg->iova < msg->size
            && (msg->perm & fr->ahead[i].perm) == fr->ahead[i].perm) {
            fr->ahead[i].live = false;
        }
    }
}

/* vhost_datapath_ask_ahead__() after a burst 'ctx' ('write' for an
 * enqueue) of 'fr''s queue that missed: checks what
 * virtq_iommu_look_ahead() asks for (fuzz-ring.h, "Checks"), and
 * remembers it, as the queue does. */
static void
fuzz_ring_ask_ahead__(struct fuzz_ring *fr, const struct virtq_ctx *ctx,
                      bool write)
{
    struct virtq *vq = &fr->vq;
    struct virtq_iommu_ahead a;

    FUZZ_CHECK(virtq_trylock(vq));
    virtq_iommu_look_ahead(vq, ctx, write, fr->now_ms, &a);
    FUZZ_CHECK(a.n <= VIRTQ_IOMMU_AHEAD_PAGES);
    FUZZ_CHECK(a.work <= VIRTQ_IOMMU_AHEAD_WORK);
    for (unsigned int i = 0; i < a.n; i++) {
        uint64_t uva, len;

        if (vq->desc) {
            FUZZ_CHECK(a.perm[i] == (write ? VHOST_ACCESS_WO
                                           : VHOST_ACCESS_RO)
                       || a.perm[i] == VHOST_ACCESS_RO);
        } else {
            /* The ring missed: pages of its parts, with their access. */
            struct virtq_ring_part parts[3];
            bool in_part = false;

            virtq_ring_parts(vq, parts);
            for (int p = 0; p < 3; p++) {
                in_part |= (a.iova[i] >= parts[p].iova
                            && a.iova[i] - parts[p].iova < parts[p].len
                            && a.perm[i] == parts[p].perm);
            }
            FUZZ_CHECK(in_part);
        }
        FUZZ_CHECK(vhost_iotlb_translate(&fr->iotlb, a.iova[i], a.perm[i],
                                         &uva, &len)
                   == VHOST_IOTLB_NOT_FOUND);
        FUZZ_CHECK(a.iova[i] / 4096 != ctx->miss_iova / 4096
                   || a.perm[i] != ctx->miss_perm);
        for (unsigned int j = 0; j < i; j++) {
            FUZZ_CHECK(a.iova[i] / 4096 != a.iova[j] / 4096
                       || a.perm[i] != a.perm[j]);
        }
        FUZZ_CHECK(fuzz_ring_ahead_find__(fr, a.iova[i], a.perm[i]) < 0);
    }
    for (unsigned int i = 0; i < a.n; i++) {
        virtq_iommu_note_ahead(vq, a.iova[i], a.perm[i], fr->now_ms);
        vq->stats.iotlb_misses_ahead++;
        if (fr->n_ahead == VIRTQ_IOMMU_ASKED_MAX) {
            memmove(fr->ahead, fr->ahead + 1,
                    (VIRTQ_IOMMU_ASKED_MAX - 1) * sizeof fr->ahead[0]);
            fr->n_ahead--;
        }
        fr->ahead[fr->n_ahead].live = true;
        fr->ahead[fr->n_ahead].perm = a.perm[i];
        fr->ahead[fr->n_ahead].iova = a.iova[i];
        fr->ahead[fr->n_ahead].ms = fr->now_ms;
        fr->n_ahead++;
        if (fuzz_ring_verbose__()) {
            fprintf(stderr, "  ahead: iova %#"PRIx64" perm %u\n", a.iova[i],
                    a.perm[i]);
        }
    }
    virtq_unlock(vq);
}

/* vhost_datapath_miss__() for a burst of 'fr''s queue that missed 'iova'
 * for 'perm': checks that virtq_iommu_should_ask() counts the wait and
 * asks unless the same IOVA and access were asked for less than
 * VIRTQ_IOMMU_MISS_RETRY_MS ago with no update since, or were asked for
 * ahead as recently and not answered (then noted as asked when that
 * was).  For a burst ('ctx' not NULL; 'write' for an enqueue), then asks
 * ahead.  Returns whether it asked. */
static bool
fuzz_ring_ask__(struct fuzz_ring *fr, uint64_t iova, uint8_t perm,
                const struct virtq_ctx *burst, bool write)
{
    struct virtq *vq = &fr->vq;
    struct virtq_ctx ctx = {
        .miss = true, .miss_iova = iova, .miss_perm = perm,
    };
    uint64_t waits = vq->stats.iotlb_waits;
    bool again = (fr->asked && fr->asked_iova == iova
                  && fr->asked_perm == perm
                  && fr->now_ms - fr->asked_ms < VIRTQ_IOMMU_MISS_RETRY_MS);
    int ahead = again ? -1 : fuzz_ring_ahead_find__(fr, iova, perm);

    FUZZ_CHECK(virtq_trylock(vq));
    bool ask = virtq_iommu_should_ask(vq, &ctx, fr->now_ms);
    virtq_unlock(vq);
    FUZZ_CHECK(ask == (!again && ahead < 0));
    FUZZ_CHECK(vq->stats.iotlb_waits == waits + 1);
    if (ask) {
        vq->stats.iotlb_misses++;
        fuzz_ring_note_asked__(fr, iova, perm);
    } else if (ahead >= 0) {
        long long int now_ms = fr->now_ms;

        fr->now_ms = fr->ahead[ahead].ms;
        fuzz_ring_note_asked__(fr, iova, perm);
        fr->now_ms = now_ms;
        FUZZ_CHECK(vq->miss_sent && vq->miss_sent_ms == fr->asked_ms);
    }
    if (fuzz_ring_verbose__()) {
        fprintf(stderr, "miss at iova %#"PRIx64" perm %u%s\n", iova, perm,
                ask ? ", asked" : ahead >= 0 ? ", asked ahead" : "");
    }
    if (burst) {
        fuzz_ring_ask_ahead__(fr, burst, write);
    }
    return ask;
}

/* Carries out IOTLB message 'msg' from the frontend as the control plane
 * does: vhost_dev_iotlb_msg() under the queue's lock, then
 * vhost_dev_update_ready(), which asks for a ring's miss (here, the
 * frontend hears it) and lets a queue run once its ring translates.  A
 * ring that lost its translation to an invalidation stays ready,
 * unmapped ('iotlb_lost'): its bursts map it again. */
static void
fuzz_ring_iotlb_msg__(struct fuzz_ring *fr, const struct vhost_iotlb_msg *msg)
{
    struct virtq *vq = &fr->vq;

    FUZZ_CHECK(virtq_trylock(vq));
    int error = vhost_iotlb_apply(&fr->iotlb, msg);
    FUZZ_CHECK(!error == fuzz_ring_iotlb_msg_ok__(msg));
    if (!error && vq->iotlb) {
        if (msg->type == VHOST_IOTLB_UPDATE) {
            /* As vhost_dev_iotlb_msg(): only an update that covers the
             * IOVA asked for, with the access asked for, answers it; and
             * the pages asked for ahead that it covers. */
            virtq_iommu_answered(vq, msg);
            if (fr->asked && fr->asked_iova - msg->iova < msg->size
                && (msg->perm & fr->asked_perm) == fr->asked_perm) {
                fr->asked = false;
            }
            fuzz_ring_ahead_answered__(fr, msg);
        }
        if (vq->ring_miss || vq->iotlb_lost
            || msg->type == VHOST_IOTLB_INVALIDATE) {
            virtq_iommu_remap(vq, fr->fm.gm);
            vq->ready = vq->ready && virtq_can_run(vq);
        }
    }
    /* As vhost_dev_ask_rings__(): not a part of a ring asked for ahead
     * after an invalidation took the whole ring. */
    if (vq->ring_miss && !vq->ring_miss_asked
        && fuzz_ring_ahead_find__(fr, vq->ring_miss_iova,
                                  vq->ring_miss_perm) < 0) {
        FUZZ_CHECK(!virtq_iommu_asked_ahead(vq, vq->ring_miss_iova,
                                            vq->ring_miss_perm, fr->now_ms));
        vq->ring_miss_asked = true;
        virtq_iommu_note_asked(vq, vq->ring_miss_iova, vq->ring_miss_perm,
                               fr->now_ms);
        fuzz_ring_note_asked__(fr, vq->ring_miss_iova, vq->ring_miss_perm);
    }
    vq->ready = virtq_can_run(vq);
    virtq_unlock(vq);

    fuzz_ring_print_msg__(msg, error);
    FUZZ_CHECK(!vq->iotlb_lost || (vq->ring_miss && !vq->desc));
    if (vq->ready && vq->desc && !error
        && msg->type == VHOST_IOTLB_INVALIDATE) {
        fuzz_ring_check_ring_map__(fr);
    }
}

/* vhost_datapath_get__() for 'fr''s queue, ready: whether a burst may
 * run.  A ring that lost its translation is mapped again, or its miss
 * asked for (once a page) and the burst skipped. */
static bool
fuzz_ring_can_burst__(struct fuzz_ring *fr)
{
    struct virtq *vq = &fr->vq;

    if (vq->desc) {
        return true;
    }
    /* Ready and unmapped: only a ring behind an IOMMU that lost its
     * translation (virtq_can_run()). */
    FUZZ_CHECK(vq->iotlb && vq->iotlb_lost);
    FUZZ_CHECK(virtq_trylock(vq));
    bool mapped = virtq_iommu_remap(vq, fr->fm.gm);
    virtq_unlock(vq);
    if (fuzz_ring_verbose__()) {
        fprintf(stderr, "ring lost its translation: %s\n",
                mapped ? "mapped again" : "still missing");
    }
    if (mapped) {
        FUZZ_CHECK(!vq->iotlb_lost);
        fuzz_ring_check_ring_map__(fr);
        return true;
    }
    if (vq->ring_miss) {
        /* As vhost_datapath_remap__(): the look-ahead asks for the ring's
         * other parts. */
        struct virtq_ctx ring = {
            .mem = fr->fm.gm, .iotlb = &fr->iotlb, .miss = true,
            .miss_iova = vq->ring_miss_iova, .miss_perm = vq->ring_miss_perm,
        };
        fuzz_ring_ask__(fr, vq->ring_miss_iova, vq->ring_miss_perm, &ring,
                        false);
    }
    return false;
}

/* The frontend answers the miss pending: the ring's if it waits for one,
 * else the last burst's.  An UPDATE of the missed page, clipped to the
 * region the linear map would put it in, or to nowhere if it is in
 * none; with the access missed or, with 'rw', both. */
static void
fuzz_ring_answer_miss__(struct fuzz_ring *fr, bool rw)
{
    uint64_t iova;
    uint8_t perm;

    if (fr->vq.ring_miss) {
        iova = fr->vq.ring_miss_iova;
        perm = fr->vq.ring_miss_perm;
    } else if (fr->miss) {
        iova = fr->miss_iova;
        perm = fr->miss_perm;
        fr->miss = false;
    } else {
        return;
    }

    uint64_t first = iova & ~(uint64_t) 4095, last = first + 4095;
    uint64_t gpa = iova - FUZZ_RING_IOVA_OFF;
    const struct fuzz_mem_region *r = fuzz_ring_region_gpa__(&fr->fm, gpa);
    uint64_t uaddr = first - FUZZ_RING_IOVA_OFF;    /* In no region. */
    if (r) {
        uint64_t r_first = r->gpa + FUZZ_RING_IOVA_OFF;
        uint64_t r_last = r_first + (r->size - 1);

        if (r_first <= r_last) {
            first = MAX(first, r_first);
            last = MIN(last, r_last);
        } else {
            first = last = iova;        /* The region wraps in IOVAs. */
        }
        uaddr = r->uva + (first - r_first);
    }

    struct vhost_iotlb_msg msg = {
        .iova = first, .size = last - first + 1, .uaddr = uaddr,
        .perm = rw ? VHOST_ACCESS_RW : perm, .type = VHOST_IOTLB_UPDATE,
    };
    fuzz_ring_iotlb_msg__(fr, &msg);
}

/* Operation 3 with an IOTLB, 'a' its argument (fuzz-ring.h, "IOMMU"). */
static void
fuzz_ring_iotlb_op__(struct fuzz_ring *fr, unsigned int a)
{
    unsigned int x = a >> 2;
    struct vhost_iotlb_msg msg = { .type = VHOST_IOTLB_INVALIDATE };

    switch (a & 3) {
    case 1:
        fuzz_ring_iotlb_msg__(fr, &fr->pool[x % FUZZ_RING_IOTLB_POOL]);
        return;
    case 2:
        if (x < FUZZ_RING_IOTLB_POOL) {
            msg.iova = fr->pool[x].iova;
            msg.size = fr->pool[x].size;
        } else if (x < 12) {
            const struct vhost_iotlb_msg *ring
                = &fr->ring_msgs[(x - 8) % fr->n_ring_msgs];
            msg.iova = ring->iova;
            msg.size = ring->size;
        } else if (x < 14) {
            msg.iova = fr->miss_iova & ~(uint64_t) 4095;
            msg.size = 4096;
        } else if (x == 14) {
            msg.iova = 0;
            msg.size = UINT64_MAX;
        } else {
            msg.iova = FUZZ_RING_IOVA_OFF;
            msg.size = UINT64_MAX;
        }
        fuzz_ring_iotlb_msg__(fr, &msg);
        return;
    case 3:
        fuzz_ring_answer_miss__(fr, x & 1);
        return;
    }
}

/* IOMMU: the checks after a burst. */

/* What a burst found in guest memory, taken before it: the ring parts
 * and the device's counters and positions. */
struct fuzz_ring_snap {
    struct vhost_queue_stats stats;
    uint16_t last_avail;
    uint16_t avail_idx;             /* Split: the driver's avail->idx. */
    uint64_t desc_gpa, used_gpa;
    uint64_t desc_len, avail_len, used_len;
    uint8_t desc[16 * FUZZ_RING_MAX_SIZE];
    uint8_t avail[6 + 2 * FUZZ_RING_MAX_SIZE];
    uint8_t used[6 + 8 * FUZZ_RING_MAX_SIZE];
};

static void
fuzz_ring_snap__(const struct virtq *vq, struct fuzz_ring_snap *s)
{
    s->stats = vq->stats;
    s->last_avail = vq->last_avail_idx;
    fuzz_ring_part_sizes__(vq->packed, vq->size, &s->desc_len, &s->avail_len,
                           &s->used_len);
    s->desc_gpa = vq->desc_gpa;
    s->used_gpa = vq->used_gpa;
    memcpy(s->desc, vq->desc, s->desc_len);
    memcpy(s->avail, vq->avail, s->avail_len);
    memcpy(s->used, vq->used, s->used_len);
    s->avail_idx = vq->packed ? 0 : __atomic_load_n(
        &((const struct vring_avail *) vq->avail)->idx, __ATOMIC_ACQUIRE);
}

/* Reads the 'len' bytes at I/O virtual address 'iova' through 'fr''s
 * IOTLB and fuzz-mem's own view of the regions, as the burst found them:
 * the ring parts it wrote come from snapshot 's'.  Returns false if a
 * byte does not translate. */
static bool
fuzz_ring_iova_read__(const struct fuzz_ring *fr,
                      const struct fuzz_ring_snap *s, uint64_t iova,
                      uint8_t *dst, uint64_t len)
{
    if (!range_fits(iova, len)) {
        return false;
    }
    while (len) {
        uint64_t uva, n;

        if (vhost_iotlb_translate(&fr->iotlb, iova, VHOST_ACCESS_RO, &uva,
                                  &n) != VHOST_IOTLB_HIT) {
            return false;
        }
        const struct fuzz_mem_region *r = fuzz_ring_region_uva__(&fr->fm, uva);
        if (!r) {
            return false;
        }
        uint64_t off = uva - r->uva;
        n = MIN(n, MIN(len, r->size - off));
        for (uint64_t j = 0; j < n; j++) {
            uint64_t gpa = r->gpa + off + j;

            dst[j] = (gpa - s->desc_gpa < s->desc_len
                      ? s->desc[gpa - s->desc_gpa]
                      : gpa - s->used_gpa < s->used_len
                      ? s->used[gpa - s->used_gpa]
                      : r->va[off + j]);
        }
        dst += n;
        iova += n;
        len -= n;
    }
    return true;
}

/* Whether the buffer or indirect table of descriptor 'addr', 'len',
 * 'flags' holds I/O virtual address 'iova', or (indirect) one of the
 * table's buffers does.  Both layouts' descriptors start with the
 * address and the length. */
static bool
fuzz_ring_desc_has__(const struct fuzz_ring *fr,
                     const struct fuzz_ring_snap *s, uint64_t addr,
                     uint32_t len, uint16_t flags, uint64_t iova)
{
    static uint8_t table[16 * FUZZ_RING_MAX_SIZE];

    if (iova - addr < len) {
        return true;
    }
    if (!(flags & VRING_DESC_F_INDIRECT) || len > sizeof table
        || !fuzz_ring_iova_read__(fr, s, addr, table, len)) {
        return false;
    }
    for (uint32_t i = 0; i < len / 16; i++) {
        struct vring_desc e;

        memcpy(&e, &table[16 * i], sizeof e);
        if (iova - e.addr < e.len) {
            return true;
        }
    }
    return false;
}

/* Whether the chain that ring position 'pos' starts holds I/O virtual
 * address 'iova' (split: avail ring entry 'pos'), as the burst found
 * it.  Stores the position of the next chain in '*nextp' (packed only:
 * the descriptors in between are the chain's). */
static bool
fuzz_ring_chain_has__(const struct fuzz_ring *fr,
                      const struct fuzz_ring_snap *s, uint16_t pos,
                      uint64_t iova, uint16_t *nextp)
{
    const struct virtq *vq = &fr->vq;
    unsigned int size = vq->size;
    bool found = false;

    if (vq->packed) {
        const struct vring_packed_desc *ring = (const void *) s->desc;

        for (unsigned int k = 0; k < size; k++) {
            const struct vring_packed_desc *d = &ring[pos];

            found = found || fuzz_ring_desc_has__(fr, s, d->addr, d->len,
                                                  d->flags, iova);
            pos = (pos + 1) % size;
            if (!(d->flags & VRING_DESC_F_NEXT)) {
                break;
            }
        }
        *nextp = pos;
        return found;
    }

    const struct vring_desc *table = (const void *) s->desc;
    const struct vring_avail *avail = (const void *) s->avail;
    uint16_t i = avail->ring[pos & (size - 1)];
    for (unsigned int k = 0; k < size && i < size; k++) {
        const struct vring_desc *d = &table[i];

        if (fuzz_ring_desc_has__(fr, s, d->addr, d->len, d->flags, iova)) {
            return true;
        }
        if (!(d->flags & VRING_DESC_F_NEXT)) {
            break;
        }
        i = d->next;
    }
    *nextp = pos + 1;
    return false;
}

/* Checks IOMMU burst 'ctx' of 'fr''s queue, which put or took 'done' of
 * 'n' packets ('rx' for enqueue) after snapshot 's' (see fuzz-ring.h,
 * "Checks"), and hands a miss to virtq_iommu_should_ask() as the data
 * path does. */
static void
fuzz_ring_check_iommu__(struct fuzz_ring *fr, const struct virtq_ctx *ctx,
                        const struct fuzz_ring_snap *s, bool rx,
                        unsigned int done, unsigned int n)
{
    struct virtq *vq = &fr->vq;
    const struct vhost_queue_stats *b = &s->stats, *a = &vq->stats;
    uint64_t dropped = 0;

    for (int i = 0; i < VHOST_N_DROP_REASONS; i++) {
        dropped += a->drops[i] - b->drops[i];
    }

    /* A packet has a header: at least one translation. */
    FUZZ_CHECK(a->iotlb_hits - b->iotlb_hits >= a->packets - b->packets);
    /* A denial drops its chain: for its address or indirect table, or
     * (packed) for an id in flight, which takes precedence.  Not when
     * enqueue stopped at a packet: the reserve step counts a denial as
     * it walks, and a chain denied after the packet's first good one is
     * given back with them, uncounted as a drop, to be walked (and
     * counted as denied) again by the next burst
     * (regress/split/iotlb-denied-chain-given-back). */
    if (!rx || done == n) {
        FUZZ_CHECK(a->iotlb_denied - b->iotlb_denied <= dropped);
    }
    if (!ctx->miss) {
        return;
    }

    /* A miss is one: no entry for that IOVA and access. */
    uint64_t uva, len;
    FUZZ_CHECK(ctx->miss_perm == VHOST_ACCESS_RO
               || (rx && ctx->miss_perm == VHOST_ACCESS_WO));
    FUZZ_CHECK(vhost_iotlb_translate(&fr->iotlb, ctx->miss_iova,
                                     ctx->miss_perm, &uva, &len)
               == VHOST_IOTLB_NOT_FOUND);

    /* The chain it missed at, and every one after, stay available. */
    uint16_t stop = vq->last_avail_idx, next;
    if (vq->packed) {
        const struct vring_packed_desc *ring = (const void *) s->desc;

        FUZZ_CHECK(vring_packed_desc_is_avail(ring[stop].flags,
                                              vq->avail_wrap_counter));
    } else {
        FUZZ_CHECK((uint16_t) (stop - s->last_avail)
                   < (uint16_t) (s->avail_idx - s->last_avail));
    }

    /* Dequeue stops at the chain that missed.  Enqueue may leave the
     * packet's chains before it available too; the guest's buffers may
     * hold its rings and tables, so only an enqueue that put nothing
     * can be followed. */
    if (!rx) {
        FUZZ_CHECK(fuzz_ring_chain_has__(fr, s, stop, ctx->miss_iova,
                                         &next));
    } else if (!done) {
        bool found = false;
        uint16_t pos = stop;
        bool wrap = vq->avail_wrap_counter;

        for (unsigned int k = 0; k < vq->size && !found; k++) {
            if (vq->packed) {
                const struct vring_packed_desc *ring
                    = (const void *) s->desc;
                if (!vring_packed_desc_is_avail(ring[pos].flags, wrap)) {
                    break;
                }
            } else if ((uint16_t) (pos - s->last_avail)
                       >= (uint16_t) (s->avail_idx - s->last_avail)) {
                break;
            }
            found = fuzz_ring_chain_has__(fr, s, pos, ctx->miss_iova,
                                          &next);
            if (vq->packed && next <= pos) {
                wrap = !wrap;
            }
            pos = next;
        }
        FUZZ_CHECK(found);
    }

    fuzz_ring_ask__(fr, ctx->miss_iova, ctx->miss_perm, ctx, rx);
    fr->miss = true;
    fr->miss_iova = ctx->miss_iova;
    fr->miss_perm = ctx->miss_perm;
}

void
fuzz_ring_run(struct fuzz_ring *fr, struct fuzz_input *in)
{
    static struct fuzz_ring_snap snap;
    uint8_t ops[16];
    struct virtq_ctx ctx = { .mem = fr->fm.gm };

    fuzz_input_bytes(in, ops, sizeof ops);
    fuzz_mem_fill(&fr->fm, FUZZ_RING_BUF_GPA, in);

    for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
        unsigned int a = ops[i] >> 2;
        unsigned int kind = ops[i] & 3;

        fr->now_ms += FUZZ_RING_TICK_MS;
        ctx.log = NULL;
        if (fr->vq.log_all) {
            fr->log = (struct vhost_dirty_log) {
                .base = fr->log_buf, .size = fr->log_size,
            };
            ctx.log = &fr->log;
        }
        ctx.iotlb = fr->vq.iotlb;
        ctx.miss = false;
        if (kind <= 1) {
            /* vhost_datapath_get__(): only a ready queue runs, and one
             * that lost its ring's translation only once it has it. */
            if (!fr->vq.ready || !fuzz_ring_can_burst__(fr)) {
                continue;
            }
            if (fr->iommu) {
                fuzz_ring_snap__(&fr->vq, &snap);
            }
        }
        switch (kind) {
        case 0: {
            struct vhost_pkt pkts[VHOST_MAX_BURST];

            memset(pkts, 0, sizeof pkts);
            unsigned int got = fuzz_ring_dequeue(&fr->vq, &ctx, pkts, a + 1);
            fuzz_ring_free_pkts(pkts, VHOST_MAX_BURST);
            if (fr->iommu) {
                fuzz_ring_check_iommu__(fr, &ctx, &snap, false, got,
                                        MIN(a + 1, VHOST_MAX_BURST));
            }
            break;
        }
        case 1: {
            unsigned int n = a % 8 + 1;
            unsigned int done = fuzz_ring_enqueue(&fr->vq, &ctx, n, a);
            if (fr->iommu) {
                fuzz_ring_check_iommu__(fr, &ctx, &snap, true, done, n);
            }
            break;
        }
        case 2:
            if (fr->vq.packed) {
                fuzz_ring_packed_avail__(fr, a % 8 + 1);
            } else {
                struct vring_avail *avail = fr->drv_avail;
                __atomic_store_n(&avail->idx, (uint16_t) (avail->idx + a),
                                 __ATOMIC_RELEASE);
            }
            break;
        case 3:
            if (fr->iommu && a & 3) {
                fuzz_ring_iotlb_op__(fr, a);
                break;
            }
            fr->features ^= FEATURE_BIT(VHOST_F_LOG_ALL);
            virtq_configure(&fr->vq, fr->features, fr->fm.gm,
                            fr->iommu ? &fr->iotlb : NULL);
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
    virtq_iommu_free_ahead(&fr->vq);
    free(fr->log_buf);
    vhost_iotlb_destroy(&fr->iotlb);
    fuzz_mem_destroy(&fr->fm);
}

/* Writes 's', the IOTLB part of an input (fuzz-ring.h, "IOMMU"), into
 * 'b', for the targets' seeds. */
void
fuzz_ring_put_iommu(struct fuzz_input_buf *b,
                    const struct fuzz_ring_iommu_seed *s)
{
    fuzz_input_put_u8(b, s->flags);
    for (size_t i = 0; i < FUZZ_RING_IOTLB_POOL; i++) {
        const struct fuzz_ring_iotlb_seed *e = &s->pool[i];
        uint32_t iova = e->iova;

        fuzz_input_put(b, &iova, sizeof iova);
        fuzz_input_put(b, &e->size, sizeof e->size);
        fuzz_input_put_u8(b, e->target);
        fuzz_input_put(b, &e->off, sizeof e->off);
        fuzz_input_put_u8(b, e->perm);
    }
}
