/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OVS provider's internals, shared by its files (see netdev-vhost.h for
 * the design note: threads, lock order, trust):
 *
 *   netdev-vhost.c           the classes, construction, configuration,
 *                            engine callbacks, policing and QoS settings
 *   netdev-vhost-datapath.c  what PMD threads run: rxq_recv and send,
 *                            packet buffers, offload metadata, policing
 *   netdev-vhost-stats.c     statistics, custom statistics, the status
 *                            column and vhost/show
 *   netdev-vhost-appctl.c    ovs-appctl vhost/...
 *   netdev-vhost-engine.c    the engine, driven from OVS's main loop
 */

#ifndef NETDEV_VHOST_PRIVATE_H
#define NETDEV_VHOST_PRIVATE_H 1

#include "netdev-vhost.h"

#include "dp-packet.h"
#include "netdev-provider.h"
#include "openvswitch/list.h"
#include "openvswitch/token-bucket.h"
#include "ovs-atomic.h"
#include "ovs-rcu.h"
#include "ovs-thread.h"
#include "packets.h"
#include "lib/util.h"          /* OVS's, not ours. */
#include "ovs-vhost/vhost.h"

/* Rare per-packet work kept out of the PMD loops' instruction cache. */
#define NETDEV_VHOST_COLD __attribute__((__noinline__, __cold__))

#define NETDEV_VHOST_MTU_MIN 68
#define NETDEV_VHOST_MTU_MAX 9702
#define NETDEV_VHOST_TX_RETRIES_MIN 0
#define NETDEV_VHOST_TX_RETRIES_MAX 32
#define NETDEV_VHOST_TX_RETRIES_DEF 8

/* OVS may ask for up to this many txqs (one per PMD thread and one for
 * non-PMD threads); each maps onto an enabled guest queue pair. */
#define NETDEV_VHOST_MAX_TXQ 1024

/* Headroom of the packets handed to dpif-netdev, for pushed headers (see
 * "Packet buffers" below). */
#define NETDEV_VHOST_HEADROOM 128

/* How long after device_ready the carrier waits at most for the device's
 * first burst (netdev_vhost_learn_hold__()). */
#define NETDEV_VHOST_LEARN_HOLD_MS 100

/* One lock per guest RX ring, taken by every send() (see there): several
 * OVS txqs may use a ring at once (XPS, more OVS txqs than enabled guest
 * queues, or a remap in progress). */
struct netdev_vhost_txlock {
    atomic_flag busy;
    uint8_t pad[CACHE_LINE_SIZE - sizeof(atomic_flag)];
};

/* Counters kept by the provider, beside the engine's per-vring ones.
 * Added to by PMD threads with relaxed atomics. */
struct netdev_vhost_sw_stats {
    atomic_uint64_t tx_retries;
    atomic_uint64_t tx_failure_drops;       /* Guest RX ring full. */
    atomic_uint64_t tx_mtu_exceeded_drops;
    atomic_uint64_t tx_qos_drops;
    atomic_uint64_t rx_qos_drops;
    atomic_uint64_t tx_invalid_hwol_drops;
    atomic_uint64_t tx_down_drops;          /* Not connected, or down. */
    atomic_uint64_t rx_alloc_failures;      /* No memory for a packet. */
};

/* A byte-rate policer: ingress policing (Interface ingress_policing_rate
 * and _burst, in kbit/s and kbit), or the "egress-policer" QoS type (cir
 * in bytes/s, cbs in bytes).  Shared by the PMD threads of a port under
 * 'busy'; replaced whole, through RCU, when the configuration changes. */
struct netdev_vhost_policer {
    atomic_flag busy;
    struct token_bucket tb;     /* Tokens are bits. */
};

struct netdev_vhost {
    struct netdev up;

    /* Set at construction. */
    bool client;                    /* dpdkvhostuserclient. */
    struct ovs_list list_node;      /* In 'vhost_ports', under vhost_mutex. */

    struct ovs_mutex mutex;

    /* Configuration, under 'mutex'. */
    char *path OVS_GUARDED;         /* Socket, NULL until known (client). */
    char *port_path OVS_GUARDED;    /* Path of 'port', if any. */
    struct vhost_port *port;        /* Engine port; main thread only. */
    int requested_n_txq OVS_GUARDED;
    int requested_n_rxq OVS_GUARDED;
    int requested_mtu OVS_GUARDED;
    bool tso_offered OVS_GUARDED;   /* Offload features offered to 'port'. */
    struct eth_addr hwaddr OVS_GUARDED;
    enum netdev_flags flags OVS_GUARDED;
    long long int carrier_resets OVS_GUARDED;

    /* The guest, from engine callbacks (main thread), under 'mutex'. */
    bool connected OVS_GUARDED;
    bool device_ready OVS_GUARDED;  /* device_ready seen, device_gone not. */
    int guest_n_qp OVS_GUARDED;     /* Queue pairs the device has. */
    bool guest_rx_enabled[VHOST_MAX_QUEUE_PAIRS] OVS_GUARDED;
    uint64_t guest_features OVS_GUARDED;

    /* Read by PMD threads. */
    atomic_bool running;            /* Ready, reconfigured and admin up. */
    atomic_bool rxq_enabled[VHOST_MAX_QUEUE_PAIRS];
    atomic_int tx_map[NETDEV_VHOST_MAX_TXQ];   /* -1: no guest queue. */
    atomic_int max_frame;           /* MTU plus Ethernet and VLAN. */
    atomic_int tx_retries_max;
    atomic_bool tx_offloads;        /* Guest takes partial csum and TSO. */
    /* Carrier held down after device_ready until the device's first
     * burst has crossed the datapath (netdev_vhost_learn_hold__()): 0 no
     * hold, 1 waiting for the first burst, 2 + QP: rxq QP had it, release
     * at its next poll.  'learn_hold_end' (time_msec()) ends a hold that
     * no burst ends. */
    atomic_int learn_hold;
    atomic_llong learn_hold_end;
    struct netdev_vhost_txlock txlocks[VHOST_MAX_QUEUE_PAIRS];
    OVSRCU_TYPE(struct netdev_vhost_policer *) ingress_policer;
    OVSRCU_TYPE(struct netdev_vhost_policer *) egress_policer;
    uint32_t policer_rate OVS_GUARDED;      /* kbit/s, 0: none. */
    uint32_t policer_burst OVS_GUARDED;     /* kbit. */
    uint64_t qos_cir OVS_GUARDED;           /* bytes/s, 0: no QoS. */
    uint64_t qos_cbs OVS_GUARDED;           /* bytes. */

    struct netdev_vhost_sw_stats sw;
};

struct netdev_rxq_vhost {
    struct netdev_rxq up;
    /* Buffers for the next dequeue (see vhost_dequeue_burst()): refilled
     * before a call when 'n_empty' slots were handed to OVS by the last. */
    struct vhost_pkt pkts[NETDEV_MAX_BURST];
    unsigned int n_empty;
};

static inline struct netdev_vhost *
netdev_vhost_cast(const struct netdev *netdev)
{
    ovs_assert(netdev_vhost_is_vhost(netdev));
    return CONTAINER_OF(netdev, struct netdev_vhost, up);
}

static inline struct netdev_rxq_vhost *
netdev_rxq_vhost_cast(const struct netdev_rxq *rxq)
{
    return CONTAINER_OF(rxq, struct netdev_rxq_vhost, up);
}

static inline void
sw_add(atomic_uint64_t *counter, uint64_t n)
{
    uint64_t orig;
    atomic_add_relaxed(counter, n, &orig);
}

static inline uint64_t
sw_get(const atomic_uint64_t *counter)
{
    uint64_t v;
    atomic_read_relaxed(CONST_CAST(atomic_uint64_t *, counter), &v);
    return v;
}

/* netdev-vhost.c */
void netdev_vhost_carrier_changed(void);

/* netdev-vhost-datapath.c */
void netdev_vhost_cache_init(void);
int netdev_vhost_send(struct netdev *, int qid, struct dp_packet_batch *,
                      bool concurrent_txq);
struct netdev_rxq *netdev_vhost_rxq_alloc(void);
int netdev_vhost_rxq_construct(struct netdev_rxq *);
void netdev_vhost_rxq_destruct(struct netdev_rxq *);
void netdev_vhost_rxq_dealloc(struct netdev_rxq *);
bool netdev_vhost_rxq_enabled(struct netdev_rxq *);
int netdev_vhost_rxq_recv(struct netdev_rxq *, struct dp_packet_batch *,
                          int *qfill);

/* netdev-vhost-stats.c */
int netdev_vhost_get_stats(const struct netdev *, struct netdev_stats *);
int netdev_vhost_get_custom_stats(const struct netdev *,
                                  struct netdev_custom_stats *);
int netdev_vhost_get_status(const struct netdev *, struct smap *);

#endif /* netdev-vhost-private.h */
