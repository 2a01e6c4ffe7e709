/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the packed ring (VIRTIO 1.2 §2.8).  Dequeue and enqueue
 * bursts over a fuzzed descriptor ring (flags, wrap counters, buffer ids,
 * chains that straddle the ring's end), driver event suppression area and
 * buffer contents, every combination of the features that change the data
 * path, over the same guest memory layouts as the split ring target.
 * Operation 2 makes the driver lap the ring.  See fuzz-ring.h.
 */

#include <config.h>

#include <string.h>
#include "fuzz-input.h"
#include "fuzz-ring.h"
#include "virtio-ring-packed.h"
#include "virtio-ring.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
    struct fuzz_ring fr;

    if (fuzz_ring_setup(&fr, true, &in)) {
        fuzz_ring_run(&fr, &in);
    }
    fuzz_ring_destroy(&fr);
    return 0;
}

/* Seeds. */

struct fuzz_packed_seed {
    uint8_t bits, layout, size_sel;
    uint16_t base;
    uint8_t log_size;
    struct vring_packed_desc desc[16];
    uint16_t event_off_wrap, event_flags;
    uint8_t ops[16];
    size_t fill;
    uint64_t indirect_gpa;
    struct vring_packed_desc indirect[4];
    const struct fuzz_ring_iommu_seed *iommu;   /* With FUZZ_RING_F_IOMMU. */
};

static void
fuzz_packed_emit__(fuzz_emit_fn *emit, const struct fuzz_packed_seed *s,
                   const char *name)
{
    static struct fuzz_input_buf b;
    unsigned int size = s->size_sel + 1u;

    b.n = 0;
    fuzz_input_put_u8(&b, s->bits);
    fuzz_input_put_u8(&b, s->layout);
    fuzz_input_put_u8(&b, s->size_sel);
    fuzz_input_put_u16(&b, s->base);
    fuzz_input_put_u8(&b, s->log_size);
    if (s->bits & FUZZ_RING_F_IOMMU) {
        fuzz_ring_put_iommu(&b, s->iommu);
    }
    for (unsigned int i = 0; i < size; i++) {
        fuzz_input_put(&b, i < 16 ? &s->desc[i]
                                  : &(struct vring_packed_desc) { 0 },
                       sizeof s->desc[0]);
    }
    fuzz_input_put_u16(&b, s->event_off_wrap);
    fuzz_input_put_u16(&b, s->event_flags);
    fuzz_input_put(&b, s->ops, sizeof s->ops);

    size_t start = b.n;
    for (size_t i = 0; i < s->fill; i++) {
        fuzz_input_put_u8(&b, i < 12 ? 0 : 0xa0 + i % 16);
    }
    if (s->indirect_gpa) {
        size_t at = start + (s->indirect_gpa - FUZZ_RING_BUF_GPA);
        if (at + sizeof s->indirect > b.n) {
            fuzz_input_put_zeros(&b, at + sizeof s->indirect - b.n);
        }
        memcpy(b.data + at, s->indirect, sizeof s->indirect);
    }
    emit(b.data, b.n, name);
}

/* Flags of a descriptor available in the first lap (wrap counter 1). */
#define AV VRING_PACKED_DESC_F_AVAIL
#define P(ADDR, LEN, ID, FLAGS) { (ADDR), (LEN), (ID), (FLAGS) }

/* With FUZZ_RING_F_IOMMU: the I/O virtual address the linear map gives
 * guest physical address 'GPA', and operation 3's IOTLB messages
 * (fuzz-ring.h, "IOMMU"). */
#define IO(GPA) ((GPA) + FUZZ_RING_IOVA_OFF)
#define OP_UPDATE(K) FUZZ_RING_OP_IOTLB(1, K)
#define OP_INVAL_POOL(K) FUZZ_RING_OP_IOTLB(2, K)
#define OP_INVAL_RING(K) FUZZ_RING_OP_IOTLB(2, 8 + (K))
#define OP_INVAL_MISS FUZZ_RING_OP_IOTLB(2, 12)
#define OP_INVAL_ALL FUZZ_RING_OP_IOTLB(2, 14)
#define OP_ANSWER FUZZ_RING_OP_IOTLB(3, 0)
#define OP_ANSWER_RW FUZZ_RING_OP_IOTLB(3, 1)

void
fuzz_target_seeds(fuzz_emit_fn *emit)
{
    const uint8_t mrg_v1 = FUZZ_RING_F_MRG | FUZZ_RING_F_V1;

    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = mrg_v1, .size_sel = 7, .base = 0x8000, .log_size = 8,
        .desc = { P(0x3000, 72, 0, AV) }, .fill = 72,
    }, "tx-one");

    /* Four single descriptors (the batch path), then a chain. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = mrg_v1 | FUZZ_RING_F_EVENT_IDX, .size_sel = 15,
        .base = 0x8000,
        .desc = { P(0x3000, 72, 3, AV), P(0x3000, 72, 1, AV),
                  P(0x3000, 72, 2, AV), P(0x3000, 72, 0, AV),
                  P(0x3000, 12, 9, AV | VRING_DESC_F_NEXT),
                  P(0x300c, 60, 4, AV) },
        .event_flags = VRING_PACKED_EVENT_FLAG_DESC, .event_off_wrap = 0x8002,
        .fill = 72, .ops = { 0x0c, 0x04 },
    }, "tx-batch-chain");

    /* Through an indirect table. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = mrg_v1 | FUZZ_RING_F_INDIRECT, .size_sel = 7, .base = 0x8000,
        .desc = { P(0x3400, 32, 5, AV | VRING_DESC_F_INDIRECT) },
        .fill = 72, .indirect_gpa = 0x3400,
        .indirect = { P(0x3000, 12, 0, 0), P(0x300c, 60, 0, 0) },
    }, "tx-indirect");

    /* A chain across the end of the ring, which laps (size 3, base 2). */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = FUZZ_RING_F_V1, .size_sel = 2, .base = 0x8002,
        .desc = { P(0x300c, 60, 1, AV), P(0, 0, 0, 0),
                  P(0x3000, 12, 1, AV | VRING_DESC_F_NEXT) },
        .fill = 72,
        .ops = { 0x00, 0x02 | (7 << 2), 0x04, 0x02 | (7 << 2), 0x04 },
    }, "tx-wrap");

    /* Across adjacent regions and into the gap (layout 1). */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = mrg_v1, .layout = 1, .size_sel = 3, .base = 0x8000,
        .desc = { P(0x1ffc0, 200, 0, AV), P(0x10000, 100, 1, AV) },
        .ops = { 0x04 },
    }, "tx-straddle-gap");

    /* Top of the address space, dirty log on (layout 3). */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = mrg_v1 | FUZZ_RING_F_LOG, .layout = 3, .size_sel = 3,
        .base = 0x8000, .log_size = 4,
        .desc = { P(UINT64_MAX - 0x100, 0x80, 0, AV),
                  P(UINT64_MAX - 0x10, 0x20, 1, AV) },
        .ops = { 0x04, 0x01 | (3 << 2), 0x03, 0x04 },
    }, "tx-top-log");

    /* RX: writable buffers, mergeable. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = mrg_v1, .size_sel = 7, .base = 0x8000, .log_size = 16,
        .desc = { P(0x3000, 0x800, 0, AV | 2), P(0x3800, 0x800, 1, AV | 2),
                  P(0x4000, 0x800, 2, AV | 2), P(0x4800, 0x800, 3, AV | 2) },
        .ops = { 0x01 | (5 << 2), 0x01 | (6 << 2), 0x02 | (4 << 2),
                 0x01 | (1 << 2), 0x03, 0x01 | (2 << 2) },
    }, "rx-mrg");

    /* RX: no mergeable buffers, a chain of two. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = FUZZ_RING_F_V1 | FUZZ_RING_F_EVENT_IDX, .size_sel = 7,
        .base = 0x8000,
        .desc = { P(0x3000, 12, 0, AV | 3), P(0x300c, 0x1000, 0, AV | 2) },
        .ops = { 0x01 | (4 << 2), 0x01 },
    }, "rx-chain");

    /* With an IOMMU.  TX: one packet through the linear map, then four
     * (which the batch path would take without one). */
    const uint8_t iommu = mrg_v1 | FUZZ_RING_F_IOMMU;
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = iommu, .size_sel = 7, .base = 0x8000, .log_size = 8,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR,
        },
        .desc = { P(IO(0x3000), 72, 0, AV), P(IO(0x3000), 72, 1, AV),
                  P(IO(0x3000), 72, 2, AV), P(IO(0x3000), 72, 3, AV),
                  P(IO(0x3000), 72, 4, AV) },
        .fill = 72, .ops = { 0x00, 0x0c, 0x03 },
    }, "iommu-tx-one");

    /* TX: a miss in a chain's second descriptor, answered; then the
     * guest's GPA taken for an IOVA, a miss answered to nowhere. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = iommu | FUZZ_RING_F_EVENT_IDX, .size_sel = 7, .base = 0x8000,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = 1,
            .pool = { { 0x3000, 0x10, 0, 0x3000, VHOST_ACCESS_RO } },
        },
        .desc = { P(IO(0x3000), 12, 0, AV | VRING_DESC_F_NEXT),
                  P(IO(0x300c), 60, 0, AV), P(0x3000, 72, 1, AV) },
        .event_flags = VRING_PACKED_EVENT_FLAG_DESC, .event_off_wrap = 0x8001,
        .fill = 72,
        .ops = { 0x00, 0x00, OP_ANSWER, 0x04, 0x00, OP_INVAL_MISS,
                 OP_ANSWER, 0x00 },
    }, "iommu-tx-miss-answer");

    /* TX: an indirect table across two IOTLB entries (copied), then one
     * invalidated under it. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = iommu | FUZZ_RING_F_INDIRECT, .size_sel = 7, .base = 0x8000,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = 2,
            .pool = { { 0x3000, 0x410, 0, 0x3000, VHOST_ACCESS_RO },
                      { 0x3410, 0xbf0, 0, 0x3410, VHOST_ACCESS_RW } },
        },
        .desc = { P(IO(0x3400), 32, 5, AV | VRING_DESC_F_INDIRECT),
                  P(IO(0x3400), 32, 6, AV | VRING_DESC_F_INDIRECT) },
        .fill = 72, .indirect_gpa = 0x3400,
        .indirect = { P(IO(0x3000), 12, 0, 0), P(IO(0x300c), 60, 0, 0) },
        .ops = { 0x00, OP_INVAL_POOL(1), 0x00, OP_ANSWER, 0x00 },
    }, "iommu-tx-indirect-cross");

    /* RX: a writable buffer in a read-only entry (denied), then one the
     * entry left unmapped (miss), answered read-write. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = iommu, .size_sel = 7, .base = 0x8000, .log_size = 16,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR | 1,
            .pool = { { 0x3000, 0x1000, 0, 0x3000, VHOST_ACCESS_RO } },
        },
        .desc = { P(IO(0x3000), 0x800, 0, AV | 2),
                  P(IO(0x4000), 0x800, 1, AV | 2),
                  P(IO(0x5000), 0x800, 2, AV | 2) },
        .ops = { 0x01 | (5 << 2), OP_ANSWER_RW, 0x01 | (5 << 2), 0x03,
                 OP_ANSWER, 0x01 | (6 << 2) },
    }, "iommu-rx-denied-miss");

    /* RX, mergeable: the descriptor ring (in two entries) invalidated,
     * the queue stopped until the frontend answers. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = iommu, .size_sel = 7, .base = 0x8000, .log_size = 16,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR | FUZZ_RING_IOMMU_SPLIT_DESC,
        },
        .desc = { P(IO(0x3000), 0x800, 0, AV | 2),
                  P(IO(0x3800), 0x800, 1, AV | 2),
                  P(IO(0x4000), 0x800, 2, AV | 2),
                  P(IO(0x4800), 0x800, 3, AV | 2) },
        .ops = { 0x01 | (5 << 2), OP_INVAL_RING(1), 0x01 | (6 << 2),
                 OP_ANSWER, 0x01 | (6 << 2), 0x02 | (4 << 2),
                 0x01 | (1 << 2) },
    }, "iommu-rx-mrg-ring-inval");

    /* TX across adjacent regions (two linear entries), into the gap, a
     * full IOTLB (updates evict) and everything invalidated. */
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = iommu | FUZZ_RING_F_LOG, .layout = 1, .size_sel = 3,
        .base = 0x8000, .log_size = 4,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR | 0x40,
            .pool = { { 0x8000, 0x1000, 0, 0x8000, VHOST_ACCESS_RW } },
        },
        .desc = { P(IO(0x1ffc0), 200, 0, AV), P(IO(0x10000), 100, 1, AV) },
        .ops = { 0x04, OP_ANSWER, 0x04, OP_UPDATE(0), OP_INVAL_ALL,
                 OP_ANSWER, OP_ANSWER, OP_ANSWER, 0x02 | (3 << 2), 0x04 },
    }, "iommu-tx-straddle-evict");

    /* TX without host offloads (the copies that skip the header), with
     * and without an IOMMU, in order with the event index. */
    const uint8_t plain = mrg_v1 | FUZZ_RING_F_NO_HOST_OL
                          | FUZZ_RING_F_EVENT_IDX | FUZZ_RING_F_IN_ORDER;
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = plain, .size_sel = 7, .base = 0x8000,
        .desc = { P(0x3000, 72, 0, AV), P(0x3000, 10, 1, AV | 1),
                  P(0x300a, 62, 1, AV) },
        .fill = 72, .ops = { 0x04 },
    }, "tx-no-host-offloads");
    fuzz_packed_emit__(emit, &(struct fuzz_packed_seed) {
        .bits = plain | FUZZ_RING_F_IOMMU, .size_sel = 7, .base = 0x8000,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR,
        },
        .desc = { P(IO(0x3000), 72, 0, AV), P(IO(0x3000), 10, 1, AV | 1),
                  P(IO(0x300a), 62, 1, AV) },
        .fill = 72, .ops = { 0x04 },
    }, "iommu-tx-no-host-offloads");
}
