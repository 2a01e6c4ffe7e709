/*
 * The split virtqueue data path (VIRTIO 1.2 §2.7): burst dequeue from the
 * guest's TX ring and burst enqueue into its RX ring.
 *
 * Usage
 * =====
 *
 * virtq_configure() calls virtq_split_select() when features are
 * negotiated, which stores in the queue the burst functions specialised
 * for that combination (mergeable buffers, event index).  The public
 * vhost_dequeue_burst() and vhost_enqueue_burst() call them with the
 * queue's access lock held.
 *
 * A chain is walked once: each descriptor is copied into a local, checked
 * and translated, and what it describes becomes one or more segments (more
 * than one when it crosses a region boundary).  The copy then works from
 * the segments only, never from guest memory it already read.
 *
 * Trust model
 * ===========
 *
 * The rings and every buffer are the guest's.  A chain that breaks a rule
 * is dropped (returned as used with length 0) and counted by reason; an
 * avail index that runs ahead of the ring marks the queue broken.  Each
 * call handles at most VHOST_MAX_BURST chains.
 */

#ifndef OVS_VHOST_VIRTQ_SPLIT_H
#define OVS_VHOST_VIRTQ_SPLIT_H 1

#include <stdbool.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"

struct guest_mem;
struct virtq;

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

void virtq_split_select(struct virtq *, bool mrg_rxbuf, bool event_idx);

#endif /* virtq-split.h */
