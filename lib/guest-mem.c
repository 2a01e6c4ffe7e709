/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory table: see guest-mem.h.
 */

#include <config.h>
#include "guest-mem.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "guest-mem-guard.h"
#include "util.h"

/* One mmap() of a frontend fd, shared by every table that holds the
 * region.  Tables are only handled on the control-plane thread, so the
 * reference count needs no atomics. */
struct guest_mem_map {
    void *addr;                 /* What mmap() returned. */
    size_t len;                 /* What was passed to mmap(). */
    unsigned int refcnt;
    dev_t dev;                  /* The file mapped, to tell whether a */
    ino_t ino;                  /* duplicate region names the same one. */
};

struct guest_mem *
guest_mem_create(void)
{
    return calloc(1, sizeof(struct guest_mem));
}

/* Returns a new table with the same regions as 'old', sharing their
 * mappings, or NULL if memory is short.  'old' may be NULL. */
struct guest_mem *
guest_mem_clone(const struct guest_mem *old)
{
    struct guest_mem *mem = guest_mem_create();

    if (mem && old) {
        *mem = *old;
        for (unsigned int i = 0; i < mem->n_regions; i++) {
            mem->regions[i].map->refcnt++;
        }
    }
    return mem;
}

static void
guest_mem_map_unref__(struct guest_mem_map *map)
{
    if (map && !--map->refcnt) {
        guest_mem_unmap(map->addr, map->len);
        free(map);
    }
}

/* Frees 'mem', unmapping each region no other table holds.  'mem' must not
 * be installed in a device any more. */
void
guest_mem_destroy(struct guest_mem *mem)
{
    if (mem) {
        for (unsigned int i = 0; i < mem->n_regions; i++) {
            guest_mem_map_unref__(mem->regions[i].map);
        }
        free(mem);
    }
}

static bool
ranges_overlap(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len)
{
    return a < b + b_len && b < a + a_len;
}

/* Returns the region of 'mem' identical to the description 'gpa', 'size',
 * 'uva' and 'mmap_offset', or NULL. */
static struct guest_mem_region *
guest_mem_find_identical__(struct guest_mem *mem, uint64_t gpa,
                           uint64_t size, uint64_t uva, uint64_t mmap_offset)
{
    for (unsigned int i = 0; i < mem->n_regions; i++) {
        struct guest_mem_region *r = &mem->regions[i];

        if (r->gpa == gpa && r->size == size && r->uva == uva
            && r->mmap_offset == mmap_offset) {
            return r;
        }
    }
    return NULL;
}

/* Counts one more instance of region 'r', which a frontend added again
 * with 'fd' (guest-mem.h, "Duplicates").  The mapping stays the one made
 * first, so 'fd' must be for the same file: otherwise the frontend's idea
 * of the region's contents and ours would differ.  Returns 0, or EINVAL
 * with '*reason' set. */
static int
guest_mem_add_instance__(struct guest_mem_region *r, int fd,
                         const char **reason)
{
    struct stat st;

    if (fd < 0 || fstat(fd, &st)) {
        *reason = "bad fd";
        return EBADF;
    }
    if (st.st_dev != r->map->dev || st.st_ino != r->map->ino) {
        *reason = "region identical to one already mapped, but from "
                  "another file";
        return EINVAL;
    }
    if (r->n_instances >= GUEST_MEM_MAX_INSTANCES) {
        *reason = "region added more times than there are queue pairs";
        return EINVAL;
    }
    r->n_instances++;
    return 0;
}

/* Checks a region description from the frontend.  Returns NULL if it may be
 * added to 'mem', otherwise a reason for the log. */
static const char *
guest_mem_check__(const struct guest_mem *mem, uint64_t gpa, uint64_t size,
                  uint64_t uva, uint64_t mmap_offset)
{
    /* Frontend-controlled: all four values; each sum is checked with the
     * one overflow idiom before any other use. */
    if (!size) {
        return "zero-sized region";
    }
    if (!range_fits(gpa, size) || !range_fits(uva, size)
        || !range_fits(mmap_offset, size)) {
        return "region address plus size overflows";
    }
    if (mem->n_regions >= VHOST_MAX_MEM_REGIONS) {
        return "too many memory regions";
    }
    for (unsigned int i = 0; i < mem->n_regions; i++) {
        const struct guest_mem_region *r = &mem->regions[i];

        if (ranges_overlap(gpa, size, r->gpa, r->size)) {
            return "region overlaps another in guest physical memory";
        }
        if (ranges_overlap(uva, size, r->uva, r->size)) {
            return "region overlaps another in frontend virtual memory";
        }
    }
    return NULL;
}

/* Maps 'size' bytes at 'mmap_offset' in 'fd' and adds them to 'mem' as the
 * region of guest physical address 'gpa' and frontend virtual address
 * 'uva'.  'fd' stays the caller's: it may be closed once this returns.
 *
 * Returns 0, or a positive errno value with '*reason' pointing to a static
 * description of what was wrong. */
int
guest_mem_add(struct guest_mem *mem, uint64_t gpa, uint64_t size,
              uint64_t uva, uint64_t mmap_offset, int fd,
              const char **reason)
{
    void *addr;
    size_t len;
    uint8_t *hva;
    struct stat st;

    struct guest_mem_region *same = guest_mem_find_identical__(mem, gpa, size,
                                                               uva,
                                                               mmap_offset);
    if (same) {
        return guest_mem_add_instance__(same, fd, reason);
    }
    *reason = guest_mem_check__(mem, gpa, size, uva, mmap_offset);
    if (*reason) {
        return EINVAL;
    }
    int error = guest_mem_map_fd(fd, mmap_offset, size, &addr, &len, &hva,
                                 reason);
    if (error) {
        return error;
    }
    if (fstat(fd, &st)) {
        guest_mem_unmap(addr, len);
        *reason = "bad fd";
        return EBADF;
    }

    struct guest_mem_map *map = malloc(sizeof *map);
    if (!map) {
        guest_mem_unmap(addr, len);
        *reason = "out of memory";
        return ENOMEM;
    }
    map->addr = addr;
    map->len = len;
    map->refcnt = 1;
    map->dev = st.st_dev;
    map->ino = st.st_ino;

    struct guest_mem_region *r = &mem->regions[mem->n_regions++];
    r->gpa = gpa;
    r->size = size;
    r->uva = uva;
    r->mmap_offset = mmap_offset;
    r->hva = hva;
    r->map = map;
    r->n_instances = 1;
    return 0;
}

/* Returns true if 'fd''s size may shrink while we have it mapped, so that
 * an access to a mapping of it may raise SIGBUS, and stores in '*pagep'
 * the granule of such a mapping.  Only a memfd sealed with F_SEAL_SHRINK
 * cannot shrink (seals are never removed).  A hugetlbfs file counts as one
 * that can, sealed or not: with MAP_NORESERVE a fault there also raises
 * SIGBUS when the huge page pool is empty. */
static bool
guest_mem_fd_can_shrink__(int fd, size_t *pagep)
{
    struct statfs sfs;

    *pagep = sysconf(_SC_PAGESIZE);
    if (!fstatfs(fd, &sfs) && sfs.f_type == HUGETLBFS_MAGIC
        && is_pow2(sfs.f_bsize)) {
        *pagep = sfs.f_bsize;
        return true;
    }
    int seals = fcntl(fd, F_GET_SEALS);
    return seals < 0 || !(seals & F_SEAL_SHRINK);
}

/* Maps the 'size' bytes at 'offset' in 'fd', shared and writable.  On
 * success stores what to pass to guest_mem_unmap() in '*mapp' and
 * '*map_lenp', and the address of byte 'offset' in '*hvap'.  Used for guest
 * memory regions and for the dirty log.
 *
 * A mapping beyond the end of the file would SIGBUS on first access, so
 * the whole range must be backed.  Only regular files (memfd, tmpfs,
 * hugetlbfs) have a size to check, so other kinds of fd are refused.  The
 * frontend may still shrink the file later unless it is sealed (see
 * guest_mem_fd_can_shrink__()): such a mapping is guarded against SIGBUS
 * (guest-mem-guard.h), or refused if it cannot be.
 *
 * Returns 0, or a positive errno value with '*reason' pointing to a static
 * description of what was wrong.  'fd' stays the caller's. */
int
guest_mem_map_fd(int fd, uint64_t offset, uint64_t size, void **mapp,
                 size_t *map_lenp, uint8_t **hvap, const char **reason)
{
    struct stat st;
    size_t page = 0;

    /* Frontend-controlled: 'offset' and 'size'. */
    if (!size) {
        *reason = "zero-sized mapping";
        return EINVAL;
    }
    if (!range_fits(offset, size) || offset + size > (uint64_t) SIZE_MAX / 2) {
        *reason = "mmap offset plus size overflows";
        return EINVAL;
    }
    /* Seals before the size: once F_SEAL_SHRINK is seen, the size that
     * fstat() reads next can only grow. */
    bool can_shrink = fd >= 0 && guest_mem_fd_can_shrink__(fd, &page);
    if (fd < 0 || fstat(fd, &st)) {
        *reason = "bad fd";
        return EBADF;
    }
    if (!S_ISREG(st.st_mode)) {
        *reason = "fd is not a regular file or memfd";
        return EINVAL;
    }
    if ((uint64_t) st.st_size < offset + size) {
        *reason = "mmap offset plus size is beyond the end of the fd";
        return EINVAL;
    }

    /* mmap() wants a page-aligned offset; map from the page that holds
     * 'offset'. */
    uint64_t skew = offset & (sysconf(_SC_PAGESIZE) - 1);
    size_t len = size + skew;
    void *addr = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_NORESERVE, fd, offset - skew);
    if (addr == MAP_FAILED) {
        *reason = "mmap failed";
        return errno;
    }
    if (can_shrink) {
        int error = guest_mem_guard_add(addr, len, page, reason);
        if (error) {
            munmap(addr, len);
            return error;
        }
    }
    *mapp = addr;
    *map_lenp = len;
    *hvap = (uint8_t *) addr + skew;
    return 0;
}

/* Unmaps what guest_mem_map_fd() mapped at 'addr' ('len' bytes), first
 * taking it out of the SIGBUS guard.  The zero pages the guard may have
 * put over parts of it go with it. */
void
guest_mem_unmap(void *addr, size_t len)
{
    guest_mem_guard_remove(addr);
    munmap(addr, len);
}

/* Removes from 'mem' one instance of the region that starts at 'gpa' with
 * 'size' bytes and frontend address 'uva' (vhost-user REM_MEM_REG
 * identifies regions so).  The last instance takes the region out of the
 * table and drops this table's reference to its mapping (guest-mem.h,
 * "Duplicates").  Returns 0 or ENOENT. */
int
guest_mem_remove(struct guest_mem *mem, uint64_t gpa, uint64_t size,
                 uint64_t uva)
{
    for (unsigned int i = 0; i < mem->n_regions; i++) {
        struct guest_mem_region *r = &mem->regions[i];

        if (r->gpa == gpa && r->size == size && r->uva == uva) {
            if (--r->n_instances) {
                return 0;
            }
            guest_mem_map_unref__(r->map);
            memmove(r, r + 1, (mem->n_regions - i - 1) * sizeof *r);
            mem->n_regions--;
            return 0;
        }
    }
    return ENOENT;
}

uint64_t
guest_mem_total_size(const struct guest_mem *mem)
{
    uint64_t total = 0;

    for (unsigned int i = 0; mem && i < mem->n_regions; i++) {
        total += mem->regions[i].size;
    }
    return total;
}

/* Stores in '*devp' and '*inop' the file that 'r' maps: what tells a
 * frontend's memory from another's that reuses its addresses. */
void
guest_mem_region_file(const struct guest_mem_region *r, uint64_t *devp,
                      uint64_t *inop)
{
    *devp = r->map->dev;
    *inop = r->map->ino;
}

/* Returns the region that holds frontend virtual address 'uva', or NULL. */
const struct guest_mem_region *
guest_mem_find_uva(const struct guest_mem *mem, uint64_t uva)
{
    for (unsigned int i = 0; i < mem->n_regions; i++) {
        const struct guest_mem_region *r = &mem->regions[i];

        if (uva - r->uva < r->size) {
            return r;
        }
    }
    return NULL;
}
