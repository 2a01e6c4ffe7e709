/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtio and virtio-net constants (VIRTIO 1.2 §6 reserved feature bits,
 * §5.1.3 virtio-net feature bits, §2.7 split ring flags).  Defined here so
 * that the engine needs no kernel or DPDK headers.
 */

#ifndef OVS_VHOST_VIRTIO_H
#define OVS_VHOST_VIRTIO_H 1

/* virtio-net device features (VIRTIO 1.2 §5.1.3). */
#define VIRTIO_NET_F_CSUM               0
#define VIRTIO_NET_F_GUEST_CSUM         1
#define VIRTIO_NET_F_CTRL_GUEST_OFFLOADS 2
#define VIRTIO_NET_F_MTU                3
#define VIRTIO_NET_F_MAC                5
#define VIRTIO_NET_F_GUEST_TSO4         7
#define VIRTIO_NET_F_GUEST_TSO6         8
#define VIRTIO_NET_F_GUEST_ECN          9
#define VIRTIO_NET_F_GUEST_UFO          10
#define VIRTIO_NET_F_HOST_TSO4          11
#define VIRTIO_NET_F_HOST_TSO6          12
#define VIRTIO_NET_F_HOST_ECN           13
#define VIRTIO_NET_F_HOST_UFO           14
#define VIRTIO_NET_F_MRG_RXBUF          15
#define VIRTIO_NET_F_STATUS             16
#define VIRTIO_NET_F_CTRL_VQ            17
#define VIRTIO_NET_F_CTRL_RX            18
#define VIRTIO_NET_F_CTRL_VLAN          19
#define VIRTIO_NET_F_GUEST_ANNOUNCE     21
#define VIRTIO_NET_F_MQ                 22
#define VIRTIO_NET_F_CTRL_MAC_ADDR      23

/* virtio-net configuration space (VIRTIO 1.2 §5.1.4), as far as the
 * fields a vhost-user backend can know: the rest read as zero. */
struct virtio_net_config {
    uint8_t mac[6];
    uint16_t status;
    uint16_t max_virtqueue_pairs;
    uint16_t mtu;
    uint32_t speed;
    uint8_t duplex;
    uint8_t rss_max_key_size;
    uint16_t rss_max_indirection_table_length;
    uint32_t supported_hash_types;
} __attribute__((packed));
#define VIRTIO_NET_S_LINK_UP            1
#define VIRTIO_NET_SPEED_UNKNOWN        UINT32_MAX
#define VIRTIO_NET_DUPLEX_UNKNOWN       0xff

/* Reserved (transport) features (VIRTIO 1.2 §6). */
#define VIRTIO_F_NOTIFY_ON_EMPTY        24
#define VIRTIO_F_ANY_LAYOUT             27
#define VIRTIO_RING_F_INDIRECT_DESC     28
#define VIRTIO_RING_F_EVENT_IDX         29
#define VIRTIO_F_VERSION_1              32
#define VIRTIO_F_ACCESS_PLATFORM        33
#define VIRTIO_F_RING_PACKED            34
#define VIRTIO_F_IN_ORDER               35
#define VIRTIO_F_ORDER_PLATFORM         36
#define VIRTIO_F_SR_IOV                 37
#define VIRTIO_F_NOTIFICATION_DATA      38
#define VIRTIO_F_RING_RESET             40

/* vhost-specific feature bits (vhost-user.rst, "Feature bits"). */
#define VHOST_F_LOG_ALL                 26
#define VHOST_USER_F_PROTOCOL_FEATURES  30

/* Virtio device status bits (VIRTIO 1.2 §2.1). */
#define VIRTIO_CONFIG_S_ACKNOWLEDGE     1
#define VIRTIO_CONFIG_S_DRIVER          2
#define VIRTIO_CONFIG_S_DRIVER_OK       4
#define VIRTIO_CONFIG_S_FEATURES_OK     8
#define VIRTIO_CONFIG_S_NEEDS_RESET     0x40
#define VIRTIO_CONFIG_S_FAILED          0x80

/* Split virtqueue layout (VIRTIO 1.2 §2.7).  Alignment requirements of the
 * three parts, from the table in §2.7. */
#define VRING_DESC_ALIGN    16
#define VRING_AVAIL_ALIGN   2
#define VRING_USED_ALIGN    4
#define VRING_DESC_SIZE     16          /* sizeof(struct vring_desc) */
#define VRING_USED_ELEM_SIZE 8          /* sizeof(struct vring_used_elem) */

/* The largest queue size: "Queue Size ... maximum ... 32768" (§2.6). */
#define VIRTQ_MAX_SIZE      32768

#define FEATURE_BIT(N) (UINT64_C(1) << (N))

#endif /* virtio.h */
