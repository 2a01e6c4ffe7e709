/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tfe_mem: the guest memory of the test frontend (test-frontend.h, "Guest
 * memory"): memfd-backed regions at guest physical addresses, a bump
 * allocator in each, translation between guest physical and frontend
 * addresses, and copies that cross region boundaries.
 *
 * The frontend (test-frontend.c) hands these regions to the engine with
 * SET_MEM_TABLE and ADD_MEM_REG; the guest driver (test-frontend-vq.c)
 * lays its rings and buffers out in them.
 */

#include <config.h>
#include "test-frontend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns new guest memory without regions.  Aborts if out of memory. */
struct tfe_mem *
tfe_mem_create(void)
{
    struct tfe_mem *mem = calloc(1, sizeof *mem);

    if (!mem) {
        abort();
    }
    return mem;
}

/* Creates the default guest memory: TFE_DEFAULT_REGION_SIZE bytes at
 * TFE_DEFAULT_GPA0, offset 0 in its memfd, and as many at TFE_DEFAULT_GPA1
 * (leaving a gap) at offset TFE_DEFAULT_OFFSET1 in its memfd.  Aborts on
 * failure, which only lack of memory can cause. */
struct tfe_mem *
tfe_mem_create_default(void)
{
    struct tfe_mem *mem = tfe_mem_create();

    if (tfe_mem_add(mem, TFE_DEFAULT_GPA0, TFE_DEFAULT_REGION_SIZE, 0) < 0
        || tfe_mem_add(mem, TFE_DEFAULT_GPA1, TFE_DEFAULT_REGION_SIZE,
                       TFE_DEFAULT_OFFSET1) < 0) {
        fprintf(stderr, "tfe_mem_create_default: %s\n", strerror(errno));
        abort();
    }
    return mem;
}

/* Unmaps and closes every region of 'mem' and frees it.  'mem' may be
 * null. */
void
tfe_mem_destroy(struct tfe_mem *mem)
{
    if (!mem) {
        return;
    }
    for (size_t i = 0; i < mem->n_regions; i++) {
        struct tfe_region *r = &mem->regions[i];
        munmap(r->map, r->mmap_offset + r->size);
        close(r->fd);
    }
    free(mem);
}

/* Adds to 'mem' a region of 'size' bytes at guest physical address 'gpa',
 * backed by a new memfd of 'mmap_offset' + 'size' bytes of which the region
 * is the tail.  The frontend maps all of the memfd.  Returns the region's
 * index, or a negative errno value.  Does not check for overlaps: tests
 * want to build bad tables too. */
int
tfe_mem_add(struct tfe_mem *mem, uint64_t gpa, uint64_t size,
            uint64_t mmap_offset)
{
    struct tfe_region *r;
    uint64_t total = mmap_offset + size;
    int fd;
    void *map;

    if (mem->n_regions >= TFE_MAX_REGIONS || !size || total < size) {
        return -EINVAL;
    }
    /* Sealing allowed, not done: a test may seal (tests/test-adv-sigbus.c). */
    fd = memfd_create(TFE_MEM_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -errno;
    }
    if (ftruncate(fd, total) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int error = errno;
        close(fd);
        return -error;
    }

    r = &mem->regions[mem->n_regions];
    r->gpa = gpa;
    r->size = size;
    r->mmap_offset = mmap_offset;
    r->fd = fd;
    r->map = map;
    r->va = r->map + mmap_offset;
    r->alloc_next = 0;
    r->alloc_end = size;
    return mem->n_regions++;
}

/* Returns the frontend's address of the 'len' bytes at guest physical
 * address 'gpa', or NULL if they are not all inside one region. */
void *
tfe_mem_gpa_to_va(const struct tfe_mem *mem, uint64_t gpa, uint64_t len)
{
    for (size_t i = 0; i < mem->n_regions; i++) {
        const struct tfe_region *r = &mem->regions[i];
        if (gpa >= r->gpa && gpa - r->gpa < r->size
            && len <= r->size - (gpa - r->gpa)) {
            return r->va + (gpa - r->gpa);
        }
    }
    return NULL;
}

/* Returns the guest physical address of frontend address 'va', or
 * TFE_BAD_GPA if it is in no region. */
uint64_t
tfe_mem_va_to_gpa(const struct tfe_mem *mem, const void *va)
{
    const uint8_t *p = va;

    for (size_t i = 0; i < mem->n_regions; i++) {
        const struct tfe_region *r = &mem->regions[i];
        if (p >= r->va && (uint64_t) (p - r->va) < r->size) {
            return r->gpa + (uint64_t) (p - r->va);
        }
    }
    return TFE_BAD_GPA;
}

/* Allocates 'size' bytes aligned to 'align' (a power of two) in region
 * 'region' of 'mem'.  Returns the frontend address, or NULL if the region
 * is full.  Memory is never freed; it comes zeroed from the memfd. */
void *
tfe_mem_alloc(struct tfe_mem *mem, size_t region, uint64_t size,
              uint64_t align)
{
    struct tfe_region *r;
    uint64_t off;

    if (region >= mem->n_regions) {
        return NULL;
    }
    r = &mem->regions[region];
    off = (r->alloc_next + align - 1) & ~(align - 1);
    if (off > r->alloc_end || size > r->alloc_end - off) {
        return NULL;
    }
    r->alloc_next = off + size;
    return r->va + off;
}

/* Fills in the wire description of region 'region' of 'mem'. */
void
tfe_mem_region_desc(const struct tfe_mem *mem, size_t region,
                    struct vhost_user_mem_region *desc)
{
    const struct tfe_region *r = &mem->regions[region];

    desc->guest_phys_addr = r->gpa;
    desc->memory_size = r->size;
    desc->userspace_addr = tfe_va_to_uva(r->va);
    desc->mmap_offset = r->mmap_offset;
}

/* Adds to 'mem' a region of 'size' bytes that starts in guest physical
 * memory where the last region ends, backed by a memfd of its own at
 * 'mmap_offset'.  Reserves TFE_BOUNDARY_RESERVE bytes on each side of the
 * boundary (the top of the last region, the bottom of the new one) from
 * tfe_mem_alloc().  Returns the new region's index or a negative errno
 * value (-EINVAL if there is no last region or it has no room left to
 * reserve). */
int
tfe_mem_add_adjacent(struct tfe_mem *mem, uint64_t size,
                     uint64_t mmap_offset)
{
    struct tfe_region *prev;
    int idx;

    if (!mem->n_regions || size < 2 * TFE_BOUNDARY_RESERVE) {
        return -EINVAL;
    }
    prev = &mem->regions[mem->n_regions - 1];
    if (prev->alloc_end < TFE_BOUNDARY_RESERVE
        || prev->alloc_next > prev->alloc_end - TFE_BOUNDARY_RESERVE) {
        return -EINVAL;
    }
    idx = tfe_mem_add(mem, prev->gpa + prev->size, size, mmap_offset);
    if (idx >= 0) {
        prev->alloc_end -= TFE_BOUNDARY_RESERVE;
        mem->regions[idx].alloc_next = TFE_BOUNDARY_RESERVE;
    }
    return idx;
}

/* Returns the guest physical address just past region 'region': the
 * boundary with the region tfe_mem_add_adjacent() put after it. */
uint64_t
tfe_mem_boundary(const struct tfe_mem *mem, size_t region)
{
    return mem->regions[region].gpa + mem->regions[region].size;
}

/* Returns the region holding 'gpa', or NULL. */
static const struct tfe_region *
mem_find__(const struct tfe_mem *mem, uint64_t gpa)
{
    for (size_t i = 0; i < mem->n_regions; i++) {
        const struct tfe_region *r = &mem->regions[i];
        if (gpa >= r->gpa && gpa - r->gpa < r->size) {
            return r;
        }
    }
    return NULL;
}

/* Copies 'len' bytes from 'data' to guest physical address 'gpa', across
 * as many regions as it takes.  Returns false (having copied a prefix) if
 * some byte is in no region. */
bool
tfe_mem_write(const struct tfe_mem *mem, uint64_t gpa, const void *data,
              size_t len)
{
    const uint8_t *p = data;

    while (len) {
        const struct tfe_region *r = mem_find__(mem, gpa);
        uint64_t n;

        if (!r) {
            return false;
        }
        n = MIN(len, r->size - (gpa - r->gpa));
        memcpy(r->va + (gpa - r->gpa), p, n);
        p += n;
        gpa += n;
        len -= n;
    }
    return true;
}

/* Copies 'len' bytes at guest physical address 'gpa' into 'data', across
 * regions.  Returns false if some byte is in no region. */
bool
tfe_mem_read(const struct tfe_mem *mem, uint64_t gpa, void *data,
             size_t len)
{
    uint8_t *p = data;

    while (len) {
        const struct tfe_region *r = mem_find__(mem, gpa);
        uint64_t n;

        if (!r) {
            return false;
        }
        n = MIN(len, r->size - (gpa - r->gpa));
        memcpy(p, r->va + (gpa - r->gpa), n);
        p += n;
        gpa += n;
        len -= n;
    }
    return true;
}
