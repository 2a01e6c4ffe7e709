/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path behind a vIOMMU: see virtq-iommu.h.
 *
 * No reason for this code to be inline: a guest with a vIOMMU pays for
 * two table lookups per buffer anyway, and the copies without one stay as
 * they were.
 */

#include <config.h>
#include "virtq-iommu.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "guest-mem.h"
#include "vhost-iotlb.h"
#include "vhost-log.h"
#include "virtq.h"
#include "virtq-packed.h"
#include "virtq-segs.h"
#include "virtq-split.h"

/* Translates I/O virtual address 'iova' for access 'perm' through 'iotlb'
 * and then 'mem'.  On success returns our address of it, stores its guest
 * physical address in '*gpap' and cuts '*lenp' (at least 1 on entry) to
 * the bytes contiguous from there, within one IOTLB entry and one region.
 * Otherwise returns NULL and stores in '*resultp' why: VHOST_IOTLB_NOT_FOUND
 * or VHOST_IOTLB_DENIED, or VHOST_IOTLB_HIT for an entry whose frontend
 * address is in no region of 'mem'. */
static uint8_t *
virtq_iommu_xlate__(const struct vhost_iotlb *iotlb,
                    const struct guest_mem *mem, uint64_t iova, uint8_t perm,
                    uint64_t *lenp, uint64_t *gpap,
                    enum vhost_iotlb_result *resultp)
{
    uint64_t uva, n;

    *resultp = vhost_iotlb_translate(iotlb, iova, perm, &uva, &n);
    if (*resultp != VHOST_IOTLB_HIT) {
        return NULL;
    }
    *lenp = MIN(*lenp, n);

    /* Frontend-controlled: the entry's frontend address, checked against
     * the memory table now, not when the entry came (the table may have
     * changed since). */
    const struct guest_mem_region *r = mem ? guest_mem_find_uva(mem, uva)
                                           : NULL;
    if (!r) {
        return NULL;
    }
    uint64_t off = uva - r->uva;
    *lenp = MIN(*lenp, r->size - off);
    *gpap = r->gpa + off;
    return r->hva + off;
}

/* The walk of 'vq' could not translate 'iova' for 'perm' ('result' says
 * why).  Returns what the walk returns: VIRTQ_WALK_MISS, with the miss
 * recorded in 'ctx', or the reason to drop the chain. */
static int
virtq_iommu_fail__(struct virtq *vq, struct virtq_ctx *ctx, uint64_t iova,
                   uint8_t perm, enum vhost_iotlb_result result)
{
    switch (result) {
    case VHOST_IOTLB_NOT_FOUND:
        ctx->miss = true;
        ctx->miss_iova = iova;
        ctx->miss_perm = perm;
        return VIRTQ_WALK_MISS;

    case VHOST_IOTLB_DENIED:
        vq->stats.iotlb_denied++;
        vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u: IOVA %#"PRIx64
                     " is mapped without %s permission: chain dropped",
                     vq->name, vq->index, iova,
                     perm == VHOST_ACCESS_WO ? "write" : "read");
        return VHOST_DROP_BAD_ADDR;

    case VHOST_IOTLB_HIT:
    default:
        vhost_log_rl(&vq->rl, VHOST_LOG_WARN, "%s: vring %u: IOVA %#"PRIx64
                     " translates outside guest memory: chain dropped",
                     vq->name, vq->index, iova);
        return VHOST_DROP_BAD_ADDR;
    }
}

/* Appends the guest buffer of 'len' bytes at I/O virtual address 'iova'
 * to 'segs', one segment per piece contiguous in both the IOTLB and the
 * memory table; 'write' for a device-writable buffer.  Returns -1,
 * VIRTQ_WALK_MISS (the miss recorded in 'ctx'), or the vhost_drop_reason.
 * As virtq_segs_add(), a zero-length buffer adds nothing. */
int
virtq_iommu_segs_add(struct virtq *vq, struct virtq_ctx *ctx, uint64_t iova,
                     uint32_t len, bool write, struct virtq_segs *segs)
{
    const uint8_t perm = write ? VHOST_ACCESS_WO : VHOST_ACCESS_RO;

    /* Guest-controlled: 'iova' and 'len', from the descriptor's copy. */
    if (!range_fits(iova, len)) {
        return VHOST_DROP_BAD_ADDR;
    }
    while (len) {
        enum vhost_iotlb_result result;
        uint64_t piece = len, gpa;
        uint8_t *hva = virtq_iommu_xlate__(ctx->iotlb, ctx->mem, iova, perm,
                                           &piece, &gpa, &result);
        if (!hva) {
            return virtq_iommu_fail__(vq, ctx, iova, perm, result);
        }
        if (segs->n >= VIRTQ_MAX_SEGS) {
            return VHOST_DROP_TOO_BIG;
        }
        segs->segs[segs->n++] = (struct virtq_seg) {
            .hva = hva, .gpa = gpa, .len = piece,
        };
        vq->stats.iotlb_hits++;
        iova += piece;
        len -= piece;
    }
    return -1;
}

/* Returns the indirect table of 'len' bytes at I/O virtual address
 * 'iova', which the caller has checked with virtq_indirect_ok(): a
 * pointer into guest memory or, for a table that is not contiguous here, a
 * copy stored in '*copyp' that the caller frees.  Returns NULL with
 * '*reasonp' VIRTQ_WALK_MISS (recorded in 'ctx') or the drop reason. */
const void *
virtq_iommu_indirect_table(struct virtq *vq, struct virtq_ctx *ctx,
                           uint64_t iova, uint32_t len, void **copyp,
                           int *reasonp)
{
    enum vhost_iotlb_result result;
    uint64_t piece = len, gpa;
    const uint8_t *hva = virtq_iommu_xlate__(ctx->iotlb, ctx->mem, iova,
                                             VHOST_ACCESS_RO, &piece, &gpa,
                                             &result);
    if (hva && piece == len) {
        vq->stats.iotlb_hits++;
        return hva;
    }

    /* Cold: a table across IOTLB entries or regions is copied, piece by
     * piece, so that the walk reads one array. */
    uint8_t *copy = hva ? malloc(len) : NULL;
    uint32_t done = 0;
    while (copy) {
        memcpy(copy + done, hva, piece);
        vq->stats.iotlb_hits++;
        done += piece;
        if (done == len) {
            *copyp = copy;
            return copy;
        }
        piece = len - done;
        hva = virtq_iommu_xlate__(ctx->iotlb, ctx->mem, iova + done,
                                  VHOST_ACCESS_RO, &piece, &gpa, &result);
        if (!hva) {
            free(copy);
            copy = NULL;
        }
    }
    int reason = virtq_iommu_fail__(vq, ctx, iova + done, VHOST_ACCESS_RO,
                                    result);
    *reasonp = reason == VIRTQ_WALK_MISS ? reason : VHOST_DROP_BAD_INDIRECT;
    return NULL;
}

/* Translates the 'len' bytes of a ring part at I/O virtual address 'iova'
 * for access 'perm': they must be contiguous in frontend virtual memory
 * (one IOTLB entry, or several that continue each other) and lie in one
 * region.  Returns our address and stores the guest physical one in
 * '*gpap'; or returns NULL, with '*miss_iovap' the first IOVA of the part
 * that has no entry, or UINT64_MAX if the part is mapped but not usable
 * (a permission missing, or not contiguous in one region). */
void *
virtq_iommu_map_ring(const struct vhost_iotlb *iotlb,
                     const struct guest_mem *mem, uint64_t iova,
                     uint64_t len, uint8_t perm, uint64_t *gpap,
                     uint64_t *miss_iovap)
{
    uint64_t first_uva = 0;

    *miss_iovap = UINT64_MAX;
    if (!len || !range_fits(iova, len)) {
        return NULL;
    }
    for (uint64_t done = 0; done < len; ) {
        uint64_t uva, n;

        switch (vhost_iotlb_translate(iotlb, iova + done, perm, &uva, &n)) {
        case VHOST_IOTLB_HIT:
            break;
        case VHOST_IOTLB_NOT_FOUND:
            *miss_iovap = iova + done;
            return NULL;
        case VHOST_IOTLB_DENIED:
        default:
            return NULL;
        }
        if (!done) {
            first_uva = uva;
        } else if (uva != first_uva + done) {
            return NULL;
        }
        done += MIN(n, len - done);
    }

    void *hva = guest_mem_uva_to_hva_contig(mem, first_uva, len);
    if (hva) {
        *gpap = guest_mem_uva_to_gpa(mem, first_uva);
    }
    return hva;
}

/* Translates 'vq''s ring through its IOTLB again (virtq_map()), after an
 * IOTLB message or, from the data path, at a burst of a ring that lost
 * its translation.  A ring that was translated before (or lost it to an
 * invalidation already) and now misses is marked 'iotlb_lost': it stays
 * ready.  Returns true if the ring is mapped.  The caller holds the
 * access lock. */
bool
virtq_iommu_remap(struct virtq *vq, const struct guest_mem *mem)
{
    bool held = vq->desc || vq->iotlb_lost;

    if (virtq_map(vq, mem)) {
        return true;
    }
    vq->iotlb_lost = held && vq->ring_miss;
    return false;
}

/* Pages asked for ahead (virtq-iommu.h, "Ask ahead"): the last
 * VIRTQ_IOMMU_ASKED_MAX, a ring of them, the oldest overwritten first. */
struct virtq_iommu_asked {
    unsigned int next;          /* The slot the next one takes. */
    struct {
        bool live;              /* Asked, and no update covered it. */
        uint8_t perm;
        uint64_t iova;          /* As asked: a page's first IOVA in use. */
        long long int ms;       /* When. */
    } e[VIRTQ_IOMMU_ASKED_MAX];
};

static inline uint64_t
virtq_iommu_page__(uint64_t iova)
{
    return iova & ~(uint64_t) (VIRTQ_IOMMU_PAGE - 1);
}

/* True if the page of 'iova' was asked for ahead for 'perm' less than
 * VIRTQ_IOMMU_MISS_RETRY_MS before 'now_ms' and no update covered it
 * since; then stores when in '*msp', unless 'msp' is NULL. */
static bool
virtq_iommu_asked_ahead__(const struct virtq *vq, uint64_t iova, uint8_t perm,
                          long long int now_ms, long long int *msp)
{
    const struct virtq_iommu_asked *a = vq->asked_ahead;

    for (unsigned int i = 0; a && i < VIRTQ_IOMMU_ASKED_MAX; i++) {
        if (a->e[i].live && a->e[i].perm == perm
            && virtq_iommu_page__(a->e[i].iova) == virtq_iommu_page__(iova)
            && now_ms - a->e[i].ms < VIRTQ_IOMMU_MISS_RETRY_MS) {
            if (msp) {
                *msp = a->e[i].ms;
            }
            return true;
        }
    }
    return false;
}

/* A burst of 'vq' stopped at the miss recorded in 'ctx'.  Counts the
 * wait, and returns true if the frontend is to be asked for the
 * translation (and then notes it as asked at 'now_ms'): not if the same
 * IOVA was asked for less than VIRTQ_IOMMU_MISS_RETRY_MS ago and no
 * update has come since, nor if its page was asked for ahead as recently
 * (then it is noted as asked when that was, and waited for). */
bool
virtq_iommu_should_ask(struct virtq *vq, const struct virtq_ctx *ctx,
                       long long int now_ms)
{
    vq->stats.iotlb_waits++;
    if (vq->miss_sent && vq->miss_sent_iova == ctx->miss_iova
        && vq->miss_sent_perm == ctx->miss_perm
        && now_ms - vq->miss_sent_ms < VIRTQ_IOMMU_MISS_RETRY_MS) {
        return false;
    }

    /* Asked for ahead of an earlier miss: its answer is on its way. */
    long long int asked_ms;
    if (virtq_iommu_asked_ahead__(vq, ctx->miss_iova, ctx->miss_perm, now_ms,
                                  &asked_ms)) {
        virtq_iommu_note_asked(vq, ctx->miss_iova, ctx->miss_perm, asked_ms);
        return false;
    }
    virtq_iommu_note_asked(vq, ctx->miss_iova, ctx->miss_perm, now_ms);
    return true;
}

/* True if a burst of 'vq' would only meet the miss it asked for at the
 * last one again: asked less than VIRTQ_IOMMU_MISS_RETRY_MS ago, and no
 * update has answered it (vhost_dev_iotlb_msg() clears 'miss_sent' with
 * one that does).  The burst then ends at once, counted as a wait,
 * rather than walking the ring up to the same chain at every poll. */
bool
virtq_iommu_waiting(struct virtq *vq)
{
    if (vq->miss_sent
        && vhost_time_msec() - vq->miss_sent_ms < VIRTQ_IOMMU_MISS_RETRY_MS) {
        vq->stats.iotlb_waits++;
        return true;
    }
    return false;
}

/* True if IOTLB update 'msg' answers a miss for 'iova' and 'perm': it
 * covers that IOVA, with that access. */
static bool
virtq_iommu_covers__(const struct vhost_iotlb_msg *msg, uint64_t iova,
                     uint8_t perm)
{
    return iova - msg->iova < msg->size && (msg->perm & perm) == perm;
}

/* Clears 'vq''s outstanding miss, and forgets the pages asked for ahead,
 * that IOTLB update 'msg' answers. */
void
virtq_iommu_answered(struct virtq *vq, const struct vhost_iotlb_msg *msg)
{
    struct virtq_iommu_asked *a = vq->asked_ahead;

    if (vq->miss_sent
        && virtq_iommu_covers__(msg, vq->miss_sent_iova,
                                vq->miss_sent_perm)) {
        vq->miss_sent = false;
    }
    for (unsigned int i = 0; a && i < VIRTQ_IOMMU_ASKED_MAX; i++) {
        if (a->e[i].live
            && virtq_iommu_covers__(msg, a->e[i].iova, a->e[i].perm)) {
            a->e[i].live = false;
        }
    }
}

/* Looks at the chains 'vq' has available from the one a burst missed at
 * ('ctx'; 'write' for an enqueue, whose buffers the device writes), and
 * stores in 'a' the pages their buffers use that are to be asked for
 * ahead at 'now_ms' (virtq-iommu.h, "Ask ahead").  Reads the ring, if it
 * is mapped, and changes nothing.  The caller holds the access lock,
 * sends the misses and notes each one it sent with
 * virtq_iommu_note_ahead(). */
void
virtq_iommu_look_ahead(struct virtq *vq, const struct virtq_ctx *ctx,
                       bool write, long long int now_ms,
                       struct virtq_iommu_ahead *a)
{
    a->ctx = ctx;
    a->write = write;
    a->now_ms = now_ms;
    a->work = VIRTQ_IOMMU_AHEAD_WORK;
    a->n = 0;
    if (!ctx->iotlb || vq->broken) {
        return;
    }
    if (!vq->desc) {
        /* The ring itself missed (an invalidation took its translation):
         * no chain to look at, but its other parts, which translating it
         * again would otherwise meet one round trip at a time. */
        if (vq->has_addr && vq->size) {
            struct virtq_ring_part parts[3];

            virtq_ring_parts(vq, parts);
            for (int i = 0; i < 3; i++) {
                if (!virtq_iommu_ahead_buf(vq, a, parts[i].iova,
                                           parts[i].len, parts[i].perm)) {
                    break;
                }
            }
        }
        return;
    }
    if (vq->packed) {
        virtq_packed_look_ahead(vq, a);
    } else {
        virtq_split_look_ahead(vq, a);
    }
}

/* Takes one descriptor read or IOTLB lookup from look-ahead 'a''s work;
 * false if none is left, and the look-ahead ends. */
bool
virtq_iommu_ahead_spend(struct virtq_iommu_ahead *a)
{
    if (!a->work) {
        return false;
    }
    a->work--;
    return true;
}

/* True if look-ahead 'a' of 'vq' is not to ask for the page of 'iova' for
 * 'perm': the burst's miss asks for it, this look-ahead does already, or
 * an earlier one did and waits for the answer. */
static bool
virtq_iommu_ahead_known__(const struct virtq *vq,
                          const struct virtq_iommu_ahead *a, uint64_t iova,
                          uint8_t perm)
{
    uint64_t page = virtq_iommu_page__(iova);

    if (a->ctx->miss && a->ctx->miss_perm == perm
        && virtq_iommu_page__(a->ctx->miss_iova) == page) {
        return true;
    }
    for (unsigned int i = 0; i < a->n; i++) {
        if (a->perm[i] == perm && virtq_iommu_page__(a->iova[i]) == page) {
            return true;
        }
    }
    return virtq_iommu_asked_ahead__(vq, iova, perm, a->now_ms, NULL);
}

/* Look-ahead 'a' of 'vq' met a buffer of 'len' bytes at I/O virtual
 * address 'iova' that needs access 'perm': adds the pages of it that the
 * IOTLB has no entry for and that are not known already.  Returns false
 * if the look-ahead is to end: out of work or of room. */
bool
virtq_iommu_ahead_buf(struct virtq *vq, struct virtq_iommu_ahead *a,
                      uint64_t iova, uint64_t len, uint8_t perm)
{
    /* Guest-controlled: 'iova' and 'len', from a descriptor's copy; a
     * buffer that wraps is the walk's to drop. */
    if (!len || !range_fits(iova, len)) {
        return true;
    }
    uint64_t end = iova + len;
    while (iova < end) {
        uint64_t uva, n;

        if (!virtq_iommu_ahead_spend(a)) {
            return false;
        }
        switch (vhost_iotlb_translate(a->ctx->iotlb, iova, perm, &uva, &n)) {
        case VHOST_IOTLB_HIT:
            if (n >= end - iova) {
                return true;
            }
            iova += n;
            continue;
        case VHOST_IOTLB_NOT_FOUND:
            break;
        case VHOST_IOTLB_DENIED:
        default:
            return true;        /* The walk drops the chain. */
        }
        if (!virtq_iommu_ahead_known__(vq, a, iova, perm)) {
            if (a->n >= VIRTQ_IOMMU_AHEAD_PAGES) {
                return false;
            }
            a->iova[a->n] = iova;
            a->perm[a->n] = perm;
            a->n++;
        }
        uint64_t next = virtq_iommu_page__(iova) + VIRTQ_IOMMU_PAGE;
        if (next <= iova) {
            return true;        /* The last page of the IOVA space. */
        }
        iova = next;
    }
    return true;
}

/* Notes that the frontend was asked at 'now_ms', ahead, for the page of
 * 'iova' for 'perm' (from a virtq_iommu_look_ahead() of 'vq').  The
 * caller holds the access lock. */
void
virtq_iommu_note_ahead(struct virtq *vq, uint64_t iova, uint8_t perm,
                       long long int now_ms)
{
    struct virtq_iommu_asked *a = vq->asked_ahead;

    if (!a) {
        a = vq->asked_ahead = calloc(1, sizeof *a);
        if (!a) {
            return;             /* Only a duplicate miss, later. */
        }
    }
    a->e[a->next].live = true;
    a->e[a->next].perm = perm;
    a->e[a->next].iova = iova;
    a->e[a->next].ms = now_ms;
    a->next = (a->next + 1) % VIRTQ_IOMMU_ASKED_MAX;
}

/* Forgets the pages 'vq' asked for ahead: the vring is reset. */
void
virtq_iommu_free_ahead(struct virtq *vq)
{
    free(vq->asked_ahead);
    vq->asked_ahead = NULL;
}

/* True if the page of 'iova' was asked for ahead for 'perm' less than
 * VIRTQ_IOMMU_MISS_RETRY_MS before 'now_ms' and no update has answered it
 * yet: a ring that misses it again need not ask.  The caller holds the
 * access lock. */
bool
virtq_iommu_asked_ahead(const struct virtq *vq, uint64_t iova, uint8_t perm,
                        long long int now_ms)
{
    return virtq_iommu_asked_ahead__(vq, iova, perm, now_ms, NULL);
}

/* Notes that the frontend was asked at 'now_ms' for the translation of
 * 'iova' for 'perm', so that bursts that miss the same page do not ask
 * again for a while.  The caller holds the access lock. */
void
virtq_iommu_note_asked(struct virtq *vq, uint64_t iova, uint8_t perm,
                       long long int now_ms)
{
    vq->miss_sent = true;
    vq->miss_sent_iova = iova;
    vq->miss_sent_perm = perm;
    vq->miss_sent_ms = now_ms;
}

/* Packets held for want of a translation (see virtq-iommu.h). */
struct virtq_held {
    unsigned int n;
    size_t bytes;
    struct vhost_pkt pkts[VIRTQ_HELD_MAX];  /* 'data' our copies. */
};

/* Copies as many of the 'n' packets in 'pkts' as the hold of 'vq' has
 * room for, in order, and returns how many: the caller may free them.
 * The caller holds the access lock. */
unsigned int
virtq_iommu_hold(struct virtq *vq, const struct vhost_pkt *pkts,
                 unsigned int n)
{
    struct virtq_held *h = vq->held;
    unsigned int i;

    if (!h) {
        h = vq->held = calloc(1, sizeof *h);
        if (!h) {
            return 0;
        }
    }
    for (i = 0; i < n && h->n < VIRTQ_HELD_MAX; i++) {
        const struct vhost_pkt *p = &pkts[i];
        uint8_t *copy;

        if (h->bytes + p->len > VIRTQ_HELD_MAX_BYTES
            || !(copy = malloc(p->len ? p->len : 1))) {
            break;
        }
        memcpy(copy, p->data, p->len);
        h->pkts[h->n++] = (struct vhost_pkt) {
            .data = copy, .len = p->len, .size = p->len, .ol = p->ol,
        };
        h->bytes += p->len;
    }
    vq->stats.iotlb_held += i;
    return i;
}

unsigned int
virtq_iommu_n_held(const struct virtq *vq)
{
    return vq->held ? vq->held->n : 0;
}

struct vhost_pkt *
virtq_iommu_held_pkts(struct virtq *vq)
{
    return vq->held->pkts;
}

/* Frees the first 'n' held packets of 'vq', which an enqueue placed, and
 * the hold once it is empty: its bursts then take the usual path again. */
void
virtq_iommu_release_held(struct virtq *vq, unsigned int n)
{
    struct virtq_held *h = vq->held;

    for (unsigned int i = 0; i < n; i++) {
        h->bytes -= h->pkts[i].len;
        free(h->pkts[i].data);
    }
    h->n -= n;
    memmove(h->pkts, h->pkts + n, h->n * sizeof *h->pkts);
    if (!h->n) {
        free(h);
        vq->held = NULL;
    }
}

/* Frees every held packet of 'vq' and the hold: the vring is reset. */
void
virtq_iommu_free_held(struct virtq *vq)
{
    if (vq->held) {
        virtq_iommu_release_held(vq, vq->held->n);
    }
}
