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
        if (at + sizeof s->indirect > b.n) {
            fuzz_input_put_zeros(&b, at + sizeof s->indirect - b.n);
        }
        memcpy(b.data + at, s->indirect, sizeof s->indirect);
    }
    emit(b.data, b.n, name);
}

#define D(ADDR, LEN, FLAGS, NEXT) { (ADDR), (LEN), (FLAGS), (NEXT) }

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
}
