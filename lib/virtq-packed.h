/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The packed virtqueue data path (VIRTIO 1.2 §2.8): burst dequeue from the
 * guest's TX ring and burst enqueue into its RX ring, behind the same
 * burst API and statistics as the split ring (virtq-split.h).
 *
 * Usage: virtq_configure() calls virtq_packed_select() when
 * VIRTIO_F_RING_PACKED is negotiated.
 *
 * Simple descriptors (single, not indirect, in one region) are taken four
 * at a time, one cache line of the ring; anything else goes one chain at a
 * time.  Used descriptors are written back once per burst, with the first
 * one's flags written last, after the burst's one release barrier.
 *
 * Trust model: as the split ring.  Also: a descriptor whose flags do not
 * match the wrap counter is not available; a chain that never ends or
 * wraps the ring more than once is a loop; a buffer id at or above the
 * queue size is dropped.
 */

#ifndef OVS_VHOST_VIRTQ_PACKED_H
#define OVS_VHOST_VIRTQ_PACKED_H 1

#include <stdbool.h>

struct virtq;

void virtq_packed_select(struct virtq *, bool mrg_rxbuf, bool event_idx,
                         bool in_order, bool host_offloads,
                         bool iommu);

struct virtq_iommu_ahead;
void virtq_packed_look_ahead(struct virtq *, struct virtq_iommu_ahead *);

#endif /* virtq-packed.h */
