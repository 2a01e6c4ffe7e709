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
 *          5 IN_ORDER, 6 ACCESS_PLATFORM (IOMMU_PLATFORM, with an IOTLB),
 *          7 no host offloads (neither CSUM nor HOST_TSO4: dequeue's
 *          copies that do not read the header)
 *     u8   memory layout (fuzz-mem.h)
 *     u8   queue size: split 1 << (v % 9), packed v + 1
 *     u16  SET_VRING_BASE value
 *     u8   dirty log size in bytes
 *     ...  with bit 6 only: the IOTLB ("IOMMU" below)
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
 *   3  VHOST_F_LOG_ALL toggled, as migration does mid-run; with an
 *      IOTLB, 'a % 4' picks among that and the IOTLB messages below
 *
 * IOMMU
 * =====
 *
 * With bit 6 the queue runs the burst functions' IOMMU copies, and every
 * address in the rings, descriptors and indirect tables is an I/O virtual
 * address.  The rings sit at IOVA FUZZ_RING_IOVA_OFF + their guest
 * physical address, so an IOVA taken for a GPA, or the reverse, misses.
 * The IOTLB, read by fuzz_ring_setup():
 *
 *     u8   bits 0-3: how many pool entries to apply at setup (at most 8);
 *          bit 4: map every region at IOVA = GPA + FUZZ_RING_IOVA_OFF,
 *          read-write, first (the "linear map", minus the ring pages);
 *          bit 5: the descriptor ring in two IOTLB entries that continue
 *          each other; bits 6-7: the IOTLB's capacity beyond the most
 *          entries setup needs: unbounded, 0, 1 or 3 (later updates then
 *          evict entries, the rings' among them)
 *     8 x 14 bytes: the pool of UPDATE messages, each:
 *          u32  IOVA: FUZZ_RING_IOVA_OFF plus this as a signed offset,
 *               or with perm bit 2 UINT64_MAX minus this
 *          u32  size (0 is refused, as is a range that wraps)
 *          u8   target: bits 0-3 a region of fuzz-mem (the frontend
 *               address is then its address plus the next field as a
 *               signed offset: inside, next to or far from the region);
 *               15: UINT64_MAX minus the next field; other values: the
 *               next field itself (nowhere)
 *          u32  offset or address, as the target says
 *          u8   perm: bits 0-1 VHOST_ACCESS_*, bit 2 IOVA from the top,
 *               bit 3 an undefined permission bit (refused)
 *
 * Setup applies the linear map, the first pool entries and then one entry
 * per ring part (descriptors read-only on split, read-write on packed;
 * driver area read-only; device area write-only), so that the rings
 * always translate.  Operation 3 with an IOTLB, 'x' being 'a >> 2':
 *   a % 4 == 0  VHOST_F_LOG_ALL toggled, as without one
 *   a % 4 == 1  UPDATE with pool entry x % 8
 *   a % 4 == 2  INVALIDATE: x < 8 pool entry x's range; 8-11 a ring
 *               part's entry; 12-13 the page of the last miss; 14 all but
 *               the last IOVA; 15 a range that wraps (to the end)
 *   a % 4 == 3  the frontend answers the pending miss, the ring's first:
 *               an UPDATE of its page, clipped to the region that the
 *               linear map would put it in (or to nowhere if none), with
 *               the permission missed (x odd: read-write)
 * each carried out as vhost_dev_iotlb_msg() and vhost_dev_update_ready()
 * do: under the queue lock, clearing 'miss_sent' on an update, mapping
 * the ring again when it waits for a translation, lost one, or after an
 * invalidation, and asking for a ring's miss.  Bursts run as
 * vhost_datapath_get__() lets them: only while the queue is ready, and
 * for a ring that lost its translation to an invalidation (ready and
 * unmapped, 'iotlb_lost'), only once it maps again, its miss asked for
 * otherwise.  A burst that misses is handed to virtq_iommu_should_ask()
 * and virtq_iommu_look_ahead() as the data path does, against a clock
 * that moves FUZZ_RING_TICK_MS per operation.
 *
 * Checks
 * ======
 *
 * After every burst (fuzz_ring_dequeue(), fuzz_ring_enqueue()): the data
 * path's contract, drop counters that only grow, every chain taken
 * returned (the used position moves exactly as far as the avail one),
 * and without an IOTLB no miss, hit or denial.  With one, also
 * (fuzz_ring_run()): a miss names an IOVA and access that the IOTLB has
 * no entry for; a burst that misses leaves the chain it missed at
 * available (split: fewer taken than were available; packed: the
 * descriptor at the stop was available), and a dequeue's miss is in the
 * chain it stopped at (its buffers or indirect table, as the burst found
 * them); an enqueue that put nothing misses in one of the chains from
 * its stop on; every denial is a chain dropped for its address; at least
 * one hit per packet; the waits counted and the miss asked for again
 * exactly when virtq-iommu.h says (a page asked for ahead, and not
 * answered, counting as asked).  The pages a look-ahead asks for: at
 * most VIRTQ_IOMMU_AHEAD_PAGES, each one the IOTLB has no entry for, for
 * the burst's access or (an indirect table) for reading, none twice,
 * none the burst's own miss's and none asked for ahead and still
 * awaited.  After an invalidation, a ring that
 * runs is where the IOTLB now puts it, and one mapped again by a burst
 * too; a ready ring is mapped or lost its translation (and then waits
 * for it).  ASan and fuzz-mem's guard
 * pages catch any access outside guest memory.
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
#include "vhost-iotlb.h"
#include "virtq.h"
#include "virtq-iommu.h"

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
#define FUZZ_RING_F_IOMMU 0x40
#define FUZZ_RING_F_NO_HOST_OL 0x80

/* With FUZZ_RING_F_IOMMU: where I/O virtual addresses start, the pool's
 * size, and the clock's step. */
#define FUZZ_RING_IOVA_OFF (UINT64_C(1) << 32)
#define FUZZ_RING_IOTLB_POOL 8
#define FUZZ_RING_TICK_MS 250

/* One pool entry as the input gives it (see "IOMMU" above). */
struct fuzz_ring_iotlb_seed {
    int32_t iova;
    uint32_t size;
    uint8_t target;
    uint32_t off;
    uint8_t perm;
};

/* The IOTLB part of an input, for seeds. */
struct fuzz_ring_iommu_seed {
    uint8_t flags;
    struct fuzz_ring_iotlb_seed pool[FUZZ_RING_IOTLB_POOL];
};

#define FUZZ_RING_IOMMU_LINEAR 0x10
#define FUZZ_RING_IOMMU_SPLIT_DESC 0x20

/* For seeds: operation 3's IOTLB messages ('SUB' = a % 4, 'X' = a >> 2). */
#define FUZZ_RING_OP_IOTLB(SUB, X) (((unsigned int) (SUB) | (X) << 2) << 2 | 3)

struct fuzz_ring {
    struct fuzz_mem fm;
    struct virtq vq;
    uint64_t features;
    uint8_t *log_buf;           /* malloc()ed: ASan sees an overrun. */
    size_t log_size;
    struct vhost_dirty_log log;

    /* The driver's view of its rings (at their guest physical
     * addresses, wherever the IOTLB has the device look), for operation
     * 2; and the packed driver's position. */
    void *drv_desc;
    void *drv_avail;
    uint16_t drv_pos;
    bool drv_wrap;

    /* With FUZZ_RING_F_IOMMU. */
    bool iommu;
    struct vhost_iotlb iotlb;
    struct vhost_iotlb_msg pool[FUZZ_RING_IOTLB_POOL];
    struct vhost_iotlb_msg ring_msgs[4];    /* The rings' entries. */
    unsigned int n_ring_msgs;
    bool miss;                      /* The last burst that missed. */
    uint8_t miss_perm;
    uint64_t miss_iova;
    long long int now_ms;
    bool asked;                     /* What virtq_iommu_should_ask() */
    uint8_t asked_perm;             /* should remember. */
    uint64_t asked_iova;
    long long int asked_ms;
    unsigned int n_ahead;           /* The pages asked for ahead that */
    struct {                        /* virtq_iommu_note_ahead() should */
        bool live;                  /* remember: the last */
        uint8_t perm;               /* VIRTQ_IOMMU_ASKED_MAX, oldest */
        uint64_t iova;              /* first, those an update covered */
        long long int ms;           /* not 'live'. */
    } ahead[VIRTQ_IOMMU_ASKED_MAX];
};

uint64_t fuzz_ring_features(uint8_t bits, bool packed);
bool fuzz_ring_vq_init(struct virtq *, const struct fuzz_mem *,
                       uint64_t features, unsigned int size, uint32_t base,
                       uint64_t desc_gpa, uint64_t avail_gpa,
                       uint64_t used_gpa, const struct vhost_iotlb *);
bool fuzz_ring_setup(struct fuzz_ring *, bool packed, struct fuzz_input *);
void fuzz_ring_run(struct fuzz_ring *, struct fuzz_input *);
void fuzz_ring_destroy(struct fuzz_ring *);

unsigned int fuzz_ring_dequeue(struct virtq *, struct virtq_ctx *,
                               struct vhost_pkt *, unsigned int n);
void fuzz_ring_free_pkts(struct vhost_pkt *, unsigned int n);
unsigned int fuzz_ring_enqueue(struct virtq *, struct virtq_ctx *,
                               unsigned int n, unsigned int arg);

void fuzz_ring_put_iommu(struct fuzz_input_buf *,
                         const struct fuzz_ring_iommu_seed *);

#endif /* fuzz-ring.h */
