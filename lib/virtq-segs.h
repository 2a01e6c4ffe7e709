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

/* Most segments in the chains of one packet; longer chains are dropped
 * (DPDK's BUF_VECTOR_MAX is the same).  Linux guests use at most 19. */
#define VIRTQ_MAX_SEGS 256

/* The largest packet dequeued: a 64 KiB TSO frame with its Ethernet and
 * VLAN headers.  A longer chain is dropped rather than handed to the
 * embedder's allocator with a guest-chosen size. */
#define VIRTQ_MAX_PKT_LEN (65535 + 18)

/* Most guest buffers one packet may fill with mergeable RX buffers. */
#define VIRTQ_MAX_CHAINS_PER_PKT 64

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
        memcpy(d, s, n);
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

#endif /* virtq-segs.h */
