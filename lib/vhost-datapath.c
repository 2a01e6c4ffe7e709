/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path's public entry points (ovs-vhost/vhost.h, "Data path"):
 * find the vring, take its access lock, hand the burst to the function the
 * negotiated features chose, with the memory table and dirty log.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>
#include "ovs-vhost/vhost.h"
#include "vhost-cold.h"
#include "vhost-dev.h"
#include "vhost-dirty-log.h"
#include "vhost-port.h"
#include "virtio-ring.h"
#include "virtio-ring-packed.h"
#include "virtq.h"
#include "virtq-iommu.h"

static bool vhost_datapath_remap__(struct vhost_dev *, struct virtq *);

/* How long a guest RX burst behind an IOMMU waits for a queue lock the
 * control plane holds (vhost_datapath_lock_patient__()). */
#define VHOST_DATAPATH_LOCK_WAIT_MS 10

/* Takes 'vq''s lock, which the control plane holds, waiting up to
 * VHOST_DATAPATH_LOCK_WAIT_MS: for a guest RX burst behind an IOMMU, where
 * a skipped burst is a dropped packet and an IOTLB message, which takes
 * each queue's lock for a few stores, comes with nearly every packet.  A
 * few microseconds of spinning cover those; on a busy host the engine
 * thread may be preempted while it holds the lock, so the wait then
 * yields the CPU, which may be the one the holder needs. */
static bool OVS_COLD
vhost_datapath_lock_patient__(struct virtq *vq)
{
    long long int deadline = 0;

    for (unsigned int i = 0; !virtq_trylock(vq); i++) {
        if (i < 1000) {
            cpu_relax();
            continue;
        }
        long long int now = vhost_time_msec();
        if (!deadline) {
            deadline = now + VHOST_DATAPATH_LOCK_WAIT_MS;
        } else if (now >= deadline) {
            return false;
        }
        sched_yield();
    }
    return true;
}
static unsigned int vhost_datapath_enqueue_held__(struct vhost_dev *,
                                                  struct virtq *,
                                                  const struct vhost_pkt *,
                                                  unsigned int n);
static void vhost_datapath_flush_held__(struct vhost_port *, unsigned int qp);

/* Returns vring 'vring' of 'port' locked and ready, or NULL.  The caller
 * unlocks it.  Runs on polling threads: it never waits.  Behind an IOMMU
 * the ring may have lost its translation (virtq-iommu.h): it is then
 * translated again here if it can be, and otherwise returned unmapped,
 * 'desc' NULL, for the caller to skip (or, toward the guest, to hold its
 * packets). */
static inline struct virtq *
vhost_datapath_get__(struct vhost_port *port, unsigned int vring,
                     bool patient)
{
    struct vhost_dev *dev = vhost_port_dev(port);
    struct virtq *vq;

    if (OVS_UNLIKELY(vring >= VHOST_MAX_QUEUES)) {
        return NULL;
    }
    vq = __atomic_load_n(&dev->vqs[vring], __ATOMIC_ACQUIRE);
    /* Without the lock, 'iotlb' is only a hint (written atomically). */
    if (!vq || (!virtq_trylock(vq)
                && (!patient
                    || !__atomic_load_n(&vq->iotlb, __ATOMIC_RELAXED)
                    || !vhost_datapath_lock_patient__(vq)))) {
        return NULL;
    }
    /* A guarded SIGBUS broke the device (the frontend shrank guest memory
     * or the log): no burst from now on; the engine loop disconnects.  A
     * ring behind an IOMMU may have lost its translation (virtq-iommu.h). */
    if (OVS_UNLIKELY(!vq->ready || guest_mem_guard_faulted(&dev->guard))) {
        virtq_unlock(vq);
        return NULL;
    }
    if (OVS_UNLIKELY(!vq->desc)) {
        vhost_datapath_remap__(dev, vq);
    }
    return vq;
}

/* The memory table and, while migration logs dirty pages, the log.  Read
 * under the queue's access lock: the control plane changes both only with
 * every queue lock held. */
static inline void
vhost_datapath_ctx__(struct vhost_dev *dev, const struct virtq *vq,
                     struct virtq_ctx *ctx, struct vhost_dirty_log *log)
{
    ctx->mem = dev->mem;
    ctx->log = NULL;
    ctx->iotlb = vq->iotlb;
    ctx->miss = false;
    if (OVS_UNLIKELY(vq->log_all && dev->log_base)) {
        log->base = dev->log_base;
        log->size = dev->log_size;
        log->dirtied = false;
        log->out_of_range = 0;
        ctx->log = log;
#ifdef VHOST_DIRTY_LOG_AUDIT
        vhost_dirty_log_audit_begin(dev->mem);
#endif
    }
}

static void OVS_COLD
vhost_datapath_log_done__(struct vhost_dev *dev, const struct virtq *vq,
                          struct vhost_dirty_log *log)
{
#ifdef VHOST_DIRTY_LOG_AUDIT
    vhost_dirty_log_audit_end(vq->name, vq->index);
#else
    (void) vq;
#endif
    if (log->dirtied && dev->log_call_fd >= 0) {
        uint64_t one = 1;
        if (write(dev->log_call_fd, &one, sizeof one) < 0) {
            /* Counter saturated: QEMU is behind; it will read the log. */
        }
    }
}

/* Asks the frontend for the pages of the chains after the one a burst of
 * 'vq' missed at ('ctx'; 'write' for an enqueue), at 'now_ms'
 * (virtq-iommu.h, "Ask ahead"), as many as it takes without waiting for
 * the channel. */
static void OVS_COLD
vhost_datapath_ask_ahead__(struct vhost_dev *dev, struct virtq *vq,
                           const struct virtq_ctx *ctx, bool write,
                           long long int now_ms)
{
    struct virtq_iommu_ahead a;

    virtq_iommu_look_ahead(vq, ctx, write, now_ms, &a);
    for (unsigned int i = 0; i < a.n; i++) {
        if (vhost_dev_send_iotlb_miss(dev, a.iova[i], a.perm[i], false)) {
            break;              /* Asked for by a later miss, if need be. */
        }
        virtq_iommu_note_ahead(vq, a.iova[i], a.perm[i], now_ms);
        vq->stats.iotlb_misses_ahead++;
    }
}

/* A burst of 'vq' ('write' for an enqueue) stopped at a buffer whose
 * translation the IOTLB lacks (virtq-iommu.h): asks the frontend for it,
 * unless it was just asked, and for the chains after it.  Called with the
 * queue's access lock held. */
static void OVS_COLD
vhost_datapath_miss__(struct vhost_dev *dev, struct virtq *vq,
                      const struct virtq_ctx *ctx, bool write)
{
    long long int now_ms = vhost_time_msec();

    if (!virtq_iommu_should_ask(vq, ctx, now_ms)) {
        vhost_datapath_ask_ahead__(dev, vq, ctx, write, now_ms);
    } else {
        int error = vhost_dev_send_iotlb_miss(dev, ctx->miss_iova,
                                              ctx->miss_perm, false);
        if (!error) {
            vq->stats.iotlb_misses++;
            vhost_datapath_ask_ahead__(dev, vq, ctx, write, now_ms);
        } else if (error == EBUSY) {
            vq->miss_sent = false;      /* The next burst asks. */
        } else {
            /* No channel, or a frontend that does not read it: asked
             * again after VIRTQ_IOMMU_MISS_RETRY_MS, not at every poll. */
            vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u: cannot "
                         "send an IOTLB miss for IOVA %#"PRIx64" to the "
                         "frontend (%s)", vq->name, vq->index,
                         ctx->miss_iova, error == ENOTCONN
                         ? "no backend channel" : strerror(error));
        }
    }
}

/* Ring 'vq', ready but unmapped, lost its translation to an IOTLB
 * invalidation: translates it again, or asks the frontend for what it
 * misses (once a page, as for buffers), and ahead for the pages of its
 * other parts that miss too, and returns false. */
static bool OVS_COLD
vhost_datapath_remap__(struct vhost_dev *dev, struct virtq *vq)
{
    if (virtq_iommu_remap(vq, dev->mem)) {
        return true;
    }
    if (vq->ring_miss) {
        struct virtq_ctx ctx = {
            .mem = dev->mem, .iotlb = vq->iotlb,
            .miss = true, .miss_iova = vq->ring_miss_iova,
            .miss_perm = vq->ring_miss_perm,
        };
        /* No chain to walk without the ring: the look-ahead asks for the
         * ring's other parts, whatever the direction. */
        vhost_datapath_miss__(dev, vq, &ctx, false);
    }
    return false;
}

unsigned int
vhost_dequeue_burst(struct vhost_port *port, unsigned int qp,
                    struct vhost_pkt *pkts, unsigned int n,
                    const struct vhost_pkt_alloc *alloc)
{
    struct virtq *vq = qp < VHOST_MAX_QUEUE_PAIRS
                       ? vhost_datapath_get__(port, 2 * qp + 1, false) : NULL;
    struct vhost_dirty_log log;
    struct virtq_ctx ctx;

    if (!vq) {
        return 0;
    }
    struct vhost_dev *dev = vhost_port_dev(port);
    unsigned int done = 0;
    if (OVS_UNLIKELY(!vq->desc)) {
        virtq_unlock(vq);
        return 0;
    }
    if (OVS_UNLIKELY(__atomic_load_n(&dev->rarp_pending, __ATOMIC_RELAXED))
        && qp == 0 && n
        && __atomic_exchange_n(&dev->rarp_pending, false, __ATOMIC_ACQ_REL)
        && vhost_cold_make_rarp(&pkts[0], dev->rarp_mac, alloc)) {
        /* Injected once, ahead of the guest's packets. */
        vq->stats.rarps_injected++;
        done = 1;
    }

    if (OVS_UNLIKELY(vq->miss_sent) && virtq_iommu_waiting(vq)) {
        virtq_unlock(vq);
        return done;
    }
    vhost_datapath_ctx__(dev, vq, &ctx, &log);
    done += vq->dequeue(vq, &ctx, pkts + done, n - done, alloc);
    if (OVS_UNLIKELY(ctx.log)) {
        vhost_datapath_log_done__(vhost_port_dev(port), vq, &log);
    }
    if (OVS_UNLIKELY(ctx.miss)) {
        vhost_datapath_miss__(dev, vq, &ctx, false);
    }
    bool iommu = ctx.iotlb != NULL;
    virtq_unlock(vq);
    if (OVS_UNLIKELY(iommu)) {
        vhost_datapath_flush_held__(port, qp);
    }
    return done;
}

/* Enqueues 'n' packets from 'pkts' into locked guest RX vring 'vq' and
 * returns how many it took.  With an IOMMU, packets held for want of a
 * translation go first, and the packets of a burst that stops at a miss
 * are held (virtq-iommu.h): they count as taken. */
static unsigned int
vhost_datapath_enqueue__(struct vhost_dev *dev, struct virtq *vq,
                         const struct vhost_pkt *pkts, unsigned int n)
{
    struct vhost_dirty_log log;
    struct virtq_ctx ctx;
    unsigned int done;

    if (OVS_UNLIKELY(vq->held || vq->miss_sent || !vq->desc)) {
        return vhost_datapath_enqueue_held__(dev, vq, pkts, n);
    }
    vhost_datapath_ctx__(dev, vq, &ctx, &log);
    done = vq->enqueue(vq, &ctx, pkts, n);
    if (OVS_UNLIKELY(ctx.log)) {
        vhost_datapath_log_done__(dev, vq, &log);
    }
    if (OVS_UNLIKELY(ctx.miss)) {
        vhost_datapath_miss__(dev, vq, &ctx, true);
        done += virtq_iommu_hold(vq, pkts + done, n - done);
    }
    return done;
}

/* vhost_datapath_enqueue__() when packets are held or a miss is awaited:
 * the held packets first, unless the miss is still awaited; then 'pkts',
 * held too if any are still held.  No reason for this code to be inline:
 * only a guest behind an IOMMU gets here, while it waits. */
static unsigned int OVS_COLD
vhost_datapath_enqueue_held__(struct vhost_dev *dev, struct virtq *vq,
                              const struct vhost_pkt *pkts, unsigned int n)
{
    struct vhost_dirty_log log;
    struct virtq_ctx ctx = { .miss = false };
    unsigned int done = 0;
    bool wait = !vq->desc || virtq_iommu_waiting(vq);

    if (!wait) {
        vhost_datapath_ctx__(dev, vq, &ctx, &log);
        unsigned int n_held = virtq_iommu_n_held(vq);
        if (n_held) {
            virtq_iommu_release_held(
                vq, vq->enqueue(vq, &ctx, virtq_iommu_held_pkts(vq), n_held));
        }
        if (n && !virtq_iommu_n_held(vq) && !ctx.miss) {
            done = vq->enqueue(vq, &ctx, pkts, n);
        }
        if (OVS_UNLIKELY(ctx.log)) {
            vhost_datapath_log_done__(dev, vq, &log);
        }
        if (ctx.miss) {
            vhost_datapath_miss__(dev, vq, &ctx, true);
        }
    }
    /* Held behind what is held, or for a translation; a ring merely full
     * refuses them, as without an IOMMU. */
    if (done < n && (wait || ctx.miss || virtq_iommu_n_held(vq))) {
        done += virtq_iommu_hold(vq, pkts + done, n - done);
    }
    return done;
}

unsigned int
vhost_enqueue_burst(struct vhost_port *port, unsigned int qp,
                    const struct vhost_pkt *pkts, unsigned int n)
{
    struct virtq *vq = qp < VHOST_MAX_QUEUE_PAIRS
                       ? vhost_datapath_get__(port, 2 * qp, true) : NULL;

    if (!vq) {
        return 0;
    }
    unsigned int done = vhost_datapath_enqueue__(vhost_port_dev(port), vq,
                                                 pkts, n);
    virtq_unlock(vq);
    return done;
}

/* From a dequeue of queue pair 'qp': places the packets held on its guest
 * RX vring, if any and if the translation they wait for has come, so that
 * they go out even if no other packet comes for the guest. */
static void OVS_COLD
vhost_datapath_flush_held__(struct vhost_port *port, unsigned int qp)
{
    struct virtq *vq = vhost_datapath_get__(port, 2 * qp, false);

    if (vq) {
        if (vq->held) {
            vhost_datapath_enqueue_held__(vhost_port_dev(port), vq, NULL, 0);
        }
        virtq_unlock(vq);
    }
}

/* Counts what the guest has made available on a locked, ready vring.
 * Split: the avail index ahead of ours.  Packed: the chains (descriptors
 * without NEXT) marked available from our position, looking at no more
 * than VHOST_PENDING_PACKED_MAX descriptors (a metric need not cost a
 * ring walk per burst).
 * Reads guest memory but trusts none of it: the result is only a metric
 * and is capped at the ring size. */
#define VHOST_PENDING_PACKED_MAX 128

static unsigned int
vhost_datapath_pending__(const struct virtq *vq)
{
    if (!vq->packed) {
        const struct vring_avail *avail = vq->avail;
        /* A metric only: acquire as the data path reads it (pairs with
         * the driver's write barrier before it moves avail->idx), though
         * nothing here reads the entries. */
        uint16_t n = __atomic_load_n(&avail->idx, __ATOMIC_ACQUIRE)
                     - vq->last_avail_idx;
        return MIN(n, vq->size);
    }

    const struct vring_packed_desc *ring = vq->desc;
    uint16_t i = vq->last_avail_idx;
    bool wrap = vq->avail_wrap_counter;
    unsigned int chains = 0;

    for (unsigned int seen = 0; seen < MIN(vq->size, VHOST_PENDING_PACKED_MAX);
         seen++) {
        /* Pairs with the driver's write barrier before it sets the
         * flags; only the flags are read. */
        uint16_t flags = __atomic_load_n(&ring[i].flags, __ATOMIC_ACQUIRE);
        if (!vring_packed_desc_is_avail(flags, wrap)) {
            break;
        }
        chains += !(flags & VRING_DESC_F_NEXT);
        if (++i >= vq->size) {
            i = 0;
            wrap = !wrap;
        }
    }
    return chains;
}

unsigned int
vhost_dequeue_pending(struct vhost_port *port, unsigned int qp)
{
    struct virtq *vq = qp < VHOST_MAX_QUEUE_PAIRS
                       ? vhost_datapath_get__(port, 2 * qp + 1, false) : NULL;
    unsigned int n;

    if (!vq) {
        return 0;
    }
    n = vq->desc ? vhost_datapath_pending__(vq) : 0;
    virtq_unlock(vq);
    return n;
}

/* Stores vring 'vring''s statistics in '*stats'.  Returns 0, or EINVAL if
 * there is no such vring.  Statistics last for the port's lifetime.  Never
 * waits long for a burst: if one holds the queue (a PMD thread blocked in
 * a postcopy fault), the statistics as last read. */
int
vhost_port_get_queue_stats(struct vhost_port *port, unsigned int vring,
                           struct vhost_queue_stats *stats)
{
    struct vhost_dev *dev = vhost_port_dev(port);
    struct virtq *vq;

    memset(stats, 0, sizeof *stats);
    if (vring >= 2 * dev->max_queue_pairs) {
        return EINVAL;
    }
    vq = __atomic_load_n(&dev->vqs[vring], __ATOMIC_ACQUIRE);
    if (vq) {
        if (virtq_lock_for_read(vq)) {
            vq->stats_seen = vq->stats;
            *stats = vq->stats;
            virtq_unlock(vq);
        } else {
            /* A PMD thread sleeps in a fault holding the lock (and counts
             * nothing meanwhile): what the last reader saw. */
            *stats = vq->stats_seen;
        }
    }
    return 0;
}

const char *
vhost_drop_reason_name(enum vhost_drop_reason reason)
{
    switch (reason) {
    case VHOST_DROP_BAD_INDEX: return "bad_index";
    case VHOST_DROP_LOOP: return "loop";
    case VHOST_DROP_AVAIL_IDX: return "avail_idx";
    case VHOST_DROP_BAD_ADDR: return "bad_addr";
    case VHOST_DROP_BAD_DIRECTION: return "bad_direction";
    case VHOST_DROP_BAD_INDIRECT: return "bad_indirect";
    case VHOST_DROP_SHORT_HDR: return "short_hdr";
    case VHOST_DROP_BAD_CSUM: return "bad_csum";
    case VHOST_DROP_TOO_BIG: return "too_big";
    case VHOST_DROP_NO_BUFS: return "no_bufs";
    case VHOST_DROP_ID_IN_FLIGHT: return "id_in_flight";
    case VHOST_DROP_TOO_LONG: return "too_long";
    case VHOST_N_DROP_REASONS: break;
    }
    return "unknown";
}

const char *
vhost_drop_reason_to_string(enum vhost_drop_reason reason)
{
    switch (reason) {
    case VHOST_DROP_BAD_INDEX: return "descriptor index out of range";
    case VHOST_DROP_LOOP: return "descriptor loop";
    case VHOST_DROP_AVAIL_IDX: return "avail index too far ahead";
    case VHOST_DROP_BAD_ADDR: return "buffer outside guest memory";
    case VHOST_DROP_BAD_DIRECTION: return "wrong buffer direction";
    case VHOST_DROP_BAD_INDIRECT: return "bad indirect table";
    case VHOST_DROP_SHORT_HDR: return "chain shorter than the header";
    case VHOST_DROP_BAD_CSUM: return "checksum offsets beyond the packet";
    case VHOST_DROP_TOO_BIG: return "packet too big";
    case VHOST_DROP_NO_BUFS: return "no guest buffers";
    case VHOST_DROP_ID_IN_FLIGHT: return "buffer id in flight";
    case VHOST_DROP_TOO_LONG: return "chain of too many descriptors";
    case VHOST_N_DROP_REASONS: break;
    }
    return "unknown";
}
