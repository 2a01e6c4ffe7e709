/* SPDX-License-Identifier: Apache-2.0 */
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
#include "virtq-segs.h"

struct guest_mem;
struct virtq;

void virtq_split_select(struct virtq *, bool mrg_rxbuf, bool event_idx,
                        bool in_order, bool host_offloads,
                        bool iommu);

struct virtq_iommu_ahead;
void virtq_split_look_ahead(struct virtq *, struct virtq_iommu_ahead *);

#endif /* virtq-split.h */
