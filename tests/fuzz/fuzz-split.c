/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the split ring (VIRTIO 1.2 §2.7).  Dequeue and enqueue
 * bursts over fuzzed descriptor tables, avail rings, buffer contents and
 * used indices, every combination of the features that change the data
 * path (mergeable buffers, indirect descriptors, event index, header
 * layout, dirty logging, in-order), over guest memory with gaps, regions
 * adjacent in guest memory and one at the top of the address space.  See
 * fuzz-ring.h for the input layout and the checks.
 */

#include <config.h>

#include <string.h>
#include "fuzz-input.h"
#include "fuzz-ring.h"
#include "virtio-ring.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
    struct fuzz_ring fr;

    if (fuzz_ring_setup(&fr, false, &in)) {
        fuzz_ring_run(&fr, &in);
    }
    fuzz_ring_destroy(&fr);
    return 0;
}

/* Seeds. */

struct fuzz_split_seed {
    uint8_t bits, layout, size_sel;
    uint16_t base;
    uint8_t log_size;
    struct vring_desc desc[16];
    uint16_t avail_idx;
    uint16_t avail_ring[16];
    uint8_t ops[16];
    size_t fill;                /* Bytes of buffer memory to write. */
    uint64_t indirect_gpa;      /* Where 'indirect' goes, or 0. */
    struct vring_desc indirect[4];
    unsigned int indirect_n;    /* More than 4: 'indirect[0]' this many
                                 * times, chained. */
    const struct fuzz_ring_iommu_seed *iommu;   /* With FUZZ_RING_F_IOMMU. */
};

static void
fuzz_split_emit__(fuzz_emit_fn *emit, const struct fuzz_split_seed *s,
                  const char *name)
{
    static struct fuzz_input_buf b;
    unsigned int size = 1u << (s->size_sel % 9);

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
        fuzz_input_put(&b, i < 16 ? &s->desc[i] : &(struct vring_desc) { 0 },
                       sizeof s->desc[0]);
    }
    fuzz_input_put_u16(&b, 0);
    fuzz_input_put_u16(&b, s->avail_idx);
    for (unsigned int i = 0; i < size; i++) {
        fuzz_input_put_u16(&b, i < 16 ? s->avail_ring[i] : 0);
    }
    fuzz_input_put_u16(&b, 0);          /* used_event */
    fuzz_input_put_u16(&b, 0);          /* used flags */
    fuzz_input_put_u16(&b, 0);          /* used idx */
    fuzz_input_put(&b, s->ops, sizeof s->ops);

    size_t start = b.n;
    for (size_t i = 0; i < s->fill; i++) {
        fuzz_input_put_u8(&b, i < 12 ? 0 : 0xa0 + i % 16);
    }
    if (s->indirect_gpa) {
        size_t at = start + (s->indirect_gpa - FUZZ_RING_BUF_GPA);
        unsigned int n = MAX(s->indirect_n, ARRAY_SIZE(s->indirect));
        if (at + n * sizeof s->indirect[0] > b.n) {
            fuzz_input_put_zeros(&b, at + n * sizeof s->indirect[0] - b.n);
        }
        if (n == ARRAY_SIZE(s->indirect)) {
            memcpy(b.data + at, s->indirect, sizeof s->indirect);
        }
        for (unsigned int i = 0; n > ARRAY_SIZE(s->indirect) && i < n; i++) {
            struct vring_desc d = s->indirect[0];

            d.flags |= i + 1 < n ? VRING_DESC_F_NEXT : 0;
            d.next = i + 1;
            memcpy(b.data + at + i * sizeof d, &d, sizeof d);
        }
    }
    emit(b.data, b.n, name);
}

#define D(ADDR, LEN, FLAGS, NEXT) { (ADDR), (LEN), (FLAGS), (NEXT) }

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

    /* TX: one packet, one descriptor. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = mrg_v1, .size_sel = 3, .log_size = 8,
        .desc = { D(0x3000, 72, 0, 0) }, .avail_idx = 1, .fill = 72,
    }, "tx-one");

    /* TX: header and packet in two descriptors, legacy header, event
     * index; more made available twice. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = FUZZ_RING_F_EVENT_IDX, .size_sel = 4,
        .desc = { D(0x3000, 10, 1, 1), D(0x300a, 60, 0, 0),
                  D(0x3000, 70, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 2 }, .fill = 70,
        .ops = { 0x0c, 0x02 | (1 << 2), 0x04, 0x00 },
    }, "tx-chain-legacy");

    /* TX: through an indirect table. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = mrg_v1 | FUZZ_RING_F_INDIRECT | FUZZ_RING_F_EVENT_IDX,
        .size_sel = 3,
        .desc = { D(0x3400, 32, VRING_DESC_F_INDIRECT, 0) },
        .avail_idx = 1, .fill = 72, .indirect_gpa = 0x3400,
        .indirect = { D(0x3000, 12, 1, 1), D(0x300c, 60, 0, 0) },
    }, "tx-indirect");

    /* TX: a buffer across adjacent regions (layout 1), and one into the
     * gap. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = mrg_v1, .layout = 1, .size_sel = 2,
        .desc = { D(0x1ffc0, 200, 0, 0), D(0x10000, 100, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 },
    }, "tx-straddle-gap");

    /* TX: across eight page-sized regions (layout 2). */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = mrg_v1 | FUZZ_RING_F_INDIRECT, .layout = 2, .size_sel = 2,
        .desc = { D(0x7f00, 0x5000, 0, 0) }, .avail_idx = 1,
    }, "tx-many-regions");

    /* TX: at the top of the address space, and wrapping past it (layout
     * 3), with the dirty log on. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = mrg_v1 | FUZZ_RING_F_LOG, .layout = 3, .size_sel = 2,
        .log_size = 4,
        .desc = { D(UINT64_MAX - 0x100, 0x80, 0, 0),
                  D(UINT64_MAX - 0x10, 0x20, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 },
        .ops = { 0x04, 0x01 | (3 << 2), 0x03, 0x04 },
    }, "tx-top-log");

    /* RX: four writable buffers, mergeable, packets of several sizes. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = mrg_v1, .size_sel = 3, .log_size = 16,
        .desc = { D(0x3000, 0x800, 2, 0), D(0x3800, 0x800, 2, 0),
                  D(0x4000, 0x800, 2, 0), D(0x4800, 0x800, 2, 0) },
        .avail_idx = 4, .avail_ring = { 0, 1, 2, 3 },
        .ops = { 0x01 | (5 << 2), 0x01 | (6 << 2), 0x02 | (4 << 2),
                 0x01 | (1 << 2), 0x03, 0x01 | (2 << 2) },
    }, "rx-mrg");

    /* RX: no mergeable buffers, a chain of two writable descriptors. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = FUZZ_RING_F_V1 | FUZZ_RING_F_EVENT_IDX, .size_sel = 3,
        .desc = { D(0x3000, 12, 3, 1), D(0x300c, 0x1000, 2, 0) },
        .avail_idx = 1,
        .ops = { 0x01 | (4 << 2), 0x01 },
    }, "rx-chain");

    /* With an IOMMU.  TX: one packet through the linear map. */
    const uint8_t iommu = mrg_v1 | FUZZ_RING_F_IOMMU;
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .size_sel = 3, .log_size = 8,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR,
        },
        .desc = { D(IO(0x3000), 72, 0, 0) }, .avail_idx = 1, .fill = 72,
        .ops = { 0x00, 0x03 },
    }, "iommu-tx-one");

    /* TX: a miss (no entry at all), the frontend's answer, the packet;
     * then the page invalidated and the guest's GPA taken for an IOVA. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu | FUZZ_RING_F_EVENT_IDX, .size_sel = 3,
        .iommu = &(struct fuzz_ring_iommu_seed) { .flags = 0 },
        .desc = { D(IO(0x3000), 72, 0, 0), D(0x3000, 72, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 }, .fill = 72,
        .ops = { 0x00, 0x00, OP_ANSWER, 0x04, 0x00, OP_INVAL_MISS,
                 OP_ANSWER, 0x00 },
    }, "iommu-tx-miss-answer");

    /* TX: an indirect table across two IOTLB entries (copied), then one
     * entry invalidated under it. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu | FUZZ_RING_F_INDIRECT, .size_sel = 3,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = 2,
            .pool = { { 0x3000, 0x410, 0, 0x3000, VHOST_ACCESS_RO },
                      { 0x3410, 0xbf0, 0, 0x3410, VHOST_ACCESS_RW } },
        },
        .desc = { D(IO(0x3400), 32, VRING_DESC_F_INDIRECT, 0),
                  D(IO(0x3400), 32, VRING_DESC_F_INDIRECT, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 }, .fill = 72,
        .indirect_gpa = 0x3400,
        .indirect = { D(IO(0x3000), 12, 1, 1), D(IO(0x300c), 60, 0, 0) },
        .ops = { 0x00, OP_INVAL_POOL(1), 0x00, OP_ANSWER, 0x00 },
    }, "iommu-tx-indirect-cross");

    /* TX: an entry to nowhere (outside guest memory), one without read
     * permission, and an update refused (frontend range wraps). */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .size_sel = 3,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = 3,
            .pool = { { 0x3000, 0x1000, 14, 0x1234000, VHOST_ACCESS_RW },
                      { 0x4000, 0x1000, 0, 0x4000, VHOST_ACCESS_WO },
                      { 0x5000, 0x1000, 15, 0x10, VHOST_ACCESS_RO },
                      { 0x6000, 0, 0, 0x6000, VHOST_ACCESS_RO } },
        },
        .desc = { D(IO(0x3000), 72, 0, 0), D(IO(0x4000), 72, 0, 0),
                  D(IO(0x5000), 72, 0, 0) },
        .avail_idx = 3, .avail_ring = { 0, 1, 2 }, .fill = 72,
        .ops = { 0x08, OP_UPDATE(3), 0x00 },
    }, "iommu-tx-outside-denied");

    /* RX: a writable buffer in a read-only entry (denied), then one the
     * entry left unmapped (miss), answered read-write. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .size_sel = 3, .log_size = 16,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR | 1,
            .pool = { { 0x3000, 0x1000, 0, 0x3000, VHOST_ACCESS_RO } },
        },
        .desc = { D(IO(0x3000), 0x800, 2, 0), D(IO(0x4000), 0x800, 2, 0),
                  D(IO(0x5000), 0x800, 2, 0) },
        .avail_idx = 3, .avail_ring = { 0, 1, 2 },
        .ops = { 0x01 | (5 << 2), OP_ANSWER_RW, 0x01 | (5 << 2), 0x03,
                 OP_ANSWER, 0x01 | (6 << 2) },
    }, "iommu-rx-denied-miss");

    /* RX, mergeable: the used ring's entry invalidated (the queue stops),
     * its miss answered (it runs again). */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .size_sel = 3, .log_size = 16,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR,
        },
        .desc = { D(IO(0x3000), 0x800, 2, 0), D(IO(0x3800), 0x800, 2, 0),
                  D(IO(0x4000), 0x800, 2, 0), D(IO(0x4800), 0x800, 2, 0) },
        .avail_idx = 4, .avail_ring = { 0, 1, 2, 3 },
        .ops = { 0x01 | (5 << 2), OP_INVAL_RING(2), 0x01 | (6 << 2),
                 OP_ANSWER, 0x01 | (6 << 2), 0x02 | (4 << 2),
                 0x01 | (1 << 2) },
    }, "iommu-rx-mrg-ring-inval");

    /* TX across adjacent regions (two linear entries), and into the gap
     * (a miss whose answer maps nowhere). */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .layout = 1, .size_sel = 2,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR,
        },
        .desc = { D(IO(0x1ffc0), 200, 0, 0), D(IO(0x10000), 100, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 },
        .ops = { 0x04, OP_ANSWER, 0x04 },
    }, "iommu-tx-straddle-gap");

    /* The descriptor ring in two entries, a full IOTLB (updates evict),
     * then everything invalidated and the rings' misses answered one by
     * one, with the dirty log on. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu | FUZZ_RING_F_LOG | FUZZ_RING_F_IN_ORDER, .size_sel = 4,
        .log_size = 8,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR | FUZZ_RING_IOMMU_SPLIT_DESC
                     | 0x40,
            .pool = { { 0x8000, 0x1000, 0, 0x8000, VHOST_ACCESS_RW },
                      { -0x1000, 0x1000, 0, 0, VHOST_ACCESS_RO } },
        },
        .desc = { D(IO(0x3000), 72, 0, 0), D(IO(0x8000), 72, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 }, .fill = 72,
        .ops = { 0x00, OP_UPDATE(0), OP_UPDATE(1), OP_INVAL_ALL, 0x00,
                 OP_ANSWER, OP_ANSWER, OP_ANSWER, OP_ANSWER, 0x02 | (2 << 2),
                 0x04 },
    }, "iommu-evict-inval-all");

    /* At the top of the IOVA space (and wrapping past it). */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .layout = 3, .size_sel = 2,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = 1,
            .pool = { { 0x1000, 0x1000, 1, 0, VHOST_ACCESS_RO | 4 } },
        },
        .desc = { D(UINT64_MAX - 0x100, 0x80, 0, 0),
                  D(UINT64_MAX - 0x10, 0x20, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 },
        .ops = { 0x04 },
    }, "iommu-tx-top");

    /* TX: an indirect table of 256 buffers, each across two IOTLB
     * entries: more segments than a packet may have. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu | FUZZ_RING_F_INDIRECT, .size_sel = 8,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = 2,
            .pool = { { 0x3000, 0x1000, 0, 0x3000, VHOST_ACCESS_RO },
                      { 0x4000, 0x2000, 0, 0x4000, VHOST_ACCESS_RO } },
        },
        .desc = { D(IO(0x4000), 4096, VRING_DESC_F_INDIRECT, 0) },
        .avail_idx = 1, .indirect_gpa = 0x4000, .indirect_n = 256,
        .indirect = { D(IO(0x3ff8), 16, 0, 0) },
        .ops = { 0x00 },
    }, "iommu-tx-too-many-segs");

    /* The rings mapped again after an invalidation: the descriptor
     * ring's second entry replaced by one that does not continue the
     * first, then the used ring's by a read-only one; each time the
     * queue stops until the frontend's answer maps the part again. */
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = iommu, .size_sel = 3,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR | FUZZ_RING_IOMMU_SPLIT_DESC,
            .pool = { { 0x2000, 0x1000, 0, 0x2000, VHOST_ACCESS_RO },
                      { 0x40, 0x40, 0, 0x5000, VHOST_ACCESS_RO } },
        },
        .desc = { D(IO(0x3000), 72, 0, 0), D(IO(0x3000), 72, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 }, .fill = 72,
        .ops = { 0x00, OP_UPDATE(1), OP_INVAL_POOL(7), 0x00,
                 OP_INVAL_RING(1), OP_ANSWER, OP_UPDATE(0), OP_INVAL_POOL(7),
                 OP_INVAL_RING(3), OP_ANSWER, 0x00 },
    }, "iommu-ring-discontig-denied");

    /* TX without host offloads (the copies that skip the header), with
     * and without an IOMMU, in order with the event index. */
    const uint8_t plain = mrg_v1 | FUZZ_RING_F_NO_HOST_OL
                          | FUZZ_RING_F_EVENT_IDX | FUZZ_RING_F_IN_ORDER;
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = plain, .size_sel = 3,
        .desc = { D(0x3000, 72, 0, 0), D(0x3000, 10, 1, 2),
                  D(0x300a, 62, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 }, .fill = 72,
        .ops = { 0x04 },
    }, "tx-no-host-offloads");
    fuzz_split_emit__(emit, &(struct fuzz_split_seed) {
        .bits = plain | FUZZ_RING_F_IOMMU, .size_sel = 3,
        .iommu = &(struct fuzz_ring_iommu_seed) {
            .flags = FUZZ_RING_IOMMU_LINEAR,
        },
        .desc = { D(IO(0x3000), 72, 0, 0), D(IO(0x3000), 10, 1, 2),
                  D(IO(0x300a), 62, 0, 0) },
        .avail_idx = 2, .avail_ring = { 0, 1 }, .fill = 72,
        .ops = { 0x04 },
    }, "iommu-tx-no-host-offloads");
}
