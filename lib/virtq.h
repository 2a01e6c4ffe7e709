/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtqueue state shared by the control plane and the data path: sizes,
 * indices, ring addresses (as the frontend gave them and as mapped here),
 * notification fds, and the access lock.
 *
 * Usage
 * =====
 *
 * The control plane (vhost-user.c, through vhost-dev.c) fills a queue from
 * SET_VRING_* messages and calls virtq_map() whenever the ring addresses or
 * the guest memory table change.  The data path (split and packed ring
 * code, later) works on a queue only between virtq_trylock() and
 * virtq_unlock(), and only if 'ready' is true.
 *
 * Following rust-vmm's virtio-queue, the queue holds no pointer to guest
 * memory: every function that touches guest memory is handed the memory
 * table explicitly, so a new table never has to reach into queue internals.
 *
 * Thread-safety
 * =============
 *
 * Members under "control plane" are written only by the thread that runs
 * the engine loop, with the access lock held whenever 'ready' may be true.
 * The data path reads them under the access lock.  The lock is a spinlock:
 * the data path holds it for one burst, the control plane for a few
 * stores.  The data path uses trylock and skips the queue if the control
 * plane holds it, so a PMD thread never waits on a message handler.
 *
 * Trust model
 * ===========
 *
 * Sizes, indices and ring addresses come from the frontend and are checked
 * by the handlers before they are stored here; ring addresses must also
 * translate, each part wholly inside one region, before 'ready' is set.
 */

#ifndef OVS_VHOST_VIRTQ_H
#define OVS_VHOST_VIRTQ_H 1

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "ovs-vhost/vhost.h"
#include "util.h"
#include "vhost-log.h"

struct guest_mem;
struct vhost_dirty_log;
struct vhost_iotlb;
struct virtq;
struct virtq_held;
struct virtq_iommu_asked;
struct virtq_poslog_slot;

/* What a burst needs besides the queue: the memory table and, while
 * migration runs, the dirty log.  Handed in by the caller, which holds the
 * queue's access lock, so that a new table never reaches into queues. */
struct virtq_ctx {
    const struct guest_mem *mem;
    struct vhost_dirty_log *log;    /* NULL unless logging. */

    /* With VIRTIO_F_IOMMU_PLATFORM (the queue's burst functions are then
     * its IOMMU copies): the device's IOTLB, and the translation a burst
     * stopped at for want of an entry, for the caller to ask the frontend
     * for (virtq-iommu.h).  Unused otherwise. */
    const struct vhost_iotlb *iotlb;
    bool miss;
    uint8_t miss_perm;              /* VHOST_ACCESS_*. */
    uint64_t miss_iova;
};

/* The log for writes to the rings' device areas, NULL if they are not
 * logged: vhost-user.rst, "Migration": used ring writes are logged only
 * with VHOST_VRING_F_LOG in the vring's address flags. */
#define virtq_log_used(VQ, CTX) ((VQ)->log_used ? (CTX)->log : NULL)

typedef unsigned int virtq_dequeue_fn(struct virtq *, struct virtq_ctx *,
                                      struct vhost_pkt *, unsigned int n,
                                      const struct vhost_pkt_alloc *);
typedef unsigned int virtq_enqueue_fn(struct virtq *, struct virtq_ctx *,
                                      const struct vhost_pkt *,
                                      unsigned int n);

struct virtq {
    /* Held by the data path around a burst, and by the control plane
     * whenever it changes anything below or the memory table. */
    atomic_bool locked;

    /* Control plane: set up by messages. */
    const char *name;           /* The port's name, for log messages. */
    unsigned int index;         /* Queue index in the device. */
    uint16_t size;              /* SET_VRING_NUM; 0 until set. */
    bool packed;                /* Ring layout, from negotiated features. */
    bool enabled;               /* SET_VRING_ENABLE, or implicit. */
    bool has_addr;              /* SET_VRING_ADDR received. */
    bool has_kick;              /* SET_VRING_KICK received (fd or none). */
    bool log_used;              /* VHOST_VRING_F_LOG in the address flags. */
    uint64_t desc_uva;          /* Frontend virtual addresses of the ring. */
    uint64_t avail_uva;
    uint64_t used_uva;
    uint64_t log_gpa;           /* SET_VRING_ADDR's log_guest_addr: for
                                 * a split ring, the used ring's guest
                                 * physical address (what QEMU sends);
                                 * for a packed ring, QEMU's "used", the
                                 * device event area.  Split only.  With
                                 * an IOMMU QEMU sends an I/O virtual
                                 * address: virtq_map() then puts the used
                                 * ring's guest physical address here. */
    uint32_t base;              /* SET_VRING_BASE as received. */
    int kick_fd;                /* -1: none, the ring is polled. */
    int call_fd;                /* -1: none, the guest polls. */
    int err_fd;                 /* -1: none. */

    /* Control plane: with VIRTIO_F_IOMMU_PLATFORM negotiated, the
     * device's IOTLB, through which every ring and buffer address (an I/O
     * virtual address then) is translated; NULL without it.  Set with the
     * features (vhost_dev_set_features()). */
    const struct vhost_iotlb *iotlb;

    /* Control plane: derived by virtq_map() under the lock. */
    void *desc;                 /* Host addresses, NULL until mapped. */
    void *avail;
    void *used;
    uint64_t desc_gpa;          /* Guest physical addresses of 'desc' and */
    uint64_t used_gpa;          /* 'used', from the memory table: where a
                                 * packed ring's writes are logged. */
    bool ring_miss;             /* With an IOTLB: virtq_map() found no
                                 * entry for 'ring_miss_iova' (access
                                 * 'ring_miss_perm'); the ring waits for
                                 * it, unmapped. */
    uint8_t ring_miss_perm;
    uint64_t ring_miss_iova;
    bool ring_miss_asked;       /* The engine loop sent that miss. */
    bool iotlb_lost;            /* Translated once, then lost to an IOTLB
                                 * invalidation only: the ring stays ready
                                 * (virtq_can_run()), unmapped, and bursts
                                 * translate it again (virtq_iommu_remap()):
                                 * a lazy Linux guest flushes its whole
                                 * IOVA space every few milliseconds, and
                                 * that must pause the ring, not take the
                                 * device down. */

    /* Data path, under the lock.  Split: 'last_avail_idx' is the next
     * avail ring entry to process and 'last_used_idx' the next used ring
     * entry to fill.  Packed: the same positions in the descriptor ring,
     * with the wrap counters beside them. */
    uint16_t last_avail_idx;
    uint16_t last_used_idx;
    bool avail_wrap_counter;
    bool used_wrap_counter;

    /* Both sides: true once the queue may be used by the data path.  Set
     * and cleared by the control plane with the lock held. */
    bool ready;

    /* Data path configuration, chosen once from the negotiated features by
     * virtq_configure() (control plane, under the lock): the burst
     * functions specialised for this combination, so that no feature bit
     * is tested per descriptor. */
    virtq_dequeue_fn *dequeue;
    virtq_enqueue_fn *enqueue;
    uint16_t hdr_len;               /* virtio-net header: 10 or 12. */
    bool indirect;                  /* VIRTIO_RING_F_INDIRECT_DESC. */
    bool log_all;                   /* VHOST_F_LOG_ALL. */
    bool in_order;                  /* VIRTIO_F_IN_ORDER. */

    /* Packed ring: which buffer ids are in flight (§2.8.6: an id is
     * unique among the buffers in flight).  An id is in flight from the
     * burst that takes its chain until that burst writes the chain back
     * as used, which every burst does before it returns; so "in flight"
     * is "taken by the current burst", kept as 'id_gen[id] == id_cur'
     * and cleared for every id at once by moving 'id_cur' on at the start
     * of a burst.  The control plane sizes 'id_gen' to the queue size
     * (virtq_map(), virtq_configure(); 'id_cap' entries, 2 bytes each, at
     * most 64 KiB); the data path reads and writes it under the lock. */
    uint16_t *id_gen;
    uint32_t id_cap;
    uint16_t id_cur;

    /* Data path state, under the lock. */
    bool broken;                    /* Guest error: no more bursts. */
    bool avail_event_set;           /* Kick suppression written (split:
                                     * NO_NOTIFY or avail_event). */
    uint16_t avail_event_base;      /* last_avail_idx when written. */
    bool hdr_cmp;                   /* Enqueue: compare RX headers first
                                     * (virtq_hdr_mode_begin()). */
    uint8_t hdr_probe;              /* Bursts until comparing again. */
    struct vhost_queue_stats stats;
    struct vhost_ratelimit rl;      /* Guest-caused log messages. */

    /* Data path, with an IOTLB: the last miss sent to the frontend, so
     * that the bursts waiting for its answer neither walk the ring again
     * nor send it again (see virtq-iommu.h).  The control plane clears
     * 'miss_sent' with an IOTLB update that answers it, under the lock. */
    bool miss_sent;
    uint8_t miss_sent_perm;
    uint64_t miss_sent_iova;
    long long int miss_sent_ms;     /* Monotonic time it was sent. */

    /* Data path, with an IOTLB: the pages asked for ahead of a miss, not
     * answered yet (virtq-iommu.h, "Ask ahead"), or NULL before the
     * first.  The control plane forgets those an update answers
     * (virtq_iommu_answered()), under the lock.  Freed by virtq_reset(). */
    struct virtq_iommu_asked *asked_ahead;

    /* Data path, with an IOTLB, on a guest RX vring: packets an enqueue
     * could not place for want of a translation, held in order until it
     * comes (virtq-iommu.h), or NULL.  Freed by virtq_reset(). */
    struct virtq_held *held;

    /* Packed ring position log (virtq-poslog.h).  'poslog_slot' is this
     * queue's slot in the port's log, NULL without one, set when the
     * queue is allocated and kept across resets.  'poslog' is the same
     * slot while the ring has claimed it (from its start to its stop),
     * else NULL: bursts store positions only then, and 'poslog_last' is
     * where the ring stood at the last store. */
    struct virtq_poslog_slot *poslog_slot;
    struct virtq_poslog_slot *poslog;
    uint32_t poslog_last;

    /* Control plane: 'stats' as last copied under the lock, given out
     * instead when the data path holds the lock for longer than a reader
     * may wait (vhost_port_get_queue_stats()).  Written with the lock
     * held.  'read_held' (atomic) says the last reader could not get the
     * lock, so that the next waits only VIRTQ_READ_HELD_WAIT_US. */
    struct vhost_queue_stats stats_seen;
    bool read_held;
};

/* How long a reader of statistics or state waits for a queue's lock
 * before it settles for what it saw last: a burst holds the lock for
 * microseconds (or, preempted on a busy machine, milliseconds), a PMD
 * thread in a postcopy fault for as long as the frontend takes to serve
 * it (virtq_lock_bounded()).  Once a reader gave up, the next ones wait
 * only a little, until one gets the lock again. */
#define VIRTQ_READ_WAIT_US 200000
#define VIRTQ_READ_HELD_WAIT_US 1000

bool virtq_lock_for_read(struct virtq *);

void virtq_init(struct virtq *, unsigned int index);
void virtq_reset(struct virtq *);
bool virtq_map(struct virtq *, const struct guest_mem *);
void virtq_resync_used(struct virtq *);
void virtq_unmap(struct virtq *);
bool virtq_can_run(const struct virtq *);
void virtq_set_base(struct virtq *, uint32_t base);
bool virtq_packed_base_ok(uint32_t base, uint16_t size);
bool virtq_packed_positions_ok(uint16_t avail, uint16_t used, uint16_t size);
void virtq_configure(struct virtq *, uint64_t features,
                     const struct guest_mem *, const struct vhost_iotlb *);
void virtq_set_size(struct virtq *, uint16_t size, const struct guest_mem *);
uint32_t virtq_get_base(const struct virtq *);

/* One of a ring's three parts, as the frontend addressed it (an I/O
 * virtual address with an IOTLB): its length for the ring's size and
 * layout, and the access the device needs to it. */
struct virtq_ring_part {
    uint64_t iova;
    uint64_t len;
    uint8_t perm;                   /* VHOST_ACCESS_*. */
};
void virtq_ring_parts(const struct virtq *, struct virtq_ring_part[3]);

/* True if 'vq' is started (vhost-user.rst, "Ring states"): from
 * SET_VRING_KICK, with or without an fd, until GET_VRING_BASE stops it or
 * the device is reset.  Enabled or not, a started ring is the data path's
 * to walk, so its size, position and layout stay as they are
 * (vhost-user.c, "Messages for stopped rings"). */
static inline bool
virtq_started(const struct virtq *vq)
{
    return vq->has_kick;
}

/* Gives 'p' a buffer for 'len' bytes, keeping the one it has if that is
 * big enough.  Returns false if the embedder has none. */
static inline bool
virtq_get_buf(struct vhost_pkt *p, uint32_t len,
                      const struct vhost_pkt_alloc *alloc)
{
    if (OVS_LIKELY(p->data && p->size >= len)) {
        return true;
    }
    if (p->data && alloc && alloc->free) {
        alloc->free(alloc->aux, p);
    }
    p->data = NULL;
    p->size = 0;
    return alloc && alloc->alloc && alloc->alloc(alloc->aux, p, len)
           && p->data && p->size >= len;
}

/* Counts a chain dropped for 'reason'. */
static inline void
virtq_drop(struct virtq *vq, enum vhost_drop_reason reason)
{
    vq->stats.drops[reason]++;
    vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u: dropping a "
                 "descriptor chain: %s", vq->name, vq->index,
                 vhost_drop_reason_to_string(reason));
}

/* How enqueue stores the virtio-net headers of a burst (virtq_hdr_store()):
 * comparing each with what the guest buffer holds and storing it only if
 * it differs, or storing it outright.  Comparing keeps the line shared
 * with the driver when headers repeat (a Linux guest's RX buffers hold
 * the header we stored last time, and DPDK's virtio-user TX push leaves
 * the fields it finds right alone), but stalls on a line the driver
 * wrote last, where the store is needed anyway: a driver that rewrites
 * the headroom of buffers it later posts for RX.  So a
 * burst that compared and found most headers different makes the next
 * VIRTQ_HDR_PROBE bursts store outright; then one burst compares again.
 * Returns the mode for this burst. */
#define VIRTQ_HDR_PROBE 64

static inline bool
virtq_hdr_mode_begin(struct virtq *vq)
{
    if (!vq->hdr_cmp && !--vq->hdr_probe) {
        vq->hdr_cmp = true;
    }
    return vq->hdr_cmp;
}

/* Ends a burst that stored 'stored' of the 'n' headers it put, in mode
 * 'cmp' (from virtq_hdr_mode_begin()). */
static inline void
virtq_hdr_mode_end(struct virtq *vq, bool cmp, unsigned int n,
                   unsigned int stored)
{
    if (cmp && stored * 2 > n) {
        vq->hdr_cmp = false;
        vq->hdr_probe = VIRTQ_HDR_PROBE;
    }
}

/* Statistics for one packet of 'len' bytes starting with 'eth'.  ALWAYS
 * inline: gcc kept it out of line in the packed bursts, where it was 1%
 * of an OVS PMD's samples in the packed vhost-to-vhost loop. */
static inline __attribute__((always_inline)) void
virtq_count_pkt(struct vhost_queue_stats *st, const uint8_t *eth,
                        uint32_t len)
{
    st->packets++;
    st->bytes += len;
    if (len < 64) {
        st->undersize++;
    } else if (len == 64) {
        st->size_64++;
    } else if (len < 128) {
        st->size_65_127++;
    } else if (len < 256) {
        st->size_128_255++;
    } else if (len < 512) {
        st->size_256_511++;
    } else if (len < 1024) {
        st->size_512_1023++;
    } else if (len <= 1518) {
        st->size_1024_1518++;
    } else {
        st->size_1519_max++;
    }
    if (len >= 6 && (eth[0] & 1)) {
        static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
        if (!memcmp(eth, bcast, 6)) {
            st->broadcast++;
        } else {
            st->multicast++;
        }
    }
}

/* Acquires 'vq''s access lock, spinning.  For the control plane. */
static inline void
virtq_lock(struct virtq *vq)
{
    while (atomic_exchange_explicit(&vq->locked, true,
                                    memory_order_acquire)) {
        while (atomic_load_explicit(&vq->locked, memory_order_relaxed)) {
            cpu_relax();
        }
    }
}

bool virtq_lock_bounded(struct virtq *, unsigned int max_us);

/* Tries to acquire 'vq''s access lock without waiting.  For the data path,
 * which skips the queue this time if the control plane holds it. */
static inline bool
virtq_trylock(struct virtq *vq)
{
    return !atomic_exchange_explicit(&vq->locked, true, memory_order_acquire);
}


static inline void
virtq_unlock(struct virtq *vq)
{
    atomic_store_explicit(&vq->locked, false, memory_order_release);
}

#endif /* virtq.h */
