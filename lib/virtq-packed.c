/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed virtqueue data path (VIRTIO 1.2 §2.8): see virtq-packed.h.
 *
 * Layout of this file, as virtq-split.c: chain walking, used descriptors
 * and notifications, dequeue (with its four-at-a-time batch), enqueue, and
 * the table of specialised burst functions.
 *
 * Positions: 'last_avail_idx' with 'avail_wrap_counter' is where the next
 * available chain starts; 'last_used_idx' with 'used_wrap_counter' is
 * where the next used descriptor goes.  Each advances by the number of
 * ring descriptors a chain occupies, flipping its wrap counter when it
 * passes the end of the ring (§2.8.1).
 *
 * Restarts.  Nothing in a packed ring says where the device stands, and
 * QEMU hands a backend that replaces a dead one the position of the last
 * clean stop (virtq-poslog.h).  Two ways to find the true one were
 * weighed.  A scan of the descriptor flags, looking for the first slot
 * that is available in the expected lap, cannot always decide: the device
 * overwrites only a used chain's first descriptor, so the other slots of
 * a chain longer than one, and the slots an IN_ORDER batch skips, still
 * read as available, and a scan cannot tell them from chains not yet
 * taken.  So each ring's positions are logged instead, one 8-byte store
 * per burst into a small shared file under the run directory
 * (virtq_packed_poslog__()), matched to the same ring addresses and
 * guest memory file on reconnect.  Made just before the store that hands
 * the burst's used descriptors over, it leaves the burst's start and end
 * for the first used descriptor's flags to choose between, which is exact
 * for any chain length.  The cost is that one store per burst, in a line
 * only this ring's thread writes.
 */

#include <config.h>
#include "virtq-packed.h"

#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include "guest-mem.h"
#include "util.h"
#include "vhost-cold.h"
#include "vhost-dirty-log.h"
#include "vhost-iotlb.h"
#include "virtio-net-hdr.h"
#include "virtio-ring.h"
#include "virtio-ring-packed.h"
#include "virtq-poslog.h"
#include "virtq-segs.h"
#include "virtq.h"
#include "virtq-iommu.h"

/* Descriptors handled together when they are all simple: one cache line
 * of the ring (64 / 16). */
#define VIRTQ_PACKED_BATCH 4

/* Used descriptors collected during a burst, written back at its end. */
#define VIRTQ_PACKED_SHADOW_SIZE (VHOST_MAX_BURST * 4)

struct virtq_packed_used {
    uint16_t id;
    uint16_t count;             /* Ring descriptors the chain took. */
    uint32_t len;
};

/* With VIRTIO_F_IN_ORDER a dequeue burst keeps no elements: it counts
 * its chains and their descriptors and remembers the last chain's id,
 * which is all that its one used descriptor says (§2.8.8). */
struct virtq_packed_shadow {
    unsigned int n;             /* Chains used in this burst. */
    unsigned int written;       /* Of them, in the ring already, all but
                                 * the first one's flags. */
    uint16_t head_idx;          /* Where the first one went, and its */
    uint16_t head_flags;        /* flags, stored last. */
    uint16_t last_id;           /* In order: the last one's buffer id. */
    uint32_t count;             /* In order: ring descriptors they took. */
    struct virtq_packed_used elems[VIRTQ_PACKED_SHADOW_SIZE];
};


static inline void
virtq_packed_advance__(uint16_t *idx, bool *wrap, uint16_t n, uint16_t size)
{
    *idx += n;
    if (*idx >= size) {
        *idx -= size;
        *wrap = !*wrap;
    }
}

/* Reads descriptor 'i' of 'ring' into a local, its flags first: the other
 * fields are read only after the flags say the driver made it available
 * (pairs with the driver's write barrier before it sets the flags). */
static inline struct vring_packed_desc
virtq_packed_read_desc__(const struct vring_packed_desc *ring, uint16_t i)
{
    struct vring_packed_desc d;

    d.flags = __atomic_load_n(&ring[i].flags, __ATOMIC_ACQUIRE);
    d.addr = __atomic_load_n(&ring[i].addr, __ATOMIC_RELAXED);
    d.len = __atomic_load_n(&ring[i].len, __ATOMIC_RELAXED);
    d.id = __atomic_load_n(&ring[i].id, __ATOMIC_RELAXED);
    return d;
}

/* Buffer ids in flight (see 'id_gen' in virtq.h). */

/* Starts a burst: no buffer id is in flight.  Once every 65535 bursts the
 * generation wraps and the table is cleared for real. */
static inline void
virtq_packed_ids_begin__(struct virtq *vq)
{
    if (OVS_UNLIKELY(!++vq->id_cur)) {
        memset(vq->id_gen, 0, vq->id_cap * sizeof *vq->id_gen);
        vq->id_cur = 1;
    }
}

static inline bool
virtq_packed_id_in_flight__(const struct virtq *vq, uint16_t id)
{
    return vq->id_gen[id] == vq->id_cur;
}

/* Marks 'id' (below the queue size) in flight. */
static inline void
virtq_packed_id_take__(struct virtq *vq, uint16_t id)
{
    vq->id_gen[id] = vq->id_cur;
}

/* Puts back an id taken by a chain that stays available after all. */
static inline void
virtq_packed_id_put__(struct virtq *vq, uint16_t id)
{
    vq->id_gen[id] = 0;
}

/* Walks the indirect table of 'd' into 'segs', if it has no more than
 * 'room' entries; otherwise returns virtq_chain_cut('cap') having read
 * none (its entry count is known before: §2.8.19, the table's
 * descriptors are used in order, and none may itself be indirect).
 * Adds the entries it reads to '*spentp'.  'iommu' is a constant, as for
 * virtq_packed_walk__(). */
static inline int
virtq_packed_walk_indirect__(struct virtq *vq, struct virtq_ctx *ctx,
                             const struct vring_packed_desc *d, bool write,
                             struct virtq_segs *segs, uint64_t *totalp,
                             uint32_t room, uint32_t cap, uint32_t *spentp,
                             const bool iommu)
{
    void *copy = NULL;
    int reason;
    const struct vring_packed_desc *table
        = virtq_indirect_table_as(vq, ctx, d->addr, d->len, d->flags, &copy,
                                  &reason, iommu);
    if (!table) {
        return reason;
    }

    reason = -1;
    uint32_t n = d->len / sizeof(struct vring_packed_desc);
    if (OVS_UNLIKELY(n > room)) {
        free(copy);
        return virtq_chain_cut(cap);
    }
    *spentp += n;
    for (uint32_t i = 0; i < n && reason == -1; i++) {
        struct vring_packed_desc e;

        memcpy(&e, (const void *) &table[i], sizeof e);
        if (e.flags & VRING_DESC_F_INDIRECT) {
            reason = VHOST_DROP_BAD_INDIRECT;
        } else if (write && !(e.flags & VRING_DESC_F_WRITE)) {
            /* Only RX tables are checked: DPDK 22.11's virtio-user marks
             * the header entry of its TX tables device-writable, and a TX
             * buffer is only read, so the flag does no harm there. */
            reason = VHOST_DROP_BAD_DIRECTION;
        } else {
            reason = virtq_segs_add_as(vq, ctx, e.addr, e.len, write, segs,
                                       iommu);
            *totalp += e.len;
        }
    }
    free(copy);
    return reason;
}

/* Walks the chain that starts at ring position 'pos' (wrap 'wrap'),
 * appending its buffers to 'segs'.  Stores in 'c' its buffer id (from its
 * last descriptor, §2.8.6), the ring descriptors it takes and its length.
 * Takes the descriptors it reads from the burst's budget '*budgetp'
 * (virtq-segs.h).
 * Returns -1 on success, -2 if the chain is not wholly available yet,
 * VIRTQ_WALK_BUDGET if the budget ran out or VIRTQ_WALK_MISS if an address
 * has no IOTLB entry yet ('iommu', a constant: virtq-iommu.h) (the chain
 * then stays available,
 * and has taken no id), or the vhost_drop_reason (with 'c->count' and
 * 'c->id' still set, so that it can be returned as used).
 *
 * A chain longer than VIRTQ_CHAIN_VISITS_MAX is dropped
 * (VHOST_DROP_TOO_LONG), which needs its end: the rest of its ring
 * descriptors are read as for any dropped chain, without translating
 * anything, and the burst's budget is then spent.  At most one ring of
 * them per burst, as every such chain is consumed.
 *
 * A chain whose id is below the queue size takes that id (in flight until
 * the burst writes it back), whether or not it is dropped for another
 * reason; one whose id is in flight already is dropped for that reason
 * alone (VHOST_DROP_ID_IN_FLIGHT) and takes nothing: so a chain took its
 * id exactly if its id is in range and that is not its drop reason. */
static inline int
virtq_packed_walk__(struct virtq *vq, struct virtq_ctx *ctx,
                    uint16_t pos, bool wrap, bool write,
                    struct virtq_segs *segs, struct virtq_chain *c,
                    uint32_t *budgetp, const bool iommu)
{
    const struct vring_packed_desc *ring = vq->desc;
    const uint32_t cap = virtq_chain_cap(*budgetp);
    uint32_t spent = 0;
    uint64_t total = 0;
    int reason = -1;

    c->first_seg = segs->n;
    c->count = 0;
    for (;;) {
        struct vring_packed_desc d = virtq_packed_read_desc__(ring, pos);

        if (!vring_packed_desc_is_avail(d.flags, wrap)) {
            /* A chain the driver is still writing: its head is made
             * available last, so this is only a guest that lies. */
            if (c->count) {
                reason = reason < 0 ? VHOST_DROP_LOOP : reason;
                break;
            }
            return -2;
        }
        if (OVS_UNLIKELY(spent >= cap) && reason < 0) {
            reason = virtq_chain_cut(cap);
            if (reason == VIRTQ_WALK_BUDGET) {
                *budgetp -= spent;
                return reason;
            }
        }
        c->count++;
        c->id = d.id;
        spent++;

        if (reason < 0) {
            if (d.flags & VRING_DESC_F_INDIRECT) {
                reason = virtq_packed_walk_indirect__(vq, ctx, &d, write,
                                                      segs, &total,
                                                      cap - spent, cap,
                                                      &spent, iommu);
                if (virtq_walk_stopped(reason)) {
                    *budgetp -= spent;
                    return reason;
                }
            } else if (!(d.flags & VRING_DESC_F_WRITE) != !write) {
                reason = VHOST_DROP_BAD_DIRECTION;
            } else {
                reason = virtq_segs_add_as(vq, ctx, d.addr, d.len, write,
                                           segs, iommu);
                if (reason == VIRTQ_WALK_MISS) {
                    *budgetp -= spent;
                    return reason;
                }
                total += d.len;
            }
        }
        if (!(d.flags & VRING_DESC_F_NEXT)) {
            break;
        }
        /* §2.8.6: a chain is at most the ring: longer is a loop. */
        if (c->count >= vq->size) {
            reason = VHOST_DROP_LOOP;
            break;
        }
        virtq_packed_advance__(&pos, &wrap, 1, vq->size);
    }
    *budgetp = spent > *budgetp ? 0 : *budgetp - spent;

    if (c->id >= vq->size) {
        reason = reason < 0 ? VHOST_DROP_BAD_INDEX : reason;
    } else if (OVS_UNLIKELY(virtq_packed_id_in_flight__(vq, c->id))) {
        /* §2.8.6: "Buffer ID ... unique among buffers in flight".  Used
         * twice, the id could not tell the driver which buffer came
         * back; the second chain is returned, unread, with the id it
         * gave. */
        reason = VHOST_DROP_ID_IN_FLIGHT;
    } else {
        virtq_packed_id_take__(vq, c->id);
    }
    if (reason == -1 && total > UINT32_MAX) {
        reason = VHOST_DROP_TOO_BIG;
    }
    c->n_segs = segs->n - c->first_seg;
    c->len = total;
    return reason;
}

/* Used descriptors and notifications. */

/* Records chain 'id' of 'count' descriptors as used with 'len' bytes
 * written.  'in_order' (a constant) keeps only what the burst's one used
 * descriptor needs; 'len' is then 0 (dequeue). */
static inline void
virtq_packed_shadow_add__(struct virtq_packed_shadow *sh, uint16_t id,
                          uint16_t count, uint32_t len, const bool in_order)
{
    if (in_order) {
        sh->last_id = id;
        sh->count += count;
        sh->n++;
        return;
    }
    sh->elems[sh->n++] = (struct virtq_packed_used) {
        .id = id, .count = count, .len = len,
    };
}

static inline void
virtq_packed_shadow_init__(struct virtq_packed_shadow *sh)
{
    sh->n = 0;
    sh->written = 0;
    sh->head_idx = 0;
    sh->head_flags = 0;
    sh->last_id = 0;
    sh->count = 0;
}

/* Records the ring's positions in its position log, if it has one, just
 * before the store that hands a burst's used descriptors to the driver:
 * see virtq-poslog.h, "Exactness". */
static inline void
virtq_packed_poslog__(struct virtq *vq, uint16_t head_id, uint32_t head_len)
{
    if (OVS_UNLIKELY(vq->poslog)) {
        uint32_t now = (vq->last_avail_idx | vq->avail_wrap_counter << 15)
                       | (uint32_t) (vq->last_used_idx
                                     | vq->used_wrap_counter << 15) << 16;
        virtq_poslog_store(vq->poslog, &vq->poslog_last, now, head_id,
                           head_len);
    }
}

/* Marks used descriptor 'idx' of 'vq''s ring, just written, in 'ctx''s
 * dirty log (and records the write for the audit).  After the write: the
 * frontend reads and clears the log as it goes, so a mark made before
 * could be cleared before the write lands (vhost-user's "Migration").
 * The descriptor ring's own address, not the log address QEMU gives for
 * a packed ring (virtq_map() in virtq.c). */
static inline void
virtq_packed_log_used__(struct virtq *vq, struct virtq_ctx *ctx,
                        uint16_t idx)
{
    struct vring_packed_desc *ring = vq->desc;

    VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx), &ring[idx],
                                sizeof *ring);
    if (OVS_UNLIKELY(ctx->log) && vq->log_used) {
        vhost_dirty_log_write(ctx->log,
                              vq->desc_gpa + (uint64_t) idx * sizeof *ring,
                              sizeof *ring);
    }
}

/* With VIRTIO_F_IN_ORDER, writes the burst's chains back as one used
 * descriptor: §2.8.8 ("In-order use of descriptors") lets the device
 * write "a single used descriptor with the Buffer ID corresponding to the
 * last descriptor in the batch" and skip forward over the others.  It goes where
 * the first chain's would have, and the device's position moves past all
 * of them: the driver walks its own record of the chains it made
 * available, up to that id. */
static inline void
virtq_packed_flush_used_in_order__(struct virtq *vq, struct virtq_ctx *ctx,
                                   struct virtq_packed_shadow *sh)
{
    struct vring_packed_desc *ring = vq->desc;
    uint16_t idx = vq->last_used_idx;

    if (!sh->n) {
        return;
    }
    uint16_t flags = vring_packed_used_flags(vq->used_wrap_counter, 0);
    /* 'count' is at most VIRTQ_PACKED_SHADOW_SIZE chains of at most the
     * ring each, but the positions they took are consecutive and at most
     * one lap: the avail position moved past them the same way. */
    while (sh->count) {
        uint16_t step = MIN(sh->count, vq->size);

        virtq_packed_advance__(&vq->last_used_idx, &vq->used_wrap_counter,
                               step, vq->size);
        sh->count -= step;
    }
    /* The head's id and length only after the log: until it is written,
     * the successor of a killed process walks this slot again as the
     * driver made it available (virtq-poslog.h, "Exactness"). */
    virtq_packed_poslog__(vq, sh->last_id, 0);
    ring[idx].id = sh->last_id;
    ring[idx].len = 0;
    /* The id before the flags that hand the descriptor to the driver:
     * pairs with the driver's read barrier between seeing the flags used
     * and reading the id. */
    __atomic_store_n(&ring[idx].flags, flags, __ATOMIC_RELEASE);
    virtq_packed_log_used__(vq, ctx, idx);
    sh->n = 0;
}

/* Writes the shadow used descriptors that are not in the ring yet, every
 * field of them but the burst's first descriptor's (its id, length and
 * flags: virtq_packed_flush_used__()).  §2.8.5: a used
 * descriptor has AVAIL and USED both equal to the device's wrap counter.
 * The driver polls the first one, so it sees none of the others before
 * virtq_packed_flush_used__() hands it over.  Called as the burst goes,
 * a batch at a time, so that taking the ring's cache lines back from the
 * driver's CPU overlaps with copying the next packets rather than
 * queueing up, line after line, at the end of the burst. */
static inline void
virtq_packed_write_used__(struct virtq *vq, struct virtq_ctx *ctx,
                          struct virtq_packed_shadow *sh)
{
    struct vring_packed_desc *ring = vq->desc;

    for (unsigned int i = sh->written; i < sh->n; i++) {
        const struct virtq_packed_used *u = &sh->elems[i];
        uint16_t idx = vq->last_used_idx;
        uint16_t flags = vring_packed_used_flags(vq->used_wrap_counter,
                                                 u->len);

        if (i == 0) {
            /* Its id and length too wait for virtq_packed_flush_used__(),
             * and so does its mark in the dirty log: see there. */
            sh->head_idx = idx;
            sh->head_flags = flags;
        } else {
            ring[idx].id = u->id;
            ring[idx].len = u->len;
            __atomic_store_n(&ring[idx].flags, flags, __ATOMIC_RELAXED);
            virtq_packed_log_used__(vq, ctx, idx);
        }
        virtq_packed_advance__(&vq->last_used_idx, &vq->used_wrap_counter,
                               u->count, vq->size);
    }
    sh->written = sh->n;
}

/* Writes what is left of the shadow used descriptors into the ring and
 * then, after one release barrier, the first one's flags, so that the
 * driver, which polls that descriptor, sees the whole burst at once. */
static inline void
virtq_packed_flush_used__(struct virtq *vq, struct virtq_ctx *ctx,
                          struct virtq_packed_shadow *sh)
{
    struct vring_packed_desc *ring = vq->desc;

    if (!sh->n) {
        return;
    }
    virtq_packed_write_used__(vq, ctx, sh);
    /* The head's id and length only after the log: until it is written,
     * the successor of a killed process walks the head slot again as the
     * driver made it available (virtq-poslog.h, "Exactness"). */
    virtq_packed_poslog__(vq, sh->elems[0].id, sh->elems[0].len);
    ring[sh->head_idx].id = sh->elems[0].id;
    ring[sh->head_idx].len = sh->elems[0].len;
    /* The one barrier of the write-back: every descriptor above before
     * the head's flags (pairs with the driver's read barrier between
     * seeing the head used and reading the descriptors). */
    __atomic_store_n(&ring[sh->head_idx].flags, sh->head_flags,
                     __ATOMIC_RELEASE);
    /* Marked only now that it is written: a frontend that read and
     * cleared the bit in between would copy the page without it. */
    virtq_packed_log_used__(vq, ctx, sh->head_idx);
    sh->n = sh->written = 0;
}

/* Tells the driver about used descriptors written since 'old_idx' /
 * 'old_wrap', if its event suppression area asks for it (§2.8.10), and
 * asks it once per queue start not to kick us: the queue is polled. */
static inline void
virtq_packed_notify__(struct virtq *vq, const struct virtq_ctx *ctx,
                      uint16_t old_idx, bool old_wrap, bool event_idx)
{
    struct vring_packed_event *driver = vq->avail;
    struct vring_packed_event *device = vq->used;

    if (OVS_UNLIKELY(!vq->avail_event_set)) {
        vq->avail_event_set = true;
        __atomic_store_n(&device->flags, VRING_PACKED_EVENT_FLAG_DISABLE,
                         __ATOMIC_RELAXED);
        VHOST_DIRTY_LOG_AUDIT_WRITE(virtq_log_used(vq, ctx), &device->flags,
                                    sizeof device->flags);
        if (OVS_UNLIKELY(ctx->log) && vq->log_used) {
            /* At the event area's own address, as the descriptors. */
            vhost_dirty_log_write(ctx->log, vq->used_gpa,
                                  sizeof device->flags);
        }
    }
    if (old_idx == vq->last_used_idx && old_wrap == vq->used_wrap_counter) {
        return;
    }

    /* Our used descriptors before the driver's suppression fields: pairs
     * with the driver's full barrier between writing them and checking
     * for used descriptors. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    uint16_t flags = __atomic_load_n(&driver->flags, __ATOMIC_RELAXED);
    bool need;
    if (flags == VRING_PACKED_EVENT_FLAG_DESC && event_idx) {
        uint16_t off_wrap = __atomic_load_n(&driver->off_wrap,
                                            __ATOMIC_RELAXED);
        /* Positions as if the ring did not wrap: shift the old position
         * and the event back by a ring where their wrap counters are
         * behind the current one. */
        uint16_t new_idx = vq->last_used_idx;
        uint16_t old = old_idx;
        uint16_t event = off_wrap & 0x7fff;
        if (old_wrap != vq->used_wrap_counter) {
            old -= vq->size;
        }
        if (!!(off_wrap >> 15) != vq->used_wrap_counter) {
            event -= vq->size;
        }
        need = (uint16_t) (new_idx - event - 1) < (uint16_t) (new_idx - old);
    } else {
        need = flags != VRING_PACKED_EVENT_FLAG_DISABLE;
    }

    if (need && vq->call_fd >= 0) {
        eventfd_write(vq->call_fd, 1);
        vq->stats.guest_notifications++;
    } else {
        vq->stats.notifications_suppressed++;
    }
}

/* Dequeue: the guest's TX ring into the embedder's buffers. */

/* Copies the packet of chain 'c' (header first) into 'p', which has room.
 * Returns false, after counting, if its header asks for a checksum outside
 * the packet. */
static inline bool
virtq_packed_copy_out__(struct virtq *vq, const struct virtq_segs *segs,
                        const struct virtq_chain *c,
                        struct vhost_pkt *p, uint32_t pkt_len,
                        const uint32_t hdr_len, const bool host_ol)
{
    struct virtio_net_hdr hdr;
    unsigned int seg = c->first_seg;
    unsigned int end = c->first_seg + c->n_segs;
    uint32_t off = 0;

    memset(&hdr, 0, sizeof hdr);
    if (OVS_LIKELY(segs->segs[seg].len >= hdr_len)) {
        if (host_ol) {
            memcpy(&hdr, segs->segs[seg].hva, hdr_len);
        }
        off = hdr_len;
    } else {
        vhost_cold_gather(segs, &seg, &off, &hdr, hdr_len);
    }
    if (!host_ol) {
        memset(&p->ol, 0, sizeof p->ol);
    } else if (OVS_UNLIKELY(!virtio_net_hdr_parse(&hdr, pkt_len, &p->ol))) {
        virtq_drop(vq, VHOST_DROP_BAD_CSUM);
        return false;
    }

    uint8_t *dst = p->data;
    for (; seg < end; seg++, off = 0) {
        uint32_t n = segs->segs[seg].len - off;
        virtq_copy(dst, segs->segs[seg].hva + off, n);
        dst += n;
    }
    p->len = pkt_len;
    virtq_count_pkt(&vq->stats, p->data, pkt_len);
    return true;
}

/* Prefetch ahead of the batches, the packed twin of the split ring's
 * pipeline: the buffers of the batch 'ahead' batches from the ring's
 * next available descriptor (their first line, where the header is, and
 * 'hdr_len' bytes on, where the frame starts; for writing on enqueue),
 * and the ring line VIRTQ_PACKED_DESC_AHEAD - 1 batches after those.
 * Called before each batch with 'ahead' 1, and at the end of a burst with
 * 'ahead' 0, for the next burst's first batch: by the time a batch reads
 * its buffers, their lines have had a batch's work (or the rest of the
 * embedder's poll loop) to arrive.  The batch's own prefetches come too
 * late to hide a miss to the driver's CPU, where its buffers are.  A
 * hint only: the descriptors are read without ordering, and one that is
 * not available yet, or not in guest memory, is skipped; the batch reads
 * and checks everything again.  Stops at the ring's end, where the wrap
 * counter would flip.  Before a batch ('ahead' 1) it only runs where a
 * batch can start, at a multiple of VIRTQ_PACKED_BATCH: where chains go
 * one at a time, it would otherwise prefetch (and translate) the same
 * descriptors for each of the four chains before them. */
#define VIRTQ_PACKED_DESC_AHEAD 2

static OVS_ALWAYS_INLINE void
virtq_packed_prefetch_ahead__(const struct virtq *vq,
                              const struct guest_mem *mem,
                              const uint32_t hdr_len, const bool write,
                              const unsigned int ahead)
{
    const struct vring_packed_desc *ring = vq->desc;
    uint32_t pos = (uint32_t) vq->last_avail_idx + ahead * VIRTQ_PACKED_BATCH;

    if (ahead && vq->last_avail_idx & (VIRTQ_PACKED_BATCH - 1)) {
        return;
    }
    if (pos + VIRTQ_PACKED_DESC_AHEAD * VIRTQ_PACKED_BATCH <= vq->size) {
        __builtin_prefetch(&ring[pos + (VIRTQ_PACKED_DESC_AHEAD - 1)
                                       * VIRTQ_PACKED_BATCH]);
    }
    if (pos + VIRTQ_PACKED_BATCH > vq->size) {
        return;
    }
    for (int i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        uint16_t flags = __atomic_load_n(&ring[pos + i].flags,
                                         __ATOMIC_RELAXED);
        if (!vring_packed_desc_is_avail(flags, vq->avail_wrap_counter)) {
            return;
        }
        uint64_t len = hdr_len + 1;
        uint8_t *hva = guest_mem_gpa_to_hva(
            mem, __atomic_load_n(&ring[pos + i].addr, __ATOMIC_RELAXED),
            &len);
        if (!hva) {
            continue;
        }
        /* (A prefetch never faults; 'len' keeps even the hint inside
         * the region.) */
        if (write) {
            __builtin_prefetch(hva, 1);
            if (len > hdr_len) {
                __builtin_prefetch(hva + hdr_len, 1);
            }
        } else {
            __builtin_prefetch(hva);
            if (len > hdr_len) {
                __builtin_prefetch(hva + hdr_len);
            }
        }
    }
}

/* Tries to take VIRTQ_PACKED_BATCH simple descriptors at once: available,
 * single (no NEXT, no INDIRECT), device-readable, inside one region each,
 * with a good header (read only with 'host_ol'), within one cache line of
 * the ring.  Returns false,
 * having consumed nothing, if the batch does not apply (the caller then
 * goes one chain at a time, rereading everything); otherwise puts the
 * packets in 'pkts' and returns true. */
static OVS_ALWAYS_INLINE bool
virtq_packed_dequeue_batch__(struct virtq *vq, struct virtq_ctx *ctx,
                             struct vhost_pkt *pkts,
                             const struct vhost_pkt_alloc *alloc,
                             struct virtq_packed_shadow *sh,
                             const uint32_t hdr_len, const uint32_t max_len,
                             const bool in_order, const bool host_ol)
{
    const struct vring_packed_desc *ring = vq->desc;
    uint16_t pos = vq->last_avail_idx;
    struct vring_packed_desc d[VIRTQ_PACKED_BATCH];
    struct vhost_offload ol[VIRTQ_PACKED_BATCH];
    uint8_t *hva[VIRTQ_PACKED_BATCH];
    int i;

    if (pos & (VIRTQ_PACKED_BATCH - 1)
        || pos + VIRTQ_PACKED_BATCH > vq->size) {
        return false;
    }
    /* The flags first, each with acquire: the other fields only once the
     * flags say available (pairs with the driver's write barrier before it
     * sets a descriptor's flags). */
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        d[i].flags = __atomic_load_n(&ring[pos + i].flags, __ATOMIC_ACQUIRE);
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        if (!vring_packed_desc_is_avail(d[i].flags, vq->avail_wrap_counter)
            || d[i].flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT
                             | VRING_DESC_F_WRITE)) {
            return false;
        }
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        d[i].addr = __atomic_load_n(&ring[pos + i].addr, __ATOMIC_RELAXED);
        d[i].len = __atomic_load_n(&ring[pos + i].len, __ATOMIC_RELAXED);
        d[i].id = __atomic_load_n(&ring[pos + i].id, __ATOMIC_RELAXED);
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        uint64_t avail = d[i].len;

        if (d[i].id >= vq->size || d[i].len < hdr_len
            || d[i].len - hdr_len > max_len
            || virtq_packed_id_in_flight__(vq, d[i].id)) {
            return false;
        }
        for (int j = 0; j < i; j++) {
            if (d[j].id == d[i].id) {
                return false;   /* The single path drops the second. */
            }
        }
        hva[i] = guest_mem_gpa_to_hva(ctx->mem, d[i].addr, &avail);
        if (!hva[i] || avail != d[i].len) {
            return false;
        }
        if (host_ol) {
            __builtin_prefetch(hva[i]);
        }
        __builtin_prefetch(hva[i] + hdr_len);
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        /* The header, read once into a local before it is checked. */
        struct virtio_net_hdr hdr;

        if (host_ol) {
            memset(&hdr, 0, sizeof hdr);
            memcpy(&hdr, hva[i], hdr_len);
            if (!virtio_net_hdr_parse(&hdr, d[i].len - hdr_len, &ol[i])) {
                return false;
            }
        } else {
            memset(&ol[i], 0, sizeof ol[i]);
        }
        if (!virtq_get_buf(&pkts[i], d[i].len - hdr_len, alloc)) {
            return false;
        }
    }

    /* Committed: every descriptor of the batch is used. */
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        struct vhost_pkt *p = &pkts[i];

        p->len = d[i].len - hdr_len;
        p->ol = ol[i];
        virtq_copy(p->data, hva[i] + hdr_len, p->len);
        virtq_count_pkt(&vq->stats, p->data, p->len);
        virtq_packed_id_take__(vq, d[i].id);
        virtq_packed_shadow_add__(sh, d[i].id, 1, 0, in_order);
    }
    virtq_packed_advance__(&vq->last_avail_idx, &vq->avail_wrap_counter,
                           VIRTQ_PACKED_BATCH, vq->size);
    return true;
}

static OVS_ALWAYS_INLINE unsigned int
virtq_packed_dequeue__(struct virtq *vq, struct virtq_ctx *ctx,
                       struct vhost_pkt *pkts, unsigned int n,
                       const struct vhost_pkt_alloc *alloc,
                       const uint32_t hdr_len, const bool event_idx,
                       const bool in_order, const bool host_ol,
                       const bool iommu)
{
    struct virtq_packed_shadow sh;
    struct virtq_segs segs;
    uint16_t old_idx = vq->last_used_idx;
    bool old_wrap = vq->used_wrap_counter;
    const uint32_t max_len = virtq_max_pkt_len(alloc);
    unsigned int out = 0;
    unsigned int chains = 0;

    if (OVS_UNLIKELY(vq->broken)) {
        return 0;
    }
    n = MIN(n, VHOST_MAX_BURST);
    const uint32_t budget = virtq_budget(n);
    uint32_t left = budget;
    virtq_packed_shadow_init__(&sh);
    virtq_packed_ids_begin__(vq);
    while (out < n && chains < VHOST_MAX_BURST) {
        /* With an IOMMU, addresses are IOVAs: no batches, which translate
         * inline, and no prefetches. */
        if (!iommu && out + 2 * VIRTQ_PACKED_BATCH <= n
            && chains + 2 * VIRTQ_PACKED_BATCH <= VHOST_MAX_BURST) {
            virtq_packed_prefetch_ahead__(vq, ctx->mem, hdr_len, false, 1);
        }
        if (!iommu && out + VIRTQ_PACKED_BATCH <= n
            && chains + VIRTQ_PACKED_BATCH <= VHOST_MAX_BURST
            && left >= VIRTQ_PACKED_BATCH
            && virtq_packed_dequeue_batch__(vq, ctx, pkts + out, alloc, &sh,
                                            hdr_len, max_len, in_order,
                                            host_ol)) {
            out += VIRTQ_PACKED_BATCH;
            chains += VIRTQ_PACKED_BATCH;
            left -= VIRTQ_PACKED_BATCH;
            if (!in_order) {
                virtq_packed_write_used__(vq, ctx, &sh);
            }
            continue;
        }

        struct virtq_chain c;
        segs.n = 0;
        int reason = virtq_packed_walk__(vq, ctx, vq->last_avail_idx,
                                         vq->avail_wrap_counter, false,
                                         &segs, &c, &left, iommu);
        if (reason == -2) {
            break;              /* Nothing more available. */
        }
        if (OVS_UNLIKELY(virtq_walk_stopped(reason))) {
            /* The chain stays available for the next burst. */
            vhost_cold_walk_stop(vq, reason, budget);
            break;
        }
        if (OVS_LIKELY(reason < 0)
            && OVS_UNLIKELY(c.len < hdr_len
                            || c.len - hdr_len > max_len)) {
            reason = c.len < hdr_len ? VHOST_DROP_SHORT_HDR
                                     : VHOST_DROP_TOO_BIG;
        }
        if (OVS_LIKELY(reason < 0)) {
            uint32_t pkt_len = c.len - hdr_len;
            if (OVS_UNLIKELY(!virtq_get_buf(&pkts[out], pkt_len, alloc))) {
                break;          /* No buffer: the chain stays available. */
            }
            if (virtq_packed_copy_out__(vq, &segs, &c, &pkts[out], pkt_len,
                                        hdr_len, host_ol)) {
                out++;
            }
        } else {
            virtq_drop(vq, reason);
        }
        virtq_packed_shadow_add__(&sh, c.id, c.count, 0, in_order);
        virtq_packed_advance__(&vq->last_avail_idx, &vq->avail_wrap_counter,
                               c.count, vq->size);
        chains++;
    }
    virtq_budget_end(&vq->stats, budget, left);

    if (in_order) {
        virtq_packed_flush_used_in_order__(vq, ctx, &sh);
    } else {
        virtq_packed_flush_used__(vq, ctx, &sh);
    }
    virtq_packed_notify__(vq, ctx, old_idx, old_wrap, event_idx);
    if (out && !iommu) {
        virtq_packed_prefetch_ahead__(vq, ctx->mem, hdr_len, false, 0);
    }
    return out;
}

/* Enqueue: the embedder's packets into the guest's RX ring. */

/* Reserves guest buffers for 'need' bytes from the avail position on: one
 * chain, or with 'mrg' as many as it takes.  Stores the good chains in
 * 'chains' and advances the avail position past what is consumed.  Chains
 * that break a rule are dropped into 'sh' as they come; where they go
 * depends on 'in_order', as in virtq_split_reserve__(): ahead of the
 * packet's chains without it (§5.1.6.4), in ring order with it (§2.8.8),
 * a bad chain then ending the packet's use of the good ones before it.
 * The walks take their descriptors from the burst's budget '*budgetp'.
 * Returns -1 on success, VHOST_DROP_NO_BUFS if the ring ran out,
 * VHOST_DROP_TOO_BIG if the chains from the head on cannot hold the
 * packet (the bytes they hold in '*havep'), or VIRTQ_WALK_BUDGET or
 * VIRTQ_WALK_MISS if a walk stopped ('iommu' is a constant): see
 * virtq_split_enqueue_stop__() for why the burst then stops. */
static OVS_ALWAYS_INLINE int
virtq_packed_reserve__(struct virtq *vq, struct virtq_ctx *ctx,
                       struct virtq_packed_shadow *sh, uint32_t need,
                       const bool mrg, const bool in_order,
                       struct virtq_segs *segs, struct virtq_chain *chains,
                       unsigned int *n_chainsp, unsigned int *drop_budgetp,
                       uint32_t *budgetp, uint64_t *havep, const bool iommu)
{
    /* By shadow entry from 'sh_start': -1 for a good chain, else why it
     * was dropped. */
    int8_t why[VIRTQ_PACKED_SHADOW_SIZE];
    unsigned int sh_start = sh->n;
    unsigned int keep = 0;      /* Entries consumed whatever happens. */
    unsigned int n_dropped = 0;
    uint16_t keep_pos = vq->last_avail_idx;
    bool keep_wrap = vq->avail_wrap_counter;
    uint16_t pos = vq->last_avail_idx;
    bool wrap = vq->avail_wrap_counter;
    unsigned int n_chains = 0;
    uint64_t have = 0;
    int stopped = 0;            /* Why the walks stopped, if they did. */

    segs->n = 0;
    while (have < need) {
        if (sh->n + (in_order ? 0 : n_chains) >= VIRTQ_PACKED_SHADOW_SIZE
            || n_chains >= (mrg ? VIRTQ_MAX_CHAINS_PER_PKT : 1)
            || n_dropped >= *drop_budgetp) {
            break;
        }

        struct virtq_chain *c = &chains[n_chains];
        unsigned int first = segs->n;
        int reason = virtq_packed_walk__(vq, ctx, pos, wrap, true, segs, c,
                                         budgetp, iommu);
        if (reason == -2) {
            break;
        }
        if (OVS_UNLIKELY(virtq_walk_stopped(reason))) {
            segs->n = first;
            stopped = reason;
            break;
        }
        virtq_packed_advance__(&pos, &wrap, c->count, vq->size);
        if (OVS_UNLIKELY(reason >= 0)) {
            why[sh->n - sh_start] = reason;
            virtq_packed_shadow_add__(sh, c->id, c->count, 0, false);
            segs->n = first;
            n_dropped++;
            if (!n_chains || in_order) {
                keep = sh->n - sh_start;
                keep_pos = pos;
                keep_wrap = wrap;
                n_chains = 0;
                have = 0;
                segs->n = 0;
            }
            continue;
        }
        c->shadow_idx = sh->n;
        if (in_order) {
            why[sh->n - sh_start] = -1;
            virtq_packed_shadow_add__(sh, c->id, c->count, 0, false);
        }
        n_chains++;
        have += c->len;
    }

    *n_chainsp = n_chains;
    if (have >= need) {
        for (unsigned int k = 0; k < sh->n - sh_start; k++) {
            if (OVS_UNLIKELY(why[k] >= 0)) {
                virtq_drop(vq, why[k]);
            }
        }
        *drop_budgetp -= n_dropped;
        vq->last_avail_idx = pos;
        vq->avail_wrap_counter = wrap;
        return -1;
    }

    /* Not enough: the chains from the packet's first good one on stay
     * available, to be met again, so they give back the ids they took
     * (virtq_packed_walk__() says which did). */
    for (unsigned int k = 0; k < keep; k++) {
        if (why[k] >= 0) {
            virtq_drop(vq, why[k]);
            (*drop_budgetp)--;
        }
    }
    for (unsigned int k = keep; k < sh->n - sh_start; k++) {
        uint16_t id = sh->elems[sh_start + k].id;

        if (id < vq->size && why[k] != VHOST_DROP_ID_IN_FLIGHT) {
            virtq_packed_id_put__(vq, id);
        }
    }
    if (!in_order) {
        for (unsigned int k = 0; k < n_chains; k++) {
            virtq_packed_id_put__(vq, chains[k].id);
        }
    }
    sh->n = sh_start + keep;
    vq->last_avail_idx = keep_pos;
    vq->avail_wrap_counter = keep_wrap;
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

/* Tries to put packets 'pkts[0..VIRTQ_PACKED_BATCH)' into as many simple
 * descriptors at once, the enqueue twin of virtq_packed_dequeue_batch__():
 * available, single (no NEXT, no INDIRECT), device-writable, with an id
 * in range, not in flight and not twice in the batch, long enough for
 * the header and the packet, and inside one region each, all within one
 * cache line of the ring.  Returns false, having consumed nothing, if the
 * batch does not apply (the caller then goes one packet at a time,
 * rereading everything); otherwise fills them and returns true.  Every
 * packet takes one buffer, so num_buffers is 1 with MRG_RXBUF too.
 * Saves the chain walk, the segment list and the fill's general loop:
 * the per-packet work that is not the copy. */
static OVS_ALWAYS_INLINE bool
virtq_packed_enqueue_batch__(struct virtq *vq, struct virtq_ctx *ctx,
                             const struct vhost_pkt *pkts,
                             struct virtq_packed_shadow *sh,
                             const uint32_t hdr_len, const bool hdr_cmp,
                             unsigned int *hdr_storedp)
{
    const struct vring_packed_desc *ring = vq->desc;
    uint16_t pos = vq->last_avail_idx;
    struct vring_packed_desc d[VIRTQ_PACKED_BATCH];
    uint8_t *hva[VIRTQ_PACKED_BATCH];
    int i;

    if (pos & (VIRTQ_PACKED_BATCH - 1)
        || pos + VIRTQ_PACKED_BATCH > vq->size) {
        return false;
    }
    /* The flags first, each with acquire: the other fields only once the
     * flags say available (pairs with the driver's write barrier before it
     * sets a descriptor's flags). */
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        d[i].flags = __atomic_load_n(&ring[pos + i].flags, __ATOMIC_ACQUIRE);
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        if (!vring_packed_desc_is_avail(d[i].flags, vq->avail_wrap_counter)
            || (d[i].flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT
                              | VRING_DESC_F_WRITE)) != VRING_DESC_F_WRITE) {
            return false;
        }
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        d[i].addr = __atomic_load_n(&ring[pos + i].addr, __ATOMIC_RELAXED);
        d[i].len = __atomic_load_n(&ring[pos + i].len, __ATOMIC_RELAXED);
        d[i].id = __atomic_load_n(&ring[pos + i].id, __ATOMIC_RELAXED);
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        uint64_t avail = d[i].len;

        /* Guest-controlled: 'len' and 'addr' read once above; the whole
         * buffer must lie in one region, as virtq_segs_add() wants. */
        if (d[i].id >= vq->size || d[i].len < hdr_len
            || d[i].len - hdr_len < pkts[i].len
            || virtq_packed_id_in_flight__(vq, d[i].id)) {
            return false;
        }
        for (int j = 0; j < i; j++) {
            if (d[j].id == d[i].id) {
                return false;
            }
        }
        hva[i] = guest_mem_gpa_to_hva(ctx->mem, d[i].addr, &avail);
        if (!hva[i] || avail != d[i].len) {
            return false;
        }
        /* The four headers' lines and the packets' first lines all at
         * once, so that their misses overlap. */
        __builtin_prefetch(hva[i]);
        __builtin_prefetch(hva[i] + hdr_len, 1);
    }

    /* Committed: every descriptor of the batch is used.  The packets go
     * first and the headers after them: a header that has to be compared
     * (virtq_hdr_mode_begin()) stalls until its line arrives, and the
     * copies give the prefetches above some of that time. */
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        const struct vhost_pkt *p = &pkts[i];

        virtq_copy(hva[i] + hdr_len, p->data, p->len);
        VHOST_DIRTY_LOG_AUDIT_WRITE(ctx->log, hva[i], hdr_len + p->len);
        if (OVS_UNLIKELY(ctx->log)) {
            vhost_dirty_log_write(ctx->log, d[i].addr, hdr_len + p->len);
        }
        virtq_count_pkt(&vq->stats, p->data, p->len);
        virtq_packed_id_take__(vq, d[i].id);
        virtq_packed_shadow_add__(sh, d[i].id, 1, hdr_len + p->len, false);
    }
    for (i = 0; i < VIRTQ_PACKED_BATCH; i++) {
        *hdr_storedp += virtq_hdr_store(hva[i], &pkts[i].ol, 1, hdr_len,
                                        hdr_cmp);
    }
    virtq_packed_advance__(&vq->last_avail_idx, &vq->avail_wrap_counter,
                           VIRTQ_PACKED_BATCH, vq->size);
    return true;
}

static OVS_ALWAYS_INLINE unsigned int
virtq_packed_enqueue__(struct virtq *vq, struct virtq_ctx *ctx,
                       const struct vhost_pkt *pkts, unsigned int n,
                       const uint32_t hdr_len, const bool mrg,
                       const bool event_idx, const bool in_order,
                       const bool iommu)
{
    struct virtq_chain chains[VIRTQ_MAX_CHAINS_PER_PKT];
    struct virtq_packed_shadow sh;
    struct virtq_segs segs;
    uint16_t old_idx = vq->last_used_idx;
    bool old_wrap = vq->used_wrap_counter;
    unsigned int drop_budget = VHOST_MAX_BURST;
    unsigned int done = 0;

    if (OVS_UNLIKELY(vq->broken)) {
        return 0;
    }
    virtq_packed_shadow_init__(&sh);
    virtq_packed_ids_begin__(vq);
    n = MIN(n, VHOST_MAX_BURST);
    const uint32_t budget = virtq_budget(n);
    uint32_t left = budget;
    const bool hdr_cmp = virtq_hdr_mode_begin(vq);
    unsigned int hdr_stored = 0, hdr_put = 0;

    while (done < n) {
        const struct vhost_pkt *p = &pkts[done];
        unsigned int n_chains;

        /* As in dequeue: no batches or prefetches with an IOMMU. */
        if (!iommu && done + 2 * VIRTQ_PACKED_BATCH <= n) {
            virtq_packed_prefetch_ahead__(vq, ctx->mem, hdr_len, true, 1);
        }
        if (!iommu && done + VIRTQ_PACKED_BATCH <= n
            && sh.n + VIRTQ_PACKED_BATCH <= VIRTQ_PACKED_SHADOW_SIZE
            && left >= VIRTQ_PACKED_BATCH
            && virtq_packed_enqueue_batch__(vq, ctx, p, &sh, hdr_len,
                                            hdr_cmp, &hdr_stored)) {
            done += VIRTQ_PACKED_BATCH;
            left -= VIRTQ_PACKED_BATCH;
            hdr_put += VIRTQ_PACKED_BATCH;
            virtq_packed_write_used__(vq, ctx, &sh);
            continue;
        }

        uint64_t have;
        int reason = virtq_packed_reserve__(vq, ctx, &sh, hdr_len + p->len,
                                            mrg, in_order, &segs, chains,
                                            &n_chains, &drop_budget, &left,
                                            &have, iommu);
        if (OVS_UNLIKELY(reason != -1)) {
            /* Buffers too small stop the burst: see
             * virtq_split_enqueue_stop__(). */
            if (reason == VHOST_DROP_TOO_BIG) {
                vhost_cold_small_buf_stop(vq, hdr_len + p->len, have);
            } else if (virtq_walk_stopped(reason)) {
                vhost_cold_walk_stop(vq, reason, budget);
            }
            break;
        }

        hdr_stored += virtq_segs_fill(&segs, chains, n_chains, hdr_len, p,
                                      ctx->log, hdr_cmp);
        hdr_put++;
        for (unsigned int c = 0; c < n_chains; c++) {
            if (in_order) {
                sh.elems[chains[c].shadow_idx].len = chains[c].written;
            } else {
                virtq_packed_shadow_add__(&sh, chains[c].id, chains[c].count,
                                          chains[c].written, false);
            }
        }
        virtq_count_pkt(&vq->stats, p->data, p->len);
        done++;
        if (sh.n - sh.written >= VIRTQ_PACKED_BATCH) {
            /* Every entry so far is final: reserve__() only takes back
             * entries it added itself. */
            virtq_packed_write_used__(vq, ctx, &sh);
        }
    }

    virtq_budget_end(&vq->stats, budget, left);
    virtq_hdr_mode_end(vq, hdr_cmp, hdr_put, hdr_stored);
    virtq_packed_flush_used__(vq, ctx, &sh);
    virtq_packed_notify__(vq, ctx, old_idx, old_wrap, event_idx);
    if (done && !iommu) {
        virtq_packed_prefetch_ahead__(vq, ctx->mem, hdr_len, true, 0);
    }
    return done;
}

/* Ask ahead (virtq-iommu.h): the packed ring's part of
 * virtq_iommu_look_ahead().  Reads the descriptors available from
 * 'last_avail_idx' on, up to VIRTQ_IOMMU_AHEAD_CHAINS chains and never
 * more than the ring (§2.8.6: a chain is at most the ring), and hands
 * look-ahead 'a' each buffer of the burst's direction and each indirect
 * table, whose descriptors it does not read (the table may miss).  A
 * descriptor that breaks a rule ends its chain's part, for the burst to
 * drop.  Each descriptor read costs 'a' one unit of its bounded work. */
void
virtq_packed_look_ahead(struct virtq *vq, struct virtq_iommu_ahead *a)
{
    const struct vring_packed_desc *ring = vq->desc;
    const bool write = a->write;
    const uint8_t perm = write ? VHOST_ACCESS_WO : VHOST_ACCESS_RO;
    uint16_t pos = vq->last_avail_idx;
    bool wrap = vq->avail_wrap_counter;
    unsigned int chains = 0;
    bool skip = false;          /* The rest of this chain. */

    for (uint32_t seen = 0;
         seen < vq->size && chains < VIRTQ_IOMMU_AHEAD_CHAINS; seen++) {
        if (!virtq_iommu_ahead_spend(a)) {
            return;
        }
        struct vring_packed_desc d = virtq_packed_read_desc__(ring, pos);
        if (!vring_packed_desc_is_avail(d.flags, wrap)) {
            return;
        }
        if (skip) {
            /* Nothing more of this chain. */
        } else if (d.flags & VRING_DESC_F_INDIRECT) {
            if (virtq_indirect_ok(vq->indirect, vq->size, d.addr, d.len,
                                  d.flags)
                && !virtq_iommu_ahead_buf(vq, a, d.addr, d.len,
                                          VHOST_ACCESS_RO)) {
                return;
            }
            skip = true;
        } else if (!(d.flags & VRING_DESC_F_WRITE) != !write) {
            skip = true;
        } else if (!virtq_iommu_ahead_buf(vq, a, d.addr, d.len, perm)) {
            return;
        }
        if (!(d.flags & VRING_DESC_F_NEXT)) {
            chains++;
            skip = false;
        }
        virtq_packed_advance__(&pos, &wrap, 1, vq->size);
    }
}

/* The specialised burst functions, one per combination in use.  Enqueue
 * writes one used descriptor per chain, each with its own length, in or
 * out of order; only with mergeable buffers can a bad chain come between
 * a packet's chains, so only those have an in-order copy.  Dequeue reads
 * the guest's header only with host offloads ("_ol"; see
 * virtq_host_offloads()). */

#define VIRTQ_PACKED_DEQUEUE(NAME, HDR_LEN, EVENT_IDX, IN_ORDER, HOST_OL)   \
    static unsigned int                                                     \
    NAME(struct virtq *vq, struct virtq_ctx *ctx, struct vhost_pkt *pkts,   \
         unsigned int n, const struct vhost_pkt_alloc *alloc)               \
    {                                                                       \
        return virtq_packed_dequeue__(vq, ctx, pkts, n, alloc, HDR_LEN,     \
                                      EVENT_IDX, IN_ORDER, HOST_OL, false); \
    }                                                                       \
    static unsigned int                                                     \
    NAME##_iommu(struct virtq *vq, struct virtq_ctx *ctx,                   \
                 struct vhost_pkt *pkts, unsigned int n,                    \
                 const struct vhost_pkt_alloc *alloc)                       \
    {                                                                       \
        return virtq_packed_dequeue__(vq, ctx, pkts, n, alloc, HDR_LEN,     \
                                      EVENT_IDX, IN_ORDER, HOST_OL, true);  \
    }
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12, 12, false, false, false)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_evidx, 12, true, false, false)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_inorder, 12, false, true,
                     false)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_evidx_inorder, 12, true, true,
                     false)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_ol, 12, false, false, true)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_evidx_ol, 12, true, false,
                     true)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_inorder_ol, 12, false, true,
                     true)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr12_evidx_inorder_ol, 12, true,
                     true, true)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr10, 10, false, false, true)
VIRTQ_PACKED_DEQUEUE(virtq_packed_dequeue_hdr10_evidx, 10, true, false, true)

/* By [iommu][host_ol][in_order][event_idx]. */
#define VIRTQ_PACKED_DEQUEUE_FNS(S)                                         \
    { { { virtq_packed_dequeue_hdr12##S,                                    \
          virtq_packed_dequeue_hdr12_evidx##S },                            \
        { virtq_packed_dequeue_hdr12_inorder##S,                            \
          virtq_packed_dequeue_hdr12_evidx_inorder##S } },                  \
      { { virtq_packed_dequeue_hdr12_ol##S,                                 \
          virtq_packed_dequeue_hdr12_evidx_ol##S },                         \
        { virtq_packed_dequeue_hdr12_inorder_ol##S,                         \
          virtq_packed_dequeue_hdr12_evidx_inorder_ol##S } } }
static virtq_dequeue_fn *const virtq_packed_dequeue_hdr12_fns[2][2][2][2] = {
    VIRTQ_PACKED_DEQUEUE_FNS(), VIRTQ_PACKED_DEQUEUE_FNS(_iommu),
};

#define VIRTQ_PACKED_ENQUEUE(NAME, HDR_LEN, MRG, EVENT_IDX, IN_ORDER)       \
    static unsigned int                                                     \
    NAME(struct virtq *vq, struct virtq_ctx *ctx,                           \
         const struct vhost_pkt *pkts, unsigned int n)                      \
    {                                                                       \
        return virtq_packed_enqueue__(vq, ctx, pkts, n, HDR_LEN, MRG,       \
                                      EVENT_IDX, IN_ORDER, false);          \
    }                                                                       \
    static unsigned int                                                     \
    NAME##_iommu(struct virtq *vq, struct virtq_ctx *ctx,                   \
                 const struct vhost_pkt *pkts, unsigned int n)              \
    {                                                                       \
        return virtq_packed_enqueue__(vq, ctx, pkts, n, HDR_LEN, MRG,       \
                                      EVENT_IDX, IN_ORDER, true);           \
    }
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_mrg, 12, true, false, false)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_mrg_evidx, 12, true, true, false)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_mrg_inorder, 12, true, false, true)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_mrg_evidx_inorder, 12, true, true,
                     true)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_hdr12, 12, false, false, false)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_hdr12_evidx, 12, false, true, false)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_hdr10, 10, false, false, false)
VIRTQ_PACKED_ENQUEUE(virtq_packed_enqueue_hdr10_evidx, 10, false, true, false)

/* Stores in 'vq' the packed burst functions for its header length
 * (already set) and the negotiated options.  The 10-byte legacy header
 * only comes with a driver that packs its ring without VERSION_1, which
 * no real one does, but it costs two more wrappers to stay correct;
 * IN_ORDER needs VERSION_1 (it is a transport feature of VIRTIO 1.1), so
 * the legacy header never has it, and its dequeue always reads the
 * header.  With 'iommu' each is the copy that translates I/O virtual
 * addresses (virtq-iommu.h). */
void
virtq_packed_select(struct virtq *vq, bool mrg, bool event_idx,
                    bool in_order, bool host_ol, bool iommu)
{
#define PICK(FN) (iommu ? FN##_iommu : FN)
    if (vq->hdr_len != 12) {
        vq->dequeue = event_idx ? PICK(virtq_packed_dequeue_hdr10_evidx)
                                : PICK(virtq_packed_dequeue_hdr10);
        vq->enqueue = event_idx ? PICK(virtq_packed_enqueue_hdr10_evidx)
                                : PICK(virtq_packed_enqueue_hdr10);
        return;
    }
    vq->dequeue = virtq_packed_dequeue_hdr12_fns[iommu][host_ol][in_order]
                                                [event_idx];
    if (mrg && in_order) {
        vq->enqueue = event_idx ? PICK(virtq_packed_enqueue_mrg_evidx_inorder)
                                : PICK(virtq_packed_enqueue_mrg_inorder);
    } else if (mrg) {
        vq->enqueue = event_idx ? PICK(virtq_packed_enqueue_mrg_evidx)
                                : PICK(virtq_packed_enqueue_mrg);
    } else {
        vq->enqueue = event_idx ? PICK(virtq_packed_enqueue_hdr12_evidx)
                                : PICK(virtq_packed_enqueue_hdr12);
    }
#undef PICK
}
