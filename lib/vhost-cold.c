/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cold paths of the data path: see vhost-cold.h.
 */

#include <config.h>
#include "vhost-cold.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "guest-mem.h"
#include "virtq-segs.h"
#include "virtq.h"

/* Adds the guest buffer [gpa, gpa + len) to 'segs' as one segment per
 * region it touches.  Returns false if part of it is in no region (a gap,
 * or past the end of memory) or 'segs' is full. */
bool
vhost_cold_add_segs(const struct guest_mem *mem, uint64_t gpa, uint32_t len,
                    struct virtq_segs *segs)
{
    while (len) {
        uint64_t piece = len;
        uint8_t *hva = guest_mem_gpa_to_hva(mem, gpa, &piece);

        if (!hva || segs->n >= VIRTQ_MAX_SEGS) {
            return false;
        }
        segs->segs[segs->n++] = (struct virtq_seg) {
            .hva = hva, .gpa = gpa, .len = piece,
        };
        gpa += piece;
        len -= piece;
    }
    return true;
}

/* Returns a malloc()ed copy of the indirect table of 'len' bytes at 'gpa',
 * which crosses regions, or NULL if part of it is in none.  The caller
 * frees it. */
void *
vhost_cold_copy_indirect(const struct guest_mem *mem, uint64_t gpa,
                         uint32_t len)
{
    uint8_t *copy = malloc(len);
    uint32_t done = 0;

    while (copy && done < len) {
        uint64_t piece = len - done;
        const uint8_t *hva = guest_mem_gpa_to_hva(mem, gpa + done, &piece);

        if (!hva) {
            free(copy);
            return NULL;
        }
        memcpy(copy + done, hva, piece);
        done += piece;
    }
    return copy;
}

/* Copies up to 'len' bytes from 'segs', starting at segment '*segp' offset
 * '*offp', into 'dst', and advances the position.  Returns the bytes
 * copied, fewer than 'len' if the segments run out. */
size_t
vhost_cold_gather(const struct virtq_segs *segs, unsigned int *segp,
                  uint32_t *offp, void *dst, size_t len)
{
    size_t done = 0;

    while (done < len && *segp < segs->n) {
        const struct virtq_seg *s = &segs->segs[*segp];
        size_t n = MIN(len - done, (size_t) (s->len - *offp));

        memcpy((uint8_t *) dst + done, s->hva + *offp, n);
        done += n;
        *offp += n;
        if (*offp == s->len) {
            (*segp)++;
            *offp = 0;
        }
    }
    return done;
}

/* The reverse of vhost_cold_gather(): copies 'len' bytes from 'src' into
 * 'segs'.  Returns the bytes copied. */
size_t
vhost_cold_scatter(const struct virtq_segs *segs, unsigned int *segp,
                   uint32_t *offp, const void *src, size_t len)
{
    size_t done = 0;

    while (done < len && *segp < segs->n) {
        const struct virtq_seg *s = &segs->segs[*segp];
        size_t n = MIN(len - done, (size_t) (s->len - *offp));

        memcpy(s->hva + *offp, (const uint8_t *) src + done, n);
        done += n;
        *offp += n;
        if (*offp == s->len) {
            (*segp)++;
            *offp = 0;
        }
    }
    return done;
}

/* Builds in 'p' (getting a buffer through 'alloc' if it has none) the
 * RARP request that announces 'mac', as if the guest had sent it: the
 * frame switches learn the guest's new location from after a migration
 * (RFC 903; what QEMU's announce sends for guests without
 * GUEST_ANNOUNCE).  Returns false if there is no buffer. */
bool
vhost_cold_make_rarp(struct vhost_pkt *p, const uint8_t mac[6],
                     const struct vhost_pkt_alloc *alloc)
{
    enum { RARP_LEN = 60 };     /* Minimum frame, without FCS. */
    uint8_t *f;

    if (!virtq_get_buf(p, RARP_LEN, alloc)) {
        return false;
    }
    f = p->data;
    memset(f, 0, RARP_LEN);
    memset(f, 0xff, 6);                     /* Broadcast. */
    memcpy(f + 6, mac, 6);
    f[12] = 0x80; f[13] = 0x35;             /* ETH_TYPE_RARP */
    f[14] = 0x00; f[15] = 0x01;             /* Ethernet */
    f[16] = 0x08; f[17] = 0x00;             /* IPv4 */
    f[18] = 6;                              /* Hardware address length. */
    f[19] = 4;                              /* Protocol address length. */
    f[20] = 0x00; f[21] = 0x03;             /* Reverse request. */
    memcpy(f + 22, mac, 6);                 /* Sender hardware address. */
    memcpy(f + 32, mac, 6);                 /* Target hardware address. */
    p->len = RARP_LEN;
    memset(&p->ol, 0, sizeof p->ol);
    return true;
}

/* Counts and logs a burst of 'vq' that ended because it used up its
 * 'budget' of descriptor visits (virtq-segs.h): what it did stays done,
 * and the chain it was walking stays available for the next burst.  Only
 * a guest whose chains share descriptors or indirect tables, or are
 * unusually long, gets here. */
void
vhost_cold_budget_stop(struct virtq *vq, uint32_t budget)
{
    vq->stats.budget_stops++;
    /* INFO, not WARN: a Linux guest's TSO chains (19 buffers behind an
     * indirect descriptor) reach the budget too, and they are no fault. */
    vhost_log_rl(&vq->rl, VHOST_LOG_INFO, "%s: vring %u: burst ended early: "
                 "its work budget of %"PRIu32" descriptor visits is used up "
                 "(chains sharing descriptors or indirect tables?)",
                 vq->name, vq->index, budget);
}

/* Counts a burst of 'vq' that ended at a chain it could not walk yet,
 * the chain left available: for 'reason' VIRTQ_WALK_BUDGET, as
 * vhost_cold_budget_stop(); for VIRTQ_WALK_MISS, the IOTLB wait is
 * counted when the miss is handled (vhost-datapath.c). */
void
vhost_cold_walk_stop(struct virtq *vq, int reason, uint32_t budget)
{
    if (reason == VIRTQ_WALK_BUDGET) {
        vhost_cold_budget_stop(vq, budget);
    }
}

/* Counts and logs an enqueue burst of 'vq' that stopped because the
 * guest buffers at the head of its RX ring, 'have' bytes, cannot hold
 * the next packet, 'need' bytes with its header.  The buffers stay
 * available, and the packet goes back to the caller. */
void
vhost_cold_small_buf_stop(struct virtq *vq, uint32_t need, uint64_t have)
{
    vq->stats.small_buf_stops++;
    vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u: guest RX buffers of "
                 "%"PRIu64" bytes cannot hold a packet of %"PRIu32" bytes "
                 "with its header; burst stopped", vq->name, vq->index,
                 have, need);
}
