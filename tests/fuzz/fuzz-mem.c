/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest memory for the ring fuzzers: see fuzz-mem.h.
 */

#include <config.h>
#include "fuzz-mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "guest-mem.h"
#include "util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PAGE 4096u
#define FD_SIZE 0x21000u        /* Largest region plus its offset. */

struct fuzz_mem_layout_region {
    uint64_t gpa, size, offset;
};

/* The layouts (see fuzz-mem.h).  Offsets are page multiples, as mmap()
 * needs for the guard pages to sit right against the region. */
static const struct fuzz_mem_layout {
    size_t n;
    struct fuzz_mem_layout_region r[FUZZ_MEM_MAX_REGIONS];
} fuzz_mem_layouts[FUZZ_MEM_N_LAYOUTS] = {
    /* One region. */
    { 1, { { 0, 0x20000, 0 } } },
    /* A gap at 0x10000..0x18000, then two regions adjacent at 0x20000. */
    { 3, { { 0, 0x10000, 0 }, { 0x18000, 0x8000, 0x1000 },
           { 0x20000, 0x8000, 0 } } },
    /* Eight page-sized regions in a row: a buffer crosses several. */
    { 9, { { 0, 0x8000, 0 }, { 0x8000, PAGE, 0 }, { 0x9000, PAGE, PAGE },
           { 0xa000, PAGE, 0 }, { 0xb000, PAGE, 2 * PAGE },
           { 0xc000, PAGE, 0 }, { 0xd000, PAGE, 0 }, { 0xe000, PAGE, 0 },
           { 0xf000, PAGE, 0 } } },
    /* A region whose last byte is the top of the address space. */
    { 2, { { 0, 0x10000, 0 },
           { UINT64_MAX - 0x10000, 0x10000, 0 } } },
};

/* The memfds, made once: one per region slot, and our mapping of each. */
static int fuzz_mem_fds[FUZZ_MEM_MAX_REGIONS] = { -1 };
static uint8_t *fuzz_mem_maps[FUZZ_MEM_MAX_REGIONS];

static void
fuzz_mem_init__(void)
{
    static bool inited;

    if (inited) {
        return;
    }
    for (size_t i = 0; i < FUZZ_MEM_MAX_REGIONS; i++) {
        int fd = memfd_create("fuzz-guest", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, FD_SIZE)) {
            perror("memfd");
            abort();
        }
        void *p = mmap(NULL, FD_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                       fd, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            abort();
        }
        fuzz_mem_fds[i] = fd;
        fuzz_mem_maps[i] = p;
    }
    inited = true;
}

/* Puts a PROT_NONE page at 'addr' if nothing is mapped there. */
static void
fuzz_mem_guard__(struct fuzz_mem *fm, uint8_t *addr)
{
    void *p = mmap(addr, PAGE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
        return;
    }
    if (p != addr) {
        /* A kernel without MAP_FIXED_NOREPLACE took it as a hint. */
        munmap(p, PAGE);
        return;
    }
    fm->guards[fm->n_guards++] = p;
}

/* Builds layout number 'layout' (modulo the number of layouts) into 'fm':
 * zeroed regions, mapped by the engine into 'fm->gm'.  Aborts if the
 * engine refuses a layout, which is a bug in the fuzzer or the engine. */
void
fuzz_mem_build(struct fuzz_mem *fm, unsigned int layout)
{
    const struct fuzz_mem_layout *l
        = &fuzz_mem_layouts[layout % FUZZ_MEM_N_LAYOUTS];

    fuzz_mem_init__();
    memset(fm, 0, sizeof *fm);
    fm->gm = guest_mem_create();
    if (!fm->gm) {
        abort();
    }
    for (size_t i = 0; i < l->n; i++) {
        const struct fuzz_mem_layout_region *lr = &l->r[i];
        struct fuzz_mem_region *r = &fm->r[i];
        const char *reason;

        r->gpa = lr->gpa;
        r->size = lr->size;
        r->uva = FUZZ_MEM_UVA0 + (uint64_t) i * 0x100000;
        r->va = fuzz_mem_maps[i] + lr->offset;
        memset(r->va, 0, r->size);
        if (guest_mem_add(fm->gm, r->gpa, r->size, r->uva, lr->offset,
                          fuzz_mem_fds[i], &reason)) {
            fprintf(stderr, "layout %u region %zu: %s\n", layout, i, reason);
            abort();
        }

        const struct guest_mem_region *gr = guest_mem_find_gpa(fm->gm,
                                                               r->gpa);
        fuzz_mem_guard__(fm, gr->hva - PAGE);
        fuzz_mem_guard__(fm, gr->hva + r->size);
    }
    fm->n = l->n;
}

void
fuzz_mem_destroy(struct fuzz_mem *fm)
{
    for (size_t i = 0; i < fm->n_guards; i++) {
        munmap(fm->guards[i], PAGE);
    }
    guest_mem_destroy(fm->gm);
    memset(fm, 0, sizeof *fm);
}

/* Fills the regions, in order, from 'in', leaving alone guest physical
 * addresses below 'skip_gpa_below' (where the rings are).  Input runs out
 * quickly, so most bytes stay zero; what matters is that the fuzzer
 * controls the first bytes of each region, where its descriptors point
 * most easily. */
void
fuzz_mem_fill(struct fuzz_mem *fm, uint64_t skip_gpa_below,
              struct fuzz_input *in)
{
    for (size_t i = 0; i < fm->n && in->n; i++) {
        struct fuzz_mem_region *r = &fm->r[i];
        uint64_t skip = 0;

        if (r->gpa < skip_gpa_below) {
            skip = MIN(skip_gpa_below - r->gpa, r->size);
        }
        fuzz_input_bytes(in, r->va + skip, MIN(r->size - skip, in->n));
    }
}

/* Returns our address for the 'len' bytes at 'gpa' if they lie in one
 * region, else NULL. */
void *
fuzz_mem_va(const struct fuzz_mem *fm, uint64_t gpa, uint64_t len)
{
    for (size_t i = 0; i < fm->n; i++) {
        const struct fuzz_mem_region *r = &fm->r[i];

        if (gpa - r->gpa < r->size && len <= r->size - (gpa - r->gpa)) {
            return r->va + (gpa - r->gpa);
        }
    }
    return NULL;
}

/* The frontend virtual address of 'gpa', which must be in a region. */
uint64_t
fuzz_mem_uva(const struct fuzz_mem *fm, uint64_t gpa)
{
    for (size_t i = 0; i < fm->n; i++) {
        const struct fuzz_mem_region *r = &fm->r[i];

        if (gpa - r->gpa < r->size) {
            return r->uva + (gpa - r->gpa);
        }
    }
    abort();
}

/* Counts this process's mappings of fuzzer memfds ("fuzz-" names) and
 * engine mappings of them, for leak checks. */
int
fuzz_mem_count_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;

    if (!f) {
        abort();
    }
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "memfd:fuzz-")) {
            n++;
        }
    }
    fclose(f);
    return n;
}
