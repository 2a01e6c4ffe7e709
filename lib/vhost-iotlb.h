/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A device's IOTLB: the translations a frontend with a virtual IOMMU
 * hands the backend (VIRTIO_F_IOMMU_PLATFORM, vhost-user's
 * VHOST_USER_IOTLB_MSG).  With the feature negotiated, every address in a
 * ring, a descriptor or an indirect table is an I/O virtual address
 * (IOVA).  An IOTLB entry maps a range of IOVAs to frontend virtual
 * addresses, which the memory table (guest-mem.h) then maps to ours.
 *
 * Usage
 * =====
 *
 * A device owns one struct vhost_iotlb, set up with vhost_iotlb_init().
 * vhost_iotlb_apply() carries out an IOTLB_MSG from the frontend: an
 * UPDATE adds an entry (replacing any it overlaps), an INVALIDATE drops
 * every entry that overlaps its range.  vhost_iotlb_translate() looks an
 * IOVA up, checks the access it needs against the entry's permissions
 * and returns the frontend virtual address and how many bytes are
 * contiguous from there within the entry; callers loop over entries as
 * they loop over memory regions.  A miss is the caller's to report to the
 * frontend (an IOTLB_MSG of type MISS on the backend channel) and to
 * retry once the update has come.
 *
 * The table is bounded (VHOST_IOTLB_MAX_ENTRIES, or less at init): an
 * update into a full table evicts an entry, in turn, and counts it.  An
 * evicted entry is missed and fetched again later; nothing is lost.
 *
 * Thread-safety
 * =============
 *
 * A table is read by bursts, under their queues' access locks, and never
 * changed while one may read it: the control plane applies a message to
 * a copy (vhost_iotlb_clone()), hands the copy to each queue in turn under
 * that queue's lock, and frees the old table once every queue has it
 * (vhost_dev_iotlb_msg()).  So an invalidation never lands in the middle
 * of a burst, and once the message is acknowledged no burst uses a
 * translation it removed; and no queue waits for another's lock.
 *
 * Trust model
 * ===========
 *
 * Every field of an IOTLB message comes from the frontend.  An UPDATE is
 * refused (EINVAL) for a zero size, an IOVA or frontend address range
 * that wraps around 2**64, or a permission other than read, write or
 * both; an INVALIDATE whose range wraps is taken to run to the end of the
 * IOVA space (dropping more than asked is always safe).  MISS and
 * ACCESS_FAIL go from backend to frontend only and are refused.  Whether
 * an entry's frontend addresses are in the memory table is checked at
 * each translation, not here: the table may change after the update.
 */

#ifndef OVS_VHOST_VHOST_IOTLB_H
#define OVS_VHOST_VHOST_IOTLB_H 1

#include <stdbool.h>
#include <stdint.h>
#include "util.h"

/* struct vhost_iotlb_msg, the payload of VHOST_USER_IOTLB_MSG (vhost-user
 * "IOTLB message"; Linux's include/uapi/linux/vhost_types.h). */
struct vhost_iotlb_msg {
    uint64_t iova;
    uint64_t size;
    uint64_t uaddr;             /* Frontend virtual address of 'iova'. */
    uint8_t perm;               /* VHOST_ACCESS_*. */
    uint8_t type;               /* VHOST_IOTLB_*. */
};
BUILD_ASSERT_DECL(sizeof(struct vhost_iotlb_msg) == 32);

/* Permissions: what the device may do with the memory. */
#define VHOST_ACCESS_RO 0x1     /* Read it (a driver-written buffer). */
#define VHOST_ACCESS_WO 0x2     /* Write it (a device-writable buffer). */
#define VHOST_ACCESS_RW 0x3

/* Message types. */
#define VHOST_IOTLB_MISS 1          /* Backend to frontend. */
#define VHOST_IOTLB_UPDATE 2        /* Frontend to backend. */
#define VHOST_IOTLB_INVALIDATE 3    /* Frontend to backend. */
#define VHOST_IOTLB_ACCESS_FAIL 4   /* Backend to frontend. */

/* The most entries a device keeps: Linux's vhost keeps 2048 too
 * (max_iotlb_entries), enough for a strict-mode guest's in-flight
 * mappings of several queues. */
#define VHOST_IOTLB_MAX_ENTRIES 2048

/* One translation: IOVAs [iova, last] to frontend virtual addresses from
 * 'uva'.  Neither range wraps. */
struct vhost_iotlb_entry {
    uint64_t iova;
    uint64_t last;              /* Last IOVA of the range, inclusive. */
    uint64_t uva;
    uint8_t perm;               /* VHOST_ACCESS_*. */
};

struct vhost_iotlb {
    /* Entries sorted by 'iova', pairwise disjoint. */
    struct vhost_iotlb_entry *entries;
    unsigned int n;
    unsigned int max;           /* Capacity, 1..VHOST_IOTLB_MAX_ENTRIES. */
    unsigned int next_victim;   /* Where eviction looks next. */

    /* Counters, for statistics. */
    uint64_t n_updates;
    uint64_t n_invalidations;
    uint64_t n_evicted;         /* Entries dropped to make room. */
    uint64_t n_rejected;        /* Messages refused. */
};

enum vhost_iotlb_result {
    VHOST_IOTLB_HIT,            /* Translated. */
    VHOST_IOTLB_NOT_FOUND,      /* No entry: send a miss, retry later. */
    VHOST_IOTLB_DENIED,         /* An entry without the access needed. */
};

void vhost_iotlb_init(struct vhost_iotlb *, unsigned int max);
void vhost_iotlb_destroy(struct vhost_iotlb *);
int vhost_iotlb_clone(struct vhost_iotlb *dst, const struct vhost_iotlb *src);
void vhost_iotlb_flush(struct vhost_iotlb *);
int vhost_iotlb_apply(struct vhost_iotlb *, const struct vhost_iotlb_msg *);
enum vhost_iotlb_result vhost_iotlb_translate(const struct vhost_iotlb *,
                                              uint64_t iova, uint8_t perm,
                                              uint64_t *uvap,
                                              uint64_t *lenp);

#endif /* vhost-iotlb.h */
