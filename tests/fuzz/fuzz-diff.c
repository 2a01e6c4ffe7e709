/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: split against packed.  The same descriptor chains (direct
 * or through an indirect table, good or bad) are laid out in a split ring
 * and in a packed ring over the same guest memory, with the same features;
 * both rings must then give the same result:
 *
 *   TX (dequeue): the same packets, bytes and offload metadata, and the
 *   same drops by reason;
 *   RX (enqueue): the same packets taken, the same bytes written into the
 *   guest's buffers (unless writable buffers overlap), the same used
 *   lengths, the same drops by reason.
 *
 * Input:
 *     u8   feature bits (fuzz-ring.h; LOG, IN_ORDER, IOMMU and
 *          NO_HOST_OL ignored), bit 6 (IOMMU there): RX, bit 7: IOMMU
 *     u8   memory layout (fuzz-mem.h)
 *     u8   number of chains (1..16)
 *     per chain: u8 descriptors (1..4), u8 bit 0 indirect; then per
 *          descriptor u32 guest address (moved up by FUZZ_DIFF_BUF_GPA if
 *          below it), u16 length, u8 bit 0 writable
 *     u8   RX: enqueue argument (packet sizes, fuzz_ring_enqueue())
 *     with bit 7 (IOMMU): u32 offset, u16 length: a range invalidated;
 *          u32 offset, u16 length: a range mapped read-only (offsets
 *          from FUZZ_DIFF_BUF_GPA, modulo FUZZ_DIFF_IOMMU_SPAN)
 *     ...  guest memory contents from FUZZ_DIFF_BUF_GPA on
 *
 * With bit 7 both rings negotiate VIRTIO_F_ACCESS_PLATFORM and share one
 * IOTLB: guest memory mapped a page per entry at GPA +
 * FUZZ_RING_IOVA_OFF (so that a buffer crosses entries wherever it
 * crosses a page), with the two ranges above then invalidated (every
 * page entry they touch) and mapped read-only.  Every ring, table and
 * buffer address is then an IOVA; both rings must also miss at the same
 * IOVA and access, and count as many hits and denials.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz-input.h"
#include "fuzz-mem.h"
#include "fuzz-ring.h"
#include "guest-mem.h"
#include "util.h"
#include "virtio-ring-packed.h"
#include "virtio-ring.h"
#include "virtio.h"

#define FUZZ_DIFF_SIZE 64
#define FUZZ_DIFF_MAX_CHAINS 16
#define FUZZ_DIFF_MAX_DESCS 4
/* Split ring at FUZZ_RING_*_GPA; indirect tables and the packed ring: */
#define FUZZ_DIFF_SPLIT_IND_GPA 0x3000
#define FUZZ_DIFF_PACKED_IND_GPA 0x3400
#define FUZZ_DIFF_PACKED_GPA 0x4000
#define FUZZ_DIFF_DRIVER_GPA 0x5000
#define FUZZ_DIFF_DEVICE_GPA 0x5100
#define FUZZ_DIFF_BUF_GPA 0x6000
#define FUZZ_DIFF_F_IOMMU 0x80
#define FUZZ_DIFF_IOMMU_SPAN 0x40000

struct fuzz_diff_chain {
    unsigned int n;
    bool indirect;
    uint64_t gpa[FUZZ_DIFF_MAX_DESCS];
    uint16_t len[FUZZ_DIFF_MAX_DESCS];
    bool write[FUZZ_DIFF_MAX_DESCS];
};

/* Lays the chains out in the split ring and stores each chain's head in
 * 'heads'.  Addresses in descriptors are 'off' above the guest physical
 * ones (I/O virtual addresses, with an IOMMU). */
static void
fuzz_diff_layout_split__(struct fuzz_mem *fm,
                         const struct fuzz_diff_chain *chains, unsigned int n,
                         unsigned int *heads, uint64_t off)
{
    struct vring_desc *desc = fuzz_mem_va(fm, FUZZ_RING_DESC_GPA,
                                          16 * FUZZ_DIFF_SIZE);
    struct vring_avail *avail = fuzz_mem_va(fm, FUZZ_RING_AVAIL_GPA,
                                            6 + 2 * FUZZ_DIFF_SIZE);
    unsigned int next = 0;

    for (unsigned int c = 0; c < n; c++) {
        const struct fuzz_diff_chain *ch = &chains[c];
        uint64_t table = FUZZ_DIFF_SPLIT_IND_GPA + 64 * c;
        struct vring_desc *d = ch->indirect ? fuzz_mem_va(fm, table, 64)
                                            : &desc[next];
        uint16_t first = ch->indirect ? 0 : next;

        avail->ring[c] = next;
        heads[c] = next;
        for (unsigned int i = 0; i < ch->n; i++) {
            d[i] = (struct vring_desc) {
                .addr = ch->gpa[i] + off, .len = ch->len[i],
                .flags = (i + 1 < ch->n ? VRING_DESC_F_NEXT : 0)
                         | (ch->write[i] ? VRING_DESC_F_WRITE : 0),
                .next = first + i + 1,
            };
        }
        if (ch->indirect) {
            desc[next++] = (struct vring_desc) {
                .addr = table + off, .len = 16 * ch->n,
                .flags = VRING_DESC_F_INDIRECT,
            };
        } else {
            next += ch->n;
        }
    }
    avail->idx = n;
}

/* Lays the chains out in the packed ring from position 0 with wrap
 * counter 1, buffer id = chain number, addresses 'off' up as in the split
 * ring. */
static void
fuzz_diff_layout_packed__(struct fuzz_mem *fm,
                          const struct fuzz_diff_chain *chains,
                          unsigned int n, uint64_t off)
{
    struct vring_packed_desc *ring = fuzz_mem_va(fm, FUZZ_DIFF_PACKED_GPA,
                                                 16 * FUZZ_DIFF_SIZE);
    const uint16_t avail = VRING_PACKED_DESC_F_AVAIL;   /* Wrap 1. */
    unsigned int pos = 0;

    for (unsigned int c = 0; c < n; c++) {
        const struct fuzz_diff_chain *ch = &chains[c];
        uint64_t table = FUZZ_DIFF_PACKED_IND_GPA + 64 * c;

        if (ch->indirect) {
            struct vring_packed_desc *t = fuzz_mem_va(fm, table, 64);

            for (unsigned int i = 0; i < ch->n; i++) {
                t[i] = (struct vring_packed_desc) {
                    .addr = ch->gpa[i] + off, .len = ch->len[i],
                    .flags = ch->write[i] ? VRING_DESC_F_WRITE : 0,
                };
            }
            ring[pos++] = (struct vring_packed_desc) {
                .addr = table + off, .len = 16 * ch->n, .id = c,
                .flags = avail | VRING_DESC_F_INDIRECT,
            };
            continue;
        }
        for (unsigned int i = 0; i < ch->n; i++) {
            ring[pos++] = (struct vring_packed_desc) {
                .addr = ch->gpa[i] + off, .len = ch->len[i], .id = c,
                .flags = avail
                         | (i + 1 < ch->n ? VRING_DESC_F_NEXT : 0)
                         | (ch->write[i] ? VRING_DESC_F_WRITE : 0),
            };
        }
    }
}

/* Fills 'iotlb' (see "IOMMU" at the top) from 'in'. */
static void
fuzz_diff_iotlb__(struct vhost_iotlb *iotlb, const struct fuzz_mem *fm,
                  struct fuzz_input *in)
{
    uint32_t hole = fuzz_input_u32(in) % FUZZ_DIFF_IOMMU_SPAN;
    uint16_t hole_len = fuzz_input_u16(in);
    uint32_t ro = fuzz_input_u32(in) % FUZZ_DIFF_IOMMU_SPAN;
    uint16_t ro_len = fuzz_input_u16(in);

    vhost_iotlb_init(iotlb, VHOST_IOTLB_MAX_ENTRIES);
    for (size_t i = 0; i < fm->n; i++) {
        const struct fuzz_mem_region *r = &fm->r[i];

        for (uint64_t at = 0; at < r->size; at += 4096) {
            struct vhost_iotlb_msg msg = {
                .iova = r->gpa + at + FUZZ_RING_IOVA_OFF,
                .size = MIN(4096, r->size - at), .uaddr = r->uva + at,
                .perm = VHOST_ACCESS_RW, .type = VHOST_IOTLB_UPDATE,
            };
            FUZZ_CHECK(!vhost_iotlb_apply(iotlb, &msg));
        }
    }

    struct vhost_iotlb_msg msg = {
        .iova = FUZZ_RING_IOVA_OFF + FUZZ_DIFF_BUF_GPA + hole,
        .size = hole_len, .type = VHOST_IOTLB_INVALIDATE,
    };
    FUZZ_CHECK(!vhost_iotlb_apply(iotlb, &msg));

    uint64_t gpa = FUZZ_DIFF_BUF_GPA + ro;
    for (size_t i = 0; i < fm->n; i++) {
        const struct fuzz_mem_region *r = &fm->r[i];

        if (ro_len && gpa - r->gpa < r->size) {
            msg = (struct vhost_iotlb_msg) {
                .iova = gpa + FUZZ_RING_IOVA_OFF,
                .size = MIN(ro_len, r->size - (gpa - r->gpa)),
                .uaddr = r->uva + (gpa - r->gpa),
                .perm = VHOST_ACCESS_RO, .type = VHOST_IOTLB_UPDATE,
            };
            FUZZ_CHECK(!vhost_iotlb_apply(iotlb, &msg));
        }
    }
}

/* Both rings stopped at the same IOVA for want of a translation, or
 * neither did, and they counted as many hits and denials. */
static void
fuzz_diff_check_iommu__(const struct virtq *s, const struct virtq_ctx *cs,
                        const struct virtq *p, const struct virtq_ctx *cp)
{
    if (getenv("FUZZ_VERBOSE")) {
        fprintf(stderr, "split: miss %d at %#"PRIx64", %"PRIu64" hits, "
                "%"PRIu64" denied; packed: miss %d at %#"PRIx64", %"PRIu64
                " hits, %"PRIu64" denied\n", cs->miss, cs->miss_iova,
                s->stats.iotlb_hits, s->stats.iotlb_denied, cp->miss,
                cp->miss_iova, p->stats.iotlb_hits, p->stats.iotlb_denied);
    }
    FUZZ_CHECK(cs->miss == cp->miss);
    FUZZ_CHECK(!cs->miss || (cs->miss_iova == cp->miss_iova
                             && cs->miss_perm == cp->miss_perm));
    FUZZ_CHECK(s->stats.iotlb_hits == p->stats.iotlb_hits);
    FUZZ_CHECK(s->stats.iotlb_denied == p->stats.iotlb_denied);
}

/* Copies out every guest byte from FUZZ_DIFF_BUF_GPA on, or back in. */
static size_t
fuzz_diff_snapshot__(struct fuzz_mem *fm, uint8_t *buf, bool restore)
{
    size_t at = 0;

    for (size_t i = 0; i < fm->n; i++) {
        struct fuzz_mem_region *r = &fm->r[i];
        uint64_t skip = r->gpa < FUZZ_DIFF_BUF_GPA
                        ? MIN(FUZZ_DIFF_BUF_GPA - r->gpa, r->size) : 0;

        if (restore) {
            memcpy(r->va + skip, buf + at, r->size - skip);
        } else {
            memcpy(buf + at, r->va + skip, r->size - skip);
        }
        at += r->size - skip;
    }
    return at;
}

/* The first 'n' used entries, in order, as (chain number, length):
 * 'starts' maps a split head or a packed ring position to its chain.
 * The order is the device's: a dropped chain may be returned before the
 * chains of the packet around it.  Packed (§2.8.7): each used descriptor
 * goes where the previous one's chain ended. */
static void
fuzz_diff_used__(const struct virtq *vq, const unsigned int *heads,
                 const struct fuzz_diff_chain *chains, unsigned int n_chains,
                 uint32_t *out, unsigned int n)
{
    unsigned int pos = 0;

    for (unsigned int i = 0; i < n; i++) {
        uint32_t id, len;

        if (vq->packed) {
            const struct vring_packed_desc *d = vq->desc;
            id = d[pos].id;
            len = d[pos].len;
            FUZZ_CHECK(id < n_chains);
            pos += chains[id].indirect ? 1 : chains[id].n;
        } else {
            const struct vring_used *u = vq->used;
            unsigned int c;

            for (c = 0; c < n_chains && heads[c] != u->ring[i].id; c++) {
                continue;
            }
            FUZZ_CHECK(c < n_chains);
            id = c;
            len = u->ring[i].len;
        }
        out[2 * i] = id;
        out[2 * i + 1] = len;
    }
}

/* The same chains are dropped.  Only the total is compared: for a chain
 * with two faults (say a writable descriptor on TX that also points
 * outside guest memory) the split walker reports the direction and the
 * packed walker the address, since they check in a different order. */
static void
fuzz_diff_check_drops__(const struct virtq *s, const struct virtq *p)
{
    uint64_t ts = 0, tp = 0;

    for (int i = 0; i < VHOST_N_DROP_REASONS; i++) {
        if (s->stats.drops[i] != p->stats.drops[i]
            && getenv("FUZZ_VERBOSE")) {
            fprintf(stderr, "drops for \"%s\": split %"PRIu64", packed "
                    "%"PRIu64"\n", vhost_drop_reason_to_string(i),
                    s->stats.drops[i], p->stats.drops[i]);
        }
        ts += s->stats.drops[i];
        tp += p->stats.drops[i];
    }
    FUZZ_CHECK(ts == tp);
}

/* Whether two of the chains' device-writable buffers overlap: the bytes
 * there then depend on the order in which a ring writes its packets and
 * headers, which the two layouts need not share. */
static bool
fuzz_diff_writes_overlap__(const struct fuzz_diff_chain *chains,
                           unsigned int n)
{
    for (unsigned int c = 0; c < n; c++) {
        for (unsigned int i = 0; i < chains[c].n; i++) {
            if (!chains[c].write[i]) {
                continue;
            }
            uint64_t a = chains[c].gpa[i], a_end = a + chains[c].len[i];
            for (unsigned int d = c; d < n; d++) {
                for (unsigned int j = d == c ? i + 1 : 0; j < chains[d].n;
                     j++) {
                    uint64_t b = chains[d].gpa[j];
                    if (chains[d].write[j]
                        && a < b + chains[d].len[j] && b < a_end) {
                        return true;
                    }
                }
            }
        }
    }
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t before[0x40000], after[0x40000];
    struct fuzz_input in = FUZZ_INPUT_INIT(data, size);
    struct fuzz_diff_chain chains[FUZZ_DIFF_MAX_CHAINS];
    unsigned int heads[FUZZ_DIFF_MAX_CHAINS];
    struct virtq split, packed;
    struct vhost_iotlb iotlb;
    struct fuzz_mem fm;

    uint8_t bits = fuzz_input_u8(&in);
    uint8_t layout = fuzz_input_u8(&in);
    unsigned int n = fuzz_input_u8(&in) % FUZZ_DIFF_MAX_CHAINS + 1;
    bool rx = bits & 0x40;
    bool iommu = bits & FUZZ_DIFF_F_IOMMU;

    memset(chains, 0, sizeof chains);
    for (unsigned int c = 0; c < n; c++) {
        chains[c].n = fuzz_input_u8(&in) % FUZZ_DIFF_MAX_DESCS + 1;
        chains[c].indirect = fuzz_input_u8(&in) & 1;
        for (unsigned int i = 0; i < chains[c].n; i++) {
            /* Buffers below FUZZ_DIFF_BUF_GPA would hold the rings,
             * which the two layouts write differently. */
            chains[c].gpa[i] = fuzz_input_u32(&in);
            if (chains[c].gpa[i] < FUZZ_DIFF_BUF_GPA) {
                chains[c].gpa[i] += FUZZ_DIFF_BUF_GPA;
            }
            chains[c].len[i] = fuzz_input_u16(&in);
            chains[c].write[i] = fuzz_input_u8(&in) & 1;
        }
    }
    uint8_t enq_arg = fuzz_input_u8(&in);
    if (!rx) {
        /* virtq-packed.c checks the direction of indirect entries on RX
         * only (DPDK 22.11's virtio-user marks the header entry of its TX
         * tables device-writable); the split ring checks both ways.  Keep
         * to what both accept. */
        for (unsigned int c = 0; c < n; c++) {
            if (chains[c].indirect) {
                memset(chains[c].write, 0, sizeof chains[c].write);
            }
        }
    }
    if (getenv("FUZZ_VERBOSE")) {
        for (unsigned int c = 0; c < n; c++) {
            fprintf(stderr, "chain %u:%s", c,
                    chains[c].indirect ? " indirect" : "");
            for (unsigned int i = 0; i < chains[c].n; i++) {
                fprintf(stderr, " %#"PRIx64"/%u%s", chains[c].gpa[i],
                        chains[c].len[i], chains[c].write[i] ? "w" : "");
            }
            fprintf(stderr, "\n");
        }
    }

    bits &= ~(FUZZ_RING_F_LOG | FUZZ_RING_F_IN_ORDER | FUZZ_RING_F_IOMMU
              | FUZZ_RING_F_NO_HOST_OL | FUZZ_DIFF_F_IOMMU);
    uint64_t features = iommu ? FEATURE_BIT(VIRTIO_F_ACCESS_PLATFORM) : 0;
    uint64_t off = iommu ? FUZZ_RING_IOVA_OFF : 0;
    const struct vhost_iotlb *tlb = iommu ? &iotlb : NULL;
    fuzz_mem_build(&fm, layout);
    if (iommu) {
        fuzz_diff_iotlb__(&iotlb, &fm, &in);
    }
    fuzz_mem_fill(&fm, FUZZ_DIFF_BUF_GPA, &in);
    fuzz_diff_layout_split__(&fm, chains, n, heads, off);
    fuzz_diff_layout_packed__(&fm, chains, n, off);
    FUZZ_CHECK(fuzz_ring_vq_init(&split, &fm,
                                 fuzz_ring_features(bits, false) | features,
                                 FUZZ_DIFF_SIZE, 0, FUZZ_RING_DESC_GPA + off,
                                 FUZZ_RING_AVAIL_GPA + off,
                                 FUZZ_RING_USED_GPA + off, tlb));
    FUZZ_CHECK(fuzz_ring_vq_init(&packed, &fm,
                                 fuzz_ring_features(bits, true) | features,
                                 FUZZ_DIFF_SIZE, 0x8000,
                                 FUZZ_DIFF_PACKED_GPA + off,
                                 FUZZ_DIFF_DRIVER_GPA + off,
                                 FUZZ_DIFF_DEVICE_GPA + off, tlb));

    struct virtq_ctx ctx = { .mem = fm.gm, .iotlb = tlb };
    struct virtq_ctx ctx_p = ctx;
    if (!rx) {
        struct vhost_pkt ps[VHOST_MAX_BURST], pp[VHOST_MAX_BURST];

        memset(ps, 0, sizeof ps);
        memset(pp, 0, sizeof pp);
        unsigned int ns = fuzz_ring_dequeue(&split, &ctx, ps, VHOST_MAX_BURST);
        unsigned int np = fuzz_ring_dequeue(&packed, &ctx_p, pp,
                                            VHOST_MAX_BURST);
        FUZZ_CHECK(ns == np);
        for (unsigned int i = 0; i < ns; i++) {
            FUZZ_CHECK(ps[i].len == pp[i].len);
            FUZZ_CHECK(!memcmp(ps[i].data, pp[i].data, ps[i].len));
            FUZZ_CHECK(!memcmp(&ps[i].ol, &pp[i].ol, sizeof ps[i].ol));
        }
        fuzz_ring_free_pkts(ps, VHOST_MAX_BURST);
        fuzz_ring_free_pkts(pp, VHOST_MAX_BURST);
    } else {
        uint32_t ls[2 * FUZZ_DIFF_MAX_CHAINS], lp[2 * FUZZ_DIFF_MAX_CHAINS];

        size_t len = fuzz_diff_snapshot__(&fm, before, false);
        unsigned int ns = fuzz_ring_enqueue(&split, &ctx, enq_arg % 8 + 1,
                                            enq_arg);
        fuzz_diff_snapshot__(&fm, after, false);
        fuzz_diff_snapshot__(&fm, before, true);
        unsigned int np = fuzz_ring_enqueue(&packed, &ctx_p, enq_arg % 8 + 1,
                                            enq_arg);
        FUZZ_CHECK(ns == np);
        fuzz_diff_snapshot__(&fm, before, false);
        FUZZ_CHECK(!memcmp(before, after, len)
                   || fuzz_diff_writes_overlap__(chains, n));

        /* Used entries: as many, for the same chains in the same order,
         * with the same lengths. */
        unsigned int used = ((const struct vring_used *) split.used)->idx;
        FUZZ_CHECK(used <= n);
        fuzz_diff_used__(&split, heads, chains, n, ls, used);
        fuzz_diff_used__(&packed, heads, chains, n, lp, used);
        if (getenv("FUZZ_VERBOSE")) {
            for (unsigned int i = 0; i < used; i++) {
                fprintf(stderr, "used %u: split chain %"PRIu32" len %"PRIu32
                        ", packed chain %"PRIu32" len %"PRIu32"\n", i,
                        ls[2 * i], ls[2 * i + 1], lp[2 * i], lp[2 * i + 1]);
            }
        }
        FUZZ_CHECK(!memcmp(ls, lp, 2 * used * sizeof ls[0]));
    }
    fuzz_diff_check_drops__(&split, &packed);
    FUZZ_CHECK(split.stats.packets == packed.stats.packets);
    FUZZ_CHECK(split.stats.bytes == packed.stats.bytes);
    fuzz_diff_check_iommu__(&split, &ctx, &packed, &ctx_p);
    free(split.id_gen);             /* The packed ring's buffer-id table. */
    free(packed.id_gen);
    if (iommu) {
        vhost_iotlb_destroy(&iotlb);
    }
    fuzz_mem_destroy(&fm);
    return 0;
}

/* Seeds. */

/* With FUZZ_DIFF_F_IOMMU: the ranges invalidated and mapped read-only,
 * as offsets from FUZZ_DIFF_BUF_GPA. */
struct fuzz_diff_iommu_seed {
    uint32_t hole;
    uint16_t hole_len;
    uint32_t ro;
    uint16_t ro_len;
};

static void
fuzz_diff_put__(struct fuzz_input_buf *b, uint8_t bits, uint8_t layout,
                const struct fuzz_diff_chain *chains, unsigned int n,
                uint8_t enq_arg, const struct fuzz_diff_iommu_seed *iommu)
{
    b->n = 0;
    fuzz_input_put_u8(b, bits);
    fuzz_input_put_u8(b, layout);
    fuzz_input_put_u8(b, n - 1);
    for (unsigned int c = 0; c < n; c++) {
        fuzz_input_put_u8(b, chains[c].n - 1);
        fuzz_input_put_u8(b, chains[c].indirect);
        for (unsigned int i = 0; i < chains[c].n; i++) {
            uint32_t gpa = chains[c].gpa[i];

            fuzz_input_put(b, &gpa, sizeof gpa);
            fuzz_input_put_u16(b, chains[c].len[i]);
            fuzz_input_put_u8(b, chains[c].write[i]);
        }
    }
    fuzz_input_put_u8(b, enq_arg);
    if (bits & FUZZ_DIFF_F_IOMMU) {
        fuzz_input_put(b, &iommu->hole, sizeof iommu->hole);
        fuzz_input_put_u16(b, iommu->hole_len);
        fuzz_input_put(b, &iommu->ro, sizeof iommu->ro);
        fuzz_input_put_u16(b, iommu->ro_len);
    }
    for (unsigned int i = 0; i < 256; i++) {
        fuzz_input_put_u8(b, i < 12 ? 0 : i);
    }
}

void
fuzz_target_seeds(fuzz_emit_fn *emit)
{
    static struct fuzz_input_buf b;
    const uint8_t all = FUZZ_RING_F_MRG | FUZZ_RING_F_V1
                        | FUZZ_RING_F_INDIRECT | FUZZ_RING_F_EVENT_IDX;
    const struct fuzz_diff_chain tx[] = {
        { 1, false, { 0x6000 }, { 100 }, { false } },
        { 2, false, { 0x6000, 0x600c }, { 12, 88 }, { false } },
        { 3, true, { 0x6000, 0x6010, 0x6020 }, { 16, 16, 32 }, { false } },
        { 1, false, { 0x6000 }, { 8 }, { false } },                   /* Short. */
        { 2, true, { 0x6000, 0x100000 }, { 12, 50 }, { false } },     /* Bad addr. */
        { 1, false, { 0x6000 }, { 64 }, { true } },          /* Writable. */
    };
    const struct fuzz_diff_chain straddle[] = {
        { 1, false, { 0x1ffc0 }, { 0x100 }, { false } },
        { 2, true, { 0x6000, 0x17ff0 }, { 12, 0x40 }, { false } },   /* Gap. */
    };
    const struct fuzz_diff_chain rx_chains[] = {
        { 1, false, { 0x6000 }, { 0x800 }, { true } },
        { 2, false, { 0x6800, 0x680c }, { 12, 0x7f4 }, { true, true } },
        { 2, true, { 0x7000, 0x8000 }, { 0x800, 0x800 }, { true, true } },
        { 1, false, { 0x9000 }, { 0x800 }, { false } },      /* Read-only. */
        { 1, false, { 0xa000 }, { 0x800 }, { true } },
    };

    /* With an IOMMU: TX buffers across page entries, the indirect
     * chain's last one running into the page unmapped; RX with a
     * read-only page (the indirect chain's first buffer) and the last
     * chain's page unmapped. */
    const struct fuzz_diff_chain tx_pages[] = {
        { 1, false, { 0x6000 }, { 100 }, { false } },
        { 2, false, { 0x6ff0, 0x8000 }, { 0x20, 88 }, { false } },
        { 3, true, { 0x8000, 0x9000, 0x9ff8 }, { 16, 16, 32 }, { false } },
        { 1, false, { 0xa000 }, { 100 }, { false } },            /* Miss. */
        { 1, false, { 0x6000 }, { 100 }, { false } },
    };

    fuzz_diff_put__(&b, all, 0, tx, ARRAY_SIZE(tx), 0, NULL);
    emit(b.data, b.n, "tx-mix");
    fuzz_diff_put__(&b, FUZZ_RING_F_V1, 1, straddle, ARRAY_SIZE(straddle), 0,
                    NULL);
    emit(b.data, b.n, "tx-straddle-noindirect");
    fuzz_diff_put__(&b, all | 0x40, 0, rx_chains, ARRAY_SIZE(rx_chains), 12,
                    NULL);
    emit(b.data, b.n, "rx-mrg");
    fuzz_diff_put__(&b, FUZZ_RING_F_INDIRECT | 0x40, 1, rx_chains,
                    ARRAY_SIZE(rx_chains), 5, NULL);
    emit(b.data, b.n, "rx-nomrg-legacy");
    fuzz_diff_put__(&b, all | FUZZ_DIFF_F_IOMMU, 0, tx_pages,
                    ARRAY_SIZE(tx_pages), 0,
                    &(struct fuzz_diff_iommu_seed) { 0x4000, 1, 0x1000,
                                                     0x1000 });
    emit(b.data, b.n, "iommu-tx-pages-miss");
    fuzz_diff_put__(&b, all | 0x40 | FUZZ_DIFF_F_IOMMU, 0, rx_chains,
                    ARRAY_SIZE(rx_chains), 12,
                    &(struct fuzz_diff_iommu_seed) { 0x4000, 0x10, 0x1000,
                                                     0x1000 });
    emit(b.data, b.n, "iommu-rx-mrg-denied-miss");
}
