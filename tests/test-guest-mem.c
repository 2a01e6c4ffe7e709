/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the guest memory table (lib/guest-mem.[ch]), called
 * directly, without a socket.  The regions are real memfds from a tfe_mem,
 * so the tests also check that a translated address reaches the same bytes
 * the frontend sees.
 */

#include <config.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "guest-mem.h"
#include "test-frontend.h"
#include "test-util.h"

/* The layout used by most tests: three regions with gaps between them in
 * guest physical space, two of them at nonzero offsets in their memfds
 * (one page-aligned but not 64 KiB-aligned). */
#define R0_GPA 0
#define R0_SIZE (1u << 20)
#define R1_GPA (2u << 20)
#define R1_SIZE (1u << 20)
#define R1_OFFSET (64u << 10)
#define R2_GPA (8u << 20)
#define R2_SIZE (64u << 10)
#define R2_OFFSET (3u * 4096)

static struct tfe_mem *
make_tfe_mem(void)
{
    struct tfe_mem *tm = tfe_mem_create();

    TU_CHECK_EQ(tfe_mem_add(tm, R0_GPA, R0_SIZE, 0), 0);
    TU_CHECK_EQ(tfe_mem_add(tm, R1_GPA, R1_SIZE, R1_OFFSET), 1);
    TU_CHECK_EQ(tfe_mem_add(tm, R2_GPA, R2_SIZE, R2_OFFSET), 2);
    return tm;
}

/* Adds region 'i' of 'tm' to 'mem', as the frontend describes it. */
static void
add_region(struct guest_mem *mem, const struct tfe_mem *tm, size_t i)
{
    const struct tfe_region *r = &tm->regions[i];
    const char *reason = NULL;
    int error = guest_mem_add(mem, r->gpa, r->size, tfe_va_to_uva(r->va),
                              r->mmap_offset, r->fd, &reason);

    if (error) {
        TU_FAIL("guest_mem_add(region %zu): %s (%s)", i, tu_strerror(error),
                reason ? reason : "no reason");
    }
}

static struct guest_mem *
make_guest_mem(const struct tfe_mem *tm)
{
    struct guest_mem *mem = guest_mem_create();

    TU_CHECK_NONNULL(mem);
    for (size_t i = 0; i < tm->n_regions; i++) {
        add_region(mem, tm, i);
    }
    return mem;
}

/* Mappings of guest memory made by the table (the frontend holds one per
 * region of 'tm'). */
static int
table_maps(const struct tfe_mem *tm)
{
    return tu_count_maps(TFE_MEM_NAME) - (int) tm->n_regions;
}

/* Checks that 'gpa' translates to the byte the frontend has at the same
 * guest address, with 'expected_len' contiguous bytes when asked for as
 * many as possible. */
static void
check_gpa(const struct guest_mem *mem, const struct tfe_mem *tm,
          uint64_t gpa, uint64_t expected_len)
{
    uint64_t len = UINT64_MAX;
    uint8_t *hva = guest_mem_gpa_to_hva(mem, gpa, &len);
    uint8_t *va = tfe_mem_gpa_to_va(tm, gpa, 1);

    tu_log("  gpa %#"PRIx64" -> %"PRIu64" contiguous bytes", gpa,
           expected_len);
    TU_CHECK_NONNULL(hva);
    TU_CHECK_NONNULL(va);
    TU_CHECK_EQ(len, expected_len);

    /* The same memory: what the frontend writes, the engine reads, and
     * back. */
    *va = (uint8_t) (gpa * 7 + 1);
    TU_CHECK_EQ(*hva, (uint8_t) (gpa * 7 + 1));
    *hva = (uint8_t) (gpa * 7 + 2);
    TU_CHECK_EQ(*va, (uint8_t) (gpa * 7 + 2));
}

static void
check_gpa_gap(const struct guest_mem *mem, uint64_t gpa)
{
    uint64_t len = 4096;

    tu_log("  gpa %#"PRIx64" is in no region", gpa);
    TU_CHECK(guest_mem_gpa_to_hva(mem, gpa, &len) == NULL);
    TU_CHECK_EQ(len, 0);
    TU_CHECK(guest_mem_find_gpa(mem, gpa) == NULL);
}

static void
test_gpa(void)
{
    struct tfe_mem *tm = make_tfe_mem();
    struct guest_mem *mem = make_guest_mem(tm);
    uint64_t len;
    void *hva;

    tu_log("three regions, total size and region lookups");
    TU_CHECK_EQ(mem->n_regions, 3);
    TU_CHECK_EQ(guest_mem_total_size(mem), R0_SIZE + R1_SIZE + R2_SIZE);
    TU_CHECK(guest_mem_find_gpa(mem, R1_GPA + 5) == &mem->regions[1]);
    TU_CHECK(guest_mem_find_gpa(mem, R2_GPA) == &mem->regions[2]);

    tu_log("translation returns the length left in the region");
    check_gpa(mem, tm, R0_GPA, R0_SIZE);
    check_gpa(mem, tm, R0_GPA + 100, R0_SIZE - 100);
    check_gpa(mem, tm, R0_GPA + R0_SIZE - 1, 1);
    check_gpa(mem, tm, R1_GPA, R1_SIZE);
    check_gpa(mem, tm, R1_GPA + 4097, R1_SIZE - 4097);
    check_gpa(mem, tm, R1_GPA + R1_SIZE - 1, 1);
    check_gpa(mem, tm, R2_GPA, R2_SIZE);
    check_gpa(mem, tm, R2_GPA + R2_SIZE - 1, 1);

    tu_log("a shorter request is not lengthened");
    len = 16;
    hva = guest_mem_gpa_to_hva(mem, R1_GPA + 8, &len);
    TU_CHECK_NONNULL(hva);
    TU_CHECK_EQ(len, 16);
    len = 16;
    hva = guest_mem_gpa_to_hva(mem, R0_GPA + R0_SIZE - 4, &len);
    TU_CHECK_NONNULL(hva);
    TU_CHECK_EQ(len, 4);

    tu_log("addresses in gaps and beyond the last region");
    check_gpa_gap(mem, R0_GPA + R0_SIZE);
    check_gpa_gap(mem, R1_GPA - 1);
    check_gpa_gap(mem, R1_GPA + R1_SIZE);
    check_gpa_gap(mem, R2_GPA - 1);
    check_gpa_gap(mem, R2_GPA + R2_SIZE);
    check_gpa_gap(mem, UINT64_MAX);
    check_gpa_gap(mem, UINT64_MAX - R0_SIZE);

    tu_log("an empty table translates nothing");
    {
        struct guest_mem *empty = guest_mem_create();
        check_gpa_gap(empty, 0);
        TU_CHECK_EQ(guest_mem_total_size(empty), 0);
        guest_mem_destroy(empty);
    }

    guest_mem_destroy(mem);
    tfe_mem_destroy(tm);
}

static void
test_uva(void)
{
    struct tfe_mem *tm = make_tfe_mem();
    struct guest_mem *mem = make_guest_mem(tm);

    for (size_t i = 0; i < tm->n_regions; i++) {
        const struct tfe_region *r = &tm->regions[i];
        uint64_t uva = tfe_va_to_uva(r->va);
        uint64_t len;
        uint8_t *hva;

        tu_log("region %zu: frontend address %#"PRIx64", %"PRIu64" bytes",
               i, uva, r->size);
        TU_CHECK(guest_mem_find_uva(mem, uva) == &mem->regions[i]);
        TU_CHECK(guest_mem_find_uva(mem, uva + r->size - 1)
                 == &mem->regions[i]);

        len = UINT64_MAX;
        hva = guest_mem_uva_to_hva(mem, uva, &len);
        TU_CHECK_NONNULL(hva);
        TU_CHECK_EQ(len, r->size);
        r->va[0] = 0x5a;
        TU_CHECK_EQ(hva[0], 0x5a);

        len = UINT64_MAX;
        hva = guest_mem_uva_to_hva(mem, uva + r->size - 1, &len);
        TU_CHECK_NONNULL(hva);
        TU_CHECK_EQ(len, 1);
        r->va[r->size - 1] = 0xa5;
        TU_CHECK_EQ(*hva, 0xa5);

        tu_log("  the byte after the region, and the one before it");
        len = UINT64_MAX;
        TU_CHECK(guest_mem_find_uva(mem, uva + r->size) == NULL
                 || guest_mem_find_uva(mem, uva + r->size)
                    != &mem->regions[i]);
        TU_CHECK(guest_mem_find_uva(mem, uva - 1) == NULL
                 || guest_mem_find_uva(mem, uva - 1) != &mem->regions[i]);

        tu_log("  contiguous ranges: whole region yes, one byte more no");
        TU_CHECK_NONNULL(guest_mem_uva_to_hva_contig(mem, uva, r->size));
        TU_CHECK(guest_mem_uva_to_hva_contig(mem, uva, r->size + 1) == NULL);
        TU_CHECK(guest_mem_uva_to_hva_contig(mem, uva + 1, r->size) == NULL);
        TU_CHECK_NONNULL(guest_mem_uva_to_hva_contig(mem, uva + r->size - 8,
                                                     8));
    }

    tu_log("addresses far from any region");
    {
        uint64_t len = 8;
        TU_CHECK(guest_mem_uva_to_hva(mem, 0, &len) == NULL);
        TU_CHECK_EQ(len, 0);
        len = 8;
        TU_CHECK(guest_mem_uva_to_hva(mem, UINT64_MAX, &len) == NULL);
        TU_CHECK_EQ(len, 0);
        TU_CHECK(guest_mem_uva_to_hva_contig(mem, UINT64_MAX - 3, 4) == NULL);
    }

    guest_mem_destroy(mem);
    tfe_mem_destroy(tm);
}

/* Checks that guest_mem_add() refuses a region and leaves 'mem' as it
 * was, with no new fd or mapping. */
static void
check_add_fails(struct guest_mem *mem, const char *what, uint64_t gpa,
                uint64_t size, uint64_t uva, uint64_t offset, int fd)
{
    unsigned int n = mem->n_regions;
    uint64_t total = guest_mem_total_size(mem);
    int fds = tu_count_fds();
    int maps = tu_count_maps(TFE_MEM_NAME);
    const char *reason = NULL;
    int error;

    tu_log("  rejected: %s", what);
    error = guest_mem_add(mem, gpa, size, uva, offset, fd, &reason);
    if (!error) {
        TU_FAIL("guest_mem_add accepted %s", what);
    }
    TU_CHECK_CMP(error, >, 0);
    TU_CHECK_NONNULL(reason);
    tu_log("    (%s: %s)", tu_strerror(error), reason);
    TU_CHECK_EQ(mem->n_regions, n);
    TU_CHECK_EQ(guest_mem_total_size(mem), total);
    TU_CHECK_EQ(tu_count_fds(), fds);
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), maps);
}

static void
test_reject(void)
{
    struct tfe_mem *tm = make_tfe_mem();
    struct guest_mem *mem = guest_mem_create();
    const struct tfe_region *r0 = &tm->regions[0];
    const struct tfe_region *r1 = &tm->regions[1];
    uint64_t uva0 = tfe_va_to_uva(r0->va);
    uint64_t uva1 = tfe_va_to_uva(r1->va);
    int pipefds[2];

    add_region(mem, tm, 0);

    tu_log("bad region descriptions");
    check_add_fails(mem, "zero size", R1_GPA, 0, uva1, R1_OFFSET, r1->fd);
    check_add_fails(mem, "gpa + size wraps", UINT64_MAX - 4095, 8192, uva1,
                    R1_OFFSET, r1->fd);
    check_add_fails(mem, "uva + size wraps", R1_GPA, 8192, UINT64_MAX - 4095,
                    R1_OFFSET, r1->fd);
    check_add_fails(mem, "mmap_offset + size wraps", R1_GPA, 8192, uva1,
                    UINT64_MAX - 4095, r1->fd);
    check_add_fails(mem, "size 2^64 - 1", R1_GPA, UINT64_MAX, uva1, 0,
                    r1->fd);
    check_add_fails(mem, "overlap in guest physical space (inside)",
                    R0_GPA + 4096, 4096, uva1, R1_OFFSET, r1->fd);
    check_add_fails(mem, "overlap in guest physical space (straddling)",
                    R0_GPA + R0_SIZE - 4096, 8192, uva1, R1_OFFSET, r1->fd);
    check_add_fails(mem, "overlap in guest physical space (covering)",
                    0, UINT64_MAX / 2, uva1, R1_OFFSET, r1->fd);
    check_add_fails(mem, "overlap in frontend virtual space", R1_GPA, 4096,
                    uva0 + R0_SIZE - 1, R1_OFFSET, r1->fd);
    check_add_fails(mem, "offset + size beyond the memfd", R1_GPA, R1_SIZE,
                    uva1, R1_OFFSET + 4096, r1->fd);
    check_add_fails(mem, "size beyond the memfd", R1_GPA, R1_SIZE + R1_OFFSET
                    + 1, uva1, 0, r1->fd);

    TU_SYS(pipe(pipefds));
    check_add_fails(mem, "a pipe instead of a memfd", R1_GPA, 4096, uva1, 0,
                    pipefds[0]);
    close(pipefds[0]);
    close(pipefds[1]);
    check_add_fails(mem, "fd -1", R1_GPA, 4096, uva1, 0, -1);

    tu_log("the table still works");
    TU_CHECK_EQ(mem->n_regions, 1);
    TU_CHECK_NONNULL(guest_mem_find_gpa(mem, R0_GPA));

    tu_log("adjacent regions (touching, not overlapping) are accepted");
    {
        const char *reason;
        TU_CHECK_OK(guest_mem_add(mem, R0_GPA + R0_SIZE, 4096,
                                  uva0 + R0_SIZE, R1_OFFSET, r1->fd,
                                  &reason));
        TU_CHECK_EQ(mem->n_regions, 2);
    }

    guest_mem_destroy(mem);
    tfe_mem_destroy(tm);
}

/* VHOST_MAX_MEM_REGIONS regions fit; one more does not. */
static void
test_max_regions(void)
{
    struct tfe_mem *tm = tfe_mem_create();
    int fds, maps;
    struct guest_mem *mem;
    const struct tfe_region *r;
    const uint64_t page = 4096;

    /* One memfd of 33 pages; each region is one page of it. */
    TU_CHECK_EQ(tfe_mem_add(tm, 0, (VHOST_MAX_MEM_REGIONS + 1) * page, 0),
                0);
    r = &tm->regions[0];
    fds = tu_count_fds();
    maps = tu_count_maps(TFE_MEM_NAME);

    mem = guest_mem_create();
    tu_log("adding %d one-page regions, with gaps", VHOST_MAX_MEM_REGIONS);
    for (unsigned int i = 0; i < VHOST_MAX_MEM_REGIONS; i++) {
        const char *reason;
        TU_CHECK_OK(guest_mem_add(mem, 2 * i * page, page,
                                  tfe_va_to_uva(r->va) + i * page, i * page,
                                  r->fd, &reason));
    }
    TU_CHECK_EQ(mem->n_regions, VHOST_MAX_MEM_REGIONS);
    TU_CHECK_EQ(guest_mem_total_size(mem), VHOST_MAX_MEM_REGIONS * page);
    check_add_fails(mem, "one region too many",
                    2 * VHOST_MAX_MEM_REGIONS * page, page,
                    tfe_va_to_uva(r->va) + VHOST_MAX_MEM_REGIONS * page,
                    VHOST_MAX_MEM_REGIONS * page, r->fd);

    tu_log("every region translates to its own page");
    for (unsigned int i = 0; i < VHOST_MAX_MEM_REGIONS; i++) {
        uint64_t len = UINT64_MAX;
        uint8_t *hva = guest_mem_gpa_to_hva(mem, 2 * i * page + 10, &len);

        TU_CHECK_NONNULL(hva);
        TU_CHECK_EQ(len, page - 10);
        r->va[i * page + 10] = (uint8_t) i;
        TU_CHECK_EQ(*hva, i);
        len = 1;
        TU_CHECK(guest_mem_gpa_to_hva(mem, (2 * i + 1) * page, &len)
                 == NULL);
    }

    tu_log("destroying the table unmaps everything");
    guest_mem_destroy(mem);
    TU_CHECK_EQ(tu_count_maps(TFE_MEM_NAME), maps);
    TU_CHECK_EQ(tu_count_fds(), fds);
    tfe_mem_destroy(tm);
}

/* guest_mem_clone() shares mappings; guest_mem_remove() and
 * guest_mem_destroy() unmap a region only when no table holds it. */
static void
test_clone_remove(void)
{
    struct tfe_mem *tm = make_tfe_mem();
    int fds = tu_count_fds();
    struct guest_mem *a, *b, *c;
    uint64_t uva1 = tfe_va_to_uva(tm->regions[1].va);

    TU_CHECK_EQ(table_maps(tm), 0);

    tu_log("table A maps three regions, and the fds may be closed after");
    a = make_guest_mem(tm);
    TU_CHECK_EQ(table_maps(tm), 3);
    TU_CHECK_EQ(tu_count_fds(), fds);

    tu_log("clone B shares A's mappings");
    b = guest_mem_clone(a);
    TU_CHECK_NONNULL(b);
    TU_CHECK_EQ(b->n_regions, 3);
    TU_CHECK_EQ(table_maps(tm), 3);
    TU_CHECK(b->regions[1].hva == a->regions[1].hva);

    tu_log("removing a region that does not match exactly fails");
    TU_CHECK_EQ(guest_mem_remove(b, R1_GPA, R1_SIZE - 4096, uva1), ENOENT);
    TU_CHECK_EQ(guest_mem_remove(b, R1_GPA + 4096, R1_SIZE, uva1), ENOENT);
    TU_CHECK_EQ(guest_mem_remove(b, R1_GPA, R1_SIZE, uva1 + 4096), ENOENT);
    TU_CHECK_EQ(b->n_regions, 3);

    tu_log("removing region 1 from B keeps it mapped: A holds it");
    TU_CHECK_OK(guest_mem_remove(b, R1_GPA, R1_SIZE, uva1));
    TU_CHECK_EQ(b->n_regions, 2);
    TU_CHECK_EQ(guest_mem_total_size(b), R0_SIZE + R2_SIZE);
    TU_CHECK_EQ(table_maps(tm), 3);
    TU_CHECK(guest_mem_find_gpa(b, R1_GPA) == NULL);
    TU_CHECK_NONNULL(guest_mem_find_gpa(a, R1_GPA));

    tu_log("destroying A unmaps region 1 only");
    guest_mem_destroy(a);
    TU_CHECK_EQ(table_maps(tm), 2);

    tu_log("B still reaches regions 0 and 2");
    tm->regions[0].va[123] = 0x11;
    tm->regions[2].va[R2_SIZE - 1] = 0x22;
    {
        uint64_t len = 1;
        uint8_t *p = guest_mem_gpa_to_hva(b, R0_GPA + 123, &len);
        TU_CHECK_NONNULL(p);
        TU_CHECK_EQ(*p, 0x11);
        len = 1;
        p = guest_mem_gpa_to_hva(b, R2_GPA + R2_SIZE - 1, &len);
        TU_CHECK_NONNULL(p);
        TU_CHECK_EQ(*p, 0x22);
    }

    tu_log("clone C of B, add region 1 back to C, destroy B");
    c = guest_mem_clone(b);
    TU_CHECK_NONNULL(c);
    add_region(c, tm, 1);
    TU_CHECK_EQ(table_maps(tm), 3);
    guest_mem_destroy(b);
    TU_CHECK_EQ(table_maps(tm), 3);

    tu_log("removing every region from C unmaps each");
    TU_CHECK_OK(guest_mem_remove(c, R0_GPA, R0_SIZE,
                                 tfe_va_to_uva(tm->regions[0].va)));
    TU_CHECK_EQ(table_maps(tm), 2);
    TU_CHECK_OK(guest_mem_remove(c, R2_GPA, R2_SIZE,
                                 tfe_va_to_uva(tm->regions[2].va)));
    TU_CHECK_EQ(table_maps(tm), 1);
    TU_CHECK_OK(guest_mem_remove(c, R1_GPA, R1_SIZE, uva1));
    TU_CHECK_EQ(table_maps(tm), 0);
    TU_CHECK_EQ(c->n_regions, 0);
    guest_mem_destroy(c);

    tu_log("cloning NULL gives an empty table");
    c = guest_mem_clone(NULL);
    TU_CHECK_NONNULL(c);
    TU_CHECK_EQ(c->n_regions, 0);
    guest_mem_destroy(c);
    guest_mem_destroy(NULL);

    TU_CHECK_EQ(table_maps(tm), 0);
    TU_CHECK_EQ(tu_count_fds(), fds);
    tfe_mem_destroy(tm);
}

const struct tu_test tu_guest_mem_tests[] = {
    { "guest-mem-gpa", test_gpa,
      "translation by guest physical address, gaps, last byte" },
    { "guest-mem-uva", test_uva,
      "translation by frontend virtual address, contiguous ranges" },
    { "guest-mem-reject", test_reject,
      "bad region descriptions are refused without side effects" },
    { "guest-mem-max-regions", test_max_regions,
      "VHOST_MAX_MEM_REGIONS regions fit, one more does not" },
    { "guest-mem-clone-remove", test_clone_remove,
      "clones share mappings; removal unmaps only unshared regions" },
};
const size_t tu_n_guest_mem_tests = ARRAY_SIZE(tu_guest_mem_tests);
