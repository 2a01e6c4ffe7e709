/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The split virtqueue's layout in guest memory (VIRTIO 1.2 §2.7), as the
 * guest writes it, and the event-index test (§2.7.10).
 *
 * Trust model: everything in these structures is written by the guest, and
 * can change under us at any time.  The data path reads each field once
 * into a local before it checks it.
 */

#ifndef OVS_VHOST_VIRTIO_RING_H
#define OVS_VHOST_VIRTIO_RING_H 1

#include <stdbool.h>
#include <stdint.h>
#include "util.h"

#define VRING_DESC_F_NEXT       1
#define VRING_DESC_F_WRITE      2
#define VRING_DESC_F_INDIRECT   4

#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY  1

struct vring_desc {
    uint64_t addr;              /* Guest physical. */
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};
BUILD_ASSERT_DECL(sizeof(struct vring_desc) == 16);

struct vring_avail {
    uint16_t flags;
    uint16_t idx;
    uint16_t ring[];            /* [size], then used_event. */
};

struct vring_used_elem {
    uint32_t id;
    uint32_t len;
};

struct vring_used {
    uint16_t flags;
    uint16_t idx;
    struct vring_used_elem ring[];  /* [size], then avail_event. */
};

/* §2.7.10: the driver wants a notification if 'event_idx' lies in
 * [old, new) of the used index, modulo 2^16. */
static inline bool
vring_need_event(uint16_t event_idx, uint16_t new_idx, uint16_t old)
{
    return (uint16_t) (new_idx - event_idx - 1) < (uint16_t) (new_idx - old);
}

#endif /* virtio-ring.h */
