/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-mem: guest memory for the ring fuzzers: a few fixed layouts of
 * memfd-backed regions, with gaps, regions adjacent in guest physical
 * memory but backed by different memfds (the cross-region cold path), many
 * page-sized regions, and one region that ends at the top of the 64-bit
 * address space (address plus length wrap-around).
 *
 * Usage
 * =====
 *
 *     struct fuzz_mem fm;
 *     fuzz_mem_build(&fm, layout);        (fm.gm: the engine's table)
 *     fuzz_mem_fill(&fm, &in);            (region contents from the input)
 *     ... bursts with ctx.mem = fm.gm ...
 *     fuzz_mem_destroy(&fm);
 *
 * The memfds and this process's own mappings of them (what the fuzzer
 * writes through) are made once and reused; each build maps them again
 * through guest_mem_add(), as SET_MEM_TABLE does, and zeroes them, so an
 * input's outcome never depends on the inputs before it.
 *
 * Out-of-region accesses: the engine's mapping of each region gets a
 * PROT_NONE guard page on each side where the address space is free
 * there, so that a read or write past a region faults (a finding) instead
 * of landing silently in a neighbouring mapping.
 *
 * Thread-safety: one thread.
 */

#ifndef OVS_VHOST_FUZZ_MEM_H
#define OVS_VHOST_FUZZ_MEM_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fuzz-input.h"

struct guest_mem;

#define FUZZ_MEM_MAX_REGIONS 10
#define FUZZ_MEM_N_LAYOUTS 4

/* Every layout has region 0 at guest physical address 0, at least this
 * big, for the rings (whose addresses are given to the engine as frontend
 * virtual addresses, FUZZ_MEM_UVA0 + gpa). */
#define FUZZ_MEM_RING_SPACE 0x8000u
#define FUZZ_MEM_UVA0 UINT64_C(0x7f0000000000)

struct fuzz_mem_region {
    uint64_t gpa;
    uint64_t size;
    uint64_t uva;               /* Frontend virtual address given. */
    uint8_t *va;                /* Our own mapping of byte 0. */
};

struct fuzz_mem {
    struct guest_mem *gm;       /* The engine's table. */
    size_t n;
    struct fuzz_mem_region r[FUZZ_MEM_MAX_REGIONS];
    size_t n_guards;
    void *guards[2 * FUZZ_MEM_MAX_REGIONS];
};

void fuzz_mem_build(struct fuzz_mem *, unsigned int layout);
void fuzz_mem_destroy(struct fuzz_mem *);
void fuzz_mem_fill(struct fuzz_mem *, uint64_t skip_gpa_below,
                   struct fuzz_input *);
void *fuzz_mem_va(const struct fuzz_mem *, uint64_t gpa, uint64_t len);
uint64_t fuzz_mem_uva(const struct fuzz_mem *, uint64_t gpa);
int fuzz_mem_count_maps(void);

#endif /* fuzz-mem.h */
