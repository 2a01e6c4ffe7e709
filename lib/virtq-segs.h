/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Descriptor chains as segments: what the split and packed ring walkers
 * produce from the guest's descriptors, and what the copy loops and cold
 * paths consume.  A segment is a piece of a guest buffer that has been
 * checked and translated, so that the copies never go back to a value in
 * guest memory.
 *
 * Trust model: virtq_segs_add() is where every guest buffer address and
 * length is checked: the range must not wrap and must lie in guest memory,
 * piece by piece where it crosses regions.
 */

#ifndef OVS_VHOST_VIRTQ_SEGS_H
#define OVS_VHOST_VIRTQ_SEGS_H 1

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "guest-mem.h"
#include "ovs-vhost/vhost.h"
#include "util.h"
#include "vhost-cold.h"
#include "vhost-dirty-log.h"
#include "virtio-net-hdr.h"
#include "virtio-ring.h"
#include "virtq.h"
#include "virtq-iommu.h"

/* Most segments in the chains of one packet; longer chains are dropped
 * (DPDK's BUF_VECTOR_MAX is the same).  Linux guests use at most 19. */
#define VIRTQ_MAX_SEGS 256

/* The largest packet dequeued: a 64 KiB TSO frame with its Ethernet and
 * VLAN headers.  A longer chain is dropped rather than handed to the
 * embedder's allocator with a guest-chosen size. */
#define VIRTQ_MAX_PKT_LEN (65535 + 18)

/* The longest packet dequeue hands to 'alloc''s embedder. */
static inline uint32_t
virtq_max_pkt_len(const struct vhost_pkt_alloc *alloc)
{
    return alloc && alloc->max_len && alloc->max_len < VIRTQ_MAX_PKT_LEN
           ? alloc->max_len : VIRTQ_MAX_PKT_LEN;
}

/* Most guest buffers one packet may fill with mergeable RX buffers. */
#define VIRTQ_MAX_CHAINS_PER_PKT 64

/* The work budget of a burst, in descriptor visits: every descriptor a
 * burst reads, in the ring or in an indirect table, the indirect
 * descriptor itself included, counts one, on both ring layouts and in
 * both directions.  Without it a guest makes one burst cost milliseconds:
 * split chains may share descriptors and packed chains one indirect
 * table, so 64 chains of a whole ring each cost a thousand times one
 * ordinary chain.
 *
 * The walks take the budget left and give back what they did not use,
 * reusing the bound they test on every descriptor anyway (the loop check
 * of §2.7.5.3.1 and §2.8.6): no test is added per descriptor, and the
 * burst does one subtraction per chain.  A burst whose budget runs out
 * ends there, its last chain left for the next burst (VIRTQ_WALK_BUDGET,
 * counted in 'budget_stops').
 *
 *   - VIRTQ_CHAIN_VISITS_MAX: the most descriptors one chain may take,
 *     VIRTQ_MAX_SEGS buffers and one indirect descriptor; a longer chain
 *     (of empty descriptors: more than VIRTQ_MAX_SEGS non-empty ones is
 *     VHOST_DROP_TOO_BIG already) is dropped as VHOST_DROP_TOO_LONG.
 *
 *   - VIRTQ_BUDGET_PER_PKT: visits per packet of the burst.  A hostile
 *     visit (a shared, empty descriptor) costs about 2.5 ns, an ordinary
 *     64-byte packet 20-30 ns with its share of the burst: 12 keeps the
 *     costliest burst of 32 within twice an ordinary one (make
 *     bench-hostile).  The price: bursts of Linux's longest chains,
 *     MAX_SKB_FRAGS + 2 = 19 buffers behind an indirect descriptor (TSO
 *     packets, whose copies cost far more than their descriptors), end
 *     after 19 or so of them, the rest left for the next burst.
 *
 * A burst of 'n' packets gets virtq_budget(n), never less than one chain
 * of VIRTQ_CHAIN_VISITS_MAX, so that the chain at the head of the ring is
 * always walked to the end by some burst: taken, or dropped. */
#define VIRTQ_CHAIN_VISITS_MAX (VIRTQ_MAX_SEGS + 1)
#define VIRTQ_BUDGET_PER_PKT 12

/* A walk that ran out of the burst's budget: the chain stays available. */
#define VIRTQ_WALK_BUDGET (-3)

/* True if a walk's 'reason' ends the burst with the chain still
 * available: VIRTQ_WALK_BUDGET, or VIRTQ_WALK_MISS (virtq-iommu.h). */
static inline bool
virtq_walk_stopped(int reason)
{
    return reason <= VIRTQ_WALK_BUDGET;
}

static inline uint32_t
virtq_budget(unsigned int n)
{
    return MAX(n * VIRTQ_BUDGET_PER_PKT, VIRTQ_CHAIN_VISITS_MAX);
}

/* How many descriptors a walk that starts with 'left' visits of budget
 * may visit: the chain's own limit, unless the burst has less left. */
static inline uint32_t
virtq_chain_cap(uint32_t left)
{
    return MIN(left, VIRTQ_CHAIN_VISITS_MAX);
}

/* Why a walk that would visit more than 'cap' descriptors (from
 * virtq_chain_cap()) stopped: the burst's budget ran out, or the chain
 * is too long. */
static inline int
virtq_chain_cut(uint32_t cap)
{
    return cap < VIRTQ_CHAIN_VISITS_MAX ? VIRTQ_WALK_BUDGET
                                        : VHOST_DROP_TOO_LONG;
}

/* Ends a burst that started with 'budget' visits and has 'left': counts
 * the visits. */
static inline void
virtq_budget_end(struct vhost_queue_stats *st, uint32_t budget, uint32_t left)
{
    st->desc_visits += budget - left;
}

/* A piece of a guest buffer, translated and checked. */
struct virtq_seg {
    uint8_t *hva;
    uint64_t gpa;               /* For dirty logging. */
    uint32_t len;
};

/* The segments of the chains that hold one packet. */
struct virtq_segs {
    unsigned int n;
    struct virtq_seg segs[VIRTQ_MAX_SEGS];
};

/* One descriptor chain's share of a struct virtq_segs. */
struct virtq_chain {
    uint16_t id;                /* Split: head index; packed: buffer id. */
    uint16_t count;             /* Packed: ring descriptors it takes. */
    unsigned int first_seg;     /* Its segments in the struct virtq_segs. */
    unsigned int n_segs;
    uint32_t len;               /* Bytes it can hold or holds. */
    uint32_t written;           /* Enqueue: bytes written into it. */
    unsigned int shadow_idx;    /* Enqueue: its used entry in the burst's
                                 * shadow, reserved in ring order. */
};

/* virtq_indirect_ok() checks an indirect descriptor ('addr', 'len',
 * 'flags') of a queue of 'queue_size' entries; virtq_indirect_table()
 * checks it and returns its table: a pointer into guest memory
 * or, for a table that crosses regions, a copy stored in '*copyp' that the
 * caller frees.  Returns NULL if indirect descriptors were not negotiated
 * ('allowed' false) or the descriptor breaks a rule: VIRTIO 1.2 §2.7.5.3.1
 * and §2.8.19, no NEXT with INDIRECT, a length that is a nonzero multiple
 * of 16 (both layouts' descriptors are 16 bytes), at most one entry per
 * ring entry, and inside guest memory. */
static inline bool
virtq_indirect_ok(bool allowed, uint16_t queue_size, uint64_t addr,
                  uint32_t len, uint16_t flags)
{
    /* Guest-controlled: 'len', bounded here before it sizes anything. */
    return allowed && !(flags & VRING_DESC_F_NEXT)
           && len && !(len % 16) && len / 16 <= queue_size
           && range_fits(addr, len);
}

static inline const void *
virtq_indirect_table(const struct guest_mem *mem, bool allowed,
                     uint16_t queue_size, uint64_t addr, uint32_t len,
                     uint16_t flags, void **copyp)
{
    if (!virtq_indirect_ok(allowed, queue_size, addr, len, flags)) {
        return NULL;
    }

    uint64_t avail = len;
    const void *table = guest_mem_gpa_to_hva(mem, addr, &avail);
    if (OVS_UNLIKELY(!table || avail < len)) {
        table = *copyp = vhost_cold_copy_indirect(mem, addr, len);
    }
    return table;
}

/* Copies 'n' bytes from 'src' to 'dst'.  Packets are mostly small, where
 * a libc call costs as much as the copy: up to 64 bytes are moved with two
 * overlapping fixed-size copies that the compiler turns into a few vector
 * loads and stores.  ALWAYS inline for that reason. */
static inline __attribute__((always_inline)) void
virtq_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;

    if (n <= 16) {
        if (n >= 8) {
            memcpy(d, s, 8);
            memcpy(d + n - 8, s + n - 8, 8);
        } else {
            memcpy(d, s, n);
        }
    } else if (n <= 32) {
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n <= 64) {
        memcpy(d, s, 32);
        memcpy(d + n - 32, s + n - 32, 32);
    } else {
        /* 64 bytes a time, then the last 64 (overlapping), in 16-byte
         * moves.  Not memcpy(): glibc picks its widest variant, and on
         * a CPU with AVX-512 its 64-byte moves made the 1518-byte rows of
         * make bench 12-23% slower than 16- or 32-byte ones.  The empty
         * asm keeps the compiler from turning the loop back into a call. */
        const uint8_t *last = s + n - 64;
        uint8_t *d_last = d + n - 64;
        while (s < last) {
            memcpy(d, s, 16);
            memcpy(d + 16, s + 16, 16);
            memcpy(d + 32, s + 32, 16);
            memcpy(d + 48, s + 48, 16);
            d += 64;
            s += 64;
            __asm__("" : "+r" (d), "+r" (s));
        }
        memcpy(d_last, last, 16);
        memcpy(d_last + 16, last + 16, 16);
        memcpy(d_last + 32, last + 32, 16);
        memcpy(d_last + 48, last + 48, 16);
    }
}

/* Appends the guest buffer of 'len' bytes at guest physical 'addr' to
 * 'segs'.  Returns -1, or the vhost_drop_reason why not.  A zero-length
 * buffer adds nothing and its address is not translated (CVE-2020-10725
 * dereferenced one).  The inline part handles a buffer inside one region;
 * one that crosses regions goes to the cold path. */
static inline int
virtq_segs_add(const struct guest_mem *mem, uint64_t addr, uint32_t len,
               struct virtq_segs *segs)
{
    if (!len) {
        return -1;
    }

    uint64_t avail = len;
    uint8_t *hva = guest_mem_gpa_to_hva(mem, addr, &avail);
    if (OVS_LIKELY(hva && avail == len && segs->n < VIRTQ_MAX_SEGS)) {
        segs->segs[segs->n++] = (struct virtq_seg) {
            .hva = hva, .gpa = addr, .len = len,
        };
        return -1;
    }
    if (segs->n >= VIRTQ_MAX_SEGS) {
        return VHOST_DROP_TOO_BIG;
    }
    if (!range_fits(addr, len) || !vhost_cold_add_segs(mem, addr, len, segs)) {
        return segs->n >= VIRTQ_MAX_SEGS ? VHOST_DROP_TOO_BIG
                                          : VHOST_DROP_BAD_ADDR;
    }
    return -1;
}

/* The walkers' two translations, for the address space the queue's
 * burst functions were specialised for: guest physical addresses through
 * the memory table, or with 'iommu' (a constant) I/O virtual addresses
 * through the IOTLB first (virtq-iommu.h).  Return as virtq_segs_add()
 * and virtq_indirect_table() do, and VIRTQ_WALK_MISS for a translation
 * the IOTLB does not have yet. */
static inline int
virtq_segs_add_as(struct virtq *vq, struct virtq_ctx *ctx, uint64_t addr,
                  uint32_t len, bool write, struct virtq_segs *segs,
                  const bool iommu)
{
    return iommu ? virtq_iommu_segs_add(vq, ctx, addr, len, write, segs)
                 : virtq_segs_add(ctx->mem, addr, len, segs);
}

/* ...and returns NULL with the reason in '*reasonp'. */
static inline const void *
virtq_indirect_table_as(struct virtq *vq, struct virtq_ctx *ctx,
                        uint64_t addr, uint32_t len, uint16_t flags,
                        void **copyp, int *reasonp, const bool iommu)
{
    *reasonp = VHOST_DROP_BAD_INDIRECT;
    if (!iommu) {
        return virtq_indirect_table(ctx->mem, vq->indirect, vq->size, addr,
                                    len, flags, copyp);
    }
    if (!virtq_indirect_ok(vq->indirect, vq->size, addr, len, flags)) {
        return NULL;
    }
    return virtq_iommu_indirect_table(vq, ctx, addr, len, copyp, reasonp);
}

/* Enqueue: stores at 'dst' in a guest RX buffer the 'hdr_len'-byte
 * virtio-net header for offloads 'ol' and 'num_buffers'.  With 'cmp', only
 * if those bytes are not there already: drivers put the header in the
 * headroom before the packet, so it has a cache line of its own, which the
 * driver reads for every packet (num_buffers, flags).  A store takes that
 * line from the driver's cache each time and the driver's next read
 * fetches it back: two transfers between CPUs per packet, which headers
 * that repeat can save (the line stays shared).  Without 'cmp' the store
 * goes straight to the store buffer, and does not wait for a line the
 * driver holds (see virtq_hdr_mode_begin() for which to use).  What the
 * guest writes there meanwhile is its own business: the bytes are in its
 * own buffer.  Returns true if it stored the header.
 *
 * The header is built in registers, its first 8 bytes loaded straight
 * from 'ol' (which has the header's layout: virtio-net-hdr.h), never in a
 * struct on the stack: the compare's 8- and 4-byte loads of such a struct,
 * written a field at a time, cannot be forwarded from the store buffer
 * and wait for the field stores to retire, on every packet. */
static inline __attribute__((always_inline)) bool
virtq_hdr_store(void *dst, const struct vhost_offload *ol,
                uint16_t num_buffers, const uint32_t hdr_len, const bool cmp)
{
    /* 10 or 12 bytes (the only lengths virtq_configure() gives a queue):
     * the 8 up to csum_offset, then csum_offset and, in the 12-byte
     * header, num_buffers. */
    const uint32_t tail_len = hdr_len - 8;
    uint16_t tail[2] = { ol->csum_offset, num_buffers };
    uint64_t head;

    memcpy(&head, ol, 8);
    if (cmp) {
        uint16_t have_tail[2] = { 0, 0 };
        uint64_t have_head;

        memcpy(&have_head, dst, 8);
        memcpy(have_tail, (const uint8_t *) dst + 8, tail_len);
        if (have_head == head && have_tail[0] == tail[0]
            && (tail_len == 2 || have_tail[1] == tail[1])) {
            return false;
        }
    }
    memcpy(dst, &head, 8);
    memcpy((uint8_t *) dst + 8, tail, tail_len);
    return true;
}

/* Enqueue, for both ring layouts: writes the 'hdr_len'-byte virtio-net
 * header for the offloads of 'p' (its num_buffers 'n_chains') and then the
 * packet of 'p' into the segments of the 'n_chains' chains in 'chains',
 * which the caller reserved with room for both, and stores in each
 * chain's 'written' the bytes that went into it.
 * Marks what it writes in 'log', if any.  The header goes in as
 * virtq_hdr_store() with 'cmp' puts it; returns true if it was stored. */
static OVS_ALWAYS_INLINE bool
virtq_segs_fill(const struct virtq_segs *segs, struct virtq_chain *chains,
                unsigned int n_chains, uint32_t hdr_len,
                const struct vhost_pkt *p, struct vhost_dirty_log *log,
                bool cmp)
{
    bool stored = true;
    unsigned int seg = 0;
    uint32_t off = 0;

    if (OVS_LIKELY(segs->n == 1 && n_chains == 1)) {
        /* The usual case: header and packet in one guest buffer. */
        uint8_t *dst = segs->segs[0].hva;

        stored = virtq_hdr_store(dst, &p->ol, n_chains, hdr_len, cmp);
        virtq_copy(dst + hdr_len, p->data, p->len);
        VHOST_DIRTY_LOG_AUDIT_WRITE(log, dst, hdr_len + p->len);
        if (OVS_UNLIKELY(log)) {
            vhost_dirty_log_write(log, segs->segs[0].gpa, hdr_len + p->len);
        }
        chains[0].written = hdr_len + p->len;
        return stored;
    }

    if (OVS_LIKELY(segs->segs[0].len >= hdr_len)) {
        stored = virtq_hdr_store(segs->segs[0].hva, &p->ol, n_chains,
                                 hdr_len, cmp);
        VHOST_DIRTY_LOG_AUDIT_WRITE(log, segs->segs[0].hva, hdr_len);
        off = hdr_len;
    } else {
        struct virtio_net_hdr hdr;

        virtio_net_hdr_build(&hdr, &p->ol, n_chains);
        vhost_cold_scatter(segs, &seg, &off, &hdr, hdr_len);
#ifdef VHOST_DIRTY_LOG_AUDIT
        for (unsigned int i = 0, hl = hdr_len; i < segs->n && hl; i++) {
            uint32_t n_bytes = MIN(hl, segs->segs[i].len);
            VHOST_DIRTY_LOG_AUDIT_WRITE(log, segs->segs[i].hva, n_bytes);
            hl -= n_bytes;
        }
#endif
    }

    const uint8_t *src = p->data;
    uint32_t left = p->len;
    for (unsigned int c = 0; c < n_chains; c++) {
        struct virtq_chain *ch = &chains[c];
        unsigned int end = ch->first_seg + ch->n_segs;
        uint32_t written = c == 0 ? MIN(hdr_len, ch->len) : 0;

        if (seg < ch->first_seg) {
            seg = ch->first_seg;
            off = 0;
        }
        for (; seg < end && left; seg++, off = 0) {
            const struct virtq_seg *s = &segs->segs[seg];
            uint32_t n_bytes = MIN(left, s->len - off);

            virtq_copy(s->hva + off, src, n_bytes);
            VHOST_DIRTY_LOG_AUDIT_WRITE(log, s->hva + off, n_bytes);
            if (OVS_UNLIKELY(log)) {
                vhost_dirty_log_write(log, s->gpa + off, n_bytes);
            }
            src += n_bytes;
            left -= n_bytes;
            written += n_bytes;
            if (off + n_bytes < s->len) {
                off += n_bytes;
                break;
            }
        }
        ch->written = written;
    }
    if (OVS_UNLIKELY(log)) {
        /* The header, wherever it went. */
        uint32_t hl = hdr_len;
        for (unsigned int s = 0; s < segs->n && hl; s++) {
            uint32_t n_bytes = MIN(hl, segs->segs[s].len);
            vhost_dirty_log_write(log, segs->segs[s].gpa, n_bytes);
            hl -= n_bytes;
        }
    }
    return stored;
}

#endif /* virtq-segs.h */
