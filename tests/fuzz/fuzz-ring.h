/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-ring: the harness the ring fuzzers share.  It sets up a virtqueue
 * of the engine's (struct virtq, lib/virtq.h) directly over fuzz-mem
 * guest memory, with no socket and no port, and runs bursts through the
 * burst functions that virtq_configure() picks for the negotiated
 * features, checking the data path's contract after each one.
 *
 * Usage
 * =====
 *
 *     struct fuzz_ring fr;
 *     if (fuzz_ring_setup(&fr, packed, &in)) {
 *         fuzz_ring_run(&fr, &in);
 *     }
 *     fuzz_ring_destroy(&fr);
 *
 * Input layout read by fuzz_ring_setup():
 *
 *     u8   feature bits: 0 MRG_RXBUF, 1 INDIRECT_DESC, 2 EVENT_IDX,
 *          3 VERSION_1, 4 VHOST_F_LOG_ALL (with a dirty log),
 *          5 IN_ORDER
 *     u8   memory layout (fuzz-mem.h)
 *     u8   queue size: split 1 << (v % 9), packed v + 1
 *     u16  SET_VRING_BASE value
 *     u8   dirty log size in bytes
 *     ...  the descriptor ring (16 bytes per entry)
 *     ...  split: the avail ring (flags, idx, ring, used_event) and the
 *          used ring's flags and idx; packed: the driver event area
 *     16   operations, read by fuzz_ring_run()
 *     ...  the rest: guest memory contents from FUZZ_RING_BUF_GPA on
 *
 * Each operation byte: bits 0-1 the kind, bits 2-7 an argument 'a':
 *   0  dequeue burst of a + 1
 *   1  enqueue burst of a % 8 + 1 packets of assorted sizes
 *   2  the guest makes more available: split, avail->idx += a; packed,
 *      a % 8 + 1 more descriptors flagged available at the driver's
 *      position with its wrap counter (so the ring laps)
 *   3  VHOST_F_LOG_ALL toggled, as migration does mid-run
 *
 * Thread-safety: one thread.
 */

#ifndef OVS_VHOST_FUZZ_RING_H
#define OVS_VHOST_FUZZ_RING_H 1

#include <stdbool.h>
#include <stdint.h>
#include "fuzz-input.h"
#include "fuzz-mem.h"
#include "vhost-dirty-log.h"
#include "virtq.h"

/* Where the rings go (guest physical addresses in region 0). */
#define FUZZ_RING_DESC_GPA 0x0
#define FUZZ_RING_AVAIL_GPA 0x1000
#define FUZZ_RING_USED_GPA 0x2000
#define FUZZ_RING_BUF_GPA 0x3000
#define FUZZ_RING_MAX_SIZE 256

#define FUZZ_RING_F_MRG 0x01
#define FUZZ_RING_F_INDIRECT 0x02
#define FUZZ_RING_F_EVENT_IDX 0x04
#define FUZZ_RING_F_V1 0x08
#define FUZZ_RING_F_LOG 0x10
#define FUZZ_RING_F_IN_ORDER 0x20

struct fuzz_ring {
    struct fuzz_mem fm;
    struct virtq vq;
    uint64_t features;
    uint8_t *log_buf;           /* malloc()ed: ASan sees an overrun. */
    size_t log_size;
    struct vhost_dirty_log log;

    /* The packed driver's position, for operation 2. */
    uint16_t drv_pos;
    bool drv_wrap;
};

uint64_t fuzz_ring_features(uint8_t bits, bool packed);
bool fuzz_ring_vq_init(struct virtq *, const struct fuzz_mem *,
                       uint64_t features, unsigned int size, uint32_t base,
                       uint64_t desc_gpa, uint64_t avail_gpa,
                       uint64_t used_gpa);
bool fuzz_ring_setup(struct fuzz_ring *, bool packed, struct fuzz_input *);
void fuzz_ring_run(struct fuzz_ring *, struct fuzz_input *);
void fuzz_ring_destroy(struct fuzz_ring *);

unsigned int fuzz_ring_dequeue(struct virtq *, struct virtq_ctx *,
                               struct vhost_pkt *, unsigned int n);
void fuzz_ring_free_pkts(struct vhost_pkt *, unsigned int n);
unsigned int fuzz_ring_enqueue(struct virtq *, struct virtq_ctx *,
                               unsigned int n, unsigned int arg);

#endif /* fuzz-ring.h */
