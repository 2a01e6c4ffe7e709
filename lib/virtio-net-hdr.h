/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-net header (VIRTIO 1.2 §5.1.6) that precedes every packet in
 * a virtqueue, and its translation to and from struct vhost_offload.
 *
 * Trust model: on dequeue the header is the guest's.  It is copied once
 * into a local, and virtio_net_hdr_parse() checks csum_start and
 * csum_offset against the packet length before the embedder sees them
 * (CVE-2024-11614 read them unchecked).
 */

#ifndef OVS_VHOST_VIRTIO_NET_HDR_H
#define OVS_VHOST_VIRTIO_NET_HDR_H 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ovs-vhost/vhost.h"
#include "util.h"

#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_F_DATA_VALID 2

#define VIRTIO_NET_HDR_GSO_NONE 0
#define VIRTIO_NET_HDR_GSO_TCPV4 1
#define VIRTIO_NET_HDR_GSO_UDP 3
#define VIRTIO_NET_HDR_GSO_TCPV6 4
#define VIRTIO_NET_HDR_GSO_ECN 0x80

struct virtio_net_hdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;
    uint16_t gso_size;
    uint16_t csum_start;
    uint16_t csum_offset;
    uint16_t num_buffers;       /* With MRG_RXBUF or VERSION_1 only. */
};
BUILD_ASSERT_DECL(sizeof(struct virtio_net_hdr) == 12);

/* struct vhost_offload has the layout of the header's first 10 bytes,
 * field for field, and the header's flag and GSO values: enqueue copies
 * its first 8 bytes into the guest's header unchanged (virtq_hdr_store()),
 * and the parse and build below copy the fields one for one. */
#define VIRTIO_NET_HDR_SAME_FIELD(F)                                     \
    BUILD_ASSERT_DECL(offsetof(struct vhost_offload, F)                 \
                      == offsetof(struct virtio_net_hdr, F)             \
                      && sizeof(((struct vhost_offload *) 0)->F)        \
                         == sizeof(((struct virtio_net_hdr *) 0)->F))
VIRTIO_NET_HDR_SAME_FIELD(flags);
VIRTIO_NET_HDR_SAME_FIELD(gso_type);
VIRTIO_NET_HDR_SAME_FIELD(hdr_len);
VIRTIO_NET_HDR_SAME_FIELD(gso_size);
VIRTIO_NET_HDR_SAME_FIELD(csum_start);
VIRTIO_NET_HDR_SAME_FIELD(csum_offset);
BUILD_ASSERT_DECL(VHOST_OL_NEEDS_CSUM == VIRTIO_NET_HDR_F_NEEDS_CSUM
                  && VHOST_OL_DATA_VALID == VIRTIO_NET_HDR_F_DATA_VALID);
BUILD_ASSERT_DECL(VHOST_GSO_NONE == VIRTIO_NET_HDR_GSO_NONE
                  && VHOST_GSO_TCPV4 == VIRTIO_NET_HDR_GSO_TCPV4
                  && VHOST_GSO_UDP == VIRTIO_NET_HDR_GSO_UDP
                  && VHOST_GSO_TCPV6 == VIRTIO_NET_HDR_GSO_TCPV6
                  && VHOST_GSO_ECN == VIRTIO_NET_HDR_GSO_ECN);

#define VIRTIO_NET_HDR_LEN_LEGACY 10
#define VIRTIO_NET_HDR_LEN 12

/* Fills 'ol' from 'hdr' for a packet of 'pkt_len' bytes.  Returns false if
 * the header asks for a checksum outside the packet. */
static inline bool
virtio_net_hdr_parse(const struct virtio_net_hdr *hdr, uint32_t pkt_len,
                     struct vhost_offload *ol)
{
    ol->flags = hdr->flags & (VIRTIO_NET_HDR_F_NEEDS_CSUM
                              | VIRTIO_NET_HDR_F_DATA_VALID);
    ol->gso_type = hdr->gso_type;
    ol->hdr_len = hdr->hdr_len;
    ol->gso_size = hdr->gso_size;
    ol->csum_start = hdr->csum_start;
    ol->csum_offset = hdr->csum_offset;

    /* The 16-bit checksum goes at csum_start + csum_offset: both bytes must
     * be inside the packet.  The sum is 32-bit, so it cannot wrap. */
    return !(ol->flags & VHOST_OL_NEEDS_CSUM)
           || (uint32_t) ol->csum_start + ol->csum_offset + 2 <= pkt_len;
}

/* Fills 'hdr' from 'ol', with 'num_buffers'. */
static inline void
virtio_net_hdr_build(struct virtio_net_hdr *hdr, const struct vhost_offload *ol,
                     uint16_t num_buffers)
{
    hdr->flags = ol->flags;
    hdr->gso_type = ol->gso_type;
    hdr->hdr_len = ol->hdr_len;
    hdr->gso_size = ol->gso_size;
    hdr->csum_start = ol->csum_start;
    hdr->csum_offset = ol->csum_offset;
    hdr->num_buffers = num_buffers;
}

#endif /* virtio-net-hdr.h */
