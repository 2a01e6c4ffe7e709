/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Split virtqueue data path: see virtq-split.h.
 *
 * Layout of this file: chain walking (shared), the used ring and
 * notifications (shared), dequeue, enqueue, and at the end the table of
 * specialised burst functions.  The two burst bodies are static inline
 * functions with constant arguments for the negotiated options; the thin
 * wrappers at the end instantiate one copy per combination in use, so no
 * feature bit is tested per descriptor.
 */

#include <config.h>
#include "virtq-split.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "guest-mem.h"
#include "util.h"
#include "vhost-cold.h"
#include "vhost-dirty-log.h"
#include "vhost-iotlb.h"
#include "vhost-log.h"
#include "virtio-net-hdr.h"
#include "virtio-ring.h"
#include "virtq.h"
#include "virtq-iommu.h"

/* Shadow used ring: entries collected during a burst and written back to
 * the guest's used ring at its end, with one update of used->idx. */
#define VIRTQ_SHADOW_SIZE (VHOST_MAX_BURST * 4)
BUILD_ASSERT_DECL(VIRTQ_SHADOW_SIZE >= VIRTQ_MAX_CHAINS_PER_PKT
                                       + VHOST_MAX_BURST);

/* With VIRTIO_F_IN_ORDER a dequeue burst keeps no elements, only their
 * number and the last chain's head: see virtq_split_flush_in_order__(). */
struct virtq_shadow {
    unsigned int n;
    uint16_t last_id;           /* In order: the last chain's head. */
    struct vring_used_elem elems[VIRTQ_SHADOW_SIZE];
};


/* Stops the queue for good (until the frontend sets it up again). */
static void OVS_COLD
virtq_split_break__(struct virtq *vq, enum vhost_drop_reason reason,
                    uint16_t avail_idx)
{
    vq->broken = true;
    vq->stats.broken = true;
    vq->stats.drops[reason]++;
    vhost_log_rl(&vq->rl, VHOST_LOG_ERR, "%s: vring %u: guest says "
                 "index %u is available, %u ahead of %u with %u entries; "
                 "queue stopped", vq->name, vq->index, avail_idx,
                 (uint16_t) (avail_idx - vq->last_avail_idx),
                 vq->last_avail_idx, vq->size);
}

/* Chain walking. */

/* How far ahead a burst prefetches, in avail entries: the descriptors of
 * the chain VIRTQ_SPLIT_DESC_AHEAD entries on, and the first buffer of the
 * chain VIRTQ_SPLIT_BUF_AHEAD on (whose descriptor the first stage has
 * brought in by then).  Both lines were last written by the guest's CPU.
 * perf on a VM whose two CPUs sometimes sat far apart put about half of
 * each burst on those loads, with one entry of prefetch; with these two
 * stages the forwarder's A/B (983f897) showed no change outside that VM's
 * noise, and the header line still stalled in its slow periods. */
#define VIRTQ_SPLIT_DESC_AHEAD 8
#define VIRTQ_SPLIT_BUF_AHEAD 3

/* Prefetches the descriptor at 'head': only a hint, see below. */
static inline void
virtq_split_prefetch_desc__(const struct virtq *vq, uint16_t head)
{
    __builtin_prefetch(&((const struct vring_desc *) vq->desc)
                       [head & (vq->size - 1)]);
}

/* Prefetches the first buffer of the chain at 'head', which will be walked
 * next, for writing if 'write' (a constant: an RX chain, whose first line
 * takes the virtio-net header).  The descriptor read here is only a hint:
 * the walk reads it again and checks that copy, so nothing read here is
 * trusted. */
static inline void
virtq_split_prefetch__(const struct virtq *vq, const struct guest_mem *mem,
                       uint16_t head, const bool write)
{
    const struct vring_desc *d = &((const struct vring_desc *) vq->desc)
                                  [head & (vq->size - 1)];
    uint64_t len = 64;
    const uint8_t *hva = guest_mem_gpa_to_hva(mem,
                                              __atomic_load_n(&d->addr,
                                                              __ATOMIC_RELAXED),
                                              &len);
    if (hva && write) {
        __builtin_prefetch(hva, 1);
    } else if (hva) {
        __builtin_prefetch(hva);
    }
}


/* Reads descriptor 'i' of 'table' into a local: the guest may change it
 * at any time, so every later check and use is of this copy. */
static inline struct vring_desc
virtq_split_read_desc__(const struct vring_desc *table, uint32_t i)
{
    struct vring_desc d;

    memcpy(&d, (const void *) &table[i], sizeof d);
    return d;
}

/* Walks the chain that starts at 'head', appending its buffers to 'segs'
 * (translated, in order) and returning its length in '*lenp'.  'write' is
 * true for RX chains, whose buffers must all be device-writable, false for
 * TX chains, whose buffers must all be device-readable.  Takes the
 * descriptors it reads from the burst's budget '*budgetp' (virtq-segs.h).
 *
 * Returns -1 on success, VIRTQ_WALK_BUDGET if the budget ran out or
 * VIRTQ_WALK_MISS if an address has no IOTLB entry yet ('iommu', a
 * constant: virtq-iommu.h) (the chain is then left for the next burst),
 * otherwise the vhost_drop_reason. */
static inline int
virtq_split_walk__(struct virtq *vq, struct virtq_ctx *ctx,
                   uint16_t head, bool write, struct virtq_segs *segs,
                   uint32_t *lenp, uint32_t *budgetp, const bool iommu)
{
    const struct vring_desc *table = vq->desc;
    uint32_t table_n = vq->size;
    uint32_t cap = virtq_chain_cap(*budgetp);
    uint32_t limit = MIN(table_n, cap);
    uint32_t i = head;
    uint32_t visited = 0;       /* In this table. */
    uint32_t spent = 0;         /* In the tables before it. */
    uint64_t total = 0;
    void *copy = NULL;
    bool in_table = false;      /* Walking an indirect table. */
    int reason = -1;

    for (;;) {
        /* §2.7.5.2 (chains) and §2.7.5.3.1 (indirect): a chain visits each
         * descriptor at most once, so one longer than its table loops.
         * The same test keeps the walk within the budget. */
        if (OVS_UNLIKELY(i >= table_n)) {
            reason = VHOST_DROP_BAD_INDEX;
            break;
        }
        if (OVS_UNLIKELY(++visited > limit)) {
            reason = visited > table_n ? VHOST_DROP_LOOP
                                       : virtq_chain_cut(cap);
            visited--;          /* Not read. */
            break;
        }

        struct vring_desc d = virtq_split_read_desc__(table, i);
        if (OVS_UNLIKELY(d.flags & VRING_DESC_F_INDIRECT)) {
            /* Not "table != vq->desc": a guest may point an indirect
             * descriptor at the descriptor table itself, which then
             * started over from entry 0 forever. */
            if (in_table) {
                reason = VHOST_DROP_BAD_INDIRECT;       /* Nested. */
                break;
            }
            in_table = true;
            table = virtq_indirect_table_as(vq, ctx, d.addr, d.len, d.flags,
                                            &copy, &reason, iommu);
            table_n = d.len / sizeof(struct vring_desc);
            if (!table) {
                break;
            }
            reason = -1;
            spent = visited;
            limit = MIN(table_n, cap - spent);
            i = 0;
            visited = 0;
            continue;
        }

        if (OVS_UNLIKELY(!(d.flags & VRING_DESC_F_WRITE) != !write)) {
            reason = VHOST_DROP_BAD_DIRECTION;
            break;
        }
        reason = virtq_segs_add_as(vq, ctx, d.addr, d.len, write, segs,
                                   iommu);
        if (OVS_UNLIKELY(reason != -1)) {
            break;
        }
        total += d.len;

        if (!(d.flags & VRING_DESC_F_NEXT)) {
            break;
        }
        i = d.next;
    }

    if (OVS_UNLIKELY(copy)) {
        free(copy);
    }
    if (reason == -1 && total > UINT32_MAX) {
        reason = VHOST_DROP_TOO_BIG;
    }
    *budgetp -= spent + visited;
    *lenp = total;
    return reason;
}

/* Used ring and notifications. */

/* Records chain 'id' as used with 'len' bytes written.  'in_order' (a
 * constant) keeps only what the burst's one used entry needs; 'len' is
 * then 0 (dequeue). */
static inline void
virtq_split_shadow_add__(struct virtq_shadow *sh, uint16_t id, uint32_t len,
                         const bool in_order)
{
    if (in_order) {
        sh->last_id = id;
        sh->n++;
        return;
    }
    sh->elems[sh->n].id = id;
    sh->elems[sh->n].len = len;
    sh->n++;
}

/* With VIRTIO_F_IN_ORDER, writes the burst's chains back as one used
 * entry: §2.7.9 ("In-order use of descriptors") lets the device write "a
 * single used ring entry with the id corresponding to the head entry of
 * the descriptor chain describing the last buffer in the batch", skip
 * forward in the ring by the size of the batch and move the used index on
 * by as much.  The entry goes where the batch starts, which is where the
 * driver looks (Linux reads it there; DPDK's in-order TX cleanup reads
 * only the index). */
static inline void
virtq_split_flush_in_order__(struct virtq *vq, struct virtq_ctx *ctx,
                             struct virtq_shadow *sh)
{
    struct vring_used *used = vq->used;
    uint16_t slot = vq->last_used_idx & (vq->size - 1);

    if (!sh->n) {
        return;
    }
    used->ring[slot].id = sh->last_id;
    used->ring[slot].len = 0;
    vq->last_used_idx += sh->n;

    /* The entry before the index: pairs with the guest's read barrier
     * between reading used->idx and reading the entries. */
    __atomic_store_n(&used->idx, vq->last_used_idx, __ATOMIC_RELEASE);
    VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx),
                                &used->ring[slot], 8);
    VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx), &used->idx, 2);

    if (OVS_UNLIKELY(ctx->log) && vq->log_used) {
        vhost_dirty_log_write(ctx->log, vq->log_gpa + 4 + 8 * slot, 8);
        vhost_dirty_log_write(ctx->log, vq->log_gpa + 2, 2);
    }
    sh->n = 0;
}

/* Writes the shadow used entries into the guest's used ring and publishes
 * them with one store to used->idx. */
static inline void
virtq_split_flush_used__(struct virtq *vq, struct virtq_ctx *ctx,
                         struct virtq_shadow *sh)
{
    struct vring_used *used = vq->used;
    uint16_t mask = vq->size - 1;
    uint16_t idx = vq->last_used_idx;

    if (!sh->n) {
        return;
    }
    for (unsigned int i = 0; i < sh->n; i++) {
        used->ring[(uint16_t) (idx + i) & mask] = sh->elems[i];
    }
    vq->last_used_idx = idx + sh->n;

    /* Entries before the index: pairs with the guest's read barrier
     * between reading used->idx and reading the entries. */
    __atomic_store_n(&used->idx, vq->last_used_idx, __ATOMIC_RELEASE);
#ifdef VHOST_DIRTY_LOG_AUDIT
    for (unsigned int i = 0; i < sh->n; i++) {
        VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx),
                                    &used->ring[(uint16_t) (idx + i) & mask],
                                    8);
    }
    VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx), &used->idx, 2);
#endif

    if (OVS_UNLIKELY(ctx->log) && vq->log_used) {
        uint64_t base = vq->log_gpa;

        for (unsigned int i = 0; i < sh->n; i++) {
            uint16_t slot = (uint16_t) (idx + i) & mask;
            vhost_dirty_log_write(ctx->log, base + 4 + 8 * slot, 8);
        }
        vhost_dirty_log_write(ctx->log, base + 2, 2);
    }
    sh->n = 0;
}

/* Tells the guest about used buffers from 'old' to the current used index,
 * if it asked to be told (§2.7.7 and, with EVENT_IDX, §2.7.10), and asks it
 * not to kick us: the queue is polled.  'event_idx' is constant in each
 * specialised copy.  Both requests are writes to the used ring, and are
 * marked in 'ctx''s dirty log like the others. */
static inline void
virtq_split_notify__(struct virtq *vq, const struct virtq_ctx *ctx,
                     uint16_t old, bool event_idx)
{
    struct vring_avail *avail = vq->avail;
    struct vring_used *used = vq->used;
    uint16_t new_idx = vq->last_used_idx;
    bool need;

    if (event_idx) {
        /* avail_event: a polling device wants as few kicks as it can
         * get, so it names an index half the index space ahead of what it
         * has processed, which the driver cannot reach before we move it
         * on.  Rewritten only each quarter of the index space, to keep the
         * cache line the driver reads clean. */
        if ((uint16_t) (vq->last_avail_idx - vq->avail_event_base)
            >= 0x4000 || OVS_UNLIKELY(!vq->avail_event_set)) {
            uint16_t *avail_event = (uint16_t *) &used->ring[vq->size];
            vq->avail_event_base = vq->last_avail_idx;
            vq->avail_event_set = true;
            __atomic_store_n(avail_event,
                             (uint16_t) (vq->last_avail_idx + 0x8000),
                             __ATOMIC_RELAXED);
            VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx),
                                        avail_event, 2);
            if (OVS_UNLIKELY(ctx->log) && vq->log_used) {
                vhost_dirty_log_write(ctx->log, vq->log_gpa + 4
                                      + 8 * (uint64_t) vq->size, 2);
            }
        }
    } else if (OVS_UNLIKELY(!vq->avail_event_set)) {
        /* Once per start of the queue. */
        vq->avail_event_set = true;
        __atomic_store_n(&used->flags, VRING_USED_F_NO_NOTIFY,
                         __ATOMIC_RELAXED);
        VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx),
                                    &used->flags, 2);
        if (OVS_UNLIKELY(ctx->log) && vq->log_used) {
            vhost_dirty_log_write(ctx->log, vq->log_gpa, 2);
        }
    }

    if (old == new_idx) {
        return;
    }

    /* Our used->idx store before the guest's suppression fields: pairs
     * with the full barrier in the driver between publishing used_event
     * (or clearing NO_INTERRUPT) and rereading used->idx. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (event_idx) {
        uint16_t used_event = __atomic_load_n(&avail->ring[vq->size],
                                              __ATOMIC_RELAXED);
        need = vring_need_event(used_event, new_idx, old);
    } else {
        need = !(__atomic_load_n(&avail->flags, __ATOMIC_RELAXED)
                 & VRING_AVAIL_F_NO_INTERRUPT);
    }

    if (need && vq->call_fd >= 0) {
        eventfd_write(vq->call_fd, 1);
        vq->stats.guest_notifications++;
    } else {
        vq->stats.notifications_suppressed++;
    }
}

/* Reads how many entries the guest has made available beyond ours, or
 * marks the queue broken and returns 0 if that is more than the ring. */
static inline uint16_t
virtq_split_avail_count__(struct virtq *vq)
{
    /* Only get avail ring entries after they have been exposed by the
     * guest: pairs with its write barrier before it updates avail->idx. */
    struct vring_avail *avail = vq->avail;
    uint16_t avail_idx = __atomic_load_n(&avail->idx, __ATOMIC_ACQUIRE);
    uint16_t count = avail_idx - vq->last_avail_idx;

    if (OVS_UNLIKELY(count > vq->size)) {
        virtq_split_break__(vq, VHOST_DROP_AVAIL_IDX, avail_idx);
        return 0;
    }
    return count;
}

static inline uint16_t
virtq_split_avail_entry__(const struct virtq *vq, uint16_t idx)
{
    const struct vring_avail *avail = vq->avail;

    return __atomic_load_n(&avail->ring[idx & (vq->size - 1)],
                           __ATOMIC_RELAXED);
}

/* Starts a burst's prefetch pipeline, with 'left' avail entries from
 * 'last_avail_idx' on: the first VIRTQ_SPLIT_DESC_AHEAD descriptors, and
 * the first buffers from entry 'first_buf' to VIRTQ_SPLIT_BUF_AHEAD. */
static inline void
virtq_split_prefetch_start__(const struct virtq *vq,
                             const struct guest_mem *mem, uint16_t left,
                             uint16_t first_buf, const bool write)
{
    for (uint16_t k = 0; k < left && k < VIRTQ_SPLIT_DESC_AHEAD; k++) {
        virtq_split_prefetch_desc__(vq, virtq_split_avail_entry__(
                                            vq, vq->last_avail_idx + k));
    }
    for (uint16_t k = first_buf; k < left && k < VIRTQ_SPLIT_BUF_AHEAD; k++) {
        virtq_split_prefetch__(vq, mem, virtq_split_avail_entry__(
                                            vq, vq->last_avail_idx + k),
                               write);
    }
}

/* One stage of the pipeline, for the chain at avail index 'idx', with
 * 'left' avail entries from 'idx' on (itself included): the descriptor
 * VIRTQ_SPLIT_DESC_AHEAD entries on and the first buffer
 * VIRTQ_SPLIT_BUF_AHEAD on, where the guest has made them available. */
static inline void
virtq_split_prefetch_stage__(const struct virtq *vq,
                             const struct guest_mem *mem, uint16_t idx,
                             uint16_t left, const bool write)
{
    if (left > VIRTQ_SPLIT_DESC_AHEAD) {
        virtq_split_prefetch_desc__(vq, virtq_split_avail_entry__(
                                            vq, idx + VIRTQ_SPLIT_DESC_AHEAD));
    }
    if (left > VIRTQ_SPLIT_BUF_AHEAD) {
        virtq_split_prefetch__(vq, mem, virtq_split_avail_entry__(
                                            vq, idx + VIRTQ_SPLIT_BUF_AHEAD),
                               write);
    }
}

/* Dequeue: the guest's TX ring into the embedder's buffers. */

static OVS_ALWAYS_INLINE unsigned int
virtq_split_dequeue__(struct virtq *vq, struct virtq_ctx *ctx,
                      struct vhost_pkt *pkts, unsigned int n,
                      const struct vhost_pkt_alloc *alloc,
                      const uint32_t hdr_len, const bool event_idx,
                      const bool in_order, const bool host_ol,
                      const bool iommu)
{
    struct virtq_shadow sh;
    struct virtq_segs segs;
    uint16_t old_used = vq->last_used_idx;
    const uint32_t max_len = virtq_max_pkt_len(alloc);
    unsigned int out = 0;
    uint16_t i;

    if (OVS_UNLIKELY(vq->broken)) {
        return 0;
    }
    n = MIN(n, VHOST_MAX_BURST);
    const uint32_t budget = virtq_budget(n);
    uint32_t left = budget;
    /* Read once: MIN() would evaluate it twice. */
    uint16_t count = virtq_split_avail_count__(vq);
    count = MIN(count, n);
    sh.n = 0;
    sh.last_id = 0;
    /* The first chain's buffer is read at once: no use prefetching it.
     * With an IOMMU the buffer addresses are IOVAs: no prefetch. */
    if (!iommu) {
        virtq_split_prefetch_start__(vq, ctx->mem, count, 1, false);
    }
    for (i = 0; i < count; i++) {
        uint16_t head = virtq_split_avail_entry__(vq, vq->last_avail_idx + i);
        uint32_t len;

        if (!iommu) {
            virtq_split_prefetch_stage__(vq, ctx->mem,
                                         vq->last_avail_idx + i, count - i,
                                         false);
        }

        segs.n = 0;
        int reason = virtq_split_walk__(vq, ctx, head, false, &segs, &len,
                                        &left, iommu);
        if (OVS_UNLIKELY(virtq_walk_stopped(reason))) {
            /* The chain stays available for the next burst. */
            vhost_cold_walk_stop(vq, reason, budget);
            break;
        }
        if (OVS_LIKELY(reason < 0)
            && OVS_UNLIKELY(len < hdr_len
                            || len - hdr_len > max_len)) {
            reason = len < hdr_len ? VHOST_DROP_SHORT_HDR
                                   : VHOST_DROP_TOO_BIG;
        }
        if (OVS_UNLIKELY(reason >= 0)) {
            virtq_drop(vq, reason);
            virtq_split_shadow_add__(&sh, head, 0, in_order);
            continue;
        }

        uint32_t pkt_len = len - hdr_len;
        struct vhost_pkt *p = &pkts[out];
        if (OVS_UNLIKELY(!virtq_get_buf(p, pkt_len, alloc))) {
            /* No buffer: the chain stays available for the next call. */
            break;
        }

        /* The header, read once into a local before it is checked; only
         * with host offloads, as there is nothing in it otherwise. */
        struct virtio_net_hdr hdr;
        unsigned int seg = 0;
        uint32_t off = 0;
        memset(&hdr, 0, sizeof hdr);
        if (OVS_LIKELY(segs.segs[0].len >= hdr_len)) {
            if (host_ol) {
                memcpy(&hdr, segs.segs[0].hva, hdr_len);
            }
            off = hdr_len;
            if (off == segs.segs[0].len) {
                seg = 1;
                off = 0;
            }
        } else {
            vhost_cold_gather(&segs, &seg, &off, &hdr, hdr_len);
        }
        if (!host_ol) {
            memset(&p->ol, 0, sizeof p->ol);
        } else if (OVS_UNLIKELY(!virtio_net_hdr_parse(&hdr, pkt_len,
                                                      &p->ol))) {
            virtq_drop(vq, VHOST_DROP_BAD_CSUM);
            virtq_split_shadow_add__(&sh, head, 0, in_order);
            continue;
        }

        /* The packet, straight into the embedder's buffer. */
        uint8_t *dst = p->data;
        __builtin_prefetch(dst, 1);
        for (; seg < segs.n; seg++, off = 0) {
            uint32_t n_bytes = segs.segs[seg].len - off;
            virtq_copy(dst, segs.segs[seg].hva + off, n_bytes);
            dst += n_bytes;
        }
        p->len = pkt_len;
        virtq_count_pkt(&vq->stats, p->data, pkt_len);
        virtq_split_shadow_add__(&sh, head, 0, in_order);
        out++;
    }
    vq->last_avail_idx += i;
    virtq_budget_end(&vq->stats, budget, left);

    if (in_order) {
        virtq_split_flush_in_order__(vq, ctx, &sh);
    } else {
        virtq_split_flush_used__(vq, ctx, &sh);
    }
    virtq_split_notify__(vq, ctx, old_used, event_idx);
    return out;
}

/* Enqueue: the embedder's packets into the guest's RX ring. */

/* Reserves guest buffers for 'need' bytes: one chain, or with 'mrg' as
 * many as it takes.  Stores the good chains in 'chains' and their count in
 * '*n_chainsp', and the number of avail entries consumed in '*consumedp'.
 * Chains that break a rule are dropped into 'sh' as they are met.
 *
 * Where a bad chain goes depends on 'in_order' (a constant):
 *
 *   - Without it, ahead of the packet's chains, which the caller adds
 *     after them: with MRG_RXBUF a packet's buffers must be consecutive
 *     used entries (§5.1.6.4), and a bad chain met between two of them
 *     must not end up between them.
 *
 *   - With VIRTIO_F_IN_ORDER used entries must also come in avail order
 *     (§2.7.9), so every chain gets its entry here, as it is met (the
 *     caller fills in the lengths: 'shadow_idx'), and a bad chain met
 *     after some of the packet's chains ends the packet's use of them:
 *     they are returned empty, in place, and the packet starts again
 *     after the bad chain.  Only a driver that breaks a rule pays.
 *
 * The walks take their descriptors from the burst's budget '*budgetp'.
 *
 * Returns -1 on success, VHOST_DROP_NO_BUFS if the ring ran out (nothing
 * reserved is consumed, except bad chains and, in order, what came before
 * them), VHOST_DROP_TOO_BIG if the chains from the head on cannot hold the
 * packet (one chain without 'mrg', VIRTQ_MAX_CHAINS_PER_PKT with it; the
 * bytes they hold in '*havep'), or VIRTQ_WALK_BUDGET or VIRTQ_WALK_MISS
 * if a walk stopped ('iommu' is a constant, as in virtq_split_walk__());
 * the last three consume what VHOST_DROP_NO_BUFS does. */
static OVS_ALWAYS_INLINE int
virtq_split_reserve__(struct virtq *vq, struct virtq_ctx *ctx,
                      struct virtq_shadow *sh, uint16_t avail_left,
                      uint32_t need, const bool mrg, const bool in_order,
                      struct virtq_segs *segs, struct virtq_chain *chains,
                      unsigned int *n_chainsp, uint16_t *consumedp,
                      unsigned int *drop_budgetp, uint32_t *budgetp,
                      uint64_t *havep, const bool iommu)
{
    /* By shadow entry from 'sh_start': -1 for a good chain, else why it
     * was dropped. */
    int8_t why[VIRTQ_SHADOW_SIZE];
    unsigned int sh_start = sh->n;
    unsigned int keep = 0;      /* Entries consumed whatever happens. */
    unsigned int n_dropped = 0;
    unsigned int n_chains = 0;
    uint16_t used = 0;
    uint64_t have = 0;
    int stopped = 0;            /* Why the walks stopped, if they did. */

    segs->n = 0;
    while (have < need) {
        if (used >= avail_left
            || sh->n + (in_order ? 0 : n_chains) >= VIRTQ_SHADOW_SIZE) {
            break;
        }
        if (n_chains >= (mrg ? VIRTQ_MAX_CHAINS_PER_PKT : 1)) {
            break;
        }
        if (n_dropped >= *drop_budgetp) {
            /* Bounded work: a ring full of bad chains is drained at most
             * VHOST_MAX_BURST chains per call. */
            break;
        }

        uint16_t head = virtq_split_avail_entry__(vq,
                                                  vq->last_avail_idx + used);
        unsigned int first = segs->n;
        uint32_t len;
        int reason = virtq_split_walk__(vq, ctx, head, true, segs, &len,
                                        budgetp, iommu);
        if (OVS_UNLIKELY(virtq_walk_stopped(reason))) {
            segs->n = first;
            stopped = reason;
            break;
        }
        used++;
        if (OVS_UNLIKELY(reason >= 0)) {
            /* Counted below, once we know it is consumed. */
            why[sh->n - sh_start] = reason;
            virtq_split_shadow_add__(sh, head, 0, false);
            segs->n = first;
            n_dropped++;
            if (!n_chains || in_order) {
                keep = sh->n - sh_start;
                n_chains = 0;
                have = 0;
                segs->n = 0;
            }
            continue;
        }
        chains[n_chains] = (struct virtq_chain) {
            .id = head, .first_seg = first, .n_segs = segs->n - first,
            .len = len, .shadow_idx = sh->n,
        };
        if (in_order) {
            why[sh->n - sh_start] = -1;
            virtq_split_shadow_add__(sh, head, 0, false);
        }
        n_chains++;
        have += len;
    }

    *n_chainsp = n_chains;
    if (have >= need) {
        for (unsigned int k = 0; k < sh->n - sh_start; k++) {
            if (OVS_UNLIKELY(why[k] >= 0)) {
                virtq_drop(vq, why[k]);
            }
        }
        *drop_budgetp -= n_dropped;
        *consumedp = used;
        return -1;
    }

    /* Not enough.  The avail ring is consumed in order, so only what is
     * ahead of the packet's first good chain can go; the good chains and
     * any dropped after them stay available (they are taken back out of
     * the shadow ring, to be met again).  Without 'mrg' one chain too
     * small for the packet means the packet can never fit. */
    for (unsigned int k = 0; k < keep; k++) {
        if (why[k] >= 0) {
            virtq_drop(vq, why[k]);
            (*drop_budgetp)--;
        }
    }
    sh->n = sh_start + keep;
    *consumedp = keep;
    *havep = have;
    if (stopped) {
        return stopped;
    }
    if (!mrg && n_chains) {
        return VHOST_DROP_TOO_BIG;
    }
    return mrg && n_chains >= VIRTQ_MAX_CHAINS_PER_PKT
           ? VHOST_DROP_TOO_BIG : VHOST_DROP_NO_BUFS;
}

/* Counts why an enqueue burst stops at a packet for which
 * virtq_split_reserve__() returned 'reason' (not -1), with 'need' and
 * 'have' as it had them and the burst's 'budget'.
 *
 * Buffers too small for the packet (VHOST_DROP_TOO_BIG) stop the burst,
 * and stay available, with the packet left to the caller.  That is what
 * DPDK's vhost library does (virtio_dev_rx_split() and _packed() break
 * out of the burst when reserve_avail_buf_split() or
 * vhost_enqueue_single_packed() finds too little room), and the virtio
 * semantics leave no better choice: the driver only SHOULD post buffers
 * of 1526 or 65562 bytes (VIRTIO 1.2 §5.1.6.3.1), a used buffer tells it
 * of a packet, and the ring is consumed in order, so a buffer too small
 * cannot be skipped, and returning it empty would hand the driver an
 * empty packet.  Going on with the next packet, as QEMU and vhost-net do,
 * walks the same chains again for each packet of the burst: a guest whose
 * chains share descriptors then makes one burst cost milliseconds. */
static void
virtq_split_enqueue_stop__(struct virtq *vq, int reason, uint32_t need,
                           uint64_t have, uint32_t budget)
{
    if (reason == VHOST_DROP_TOO_BIG) {
        vhost_cold_small_buf_stop(vq, need, have);
    } else if (virtq_walk_stopped(reason)) {
        vhost_cold_walk_stop(vq, reason, budget);
    }
}

static OVS_ALWAYS_INLINE unsigned int
virtq_split_enqueue__(struct virtq *vq, struct virtq_ctx *ctx,
                      const struct vhost_pkt *pkts, unsigned int n,
                      const uint32_t hdr_len, const bool mrg,
                      const bool event_idx, const bool in_order,
                      const bool iommu)
{
    struct virtq_chain chains[VIRTQ_MAX_CHAINS_PER_PKT];
    struct virtq_shadow sh;
    struct virtq_segs segs;
    uint16_t old_used = vq->last_used_idx;
    unsigned int drop_budget = VHOST_MAX_BURST;
    unsigned int done = 0;

    if (OVS_UNLIKELY(vq->broken)) {
        return 0;
    }
    n = MIN(n, VHOST_MAX_BURST);
    const uint32_t budget = virtq_budget(n);
    uint32_t left = budget;
    uint16_t avail_left = virtq_split_avail_count__(vq);
    const bool hdr_cmp = virtq_hdr_mode_begin(vq);
    unsigned int hdr_stored = 0, hdr_put = 0;
    sh.n = 0;
    sh.last_id = 0;
    /* Only for gcc's -Wmaybe-uninitialized, once the specialised copies
     * are inlined: the reserve step sets every chain it counts. */
    chains[0].id = 0;
    if (!iommu) {
        virtq_split_prefetch_start__(vq, ctx->mem, avail_left, 0, true);
    }

    while (done < n && avail_left) {
        const struct vhost_pkt *p = &pkts[done];
        uint32_t need = hdr_len + p->len;
        unsigned int n_chains;
        uint16_t consumed;
        uint64_t have;

        int reason = virtq_split_reserve__(vq, ctx, &sh, avail_left, need,
                                           mrg, in_order, &segs, chains,
                                           &n_chains, &consumed,
                                           &drop_budget, &left, &have,
                                           iommu);
        vq->last_avail_idx += consumed;
        avail_left -= consumed;
        if (OVS_UNLIKELY(reason != -1)) {
            virtq_split_enqueue_stop__(vq, reason, need, have, budget);
            break;
        }

        /* The pipeline of prefetches, one stage on from the packet's last
         * chain: the header store (or compare) would otherwise wait for the
         * first buffer's line. */
        if (!iommu) {
            virtq_split_prefetch_stage__(vq, ctx->mem,
                                         vq->last_avail_idx - 1,
                                         avail_left + 1, true);
        }

        /* Header, then packet, into the reserved segments. */
        hdr_stored += virtq_segs_fill(&segs, chains, n_chains, hdr_len, p,
                                      ctx->log, hdr_cmp);
        hdr_put++;
        for (unsigned int c = 0; c < n_chains; c++) {
            if (in_order) {
                sh.elems[chains[c].shadow_idx].len = chains[c].written;
            } else {
                virtq_split_shadow_add__(&sh, chains[c].id,
                                         chains[c].written, false);
            }
        }
        virtq_count_pkt(&vq->stats, p->data, p->len);
        done++;
    }

    virtq_budget_end(&vq->stats, budget, left);
    virtq_hdr_mode_end(vq, hdr_cmp, hdr_put, hdr_stored);
    virtq_split_flush_used__(vq, ctx, &sh);
    virtq_split_notify__(vq, ctx, old_used, event_idx);
    return done;
}

/* Ask ahead (virtq-iommu.h): the split ring's part of
 * virtq_iommu_look_ahead().  Walks the chains available from
 * 'last_avail_idx' on, up to VIRTQ_IOMMU_AHEAD_CHAINS of them, and hands
 * look-ahead 'a' each buffer of the burst's direction (device-writable
 * for an enqueue) and each indirect table, whose descriptors it does
 * not read: the table has an IOVA of its own, which may miss.  Checks
 * what the walk checks (the avail index, every descriptor index, a chain
 * no longer than the table), but drops nothing: a chain that breaks a
 * rule only ends there, for the burst to drop.  Each descriptor read
 * costs 'a' one unit of its bounded work. */
void
virtq_split_look_ahead(struct virtq *vq, struct virtq_iommu_ahead *a)
{
    const struct vring_desc *table = vq->desc;
    const struct vring_avail *avail = vq->avail;
    const bool write = a->write;
    const uint8_t perm = write ? VHOST_ACCESS_WO : VHOST_ACCESS_RO;

    /* Pairs with the guest's write barrier before it updates avail->idx,
     * as in virtq_split_avail_count__(), which breaks a queue whose
     * index is too far ahead: here, that only ends the look-ahead. */
    uint16_t count = __atomic_load_n(&avail->idx, __ATOMIC_ACQUIRE)
                     - vq->last_avail_idx;
    if (count > vq->size) {
        return;
    }
    count = MIN(count, VIRTQ_IOMMU_AHEAD_CHAINS);
    for (uint16_t k = 0; k < count; k++) {
        uint32_t i = virtq_split_avail_entry__(vq, vq->last_avail_idx + k);

        /* §2.7.5.2: a chain visits each descriptor once at most. */
        for (uint32_t visited = 0; i < vq->size && visited < vq->size;
             visited++) {
            if (!virtq_iommu_ahead_spend(a)) {
                return;
            }
            struct vring_desc d = virtq_split_read_desc__(table, i);
            if (d.flags & VRING_DESC_F_INDIRECT) {
                if (virtq_indirect_ok(vq->indirect, vq->size, d.addr, d.len,
                                      d.flags)
                    && !virtq_iommu_ahead_buf(vq, a, d.addr, d.len,
                                              VHOST_ACCESS_RO)) {
                    return;
                }
                break;
            }
            if (!(d.flags & VRING_DESC_F_WRITE) != !write) {
                break;
            }
            if (!virtq_iommu_ahead_buf(vq, a, d.addr, d.len, perm)) {
                return;
            }
            if (!(d.flags & VRING_DESC_F_NEXT)) {
                break;
            }
            i = d.next;
        }
    }
}

/* The specialised burst functions, one per combination in use.  Enqueue
 * writes one used entry per chain, each with its own length, in or out of
 * order; only with mergeable buffers can a bad chain come between a
 * packet's chains, so only those have an in-order copy. */

#define VIRTQ_SPLIT_DEQUEUE(NAME, HDR_LEN, EVENT_IDX, IN_ORDER, HOST_OL)    \
    static unsigned int                                                     \
    NAME(struct virtq *vq, struct virtq_ctx *ctx, struct vhost_pkt *pkts,   \
         unsigned int n, const struct vhost_pkt_alloc *alloc)               \
    {                                                                       \
        return virtq_split_dequeue__(vq, ctx, pkts, n, alloc, HDR_LEN,      \
                                     EVENT_IDX, IN_ORDER, HOST_OL, false);  \
    }                                                                       \
    static unsigned int                                                     \
    NAME##_iommu(struct virtq *vq, struct virtq_ctx *ctx,                   \
                 struct vhost_pkt *pkts, unsigned int n,                    \
                 const struct vhost_pkt_alloc *alloc)                       \
    {                                                                       \
        return virtq_split_dequeue__(vq, ctx, pkts, n, alloc, HDR_LEN,      \
                                     EVENT_IDX, IN_ORDER, HOST_OL, true);   \
    }
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12, 12, false, false, false)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_evidx, 12, true, false, false)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_inorder, 12, false, true, false)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_evidx_inorder, 12, true, true,
                    false)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_ol, 12, false, false, true)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_evidx_ol, 12, true, false, true)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_inorder_ol, 12, false, true,
                    true)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr12_evidx_inorder_ol, 12, true,
                    true, true)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr10, 10, false, false, true)
VIRTQ_SPLIT_DEQUEUE(virtq_split_dequeue_hdr10_evidx, 10, true, false, true)

/* By [iommu][host_ol][in_order][event_idx]. */
#define VIRTQ_SPLIT_DEQUEUE_FNS(S)                                          \
    { { { virtq_split_dequeue_hdr12##S,                                     \
          virtq_split_dequeue_hdr12_evidx##S },                             \
        { virtq_split_dequeue_hdr12_inorder##S,                             \
          virtq_split_dequeue_hdr12_evidx_inorder##S } },                   \
      { { virtq_split_dequeue_hdr12_ol##S,                                  \
          virtq_split_dequeue_hdr12_evidx_ol##S },                          \
        { virtq_split_dequeue_hdr12_inorder_ol##S,                          \
          virtq_split_dequeue_hdr12_evidx_inorder_ol##S } } }
static virtq_dequeue_fn *const virtq_split_dequeue_hdr12_fns[2][2][2][2] = {
    VIRTQ_SPLIT_DEQUEUE_FNS(), VIRTQ_SPLIT_DEQUEUE_FNS(_iommu),
};

#define VIRTQ_SPLIT_ENQUEUE(NAME, HDR_LEN, MRG, EVENT_IDX, IN_ORDER)        \
    static unsigned int                                                     \
    NAME(struct virtq *vq, struct virtq_ctx *ctx,                           \
         const struct vhost_pkt *pkts, unsigned int n)                      \
    {                                                                       \
        return virtq_split_enqueue__(vq, ctx, pkts, n, HDR_LEN, MRG,        \
                                     EVENT_IDX, IN_ORDER, false);           \
    }                                                                       \
    static unsigned int                                                     \
    NAME##_iommu(struct virtq *vq, struct virtq_ctx *ctx,                   \
                 const struct vhost_pkt *pkts, unsigned int n)              \
    {                                                                       \
        return virtq_split_enqueue__(vq, ctx, pkts, n, HDR_LEN, MRG,        \
                                     EVENT_IDX, IN_ORDER, true);            \
    }
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_mrg, 12, true, false, false)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_mrg_evidx, 12, true, true, false)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_mrg_inorder, 12, true, false, true)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_mrg_evidx_inorder, 12, true, true,
                    true)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_hdr12, 12, false, false, false)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_hdr12_evidx, 12, false, true, false)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_hdr10, 10, false, false, false)
VIRTQ_SPLIT_ENQUEUE(virtq_split_enqueue_hdr10_evidx, 10, false, true, false)

/* Stores in 'vq' the burst functions for its header length (already set)
 * and the negotiated options.  IN_ORDER (bit 35) is beyond what a legacy
 * driver can negotiate, so the 10-byte header goes without it: the
 * per-chain write-back is in order too.  Its dequeue always reads the
 * header, to keep the legacy copies few.  With 'iommu' each is the copy
 * that translates I/O virtual addresses (virtq-iommu.h). */
void
virtq_split_select(struct virtq *vq, bool mrg, bool event_idx, bool in_order,
                   bool host_ol, bool iommu)
{
#define PICK(FN) (iommu ? FN##_iommu : FN)
    if (vq->hdr_len == VIRTIO_NET_HDR_LEN) {
        vq->dequeue = virtq_split_dequeue_hdr12_fns[iommu][host_ol]
                                                   [in_order][event_idx];
        if (mrg && in_order) {
            vq->enqueue = event_idx
                          ? PICK(virtq_split_enqueue_mrg_evidx_inorder)
                          : PICK(virtq_split_enqueue_mrg_inorder);
        } else if (mrg) {
            vq->enqueue = event_idx ? PICK(virtq_split_enqueue_mrg_evidx)
                                    : PICK(virtq_split_enqueue_mrg);
        } else {
            vq->enqueue = event_idx ? PICK(virtq_split_enqueue_hdr12_evidx)
                                    : PICK(virtq_split_enqueue_hdr12);
        }
    } else {
        vq->dequeue = event_idx ? PICK(virtq_split_dequeue_hdr10_evidx)
                                : PICK(virtq_split_dequeue_hdr10);
        vq->enqueue = event_idx ? PICK(virtq_split_enqueue_hdr10_evidx)
                                : PICK(virtq_split_enqueue_hdr10);
    }
#undef PICK
}
