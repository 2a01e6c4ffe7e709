/*
 * The netdev classes "dpdkvhostuser" and "dpdkvhostuserclient", served by
 * the ovs-vhost engine instead of DPDK's vhost library.  See netdev-vhost.h
 * for the design note (threads, lock order, trust).
 *
 * Queue naming follows OVS: a port's rxq N is what OVS receives, the
 * guest's TX ring of queue pair N (vring 2N + 1); its txq maps onto the
 * guest's RX ring of an enabled queue pair (vring 2M).
 */

#include <config.h>
#include "netdev-vhost.h"

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
#include "ovs-vhost/vhost.h"

VLOG_DEFINE_THIS_MODULE(netdev_vhost);

COVERAGE_DEFINE(vhost_connect);
COVERAGE_DEFINE(vhost_disconnect);
COVERAGE_DEFINE(vhost_device_ready);
COVERAGE_DEFINE(vhost_queue_state);
COVERAGE_DEFINE(vhost_tx_contention);
COVERAGE_DEFINE(vhost_tx_retry);
COVERAGE_DEFINE(vhost_tx_drop);
COVERAGE_DEFINE(vhost_rx_alloc_fail);
COVERAGE_DEFINE(vhost_mtu_exceeded);

static struct vlog_rate_limit rl = VLOG_RATE_LIMIT_INIT(5, 20);

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

/* Process-wide state, under 'vhost_mutex'. */
static struct ovs_mutex vhost_mutex = OVS_MUTEX_INITIALIZER;
static struct ovs_list vhost_ports OVS_GUARDED_BY(vhost_mutex)
    = OVS_LIST_INITIALIZER(&vhost_ports);
static char *vhost_sock_dir OVS_GUARDED_BY(vhost_mutex);
static uid_t vhost_sock_uid = (uid_t) -1;       /* -1: leave as created. */
static gid_t vhost_sock_gid = (gid_t) -1;
static int vhost_sock_mode = -1;                /* -1: leave as created. */

static const struct netdev_class netdev_vhost_class;
static const struct netdev_class netdev_vhost_client_class;

static bool
is_vhost_class(const struct netdev_class *class)
{
    return class == &netdev_vhost_class
           || class == &netdev_vhost_client_class;
}

bool
netdev_vhost_is_vhost(const struct netdev *netdev)
{
    return is_vhost_class(netdev_get_class(netdev));
}

/* Adds every vhost-user netdev to 'devices', name to netdev, each with a
 * reference the caller releases with netdev_close(). */
void
netdev_vhost_get_devices(struct shash *devices)
{
    netdev_get_devices(&netdev_vhost_class, devices);
    netdev_get_devices(&netdev_vhost_client_class, devices);
}

static struct netdev_vhost *
netdev_vhost_cast(const struct netdev *netdev)
{
    ovs_assert(netdev_vhost_is_vhost(netdev));
    return CONTAINER_OF(netdev, struct netdev_vhost, up);
}

static struct netdev_rxq_vhost *
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

/* The engine runs from the main loop, through the classes' run and wait
 * hooks (netdev-vhost-engine.c). */

static void
netdev_vhost_run(const struct netdev_class *class OVS_UNUSED)
{
    netdev_vhost_engine_run();
}

static void
netdev_vhost_wait(const struct netdev_class *class OVS_UNUSED)
{
    netdev_vhost_engine_wait();
}

/* Open_vSwitch other_config
 * =========================
 *
 * bridge.c hands other_config to dpdk_init() on every main-loop pass;
 * vswitchd/ routes that call here.  Keys, as OVS-DPDK reads them:
 *
 *   vhost-sock-dir: directory of dpdkvhostuser sockets, under the OVS run
 *     directory.  Read once, at the first pass, as OVS-DPDK does.
 *   vhost-iommu-support, vhost-postcopy-support: not supported yet; said
 *     once if set to true.
 *   userspace-tso-enable: read by OVS itself (userspace-tso.c).
 *   vhost-sock-owner, vhost-sock-group, vhost-sock-mode: ours, owner
 *     (user name or uid), group (name or gid) and octal permissions of
 *     dpdkvhostuser sockets, applied to existing and new sockets.
 *   dpdk-init and the other dpdk-* keys: there is no DPDK here; said once.
 */

static void netdev_vhost_apply_sock_perms(const char *path);

static bool
parse_owner(const char *s, uid_t *uidp)
{
    struct passwd *pw = getpwnam(s);
    char *end;
    unsigned long v;

    if (pw) {
        *uidp = pw->pw_uid;
        return true;
    }
    v = strtoul(s, &end, 10);
    if (*s && !*end) {
        *uidp = v;
        return true;
    }
    return false;
}

static bool
parse_group(const char *s, gid_t *gidp)
{
    struct group *gr = getgrnam(s);
    char *end;
    unsigned long v;

    if (gr) {
        *gidp = gr->gr_gid;
        return true;
    }
    v = strtoul(s, &end, 10);
    if (*s && !*end) {
        *gidp = v;
        return true;
    }
    return false;
}

void
netdev_vhost_set_other_config(const struct smap *cfg)
{
    static bool sock_dir_done;
    static bool said_iommu, said_postcopy, said_dpdk;

    ovs_mutex_lock(&vhost_mutex);
    if (!sock_dir_done) {
        const char *sub = smap_get(cfg, "vhost-sock-dir");

        sock_dir_done = true;
        if (sub && strstr(sub, "..")) {
            VLOG_ERR("ignoring vhost-sock-dir=%s: it may not contain '..'",
                     sub);
            sub = NULL;
        }
        vhost_sock_dir = sub ? xasprintf("%s/%s", ovs_rundir(), sub)
                             : xstrdup(ovs_rundir());
        if (sub && mkdir(vhost_sock_dir, 0755) && errno != EEXIST) {
            VLOG_ERR("vhost-sock-dir %s: cannot create it (%s)",
                     vhost_sock_dir, ovs_strerror(errno));
        }
        VLOG_INFO("vhost-user sockets in %s", vhost_sock_dir);
    }

    if (smap_get_bool(cfg, "vhost-iommu-support", false) && !said_iommu) {
        said_iommu = true;
        VLOG_INFO("vhost-iommu-support=true is not supported yet by "
                  "ovs-vhost: vIOMMU is not offered to guests");
    }
    if (smap_get_bool(cfg, "vhost-postcopy-support", false)
        && !said_postcopy) {
        said_postcopy = true;
        VLOG_INFO("vhost-postcopy-support=true is not supported yet by "
                  "ovs-vhost: postcopy live migration is not offered");
    }
    if (smap_get_bool(cfg, "dpdk-init", false) && !said_dpdk) {
        said_dpdk = true;
        VLOG_INFO("dpdk-init=true ignored: this ovs-vswitchd serves "
                  "vhost-user ports with ovs-vhost, without DPDK; the "
                  "dpdk-* keys have no effect");
    }

    uid_t uid = (uid_t) -1;
    gid_t gid = (gid_t) -1;
    int mode = -1;
    const char *s;

    s = smap_get(cfg, "vhost-sock-owner");
    if (s && !parse_owner(s, &uid)) {
        VLOG_WARN_RL(&rl, "vhost-sock-owner=%s: no such user", s);
    }
    s = smap_get(cfg, "vhost-sock-group");
    if (s && !parse_group(s, &gid)) {
        VLOG_WARN_RL(&rl, "vhost-sock-group=%s: no such group", s);
    }
    s = smap_get(cfg, "vhost-sock-mode");
    if (s) {
        char *end;
        long v = strtol(s, &end, 8);
        if (*s && !*end && v >= 0 && v <= 07777) {
            mode = v;
        } else {
            VLOG_WARN_RL(&rl, "vhost-sock-mode=%s: not an octal mode", s);
        }
    }

    if (uid != vhost_sock_uid || gid != vhost_sock_gid
        || mode != vhost_sock_mode) {
        struct netdev_vhost *dev;

        vhost_sock_uid = uid;
        vhost_sock_gid = gid;
        vhost_sock_mode = mode;
        LIST_FOR_EACH (dev, list_node, &vhost_ports) {
            if (!dev->client) {
                ovs_mutex_lock(&dev->mutex);
                if (dev->port_path) {
                    netdev_vhost_apply_sock_perms(dev->port_path);
                }
                ovs_mutex_unlock(&dev->mutex);
            }
        }
    }
    ovs_mutex_unlock(&vhost_mutex);
}

/* Gives server socket 'path' the configured owner, group and mode. */
static void
netdev_vhost_apply_sock_perms(const char *path)
    OVS_REQUIRES(vhost_mutex)
{
    if ((vhost_sock_uid != (uid_t) -1 || vhost_sock_gid != (gid_t) -1)
        && chown(path, vhost_sock_uid, vhost_sock_gid)) {
        VLOG_WARN_RL(&rl, "%s: chown failed (%s)", path, ovs_strerror(errno));
    }
    if (vhost_sock_mode >= 0 && chmod(path, vhost_sock_mode)) {
        VLOG_WARN_RL(&rl, "%s: chmod failed (%s)", path, ovs_strerror(errno));
    }
}

static char *
netdev_vhost_sock_path(const char *name)
{
    char *path;

    ovs_mutex_lock(&vhost_mutex);
    path = xasprintf("%s/%s", vhost_sock_dir ? vhost_sock_dir : ovs_rundir(),
                     name);
    ovs_mutex_unlock(&vhost_mutex);
    return path;
}

/* Engine callbacks
 * ================
 *
 * On the main thread, with the engine lock held. */

/* Maps every OVS txq onto an enabled guest queue pair: a txq whose number
 * is an enabled queue keeps it, the others share the enabled ones in turn.
 * With none enabled, txqs map to queue 0, whose enqueue then does nothing
 * until the guest enables it. */
static void
netdev_vhost_remap_txqs(struct netdev_vhost *dev)
    OVS_REQUIRES(dev->mutex)
{
    int enabled[VHOST_MAX_QUEUE_PAIRS];
    int n_enabled = 0, n_txq = MAX(dev->up.n_txq, 1);

    for (int q = 0; q < MIN(dev->guest_n_qp, VHOST_MAX_QUEUE_PAIRS); q++) {
        if (dev->guest_rx_enabled[q]) {
            enabled[n_enabled++] = q;
        }
    }
    if (!n_enabled) {
        enabled[n_enabled++] = 0;
    }

    for (int i = 0, k = 0; i < MIN(n_txq, NETDEV_VHOST_MAX_TXQ); i++) {
        int q;
        if (i < VHOST_MAX_QUEUE_PAIRS && i < dev->guest_n_qp
            && dev->guest_rx_enabled[i]) {
            q = i;
        } else {
            q = enabled[k];
            k = (k + 1) % n_enabled;
        }
        atomic_store_relaxed(&dev->tx_map[i], q);
    }
}

/* Recomputes 'running' from the guest, the configuration and the admin
 * state; bumps the change sequence (PMDs re-read rxq_enabled, the bridge
 * re-reads carrier) if anything changed. */
static void
netdev_vhost_update_running(struct netdev_vhost *dev)
    OVS_REQUIRES(dev->mutex)
{
    bool running = dev->device_ready && (dev->flags & NETDEV_UP)
                   && dev->up.n_rxq == MAX(dev->guest_n_qp, 1);
    bool old;

    atomic_read_relaxed(&dev->running, &old);
    if (running != old) {
        atomic_store_relaxed(&dev->running, running);
    }
    netdev_change_seq_changed(&dev->up);
}

static void
netdev_vhost_cb_connected(struct vhost_port *port OVS_UNUSED, void *dev_)
{
    struct netdev_vhost *dev = dev_;

    COVERAGE_INC(vhost_connect);
    ovs_mutex_lock(&dev->mutex);
    dev->connected = true;
    VLOG_INFO("vHost User device '%s': frontend connected on %s",
              netdev_get_name(&dev->up), dev->port_path);
    netdev_change_seq_changed(&dev->up);
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_device_ready(struct vhost_port *port, void *dev_)
{
    struct netdev_vhost *dev = dev_;
    struct vhost_port_info info;

    COVERAGE_INC(vhost_device_ready);
    vhost_port_get_info(port, &info);

    ovs_mutex_lock(&dev->mutex);
    int n_qp = MIN(MAX((info.n_queues + 1) / 2, 1), VHOST_MAX_QUEUE_PAIRS);
    dev->device_ready = true;
    dev->guest_features = info.features;
    dev->guest_n_qp = n_qp;
    if (dev->requested_n_rxq != n_qp) {
        dev->requested_n_rxq = n_qp;
    }
    /* Queue states and offloads may have moved: reconfigure() applies
     * them with the PMDs off this port. */
    netdev_request_reconfigure(&dev->up);
    dev->carrier_resets++;
    VLOG_INFO("vHost User device '%s' has been added on numa node %d: "
              "%d queue pair%s, %s ring",
              netdev_get_name(&dev->up), info.numa_node, n_qp,
              n_qp == 1 ? "" : "s",
              info.features & (UINT64_C(1) << 34) ? "packed" : "split");
    if (info.mtu && info.mtu != dev->requested_mtu) {
        VLOG_INFO("vHost User device '%s': the guest's MTU is %u",
                  netdev_get_name(&dev->up), info.mtu);
    }
    netdev_vhost_update_running(dev);
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_queue_state(struct vhost_port *port OVS_UNUSED,
                            unsigned int qid, bool enabled, void *dev_)
{
    struct netdev_vhost *dev = dev_;
    unsigned int qp = qid / 2;

    if (qp >= VHOST_MAX_QUEUE_PAIRS) {
        return;
    }
    COVERAGE_INC(vhost_queue_state);
    ovs_mutex_lock(&dev->mutex);
    if (qid & 1) {
        /* Guest TX ring: our rxq 'qp'. */
        atomic_store_relaxed(&dev->rxq_enabled[qp], enabled);
    } else {
        dev->guest_rx_enabled[qp] = enabled;
        netdev_vhost_remap_txqs(dev);
    }
    if ((int) qp >= dev->guest_n_qp && enabled) {
        dev->guest_n_qp = qp + 1;
        dev->requested_n_rxq = qp + 1;
        netdev_request_reconfigure(&dev->up);
    }
    VLOG_INFO("State of queue %u ( %s_qid %u ) of vhost device '%s' "
              "changed to '%s'", qid, qid & 1 ? "rx" : "tx", qp,
              netdev_get_name(&dev->up), enabled ? "enabled" : "disabled");
    netdev_change_seq_changed(&dev->up);
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_device_gone(struct vhost_port *port OVS_UNUSED, void *dev_)
{
    struct netdev_vhost *dev = dev_;

    ovs_mutex_lock(&dev->mutex);
    dev->device_ready = false;
    for (int q = 0; q < VHOST_MAX_QUEUE_PAIRS; q++) {
        atomic_store_relaxed(&dev->rxq_enabled[q], false);
        dev->guest_rx_enabled[q] = false;
    }
    netdev_vhost_remap_txqs(dev);
    netdev_vhost_update_running(dev);
    dev->carrier_resets++;
    VLOG_INFO("vHost User device '%s' has been removed",
              netdev_get_name(&dev->up));
    ovs_mutex_unlock(&dev->mutex);
}

static void
netdev_vhost_cb_disconnected(struct vhost_port *port OVS_UNUSED, void *dev_)
{
    struct netdev_vhost *dev = dev_;

    COVERAGE_INC(vhost_disconnect);
    ovs_mutex_lock(&dev->mutex);
    dev->connected = false;
    VLOG_INFO("vHost User device '%s': frontend disconnected%s",
              netdev_get_name(&dev->up),
              dev->client ? ", reconnecting" : "");
    netdev_change_seq_changed(&dev->up);
    ovs_mutex_unlock(&dev->mutex);
}

static const struct vhost_port_callbacks netdev_vhost_callbacks = {
    .connected = netdev_vhost_cb_connected,
    .device_ready = netdev_vhost_cb_device_ready,
    .queue_state = netdev_vhost_cb_queue_state,
    .device_gone = netdev_vhost_cb_device_gone,
    .disconnected = netdev_vhost_cb_disconnected,
};

/* Construction and configuration
 * ==============================
 *
 * The engine port is (re)created by reconfigure(), on the main thread,
 * when the socket path or the offered features change. */

static struct netdev *
netdev_vhost_alloc(void)
{
    struct netdev_vhost *dev = xzalloc_cacheline(sizeof *dev);
    return &dev->up;
}

static void
netdev_vhost_dealloc(struct netdev *netdev)
{
    free_cacheline(netdev_vhost_cast(netdev));
}

static void netdev_vhost_cache_init(void);

static int
netdev_vhost_common_construct(struct netdev *netdev, bool client)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    netdev_vhost_cache_init();
    ovs_mutex_init(&dev->mutex);
    dev->client = client;
    dev->requested_n_rxq = 1;
    dev->requested_n_txq = 1;
    dev->requested_mtu = ETH_PAYLOAD_MAX;
    dev->flags = NETDEV_UP | NETDEV_PROMISC;
    dev->hwaddr = eth_addr_zero;
    netdev->n_rxq = 1;
    netdev->n_txq = 1;
    atomic_init(&dev->running, false);
    atomic_init(&dev->max_frame, ETH_PAYLOAD_MAX + ETH_HEADER_LEN
                                 + VLAN_HEADER_LEN);
    atomic_init(&dev->tx_retries_max, NETDEV_VHOST_TX_RETRIES_DEF);
    atomic_init(&dev->tx_offloads, false);
    for (int q = 0; q < VHOST_MAX_QUEUE_PAIRS; q++) {
        atomic_init(&dev->rxq_enabled[q], false);
        atomic_flag_clear(&dev->txlocks[q].busy);
    }
    for (int i = 0; i < NETDEV_VHOST_MAX_TXQ; i++) {
        atomic_init(&dev->tx_map[i], 0);
    }

    ovs_mutex_lock(&vhost_mutex);
    ovs_list_push_back(&vhost_ports, &dev->list_node);
    ovs_mutex_unlock(&vhost_mutex);

    netdev_request_reconfigure(netdev);
    return 0;
}

static int
netdev_vhost_construct(struct netdev *netdev)
{
    const char *name = netdev_get_name(netdev);

    /* The name becomes a file name in vhost-sock-dir: '/' or '\' would
     * leave the directory. */
    if (strchr(name, '/') || strchr(name, '\\')) {
        VLOG_ERR("\"%s\" is not a valid name for a vhost-user port. "
                 "A valid name must not include '/' or '\\'", name);
        return EINVAL;
    }

    netdev_vhost_common_construct(netdev, false);

    /* Lock order: vhost_mutex (in netdev_vhost_sock_path()), then a port's
     * mutex, never the other way. */
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    char *path = netdev_vhost_sock_path(name);
    ovs_mutex_lock(&dev->mutex);
    dev->path = path;
    ovs_mutex_unlock(&dev->mutex);
    VLOG_WARN_ONCE("dpdkvhostuser ports are considered deprecated;  "
                   "please migrate to dpdkvhostuserclient ports.");
    return 0;
}

static int
netdev_vhost_client_construct(struct netdev *netdev)
{
    return netdev_vhost_common_construct(netdev, true);
}

/* Destroys 'dev''s engine port, if any.  Main thread, 'dev->mutex' not
 * held: the engine may call back while the port goes. */
static void
netdev_vhost_destroy_port(struct netdev_vhost *dev)
    OVS_EXCLUDED(dev->mutex)
{
    struct vhost_port *port = dev->port;
    char *path;

    if (!port) {
        return;
    }
    vhost_port_destroy(port);

    ovs_mutex_lock(&dev->mutex);
    dev->port = NULL;
    path = dev->port_path;
    dev->port_path = NULL;
    dev->connected = false;
    dev->device_ready = false;
    for (int q = 0; q < VHOST_MAX_QUEUE_PAIRS; q++) {
        atomic_store_relaxed(&dev->rxq_enabled[q], false);
        dev->guest_rx_enabled[q] = false;
    }
    netdev_vhost_update_running(dev);
    ovs_mutex_unlock(&dev->mutex);

    if (path && !dev->client) {
        fatal_signal_remove_file_to_unlink(path);
    }
    free(path);
}

static void
netdev_vhost_destruct(struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    netdev_vhost_destroy_port(dev);

    ovs_mutex_lock(&vhost_mutex);
    ovs_list_remove(&dev->list_node);
    ovs_mutex_unlock(&vhost_mutex);

    ovs_mutex_lock(&dev->mutex);
    free(dev->path);
    dev->path = NULL;
    ovsrcu_postpone(free, ovsrcu_get_protected(struct netdev_vhost_policer *,
                                               &dev->ingress_policer));
    ovsrcu_postpone(free, ovsrcu_get_protected(struct netdev_vhost_policer *,
                                               &dev->egress_policer));
    ovs_mutex_unlock(&dev->mutex);
    ovs_mutex_destroy(&dev->mutex);
}

static int
netdev_vhost_get_config(const struct netdev *netdev, struct smap *args)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    int retries;

    ovs_mutex_lock(&dev->mutex);
    if (dev->client && dev->path) {
        smap_add(args, "vhost-server-path", dev->path);
    }
    atomic_read_relaxed(&dev->tx_retries_max, &retries);
    if (retries != NETDEV_VHOST_TX_RETRIES_DEF) {
        smap_add_format(args, "tx-retries-max", "%d", retries);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_set_config(struct netdev *netdev, const struct smap *args,
                        char **errp OVS_UNUSED)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    int retries, cur;

    ovs_mutex_lock(&dev->mutex);
    if (dev->client) {
        const char *path = smap_get(args, "vhost-server-path");

        if (!nullable_string_is_equal(path, dev->path)) {
            free(dev->path);
            dev->path = nullable_xstrdup(path);
            netdev_request_reconfigure(netdev);
        }
    }

    retries = smap_get_int(args, "tx-retries-max",
                           NETDEV_VHOST_TX_RETRIES_DEF);
    if (retries < NETDEV_VHOST_TX_RETRIES_MIN
        || retries > NETDEV_VHOST_TX_RETRIES_MAX) {
        VLOG_WARN("%s: tx-retries-max=%d out of range %d..%d, using %d",
                  netdev_get_name(netdev), retries,
                  NETDEV_VHOST_TX_RETRIES_MIN, NETDEV_VHOST_TX_RETRIES_MAX,
                  NETDEV_VHOST_TX_RETRIES_DEF);
        retries = NETDEV_VHOST_TX_RETRIES_DEF;
    }
    atomic_read_relaxed(&dev->tx_retries_max, &cur);
    if (retries != cur) {
        atomic_store_relaxed(&dev->tx_retries_max, retries);
        VLOG_INFO("Max Tx retries for vhost device '%s' set to %d",
                  netdev_get_name(netdev), retries);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

/* The virtio features to offer: the engine's defaults, plus checksum and
 * segmentation offloads when userspace TSO is on (OVS 3.1's userspace
 * datapath cannot take partial checksums otherwise). */
static uint64_t
netdev_vhost_features(bool tso)
{
    /* The engine's defaults include the packed ring, for frontends that
     * ask for it (QEMU's packed=on, virtio-user's packed_vq=1), and
     * VIRTIO_F_IN_ORDER, as DPDK's vhost library offers them. */
    uint64_t features = vhost_default_features();

    if (tso) {
        features |= vhost_offload_features();
    }
    return features;
}

/* Creates the engine port for 'dev->path', if it has none or its path or
 * features changed.  Main thread. */
static int
netdev_vhost_setup_port(struct netdev_vhost *dev)
    OVS_EXCLUDED(dev->mutex)
{
    bool tso = userspace_tso_enabled();
    char *path;

    ovs_mutex_lock(&dev->mutex);
    bool same = dev->port && nullable_string_is_equal(dev->path,
                                                      dev->port_path)
                && dev->tso_offered == tso;
    path = nullable_xstrdup(dev->path);
    ovs_mutex_unlock(&dev->mutex);
    if (same) {
        free(path);
        return 0;
    }

    netdev_vhost_destroy_port(dev);
    if (!path) {
        return 0;               /* Client without vhost-server-path yet. */
    }

    struct vhost_port_options opts;
    struct vhost_port *port;

    vhost_port_options_init(&opts);
    opts.name = netdev_get_name(&dev->up);
    opts.path = path;
    opts.mode = dev->client ? VHOST_PORT_CLIENT : VHOST_PORT_SERVER;
    opts.features = netdev_vhost_features(tso);
    opts.max_queue_pairs = VHOST_MAX_QUEUE_PAIRS;
    opts.cb = &netdev_vhost_callbacks;
    opts.aux = dev;
    /* Packed rings' positions, for the next ovs-vswitchd after a crash:
     * QEMU does not keep them (lib/virtq-poslog.h). */
    char *state_path = xasprintf("%s/ovs-vhost-%s.rings", ovs_rundir(),
                                 netdev_get_name(&dev->up));
    opts.state_path = state_path;

    ovs_mutex_lock(&dev->mutex);
    dev->port_path = path;
    dev->tso_offered = tso;
    ovs_mutex_unlock(&dev->mutex);

    int error = vhost_port_create(netdev_vhost_engine_get(), &opts, &port);
    free(state_path);
    if (error) {
        VLOG_ERR("vhost-user %s setup failure for %s: %s",
                 dev->client ? "client" : "socket", path,
                 ovs_strerror(error));
        ovs_mutex_lock(&dev->mutex);
        dev->port_path = NULL;
        ovs_mutex_unlock(&dev->mutex);
        free(path);
        return error;
    }
    dev->port = port;
    /* No config space (the engine's default protocol features leave out
     * CONFIG), as OVS-DPDK's vhost ports have none: QEMU warns of a
     * backend that offers one to virtio-net, and gives the guest its own
     * host_mtu.  So mtu_request bounds what goes to the guest, and the
     * guest learns no MTU from us. */

    if (!dev->client) {
        fatal_signal_add_file_to_unlink(path);
        ovs_mutex_lock(&vhost_mutex);
        netdev_vhost_apply_sock_perms(path);
        ovs_mutex_unlock(&vhost_mutex);
        VLOG_INFO("Socket %s created for vhost-user port %s",
                  path, netdev_get_name(&dev->up));
    } else {
        VLOG_INFO("vHost User client port %s connecting to %s",
                  netdev_get_name(&dev->up), path);
    }
    return 0;
}

static int
netdev_vhost_reconfigure(struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    int error = netdev_vhost_setup_port(dev);

    ovs_mutex_lock(&dev->mutex);
    /* As many txqs as OVS's threads want, and at least one per guest queue
     * pair, as OVS-DPDK's vhost ports have: with tx-steering=hash, OVS
     * spreads flows over all of a port's txqs, so that a 4-queue guest
     * behind 1 PMD thread gets traffic on all 4 of its RX queues, not on
     * 2.  (More txqs than threads is OVS's static mode: one txq each.) */
    netdev->n_txq = MIN(MAX(MAX(dev->requested_n_txq, dev->guest_n_qp), 1),
                        NETDEV_VHOST_MAX_TXQ);
    netdev->n_rxq = MAX(dev->requested_n_rxq, 1);
    atomic_store_relaxed(&dev->max_frame, dev->requested_mtu + ETH_HEADER_LEN
                                          + VLAN_HEADER_LEN);

    /* Offloads the guest can take on its RX ring. */
    uint64_t f = dev->guest_features;
    bool csum = dev->device_ready && dev->tso_offered
                && (f & (UINT64_C(1) << 1));            /* GUEST_CSUM */
    bool tso = csum && (f & (UINT64_C(1) << 7))         /* GUEST_TSO4 */
               && (f & (UINT64_C(1) << 8));             /* GUEST_TSO6 */
    netdev->ol_flags = 0;
    if (csum) {
        netdev->ol_flags |= NETDEV_TX_OFFLOAD_TCP_CKSUM
                            | NETDEV_TX_OFFLOAD_UDP_CKSUM;
    }
    if (tso) {
        netdev->ol_flags |= NETDEV_TX_OFFLOAD_TCP_TSO;
    }
    atomic_store_relaxed(&dev->tx_offloads, csum);

    netdev_vhost_remap_txqs(dev);
    netdev_vhost_update_running(dev);
    ovs_mutex_unlock(&dev->mutex);
    return error;
}

static int
netdev_vhost_set_tx_multiq(struct netdev *netdev, unsigned int n_txq)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (dev->requested_n_txq != (int) n_txq) {
        dev->requested_n_txq = n_txq;
        netdev_request_reconfigure(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_numa_id(const struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    struct vhost_port_info info;

    if (dev->port && !vhost_port_get_info(dev->port, &info)
        && info.numa_node >= 0) {
        return info.numa_node;
    }
    return 0;
}

static int
netdev_vhost_set_etheraddr(struct netdev *netdev, const struct eth_addr mac)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (!eth_addr_equals(dev->hwaddr, mac)) {
        dev->hwaddr = mac;
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_etheraddr(const struct netdev *netdev, struct eth_addr *mac)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *mac = dev->hwaddr;
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_mtu(const struct netdev *netdev, int *mtup)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *mtup = dev->requested_mtu;
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_set_mtu(struct netdev *netdev, int mtu)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    if (mtu < NETDEV_VHOST_MTU_MIN || mtu > NETDEV_VHOST_MTU_MAX) {
        VLOG_WARN("%s: unsupported MTU %d: must be in %d..%d",
                  netdev_get_name(netdev), mtu, NETDEV_VHOST_MTU_MIN,
                  NETDEV_VHOST_MTU_MAX);
        return EINVAL;
    }
    ovs_mutex_lock(&dev->mutex);
    bool changed = dev->requested_mtu != mtu;
    if (changed) {
        dev->requested_mtu = mtu;
        atomic_store_relaxed(&dev->max_frame,
                             mtu + ETH_HEADER_LEN + VLAN_HEADER_LEN);
        netdev_change_seq_changed(netdev);
        VLOG_INFO("%s: MTU set to %d", netdev_get_name(netdev), mtu);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_carrier(const struct netdev *netdev, bool *carrier)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *carrier = dev->device_ready;
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static long long int
netdev_vhost_get_carrier_resets(const struct netdev *netdev)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    long long int n;

    ovs_mutex_lock(&dev->mutex);
    n = dev->carrier_resets;
    ovs_mutex_unlock(&dev->mutex);
    return n;
}

static int
netdev_vhost_update_flags(struct netdev *netdev, enum netdev_flags off,
                          enum netdev_flags on, enum netdev_flags *old_flagsp)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    if ((off | on) & ~(NETDEV_UP | NETDEV_PROMISC)) {
        return EINVAL;
    }
    ovs_mutex_lock(&dev->mutex);
    *old_flagsp = dev->flags;
    dev->flags = (dev->flags & ~off) | on;
    if (dev->flags != *old_flagsp) {
        netdev_vhost_update_running(dev);
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

/* Policing and QoS
 * ================
 *
 * As OVS-DPDK: ingress policing on what the guest sends, and one QoS type,
 * "egress-policer", on what it receives.  Dropped packets are counted in
 * ovs_rx_qos_drops and ovs_tx_qos_drops. */

static struct netdev_vhost_policer *
netdev_vhost_policer_create(uint64_t bits_per_ms, uint64_t burst_bits)
{
    struct netdev_vhost_policer *p = xzalloc(sizeof *p);

    atomic_flag_clear(&p->busy);
    token_bucket_init(&p->tb, MIN(bits_per_ms, UINT_MAX),
                      MIN(burst_bits, UINT_MAX));
    return p;
}

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

static int
netdev_vhost_set_policing(struct netdev *netdev, uint32_t rate,
                          uint32_t burst, uint32_t kpkts_rate,
                          uint32_t kpkts_burst OVS_UNUSED)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    if (kpkts_rate) {
        VLOG_WARN_RL(&rl, "%s: packet-rate ingress policing is not "
                     "supported", netdev_get_name(netdev));
        return EOPNOTSUPP;
    }
    /* OVS-DPDK's defaults: no rate, no policing; no burst, 8000 kbit. */
    burst = !rate ? 0 : !burst ? 8000 : burst;

    ovs_mutex_lock(&dev->mutex);
    if (dev->policer_rate != rate || dev->policer_burst != burst) {
        struct netdev_vhost_policer *old
            = ovsrcu_get_protected(struct netdev_vhost_policer *,
                                   &dev->ingress_policer);
        ovsrcu_set(&dev->ingress_policer,
                   rate ? netdev_vhost_policer_create(rate,
                                                      (uint64_t) burst * 1000)
                        : NULL);
        ovsrcu_postpone(free, old);
        dev->policer_rate = rate;
        dev->policer_burst = burst;
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_get_qos_types(const struct netdev *netdev OVS_UNUSED,
                           struct sset *types)
{
    sset_add(types, "egress-policer");
    return 0;
}

static int
netdev_vhost_get_qos(const struct netdev *netdev, const char **typep,
                     struct smap *details)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (dev->qos_cir) {
        *typep = "egress-policer";
        smap_add_format(details, "cir", "%"PRIu64, dev->qos_cir);
        smap_add_format(details, "cbs", "%"PRIu64, dev->qos_cbs);
    } else {
        *typep = "";
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

static int
netdev_vhost_set_qos(struct netdev *netdev, const char *type,
                     const struct smap *details)
{
    struct netdev_vhost *dev = netdev_vhost_cast(netdev);
    uint64_t cir = 0, cbs = 0;

    if (type && type[0]) {
        if (strcmp(type, "egress-policer")) {
            VLOG_WARN_RL(&rl, "%s: QoS type %s is not supported (only "
                         "egress-policer)", netdev_get_name(netdev), type);
            return EOPNOTSUPP;
        }
        cir = smap_get_ullong(details, "cir", 0);
        cbs = smap_get_ullong(details, "cbs", 0);
        if (!cir || !cbs) {
            VLOG_WARN_RL(&rl, "%s: egress-policer needs cir and cbs",
                         netdev_get_name(netdev));
            return EINVAL;
        }
    }

    ovs_mutex_lock(&dev->mutex);
    if (dev->qos_cir != cir || dev->qos_cbs != cbs) {
        struct netdev_vhost_policer *old
            = ovsrcu_get_protected(struct netdev_vhost_policer *,
                                   &dev->egress_policer);
        /* cir bytes/s is cir * 8 / 1000 bits per ms. */
        ovsrcu_set(&dev->egress_policer,
                   cir ? netdev_vhost_policer_create(cir * 8 / 1000,
                                                     cbs * 8)
                       : NULL);
        ovsrcu_postpone(free, old);
        dev->qos_cir = cir;
        dev->qos_cbs = cbs;
    }
    ovs_mutex_unlock(&dev->mutex);
    return 0;
}

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

static int
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
    VRING_STAT(small_buf_stops, "small_buf_stops")

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

static int
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

/* Status: the keys OVS-DPDK's vhost ports show. */
static int
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
        ds_put_char(ds, '\n');
    }
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
static void
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
    uint8_t gso = p->ol.gso_type & ~VHOST_GSO_ECN;
    if (gso == VHOST_GSO_TCPV4 || gso == VHOST_GSO_TCPV6) {
        dp_packet_hwol_set_tcp_seg(b);
    }
}

static int
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

static struct netdev_rxq *
netdev_vhost_rxq_alloc(void)
{
    struct netdev_rxq_vhost *rxq = xzalloc_cacheline(sizeof *rxq);
    return &rxq->up;
}

static int
netdev_vhost_rxq_construct(struct netdev_rxq *rxq)
{
    netdev_rxq_vhost_cast(rxq)->n_empty = NETDEV_MAX_BURST;
    return 0;
}

static void
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

static void
netdev_vhost_rxq_dealloc(struct netdev_rxq *rxq)
{
    free_cacheline(netdev_rxq_vhost_cast(rxq));
}

static bool
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
    const char *l3 = dp_packet_l3(b);
    const char *l4 = dp_packet_l4(b);
    uint32_t size = dp_packet_size(b);

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
        p->ol.gso_size = MAX(mtu - (hdr - (int) (l3 - eth)), 1);
    }
    return true;
}

static int
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

/* The classes
 * ===========
 *
 * Type names as OVS-DPDK's, so that Neutron, OVN and ovs-vsctl scripts see
 * the types they know in iface_types. */

#define NETDEV_VHOST_CLASS_COMMON                       \
    .is_pmd = true,                                     \
    .alloc = netdev_vhost_alloc,                        \
    .destruct = netdev_vhost_destruct,                  \
    .dealloc = netdev_vhost_dealloc,                    \
    .get_config = netdev_vhost_get_config,              \
    .set_config = netdev_vhost_set_config,              \
    .get_numa_id = netdev_vhost_get_numa_id,            \
    .set_tx_multiq = netdev_vhost_set_tx_multiq,        \
    .send = netdev_vhost_send,                          \
    .set_etheraddr = netdev_vhost_set_etheraddr,        \
    .get_etheraddr = netdev_vhost_get_etheraddr,        \
    .get_mtu = netdev_vhost_get_mtu,                    \
    .set_mtu = netdev_vhost_set_mtu,                    \
    .get_carrier = netdev_vhost_get_carrier,            \
    .get_carrier_resets = netdev_vhost_get_carrier_resets, \
    .get_stats = netdev_vhost_get_stats,                \
    .get_custom_stats = netdev_vhost_get_custom_stats,  \
    .get_status = netdev_vhost_get_status,              \
    .update_flags = netdev_vhost_update_flags,          \
    .set_policing = netdev_vhost_set_policing,          \
    .get_qos_types = netdev_vhost_get_qos_types,        \
    .get_qos = netdev_vhost_get_qos,                    \
    .set_qos = netdev_vhost_set_qos,                    \
    .reconfigure = netdev_vhost_reconfigure,            \
    .rxq_alloc = netdev_vhost_rxq_alloc,                \
    .rxq_construct = netdev_vhost_rxq_construct,        \
    .rxq_destruct = netdev_vhost_rxq_destruct,          \
    .rxq_dealloc = netdev_vhost_rxq_dealloc,            \
    .rxq_enabled = netdev_vhost_rxq_enabled,            \
    .rxq_recv = netdev_vhost_rxq_recv

/* One engine serves both classes: only this one drives it (netdev_run()
 * calls every registered class's hook, so two would poll it twice). */
static const struct netdev_class netdev_vhost_class = {
    .type = "dpdkvhostuser",
    .run = netdev_vhost_run,
    .wait = netdev_vhost_wait,
    .construct = netdev_vhost_construct,
    NETDEV_VHOST_CLASS_COMMON,
};

static const struct netdev_class netdev_vhost_client_class = {
    .type = "dpdkvhostuserclient",
    .construct = netdev_vhost_client_construct,
    NETDEV_VHOST_CLASS_COMMON,
};

/* Registers both classes before main().  netdev_register_provider() works
 * on static state only (OVS 3.1), and nothing here starts a thread or opens
 * a file: the engine is created by the first port, after daemonizing. */
OVS_CONSTRUCTOR(netdev_vhost_register)
{
    netdev_register_provider(&netdev_vhost_class);
    netdev_register_provider(&netdev_vhost_client_class);
    netdev_vhost_appctl_register();
}
