/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The IOTLB table (lib/vhost-iotlb.h) on its own: translations and their
 * permissions, overlapping updates and invalidations, the messages a
 * frontend must not send, the bound on its size, and a randomised check
 * against a model that keeps one owner per IOVA unit.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include "test-util.h"
#include "vhost-iotlb.h"

static int
it_update(struct vhost_iotlb *t, uint64_t iova, uint64_t size,
          uint64_t uaddr, uint8_t perm)
{
    struct vhost_iotlb_msg msg = {
        .iova = iova, .size = size, .uaddr = uaddr, .perm = perm,
        .type = VHOST_IOTLB_UPDATE,
    };
    return vhost_iotlb_apply(t, &msg);
}

static int
it_invalidate(struct vhost_iotlb *t, uint64_t iova, uint64_t size)
{
    struct vhost_iotlb_msg msg = {
        .iova = iova, .size = size, .type = VHOST_IOTLB_INVALIDATE,
    };
    return vhost_iotlb_apply(t, &msg);
}

/* Checks that 'iova' translates, for 'perm', to 'uva' with 'len' bytes
 * contiguous. */
static void
it_expect_hit(const struct vhost_iotlb *t, uint64_t iova, uint8_t perm,
              uint64_t uva, uint64_t len)
{
    uint64_t got_uva = 0, got_len = 0;

    TU_CHECK_EQ(vhost_iotlb_translate(t, iova, perm, &got_uva, &got_len),
                VHOST_IOTLB_HIT);
    TU_CHECK_EQ(got_uva, uva);
    TU_CHECK_EQ(got_len, len);
}

static void
it_expect(const struct vhost_iotlb *t, uint64_t iova, uint8_t perm,
          enum vhost_iotlb_result expected)
{
    uint64_t uva = 0x5a5a, len = 0x5a5a;

    TU_CHECK_EQ(vhost_iotlb_translate(t, iova, perm, &uva, &len), expected);
    if (expected != VHOST_IOTLB_HIT) {
        TU_CHECK_EQ(uva, 0x5a5a);
        TU_CHECK_EQ(len, 0x5a5a);
    }
}

/* The table's own invariant: sorted by IOVA, disjoint, no range wraps. */
static void
it_check_sorted(const struct vhost_iotlb *t)
{
    TU_CHECK_CMP(t->n, <=, t->max);
    for (unsigned int i = 0; i < t->n; i++) {
        TU_CHECK_CMP(t->entries[i].iova, <=, t->entries[i].last);
        if (i) {
            TU_CHECK_CMP(t->entries[i - 1].last, <, t->entries[i].iova);
        }
    }
}

static void
test_iotlb_translate(void)
{
    struct vhost_iotlb t;

    vhost_iotlb_init(&t, VHOST_IOTLB_MAX_ENTRIES);
    it_expect(&t, 0, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);

    TU_CHECK_OK(it_update(&t, 0x10000, 0x1000, 0x7f0000, VHOST_ACCESS_RO));
    TU_CHECK_OK(it_update(&t, 0x20000, 0x2000, 0x900000, VHOST_ACCESS_RW));
    TU_CHECK_OK(it_update(&t, 0x30000, 0x1000, 0xa00000, VHOST_ACCESS_WO));
    TU_CHECK_EQ(t.n, 3);
    it_check_sorted(&t);

    /* First byte, a middle byte, the last byte; the bytes either side. */
    it_expect_hit(&t, 0x10000, VHOST_ACCESS_RO, 0x7f0000, 0x1000);
    it_expect_hit(&t, 0x10800, VHOST_ACCESS_RO, 0x7f0800, 0x800);
    it_expect_hit(&t, 0x10fff, VHOST_ACCESS_RO, 0x7f0fff, 1);
    it_expect(&t, 0xffff, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);
    it_expect(&t, 0x11000, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);
    it_expect(&t, UINT64_MAX, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);

    /* Permissions: a device-writable buffer needs write permission, a
     * driver-written one read permission. */
    it_expect(&t, 0x10000, VHOST_ACCESS_WO, VHOST_IOTLB_DENIED);
    it_expect(&t, 0x10000, VHOST_ACCESS_RW, VHOST_IOTLB_DENIED);
    it_expect(&t, 0x30000, VHOST_ACCESS_RO, VHOST_IOTLB_DENIED);
    it_expect_hit(&t, 0x30010, VHOST_ACCESS_WO, 0xa00010, 0xff0);
    it_expect_hit(&t, 0x21000, VHOST_ACCESS_RW, 0x901000, 0x1000);
    it_expect_hit(&t, 0x21000, VHOST_ACCESS_RO, 0x901000, 0x1000);

    /* The whole IOVA space but its last byte is one entry. */
    vhost_iotlb_flush(&t);
    TU_CHECK_EQ(t.n, 0);
    TU_CHECK_OK(it_update(&t, 0, UINT64_MAX, 0, VHOST_ACCESS_RW));
    it_expect_hit(&t, UINT64_MAX - 1, VHOST_ACCESS_RW, UINT64_MAX - 1, 1);
    it_expect_hit(&t, 0, VHOST_ACCESS_RO, 0, UINT64_MAX);
    it_expect(&t, UINT64_MAX, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);
    TU_CHECK_EQ(t.n_updates, 4);
    TU_CHECK_EQ(t.n_rejected, 0);
    vhost_iotlb_destroy(&t);
}

static void
test_iotlb_overlap(void)
{
    struct vhost_iotlb t;

    vhost_iotlb_init(&t, VHOST_IOTLB_MAX_ENTRIES);
    TU_CHECK_OK(it_update(&t, 0x1000, 0x1000, 0x100000, VHOST_ACCESS_RW));
    TU_CHECK_OK(it_update(&t, 0x2000, 0x1000, 0x200000, VHOST_ACCESS_RW));
    TU_CHECK_OK(it_update(&t, 0x3000, 0x1000, 0x300000, VHOST_ACCESS_RW));

    /* An update that overlaps two entries replaces both; the one it only
     * touches at a boundary stays. */
    TU_CHECK_OK(it_update(&t, 0x1800, 0x1000, 0x800000, VHOST_ACCESS_RO));
    TU_CHECK_EQ(t.n, 2);
    it_check_sorted(&t);
    it_expect(&t, 0x1000, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);
    it_expect_hit(&t, 0x1800, VHOST_ACCESS_RO, 0x800000, 0x1000);
    it_expect(&t, 0x2800, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);
    it_expect_hit(&t, 0x3000, VHOST_ACCESS_RW, 0x300000, 0x1000);

    /* An invalidation of one byte drops the whole entry holding it, be
     * it the entry's last byte or its first. */
    TU_CHECK_OK(it_invalidate(&t, 0x3fff, 1));
    TU_CHECK_EQ(t.n, 1);
    TU_CHECK_OK(it_update(&t, 0x3000, 0x1000, 0x300000, VHOST_ACCESS_RW));
    TU_CHECK_OK(it_invalidate(&t, 0x3000, 1));
    TU_CHECK_EQ(t.n, 1);
    it_expect(&t, 0x3000, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);

    /* Zero bytes invalidate nothing; a range that wraps runs to the end
     * of the IOVA space. */
    TU_CHECK_OK(it_invalidate(&t, 0x1800, 0));
    TU_CHECK_EQ(t.n, 1);
    TU_CHECK_OK(it_update(&t, UINT64_MAX - 0x1fff, 0x1000, 0,
                          VHOST_ACCESS_RW));
    TU_CHECK_EQ(t.n, 2);
    TU_CHECK_OK(it_invalidate(&t, 0x2800, UINT64_MAX));
    TU_CHECK_EQ(t.n, 1);
    it_expect_hit(&t, 0x1800, VHOST_ACCESS_RO, 0x800000, 0x1000);
    TU_CHECK_OK(it_invalidate(&t, 0, UINT64_MAX));
    TU_CHECK_EQ(t.n, 0);
    TU_CHECK_EQ(t.n_invalidations, 5);
    vhost_iotlb_destroy(&t);
}

static void
test_iotlb_reject(void)
{
    static const struct vhost_iotlb_msg bad[] = {
        /* Zero size. */
        { .iova = 0x1000, .size = 0, .uaddr = 0x1000,
          .perm = VHOST_ACCESS_RW, .type = VHOST_IOTLB_UPDATE },
        /* IOVA + size wraps: a huge size. */
        { .iova = 0x1000, .size = UINT64_MAX, .uaddr = 0,
          .perm = VHOST_ACCESS_RW, .type = VHOST_IOTLB_UPDATE },
        { .iova = UINT64_MAX, .size = 2, .uaddr = 0,
          .perm = VHOST_ACCESS_RW, .type = VHOST_IOTLB_UPDATE },
        /* Frontend address + size wraps. */
        { .iova = 0, .size = 0x2000, .uaddr = UINT64_MAX - 0xfff,
          .perm = VHOST_ACCESS_RW, .type = VHOST_IOTLB_UPDATE },
        /* No permission, or bits beyond read and write. */
        { .iova = 0, .size = 0x1000, .uaddr = 0,
          .perm = 0, .type = VHOST_IOTLB_UPDATE },
        { .iova = 0, .size = 0x1000, .uaddr = 0,
          .perm = 0x4, .type = VHOST_IOTLB_UPDATE },
        { .iova = 0, .size = 0x1000, .uaddr = 0,
          .perm = 0xff, .type = VHOST_IOTLB_UPDATE },
        /* Types the backend sends, not the frontend; unknown types. */
        { .iova = 0x8000, .size = 0x1000, .perm = VHOST_ACCESS_RW,
          .type = VHOST_IOTLB_MISS },
        { .iova = 0x8000, .size = 0x1000, .perm = VHOST_ACCESS_RW,
          .type = VHOST_IOTLB_ACCESS_FAIL },
        { .iova = 0x8000, .size = 0x1000, .type = 0 },
        { .iova = 0x8000, .size = 0x1000, .type = 5 },
        { .iova = 0x8000, .size = 0x1000, .type = 0xff },
    };
    struct vhost_iotlb t;

    vhost_iotlb_init(&t, VHOST_IOTLB_MAX_ENTRIES);
    TU_CHECK_OK(it_update(&t, 0x8000, 0x1000, 0x100000, VHOST_ACCESS_RO));
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        tu_log("message %zu: iova %#"PRIx64" size %#"PRIx64" perm %#x "
               "type %u", i, bad[i].iova, bad[i].size, bad[i].perm,
               bad[i].type);
        TU_CHECK_EQ(vhost_iotlb_apply(&t, &bad[i]), EINVAL);
        /* Unchanged. */
        TU_CHECK_EQ(t.n, 1);
        it_expect_hit(&t, 0x8000, VHOST_ACCESS_RO, 0x100000, 0x1000);
    }
    TU_CHECK_EQ(t.n_rejected, ARRAY_SIZE(bad));
    TU_CHECK_EQ(t.n_updates, 1);
    vhost_iotlb_destroy(&t);
}

static void
test_iotlb_evict(void)
{
    struct vhost_iotlb t;

    vhost_iotlb_init(&t, 4);
    for (unsigned int i = 0; i < 6; i++) {
        TU_CHECK_OK(it_update(&t, 0x10000 * (6 - i), 0x1000, 0x1000 * i,
                              VHOST_ACCESS_RW));
        it_check_sorted(&t);
        /* The newest entry is never the one evicted. */
        it_expect_hit(&t, 0x10000 * (6 - i), VHOST_ACCESS_RW, 0x1000 * i,
                      0x1000);
    }
    TU_CHECK_EQ(t.n, 4);
    TU_CHECK_EQ(t.n_evicted, 2);

    unsigned int found = 0;
    for (unsigned int i = 0; i < 6; i++) {
        uint64_t uva, len;

        found += vhost_iotlb_translate(&t, 0x10000 * (6 - i),
                                       VHOST_ACCESS_RW, &uva, &len)
                 == VHOST_IOTLB_HIT;
    }
    TU_CHECK_EQ(found, 4);

    /* A bound past the maximum is clamped to it, and 0 to 1. */
    vhost_iotlb_destroy(&t);
    vhost_iotlb_init(&t, VHOST_IOTLB_MAX_ENTRIES * 2);
    TU_CHECK_EQ(t.max, VHOST_IOTLB_MAX_ENTRIES);
    vhost_iotlb_destroy(&t);
    vhost_iotlb_init(&t, 0);
    TU_CHECK_EQ(t.max, 1);
    TU_CHECK_OK(it_update(&t, 0, 1, 0, VHOST_ACCESS_RO));
    TU_CHECK_OK(it_update(&t, 1, 1, 0, VHOST_ACCESS_RO));
    TU_CHECK_EQ(t.n, 1);
    it_expect_hit(&t, 1, VHOST_ACCESS_RO, 0, 1);
    vhost_iotlb_destroy(&t);
}

/* The model: an IOVA space of IT_UNITS units, each owned by at most one
 * entry (its id).  An update drops every entry it overlaps, whole; so
 * does an invalidation. */
#define IT_UNITS 64
#define IT_UNIT 0x1000u

struct it_model {
    int owner[IT_UNITS];            /* Entry id, or -1. */
    uint64_t uva[IT_UNITS * 4];     /* Per id: its first unit's address. */
    unsigned int first[IT_UNITS * 4];
    uint8_t perm[IT_UNITS * 4];
};

static void
it_model_drop(struct it_model *m, unsigned int lo, unsigned int hi)
{
    for (unsigned int u = lo; u <= hi; u++) {
        int id = m->owner[u];

        if (id >= 0) {
            for (unsigned int v = 0; v < IT_UNITS; v++) {
                if (m->owner[v] == id) {
                    m->owner[v] = -1;
                }
            }
        }
    }
}

static void
test_iotlb_random(void)
{
    static struct it_model m;
    struct vhost_iotlb t;
    uint32_t seed = 12345;

    vhost_iotlb_init(&t, VHOST_IOTLB_MAX_ENTRIES);
    memset(m.owner, -1, sizeof m.owner);
    for (unsigned int op = 0; op < 4 * IT_UNITS; op++) {
        seed = seed * 1103515245 + 12345;
        unsigned int lo = (seed >> 8) % IT_UNITS;
        unsigned int n = 1 + (seed >> 20) % 8;
        unsigned int hi = MIN(lo + n - 1, IT_UNITS - 1);

        if ((seed >> 4) % 3) {
            uint8_t perm = 1 + (seed >> 12) % 3;
            uint64_t uva = 0x1000000ull * (op + 1);

            TU_CHECK_OK(it_update(&t, (uint64_t) lo * IT_UNIT,
                                  (uint64_t) (hi - lo + 1) * IT_UNIT,
                                  uva, perm));
            it_model_drop(&m, lo, hi);
            for (unsigned int u = lo; u <= hi; u++) {
                m.owner[u] = op;
            }
            m.uva[op] = uva;
            m.first[op] = lo;
            m.perm[op] = perm;
        } else {
            TU_CHECK_OK(it_invalidate(&t, (uint64_t) lo * IT_UNIT + 5,
                                      (uint64_t) (hi - lo) * IT_UNIT + 1));
            it_model_drop(&m, lo, hi);
        }
        it_check_sorted(&t);

        /* Each unit's first byte, a middle one and its last. */
        for (unsigned int probe = 0; probe < IT_UNITS * 3; probe++) {
            static const uint64_t offsets[3] = { 0, 7, IT_UNIT - 1 };
            unsigned int u = probe / 3;
            uint64_t iova = (uint64_t) u * IT_UNIT + offsets[probe % 3];
            int id = m.owner[u];

            if (id < 0) {
                it_expect(&t, iova, VHOST_ACCESS_RO, VHOST_IOTLB_NOT_FOUND);
                continue;
            }
            unsigned int end = u;
            while (end + 1 < IT_UNITS && m.owner[end + 1] == id) {
                end++;
            }
            uint64_t uva = m.uva[id] + (iova - (uint64_t) m.first[id]
                                               * IT_UNIT);
            uint64_t len = (uint64_t) (end + 1) * IT_UNIT - iova;
            if (m.perm[id] & VHOST_ACCESS_RO) {
                it_expect_hit(&t, iova, VHOST_ACCESS_RO, uva, len);
            } else {
                it_expect(&t, iova, VHOST_ACCESS_RO, VHOST_IOTLB_DENIED);
            }
            if (m.perm[id] & VHOST_ACCESS_WO) {
                it_expect_hit(&t, iova, VHOST_ACCESS_WO, uva, len);
            } else {
                it_expect(&t, iova, VHOST_ACCESS_WO, VHOST_IOTLB_DENIED);
            }
            if (m.perm[id] == VHOST_ACCESS_RW) {
                it_expect_hit(&t, iova, VHOST_ACCESS_RW, uva, len);
            } else {
                it_expect(&t, iova, VHOST_ACCESS_RW, VHOST_IOTLB_DENIED);
            }
        }
    }
    tu_log("%u ops, %u entries left, %"PRIu64" updates, %"PRIu64
           " invalidations", 4 * IT_UNITS, t.n, t.n_updates,
           t.n_invalidations);
    vhost_iotlb_destroy(&t);
}

const struct tu_test tu_iotlb_tests[] = {
    { "iotlb-translate", test_iotlb_translate,
      "IOTLB lookups: hits, misses at the edges, permissions" },
    { "iotlb-overlap", test_iotlb_overlap,
      "IOTLB updates and invalidations that overlap entries" },
    { "iotlb-reject", test_iotlb_reject,
      "IOTLB messages refused: wraps, sizes, permissions, types" },
    { "iotlb-evict", test_iotlb_evict,
      "a full IOTLB evicts and counts, never the newest entry" },
    { "iotlb-random", test_iotlb_random,
      "random IOTLB updates and invalidations against a model" },
};
const size_t tu_n_iotlb_tests = ARRAY_SIZE(tu_iotlb_tests);
