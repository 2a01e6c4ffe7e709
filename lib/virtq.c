/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtqueue state: see virtq.h.
 */

#include <config.h>
#include "virtq.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "guest-mem.h"
#include "util.h"
#include "vhost-iotlb.h"
#include "vhost-log.h"
#include "virtio.h"
#include "virtio-net-hdr.h"
#include "virtq-iommu.h"
#include "virtq-packed.h"
#include "virtq-split.h"

void
virtq_init(struct virtq *vq, unsigned int index)
{
    memset(vq, 0, sizeof *vq);
    atomic_init(&vq->locked, false);
    vq->name = "?";
    vq->index = index;
    vq->kick_fd = vq->call_fd = vq->err_fd = -1;
    vq->rl = (struct vhost_ratelimit) VHOST_RATELIMIT_INIT(60, 20);
    vq->hdr_cmp = true;
    virtq_configure(vq, 0, NULL, NULL);
}

/* Makes 'vq''s packed-ring id table hold at least 'vq->size' entries, all
 * "not in flight".  The table only grows, so a burst never indexes past
 * it (ids are checked against the queue size first).  On allocation
 * failure the queue cannot run (virtq_can_run()).  The caller holds the
 * access lock. */
static void
virtq_size_ids__(struct virtq *vq)
{
    if (!vq->packed || !vq->size || vq->id_cap >= vq->size) {
        return;
    }

    uint16_t *ids = calloc(vq->size, sizeof *ids);
    free(vq->id_gen);
    vq->id_gen = ids;
    vq->id_cap = ids ? vq->size : 0;
    vq->id_cur = 0;
}

/* Chooses 'vq''s burst functions and header layout for 'features'.  If
 * the ring layout changes (VIRTIO_F_RING_PACKED), the ring is translated
 * again through 'mem' for the new layout, in the same critical section:
 * the parts of a split ring are bigger than a packed ring's event areas,
 * and addresses checked for one layout say nothing of the other.  A ring
 * that no longer translates cannot run until SET_VRING_ADDR or
 * SET_MEM_TABLE make it fit.  With VIRTIO_F_IOMMU_PLATFORM
 * (VIRTIO_F_ACCESS_PLATFORM) every address is an I/O virtual address,
 * translated through 'iotlb' (the device's), and the burst functions are
 * the copies that do so; turning it on or off translates the ring again
 * too.  The caller holds the access lock (or 'vq' is not visible to the
 * data path yet). */
void
virtq_configure(struct virtq *vq, uint64_t features,
                const struct guest_mem *mem, const struct vhost_iotlb *iotlb)
{
    bool mrg = features & FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF);
    bool v1 = features & FEATURE_BIT(VIRTIO_F_VERSION_1);
    bool iommu = features & FEATURE_BIT(VIRTIO_F_ACCESS_PLATFORM);

    bool packed = features & FEATURE_BIT(VIRTIO_F_RING_PACKED);
    if (packed != vq->packed || (iommu ? iotlb : NULL) != vq->iotlb) {
        /* The layout decides what SET_VRING_BASE meant, and it may have
         * come first: read the base again.  Without one, §2.8.1 has both
         * wrap counters start at 1. */
        if (packed != vq->packed) {
            vq->packed = packed;
            virtq_set_base(vq, vq->base);
            if (packed && !vq->base) {
                vq->avail_wrap_counter = vq->used_wrap_counter = true;
            }
        }
        /* Atomic: read without the lock as a hint (vhost-datapath.c). */
        __atomic_store_n(&vq->iotlb, iommu ? iotlb : NULL, __ATOMIC_RELAXED);
        if (!virtq_map(vq, mem) && mem && vq->has_addr && vq->size
            && !vq->ring_miss) {
            vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u does not "
                         "fit guest memory (or lands unaligned) in the %s "
                         "layout: stopped until "
                         "SET_VRING_ADDR or SET_MEM_TABLE make it fit",
                         vq->name, vq->index, packed ? "packed" : "split");
        }
    }
    vq->indirect = features & FEATURE_BIT(VIRTIO_RING_F_INDIRECT_DESC);
    vq->log_all = features & FEATURE_BIT(VHOST_F_LOG_ALL);
    /* VIRTIO 1.2 §5.1.6.1: the header has num_buffers with VERSION_1 or
     * MRG_RXBUF, and is 10 bytes otherwise (legacy). */
    vq->hdr_len = mrg || v1 ? VIRTIO_NET_HDR_LEN : VIRTIO_NET_HDR_LEN_LEGACY;
    bool event_idx = features & FEATURE_BIT(VIRTIO_RING_F_EVENT_IDX);
    vq->in_order = features & FEATURE_BIT(VIRTIO_F_IN_ORDER);
    /* §5.1.6.2.1: without VIRTIO_NET_F_CSUM the driver sets no flags in
     * its TX headers, and without HOST_TSO4/6 no gso_type: the header says
     * nothing, and dequeue need not read it (nor take its cache line, as
     * DPDK's vhost library does not).  A driver that breaks the rule gets
     * its header ignored (§5.1.6.2.2: flags the device does not
     * recognise). */
    bool host_ol = features & (FEATURE_BIT(VIRTIO_NET_F_CSUM)
                               | FEATURE_BIT(VIRTIO_NET_F_HOST_TSO4)
                               | FEATURE_BIT(VIRTIO_NET_F_HOST_TSO6));
    if (vq->packed) {
        virtq_packed_select(vq, mrg, event_idx, vq->in_order, host_ol,
                            vq->iotlb != NULL);
    } else {
        virtq_split_select(vq, mrg, event_idx, vq->in_order, host_ol,
                           vq->iotlb != NULL);
    }
    virtq_size_ids__(vq);
    vq->ready = vq->ready && virtq_can_run(vq);
}

/* Sets 'vq''s ring size to 'size' (SET_VRING_NUM, checked by the caller)
 * and translates the ring through 'mem' for it, sizing the packed id
 * table too, in one critical section: a burst never sees a size that its
 * mapping and id table were not made for.  The queue stops if its ring no
 * longer translates.  The caller holds the access lock. */
void
virtq_set_size(struct virtq *vq, uint16_t size, const struct guest_mem *mem)
{
    vq->size = size;
    virtq_map(vq, mem);
    vq->ready = vq->ready && virtq_can_run(vq);
}

/* Acquires 'vq''s access lock for the control plane, waiting for at most
 * 'max_us' microseconds.  Returns true with the lock held, or false,
 * without it, if the data path held it all that time.  A burst holds the
 * lock for microseconds, but its thread may be preempted meanwhile on a
 * busy machine: after a short spin this yields, so that a holder on this
 * CPU can finish, and callers give it tens of milliseconds.  A lock held
 * longer than that belongs to a thread that is blocked, in practice a PMD
 * thread waiting in a postcopy fault that the frontend does not serve
 * (yet, or ever), and the caller must not wait for it: the engine's loop
 * would stop for every port. */
bool
virtq_lock_bounded(struct virtq *vq, unsigned int max_us)
{
    struct timespec start, now;

    for (int i = 0; i < 256; i++) {
        if (!atomic_load_explicit(&vq->locked, memory_order_relaxed)
            && virtq_trylock(vq)) {
            return true;
        }
        cpu_relax();
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        sched_yield();
        if (!atomic_load_explicit(&vq->locked, memory_order_relaxed)
            && virtq_trylock(vq)) {
            return true;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long int us = (now.tv_sec - start.tv_sec) * 1000000LL
                           + (now.tv_nsec - start.tv_nsec) / 1000;
        if (us >= max_us) {
            return false;
        }
    }
}

/* virtq_lock_bounded() for a reader of 'vq''s statistics or state, which
 * settles for what it saw last if it must: VIRTQ_READ_WAIT_US, or only
 * VIRTQ_READ_HELD_WAIT_US while the last reader could not get the lock
 * either, so that reading the statistics of a queue held for good costs
 * little. */
bool
virtq_lock_for_read(struct virtq *vq)
{
    bool held = __atomic_load_n(&vq->read_held, __ATOMIC_RELAXED);
    bool locked = virtq_lock_bounded(vq, held ? VIRTQ_READ_HELD_WAIT_US
                                              : VIRTQ_READ_WAIT_US);

    if (locked == held) {
        __atomic_store_n(&vq->read_held, !locked, __ATOMIC_RELAXED);
    }
    return locked;
}

/* Closes 'vq''s fds and returns it to its initial state.  The caller holds
 * the access lock or knows the data path cannot see 'vq'. */
void
virtq_reset(struct virtq *vq)
{
    close_fd_quietly(vq->kick_fd);
    close_fd_quietly(vq->call_fd);
    close_fd_quietly(vq->err_fd);
    free(vq->id_gen);
    virtq_iommu_free_held(vq);
    virtq_iommu_free_ahead(vq);

    unsigned int index = vq->index;
    const char *name = vq->name;
    bool locked = atomic_load_explicit(&vq->locked, memory_order_relaxed);
    struct vhost_queue_stats stats = vq->stats;
    struct virtq_poslog_slot *slot = vq->poslog_slot;
    virtq_init(vq, index);
    /* Its log lines name the port after a reconnection too. */
    vq->name = name;
    vq->stats = stats;
    /* The slot stays claimed in the log: a reset for a lost connection
     * told the frontend nothing (virtq_poslog_stop() releases it). */
    vq->poslog_slot = slot;
    vq->stats.broken = false;
    atomic_store_explicit(&vq->locked, locked, memory_order_relaxed);
}

/* Returns the bytes of each part of a ring of 'size' entries: the
 * descriptor table, the driver area (avail ring or driver event
 * suppression) and the device area (used ring or device event suppression).
 * VIRTIO 1.2 §2.7 for split, §2.8.10 and §2.8.14 for packed. */
static void
virtq_part_sizes__(const struct virtq *vq, uint64_t *desc, uint64_t *avail,
                   uint64_t *used)
{
    uint64_t n = vq->size;

    *desc = VRING_DESC_SIZE * n;
    if (vq->packed) {
        *avail = *used = 4;     /* struct pvirtq_event_suppress */
    } else {
        /* flags, idx, ring[n], used_event (always counted: it is there
         * whether or not EVENT_IDX is negotiated). */
        *avail = 2 + 2 + 2 * n + 2;
        *used = 2 + 2 + VRING_USED_ELEM_SIZE * n + 2;
    }
}

/* True if the ring parts at our addresses 'desc', 'avail' and 'used' are
 * aligned as VIRTIO 1.2 §2.7 wants them in guest memory.  SET_VRING_ADDR
 * checks the addresses it is given; this checks where they land: an IOTLB
 * entry, or a region whose userspace_addr and mmap_offset disagree in
 * their low bits, can move an aligned address off its alignment, and the
 * data path reads and writes the indices atomically. */
static bool
virtq_parts_aligned__(const void *desc, const void *avail, const void *used)
{
    return !((uintptr_t) desc % VRING_DESC_ALIGN
             || (uintptr_t) avail % VRING_AVAIL_ALIGN
             || (uintptr_t) used % VRING_USED_ALIGN);
}

/* Stores in 'parts' the descriptor table, driver area and device area of
 * 'vq' as the frontend addressed them, with the access each needs: the
 * device reads the descriptors and the driver area, and writes the device
 * area; a packed ring's descriptors too (VIRTIO 1.2 §2.8.5: used
 * descriptors overwrite available ones). */
void
virtq_ring_parts(const struct virtq *vq, struct virtq_ring_part parts[3])
{
    uint64_t desc_len, avail_len, used_len;

    virtq_part_sizes__(vq, &desc_len, &avail_len, &used_len);
    parts[0] = (struct virtq_ring_part) {
        vq->desc_uva, desc_len,
        vq->packed ? VHOST_ACCESS_RW : VHOST_ACCESS_RO,
    };
    parts[1] = (struct virtq_ring_part) {
        vq->avail_uva, avail_len, VHOST_ACCESS_RO,
    };
    parts[2] = (struct virtq_ring_part) {
        vq->used_uva, used_len, VHOST_ACCESS_WO,
    };
}

/* With an IOTLB: translates 'vq''s ring parts, I/O virtual addresses then,
 * and stores them as virtq_map() does.  A part the IOTLB has no entry for
 * yet is noted in 'ring_miss', for the control plane to ask the frontend
 * for (virtq-iommu.h).  Split rings log their used ring's writes at its
 * guest physical address, found here: what QEMU sends as log_guest_addr
 * is an I/O virtual address too. */
static bool
virtq_map_iova__(struct virtq *vq, const struct guest_mem *mem)
{
    struct virtq_ring_part parts[3];
    void *hva[3];

    virtq_ring_parts(vq, parts);
    uint64_t gpa[3];

    for (int i = 0; i < 3; i++) {
        uint64_t miss;

        hva[i] = virtq_iommu_map_ring(vq->iotlb, mem, parts[i].iova,
                                      parts[i].len, parts[i].perm, &gpa[i],
                                      &miss);
        if (!hva[i]) {
            if (miss != UINT64_MAX) {
                vq->ring_miss = true;
                vq->ring_miss_iova = miss;
                vq->ring_miss_perm = parts[i].perm;
            }
            return false;
        }
    }
    if (!virtq_parts_aligned__(hva[0], hva[1], hva[2])) {
        return false;
    }
    vq->desc = hva[0];
    vq->avail = hva[1];
    vq->used = hva[2];
    vq->desc_gpa = gpa[0];
    vq->used_gpa = gpa[2];
    vq->log_gpa = gpa[2];
    return true;
}

/* Translates 'vq''s ring addresses through 'mem', each part of the ring
 * wholly inside one region (and with an IOTLB, through it first).  On
 * success stores the host addresses and returns true; otherwise clears
 * them and returns false.  The caller holds the access lock. */
bool
virtq_map(struct virtq *vq, const struct guest_mem *mem)
{
    uint64_t desc_len, avail_len, used_len;

    virtq_unmap(vq);
    virtq_size_ids__(vq);
    vq->iotlb_lost = false;
    if (!mem || !vq->has_addr || !vq->size) {
        vq->ring_miss = vq->ring_miss_asked = false;
        return false;
    }

    virtq_part_sizes__(vq, &desc_len, &avail_len, &used_len);
    if (vq->iotlb) {
        /* A miss asked for already is not asked for again: the update
         * that answers it comes, or the frontend cannot answer. */
        uint64_t asked = vq->ring_miss_asked ? vq->ring_miss_iova : 0;
        bool was_asked = vq->ring_miss && vq->ring_miss_asked;

        vq->ring_miss = false;
        bool mapped = virtq_map_iova__(vq, mem);
        vq->ring_miss_asked = vq->ring_miss && was_asked
                              && vq->ring_miss_iova == asked;
        return mapped;
    }
    vq->ring_miss = vq->ring_miss_asked = false;
    void *desc = guest_mem_uva_to_hva_contig(mem, vq->desc_uva, desc_len);
    void *avail = guest_mem_uva_to_hva_contig(mem, vq->avail_uva, avail_len);
    void *used = guest_mem_uva_to_hva_contig(mem, vq->used_uva, used_len);
    if (!desc || !avail || !used
        || !virtq_parts_aligned__(desc, avail, used)) {
        return false;
    }
    vq->desc = desc;
    vq->avail = avail;
    vq->used = used;
    /* A packed ring's dirty log cannot use log_guest_addr: QEMU sends its
     * "used" address there, which for a packed ring is the device event
     * area, not the descriptor ring the device writes used descriptors
     * into.  Both parts are logged at their own guest addresses, found
     * through the region that maps them (vhost-user.rst: the ring
     * addresses are frontend virtual addresses). */
    vq->desc_gpa = guest_mem_uva_to_gpa(mem, vq->desc_uva);
    vq->used_gpa = guest_mem_uva_to_gpa(mem, vq->used_uva);
    return true;
}

/* Called when SET_VRING_ADDR has placed split ring 'vq', which the data
 * path is not walking: a frontend that kept its rings while we restarted
 * (DPDK virtio-user in server mode) sends SET_VRING_BASE 0 even though its
 * ring moved on.  The used index is ours to write, so it is where we
 * stopped: resume there, as DPDK's vhost library does
 * (translate_ring_addresses()).  Packets in flight at the restart are lost
 * or sent again.
 *
 * Only then, when the frontend has just said where the ring is; not
 * whenever the ring is translated.  A ring stopped by GET_VRING_BASE keeps
 * its old addresses until SET_VRING_ADDR, and after a guest reboot QEMU
 * sends SET_VRING_NUM first, when the old ring's memory belongs to the new
 * kernel; and under a running ring (a memory table change, or the
 * SET_VRING_ADDR that toggles dirty logging) the used index in guest
 * memory is whatever the guest wrote there.  The caller holds the access
 * lock. */
void
virtq_resync_used(struct virtq *vq)
{
    if (vq->packed || !vq->used) {
        return;
    }
    /* Guest-controlled: the used index, read once. */
    uint16_t used_idx = __atomic_load_n(&((uint16_t *) vq->used)[1],
                                        __ATOMIC_ACQUIRE);
    if (used_idx != vq->last_used_idx) {
        vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u: used index %u "
                     "differs from the base %u; resuming from the used "
                     "index", vq->name, vq->index, used_idx,
                     vq->last_used_idx);
        vq->last_used_idx = vq->last_avail_idx = used_idx;
    }
}

/* Forgets 'vq''s host ring addresses.  The caller holds the access lock. */
void
virtq_unmap(struct virtq *vq)
{
    vq->desc = vq->avail = vq->used = NULL;
}

/* A packed ring position as SET_VRING_BASE and GET_VRING_BASE encode it:
 * the ring index in bits 0..14, its wrap counter in bit 15. */
static inline uint16_t
virtq_packed_pos__(uint16_t idx, bool wrap)
{
    return (idx & 0x7fff) | (uint16_t) wrap << 15;
}

/* True if the positions 'avail' and 'used' (each virtq_packed_pos__()'s
 * encoding) lie in a ring of 'size' entries, with 'used' behind 'avail' by
 * at most the ring: the descriptors between them are the ones in flight.
 * Positions count laps by their wrap counters, which start at 1 (§2.8.1),
 * so a position is its index plus 'size' in laps with wrap counter 0,
 * modulo two rings. */
bool
virtq_packed_positions_ok(uint16_t avail, uint16_t used, uint16_t size)
{
    uint32_t a = avail & 0x7fff, u = used & 0x7fff;

    if (a >= size || u >= size) {
        return false;
    }
    a += avail & 0x8000 ? 0 : size;
    u += used & 0x8000 ? 0 : size;
    return (a + 2 * size - u) % (2 * size) <= size;
}

/* Splits packed SET_VRING_BASE value 'base' into its avail and used
 * positions (see virtq_set_base()): an upper half of 0 is a frontend
 * that sends the avail half only, and means used = avail. */
static inline void
virtq_packed_base_split__(uint32_t base, uint16_t *availp, uint16_t *usedp)
{
    *availp = base & 0xffff;
    *usedp = base >> 16 ? base >> 16 : *availp;
}

/* Returns true if 'vq' has all it needs for the data path: enabled, sized,
 * addressed and mapped, and kicked (SET_VRING_KICK, with or without fd). */
bool
virtq_can_run(const struct virtq *vq)
{
    /* A packed ring's positions index the ring itself: SET_VRING_BASE
     * and SET_VRING_NUM may come in either order, so they are checked
     * against each other here, where both are known. */
    return vq->enabled && vq->size && (vq->desc || vq->iotlb_lost)
           && vq->has_kick
           && (!vq->packed
               || (virtq_packed_positions_ok(
                       virtq_packed_pos__(vq->last_avail_idx,
                                          vq->avail_wrap_counter),
                       virtq_packed_pos__(vq->last_used_idx,
                                          vq->used_wrap_counter), vq->size)
                   && vq->id_cap >= vq->size));
}

/* Sets the ring position from SET_VRING_BASE's 'base'.  Split rings use
 * the low 16 bits as the next avail index.  Packed rings carry two
 * positions (vhost-user.rst, "VHOST_USER_SET_VRING_BASE"): the next
 * available descriptor in bits 0..15 and the next used one in bits
 * 16..31, each an index with its wrap counter in the top bit, as QEMU
 * sends them.  A frontend that sends the avail half only (DPDK's
 * virtio-user; DPDK's vhost library reads no more) leaves bits 16..31
 * zero, and the used position is then the avail one, as on a ring that
 * stopped with nothing in flight.  (QEMU's used index 0 with wrap counter
 * 0 behind another avail position reads the same way: the buffers in
 * flight at the stop are then skipped rather than waited for.)
 * A ring never told its base starts at 0 with wrap counters 1 (§2.8.1). */
void
virtq_set_base(struct virtq *vq, uint32_t base)
{
    vq->base = base;
    if (vq->packed) {
        uint16_t avail, used;

        virtq_packed_base_split__(base, &avail, &used);
        vq->last_avail_idx = avail & 0x7fff;
        vq->avail_wrap_counter = avail >> 15;
        vq->last_used_idx = used & 0x7fff;
        vq->used_wrap_counter = used >> 15;
    } else {
        vq->last_avail_idx = vq->last_used_idx = base & 0xffff;
    }
}

/* True if packed SET_VRING_BASE value 'base' (see virtq_set_base()) names
 * two positions of a ring of 'size' entries with the used one at most a
 * ring behind the avail one.  With 'size' 0 (SET_VRING_NUM has not come
 * yet) there is nothing to check yet: virtq_can_run() checks again. */
bool
virtq_packed_base_ok(uint32_t base, uint16_t size)
{
    uint16_t avail, used;

    virtq_packed_base_split__(base, &avail, &used);
    return !size || virtq_packed_positions_ok(avail, used, size);
}

/* Returns the ring position in the encoding virtq_set_base() reads, for
 * GET_VRING_BASE: on a packed ring both positions, as QEMU reads them back
 * (bursts write back every descriptor they take, so a stopped ring has
 * its used position equal to its avail one, unless it was set up with
 * descriptors in flight that the driver never got back). */
uint32_t
virtq_get_base(const struct virtq *vq)
{
    if (vq->packed) {
        return virtq_packed_pos__(vq->last_avail_idx, vq->avail_wrap_counter)
               | (uint32_t) virtq_packed_pos__(vq->last_used_idx,
                                               vq->used_wrap_counter) << 16;
    }
    return vq->last_avail_idx;
}
