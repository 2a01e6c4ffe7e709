/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path behind a vIOMMU: with VIRTIO_F_IOMMU_PLATFORM negotiated,
 * every address in a ring, a descriptor or an indirect table is an I/O
 * virtual address (IOVA).  It is translated through the device's IOTLB
 * (vhost-iotlb.h) to a frontend virtual address, then through the memory
 * table (guest-mem.h) to ours.
 *
 * Usage
 * =====
 *
 * The split and packed burst functions come in two copies of one inline
 * body, with a constant 'iommu' argument (virtq_split_select(),
 * virtq_packed_select()): without an IOMMU they translate guest physical
 * addresses with guest_mem_gpa_to_hva() as before, and no test for the
 * IOMMU runs per descriptor; with one, the walkers call
 * virtq_iommu_segs_add() and virtq_iommu_indirect_table() instead, and
 * the batch paths, which translate inline, are left out.
 *
 * A miss is not a drop.  A walk that meets an IOVA the IOTLB has no entry
 * for returns VIRTQ_WALK_MISS and records the IOVA in the burst's
 * virtq_ctx; the burst ends there, as for VIRTQ_WALK_BUDGET, the chain
 * still available; the caller (vhost-datapath.c) asks the frontend for
 * the translation with an IOTLB_MSG of type MISS on the backend channel,
 * and a later burst, once the update that answers it has come, takes the
 * chain.  Until then bursts end at once without walking the ring
 * (virtq_iommu_waiting(), counted in 'iotlb_waits'), and ask again only
 * after VIRTQ_IOMMU_MISS_RETRY_MS: a frontend that never answers stalls
 * that queue alone, and costs one message a second.  An update that does
 * not cover the IOVA asked for does not end the wait, so that a burst
 * never asks twice for one translation (QEMU logs a translation failure
 * for a late duplicate of a miss on a page the guest has unmapped
 * since).
 *
 * A miss toward the guest would otherwise be a drop: an enqueue is handed
 * packets that must go now or be dropped by the embedder.  So the packets
 * of an enqueue that stops at a miss are copied and held, in order, on
 * the vring (virtq_iommu_hold()), and go before any later packet once the
 * translation has come: at the next enqueue, or at the next dequeue of
 * the same queue pair, which the embedder's poll loop calls anyway
 * (vhost-datapath.c).  The hold is bounded; past it, packets are refused
 * as before, and the embedder counts its drops.
 *
 * Ask ahead
 * =========
 *
 * A guest whose IOMMU maps each buffer as it posts it and unmaps it when
 * the device has used it (Linux with iommu.strict=1) gives every buffer a
 * new IOVA: without more, each packet toward it costs one miss, and one
 * round trip through the frontend's main loop, one at a time (a QEMU
 * under TCG answers some 250 a second, and bulk UDP toward the guest
 * overflowed the hold).  So a burst that misses also looks at the chains
 * after the one that missed, up to VIRTQ_IOMMU_AHEAD_CHAINS of them, and
 * asks for the pages of their buffers that have no entry, up to
 * VIRTQ_IOMMU_AHEAD_PAGES (virtq_iommu_look_ahead(), counted in
 * 'iotlb_misses_ahead'): one round trip answers a batch.  Both directions
 * do it: a guest TX chain has a fresh IOVA as well, and is a packet that
 * waits.  A guest RX chain is only a buffer, and a lazy guest flushes its
 * whole IOTLB some 10 ms after an unmap, so that many of the translations
 * asked for ahead are thrown away unused (a lazy guest's bulk run had its
 * frontend answer 6282 misses ahead for 1106 packets).  Asking for no
 * more chains than twice the packets waiting was tried, and lost 7-16 of
 * 1000 datagrams toward lazy guests where asking for 32 lost none: after
 * a flush every buffer misses again, and the batch that one round trip
 * brings covers the packets that come before the next flush.
 *
 * The look-ahead only reads: descriptors in the ring (translated with
 * the ring, as a whole), never an indirect table (which has an IOVA of
 * its own: it asks for the table's page instead), every index checked as
 * the walkers check it, and no more than VIRTQ_IOMMU_AHEAD_WORK
 * descriptor reads and IOTLB lookups, whatever the ring holds.  A page is
 * not asked for if it translates, if this look-ahead or the burst's own
 * miss asks for it already, or if it was asked for ahead less than
 * VIRTQ_IOMMU_MISS_RETRY_MS ago with no update to cover it since (the
 * last VIRTQ_IOMMU_ASKED_MAX of them are kept).  A burst that then misses
 * on such a page does not ask again either (virtq_iommu_should_ask()): it
 * waits for the answer already on its way, as for its own miss.
 *
 * Ring addresses are translated by the control plane (virtq_map()), which
 * asks for a missing ring translation itself: a new ring waits, unmapped
 * and not ready, until its entries arrive (vhost_dev_iotlb_msg()).  A ring
 * that had its translation and lost it to an invalidation stays ready
 * ('iotlb_lost'): the next burst translates it again, or asks for it and
 * does nothing (vhost-datapath.c).
 *
 * Thread-safety
 * =============
 *
 * As for the rest of the data path: under the queue's access lock.  The
 * IOTLB changes only with every queue's lock held.
 *
 * Trust model
 * ===========
 *
 * The IOVAs come from the guest, the IOTLB entries from the frontend (on
 * the guest's vIOMMU's word).  An entry's frontend addresses are checked
 * against the memory table at each translation, piece by piece: a buffer
 * may cross IOTLB entries and memory regions, and each piece is bounded by
 * both.  A buffer whose entry lacks the access it needs (a device-writable
 * buffer in a read-only mapping) is dropped and counted ('iotlb_denied').
 */

#ifndef OVS_VHOST_VIRTQ_IOMMU_H
#define OVS_VHOST_VIRTQ_IOMMU_H 1

#include <stdbool.h>
#include <stdint.h>

struct guest_mem;
struct vhost_iotlb;
struct vhost_iotlb_msg;
struct vhost_pkt;
struct virtq;
struct virtq_ctx;
struct virtq_segs;

/* A walk that met an IOVA the IOTLB has no entry for: the chain stays
 * available, and the burst ends (virtq-segs.h has VIRTQ_WALK_BUDGET). */
#define VIRTQ_WALK_MISS (-4)

/* A miss asked for and not answered is asked for again after this long. */
#define VIRTQ_IOMMU_MISS_RETRY_MS 1000

int virtq_iommu_segs_add(struct virtq *, struct virtq_ctx *, uint64_t iova,
                         uint32_t len, bool write, struct virtq_segs *);
const void *virtq_iommu_indirect_table(struct virtq *, struct virtq_ctx *,
                                       uint64_t iova, uint32_t len,
                                       void **copyp, int *reasonp);
void *virtq_iommu_map_ring(const struct vhost_iotlb *,
                           const struct guest_mem *, uint64_t iova,
                           uint64_t len, uint8_t perm, uint64_t *gpap,
                           uint64_t *miss_iovap);
bool virtq_iommu_should_ask(struct virtq *, const struct virtq_ctx *,
                            long long int now_ms);
void virtq_iommu_note_asked(struct virtq *, uint64_t iova, uint8_t perm,
                            long long int now_ms);
bool virtq_iommu_waiting(struct virtq *);
bool virtq_iommu_asked_ahead(const struct virtq *, uint64_t iova, uint8_t perm,
                             long long int now_ms);
void virtq_iommu_answered(struct virtq *, const struct vhost_iotlb_msg *);

/* Ask ahead (see above). */
#define VIRTQ_IOMMU_AHEAD_CHAINS 32 /* Chains looked at, the missing one
                                     * included. */
#define VIRTQ_IOMMU_AHEAD_PAGES 32  /* Pages asked for, at most. */
#define VIRTQ_IOMMU_AHEAD_WORK 512  /* Descriptor reads and lookups. */
#define VIRTQ_IOMMU_ASKED_MAX 64    /* Pages asked ahead remembered. */
#define VIRTQ_IOMMU_PAGE 4096       /* The granule of the dedup: the
                                     * smallest IOMMU page. */

/* One look-ahead: what it may still do, and what it found to ask for. */
struct virtq_iommu_ahead {
    const struct virtq_ctx *ctx;    /* The burst that missed. */
    bool write;                     /* It was an enqueue (guest RX). */
    long long int now_ms;
    unsigned int work;              /* Reads and lookups left. */
    unsigned int n;                 /* Pages to ask for, in ring order: */
    uint64_t iova[VIRTQ_IOMMU_AHEAD_PAGES];     /* The first IOVA of each
                                                 * that a buffer uses. */
    uint8_t perm[VIRTQ_IOMMU_AHEAD_PAGES];
};

void virtq_iommu_look_ahead(struct virtq *, const struct virtq_ctx *,
                            bool write, long long int now_ms,
                            struct virtq_iommu_ahead *);
bool virtq_iommu_ahead_spend(struct virtq_iommu_ahead *);
bool virtq_iommu_ahead_buf(struct virtq *, struct virtq_iommu_ahead *,
                           uint64_t iova, uint64_t len, uint8_t perm);
void virtq_iommu_note_ahead(struct virtq *, uint64_t iova, uint8_t perm,
                            long long int now_ms);
void virtq_iommu_free_ahead(struct virtq *);

/* Packets held on a guest RX vring for want of a translation: at most
 * VIRTQ_HELD_MAX of them and VIRTQ_HELD_MAX_BYTES in all. */
#define VIRTQ_HELD_MAX 256
#define VIRTQ_HELD_MAX_BYTES (2u << 20)
unsigned int virtq_iommu_hold(struct virtq *, const struct vhost_pkt *,
                              unsigned int n);
unsigned int virtq_iommu_n_held(const struct virtq *);
struct vhost_pkt *virtq_iommu_held_pkts(struct virtq *);
void virtq_iommu_release_held(struct virtq *, unsigned int n);
void virtq_iommu_free_held(struct virtq *);
bool virtq_iommu_remap(struct virtq *, const struct guest_mem *);

#endif /* virtq-iommu.h */
