/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packed ring position log: where each of a port's packed rings stands,
 * kept in a small file that outlives the process, so that a backend that
 * died (SIGKILL, a crash) resumes its rings where they really are.
 *
 * Why
 * ===
 *
 * A frontend tells a new backend where a ring stands with SET_VRING_BASE.
 * For a split ring, where it stands is also in guest memory (the used
 * index, virtq_resync_used()).  A packed ring has no such index: the
 * positions live only in the device and in what GET_VRING_BASE last
 * returned.  QEMU (7.2 and later, hw/virtio/virtio.c) rebuilds a split ring's position
 * from the used index when its backend goes away without answering
 * GET_VRING_BASE, but its packed counterpart does nothing, so after a
 * backend crash it hands the new backend the base of the last clean stop,
 * or 0x80008000 (both positions at 0, wrap counters 1) if there was none.
 * Resuming there, the device waits at a slot the driver filled laps ago
 * and the guest's queue stalls for good.  See virtq-packed.c for why a
 * log rather than a scan of the descriptor flags.
 *
 * Usage
 * =====
 *
 * A port with a 'state_path' (vhost_port_options) opens one log, a file of
 * VHOST_MAX_QUEUES slots mapped shared, and gives each queue its slot.
 * A packed ring's slot is claimed when the ring starts (SET_VRING_KICK):
 * virtq_poslog_start() records the ring's identity (its guest addresses,
 * size, and the file behind the guest memory that holds it) and, if the
 * slot already held a started ring of that identity, which only a backend
 * that died leaves, moves the ring to the logged position and returns
 * true.  Bursts then store the ring's positions with one 8-byte store
 * each (virtq_poslog_store(), in the write-back of used descriptors),
 * and GET_VRING_BASE or a device reset releases the slot
 * (virtq_poslog_stop()): from then on the frontend knows the position.
 * A disconnect does not release it: a frontend that lost its backend
 * learnt nothing.
 *
 * Exactness
 * =========
 *
 * Each store holds two positions: where the burst began and where it
 * ends.  It is made once every used descriptor of the burst is in the
 * ring, all but the flags of the first one, and before those flags: the
 * one store that hands the whole burst to the driver (virtq-packed.c,
 * virtq_packed_flush_used__()).  A process killed between the two leaves
 * a burst the driver never saw, complete but for that store; one killed
 * after them, a burst it did.  virtq_poslog_start() tells which from the
 * first used descriptor's USED flag (the device sets it to its wrap
 * counter; the driver, making the slot available in that lap, set it to
 * the opposite, and making it available again in the next lap sets it as
 * the device did), makes the missing store itself, and resumes at the
 * burst's end.  That is exact for every chain length, indirect or not,
 * in order or not.
 *
 * One window is left: a burst writes back its used descriptors a batch at
 * a time as it goes (virtq_packed_write_used__(), all but the first one's
 * flags), before it logs.  A process killed after such a write and before
 * the log leaves used descriptors ahead of the logged position, which
 * neither the burst's start (its slots are overwritten) nor its end (not
 * logged) resumes exactly.  virtq_poslog_start() finds them (a slot ahead
 * of the device that reads as used in the lap the device has not reached)
 * and says so in a warning: the guest's queue may then stall until its
 * driver resets.  Closing it would take a redo record of the burst's
 * used descriptors in the log before any of them is written.
 *
 * Thread-safety
 * =============
 *
 * A slot's identity and state are written by the control plane with the
 * queue's access lock held; its positions by the data path, under the same
 * lock.  Slots are a cache line each, so PMD threads never share one.
 *
 * Trust model
 * ===========
 *
 * The file is the backend's own, in its run directory.  Its contents are
 * still checked before use (a position must fit the ring), and the guest's
 * descriptor flags read during recovery are guest-controlled: a guest that
 * lies about them gets a position in its own ring, checked like any base.
 */

#ifndef OVS_VHOST_VIRTQ_POSLOG_H
#define OVS_VHOST_VIRTQ_POSLOG_H 1

#include <stdbool.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include "util.h"

struct guest_mem;
struct virtq;

/* One ring's record: one cache line. */
struct virtq_poslog_slot {
    /* Data path: positions in GET_VRING_BASE's encoding (virtq_get_base()),
     * the burst's start in bits 0..31 and its end in bits 32..63. */
    uint64_t pos;

    /* Control plane: the ring this slot describes, valid while 'started'. */
    uint32_t started;           /* 1 from the ring's start to its stop. */
    uint16_t size;
    uint16_t pad0;
    uint64_t desc_gpa;          /* Descriptor ring, driver and device */
    uint64_t driver_gpa;        /* event areas. */
    uint64_t device_gpa;
    uint64_t mem_dev;           /* The file behind the guest memory region */
    uint64_t mem_ino;           /* that holds the descriptor ring. */

    /* Data path: the used descriptor that 'pos''s burst puts at its start,
     * its buffer id in bits 0..15 and its length in bits 32..63. */
    uint64_t head;
};
BUILD_ASSERT_DECL(sizeof(struct virtq_poslog_slot) == 64);

struct virtq_poslog;

int virtq_poslog_open(const char *path, const char *name,
                      struct virtq_poslog **logp);
void virtq_poslog_close(struct virtq_poslog *);
struct virtq_poslog_slot *virtq_poslog_slot(struct virtq_poslog *,
                                            unsigned int qid);

enum virtq_poslog_result {
    VIRTQ_POSLOG_NONE,          /* Nothing to recover. */
    VIRTQ_POSLOG_RECOVERED,     /* Moved to the logged position. */
    VIRTQ_POSLOG_INEXACT,       /* Logged, but not exact: see "Exactness". */
};

enum virtq_poslog_result virtq_poslog_start(struct virtq *,
                                            const struct guest_mem *,
                                            bool recover);
void virtq_poslog_stop(struct virtq *);

/* Records, for the log, that 'vq''s burst is about to hand its used
 * descriptors to the driver: called with the ring's positions final, just
 * before the store that does (virtq-packed.c).  One store; the caller
 * holds the access lock. */
static inline void
virtq_poslog_store(struct virtq_poslog_slot *slot, uint32_t *lastp,
                   uint32_t now, uint16_t head_id, uint32_t head_len)
{
    /* The head's id and length before the positions that point at them
     * (the release; a plain store on x86), and both before the head's
     * own id, length and flags, which the caller writes next: if any of
     * those is in the ring, the log says what all of them are. */
    __atomic_store_n(&slot->head, (uint64_t) head_len << 32 | head_id,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&slot->pos, (uint64_t) now << 32 | *lastp,
                     __ATOMIC_RELEASE);
    *lastp = now;
}

#endif /* virtq-poslog.h */
