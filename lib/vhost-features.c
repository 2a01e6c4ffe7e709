/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Feature sets the engine offers, and their names for status displays.
 */

#include <config.h>

#include <stdio.h>
#include <string.h>
#include "ovs-vhost/vhost.h"
#include "util.h"
#include "vhost-user-msg.h"
#include "virtio.h"

/* Returns the virtio features a port offers unless its embedder says
 * otherwise: what the engine implements and every embedder can live with.
 * Checksum and segmentation offloads (vhost_offload_features()) are left
 * to embedders that handle partial checksums and large frames.
 *
 * The packed ring is offered as DPDK's vhost library offers it: the
 * frontend decides (QEMU negotiates it only with packed=on, DPDK's
 * virtio-user only with packed_vq=1). */
uint64_t
vhost_default_features(void)
{
    return FEATURE_BIT(VIRTIO_F_VERSION_1)
           | FEATURE_BIT(VIRTIO_F_ANY_LAYOUT)
           | FEATURE_BIT(VIRTIO_NET_F_MRG_RXBUF)
           | FEATURE_BIT(VIRTIO_NET_F_MQ)
           | FEATURE_BIT(VIRTIO_RING_F_INDIRECT_DESC)
           | FEATURE_BIT(VIRTIO_RING_F_EVENT_IDX)
           | FEATURE_BIT(VIRTIO_F_RING_PACKED)
           | FEATURE_BIT(VIRTIO_F_IN_ORDER)
           | FEATURE_BIT(VHOST_F_LOG_ALL)
           | FEATURE_BIT(VIRTIO_NET_F_MTU)
           | FEATURE_BIT(VIRTIO_NET_F_STATUS)
           | FEATURE_BIT(VIRTIO_NET_F_GUEST_ANNOUNCE)
           | FEATURE_BIT(VHOST_USER_F_PROTOCOL_FEATURES);
}

/* Returns the checksum and segmentation offload features the engine can
 * carry in struct vhost_offload. */
uint64_t
vhost_offload_features(void)
{
    return FEATURE_BIT(VIRTIO_NET_F_CSUM)
           | FEATURE_BIT(VIRTIO_NET_F_GUEST_CSUM)
           | FEATURE_BIT(VIRTIO_NET_F_HOST_TSO4)
           | FEATURE_BIT(VIRTIO_NET_F_HOST_TSO6)
           | FEATURE_BIT(VIRTIO_NET_F_GUEST_TSO4)
           | FEATURE_BIT(VIRTIO_NET_F_GUEST_TSO6);
}

/* Returns the vhost-user protocol features the engine implements. */
uint64_t
vhost_supported_protocol_features(void)
{
    return FEATURE_BIT(VHOST_USER_PROTOCOL_F_MQ)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_LOG_SHMFD)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_RARP)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_REPLY_ACK)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_NET_MTU)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_BACKEND_REQ)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_STATUS)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIG)
           | FEATURE_BIT(VHOST_USER_PROTOCOL_F_PAGEFAULT);
}

/* Returns the protocol features a port offers unless its embedder says
 * otherwise: all of vhost_supported_protocol_features() but CONFIG.  A
 * frontend that is offered CONFIG and has no use for it complains: QEMU's
 * virtio-net reads no config space from its backend and warns on every
 * start ("vhost-user backend supports VHOST_USER_PROTOCOL_F_CONFIG but
 * QEMU does not").  An embedder that wants its MTU in the config space
 * (vhost_port_set_mtu()) adds it.  PAGEFAULT (postcopy migration) is left
 * out too, as OVS-DPDK leaves it to vhost-postcopy-support: a frontend
 * that negotiates it may hold our threads on page faults, and locked
 * memory (mlockall(MCL_FUTURE)) faults every page in at mmap() time, which
 * defeats it. */
uint64_t
vhost_default_protocol_features(void)
{
    return vhost_supported_protocol_features()
           & ~(FEATURE_BIT(VHOST_USER_PROTOCOL_F_CONFIG)
               | FEATURE_BIT(VHOST_USER_PROTOCOL_F_PAGEFAULT));
}

char *
vhost_features_to_string(uint64_t features, char *buf, size_t size)
{
    static const struct {
        unsigned int bit;
        const char *name;
    } names[] = {
        { VIRTIO_NET_F_CSUM, "csum" },
        { VIRTIO_NET_F_GUEST_CSUM, "guest_csum" },
        { VIRTIO_NET_F_CTRL_GUEST_OFFLOADS, "ctrl_guest_offloads" },
        { VIRTIO_NET_F_MTU, "mtu" },
        { VIRTIO_NET_F_MAC, "mac" },
        { VIRTIO_NET_F_GUEST_TSO4, "guest_tso4" },
        { VIRTIO_NET_F_GUEST_TSO6, "guest_tso6" },
        { VIRTIO_NET_F_GUEST_ECN, "guest_ecn" },
        { VIRTIO_NET_F_GUEST_UFO, "guest_ufo" },
        { VIRTIO_NET_F_HOST_TSO4, "host_tso4" },
        { VIRTIO_NET_F_HOST_TSO6, "host_tso6" },
        { VIRTIO_NET_F_HOST_ECN, "host_ecn" },
        { VIRTIO_NET_F_HOST_UFO, "host_ufo" },
        { VIRTIO_NET_F_MRG_RXBUF, "mrg_rxbuf" },
        { VIRTIO_NET_F_STATUS, "status" },
        { VIRTIO_NET_F_CTRL_VQ, "ctrl_vq" },
        { VIRTIO_NET_F_CTRL_RX, "ctrl_rx" },
        { VIRTIO_NET_F_CTRL_VLAN, "ctrl_vlan" },
        { VIRTIO_NET_F_GUEST_ANNOUNCE, "guest_announce" },
        { VIRTIO_NET_F_MQ, "mq" },
        { VIRTIO_NET_F_CTRL_MAC_ADDR, "ctrl_mac_addr" },
        { VIRTIO_F_NOTIFY_ON_EMPTY, "notify_on_empty" },
        { VHOST_F_LOG_ALL, "log_all" },
        { VIRTIO_F_ANY_LAYOUT, "any_layout" },
        { VIRTIO_RING_F_INDIRECT_DESC, "indirect_desc" },
        { VIRTIO_RING_F_EVENT_IDX, "event_idx" },
        { VHOST_USER_F_PROTOCOL_FEATURES, "protocol_features" },
        { VIRTIO_F_VERSION_1, "version_1" },
        { VIRTIO_F_ACCESS_PLATFORM, "access_platform" },
        { VIRTIO_F_RING_PACKED, "ring_packed" },
        { VIRTIO_F_IN_ORDER, "in_order" },
        { VIRTIO_F_ORDER_PLATFORM, "order_platform" },
        { VIRTIO_F_SR_IOV, "sr_iov" },
        { VIRTIO_F_NOTIFICATION_DATA, "notification_data" },
        { VIRTIO_F_RING_RESET, "ring_reset" },
    };
    size_t used = 0;

    if (!size) {
        return buf;
    }
    buf[0] = '\0';
    for (unsigned int bit = 0; bit < 64; bit++) {
        if (!(features & FEATURE_BIT(bit))) {
            continue;
        }

        const char *name = NULL;
        char unknown[16];
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
            if (names[i].bit == bit) {
                name = names[i].name;
                break;
            }
        }
        if (!name) {
            snprintf(unknown, sizeof unknown, "bit%u", bit);
            name = unknown;
        }
        int n = snprintf(buf + used, size - used, "%s%s", used ? " " : "",
                         name);
        if (n < 0 || (size_t) n >= size - used) {
            break;
        }
        used += n;
    }
    return buf;
}
