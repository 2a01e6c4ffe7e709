/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory table: the regions a frontend shares with SET_MEM_TABLE or
 * ADD_MEM_REG, mapped into this process.
 *
 * Usage
 * =====
 *
 * A table is built with guest_mem_create() and guest_mem_add(), then
 * installed in a device.  It is never modified while installed: to change
 * it, the control plane builds a new table (guest_mem_clone() plus
 * guest_mem_add() or guest_mem_remove()), swaps it in with every queue's
 * access lock held, and only then frees the old one.  A clone shares the
 * old table's mappings; guest_mem_destroy() unmaps a region only when its
 * last table goes, so a region that survives the swap is never unmapped.
 *
 * Translation works both by guest physical address (what descriptors
 * carry) and by frontend virtual address (what SET_VRING_ADDR carries).
 * Each returns the host address and, through 'lenp', how many bytes are
 * contiguous from there within the region; callers loop over region
 * boundaries.
 *
 * Thread-safety
 * =============
 *
 * Building, cloning and destroying run on the control-plane thread only.
 * Lookups on an installed table may run on any thread that holds a queue's
 * access lock (see virtq.h).
 *
 * Trust model
 * ===========
 *
 * Every number in a region description comes from the frontend.
 * guest_mem_add() rejects zero sizes, ranges that wrap, regions that
 * overlap another (in guest physical or frontend virtual space), more than
 * VHOST_MAX_MEM_REGIONS regions, non-regular files, and an mmap offset plus
 * size beyond the end of the fd (an access there would SIGBUS).  The
 * frontend may shrink an fd later, unless it sealed it: such a mapping is
 * guarded against SIGBUS (guest-mem-guard.h).
 *
 * Duplicates
 * ==========
 *
 * QEMU 7.2 gives each queue pair of a multiqueue NIC a vhost device of its
 * own, all on one connection, and each sends the whole memory table with
 * ADD_MEM_REG: the backend sees every region once per queue pair, and on
 * unplug sees it removed as often.  So a region identical to one already
 * in the table (same guest address, size, frontend address and offset, and
 * an fd for the same file) is not refused but counted, and
 * guest_mem_remove() unmaps it only when the last instance goes.  Regions
 * that overlap without being identical are still refused.
 */

#ifndef OVS_VHOST_GUEST_MEM_H
#define OVS_VHOST_GUEST_MEM_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"

struct guest_mem_map;

struct guest_mem_region {
    uint64_t gpa;               /* Guest physical address of byte 0. */
    uint64_t size;              /* Bytes; gpa + size and uva + size fit. */
    uint64_t uva;               /* Frontend virtual address of byte 0. */
    uint64_t mmap_offset;       /* Offset of byte 0 in the frontend's fd. */
    uint8_t *hva;               /* Our address of byte 0. */
    struct guest_mem_map *map;  /* The mapping, shared between clones. */
    unsigned int n_instances;   /* Times the frontend added it (see
                                 * "Duplicates"), 1..GUEST_MEM_MAX_INSTANCES. */
};

/* A region may be added this many times: once per queue pair. */
#define GUEST_MEM_MAX_INSTANCES VHOST_MAX_QUEUE_PAIRS

struct guest_mem {
    unsigned int n_regions;
    struct guest_mem_region regions[VHOST_MAX_MEM_REGIONS];
};

struct guest_mem *guest_mem_create(void);
struct guest_mem *guest_mem_clone(const struct guest_mem *);
void guest_mem_destroy(struct guest_mem *);

int guest_mem_add(struct guest_mem *, uint64_t gpa, uint64_t size,
                  uint64_t uva, uint64_t mmap_offset, int fd,
                  const char **reason);
int guest_mem_remove(struct guest_mem *, uint64_t gpa, uint64_t size,
                     uint64_t uva);

int guest_mem_map_fd(int fd, uint64_t offset, uint64_t size, void **mapp,
                     size_t *map_lenp, uint8_t **hvap, const char **reason);
void guest_mem_unmap(void *addr, size_t len);

uint64_t guest_mem_total_size(const struct guest_mem *);
const struct guest_mem_region *guest_mem_find_uva(const struct guest_mem *,
                                                  uint64_t uva);
void guest_mem_region_file(const struct guest_mem_region *, uint64_t *devp,
                           uint64_t *inop);

/* Returns the region that holds guest physical address 'gpa', or NULL.
 * Inline: the data path translates every descriptor.  Tables are small (a
 * few regions), so a linear scan beats a tree. */
static inline const struct guest_mem_region *
guest_mem_find_gpa(const struct guest_mem *mem, uint64_t gpa)
{
    for (unsigned int i = 0; i < mem->n_regions; i++) {
        const struct guest_mem_region *r = &mem->regions[i];

        if (gpa - r->gpa < r->size) {
            return r;
        }
    }
    return NULL;
}

/* Translates guest physical address 'gpa' to a host address, and stores in
 * '*lenp' the number of bytes available contiguously from there, at most
 * '*lenp' on entry.  Returns NULL, with '*lenp' zero, if 'gpa' is in no
 * region. */
static inline void *
guest_mem_gpa_to_hva(const struct guest_mem *mem, uint64_t gpa,
                     uint64_t *lenp)
{
    const struct guest_mem_region *r = guest_mem_find_gpa(mem, gpa);

    if (!r) {
        *lenp = 0;
        return NULL;
    }
    uint64_t off = gpa - r->gpa;
    if (*lenp > r->size - off) {
        *lenp = r->size - off;
    }
    return r->hva + off;
}

/* As guest_mem_gpa_to_hva(), for frontend virtual address 'uva'. */
static inline void *
guest_mem_uva_to_hva(const struct guest_mem *mem, uint64_t uva,
                     uint64_t *lenp)
{
    const struct guest_mem_region *r = guest_mem_find_uva(mem, uva);

    if (!r) {
        *lenp = 0;
        return NULL;
    }
    uint64_t off = uva - r->uva;
    if (*lenp > r->size - off) {
        *lenp = r->size - off;
    }
    return r->hva + off;
}

/* Returns the guest physical address of frontend virtual address 'uva',
 * which the caller has found mapped (guest_mem_uva_to_hva() did not
 * return NULL). */
static inline uint64_t
guest_mem_uva_to_gpa(const struct guest_mem *mem, uint64_t uva)
{
    const struct guest_mem_region *r = guest_mem_find_uva(mem, uva);

    return r ? r->gpa + (uva - r->uva) : 0;
}

/* Returns the host address of the 'len' bytes at 'uva' if they all lie in
 * one region, otherwise NULL.  For ring parts, which must be contiguous. */
static inline void *
guest_mem_uva_to_hva_contig(const struct guest_mem *mem, uint64_t uva,
                            uint64_t len)
{
    uint64_t avail = len;
    void *hva = guest_mem_uva_to_hva(mem, uva, &avail);

    return hva && avail == len ? hva : NULL;
}

#endif /* guest-mem.h */
