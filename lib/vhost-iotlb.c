/* SPDX-License-Identifier: Apache-2.0 */
/* A device's IOTLB: a sorted array of disjoint IOVA ranges (vhost-iotlb.h).
 *
 * A sorted array rather than a tree: lookups, the data path's part, are a
 * binary search over a few cache lines, and updates, the control plane's,
 * move at most VHOST_IOTLB_MAX_ENTRIES small entries. */

#include <config.h>
#include "vhost-iotlb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Sets up 'iotlb', empty, to hold at most 'max' entries (clamped to
 * 1..VHOST_IOTLB_MAX_ENTRIES).  The array is allocated at once: an update
 * never allocates. */
void
vhost_iotlb_init(struct vhost_iotlb *iotlb, unsigned int max)
{
    max = MAX(1, MIN(max, VHOST_IOTLB_MAX_ENTRIES));
    memset(iotlb, 0, sizeof *iotlb);
    iotlb->entries = calloc(max, sizeof *iotlb->entries);
    if (!iotlb->entries) {
        abort();
    }
    iotlb->max = max;
}

/* Makes 'dst' a copy of 'src' (entries, capacity and counters), for an
 * update applied to the copy while bursts go on reading 'src'.  Returns 0
 * or ENOMEM, 'dst' then empty. */
int
vhost_iotlb_clone(struct vhost_iotlb *dst, const struct vhost_iotlb *src)
{
    *dst = *src;
    dst->entries = malloc(src->max * sizeof *src->entries);
    if (!dst->entries) {
        memset(dst, 0, sizeof *dst);
        return ENOMEM;
    }
    memcpy(dst->entries, src->entries, src->n * sizeof *src->entries);
    return 0;
}

/* Frees what 'iotlb' holds. */
void
vhost_iotlb_destroy(struct vhost_iotlb *iotlb)
{
    free(iotlb->entries);
    iotlb->entries = NULL;
    iotlb->n = iotlb->max = 0;
}

/* Drops every entry, as a device reset does.  The counters stay. */
void
vhost_iotlb_flush(struct vhost_iotlb *iotlb)
{
    iotlb->n = 0;
    iotlb->next_victim = 0;
}

/* Returns the index of the first entry of 'iotlb' whose range ends at or
 * after 'iova' ('iotlb->n' if none does): the one that holds 'iova', if
 * any does, else where an entry starting at 'iova' would go. */
static unsigned int
vhost_iotlb_lower_bound__(const struct vhost_iotlb *iotlb, uint64_t iova)
{
    unsigned int lo = 0, hi = iotlb->n;

    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2;

        if (iotlb->entries[mid].last < iova) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Removes the entries of 'iotlb' that overlap [iova, last].  Returns how
 * many it removed. */
static unsigned int
vhost_iotlb_remove_range__(struct vhost_iotlb *iotlb, uint64_t iova,
                           uint64_t last)
{
    unsigned int first = vhost_iotlb_lower_bound__(iotlb, iova);
    unsigned int end = first;

    while (end < iotlb->n && iotlb->entries[end].iova <= last) {
        end++;
    }
    if (end > first) {
        memmove(&iotlb->entries[first], &iotlb->entries[end],
                (iotlb->n - end) * sizeof *iotlb->entries);
        iotlb->n -= end - first;
    }
    return end - first;
}

/* Makes room in full 'iotlb' by evicting one entry, in turn over the
 * array, and counts it. */
static void
vhost_iotlb_evict__(struct vhost_iotlb *iotlb)
{
    unsigned int victim = iotlb->next_victim % iotlb->n;

    memmove(&iotlb->entries[victim], &iotlb->entries[victim + 1],
            (iotlb->n - victim - 1) * sizeof *iotlb->entries);
    iotlb->n--;
    iotlb->next_victim = victim + 1;
    iotlb->n_evicted++;
}

/* Adds the translation of 'msg', an UPDATE, replacing every entry it
 * overlaps: the frontend's IOMMU is the authority, and its newest word on
 * a range wins.  Returns 0 or EINVAL for a message vhost-iotlb.h's "Trust
 * model" refuses. */
static int
vhost_iotlb_update__(struct vhost_iotlb *iotlb,
                     const struct vhost_iotlb_msg *msg)
{
    /* Guest-controlled (through the frontend's vIOMMU): every field. */
    if (!msg->size || !range_fits(msg->iova, msg->size)
        || !range_fits(msg->uaddr, msg->size)
        || (msg->perm & ~VHOST_ACCESS_RW) || !msg->perm) {
        return EINVAL;
    }

    struct vhost_iotlb_entry e = {
        .iova = msg->iova,
        .last = msg->iova + (msg->size - 1),
        .uva = msg->uaddr,
        .perm = msg->perm,
    };
    vhost_iotlb_remove_range__(iotlb, e.iova, e.last);
    if (iotlb->n == iotlb->max) {
        vhost_iotlb_evict__(iotlb);
    }

    unsigned int pos = vhost_iotlb_lower_bound__(iotlb, e.iova);
    memmove(&iotlb->entries[pos + 1], &iotlb->entries[pos],
            (iotlb->n - pos) * sizeof *iotlb->entries);
    iotlb->entries[pos] = e;
    iotlb->n++;
    iotlb->n_updates++;
    return 0;
}

/* Carries out 'msg', an IOTLB message from the frontend: UPDATE or
 * INVALIDATE.  Returns 0, or EINVAL (and counts it) for a message the
 * "Trust model" of vhost-iotlb.h refuses, 'iotlb' unchanged.  The caller
 * holds every queue's access lock. */
int
vhost_iotlb_apply(struct vhost_iotlb *iotlb,
                  const struct vhost_iotlb_msg *msg)
{
    int error = 0;

    switch (msg->type) {
    case VHOST_IOTLB_UPDATE:
        error = vhost_iotlb_update__(iotlb, msg);
        break;

    case VHOST_IOTLB_INVALIDATE:
        if (msg->size) {
            uint64_t last = range_fits(msg->iova, msg->size)
                            ? msg->iova + (msg->size - 1) : UINT64_MAX;

            vhost_iotlb_remove_range__(iotlb, msg->iova, last);
        }
        iotlb->n_invalidations++;
        break;

    default:
        error = EINVAL;
        break;
    }
    if (error) {
        iotlb->n_rejected++;
    }
    return error;
}

/* Translates 'iova' for an access 'perm' (VHOST_ACCESS_RO to read,
 * VHOST_ACCESS_WO to write, or both).  On VHOST_IOTLB_HIT, stores the
 * frontend virtual address in '*uvap' and in '*lenp' how many bytes from
 * 'iova' the entry covers (at least 1).  VHOST_IOTLB_NOT_FOUND if no
 * entry holds 'iova', VHOST_IOTLB_DENIED if the one that does lacks a
 * permission 'perm' needs; '*uvap' and '*lenp' are then untouched. */
enum vhost_iotlb_result
vhost_iotlb_translate(const struct vhost_iotlb *iotlb, uint64_t iova,
                      uint8_t perm, uint64_t *uvap, uint64_t *lenp)
{
    unsigned int i = vhost_iotlb_lower_bound__(iotlb, iova);

    if (i == iotlb->n || iotlb->entries[i].iova > iova) {
        return VHOST_IOTLB_NOT_FOUND;
    }

    const struct vhost_iotlb_entry *e = &iotlb->entries[i];
    if ((e->perm & perm) != perm) {
        return VHOST_IOTLB_DENIED;
    }
    *uvap = e->uva + (iova - e->iova);
    *lenp = e->last - iova + 1;
    return VHOST_IOTLB_HIT;
}
