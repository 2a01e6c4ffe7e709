/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OVS provider's data path, run by dpif-netdev's PMD threads: rxq_recv
 * and send on the engine's bursts, packet buffers, offload metadata and
 * policing.  See netdev-vhost-private.h.
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
#include "lib/util.h"          /* OVS's, not ours. */
#include "lib/netdev-vhost-compat.h"
#include "ovs-vhost/vhost.h"

VLOG_DEFINE_THIS_MODULE(netdev_vhost_datapath);

COVERAGE_DEFINE(vhost_tx_contention);
COVERAGE_DEFINE(vhost_tx_retry);
COVERAGE_DEFINE(vhost_tx_drop);
COVERAGE_DEFINE(vhost_rx_alloc_fail);
COVERAGE_DEFINE(vhost_mtu_exceeded);

static struct vlog_rate_limit rl = VLOG_RATE_LIMIT_INIT(5, 20);

/* Keeps the 'n' packets of 'pkts' that 'p' lets through at the front, in
 * order, frees the others, and returns how many it kept. */
static int
netdev_vhost_police(struct netdev_vhost_policer *p, struct dp_packet **pkts,
                    int n)
{
    int kept = 0;

    while (atomic_flag_test_and_set_explicit(&p->busy, memory_order_acquire)) {
        /* Another PMD is policing one burst. */
    }
    for (int i = 0; i < n; i++) {
        if (token_bucket_withdraw(&p->tb, dp_packet_size(pkts[i]) * 8)) {
            pkts[kept++] = pkts[i];
        } else {
            dp_packet_delete(pkts[i]);
        }
    }
    atomic_flag_clear_explicit(&p->busy, memory_order_release);
    return kept;
}

/* Data path
 * =========
 *
 * PMD threads.  No lock but the engine's per-vring access lock and, for
 * shared txqs, 'txlocks'. */

/* Packet buffers
 * --------------
 *
 * One malloc() holds the struct dp_packet, headroom and room for a
 * 1518-byte frame with VLAN tags, as a DPBUF_STUB packet: whoever frees it
 * with dp_packet_delete() frees the block in one free().  Packets that
 * come back to us (sent to a vhost-user port, the common vhost-to-vhost
 * case) are kept in a per-thread cache instead and handed out again by
 * the next dequeue on that thread: with run-to-completion PMDs that is the
 * same thread, so the cache stays warm and malloc()/free() leave the
 * path.  Larger packets (jumbo, TSO) get a block of their size, not
 * cached. */
#define NETDEV_VHOST_STD_ROOM 2048
#define NETDEV_VHOST_STD_ALLOC (NETDEV_VHOST_HEADROOM + NETDEV_VHOST_STD_ROOM)
#define NETDEV_VHOST_CACHE_MAX 512

struct netdev_vhost_cache {
    unsigned int n;
    struct dp_packet *pkts[NETDEV_VHOST_CACHE_MAX];
};

static ovsthread_key_t netdev_vhost_cache_key;
static void netdev_vhost_cache_destroy(void *);

/* Creates the cache's thread-specific key, once, from the first port's
 * construction on the main thread (not from a constructor: key creation
 * sets up OVS's fatal-signal machinery, which must wait for main()). */
void
netdev_vhost_cache_init(void)
{
    static struct ovsthread_once once = OVSTHREAD_ONCE_INITIALIZER;

    if (ovsthread_once_start(&once)) {
        ovsthread_key_create(&netdev_vhost_cache_key,
                             netdev_vhost_cache_destroy);
        ovsthread_once_done(&once);
    }
}

static void
netdev_vhost_cache_destroy(void *cache_)
{
    struct netdev_vhost_cache *cache = cache_;

    for (unsigned int i = 0; i < cache->n; i++) {
        free(cache->pkts[i]);
    }
    free(cache);
}

/* This thread's cache.  The fast path reads a __thread pointer; the
 * ovsthread key only exists to free the cache when the thread exits. */
static __thread struct netdev_vhost_cache *netdev_vhost_cache;

static struct netdev_vhost_cache *
netdev_vhost_cache_get(void)
{
    struct netdev_vhost_cache *cache = netdev_vhost_cache;

    if (OVS_UNLIKELY(!cache)) {
        cache = xmalloc(sizeof *cache);
        cache->n = 0;
        ovsthread_setspecific(netdev_vhost_cache_key, cache);
        netdev_vhost_cache = cache;
    }
    return cache;
}

/* True if 'b' is one of our standard blocks, untouched in layout. */
static inline bool
netdev_vhost_is_std(const struct dp_packet *b)
{
    return b->source == DPBUF_STUB
           && dp_packet_base(b) == (const void *) (b + 1)
           && dp_packet_get_allocated(b) == NETDEV_VHOST_STD_ALLOC;
}

/* Frees 'b', or keeps it in this thread's cache if it is ours. */
static inline void
netdev_vhost_recycle(struct netdev_vhost_cache *cache, struct dp_packet *b)
{
    if (OVS_LIKELY(netdev_vhost_is_std(b)
                   && cache->n < NETDEV_VHOST_CACHE_MAX)) {
        cache->pkts[cache->n++] = b;
    } else {
        dp_packet_delete(b);
    }
}

/* Gives 'pkt' a standard block from 'cache', if it has one, reset for a
 * new packet: the block's base, size and source are ours already; what
 * OVS may have changed is reset, and the packet metadata is initialised
 * by dpif-netdev on input.  Inline: the dequeue's slots are refilled with
 * it in one tight loop. */
static inline bool
netdev_vhost_take_cached(struct netdev_vhost_cache *cache,
                         struct vhost_pkt *pkt)
{
    struct dp_packet *b;

    if (OVS_UNLIKELY(!cache->n)) {
        return false;
    }
    b = cache->pkts[--cache->n];
    dp_packet_set_data(b, (char *) (b + 1) + NETDEV_VHOST_HEADROOM);
    dp_packet_set_size(b, 0);
    dp_packet_reset_offsets(b);
    dp_packet_reset_cutlen(b);
    dp_packet_reset_offload(b);
    netdev_vhost_compat_reset_packet(b);
    b->packet_type = htonl(PT_ETH);
    pkt->data = dp_packet_data(b);
    pkt->size = NETDEV_VHOST_STD_ROOM;
    pkt->handle = b;
    return true;
}

/* What the allocator needs during one dequeue: this thread's cache, looked
 * up once per burst, and the port, for counting failures. */
struct netdev_vhost_rx_ctx {
    struct netdev_vhost_cache *cache;
    struct netdev_vhost *dev;
};

/* Gives 'pkt' a buffer for 'len' bytes.  On failure (no memory), counts it
 * in ovs_rx_alloc_failures; the packet stays in the guest's ring. */
static bool
netdev_vhost_pkt_alloc(void *ctx_, struct vhost_pkt *pkt, uint32_t len)
{
    const struct netdev_vhost_rx_ctx *ctx = ctx_;
    size_t headroom = NETDEV_VHOST_HEADROOM;
    size_t room = NETDEV_VHOST_STD_ROOM;
    struct dp_packet *b;

    if (OVS_LIKELY(len <= NETDEV_VHOST_STD_ROOM)) {
        if (OVS_LIKELY(netdev_vhost_take_cached(ctx->cache, pkt))) {
            return true;
        }
    } else {
        room = ROUND_UP(len, 64);
        /* dp_packet sizes are 16 bits: give up headroom for the largest. */
        if (headroom + room > UINT16_MAX) {
            room = len;
            if (room > UINT16_MAX) {
                goto fail;
            }
            headroom = MIN(headroom, UINT16_MAX - room);
        }
    }
    b = malloc(sizeof *b + headroom + room);
    if (OVS_UNLIKELY(!b)) {
        goto fail;
    }
    dp_packet_use_stub(b, b + 1, headroom + room);
    dp_packet_reserve(b, headroom);
    pkt->data = dp_packet_data(b);
    pkt->size = room;
    pkt->handle = b;
    return true;

fail:
    sw_add(&ctx->dev->sw.rx_alloc_failures, 1);
    COVERAGE_INC(vhost_rx_alloc_fail);
    VLOG_WARN_RL(&rl, "%s: no memory for a %"PRIu32"-byte packet",
                 netdev_get_name(&ctx->dev->up), len);
    return false;
}

static void
netdev_vhost_pkt_free(void *ctx_, struct vhost_pkt *pkt)
{
    const struct netdev_vhost_rx_ctx *ctx = ctx_;

    netdev_vhost_recycle(ctx->cache, pkt->handle);
    pkt->handle = NULL;
    pkt->data = NULL;
}

/* Returns the Ethernet type of the 'len'-byte frame at 'eth', after one
 * VLAN tag, with its L3 offset in '*l3'. */
static ovs_be16
frame_eth_type(const uint8_t *eth, uint32_t len, uint16_t *l3)
{
    ovs_be16 type;

    if (len < ETH_HEADER_LEN) {
        return 0;
    }
    memcpy(&type, eth + 12, 2);
    *l3 = ETH_HEADER_LEN;
    if ((type == htons(ETH_TYPE_VLAN_8021Q)
         || type == htons(ETH_TYPE_VLAN_8021AD))
        && len >= ETH_HEADER_LEN + VLAN_HEADER_LEN) {
        memcpy(&type, eth + 16, 2);
        *l3 += VLAN_HEADER_LEN;
    }
    return type;
}

/* Offload metadata of a guest packet into 'b''s flags.  Cold: only with
 * userspace TSO on, and only for packets the guest left partial. */
static void NETDEV_VHOST_COLD
netdev_vhost_rx_offload(struct dp_packet *b, const struct vhost_pkt *p)
{
    uint16_t l3 = 0;
    ovs_be16 type = frame_eth_type(p->data, p->len, &l3);

    if (p->ol.flags & VHOST_OL_DATA_VALID) {
        *dp_packet_ol_flags_ptr(b) |= DP_PACKET_OL_RX_L4_CKSUM_GOOD;
    }
    if (!(p->ol.flags & VHOST_OL_NEEDS_CSUM)) {
        return;
    }
    if (type == htons(ETH_TYPE_IP)) {
        dp_packet_hwol_set_tx_ipv4(b);
    } else if (type == htons(ETH_TYPE_IPV6)) {
        dp_packet_hwol_set_tx_ipv6(b);
    }
    /* csum_offset names the L4 protocol; the engine checked that
     * csum_start + csum_offset lies in the packet. */
    switch (p->ol.csum_offset) {
    case offsetof(struct tcp_header, tcp_csum):
        dp_packet_hwol_set_csum_tcp(b);
        break;
    case offsetof(struct udp_header, udp_csum):
        dp_packet_hwol_set_csum_udp(b);
        break;
    default:
        break;
    }
    netdev_vhost_compat_rx_csum_partial(b, p->ol.csum_start,
                                        p->ol.csum_offset);
    uint8_t gso = p->ol.gso_type & ~VHOST_GSO_ECN;
    if (gso == VHOST_GSO_TCPV4 || gso == VHOST_GSO_TCPV6) {
        dp_packet_hwol_set_tcp_seg(b);
        netdev_vhost_compat_set_tso_segsz(b, p->ol.gso_size);
    }
}

/* A device that has just become ready is often a guest that moved here
 * (the destination of a live migration), and its first burst, the
 * engine's RARP or the guest's own announcement, is what tells the
 * bridge.  But a datapath flow from this port that is still cached (from
 * the guest's last stay, within the flows' idle time) forwards it without
 * an upcall, so nothing is learnt until a revalidator next pushes that
 * flow's statistics through MAC learning, up to other_config
 * max-revalidator (500 ms) later; until then the flows towards the guest
 * still send to the port it left, and it loses replies that long.  The
 * carrier coming up (a port state change, REV_PORT_TOGGLED) makes OVS
 * revalidate every flow at once, pushing their statistics, so
 * netdev_vhost_get_carrier() holds it down from device_ready until the
 * poll after the first non-empty burst: the burst has crossed the
 * datapath by then and is learnt by that revalidation (the MAC learning
 * change then revalidates the flows again); netdev_vhost_carrier_changed()
 * has the main thread see the carrier.  A hold no burst ends (a guest
 * that sends nothing) ends at 'learn_hold_end'.
 * 'hold' is dev->learn_hold as read, 'qp' the polled rxq, 'n' its burst. */
static void NETDEV_VHOST_COLD
netdev_vhost_learn_hold__(struct netdev_vhost *dev, int hold,
                          unsigned int qp, unsigned int n)
{
    long long int end;

    atomic_read_relaxed(&dev->learn_hold_end, &end);
    if (hold == 1 && n && time_msec() < end) {
        atomic_compare_exchange_strong(&dev->learn_hold, &hold,
                                       (int) (2 + qp));
    } else if (hold == 1 ? time_msec() >= end : hold == (int) (2 + qp)) {
        if (atomic_compare_exchange_strong(&dev->learn_hold, &hold, 0)) {
            netdev_vhost_carrier_changed();
        }
    }
}

int
netdev_vhost_rxq_recv(struct netdev_rxq *rxq_, struct dp_packet_batch *batch,
                      int *qfill)
{
    struct netdev_rxq_vhost *rxq = netdev_rxq_vhost_cast(rxq_);
    struct netdev_vhost *dev = netdev_vhost_cast(rxq_->netdev);
    unsigned int qp = rxq_->queue_id;
    bool running;

    atomic_read_relaxed(&dev->running, &running);
    if (OVS_UNLIKELY(!running || !dev->port)) {
        return EAGAIN;
    }

    struct netdev_vhost_rx_ctx ctx = {
        .cache = netdev_vhost_cache_get(),
        .dev = dev,
    };
    const struct vhost_pkt_alloc alloc = {
        .alloc = netdev_vhost_pkt_alloc,
        .free = netdev_vhost_pkt_free,
        .aux = &ctx,
        /* A dp_packet's sizes are 16 bits: a longer guest packet is
         * dropped by the engine rather than left blocking the ring. */
        .max_len = UINT16_MAX,
    };
    /* Standard buffers in every slot, in one tight loop with the cache's
     * fast path inline, rather than one allocator call per packet from
     * inside the burst: the engine keeps them, and only calls 'alloc'
     * for a packet larger than 2 KiB.  The slots the guest does not fill
     * stay for the next call. */
    if (rxq->n_empty) {
        for (int i = 0; i < NETDEV_MAX_BURST; i++) {
            if (!rxq->pkts[i].data
                && !netdev_vhost_take_cached(ctx.cache, &rxq->pkts[i])
                && !netdev_vhost_pkt_alloc(alloc.aux, &rxq->pkts[i], 0)) {
                break;
            }
        }
        rxq->n_empty = 0;
    }
    unsigned int n = vhost_dequeue_burst(dev->port, qp, rxq->pkts,
                                         NETDEV_MAX_BURST, &alloc);
    int hold;
    atomic_read_relaxed(&dev->learn_hold, &hold);
    if (OVS_UNLIKELY(hold)) {
        netdev_vhost_learn_hold__(dev, hold, qp, n);
    }
    if (!n) {
        return EAGAIN;
    }
    if (qfill) {
        *qfill = n == NETDEV_MAX_BURST
                 ? (int) vhost_dequeue_pending(dev->port, qp) : 0;
    }

    for (unsigned int i = 0; i < n; i++) {
        struct vhost_pkt *p = &rxq->pkts[i];
        struct dp_packet *b = p->handle;

        dp_packet_set_size(b, p->len);
        if (OVS_UNLIKELY(p->ol.flags)) {
            netdev_vhost_rx_offload(b, p);
        }
        batch->packets[i] = b;
        /* The buffer is OVS's now. */
        p->data = NULL;
        p->handle = NULL;
        p->size = 0;
    }
    rxq->n_empty = n;
    batch->count = n;

    struct netdev_vhost_policer *policer
        = ovsrcu_get(struct netdev_vhost_policer *, &dev->ingress_policer);
    if (OVS_UNLIKELY(policer)) {
        int kept = netdev_vhost_police(policer, batch->packets, n);
        if (kept < (int) n) {
            sw_add(&dev->sw.rx_qos_drops, n - kept);
        }
        batch->count = kept;
        if (!kept) {
            return EAGAIN;
        }
    }
    /* cutlen and packet_type were set when the buffer was prepared
     * (dp_packet_batch_init_packet_fields() would do it again). */
    return 0;
}

struct netdev_rxq *
netdev_vhost_rxq_alloc(void)
{
    struct netdev_rxq_vhost *rxq = xzalloc_cacheline(sizeof *rxq);
    return &rxq->up;
}

int
netdev_vhost_rxq_construct(struct netdev_rxq *rxq)
{
    netdev_rxq_vhost_cast(rxq)->n_empty = NETDEV_MAX_BURST;
    return 0;
}

void
netdev_vhost_rxq_destruct(struct netdev_rxq *rxq_)
{
    struct netdev_rxq_vhost *rxq = netdev_rxq_vhost_cast(rxq_);

    struct netdev_vhost_rx_ctx ctx = { .cache = netdev_vhost_cache_get() };

    for (int i = 0; i < NETDEV_MAX_BURST; i++) {
        if (rxq->pkts[i].data) {
            netdev_vhost_pkt_free(&ctx, &rxq->pkts[i]);
        }
    }
}

void
netdev_vhost_rxq_dealloc(struct netdev_rxq *rxq)
{
    free_cacheline(netdev_rxq_vhost_cast(rxq));
}

bool
netdev_vhost_rxq_enabled(struct netdev_rxq *rxq)
{
    struct netdev_vhost *dev = netdev_vhost_cast(rxq->netdev);
    bool enabled;

    if (rxq->queue_id >= VHOST_MAX_QUEUE_PAIRS) {
        return false;
    }
    atomic_read_relaxed(&dev->rxq_enabled[rxq->queue_id], &enabled);
    return enabled;
}

/* Offload metadata for an OVS packet going to the guest.  Cold: only for
 * packets OVS left with a partial checksum or for segmentation.  Returns
 * false if the packet's headers cannot carry what its flags ask for (no
 * L3 or L4 header, or a TCP header that runs past the packet): such a
 * packet is dropped and counted in ovs_tx_invalid_hwol_drops. */
static bool NETDEV_VHOST_COLD
netdev_vhost_tx_offload(struct dp_packet *b, struct vhost_pkt *p, int mtu)
{
    const char *eth = dp_packet_eth(b);
    const char *l3, *l4;
    uint32_t size = dp_packet_size(b);

    netdev_vhost_compat_tx_headers(b, &l3, &l4);
    if (!eth || !l3 || !l4 || l4 < l3 || l4 - eth >= size) {
        return false;
    }
    if (dp_packet_hwol_l4_mask(b)) {
        p->ol.flags = VHOST_OL_NEEDS_CSUM;
        p->ol.csum_start = l4 - eth;
        p->ol.csum_offset = dp_packet_hwol_l4_is_tcp(b)
                            ? offsetof(struct tcp_header, tcp_csum)
                            : offsetof(struct udp_header, udp_csum);
        if (p->ol.csum_start + p->ol.csum_offset + 2 > size) {
            return false;
        }
        if (!netdev_vhost_compat_tx_pseudo_csum(l3, l4 - l3,
                                                CONST_CAST(char *, l4),
                                                p->ol.csum_offset)) {
            return false;
        }
    }
    if (dp_packet_hwol_is_tso(b)) {
        const struct tcp_header *tcp = (const void *) l4;
        int hdr;

        if (l4 - eth + TCP_HEADER_LEN > size) {
            return false;
        }
        hdr = (l4 - eth) + TCP_OFFSET(tcp->tcp_ctl) * 4;
        if (hdr > (int) size) {
            return false;
        }
        p->ol.gso_type = dp_packet_hwol_is_ipv4(b) ? VHOST_GSO_TCPV4
                                                   : VHOST_GSO_TCPV6;
        p->ol.hdr_len = hdr;
        /* OVS 3.3 and later keep the guest's or the sender's segment
         * size; 3.1 none, so it follows from the MTU. */
        uint16_t segsz = netdev_vhost_compat_get_tso_segsz(b);
        p->ol.gso_size = segsz ? segsz : MAX(mtu - (hdr - (int) (l3 - eth)),
                                             1);
    }
    return true;
}

int
netdev_vhost_send(struct netdev *netdev, int qid,
                  struct dp_packet_batch *batch,
                  bool concurrent_txq OVS_UNUSED)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    struct vhost_pkt pkts[NETDEV_MAX_BURST];
    int n_pkts = dp_packet_batch_size(batch);
    int max_frame, cnt = 0, mtu_drops = 0, retries = 0;
    bool running, offloads;
    int q;

    atomic_read_relaxed(&dev->running, &running);
    if (OVS_UNLIKELY(!running || !dev->port)) {
        sw_add(&dev->sw.tx_down_drops, n_pkts);
        COVERAGE_ADD(vhost_tx_drop, n_pkts);
        dp_packet_delete_batch(batch, true);
        return 0;
    }
    struct netdev_vhost_policer *policer
        = ovsrcu_get(struct netdev_vhost_policer *, &dev->egress_policer);
    if (OVS_UNLIKELY(policer)) {
        int kept = netdev_vhost_police(policer, batch->packets, n_pkts);
        if (kept < n_pkts) {
            sw_add(&dev->sw.tx_qos_drops, n_pkts - kept);
        }
        batch->count = kept;
    }
    atomic_read_relaxed(&dev->tx_map[(unsigned int) qid % MAX(netdev->n_txq,
                                                              1)], &q);
    atomic_read_relaxed(&dev->max_frame, &max_frame);
    atomic_read_relaxed(&dev->tx_offloads, &offloads);

    int hwol_drops = 0;
    struct dp_packet *packet;
    DP_PACKET_BATCH_FOR_EACH (i, packet, batch) {
        uint32_t size = dp_packet_size(packet);

        if (OVS_UNLIKELY(size > (uint32_t) max_frame
                         && !dp_packet_hwol_is_tso(packet))) {
            mtu_drops++;
            VLOG_WARN_RL(&rl, "%s: dropping a %"PRIu32"-byte packet: larger "
                         "than the MTU", netdev_get_name(netdev), size);
            continue;
        }
        struct vhost_pkt *p = &pkts[cnt++];
        p->data = dp_packet_data(packet);
        p->len = size;
        p->size = size;
        p->handle = packet;
        memset(&p->ol, 0, sizeof p->ol);
        if (OVS_UNLIKELY(offloads && (*dp_packet_ol_flags_ptr(packet)
                                      & (DP_PACKET_OL_TX_L4_MASK
                                         | DP_PACKET_OL_TX_TCP_SEG)))
            && !netdev_vhost_tx_offload(packet, p, max_frame - ETH_HEADER_LEN
                                                   - VLAN_HEADER_LEN)) {
            cnt--;
            hwol_drops++;
            VLOG_WARN_RL(&rl, "%s: dropping a packet whose headers do not "
                         "match its offload flags", netdev_get_name(netdev));
        }
    }

    /* The guest queue's lock is taken on every send, as OVS-DPDK takes
     * it, not only when 'concurrent_txq' or the map shares the queue:
     * when the guest enables or disables a queue, the main thread remaps
     * the txqs while PMDs send, and a send that read the old map (queue
     * 0 its own) can meet one that read the new map (queue 0 shared).
     * Unlocked, the engine's trylock on the ring would turn one of them
     * away, and its whole batch would be dropped.  Uncontended, the lock
     * is one atomic exchange per batch on a line this thread holds. */
    if (OVS_UNLIKELY(atomic_flag_test_and_set_explicit(
                         &dev->txlocks[q].busy, memory_order_acquire))) {
        COVERAGE_INC(vhost_tx_contention);
        while (atomic_flag_test_and_set_explicit(&dev->txlocks[q].busy,
                                                 memory_order_acquire)) {
            /* Spin: the holder is in one burst. */
        }
    }

    int left = cnt, max_retries = 0;
    struct vhost_pkt *next = pkts;
    do {
        unsigned int sent = vhost_enqueue_burst(dev->port, q, next, left);
        if (!sent) {
            break;
        }
        left -= sent;
        next += sent;
        if (left && !retries) {
            atomic_read_relaxed(&dev->tx_retries_max, &max_retries);
        }
    } while (left && retries++ < max_retries);

    atomic_flag_clear_explicit(&dev->txlocks[q].busy, memory_order_release);

    retries = MIN(retries, max_retries);
    if (OVS_UNLIKELY(retries)) {
        sw_add(&dev->sw.tx_retries, retries);
        COVERAGE_ADD(vhost_tx_retry, retries);
    }
    if (OVS_UNLIKELY(left)) {
        sw_add(&dev->sw.tx_failure_drops, left);
        COVERAGE_ADD(vhost_tx_drop, left);
    }
    if (OVS_UNLIKELY(hwol_drops)) {
        sw_add(&dev->sw.tx_invalid_hwol_drops, hwol_drops);
        COVERAGE_ADD(vhost_tx_drop, hwol_drops);
    }
    if (OVS_UNLIKELY(mtu_drops)) {
        sw_add(&dev->sw.tx_mtu_exceeded_drops, mtu_drops);
        COVERAGE_ADD(vhost_mtu_exceeded, mtu_drops);
    }

    /* Copied into the guest (or dropped): the buffers are free. */
    struct netdev_vhost_cache *cache = netdev_vhost_cache_get();
    DP_PACKET_BATCH_FOR_EACH (i, packet, batch) {
        netdev_vhost_recycle(cache, packet);
    }
    dp_packet_batch_init(batch);
    return 0;
}
