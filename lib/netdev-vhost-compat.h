/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What differs between the Open vSwitch releases the provider builds
 * against (3.1, Debian 12; 3.5, Debian 13), in one place.  configure finds
 * each difference by compiling against the OVS tree it is given
 * (m4/ovs-vhost.m4, OVS_VHOST_CHECK_OVS_COMPAT) and passes it as a -D on
 * the provider's compile line; the provider's files call the helpers here
 * and hold no version tests of their own.
 *
 *   NETDEV_VHOST_OVS_VERSION      MAJOR * 100 + MINOR of the tree (301,
 *                                 305): for what OVS-DPDK shows, which is
 *                                 behaviour, not an interface to probe.
 *   NETDEV_VHOST_HAVE_DP_PACKET_CSUM_START
 *                                 OVS 3.3's checksum model: a partial
 *                                 checksum travels as csum_start and
 *                                 csum_offset in the packet and an "L4
 *                                 partial" mark, and OVS no longer keeps
 *                                 the pseudo-header sum in a packet whose
 *                                 checksum is offloaded (it changes
 *                                 addresses without updating it): whoever
 *                                 finishes the checksum writes it.
 *   NETDEV_VHOST_HAVE_DP_PACKET_TSO_SEGSZ
 *                                 OVS 3.3: a TSO packet carries its segment
 *                                 size, which OVS's software segmentation
 *                                 needs.
 *   NETDEV_VHOST_HAVE_DP_PACKET_TUNNEL_OL
 *                                 OVS 3.3: tunnel offloads; the checksum
 *                                 asked for is the inner packet's when the
 *                                 packet has inner headers.
 *   NETDEV_VHOST_HAVE_MEMORY_ALL_LOCKED
 *                                 OVS 3.4: --mlockall locks pages as they
 *                                 fault in (MCL_ONFAULT) where the kernel
 *                                 can, and memory_all_locked() says when
 *                                 it could not; OVS 3.1 has
 *                                 memory_locked(), every page locked.
 *
 * Thread-safety: the packet helpers touch only the packet they are given;
 * netdev_vhost_compat_memory_all_locked() reads a flag OVS sets once,
 * before its main loop starts.
 */

#ifndef NETDEV_VHOST_COMPAT_H
#define NETDEV_VHOST_COMPAT_H 1

#include "dp-packet.h"
#include "packets.h"
#include "csum.h"
#include "lib/util.h"          /* OVS's memory_locked(), not ours. */

#ifndef NETDEV_VHOST_OVS_VERSION
#error "NETDEV_VHOST_OVS_VERSION comes from configure (OVS_COMPAT_DEFS)"
#endif

/* Status: OVS-DPDK 3.3 and later show a vhost port's queue counts
 * ("n_rxq", "n_txq") and "userspace-tso" ("disabled" when userspace TSO
 * is on but the guest took no offloads). */
#define NETDEV_VHOST_STATUS_QUEUES (NETDEV_VHOST_OVS_VERSION >= 303)

/* Whether ovs-vswitchd's --mlockall locked every page of the process up
 * front, those it maps later included (MCL_CURRENT | MCL_FUTURE without
 * MCL_ONFAULT): each mmap() of guest memory then faults every page in at
 * once, before postcopy's userfaultfd is registered, so the pages still
 * on the source would read as zeros.  OVS-DPDK refuses
 * vhost-postcopy-support then.  OVS 3.1 always locks so; OVS 3.4 and
 * later lock pages as they fault in unless the kernel lacks MCL_ONFAULT
 * (Linux 4.4), which postcopy survives. */
static inline bool
netdev_vhost_compat_memory_all_locked(void)
{
#ifdef NETDEV_VHOST_HAVE_MEMORY_ALL_LOCKED
    return memory_all_locked();
#else
    return memory_locked();
#endif
}

/* Resets what a packet block recycled for a new guest packet may still
 * carry beyond the offload flags (dp_packet_reset_offload()), as
 * dp_packet_init__() would. */
static inline void
netdev_vhost_compat_reset_packet(struct dp_packet *b OVS_UNUSED)
{
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_CSUM_START
    b->csum_start = 0;
    b->csum_offset = 0;
#endif
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_TSO_SEGSZ
    dp_packet_set_tso_segsz(b, 0);
#endif
}

/* Records in 'b', received from a guest, that its L4 checksum is partial:
 * the guest left it for whoever sends the packet on, starting at
 * 'csum_start' and stored 'csum_offset' bytes after it (virtio 1.2
 * 5.1.6.2.1, VIRTIO_NET_HDR_F_NEEDS_CSUM).  OVS 3.1 knows this from the
 * TX checksum flags alone, which the caller sets either way. */
static inline void
netdev_vhost_compat_rx_csum_partial(struct dp_packet *b OVS_UNUSED,
                                    uint16_t csum_start OVS_UNUSED,
                                    uint16_t csum_offset OVS_UNUSED)
{
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_CSUM_START
    b->csum_start = csum_start;
    b->csum_offset = csum_offset;
    dp_packet_ol_set_l4_csum_partial(b);
#endif
}

/* Sets the TSO segment size of 'b', received from a guest, to 'segsz'
 * (the virtio-net header's gso_size). */
static inline void
netdev_vhost_compat_set_tso_segsz(struct dp_packet *b OVS_UNUSED,
                                  uint16_t segsz OVS_UNUSED)
{
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_TSO_SEGSZ
    dp_packet_set_tso_segsz(b, segsz);
#endif
}

/* Returns the TSO segment size OVS keeps in 'b', or 0 if this OVS keeps
 * none (the caller then derives it from the MTU, as OVS 3.1's own
 * netdev-linux does). */
static inline uint16_t
netdev_vhost_compat_get_tso_segsz(const struct dp_packet *b OVS_UNUSED)
{
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_TSO_SEGSZ
    return dp_packet_get_tso_segsz(b);
#else
    return 0;
#endif
}

/* The L3 and L4 headers whose checksum and segmentation the offload flags
 * of 'b' ask for: the inner ones of a tunnelled packet, else the outer
 * ones.  Either may be NULL. */
static inline void
netdev_vhost_compat_tx_headers(const struct dp_packet *b, const char **l3,
                               const char **l4)
{
    *l3 = dp_packet_l3(b);
    *l4 = dp_packet_l4(b);
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_TUNNEL_OL
    if (dp_packet_inner_l3(b) && dp_packet_inner_l4(b)) {
        *l3 = dp_packet_inner_l3(b);
        *l4 = dp_packet_inner_l4(b);
    }
#endif
}

/* Before a packet goes to a guest with VIRTIO_NET_HDR_F_NEEDS_CSUM:
 * stores the pseudo-header sum in the L4 checksum field at 'l4' +
 * 'csum_offset' (virtio 1.2 5.1.6.2: "the TCP checksum field in the
 * packet is set to the sum of the TCP pseudo header"), which OVS 3.3 and
 * later do not keep up to date in an offloaded packet.  'l3' is the IP
 * header, 'l3_len' bytes before 'l4'; the caller checked that the field
 * lies in the packet.  Returns false if 'l3' holds no whole IPv4 or IPv6
 * header.  OVS 3.1 keeps the field as the guest or OVS set it. */
static inline bool
netdev_vhost_compat_tx_pseudo_csum(const char *l3 OVS_UNUSED,
                                   size_t l3_len OVS_UNUSED,
                                   char *l4 OVS_UNUSED,
                                   uint16_t csum_offset OVS_UNUSED)
{
#ifdef NETDEV_VHOST_HAVE_DP_PACKET_CSUM_START
    uint8_t version = (uint8_t) l3[0] >> 4;
    uint32_t sum;

    if (version == 4 && l3_len >= IP_HEADER_LEN) {
        sum = packet_csum_pseudoheader((const struct ip_header *) l3);
    } else if (version == 6 && l3_len >= IPV6_HEADER_LEN) {
        sum = packet_csum_pseudoheader6(
            (const struct ovs_16aligned_ip6_hdr *) l3);
    } else {
        return false;
    }
    ovs_be16 csum = ~csum_finish(sum);
    memcpy(l4 + csum_offset, &csum, sizeof csum);
#endif
    return true;
}

#endif /* netdev-vhost-compat.h */
