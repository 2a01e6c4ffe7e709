/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OVS provider's statistics, custom statistics, status column and
 * vhost/show text: see netdev-vhost-private.h.
 */

#include <config.h>
#include "netdev-vhost-private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "coverage.h"
#include "dirs.h"
#include "dp-packet.h"
#include "dpif-netdev.h"
#include "fatal-signal.h"
#include "netdev-provider.h"
#include "openvswitch/dynamic-string.h"
#include "openvswitch/list.h"
#include "openvswitch/token-bucket.h"
#include "openvswitch/vlog.h"
#include "ovs-atomic.h"
#include "ovs-rcu.h"
#include "ovs-thread.h"
#include "packets.h"
#include "openvswitch/poll-loop.h"
#include "smap.h"
#include "sset.h"
#include "timeval.h"
#include "userspace-tso.h"
#include "lib/netdev-vhost-compat.h"
#include "lib/util.h"          /* OVS's, not ours. */
#include "ovs-vhost/vhost.h"

/* Statistics
 * ==========
 *
 * OVS's rx is the guest's TX rings (odd vrings), its tx the guest's RX
 * rings (even vrings).  Packet and byte counts come from the engine's
 * per-vring statistics; drops that happen in the provider from 'sw'. */

static uint64_t
vring_drops(const struct vhost_queue_stats *st, bool skip_no_bufs)
{
    uint64_t n = 0;

    for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
        if (!(skip_no_bufs && r == VHOST_DROP_NO_BUFS)) {
            n += st->drops[r];
        }
    }
    return n;
}

int
netdev_vhost_get_stats(const struct netdev *netdev,
                       struct netdev_stats *stats)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    struct vhost_queue_stats st;

    memset(stats, 0, sizeof *stats);
    if (dev->port) {
        for (unsigned int v = 0; v < 2 * VHOST_MAX_QUEUE_PAIRS; v++) {
            if (vhost_port_get_queue_stats(dev->port, v, &st)) {
                break;
            }
            bool rx = v & 1;
            if (rx) {
                stats->rx_packets += st.packets;
                stats->rx_bytes += st.bytes;
                stats->rx_errors += vring_drops(&st, false);
                stats->multicast += st.multicast + st.broadcast;
                stats->rx_broadcast_packets += st.broadcast;
                stats->rx_undersized_errors += 0;
                stats->rx_1_to_64_packets += st.undersize + st.size_64;
                stats->rx_65_to_127_packets += st.size_65_127;
                stats->rx_128_to_255_packets += st.size_128_255;
                stats->rx_256_to_511_packets += st.size_256_511;
                stats->rx_512_to_1023_packets += st.size_512_1023;
                stats->rx_1024_to_1522_packets += st.size_1024_1518;
                stats->rx_1523_to_max_packets += st.size_1519_max;
            } else {
                stats->tx_packets += st.packets;
                stats->tx_bytes += st.bytes;
                stats->tx_errors += vring_drops(&st, true);
                stats->tx_multicast_packets += st.multicast + st.broadcast;
                stats->tx_broadcast_packets += st.broadcast;
                stats->tx_1_to_64_packets += st.undersize + st.size_64;
                stats->tx_65_to_127_packets += st.size_65_127;
                stats->tx_128_to_255_packets += st.size_128_255;
                stats->tx_256_to_511_packets += st.size_256_511;
                stats->tx_512_to_1023_packets += st.size_512_1023;
                stats->tx_1024_to_1522_packets += st.size_1024_1518;
                stats->tx_1523_to_max_packets += st.size_1519_max;
            }
        }
    }

    stats->rx_dropped = sw_get(&dev->sw.rx_qos_drops)
                        + sw_get(&dev->sw.rx_alloc_failures);
    stats->tx_dropped = sw_get(&dev->sw.tx_failure_drops)
                        + sw_get(&dev->sw.tx_mtu_exceeded_drops)
                        + sw_get(&dev->sw.tx_qos_drops)
                        + sw_get(&dev->sw.tx_invalid_hwol_drops)
                        + sw_get(&dev->sw.tx_down_drops);
    return 0;
}

/* Per-vring counters under DPDK's vhost names, prefixed as OVS-DPDK
 * prefixes them ("rx_q0_good_packets": what OVS received on rxq 0). */
#define VRING_STATS                                 \
    VRING_STAT(packets, "good_packets")             \
    VRING_STAT(bytes, "good_bytes")                 \
    VRING_STAT(multicast, "multicast_packets")      \
    VRING_STAT(broadcast, "broadcast_packets")      \
    VRING_STAT(undersize, "undersize_packets")      \
    VRING_STAT(size_64, "size_64_packets")          \
    VRING_STAT(size_65_127, "size_65_127_packets")  \
    VRING_STAT(size_128_255, "size_128_255_packets") \
    VRING_STAT(size_256_511, "size_256_511_packets") \
    VRING_STAT(size_512_1023, "size_512_1023_packets") \
    VRING_STAT(size_1024_1518, "size_1024_1518_packets") \
    VRING_STAT(size_1519_max, "size_1519_max_packets") \
    VRING_STAT(guest_notifications, "guest_notifications") \
    VRING_STAT(notifications_suppressed, "notifications_suppressed") \
    VRING_STAT(rarps_injected, "rarps_injected") \
    VRING_STAT(desc_visits, "desc_visits") \
    VRING_STAT(budget_stops, "budget_stops") \
    VRING_STAT(small_buf_stops, "small_buf_stops") \
    VRING_STAT(iotlb_hits, "iotlb_hits") \
    VRING_STAT(iotlb_misses, "iotlb_misses") \
    VRING_STAT(iotlb_misses_ahead, "iotlb_misses_ahead") \
    VRING_STAT(iotlb_waits, "iotlb_waits") \
    VRING_STAT(iotlb_denied, "iotlb_denied") \
    VRING_STAT(iotlb_held, "iotlb_held")

static void
add_counter(struct netdev_custom_stats *cs, size_t *allocated,
            uint64_t value, const char *fmt, ...)
    OVS_PRINTF_FORMAT(4, 5);

static void
add_counter(struct netdev_custom_stats *cs, size_t *allocated,
            uint64_t value, const char *fmt, ...)
{
    va_list args;

    if (cs->size >= *allocated) {
        cs->counters = x2nrealloc(cs->counters, allocated,
                                  sizeof *cs->counters);
    }
    struct netdev_custom_counter *c = &cs->counters[cs->size++];
    va_start(args, fmt);
    vsnprintf(c->name, sizeof c->name, fmt, args);
    va_end(args);
    c->value = value;
}

int
netdev_vhost_get_custom_stats(const struct netdev *netdev,
                              struct netdev_custom_stats *cs)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    size_t allocated = 0;

    cs->size = 0;
    cs->counters = NULL;

#define SW_STAT(NAME) \
    add_counter(cs, &allocated, sw_get(&dev->sw.NAME), "ovs_" #NAME);
    SW_STAT(tx_retries)
    SW_STAT(tx_failure_drops)
    SW_STAT(tx_mtu_exceeded_drops)
    SW_STAT(tx_qos_drops)
    SW_STAT(rx_qos_drops)
    SW_STAT(tx_invalid_hwol_drops)
    SW_STAT(tx_down_drops)
    SW_STAT(rx_alloc_failures)
#undef SW_STAT

    if (!dev->port) {
        return 0;
    }

    /* Frontend misbehaviour, by kind (the port's lifetime): messages
     * refused, connections displaced, shrunk fds caught by the guard. */
    struct vhost_port_info info;
    if (!vhost_port_get_info(dev->port, &info)) {
        add_counter(cs, &allocated, info.counters.msgs_ring_started,
                    "vhost_msgs_ring_started");
        add_counter(cs, &allocated, info.counters.fds_not_eventfd,
                    "vhost_fds_not_eventfd");
        add_counter(cs, &allocated, info.counters.frontends_displaced,
                    "vhost_frontends_displaced");
        add_counter(cs, &allocated, info.counters.guarded_fds,
                    "vhost_guarded_fds");
        add_counter(cs, &allocated, info.counters.guarded_faults,
                    "vhost_guarded_faults");
        add_counter(cs, &allocated, info.counters.rings_recovered,
                    "vhost_rings_recovered");
        add_counter(cs, &allocated, info.counters.msgs_deferred,
                    "vhost_msgs_deferred");
        add_counter(cs, &allocated, info.counters.iotlb_rejected,
                    "vhost_iotlb_rejected");
        add_counter(cs, &allocated, info.counters.iotlb_evicted,
                    "vhost_iotlb_evicted");
    }

    /* The queues OVS has, rx then tx as OVS-DPDK lists them. */
    for (int pass = 0; pass < 2; pass++) {
        bool rx = pass == 0;
        int n = rx ? netdev->n_rxq : MIN(netdev->n_txq,
                                         VHOST_MAX_QUEUE_PAIRS);
        for (int q = 0; q < n; q++) {
            struct vhost_queue_stats st;
            const char *dir = rx ? "rx" : "tx";

            if (vhost_port_get_queue_stats(dev->port, 2 * q + rx, &st)) {
                break;
            }
#define VRING_STAT(MEMBER, NAME) \
            add_counter(cs, &allocated, st.MEMBER, "%s_q%d_" NAME, dir, q);
            VRING_STATS
#undef VRING_STAT
            for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
                if (rx || r != VHOST_DROP_NO_BUFS) {
                    add_counter(cs, &allocated, st.drops[r],
                                "%s_q%d_drop_%s", dir, q,
                                vhost_drop_reason_name(r));
                }
            }
        }
    }
    return 0;
}

/* Status: the keys OVS-DPDK's vhost ports show, in the OVS release we
 * are built against (OVS 3.5's netdev_get_status() adds its generic
 * "tx_*_offload" keys itself, from netdev->ol_flags, before calling
 * here). */
int
netdev_vhost_get_status(const struct netdev *netdev, struct smap *args)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    struct vhost_port_info info;

    smap_add(args, "mode", dev->client ? "client" : "server");
    if (!dev->port || vhost_port_get_info(dev->port, &info)
        || !info.connected) {
        smap_add(args, "status", "disconnected");
        return 0;
    }
    smap_add(args, "status", "connected");
    ovs_mutex_lock(&dev->mutex);
    if (dev->port_path) {
        smap_add(args, "socket", dev->port_path);
    }
    ovs_mutex_unlock(&dev->mutex);
    smap_add_format(args, "features", "0x%016"PRIx64, info.features);
    if (info.mtu) {
        smap_add_format(args, "mtu", "%u", info.mtu);
    }
    if (info.numa_node >= 0) {
        smap_add_format(args, "numa", "%d", info.numa_node);
    }
    if (info.n_queues) {
        smap_add_format(args, "num_of_vrings", "%u", info.n_queues);
    }
    for (unsigned int i = 0; i < info.n_queues; i++) {
        struct vhost_queue_info qi;

        if (!vhost_port_get_queue_info(dev->port, i, &qi)) {
            smap_add_nocopy(args, xasprintf("vring_%u_size", i),
                            xasprintf("%u", qi.size));
        }
    }
    if (NETDEV_VHOST_STATUS_QUEUES) {
        /* As OVS-DPDK 3.3 and later: "userspace-tso" is "disabled" when
         * userspace TSO is on but this guest took no segmentation
         * offload, and is absent otherwise. */
        ovs_mutex_lock(&dev->mutex);
        bool tso = netdev->ol_flags & NETDEV_TX_OFFLOAD_TCP_TSO;
        ovs_mutex_unlock(&dev->mutex);
        if (userspace_tso_enabled() && !tso) {
            smap_add(args, "userspace-tso", "disabled");
        }
        smap_add_format(args, "n_rxq", "%d", netdev->n_rxq);
        smap_add_format(args, "n_txq", "%d", netdev->n_txq);
    }
    return 0;
}

/* Appends a multi-line description of 'netdev' to 'ds', for vhost/show. */
void
netdev_vhost_show(const struct netdev *netdev, struct ds *ds)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    struct vhost_port_info info;
    char features[512];

    ds_put_format(ds, "%s: %s, mode %s\n", netdev_get_name(netdev),
                  netdev_get_type(netdev), dev->client ? "client" : "server");
    ovs_mutex_lock(&dev->mutex);
    ds_put_format(ds, "  socket: %s\n",
                  dev->path ? dev->path : "(no vhost-server-path)");
    ds_put_format(ds, "  admin state: %s, mtu %d, tx-retries-max %d\n",
                  dev->flags & NETDEV_UP ? "up" : "down", dev->requested_mtu,
                  (int) ({ int r; atomic_read_relaxed(&dev->tx_retries_max,
                                                      &r); r; }));
    ds_put_format(ds, "  ovs queues: %d rx, %d tx", netdev->n_rxq,
                  netdev->n_txq);
    /* Where each txq goes, and whether several txqs share a guest queue
     * (and so contend for its lock).  The map is stable here: it is only
     * rewritten under 'dev->mutex'. */
    bool used[VHOST_MAX_QUEUE_PAIRS] = { false };
    bool shared = false;
    ds_put_cstr(ds, " onto guest queues");
    int n_map = MIN(MAX(netdev->n_txq, 1), NETDEV_VHOST_MAX_TXQ);
    for (int i = 0; i < n_map; i++) {
        int q;
        atomic_read_relaxed(&dev->tx_map[i], &q);
        if (q >= 0 && q < VHOST_MAX_QUEUE_PAIRS) {
            shared |= used[q];
            used[q] = true;
        }
        if (i < 32) {
            ds_put_format(ds, "%c%d", i ? ',' : ' ', q);
        }
    }
    if (n_map > 32) {
        ds_put_cstr(ds, ",...");
    }
    ds_put_format(ds, " (%s)\n", shared ? "shared: locked" : "one each");
    ovs_mutex_unlock(&dev->mutex);

    if (!dev->port || vhost_port_get_info(dev->port, &info)) {
        ds_put_cstr(ds, "  state: no socket\n");
        return;
    }
    ds_put_format(ds, "  state: %s\n",
                  !info.connected ? "disconnected"
                  : info.ready ? "connected, device ready"
                  : "connected, device not ready");
    ds_put_format(ds, "  counters: connects %"PRIu64", disconnects %"PRIu64
                  ", messages %"PRIu64", rejected %"PRIu64"\n",
                  info.counters.connects, info.counters.disconnects,
                  info.counters.msgs, info.counters.msgs_rejected);
    ds_put_format(ds, "  refused: %"PRIu64" for a started vring, %"PRIu64
                  " fds not eventfds\n", info.counters.msgs_ring_started,
                  info.counters.fds_not_eventfd);
    ds_put_format(ds, "  frontends: refused %"PRIu64", displaced %"
                  PRIu64" (no SET_OWNER or stalled), timed out %"PRIu64"\n",
                  info.counters.extra_conns_refused,
                  info.counters.frontends_displaced,
                  info.counters.msg_timeouts);
    ds_put_format(ds, "  guarded fds (no F_SEAL_SHRINK): %"PRIu64", guarded "
                  "SIGBUS faults: %"PRIu64"\n", info.counters.guarded_fds,
                  info.counters.guarded_faults);
    ds_put_format(ds, "  packed rings recovered from the position log: %"
                  PRIu64" (%"PRIu64" inexact)\n",
                  info.counters.rings_recovered,
                  info.counters.rings_recovered_inexact);
    if (info.counters.iotlb_updates || info.counters.iotlb_rejected) {
        ds_put_format(ds, "  IOTLB (vIOMMU): updates %"PRIu64", "
                      "invalidations %"PRIu64", refused %"PRIu64", evicted %"
                      PRIu64", ring misses %"PRIu64"\n",
                      info.counters.iotlb_updates,
                      info.counters.iotlb_invalidations,
                      info.counters.iotlb_rejected,
                      info.counters.iotlb_evicted,
                      info.counters.iotlb_ring_misses);
    }
    /* Once the port offered postcopy to a frontend that took it, or any
     * postcopy message came (PAGEFAULT is protocol feature bit 8). */
    if (info.counters.postcopy_listens || info.counters.postcopy_rejected
        || (info.connected
            && info.protocol_features & (UINT64_C(1) << 8))) {
        ds_put_format(ds, "  postcopy: listens %"PRIu64", regions "
                      "registered %"PRIu64", refused %"PRIu64", messages "
                      "held for a faulting vring %"PRIu64"\n",
                      info.counters.postcopy_listens,
                      info.counters.postcopy_regions,
                      info.counters.postcopy_rejected,
                      info.counters.msgs_deferred);
    }
    if (!info.connected) {
        return;
    }
    vhost_features_to_string(info.features, features, sizeof features);
    ds_put_format(ds, "  features: 0x%016"PRIx64" (%s)\n", info.features,
                  features);
    ds_put_format(ds, "  ring layout: %s\n",
                  info.features & (UINT64_C(1) << 34) ? "packed" : "split");
    ds_put_format(ds, "  guest memory: %u regions, %"PRIu64" MiB, numa %d"
                  "%s\n", info.n_mem_regions, info.mem_size >> 20,
                  info.numa_node,
                  info.log_mapped ? ", dirty logging on" : "");
    if (info.mtu) {
        ds_put_format(ds, "  guest mtu: %u\n", info.mtu);
    }
    for (unsigned int i = 0; i < info.n_queues; i++) {
        struct vhost_queue_info qi;
        struct vhost_queue_stats st;

        if (vhost_port_get_queue_info(dev->port, i, &qi)
            || vhost_port_get_queue_stats(dev->port, i, &st)) {
            continue;
        }
        ds_put_format(ds, "  vring %u (%s q%u): size %u, %s%s, packets "
                      "%"PRIu64", bytes %"PRIu64", notifications %"PRIu64,
                      i, i & 1 ? "guest tx, ovs rx" : "guest rx, ovs tx",
                      i / 2, qi.size, qi.enabled ? "enabled" : "disabled",
                      st.broken ? ", BROKEN" : "", st.packets, st.bytes,
                      st.guest_notifications);
        for (int r = 0; r < VHOST_N_DROP_REASONS; r++) {
            if (st.drops[r]) {
                ds_put_format(ds, ", %s %"PRIu64,
                              vhost_drop_reason_to_string(r), st.drops[r]);
            }
        }
        if (st.budget_stops) {
            ds_put_format(ds, ", bursts cut by the work budget %"PRIu64,
                          st.budget_stops);
        }
        if (st.small_buf_stops) {
            ds_put_format(ds, ", bursts stopped at buffers too small %"PRIu64,
                          st.small_buf_stops);
        }
        if (st.iotlb_hits || st.iotlb_misses || st.iotlb_denied) {
            ds_put_format(ds, ", iotlb hits %"PRIu64", misses %"PRIu64
                          " (ahead %"PRIu64"), waits %"PRIu64", denied %"
                          PRIu64, st.iotlb_hits, st.iotlb_misses,
                          st.iotlb_misses_ahead, st.iotlb_waits,
                          st.iotlb_denied);
        }
        ds_put_char(ds, '\n');
    }
}
