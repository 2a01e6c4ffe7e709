/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The packed virtqueue's layout in guest memory (VIRTIO 1.2 §2.8): one
 * descriptor ring that driver and device both write, with avail/used flag
 * bits and wrap counters in place of indices, and two event suppression
 * structures.
 *
 * Trust model: the guest writes the descriptors and the driver event
 * suppression area at any time; the data path reads each once into a local
 * before checking it.
 */

#ifndef OVS_VHOST_VIRTIO_RING_PACKED_H
#define OVS_VHOST_VIRTIO_RING_PACKED_H 1

#include <stdbool.h>
#include <stdint.h>
#include "util.h"
#include "virtio-ring.h"

#define VRING_PACKED_DESC_F_AVAIL   (1u << 7)
#define VRING_PACKED_DESC_F_USED    (1u << 15)

/* Event suppression flags (§2.8.10). */
#define VRING_PACKED_EVENT_FLAG_ENABLE  0
#define VRING_PACKED_EVENT_FLAG_DISABLE 1
#define VRING_PACKED_EVENT_FLAG_DESC    2

/* struct pvirtq_desc (§2.8.13). */
struct vring_packed_desc {
    uint64_t addr;
    uint32_t len;
    uint16_t id;
    uint16_t flags;
};
BUILD_ASSERT_DECL(sizeof(struct vring_packed_desc) == 16);

/* struct pvirtq_event_suppress (§2.8.14). */
struct vring_packed_event {
    uint16_t off_wrap;          /* Offset in bits 0..14, wrap in bit 15. */
    uint16_t flags;             /* VRING_PACKED_EVENT_FLAG_*. */
};

/* §2.8.1: a descriptor is available when its AVAIL bit equals the wrap
 * counter of the ring position and its USED bit does not. */
static inline bool
vring_packed_desc_is_avail(uint16_t flags, bool wrap)
{
    return !!(flags & VRING_PACKED_DESC_F_AVAIL) == wrap
           && !!(flags & VRING_PACKED_DESC_F_USED) != wrap;
}

/* §2.8.5: the flags of a used descriptor written at a ring position of
 * wrap counter 'wrap': AVAIL and USED both equal to it, and WRITE if the
 * device wrote 'len' bytes into the buffer. */
static inline uint16_t
vring_packed_used_flags(bool wrap, uint32_t len)
{
    uint16_t flags = wrap ? VRING_PACKED_DESC_F_AVAIL
                            | VRING_PACKED_DESC_F_USED : 0;

    return len ? flags | VRING_DESC_F_WRITE : flags;
}

#endif /* virtio-ring-packed.h */
